// The file Baton keeps its agents in: writes asked for at once (Refresh Agents commits each card it
// reads as it arrives) go one at a time, and the file ends with the last.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RegistryFile } from '../../../src/extension/agents/registryFile';

describe('RegistryFile', () => {
  it('takes many writes at once without losing one to another’s rename, and keeps the last', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-registry-'));
    try {
      const file = new RegistryFile(join(dir, 'sub', 'agents.json'));
      const texts = Array.from({ length: 40 }, (_, i) => JSON.stringify({ version: i }));
      await Promise.all(texts.map((t) => file.write(t)));
      assert.equal(file.read(), texts.at(-1));
      assert.deepEqual(readdirSync(join(dir, 'sub')), ['agents.json'], 'no temporary file is left');
      assert.equal(readFileSync(join(dir, 'sub', 'agents.json'), 'utf8'), texts.at(-1));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a write that fails does not hold up the next', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-registry-'));
    try {
      // A folder (not empty) where the file should be: the first write's rename cannot replace it.
      const path = join(dir, 'agents.json');
      mkdirSync(join(path, 'in-the-way'), { recursive: true });
      const file = new RegistryFile(path);
      const failing = file.write('first');
      // Out of the way once the first has failed, before the second runs.
      const cleared = failing.catch(() => rmSync(path, { recursive: true, force: true }));
      const next = file.write('second');
      await assert.rejects(failing);
      await cleared;
      await next;
      assert.equal(file.read(), 'second');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
