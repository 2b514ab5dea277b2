// What a review has applied so far, and what a selection means once some of it is in the tree.
import * as assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  appliedParts,
  fileApplyState,
  isEmptySelection,
  remainingOf,
  remainingOffered,
} from '../../../src/core/patch/appliedParts';
import { parsePatchText } from '../../../src/core/patch/patchParser';
import { classifyPatch } from '../../../src/core/patch/patchRisk';
import { applyHunks } from '../../../src/core/patch/patchText';
import { remainingHunks } from '../../../src/core/patch/subPatch';
import { cleanup, makePatch, makeRepo, write } from './helpers';

const numbered = (n: number): string => Array.from({ length: n }, (_, i) => `l${i + 1}`).join('\n') + '\n';
const base = numbered(60);
// Hunk 1 adds two lines, hunk 2 removes one, hunk 3 replaces one: each shifts the ones after it.
const target = base.replace('l5\n', 'l5\nnew A\nnew B\n').replace('l25\n', '').replace('l50\n', 'L50\n');

function fixture() {
  const root = makeRepo({ 'f.txt': base, 'g.txt': 'g\n', '.github/workflows/ci.yml': 'on: push\n' });
  const text = makePatch(root, (r) =>
    write(r, { 'f.txt': target, 'g.txt': 'G\n', '.github/workflows/ci.yml': 'on: [push]\n' }),
  );
  cleanup(root);
  const patch = parsePatchText(text);
  return { patch, risks: classifyPatch(patch) };
}

describe('applied parts', () => {
  const { patch, risks } = fixture();
  const f = patch.files.find((x) => x.id === 'f.txt');
  assert.ok(f && f.hunks.length === 3, JSON.stringify(patch.files.map((x) => [x.id, x.hunks.length])));

  it('adds up the applies: whole files, single hunks, and a file whose every hunk went in one by one', () => {
    const none = appliedParts(patch, []);
    assert.equal(fileApplyState(f, none), 'none');
    const one = appliedParts(patch, [
      [{ fileId: 'f.txt', whole: false, hunkIds: ['f.txt#2'] }],
      [{ fileId: 'g.txt', whole: true, hunkIds: ['g.txt#1'] }],
    ]);
    assert.equal(fileApplyState(f, one), 'some');
    assert.deepEqual([...one.files], ['g.txt']);
    const all = appliedParts(patch, [
      [{ fileId: 'f.txt', whole: false, hunkIds: ['f.txt#2'] }],
      [{ fileId: 'f.txt', whole: false, hunkIds: ['f.txt#1', 'f.txt#3'] }],
    ]);
    assert.equal(fileApplyState(f, all), 'all');
    assert.equal(isEmptySelection(remainingOffered(patch, risks, [], all)), false);
    // Everything offered applied: the refused workflow is not offered, so nothing is left.
    const offered = appliedParts(patch, [
      patch.files.filter((x) => !risks.refusedFiles.has(x.id)).map((x) => ({ fileId: x.id, whole: true, hunkIds: [] })),
    ]);
    assert.equal(isEmptySelection(remainingOffered(patch, risks, [], offered)), true);
  });

  it('a selection loses what is applied; a partly applied file chosen whole becomes its hunks that are left', () => {
    const parts = appliedParts(patch, [
      [
        { fileId: 'f.txt', whole: false, hunkIds: ['f.txt#2'] },
        { fileId: 'g.txt', whole: true, hunkIds: ['g.txt#1'] },
      ],
    ]);
    assert.deepEqual(remainingOf(patch, { files: ['f.txt', 'g.txt'], overrides: [] }, parts), {
      files: [],
      hunks: ['f.txt#1', 'f.txt#3'],
      overrides: [],
    });
    assert.deepEqual(remainingOf(patch, { hunks: ['f.txt#2', 'f.txt#3'] }, parts), {
      files: [],
      hunks: ['f.txt#3'],
      overrides: [],
    });
    assert.deepEqual(remainingOf(patch, { files: ['g.txt'] }, parts), { files: [], hunks: [], overrides: [] });
  });

  it('Apply All of the rest leaves out refused files until allowed', () => {
    const ci = risks.items.find((i) => i.fileId === '.github/workflows/ci.yml' && i.severity === 'refuse');
    assert.ok(ci);
    const parts = appliedParts(patch, [[{ fileId: 'g.txt', whole: true, hunkIds: ['g.txt#1'] }]]);
    assert.deepEqual(remainingOffered(patch, risks, [], parts), { files: ['f.txt'], hunks: [], overrides: [] });
    assert.deepEqual(remainingOffered(patch, risks, [ci.id], parts).files, ['.github/workflows/ci.yml', 'f.txt']);
  });

  it('the hunks left, numbered against the file with the applied ones in it, give the patch’s result in any order', () => {
    const ids = f.hunks.map((h) => h.id);
    for (const first of [[ids[0]], [ids[1]], [ids[2]], [ids[0], ids[2]], [ids[1], ids[2]]]) {
      const done = new Set(first);
      const now = applyHunks(
        base,
        f.hunks.filter((h) => done.has(h.id)),
      );
      assert.ok(now !== undefined, `applying ${first.join(', ')} alone`);
      assert.equal(applyHunks(now, remainingHunks(f, done)), target, `after ${first.join(', ')}`);
    }
  });

  it('numbers the hunks left exactly: with the same context twice in the file, the right copy changes', () => {
    // The second hunk edits the second copy of a block; after hunk 1 put ten lines on top, its old line
    // number would point nearer the first copy.
    const block = ['a', 'b', 'c', 'd', 'e', 'f', 'g'];
    const lines = [
      ...numbered(20).trimEnd().split('\n'),
      ...block,
      'l28',
      'l29',
      ...block,
      ...numbered(50).trimEnd().split('\n').slice(36),
    ];
    const dupBase = lines.join('\n') + '\n';
    const edited = [
      lines[0],
      ...Array.from({ length: 10 }, (_, i) => `top ${i}`),
      ...lines.slice(1, 32),
      'D',
      ...lines.slice(33),
    ];
    const dupTarget = edited.join('\n') + '\n';
    const root = makeRepo({ 'dup.txt': dupBase });
    const dup = parsePatchText(makePatch(root, (r) => write(r, { 'dup.txt': dupTarget }))).files[0];
    cleanup(root);
    assert.equal(dup.hunks.length, 2);
    const now = applyHunks(dupBase, [dup.hunks[0]]);
    assert.ok(now !== undefined);
    assert.equal(applyHunks(now, remainingHunks(dup, new Set([dup.hunks[0].id]))), dupTarget);
  });
});
