// The patch a result check approved: its statistics are computed once per patch (when it is stored or
// read back and verified) and reused by every snapshot after that; bytes that changed on disk are refused.
import * as assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ApprovedPatchError, ApprovedPatches, patchDigest, patchStats } from '../../../src/node/approvedPatches';

const patch = Buffer.from(
  [
    'diff --git a/a.txt b/a.txt',
    '--- a/a.txt',
    '+++ b/a.txt',
    '@@ -1,2 +1,2 @@',
    '-old',
    '+new',
    ' same',
    'diff --git a/b.txt b/b.txt',
    'new file mode 100644',
    '--- /dev/null',
    '+++ b/b.txt',
    '@@ -0,0 +1,2 @@',
    '+one',
    '+two',
    '',
  ].join('\n'),
);

function withDir(fn: (dir: string) => void): void {
  const dir = mkdtempSync(join(tmpdir(), 'baton-approved-'));
  try {
    fn(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('ApprovedPatches', () => {
  it('computes the statistics when the patch is stored and hands out the same ones after', () => {
    withDir((dir) => {
      const patches = new ApprovedPatches(dir);
      const digest = patchDigest(patch);
      const stored = patches.store('d1', patch, digest);
      assert.deepEqual(stored.stats, { files: 2, additions: 3, deletions: 1 });
      const again = patches.get('d1', digest);
      assert.equal(again, stored, 'held in memory, not read or parsed again');
      assert.equal(again.stats, stored.stats);
    });
  });

  it('after a reload, reads the bytes back once, checks them against the digest and keeps them', () => {
    withDir((dir) => {
      const digest = patchDigest(patch);
      new ApprovedPatches(dir).store('d1', patch, digest);
      const reloaded = new ApprovedPatches(dir);
      const first = reloaded.get('d1', digest);
      assert.deepEqual(first.stats, { files: 2, additions: 3, deletions: 1 });
      assert.ok(first.bytes.equals(patch));
      // Changing the file now does not matter to what is held: it was checked when it was read.
      writeFileSync(join(dir, 'd1.review.patch'), 'changed');
      assert.equal(reloaded.get('d1', digest), first);
    });
  });

  it('refuses bytes that changed on disk, and says when they are missing', () => {
    withDir((dir) => {
      const digest = patchDigest(patch);
      new ApprovedPatches(dir).store('d1', patch, digest);
      writeFileSync(join(dir, 'd1.review.patch'), Buffer.concat([patch, Buffer.from('+sneaky\n')]));
      const reloaded = new ApprovedPatches(dir);
      assert.throws(
        () => reloaded.get('d1', digest),
        (e: unknown) => e instanceof ApprovedPatchError && e.reason === 'changed',
      );
      reloaded.remove('d1');
      assert.throws(
        () => reloaded.get('d1', digest),
        (e: unknown) => e instanceof ApprovedPatchError && e.reason === 'missing',
      );
    });
  });

  it('a patch held for another digest is read again and checked against the new one', () => {
    withDir((dir) => {
      const patches = new ApprovedPatches(dir);
      patches.store('d1', patch, patchDigest(patch));
      assert.throws(
        () => patches.get('d1', 'sha256:other'),
        (e: unknown) => e instanceof ApprovedPatchError && e.reason === 'changed',
      );
    });
  });

  it('bytes that are not a patch have no statistics', () => {
    assert.equal(patchStats(Buffer.from('diff --git a/x\n@@ nonsense')), undefined);
  });
});
