// Applying a reviewed patch in parts against real git repositories (and a plain folder): the rest is
// checked against the tree as it is after the earlier applies, written in one step after a snapshot,
// and leaves the tree byte-identical when it does not apply. Undo takes every apply back.
import * as assert from 'node:assert/strict';
import { readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { appliedParts, remainingOffered } from '../../../src/core/patch/appliedParts';
import type { PatchSelection } from '../../../src/core/patch/patchModel';
import { PatchSelectionError } from '../../../src/core/patch/subPatch';
import {
  PatchApplyError,
  abortApply,
  applyReviewed,
  prepareReview,
  undoApplies,
  type AppliedPatch,
  type PatchReview,
} from '../../../src/node/patchApply';
import { cleanup, makePatch, makeRepo, sh, tempDir, treeHash, write } from './helpers';

const dirs: string[] = [];
after(() => cleanup(...dirs));

const numbered = (n: number, tag = 'l'): string =>
  Array.from({ length: n }, (_, i) => `${tag}${i + 1}`).join('\n') + '\n';

function baseFiles(): Record<string, string> {
  return { 'f.txt': numbered(60), 'g.txt': 'alpha\nbeta\ngamma\n', 'old.txt': numbered(40, 'o'), 'gone.txt': 'bye\n' };
}

/** Three hunks in f.txt that shift each other, a one-line change, a rename with two hunks, an added and a deleted file. */
function agentEdit(root: string): void {
  write(root, {
    'f.txt': numbered(60).replace('l5\n', 'l5\nnew A\nnew B\n').replace('l25\n', '').replace('l50\n', 'L50\n'),
    'g.txt': 'alpha\nBETA\ngamma\n',
    'new.txt': 'fresh\n',
  });
  unlinkSync(join(root, 'gone.txt'));
  sh(root, ['mv', 'old.txt', 'moved.txt']);
  write(root, { 'moved.txt': numbered(40, 'o').replace('o3\n', 'O3\n').replace('o35\n', 'O35\n') });
}

function setup(plain = false): { root: string; patch: string } {
  const root = makeRepo(baseFiles());
  const patch = makePatch(root, agentEdit);
  dirs.push(root);
  if (!plain) return { root, patch };
  const folder = tempDir('baton-plain-');
  dirs.push(folder);
  write(folder, baseFiles());
  return { root: folder, patch };
}

/** A review as the session keeps it: the applies so far, and each new one made with what they wrote. */
async function session(root: string, patch: string) {
  const review: PatchReview = await prepareReview({ folder: root, source: { bytes: Buffer.from(patch) } });
  const applies: AppliedPatch[] = [];
  const parts = () =>
    appliedParts(
      review.patch,
      applies.map((a) => a.record.files),
    );
  const apply = async (selection: PatchSelection, threeWay = false) => {
    const out = await applyReviewed(review, { selection, threeWay, applied: parts() });
    if (out.kind === 'applied') applies.push(out.applied);
    return out;
  };
  return { review, applies, parts, apply };
}

/** The tree after applying the whole patch at once, to compare the step-by-step result with. */
async function appliedAtOnce(patch: string, plain: boolean): Promise<string> {
  const { root } = setup(plain);
  const s = await session(root, patch);
  const out = await s.apply({ files: s.review.patch.files.map((f) => f.id) });
  assert.equal(out.kind, 'applied', JSON.stringify(out));
  return treeHash(root, 'files');
}

const read = (root: string, p: string): string => readFileSync(join(root, p), 'utf8');

for (const plain of [false, true]) {
  describe(`applying the rest after a partial apply (${plain ? 'plain folder' : 'git'})`, () => {
    it('one hunk, then other hunks and files, then Apply All of the rest: the tree ends as if applied at once', async () => {
      const { root, patch } = setup(plain);
      const before = treeHash(root);
      const s = await session(root, patch);
      assert.equal((await s.apply({ hunks: ['f.txt#2'] })).kind, 'applied');
      assert.equal(read(root, 'f.txt'), numbered(60).replace('l25\n', ''));
      // Hunk 1 of the renamed file: the rename goes in with it.
      const second = await s.apply({ hunks: ['f.txt#3', 'moved.txt#1'], files: ['g.txt'] });
      assert.equal(second.kind, 'applied', JSON.stringify(second));
      assert.equal(read(root, 'moved.txt'), numbered(40, 'o').replace('o3\n', 'O3\n'));
      // What is left: hunk 1 of f.txt (before the applied ones), hunk 2 of the renamed file, the added and the deleted file.
      const rest = remainingOffered(s.review.patch, s.review.risks, [], s.parts());
      assert.deepEqual([...(rest.files ?? [])].sort(), ['gone.txt', 'new.txt']);
      assert.deepEqual([...(rest.hunks ?? [])].sort(), ['f.txt#1', 'moved.txt#2']);
      const third = await s.apply(rest);
      assert.equal(third.kind, 'applied', JSON.stringify(third));
      assert.equal(treeHash(root, 'files'), await appliedAtOnce(patch, plain));
      // Nothing is left, and asking again is refused, not applied twice.
      await assert.rejects(
        s.apply({ files: s.review.patch.files.map((f) => f.id) }),
        (e: unknown) => e instanceof PatchSelectionError && /already applied/.test(e.message),
      );
      // Undo takes back all three applies, newest first.
      const restored = undoApplies(s.applies);
      assert.ok(
        restored.includes('f.txt') && restored.includes('old.txt') && restored.includes('moved.txt'),
        restored.join(', '),
      );
      assert.equal(treeHash(root), before);
    });

    it('undo refuses, naming the file and restoring nothing, when a file was edited after its apply', async () => {
      const { root, patch } = setup(plain);
      const s = await session(root, patch);
      assert.equal((await s.apply({ hunks: ['f.txt#1'] })).kind, 'applied');
      assert.equal((await s.apply({ files: ['g.txt'] })).kind, 'applied');
      writeFileSync(join(root, 'g.txt'), 'alpha\nBETA (mine)\ngamma\n');
      const edited = treeHash(root);
      assert.throws(
        () => undoApplies(s.applies),
        (e: unknown) => e instanceof PatchApplyError && e.code === 'edited-since' && e.paths.join() === 'g.txt',
      );
      assert.equal(treeHash(root), edited);
    });
  });
}

describe('a conflict after a partial apply (git)', () => {
  it('the rest fails its check against the current tree, naming the file, tree byte-identical; 3-way sends it to the merge editor and abort restores', async () => {
    const { root, patch } = setup();
    const s = await session(root, patch);
    assert.equal((await s.apply({ hunks: ['f.txt#1'], files: ['new.txt'] })).kind, 'applied');
    // The user edits a line the rest of the patch changes, and a line next to an unapplied hunk of f.txt.
    write(root, { 'g.txt': 'alpha\nbeta (mine)\ngamma\n' });
    const before = treeHash(root);
    const rest = remainingOffered(s.review.patch, s.review.risks, [], s.parts());
    const out = await s.apply(rest);
    assert.equal(out.kind, 'failed', JSON.stringify(out));
    if (out.kind === 'failed') {
      // Said by the check of the rest against the tree as it is now, before anything was written.
      assert.match(out.message, /rest of the patch does not apply to your current tree.*g\.txt/);
      assert.deepEqual(
        out.files.filter((f) => !f.ok).map((f) => f.path),
        ['g.txt'],
      );
    }
    assert.equal(treeHash(root), before);
    assert.equal(s.applies.length, 1);
    // The same rest with a 3-way merge: f.txt's other hunks merge, g.txt conflicts.
    const merged = await s.apply({ files: ['g.txt', 'gone.txt'] }, true);
    assert.equal(merged.kind, 'conflicts', JSON.stringify(merged));
    if (merged.kind !== 'conflicts') return;
    assert.deepEqual(
      merged.pending.conflicts.map((c) => c.path),
      ['g.txt'],
    );
    assert.equal(merged.pending.conflicts[0].ours?.toString(), 'alpha\nbeta (mine)\ngamma\n');
    assert.match(read(root, 'g.txt'), /<<<<<<< /);
    abortApply(merged.pending);
    assert.equal(treeHash(root), before);
  });

  it('a hunk of a partly applied file that no longer fits fails the check; the rest of the tree is untouched', async () => {
    const { root, patch } = setup();
    const s = await session(root, patch);
    assert.equal((await s.apply({ hunks: ['f.txt#1'] })).kind, 'applied');
    write(root, { 'f.txt': read(root, 'f.txt').replace('l50\n', 'l50 (mine)\n') });
    const before = treeHash(root);
    const out = await s.apply({ files: ['f.txt', 'g.txt'] });
    assert.equal(out.kind, 'failed', JSON.stringify(out));
    if (out.kind === 'failed') assert.match(out.message, /f\.txt/);
    assert.equal(treeHash(root), before);
    // Once the user's line is gone, the rest goes in.
    write(root, { 'f.txt': read(root, 'f.txt').replace('l50 (mine)\n', 'l50\n') });
    assert.equal((await s.apply({ files: ['f.txt', 'g.txt'] })).kind, 'applied');
    assert.equal(
      read(root, 'f.txt'),
      numbered(60).replace('l5\n', 'l5\nnew A\nnew B\n').replace('l25\n', '').replace('l50\n', 'L50\n'),
    );
  });
});

describe('a renamed file applied hunk by hunk', () => {
  it('the second hunk goes to the new path once the first took the rename', async () => {
    const { root, patch } = setup();
    const s = await session(root, patch);
    assert.equal((await s.apply({ hunks: ['moved.txt#1'] })).kind, 'applied');
    assert.equal(sh(root, ['status', '--porcelain', '--', 'old.txt']).trim(), 'D old.txt');
    const out = await s.apply({ hunks: ['moved.txt#2'] });
    assert.equal(out.kind, 'applied', JSON.stringify(out));
    assert.equal(read(root, 'moved.txt'), numbered(40, 'o').replace('o3\n', 'O3\n').replace('o35\n', 'O35\n'));
    // The user moving the file back in between makes the rest fail, not write elsewhere.
    const { root: r2, patch: p2 } = setup();
    const s2 = await session(r2, p2);
    assert.equal((await s2.apply({ hunks: ['moved.txt#1'] })).kind, 'applied');
    renameSync(join(r2, 'moved.txt'), join(r2, 'elsewhere.txt'));
    const before = treeHash(r2);
    assert.equal((await s2.apply({ hunks: ['moved.txt#2'] })).kind, 'failed');
    assert.equal(treeHash(r2), before);
  });
});

describe('the rest is numbered against the tree as it is now (git)', () => {
  it('with the same context twice in a file, the hunk left changes the copy it was written for', async () => {
    // Hunk 1 puts ten lines on top; hunk 2 edits the second copy of a block. Numbered against the
    // original file, hunk 2 would point nearer the first copy and git would change that one.
    const block = ['a', 'b', 'c', 'd', 'e', 'f', 'g'];
    const lines = [
      ...numbered(20).trimEnd().split('\n'),
      ...block,
      'l28',
      'l29',
      ...block,
      ...numbered(50).trimEnd().split('\n').slice(36),
    ];
    const edited = [
      lines[0],
      ...Array.from({ length: 10 }, (_, i) => `top ${i}`),
      ...lines.slice(1, 32),
      'D',
      ...lines.slice(33),
    ];
    const root = makeRepo({ 'dup.txt': lines.join('\n') + '\n' });
    dirs.push(root);
    const patch = makePatch(root, (r) => write(r, { 'dup.txt': edited.join('\n') + '\n' }));
    const s = await session(root, patch);
    assert.equal((await s.apply({ hunks: ['dup.txt#1'] })).kind, 'applied');
    assert.equal((await s.apply({ files: ['dup.txt'] })).kind, 'applied');
    assert.equal(read(root, 'dup.txt'), edited.join('\n') + '\n');
  });
});
