// Risk reasons are data (a code and what it names) and become a sentence where they are shown: in
// English for logs and the CLI (the item's `reason`), in the user's language in the editor.
import * as assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { english, type Translate } from '../../../src/core/protocol/l10n';
import { classifyPatch, classifyPath } from '../../../src/core/patch/patchRisk';
import { parsePatchText } from '../../../src/core/patch/patchParser';
import { riskReasonText, type RiskMessage } from '../../../src/core/patch/riskText';

const reasons = (path: string) => classifyPath(path).map((f) => riskReasonText(f.message, english));

describe('risk reasons', () => {
  it('say in English exactly what the classifier always said', () => {
    assert.deepEqual(reasons(''), ['the patch names an empty path']);
    assert.deepEqual(reasons('/etc/passwd'), ['the path is absolute: it would write outside the repository']);
    assert.deepEqual(reasons('a/../../b'), ["the path contains '..': it would write outside the repository"]);
    assert.deepEqual(reasons('a//b'), ["the path has empty or '.' segments"]);
    assert.deepEqual(reasons('.GIT/config'), [
      "the path is inside git's own folder (.git): it could install hooks or change configuration",
    ]);
    assert.deepEqual(reasons('.github/workflows/ci.yml'), [
      "the path is a CI workflow or action: it runs with the repository's secrets",
    ]);
    assert.deepEqual(reasons('.vscode/tasks.json'), [
      'the path is under .vscode/, which holds editor tasks, launch configurations and settings that can run code',
    ]);
    assert.deepEqual(reasons('.devcontainer/Dockerfile'), [
      'the path is under .devcontainer/, which configures a dev container that runs code on open',
    ]);
    assert.deepEqual(reasons('.husky/pre-commit'), [
      'the path is under .husky/, a git hook folder: it runs on commit or push',
    ]);
    assert.deepEqual(reasons('sub/.gitattributes'), [
      '.gitattributes can change how git filters, diffs and checks out files',
    ]);
    assert.deepEqual(reasons('.gitmodules'), ['.gitmodules can point submodules at other repositories']);
    assert.deepEqual(reasons('.envrc'), ['.envrc is run by direnv when you enter the folder']);
    assert.deepEqual(reasons('.devcontainer.json'), [
      '.devcontainer.json configures a dev container that runs code on open',
    ]);
    assert.deepEqual(reasons('lefthook.yml'), ['lefthook.yml configures git hooks that run on commit or push']);
    assert.deepEqual(reasons('.vscode'), ['the path replaces the .vscode folder']);
  });

  it('each item carries its message, and its reason is that message in English', () => {
    const patch = parsePatchText(
      [
        'diff --git a/run.sh b/run.sh',
        'old mode 100644',
        'new mode 100755',
        'diff --git a/.vscode/settings.json b/.vscode/settings.json',
        'index 1111111..2222222 100644',
        '--- a/.vscode/settings.json',
        '+++ b/.vscode/settings.json',
        '@@ -1 +1 @@',
        '-{}',
        '+{"a": 1}',
        '',
      ].join('\n'),
    );
    const items = classifyPatch(patch).items;
    assert.deepEqual(
      items.map((i) => [i.kind, i.message.code, i.reason]),
      [
        ['executable', 'made-executable', 'the change makes the file executable'],
        [
          'sensitive-file',
          'editor-folder',
          'the path is under .vscode/, which holds editor tasks, launch configurations and settings that can run code',
        ],
      ],
    );
  });

  it('are said through the translate function it is given, with what they name as arguments', () => {
    const calls: unknown[][] = [];
    const t: Translate = (message, ...args) => {
      calls.push([message, ...args]);
      return `«${message}»`;
    };
    const m: RiskMessage = { code: 'package-scripts', scripts: ['postinstall', 'test'] };
    assert.equal(riskReasonText(m, t), '«the change edits package.json scripts ({0}), which npm runs»');
    assert.deepEqual(calls, [['the change edits package.json scripts ({0}), which npm runs', 'postinstall, test']]);
    assert.equal(
      riskReasonText({ code: 'odd-mode', mode: '100000' }, english),
      'the file mode 100000 is not a regular file mode',
    );
  });
});
