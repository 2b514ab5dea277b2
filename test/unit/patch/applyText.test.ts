// Apply failures are data (a code and what they name) and become a sentence where they are shown:
// in English for logs and the CLI (the outcome's and the error's `message`), in the user's language
// in the review.
import * as assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { english, type Translate } from '../../../src/core/protocol/l10n';
import { applyMessageText, type ApplyMessage } from '../../../src/core/patch/applyText';
import { PatchApplyError, applyReviewed, finishMerge, prepareReview } from '../../../src/node/patchApply';
import { cleanup, makePatch, makeRepo, sh, tempDir, treeHash, write } from './helpers';

const dirs: string[] = [];
after(() => cleanup(...dirs));

describe('apply messages', () => {
  it('say in English exactly what applying always said', () => {
    const cases: [ApplyMessage, string][] = [
      [
        { code: 'rest-does-not-apply', detail: 'a.txt: patch does not apply' },
        'The rest of the patch does not apply to your current tree; your files are unchanged. a.txt: patch does not apply',
      ],
      [{ code: 'did-not-apply', detail: 'x' }, 'The patch did not apply; your files are unchanged. x'],
      [{ code: 'git-skipped', paths: ['a', 'b'] }, 'git skipped a, b; nothing was applied.'],
      [{ code: 'write-failed', detail: 'EACCES' }, 'Writing failed, your files were restored: EACCES'],
      [
        { code: 'parsers-disagree', restored: false },
        "git reads this patch differently from Baton's parser; it will not be applied",
      ],
      [
        { code: 'parsers-disagree', restored: true },
        "git reads this patch differently from Baton's parser; it will not be applied. Your files were restored.",
      ],
      [{ code: 'inconsistent', detail: 'a; b' }, 'a; b'],
      [
        { code: 'conflict-markers', paths: ['x.txt'] },
        'These files still have conflict markers: x.txt. Resolve them or abort.',
      ],
      [
        { code: 'edited-since-apply', paths: ['a', 'b'] },
        'Undo would discard edits made since the apply, in: a, b. Revert those edits first or undo by hand.',
      ],
    ];
    for (const [m, text] of cases) assert.equal(applyMessageText(m, english), text, m.code);
  });

  it('are said through the translate function they are given, what they name as arguments', () => {
    const calls: unknown[][] = [];
    const t: Translate = (message, ...args) => {
      calls.push([message, ...args]);
      return 'übersetzt';
    };
    assert.equal(applyMessageText({ code: 'git-skipped', paths: ['a', 'b'] }, t), 'übersetzt');
    assert.deepEqual(calls, [['git skipped {0}; nothing was applied.', 'a, b']]);
  });

  it('a failed apply carries its failure as data next to the English message; a refused finish carries why', async () => {
    const root = makeRepo({ 'b.txt': 'alpha\nbeta\ngamma\n' });
    const patch = makePatch(root, (r) => write(r, { 'b.txt': 'alpha\nBETA\ngamma\n' }));
    const dir = tempDir('baton-artifact-');
    dirs.push(root, dir);
    const patchPath = join(dir, 'changes.patch');
    writeFileSync(patchPath, patch);
    write(root, { 'b.txt': 'alpha\nbeta (mine)\ngamma\n' });
    sh(root, ['commit', '-q', '-am', 'mine']);
    const before = treeHash(root);
    const review = await prepareReview({ folder: root, source: { path: patchPath } });
    const out = await applyReviewed(review, { selection: { files: ['b.txt'] } });
    assert.equal(out.kind, 'failed');
    if (out.kind !== 'failed') return;
    assert.equal(out.failure.code, 'did-not-apply');
    assert.equal(out.message, applyMessageText(out.failure, english));
    assert.equal(treeHash(root), before);
    const merged = await applyReviewed(review, { selection: { files: ['b.txt'] }, threeWay: true });
    assert.equal(merged.kind, 'conflicts');
    if (merged.kind !== 'conflicts') return;
    assert.throws(
      () => finishMerge(merged.pending),
      (e: unknown) =>
        e instanceof PatchApplyError &&
        e.why.code === 'conflict-markers' &&
        e.message === 'These files still have conflict markers: b.txt. Resolve them or abort.',
    );
  });
});
