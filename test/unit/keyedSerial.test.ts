import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { KeyedSerial } from '../../src/core/keyedSerial';
import { sleep } from '../../src/core/sleep';

describe('KeyedSerial', () => {
  it('runs the jobs of one key one after another, in order, and those of other keys meanwhile', async () => {
    const q = new KeyedSerial();
    const log: string[] = [];
    const job = (name: string, ms: number) => async (): Promise<string> => {
      log.push(`${name} start`);
      await sleep(ms);
      log.push(`${name} end`);
      return name;
    };
    const results = await Promise.all([q.run('a', job('a1', 30)), q.run('a', job('a2', 1)), q.run('b', job('b1', 5))]);
    assert.deepEqual(results, ['a1', 'a2', 'b1']);
    assert.deepEqual(log, ['a1 start', 'b1 start', 'b1 end', 'a1 end', 'a2 start', 'a2 end']);
    await sleep(0);
    assert.equal(q.size, 0, 'nothing kept once the jobs ended');
  });

  it('a failed job fails its own caller only; the next one of its key still runs', async () => {
    const q = new KeyedSerial();
    const first = q.run('k', () => Promise.reject(new Error('first failed')));
    const second = q.run('k', () => Promise.resolve('second ran'));
    await assert.rejects(first, /first failed/);
    assert.equal(await second, 'second ran');
  });
});
