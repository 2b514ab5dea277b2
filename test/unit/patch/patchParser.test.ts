import * as assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { PatchParseError } from '../../../src/core/patch/patchModel';
import { PatchStreamParser, parsePatchBytes, parsePatchText } from '../../../src/core/patch/patchParser';
import { chmodSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cleanup, makePatch, makeRepo, sh } from './helpers';

const repos: string[] = [];
after(() => cleanup(...repos));

function repo(files: Record<string, string | Buffer>): string {
  const r = makeRepo(files);
  repos.push(r);
  return r;
}

describe('patch parser: git extended headers', () => {
  const r = repo({
    'a.txt': 'one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\n',
    'gone.txt': 'bye\n',
    'mode.sh': 'echo\n',
    'img.bin': Buffer.from([0, 1, 2, 3]),
    'copy-src.txt': 'x\n'.repeat(20),
  });
  const text = makePatch(r, (root) => {
    sh(root, ['mv', 'a.txt', 'b.txt']);
    writeFileSync(join(root, 'b.txt'), 'one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nTEN\n');
    unlinkSync(join(root, 'gone.txt'));
    chmodSync(join(root, 'mode.sh'), 0o755);
    writeFileSync(join(root, 'img.bin'), Buffer.from([0, 9, 9, 3, 255]));
    writeFileSync(join(root, 'new.txt'), 'no newline at end');
    symlinkSync('b.txt', join(root, 'link'));
  });
  const patch = parsePatchText(text);
  const byId = new Map(patch.files.map((f) => [f.id, f]));

  it('reads renames with their hunks', () => {
    const f = byId.get('b.txt');
    assert.ok(f, text);
    assert.equal(f.status, 'renamed');
    assert.equal(f.oldPath, 'a.txt');
    assert.equal(f.newPath, 'b.txt');
    assert.equal(f.hunks.length, 1);
    assert.deepEqual([f.added, f.removed], [1, 1]);
  });

  it('reads deleted files, mode changes, binary patches, new files and symlinks', () => {
    const gone = byId.get('gone.txt');
    assert.equal(gone?.status, 'deleted');
    assert.equal(gone?.newPath, undefined);
    assert.equal(gone?.oldMode, '100644');
    const mode = byId.get('mode.sh');
    assert.deepEqual(
      [mode?.status, mode?.oldMode, mode?.newMode, mode?.hunks.length],
      ['modified', '100644', '100755', 0],
    );
    const bin = byId.get('img.bin');
    assert.equal(bin?.binary, true);
    assert.equal(bin?.binaryData, true);
    const created = byId.get('new.txt');
    assert.equal(created?.status, 'added');
    assert.equal(created?.newMode, '100644');
    assert.deepEqual(created?.hunks[0].lines, ['+no newline at end', '\\ No newline at end of file']);
    const link = byId.get('link');
    assert.equal(link?.newMode, '120000');
  });

  it('keeps index blob ids and each file section as verbatim bytes', () => {
    const bytes = Buffer.from(text, 'utf8');
    for (const f of patch.files) {
      assert.ok(f.bytes, f.id);
      const section = bytes.subarray(f.bytes.start, f.bytes.end).toString('utf8');
      assert.ok(section.startsWith('diff --git '), section);
      if (f.hunks.length || f.binary) assert.match(f.oldBlob ?? '', /^[0-9a-f]+$/, f.id);
    }
    assert.equal(patch.files[patch.files.length - 1].bytes?.end, bytes.length);
  });

  it('reads `Binary files … differ` (no data) as binary', () => {
    const p = parsePatchText(
      'diff --git a/x.png b/x.png\nindex 1111111..2222222 100644\nBinary files a/x.png and b/x.png differ\n',
    );
    assert.equal(p.files[0].binary, true);
    assert.equal(p.files[0].binaryData, false);
  });

  it('reads copies and quoted (C-escaped) unicode paths', () => {
    const p = parsePatchText(
      'diff --git a/src.txt "b/caf\\303\\251.txt"\nsimilarity index 100%\ncopy from src.txt\ncopy to "caf\\303\\251.txt"\n',
    );
    assert.equal(p.files[0].status, 'copied');
    assert.equal(p.files[0].oldPath, 'src.txt');
    assert.equal(p.files[0].newPath, 'café.txt');
  });

  it('gives hunks stable ids across parses', () => {
    const again = parsePatchText(text);
    assert.deepEqual(
      again.files.flatMap((f) => f.hunks.map((h) => h.id)),
      patch.files.flatMap((f) => f.hunks.map((h) => h.id)),
    );
    assert.ok(patch.files.flatMap((f) => f.hunks.map((h) => h.id)).includes('b.txt#1'));
  });

  it('parses the same when fed one byte at a time (section cuts across chunks)', () => {
    const bytes = Buffer.from(text, 'utf8');
    const parser = new PatchStreamParser();
    for (let i = 0; i < bytes.length; i++) parser.push(bytes.subarray(i, i + 1));
    const streamed = parser.end();
    assert.deepEqual(streamed, parsePatchBytes(bytes));
  });
});

describe('patch parser: bad input', () => {
  it('an empty patch is a clear error', () => {
    for (const t of ['', '\n\n', '   \n']) {
      assert.throws(
        () => parsePatchText(t),
        (e: unknown) => e instanceof PatchParseError && e.code === 'empty',
      );
    }
  });

  it('text that is not a diff is a clear error', () => {
    for (const t of ['hello world\n', 'I changed the file as requested.\nAll good!\n', '{"not":"a diff"}']) {
      assert.throws(
        () => parsePatchText(t),
        (e: unknown) => e instanceof PatchParseError && e.code === 'not-a-diff',
      );
    }
  });

  it('a hunk whose counts lie is malformed', () => {
    const t = 'diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n-a\n+b\n';
    assert.throws(
      () => parsePatchText(t),
      (e: unknown) => e instanceof PatchParseError && e.code === 'malformed',
    );
  });

  it('reads plain unified diffs without git headers (one level stripped, as git does)', () => {
    const p = parsePatchText(
      '--- a/one.txt\n+++ b/one.txt\n@@ -1 +1 @@\n-a\n+b\n--- a/two.txt\n+++ b/two.txt\n@@ -1 +1 @@\n-c\n+d\n',
    );
    assert.deepEqual(
      p.files.map((f) => [f.id, f.status, f.bytes]),
      [
        ['one.txt', 'modified', undefined],
        ['two.txt', 'modified', undefined],
      ],
    );
  });

  it('marks a section that is not UTF-8 as lossy but keeps its bytes', () => {
    const bytes = Buffer.concat([
      Buffer.from('diff --git a/l.txt b/l.txt\n--- a/l.txt\n+++ b/l.txt\n@@ -1 +1 @@\n-caf'),
      Buffer.from([0xe9]),
      Buffer.from('\n+cafe\n'),
    ]);
    const p = parsePatchBytes(bytes);
    assert.equal(p.files[0].lossy, true);
    assert.deepEqual(p.files[0].bytes, { start: 0, end: bytes.length });
  });

  it('CRLF content lines keep their carriage returns', () => {
    const p = parsePatchText(
      'diff --git a/w.txt b/w.txt\n--- a/w.txt\n+++ b/w.txt\n@@ -1,2 +1,2 @@\n a\r\n-b\r\n+c\r\n',
    );
    assert.deepEqual(p.files[0].hunks[0].lines, [' a\r', '-b\r', '+c\r']);
  });
});
