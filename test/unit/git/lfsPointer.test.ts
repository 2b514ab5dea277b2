import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { lfsPointersOf, matchesLfsPointer, parseLfsPointer } from '../../../src/node/lfsPointer';

const oid = 'a'.repeat(64);
const pointer = (body: string): string => `version https://git-lfs.github.com/spec/v1\n${body}`;

describe('Git LFS pointers', () => {
  it('reads the pointers git-lfs writes, extension lines included', () => {
    assert.deepEqual(parseLfsPointer(pointer(`oid sha256:${oid}\nsize 12345\n`)), { oid, size: 12345 });
    assert.deepEqual(
      parseLfsPointer(Buffer.from(pointer(`ext-0-foo sha256:${'b'.repeat(64)}\noid sha256:${oid}\nsize 0\n`))),
      {
        oid,
        size: 0,
      },
    );
  });

  it('refuses what is not one: another version, no size, an odd oid, no final newline, a large blob', () => {
    for (const text of [
      `version https://hawser.github.com/spec/v1\noid sha256:${oid}\nsize 1\n`,
      pointer(`oid sha256:${oid}\n`),
      pointer(`oid sha256:${'A'.repeat(64)}\nsize 1\n`),
      pointer(`oid sha256:${oid.slice(1)}\nsize 1\n`),
      pointer(`oid sha256:${oid}\nsize 1`),
      pointer(`oid sha256:${oid}\nsize 01\n`),
      pointer(`oid sha256:${oid}\nsize 1\n${'x'.repeat(1024)}\n`),
      'just a file\n',
    ])
      assert.equal(parseLfsPointer(text), undefined, text.slice(0, 80));
  });

  it('finds the pointers among blobs of a repository, by full or abbreviated id', async () => {
    const repo = mkdtempSync(join(tmpdir(), 'baton-lfs-repo-'));
    try {
      execFileSync('git', ['init', '-q', repo]);
      const blob = (text: string): string =>
        execFileSync('git', ['hash-object', '-w', '--stdin'], { cwd: repo, input: text, encoding: 'utf8' }).trim();
      const p = blob(pointer(`oid sha256:${oid}\nsize 7\n`));
      const plain = blob('not a pointer\n');
      const big = blob(pointer(`oid sha256:${oid}\nsize 7\n`) + 'x'.repeat(2000));
      const found = await lfsPointersOf([p, p.slice(0, 10), plain, big, 'f'.repeat(40), 'not an id\nHEAD'], {
        cwd: repo,
      });
      assert.deepEqual(
        [...found.entries()],
        [
          [p, { oid, size: 7 }],
          [p.slice(0, 10), { oid, size: 7 }],
        ],
      );
    } finally {
      rmSync(repo, { recursive: true, force: true });
    }
  });

  describe('a file against a pointer', () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-lfs-'));
    after(() => rmSync(dir, { recursive: true, force: true }));
    const object = Buffer.from('the object\n');
    const file = join(dir, 'big.bin');
    writeFileSync(file, object);
    const real = { oid: createHash('sha256').update(object).digest('hex'), size: object.length };

    it('matches the object it names, and nothing else', async () => {
      assert.equal(await matchesLfsPointer(file, real), true);
      assert.equal(await matchesLfsPointer(file, { ...real, size: real.size + 1 }), false);
      assert.equal(await matchesLfsPointer(file, { ...real, oid }), false);
      assert.equal(await matchesLfsPointer(join(dir, 'missing'), real), false);
      assert.equal(await matchesLfsPointer(dir, real), false);
    });
  });
});
