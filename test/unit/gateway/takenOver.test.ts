/**
 * A local task whose events the store refuses for good (another gateway instance took it over while
 * this one could not reach the database, and recorded its outcome): the run here is stopped (its
 * signal fires, so a coding CLI is killed and its workspace goes) and the log says why, once, instead
 * of the run going on for nothing until its deadline, logging each event it could not store.
 * The proxied task's case is in proxy.test.ts; the two-instance partition in partition.test.ts.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { bounded, rpcPost, scriptedAgent, suiteGateway } from './helpers';

describe('gateway: a local task taken over by another instance', () => {
  const agent = scriptedAgent({ id: 'steps', steps: 150, stepDelayMs: 20 });
  const log: string[] = [];
  const gw = suiteGateway({ localAgents: [agent], log: (l) => log.push(l) });

  it('stops the run, says so once, and stores nothing more of it', async () => {
    const res = await rpcPost(
      `${gw.url}/a2a/steps`,
      {
        method: 'SendMessage',
        params: {
          message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'go' }] },
          configuration: { returnImmediately: true },
        },
      },
      { Authorization: `Bearer ${gw.token}` },
    );
    const taskId = ((await res.json()) as { result?: { task?: { id?: string } } }).result?.task?.id ?? '';
    assert.ok(taskId);
    await bounded(
      (async () => {
        while (((await gw.store.getTask('steps', taskId))?.lastSeq ?? 0) < 5)
          await new Promise((r) => setTimeout(r, 20));
      })(),
      'a few steps stored',
    );
    // Another instance, as it looks from here: it owns the task now and stored the event that follows
    // (tried again while this instance's own next event takes that seq first).
    let taken = 0;
    for (let i = 0; i < 50 && !taken; i++) {
      const row = await gw.store.getTask('steps', taskId);
      assert.ok(row);
      try {
        await gw.store.append({
          agent: 'steps',
          taskId,
          events: [
            { seq: row.lastSeq + 1, body: JSON.stringify({ statusUpdate: { taskId, metadata: { elsewhere: true } } }) },
          ],
          state: row.state,
          snapshot: row.snapshot,
          owner: 'another-instance',
        });
        taken = row.lastSeq + 1;
      } catch {
        // This instance stored that seq first: try the next.
      }
    }
    assert.ok(taken, 'the other instance stored an event');
    await bounded(
      (async () => {
        while (!agent.requests[0]?.signal.aborted) await new Promise((r) => setTimeout(r, 20));
      })(),
      "the run's signal to fire",
    );
    await new Promise((r) => setTimeout(r, 500));
    const lines = log.filter((l) => l.includes(taskId));
    assert.equal(lines.filter((l) => l.includes('stopped its run')).length, 1, lines.join('\n'));
    assert.match(
      lines.find((l) => l.includes('stopped its run')) ?? '',
      /another (gateway instance|writer)/,
      log.join('\n'),
    );
    assert.ok(!lines.some((l) => l.includes('store write failed')), lines.join('\n'));
    const after = await gw.store.getTask('steps', taskId);
    assert.equal(after?.lastSeq, taken, 'nothing of the run stored after the other instance took it');
    assert.equal(after?.owner, 'another-instance');
  });
});
