// Review and apply against real git repositories (and a plain folder) in temp dirs. After every refusal
// or failure the user's tree (every file, mode and folder, plus .git/index) must be byte-identical.
import * as assert from 'node:assert/strict';
import { existsSync, readFileSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { PatchSelectionError } from '../../../src/core/patch/subPatch';
import {
  PatchApplyError,
  abortApply,
  applyReviewed,
  finishMerge,
  prepareReview,
  undoApply,
} from '../../../src/node/patchApply';
import { captureWorkingState } from '../../../src/node/patchDrift';
import { cleanup, makePatch, makeRepo, sh, tempDir, treeHash, write } from './helpers';

const dirs: string[] = [];
after(() => cleanup(...dirs));

const lines = (n: number, tag = 'line'): string =>
  Array.from({ length: n }, (_, i) => `${tag} ${i + 1}`).join('\n') + '\n';

function baseFiles(): Record<string, string | Buffer> {
  return {
    'src/a.txt': lines(40),
    'src/b.txt': 'alpha\nbeta\ngamma\n',
    'docs/c.md': '# Title\n\ntext\n',
    'crlf.txt': 'one\r\ntwo\r\nthree\r\n',
    'old-name.txt': 'stays the same\nmostly\n',
  };
}

function agentEdit(root: string): void {
  write(root, {
    'src/a.txt': lines(40).replace('line 3\n', 'LINE THREE\n').replace('line 35\n', 'LINE THIRTY-FIVE\n'),
    'src/b.txt': 'alpha\nBETA\ngamma\n',
    'docs/new.md': 'new doc\n',
    'crlf.txt': 'one\r\nTWO\r\nthree\r\n',
  });
  unlinkSync(join(root, 'docs/c.md'));
  sh(root, ['mv', 'old-name.txt', 'new-name.txt']);
}

function setup(): { root: string; patchPath: string; patch: string } {
  const root = makeRepo(baseFiles());
  const patch = makePatch(root, agentEdit);
  const dir = tempDir('baton-artifact-');
  const patchPath = join(dir, 'changes.patch');
  writeFileSync(patchPath, patch);
  dirs.push(root, dir);
  return { root, patchPath, patch };
}

const read = (root: string, p: string): string => readFileSync(join(root, p), 'utf8');

describe('review preparation (git)', () => {
  it('parses, classifies and checks from the top level, even when asked from a subfolder', async () => {
    const { root, patchPath } = setup();
    const progress: number[] = [];
    const review = await prepareReview({
      folder: join(root, 'src'),
      source: { path: patchPath },
      onProgress: (d) => progress.push(d),
    });
    assert.equal(review.target.kind, 'git');
    assert.equal(review.target.root, sh(root, ['rev-parse', '--show-toplevel']).trim());
    assert.deepEqual(
      review.patch.files.map((f) => `${f.status}:${f.id}`).sort(),
      [
        'added:docs/new.md',
        'deleted:docs/c.md',
        'modified:crlf.txt',
        'modified:src/a.txt',
        'modified:src/b.txt',
        'renamed:new-name.txt',
      ].sort(),
    );
    assert.equal(review.check.ok, true, JSON.stringify(review.check));
    assert.equal(review.check.consistent, true);
    assert.ok(review.check.files.every((f) => f.ok));
    assert.equal(review.risks.items.length, 0);
    assert.ok(progress.length > 0);
  });

  it('says per file which ones no longer apply (a hunk that no longer matches, a file deleted since)', async () => {
    const { root, patchPath } = setup();
    write(root, { 'src/b.txt': 'alpha\nbeta (edited by the user)\ngamma\n' });
    unlinkSync(join(root, 'docs/c.md'));
    const review = await prepareReview({ folder: root, source: { path: patchPath } });
    assert.equal(review.check.ok, false);
    const bad = review.check.files
      .filter((f) => !f.ok)
      .map((f) => f.path)
      .sort();
    assert.deepEqual(bad, ['docs/c.md', 'src/b.txt']);
    assert.ok(review.check.files.find((f) => f.path === 'src/b.txt')?.errors.some((e) => /does not apply/.test(e)));
  });

  it('reports drift: HEAD moved and uncommitted changes, naming the files under the patch', async () => {
    const { root, patchPath } = setup();
    const base = await captureWorkingState(root);
    write(root, { 'src/b.txt': 'alpha\nbeta\ngamma\ndelta\n', 'unrelated.txt': 'x\n' });
    const review1 = await prepareReview({ folder: root, source: { path: patchPath }, base });
    assert.equal(review1.drift?.headMoved, false);
    assert.equal(review1.drift?.uncommittedChanged, true);
    assert.deepEqual(review1.drift?.changedFiles, ['src/b.txt']);
    sh(root, ['add', '-A']);
    sh(root, ['commit', '-q', '-m', 'user work']);
    write(root, { 'src/a.txt': lines(41) });
    const review2 = await prepareReview({ folder: root, source: { path: patchPath }, base });
    assert.equal(review2.drift?.headMoved, true);
    assert.deepEqual(review2.drift?.changedFiles, ['src/a.txt', 'src/b.txt']);
    const clean = await prepareReview({
      folder: root,
      source: { path: patchPath },
      base: await captureWorkingState(root),
    });
    assert.deepEqual(clean.drift?.changedFiles, []);
  });

  it('an empty patch and a patch that is not a diff are clear errors, tree untouched', async () => {
    const { root } = setup();
    const before = treeHash(root);
    await assert.rejects(prepareReview({ folder: root, source: { bytes: Buffer.alloc(0) } }), /empty/);
    await assert.rejects(
      prepareReview({ folder: root, source: { bytes: Buffer.from('Done! I refactored the module.\n') } }),
      /not a diff/,
    );
    assert.equal(treeHash(root), before);
  });
});

describe('apply (git)', () => {
  it('applies everything in one step; undo restores the tree byte for byte', async () => {
    const { root, patchPath } = setup();
    const before = treeHash(root);
    const review = await prepareReview({ folder: root, source: { path: patchPath } });
    const out = await applyReviewed(review, { selection: { files: review.patch.files.map((f) => f.id) } });
    assert.equal(out.kind, 'applied', JSON.stringify(out));
    assert.equal(read(root, 'src/b.txt'), 'alpha\nBETA\ngamma\n');
    assert.equal(readFileSync(join(root, 'crlf.txt'), 'latin1'), 'one\r\nTWO\r\nthree\r\n');
    assert.equal(existsSync(join(root, 'docs/c.md')), false);
    assert.equal(existsSync(join(root, 'old-name.txt')), false);
    assert.equal(read(root, 'new-name.txt'), 'stays the same\nmostly\n');
    if (out.kind !== 'applied') return;
    const rec = out.applied.record;
    assert.equal(rec.files.length, 6);
    assert.ok(rec.digests.every((d) => d.before !== d.after));
    assert.deepEqual(rec.files.find((f) => f.fileId === 'src/a.txt')?.hunkIds, ['src/a.txt#1', 'src/a.txt#2']);
    assert.equal(JSON.parse(JSON.stringify(rec)).id, rec.id);
    undoApply(out.applied);
    assert.equal(treeHash(root), before);
  });

  it('applies one file only', async () => {
    const { root, patchPath } = setup();
    const review = await prepareReview({ folder: root, source: { path: patchPath } });
    const out = await applyReviewed(review, { selection: { files: ['src/b.txt'] } });
    assert.equal(out.kind, 'applied');
    assert.equal(read(root, 'src/b.txt'), 'alpha\nBETA\ngamma\n');
    assert.equal(read(root, 'src/a.txt'), lines(40));
    assert.equal(read(root, 'docs/c.md'), '# Title\n\ntext\n');
    assert.equal(sh(root, ['status', '--porcelain']).trim(), 'M src/b.txt');
  });

  it('applies exactly the chosen hunk of a file (second without first)', async () => {
    const { root, patchPath } = setup();
    const review = await prepareReview({ folder: root, source: { path: patchPath } });
    const out = await applyReviewed(review, { selection: { hunks: ['src/a.txt#2'] } });
    assert.equal(out.kind, 'applied', JSON.stringify(out));
    assert.equal(read(root, 'src/a.txt'), lines(40).replace('line 35\n', 'LINE THIRTY-FIVE\n'));
    if (out.kind === 'applied') assert.deepEqual(out.applied.record.files[0].hunkIds, ['src/a.txt#2']);
    const first = await applyReviewed(await prepareReview({ folder: root, source: { path: patchPath } }), {
      selection: { hunks: ['src/a.txt#1'] },
    });
    assert.equal(first.kind, 'applied');
    assert.equal(
      read(root, 'src/a.txt'),
      lines(40).replace('line 3\n', 'LINE THREE\n').replace('line 35\n', 'LINE THIRTY-FIVE\n'),
    );
  });

  it('a hunk that no longer matches fails the apply and leaves the tree byte-identical', async () => {
    const { root, patchPath } = setup();
    write(root, { 'src/b.txt': 'alpha\nbeta, edited\ngamma\n' });
    const before = treeHash(root);
    const review = await prepareReview({ folder: root, source: { path: patchPath } });
    const out = await applyReviewed(review, { selection: { files: review.patch.files.map((f) => f.id) } });
    assert.equal(out.kind, 'failed');
    if (out.kind === 'failed') assert.match(out.message, /src\/b\.txt/);
    assert.equal(treeHash(root), before);
  });

  it('a file the user deleted since fails the apply, tree byte-identical', async () => {
    const { root, patchPath } = setup();
    unlinkSync(join(root, 'src/a.txt'));
    const before = treeHash(root);
    const review = await prepareReview({ folder: root, source: { path: patchPath } });
    const out = await applyReviewed(review, { selection: { files: ['src/a.txt', 'src/b.txt'] } });
    assert.equal(out.kind, 'failed');
    assert.equal(treeHash(root), before);
  });

  it('a patch against a different base conflicts; 3-way reports the conflict and abort restores everything', async () => {
    const { root, patchPath } = setup();
    // The user committed a different edit of the same line, and has an unrelated uncommitted edit.
    write(root, { 'src/b.txt': 'alpha\nbeta (mine)\ngamma\n' });
    sh(root, ['commit', '-q', '-am', 'mine']);
    write(root, { 'src/a.txt': lines(40).replace('line 20\n', 'line 20 (uncommitted)\n') });
    const before = treeHash(root);
    const review = await prepareReview({ folder: root, source: { path: patchPath } });
    assert.equal(review.check.ok, false);
    const plain = await applyReviewed(review, { selection: { files: ['src/b.txt', 'src/a.txt'] } });
    assert.equal(plain.kind, 'failed');
    assert.equal(treeHash(root), before);
    const out = await applyReviewed(review, { selection: { files: ['src/b.txt', 'src/a.txt'] }, threeWay: true });
    assert.equal(out.kind, 'conflicts', JSON.stringify(out));
    if (out.kind !== 'conflicts') return;
    const c = out.pending.conflicts;
    assert.deepEqual(
      c.map((x) => x.path),
      ['src/b.txt'],
    );
    assert.equal(c[0].base?.toString(), 'alpha\nbeta\ngamma\n');
    assert.equal(c[0].ours?.toString(), 'alpha\nbeta (mine)\ngamma\n');
    assert.equal(c[0].theirs?.toString(), 'alpha\nBETA\ngamma\n');
    assert.match(read(root, 'src/b.txt'), /<<<<<<< /);
    // The non-conflicting file merged, keeping the user's uncommitted line.
    assert.match(read(root, 'src/a.txt'), /line 20 \(uncommitted\)[\s\S]*LINE THIRTY-FIVE/);
    assert.throws(
      () => finishMerge(out.pending),
      (e: unknown) => e instanceof PatchApplyError && e.code === 'unresolved',
    );
    abortApply(out.pending);
    assert.equal(treeHash(root), before);
  });

  it('3-way: resolving the conflict and finishing records the result, and undo restores', async () => {
    const { root, patchPath } = setup();
    write(root, { 'src/b.txt': 'alpha\nbeta (mine)\ngamma\n' });
    sh(root, ['commit', '-q', '-am', 'mine']);
    const before = treeHash(root);
    const review = await prepareReview({ folder: root, source: { path: patchPath } });
    const out = await applyReviewed(review, { selection: { files: ['src/b.txt'] }, threeWay: true });
    assert.equal(out.kind, 'conflicts');
    if (out.kind !== 'conflicts') return;
    write(root, { 'src/b.txt': 'alpha\nBETA (mine)\ngamma\n' });
    const done = finishMerge(out.pending);
    assert.ok(done.record.digests.every((d) => d.after !== null));
    undoApply(done);
    assert.equal(treeHash(root), before);
  });

  it('undo refuses when the user edited an applied file since, and changes nothing', async () => {
    const { root, patchPath } = setup();
    const review = await prepareReview({ folder: root, source: { path: patchPath } });
    const out = await applyReviewed(review, { selection: { files: ['src/b.txt', 'docs/new.md'] } });
    assert.equal(out.kind, 'applied');
    if (out.kind !== 'applied') return;
    write(root, { 'docs/new.md': 'new doc, edited by me\n' });
    const before = treeHash(root);
    assert.throws(
      () => undoApply(out.applied),
      (e: unknown) => e instanceof PatchApplyError && e.code === 'edited-since' && e.paths.join() === 'docs/new.md',
    );
    assert.equal(treeHash(root), before);
  });

  it('CRLF files: per-hunk apply keeps the carriage returns', async () => {
    const root = makeRepo({ 'w.txt': Array.from({ length: 30 }, (_, i) => `row ${i}\r\n`).join('') });
    dirs.push(root);
    const patch = makePatch(root, (r) =>
      write(r, {
        'w.txt': Array.from({ length: 30 }, (_, i) => (i === 2 || i === 25 ? `ROW ${i}\r\n` : `row ${i}\r\n`)).join(''),
      }),
    );
    const review = await prepareReview({ folder: root, source: { bytes: Buffer.from(patch) } });
    assert.equal(review.check.ok, true);
    const out = await applyReviewed(review, { selection: { hunks: ['w.txt#2'] } });
    assert.equal(out.kind, 'applied');
    assert.equal(
      readFileSync(join(root, 'w.txt'), 'latin1'),
      Array.from({ length: 30 }, (_, i) => (i === 25 ? `ROW ${i}\r\n` : `row ${i}\r\n`)).join(''),
    );
  });
});

describe('unsafe items are refused by default (tree byte-identical), overridable one by one', () => {
  const cases: Record<string, string> = {
    traversal:
      'diff --git a/../evil.txt b/../evil.txt\nnew file mode 100644\nindex 0000000..1111111\n--- /dev/null\n+++ b/../evil.txt\n@@ -0,0 +1 @@\n+x\n',
    absolute: '--- /dev/null\n+++ b//tmp/baton-evil.txt\n@@ -0,0 +1 @@\n+x\n',
    gitDir:
      'diff --git a/.git/hooks/pre-commit b/.git/hooks/pre-commit\nnew file mode 100644\nindex 0000000..1111111\n--- /dev/null\n+++ b/.git/hooks/pre-commit\n@@ -0,0 +1 @@\n+x\n',
    gitDirSpelled:
      'diff --git a/.GIT/config b/.GIT/config\nnew file mode 100644\nindex 0000000..1111111\n--- /dev/null\n+++ b/.GIT/config\n@@ -0,0 +1 @@\n+x\n',
    shortName:
      'diff --git a/GIT~1/config b/GIT~1/config\nnew file mode 100644\nindex 0000000..1111111\n--- /dev/null\n+++ b/GIT~1/config\n@@ -0,0 +1 @@\n+x\n',
    symlink:
      'diff --git a/link b/link\nnew file mode 120000\nindex 0000000..1111111\n--- /dev/null\n+++ b/link\n@@ -0,0 +1 @@\n+/etc/passwd\n\\ No newline at end of file\n',
    submodule:
      'diff --git a/sub b/sub\nnew file mode 160000\nindex 0000000..1111111\n--- /dev/null\n+++ b/sub\n@@ -0,0 +1 @@\n+Subproject commit 1111111111111111111111111111111111111111\n',
    executable: 'diff --git a/src/b.txt b/src/b.txt\nold mode 100644\nnew mode 100755\n',
    binary:
      'diff --git a/blob.bin b/blob.bin\nnew file mode 100644\nindex 0000000000000000000000000000000000000000..5b2aa8fbd4d1b4e04a3b43e1e3b06b54b1f1dd93\nGIT binary patch\nliteral 3\nKcmZQzWMT#Y01f~E\n\nliteral 0\nHcmV?d00001\n\n',
    workflow:
      'diff --git a/.github/workflows/ci.yml b/.github/workflows/ci.yml\nnew file mode 100644\nindex 0000000..1111111\n--- /dev/null\n+++ b/.github/workflows/ci.yml\n@@ -0,0 +1 @@\n+on: push\n',
    vscode:
      'diff --git a/.vscode/tasks.json b/.vscode/tasks.json\nnew file mode 100644\nindex 0000000..1111111\n--- /dev/null\n+++ b/.vscode/tasks.json\n@@ -0,0 +1 @@\n+{}\n',
    devcontainer:
      'diff --git a/.devcontainer/devcontainer.json b/.devcontainer/devcontainer.json\nnew file mode 100644\nindex 0000000..1111111\n--- /dev/null\n+++ b/.devcontainer/devcontainer.json\n@@ -0,0 +1 @@\n+{}\n',
    envrc:
      'diff --git a/.envrc b/.envrc\nnew file mode 100644\nindex 0000000..1111111\n--- /dev/null\n+++ b/.envrc\n@@ -0,0 +1 @@\n+curl x | sh\n',
    gitattributes:
      'diff --git a/.gitattributes b/.gitattributes\nnew file mode 100644\nindex 0000000..1111111\n--- /dev/null\n+++ b/.gitattributes\n@@ -0,0 +1 @@\n+* filter=evil\n',
    gitmodules:
      'diff --git a/.gitmodules b/.gitmodules\nnew file mode 100644\nindex 0000000..1111111\n--- /dev/null\n+++ b/.gitmodules\n@@ -0,0 +1 @@\n+[submodule "x"]\n',
    hooks:
      'diff --git a/.husky/pre-commit b/.husky/pre-commit\nnew file mode 100644\nindex 0000000..1111111\n--- /dev/null\n+++ b/.husky/pre-commit\n@@ -0,0 +1 @@\n+rm -rf ~\n',
  };
  const safe =
    'diff --git a/src/b.txt b/src/b.txt\nindex 1111111..2222222 100644\n--- a/src/b.txt\n+++ b/src/b.txt\n@@ -1,3 +1,3 @@\n alpha\n-beta\n+BETA\n gamma\n';
  for (const [name, unsafe] of Object.entries(cases)) {
    it(`${name}: refused with a reason, nothing written; the safe rest applies`, async () => {
      const root = makeRepo(baseFiles());
      dirs.push(root);
      const text = name === 'executable' ? unsafe : unsafe + safe;
      const before = treeHash(root);
      const review = await prepareReview({ folder: root, source: { bytes: Buffer.from(text) } });
      const refused = review.risks.items.filter((i) => i.severity === 'refuse');
      assert.ok(refused.length > 0, name);
      assert.ok(refused.every((r) => r.reason.length > 10));
      const all = review.patch.files.map((f) => f.id);
      await assert.rejects(
        applyReviewed(review, { selection: { files: all } }),
        (e: unknown) => e instanceof PatchSelectionError && e.refusals.length === refused.length,
      );
      assert.equal(treeHash(root), before, `${name}: tree changed after a refusal`);
      if (name !== 'executable') {
        const rest = await applyReviewed(review, {
          selection: { files: all.filter((id) => !review.risks.refusedFiles.has(id)) },
        });
        assert.equal(rest.kind, 'applied');
        assert.equal(read(root, 'src/b.txt'), 'alpha\nBETA\ngamma\n');
        assert.equal(existsSync(join(root, '..', 'evil.txt')), false);
      }
    });
  }

  it('an override lets the user apply one refused item (executable bit)', async () => {
    const root = makeRepo(baseFiles());
    dirs.push(root);
    const review = await prepareReview({ folder: root, source: { bytes: Buffer.from(cases.executable) } });
    const out = await applyReviewed(review, {
      selection: { files: ['src/b.txt'], overrides: ['src/b.txt:executable'] },
    });
    assert.equal(out.kind, 'applied');
    assert.equal(statSync(join(root, 'src/b.txt')).mode & 0o111, 0o111);
  });
});

describe('git and Baton must read the patch alike', () => {
  it('a crafted patch that git splits differently (text smuggled after binary data) is refused, tree untouched', async () => {
    const root = makeRepo(baseFiles());
    dirs.push(root);
    const text =
      'diff --git a/blob.bin b/blob.bin\nnew file mode 100644\nindex 0000000000000000000000000000000000000000..8352675d67aed6625ece79af41c27fdb4ee2e867\nGIT binary patch\nliteral 3\nKcmZQzWC8#H2LJ>B\n\nliteral 0\nHcmV?d00001\n\n' +
      '--- a/src/b.txt\n+++ b/src/b.txt\n@@ -1,3 +1,3 @@\n alpha\n-beta\n+BETA\n gamma\n';
    const before = treeHash(root);
    const review = await prepareReview({ folder: root, source: { bytes: Buffer.from(text) } });
    assert.equal(review.check.consistent, false);
    assert.match(review.check.errors.join(), /differently/);
    await assert.rejects(
      applyReviewed(review, {
        selection: { files: review.patch.files.map((f) => f.id), overrides: review.risks.items.map((i) => i.id) },
      }),
      (e: unknown) => e instanceof PatchApplyError && e.code === 'inconsistent',
    );
    assert.equal(treeHash(root), before);
  });
});

describe('plain folder (no git): same guarantees with jsdiff', () => {
  function plain(): { root: string; patch: string } {
    const repo = makeRepo(baseFiles());
    const patch = makePatch(repo, agentEdit);
    const root = tempDir('baton-plain-');
    write(root, baseFiles());
    dirs.push(repo, root);
    return { root, patch };
  }

  it('checks, applies per hunk and per file, and undoes', async () => {
    const { root, patch } = plain();
    const before = treeHash(root);
    const review = await prepareReview({ folder: root, source: { bytes: Buffer.from(patch) } });
    assert.equal(review.target.kind, 'folder');
    assert.equal(review.check.ok, true, JSON.stringify(review.check));
    const out = await applyReviewed(review, {
      selection: { hunks: ['src/a.txt#2'], files: ['new-name.txt', 'docs/c.md', 'crlf.txt'] },
    });
    assert.equal(out.kind, 'applied', JSON.stringify(out));
    assert.equal(read(root, 'src/a.txt'), lines(40).replace('line 35\n', 'LINE THIRTY-FIVE\n'));
    assert.equal(read(root, 'new-name.txt'), 'stays the same\nmostly\n');
    assert.equal(existsSync(join(root, 'old-name.txt')), false);
    assert.equal(existsSync(join(root, 'docs/c.md')), false);
    assert.equal(readFileSync(join(root, 'crlf.txt'), 'latin1'), 'one\r\nTWO\r\nthree\r\n');
    if (out.kind === 'applied') undoApply(out.applied);
    assert.equal(treeHash(root), before);
  });

  it('a hunk that no longer matches or a deleted file: nothing is written', async () => {
    const { root, patch } = plain();
    write(root, { 'src/b.txt': 'alpha\nbeta?\ngamma\n' });
    unlinkSync(join(root, 'docs/c.md'));
    const before = treeHash(root);
    const review = await prepareReview({ folder: root, source: { bytes: Buffer.from(patch) } });
    assert.deepEqual(
      review.check.files
        .filter((f) => !f.ok)
        .map((f) => f.path)
        .sort(),
      ['docs/c.md', 'src/b.txt'],
    );
    const out = await applyReviewed(review, { selection: { files: review.patch.files.map((f) => f.id) } });
    assert.equal(out.kind, 'failed');
    assert.equal(treeHash(root), before);
  });
});

describe('large patches', () => {
  it('a 50 MB patch is streamed with progress, checked, applied and undone', async () => {
    const root = makeRepo({ 'README.md': 'x\n' });
    const dir = tempDir('baton-big-');
    dirs.push(root, dir);
    const patchPath = join(dir, 'changes.patch');
    const body =
      Array.from(
        { length: 5000 },
        (_, i) => `+${String(i).padStart(6, '0')} ${'lorem ipsum dolor sit amet '.repeat(3)}`,
      ).join('\n') + '\n';
    const parts: string[] = [];
    for (let f = 0; f < 120; f++)
      parts.push(
        `diff --git a/big/f${f}.txt b/big/f${f}.txt\nnew file mode 100644\nindex 0000000..1111111\n--- /dev/null\n+++ b/big/f${f}.txt\n@@ -0,0 +1,5000 @@\n${body}`,
      );
    writeFileSync(patchPath, parts.join(''));
    const size = statSync(patchPath).size;
    assert.ok(size > 50 * 1024 * 1024, `${size}`);
    const before = treeHash(root);
    const progress: [number, number][] = [];
    const review = await prepareReview({
      folder: root,
      source: { path: patchPath },
      onProgress: (d, t) => progress.push([d, t]),
    });
    assert.ok(progress.length >= 50, `${progress.length} progress reports`);
    assert.deepEqual(progress[progress.length - 1], [size, size]);
    assert.ok(progress.every(([d], i) => i === 0 || d > progress[i - 1][0]));
    assert.equal(review.patch.files.length, 120);
    assert.equal(review.check.ok, true, JSON.stringify(review.check.errors));
    const out = await applyReviewed(review, { selection: { files: review.patch.files.map((f) => f.id) } });
    assert.equal(out.kind, 'applied');
    assert.equal(read(root, 'big/f7.txt').split('\n').length, 5001);
    if (out.kind === 'applied') undoApply(out.applied);
    assert.equal(treeHash(root), before);
  });
});
