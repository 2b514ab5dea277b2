import * as assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { parsePatchBytes, parsePatchText } from '../../../src/core/patch/patchParser';
import { classifyPatch } from '../../../src/core/patch/patchRisk';
import { PatchSelectionError, buildSubPatch, renderSubPatch } from '../../../src/core/patch/subPatch';
import { applyHunks } from '../../../src/core/patch/patchText';
import { cleanup, makePatch, makeRepo, sh, write } from './helpers';

const repos: string[] = [];
after(() => cleanup(...repos));

const numbered = (n: number): string => Array.from({ length: n }, (_, i) => `l${i + 1}`).join('\n') + '\n';

function edited(base: string, changes: Record<number, string[] | null>): string {
  const out: string[] = [];
  base
    .trimEnd()
    .split('\n')
    .forEach((l, i) => {
      const c = changes[i + 1];
      if (c === undefined) out.push(l);
      else if (c !== null) out.push(...c);
    });
  return out.join('\n') + '\n';
}

describe('sub-patches', () => {
  const base = numbered(60);
  // Hunk 1 adds two lines, hunk 2 removes one, hunk 3 replaces one: every choice shifts later line numbers.
  const target = edited(base, { 5: ['l5', 'new A', 'new B'], 25: null, 50: ['L50'] });
  const root = makeRepo({ 'f.txt': base, 'g.txt': 'g\n' });
  repos.push(root);
  const text = makePatch(root, (r) => write(r, { 'f.txt': target, 'g.txt': 'G\n' }));
  const bytes = Buffer.from(text);
  const patch = parsePatchBytes(bytes);
  const report = classifyPatch(patch);
  const hunks = patch.files[0].hunks.map((h) => h.id);

  it('every subset of hunks builds a patch git applies, giving exactly those changes', () => {
    assert.equal(hunks.length, 3);
    for (let mask = 1; mask < 8; mask++) {
      const chosen = hunks.filter((_, i) => mask & (1 << i));
      const sub = buildSubPatch(patch, report, { hunks: chosen });
      const out = renderSubPatch(sub, bytes);
      sh(root, ['apply', '--check', '-'], Buffer.from(out));
      sh(root, ['apply', '-'], Buffer.from(out));
      const changes: Record<number, string[] | null> = {};
      if (mask & 1) changes[5] = ['l5', 'new A', 'new B'];
      if (mask & 2) changes[25] = null;
      if (mask & 4) changes[50] = ['L50'];
      const want = edited(base, changes);
      assert.equal(readFileSync(join(root, 'f.txt'), 'utf8'), want, `mask ${mask}`);
      assert.equal(applyHunks(base, sub.files[0].hunks), want, `jsdiff, mask ${mask}`);
      sh(root, ['checkout', '-q', '--', '.']);
    }
  });

  it('whole files are copied byte for byte; the whole patch is recognised as such', () => {
    const all = buildSubPatch(patch, report, { files: patch.files.map((f) => f.id) });
    assert.equal(all.isWholePatch, true);
    assert.deepEqual(Buffer.from(renderSubPatch(all, bytes)), bytes);
    const one = buildSubPatch(patch, report, { files: ['g.txt'] });
    assert.equal(one.isWholePatch, false);
    assert.ok(Buffer.from(renderSubPatch(one, bytes)).toString().startsWith('diff --git a/g.txt b/g.txt\n'));
  });

  it('refuses unknown ids, refused files without override, and hunk picks on added files', () => {
    assert.throws(() => buildSubPatch(patch, report, { hunks: ['nope#1'] }), /not in this patch/);
    assert.throws(() => buildSubPatch(patch, report, {}), /Nothing is selected/);
    const risky = parsePatchText(
      'diff --git a/.envrc b/.envrc\nnew file mode 100644\nindex 0000000..1111111\n--- /dev/null\n+++ b/.envrc\n@@ -0,0 +1,2 @@\n+a\n+b\n',
    );
    const riskyReport = classifyPatch(risky);
    assert.throws(
      () => buildSubPatch(risky, riskyReport, { files: ['.envrc'] }),
      (e: unknown) =>
        e instanceof PatchSelectionError && e.refusals.map((r) => r.id).join() === '.envrc:sensitive-file',
    );
    assert.equal(
      buildSubPatch(risky, riskyReport, { files: ['.envrc'], overrides: ['.envrc:sensitive-file'] }).files.length,
      1,
    );
    const twoHunkAdd = parsePatchText('--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1 @@\n+a\n@@ -0,0 +2 @@\n+b\n');
    assert.throws(
      () => buildSubPatch(twoHunkAdd, classifyPatch(twoHunkAdd), { hunks: ['n.txt#1'] }),
      /whole or not at all/,
    );
  });
});
