// Never lose a delegation: 1,000 concurrent retries of one request make one task; the journal survives
// a crash (torn last line) and a reload re-attaches a running delegation, fetching the events it missed
// by replay; the audit log gets one line per outcome and exports.
import * as assert from 'node:assert/strict';
import { appendFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { TaskState } from '@a2a-js/sdk';
import { DelegationJournal } from '../../../src/core/delegation';
import { connectAgent } from '../../../src/node/a2a/clientFactory';
import { DelegationManager } from '../../../src/node/a2a/delegationManager';
import { DelegationRunner } from '../../../src/node/a2a/delegationRunner';
import { JournalStore } from '../../../src/node/journalStore';
import type { Turn } from './agentServers';
import { sleep, startAgentServer } from './agentServers';
import { FAST_RECONNECT, eventSeqs, makeRequest, tempDir, within } from './harness';

let tmp: ReturnType<typeof tempDir>;
before(() => {
  tmp = tempDir();
});
after(() => tmp.cleanup());

async function steps(t: Turn): Promise<void> {
  t.task();
  for (let i = 1; i <= 6; i++) {
    await t.sleep(40);
    t.status(TaskState.TASK_STATE_WORKING, `Step ${i}`);
  }
  t.artifact('p', 'changes.patch', '+y\n', { lastChunk: true });
  t.status(TaskState.TASK_STATE_COMPLETED, 'Finished');
}

describe('retries and persistence', () => {
  it('1,000 concurrent retries of one request make one task (server honours messageId idempotency)', async () => {
    // The idempotency here is the test server's (ReplayTestHandler); src/gateway implements the same rule.
    const s = await startAgentServer({ script: steps, replay: true });
    const store = new JournalStore(join(tmp.dir, 'retries'));
    try {
      const connection = await connectAgent({ card: s.card, endpoint: s.jsonRpc });
      const request = makeRequest(s.jsonRpc, 'Once');
      await store.create(request);
      const runners = Array.from(
        { length: 1000 },
        () =>
          new DelegationRunner({
            connection,
            journal: new DelegationJournal(request),
            sink: { append: async () => undefined },
            reconnect: FAST_RECONNECT,
          }),
      );
      await within(Promise.all(runners.map((r) => r.start())), 60_000, '1000 retries');
      assert.equal(s.replay?.tasksCreated, 1);
      assert.equal(s.executor.executions.length, 1);
      const ids = new Set(runners.map((r) => r.journal.taskId));
      assert.equal(ids.size, 1);
      assert.ok(runners.every((r) => r.journal.decide()?.outcome === 'completed'));
    } finally {
      await store.close();
      await s.close();
    }
  });

  it('a journal with a torn last line reloads, is cut clean by its owner (never by a reader), and appending continues', async () => {
    const store = new JournalStore(join(tmp.dir, 'torn'));
    const request = makeRequest(
      { url: 'http://127.0.0.1:9/a2a', protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
      'Torn',
    );
    await store.create(request);
    await store.append(request.requestId, { kind: 'send', at: 1, attempt: 1 }, { sync: true });
    await store.append(request.requestId, { kind: 'task', at: 2, taskId: 't1', contextId: 'c1' }, { sync: true });
    await store.close();
    const file = join(tmp.dir, 'torn', `${request.requestId}.jsonl`);
    appendFileSync(file, '{"kind":"event","at":3,"taskId":"t1","seq":1,"sequ');
    const store2 = new JournalStore(join(tmp.dir, 'torn'));
    const read = await store2.load(request.requestId);
    assert.equal(read.tornTail, true);
    assert.ok(!readFileSync(file, 'utf8').endsWith('\n'), 'a reader leaves the file as it is');
    const loaded = await store2.load(request.requestId, { repair: true });
    assert.equal(loaded.tornTail, true);
    assert.deepEqual(
      loaded.entries.map((e) => e.kind),
      ['request', 'send', 'task'],
    );
    assert.ok(readFileSync(file, 'utf8').endsWith('\n'));
    await store2.append(request.requestId, { kind: 'notice', at: 4, level: 'info', text: 'after' }, { sync: true });
    const again = await store2.load(request.requestId);
    assert.equal(again.tornTail, false);
    assert.deepEqual(
      again.entries.map((e) => e.kind),
      ['request', 'send', 'task', 'notice'],
    );
    const j = DelegationJournal.fromEntries(again.entries);
    assert.equal(j.taskId, 't1');
    assert.equal(j.state(), 'starting');
    await store2.close();
  });

  it('after a simulated crash mid-task, a reload re-attaches and the journal ends complete (replay fills the gap)', async () => {
    const s = await startAgentServer({ script: steps, replay: true });
    const dir = join(tmp.dir, 'crash');
    const connect = async () => connectAgent({ card: s.card, endpoint: s.jsonRpc });
    try {
      const store1 = new JournalStore(dir);
      const m1 = await DelegationManager.open({ store: store1, connect, runnerOptions: { reconnect: FAST_RECONNECT } });
      const j1 = await m1.start(makeRequest(s.jsonRpc, 'Crashy'));
      while ((j1.eventCount ?? 0) < 3) await sleep(5);
      // "Crash": stop following, lose the file handle, and tear the last line on disk.
      m1.dispose();
      await store1.close();
      const file = join(dir, `${j1.requestId}.jsonl`);
      appendFileSync(file, '{"kind":"event","at":1,"ta');
      const store2 = new JournalStore(dir);
      const m2 = await DelegationManager.open({ store: store2, connect, runnerOptions: { reconnect: FAST_RECONNECT } });
      const j2 = m2.get(j1.requestId);
      assert.ok(j2);
      await within(
        (async () => {
          while (j2.decide()?.outcome !== 'completed' || !j2.hasFinalSnapshot || !j2.recordedOutcome) await sleep(10);
        })(),
        10_000,
        'completion after reload',
      );
      await m2.idle(j1.requestId);
      const entries = (await store2.load(j1.requestId)).entries;
      const served = s.replay?.logs.get(j2.taskId ?? '')?.events.length ?? -1;
      assert.deepEqual(
        eventSeqs(entries),
        Array.from({ length: served }, (_, i) => i + 1),
      );
      assert.equal(s.replay?.tasksCreated, 1);
      const view = m2.view(j1.requestId);
      assert.equal(view?.state, 'completed');
      assert.ok(
        view?.timeline.some((e) => (e.kind === 'step' || e.kind === 'status') && e.text === 'Step 1'),
        'history from before the crash is shown',
      );
      const audit = await store2.readAudit();
      assert.equal(audit.filter((a) => a.requestId === j1.requestId).length, 1);
      assert.equal(audit[0].outcome, 'completed');
      assert.match(audit[0].artifacts[0].digest, /^sha256:[0-9a-f]{64}$/);
      const csv = join(tmp.dir, 'audit.csv');
      assert.equal(await store2.exportAudit(csv, 'csv'), 1);
      assert.match(readFileSync(csv, 'utf8'), /^at,requestId,who,/);
      m2.dispose();
      await store2.close();
    } finally {
      await s.close();
    }
  });

  it('maxConcurrent queues extra delegations visibly and starts them as slots free up', async () => {
    const s = await startAgentServer({ script: steps });
    const store = new JournalStore(join(tmp.dir, 'queue'));
    try {
      const m = await DelegationManager.open({
        store,
        connect: async () => connectAgent({ card: s.card, endpoint: s.jsonRpc }),
        maxConcurrent: 1,
        runnerOptions: { reconnect: FAST_RECONNECT },
      });
      const a = await m.start(makeRequest(s.jsonRpc, 'A'));
      const b = await m.start(makeRequest(s.jsonRpc, 'B'));
      assert.equal(m.list().find((x) => x.requestId === b.requestId)?.state, 'queued');
      assert.equal(m.queuedCount, 1);
      await within(
        (async () => {
          while (b.decide()?.outcome !== 'completed') await sleep(10);
        })(),
        10_000,
        'both complete',
      );
      assert.equal(a.decide()?.outcome, 'completed');
      // A queued one canceled before it is sent never reaches the agent.
      const slow = await m.start(makeRequest(s.jsonRpc, 'C'));
      const queued = await m.start(makeRequest(s.jsonRpc, 'D'));
      const d = await m.cancel(queued.requestId);
      assert.equal(d?.outcome, 'canceled');
      await within(
        (async () => {
          while (!slow.decide()) await sleep(10);
        })(),
        10_000,
        'C completes',
      );
      assert.equal(s.executor.executions.length, 3, 'D was never sent');
      m.dispose();
    } finally {
      await store.close();
      await s.close();
    }
  });
});
