// Bad input from the network: a loopback proxy cuts the stream before the first event, mid-event,
// mid-artifact and at the final event, 25 times each. Every delegation must end completed, with the
// full artifact (from GetTask) and — against an agent with the replay profile — every event in the
// journal exactly once; and no cut may create a second task.
import * as assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { TaskState } from '@a2a-js/sdk';
import { connectAgent } from '../../../src/node/a2a/clientFactory';
import { JournalStore } from '../../../src/node/journalStore';
import type { AgentServer, Turn } from './agentServers';
import { startAgentServer } from './agentServers';
import type { CutProxy } from './cutProxy';
import { CUT_POINTS, startCutProxy } from './cutProxy';
import { eventSeqs, newRun, tempDir, within } from './harness';

const CHUNKS = ['diff --git a/x b/x\n', '--- a/x\n+++ b/x\n', '@@ -1 +1 @@\n-old\n', '+new\n'];

async function script(t: Turn): Promise<void> {
  t.task();
  t.status(TaskState.TASK_STATE_WORKING, 'Reading the files');
  for (let i = 1; i <= 3; i++) {
    await t.sleep(2);
    t.status(TaskState.TASK_STATE_WORKING, `Step ${i}`);
  }
  for (let i = 0; i < CHUNKS.length; i++) {
    await t.sleep(2);
    t.artifact('patch', 'changes.patch', CHUNKS[i], {
      append: i > 0,
      lastChunk: i === CHUNKS.length - 1,
      mediaType: 'text/x-diff',
    });
  }
  await t.sleep(2);
  t.status(TaskState.TASK_STATE_COMPLETED, 'Done');
}

async function inBatches<T>(n: number, size: number, fn: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = [];
  for (let i = 0; i < n; i += size)
    out.push(...(await Promise.all(Array.from({ length: Math.min(size, n - i) }, (_, k) => fn(i + k)))));
  return out;
}

for (const replay of [true, false]) {
  describe(`stream cut by a loopback proxy (${replay ? 'replay profile' : 'plain A2A agent'})`, () => {
    let server: AgentServer;
    let proxy: CutProxy;
    let tmp: ReturnType<typeof tempDir>;
    let store: JournalStore;
    before(async () => {
      server = await startAgentServer({ script, replay });
      proxy = await startCutProxy(server.port);
      tmp = tempDir();
      store = new JournalStore(tmp.dir);
    });
    after(async () => {
      await store.close();
      await proxy.close();
      await server.close();
      tmp.cleanup();
    });

    const times = replay ? 25 : 8;
    for (const [name, cut] of Object.entries(CUT_POINTS)) {
      it(`${name}: ${times} delegations all complete, nothing lost or duplicated`, async () => {
        proxy.setCutPoint(cut);
        const cutsBefore = proxy.cuts;
        const tasksBefore = server.replay?.tasksCreated ?? server.executor.executions.length;
        const endpoint = { ...server.jsonRpc, url: `http://127.0.0.1:${proxy.port}/a2a/jsonrpc` };
        const connection = await connectAgent({ card: server.card, endpoint });
        const results = await inBatches(times, 5, async () => {
          const run = await newRun(server, store, 'Fix it', { endpoint, connection });
          await within(run.runner.start(), 15_000, `delegation ${run.request.requestId}`);
          return { run, entries: await run.entries() };
        });
        assert.equal(proxy.cuts - cutsBefore, times, 'every delegation had its stream cut');
        for (const { run, entries } of results) {
          const d = run.journal.decide();
          assert.equal(d?.outcome, 'completed', `${run.request.requestId}: ${d?.reason}`);
          const patch = run.journal.patch();
          assert.equal(patch?.final, true);
          assert.equal(patch?.text, CHUNKS.join(''));
          const outcomes = entries.filter((e) => e.kind === 'outcome');
          assert.equal(outcomes.length, 1);
          if (replay) {
            const taskId = run.journal.taskId ?? '';
            const served = server.replay?.logs.get(taskId)?.events.length ?? -1;
            const seqs = eventSeqs(entries);
            assert.deepEqual(
              seqs,
              Array.from({ length: served }, (_, i) => i + 1),
              'every event once, in order',
            );
          } else {
            const local = entries.filter((e) => e.kind === 'event').map((e) => (e.kind === 'event' ? e.seq : 0));
            assert.equal(new Set(local).size, local.length, 'no event journaled twice');
          }
        }
        const tasksAfter = server.replay?.tasksCreated ?? server.executor.executions.length;
        assert.equal(tasksAfter - tasksBefore, times, 'one task per delegation, never a second');
      });
    }
  });
}
