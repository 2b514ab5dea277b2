// A server that answers the first send with 200 and SSE headers, then never sends an event. Before,
// the runner waited on that stream's first event with no word to the user: the silence check only
// watched streams of a known task, the deadline recorded "cancel was sent and the agent did not
// confirm it" (no cancel can be sent without a task id), and a reload said "the connection broke".
// Now the user is told the agent has not answered yet, the deadline and Cancel end it with an outcome
// that says the agent never reported a task, and an agent that is only slow still completes.
import * as assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { TaskState } from '@a2a-js/sdk';
import type { JournalEntry } from '../../../src/core/delegation';
import { DelegationJournal } from '../../../src/core/delegation';
import { connectAgent } from '../../../src/node/a2a/clientFactory';
import { DelegationRunner } from '../../../src/node/a2a/delegationRunner';
import { JournalStore } from '../../../src/node/journalStore';
import type { AgentServer } from './agentServers';
import { startAgentServer } from './agentServers';
import { FAST_RECONNECT, newRun, tempDir, within } from './harness';
import type { Peer } from './silentPeer';
import { startSilentPeer } from './silentPeer';

function notices(entries: readonly JournalEntry[], code: string): JournalEntry[] {
  return entries.filter((e) => e.kind === 'notice' && e.code === code);
}

async function until(what: string, ms: number, ok: () => boolean): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('a stream that answers with headers and then nothing', () => {
  let peer: Peer;
  let tmp: ReturnType<typeof tempDir>;
  let store: JournalStore;
  before(async () => {
    peer = await startSilentPeer();
    tmp = tempDir();
    store = new JournalStore(tmp.dir);
  });
  after(async () => {
    await store.close();
    await peer.close();
    tmp.cleanup();
  });

  async function silentRun(extra: { deadline?: number } = {}) {
    const connection = await connectAgent({ card: peer.card, endpoint: peer.endpoint });
    return newRun({ card: peer.card } as unknown as AgentServer, store, 'Say hello', {
      endpoint: peer.endpoint,
      connection,
      request: extra.deadline !== undefined ? { deadline: extra.deadline } : {},
      runner: { firstEventNoticeMs: 150 },
    });
  }

  it('tells the user the agent has not answered, keeps waiting, and the deadline ends it saying no task was ever reported', async () => {
    const sentBefore = peer.seen.length;
    const run = await silentRun({ deadline: Date.now() + 1_200 });
    const settled = run.runner.whenSettled();
    void run.runner.start();
    await until('the notice that the agent has not answered', 5_000, () =>
      run.journal.view(Date.now()).timeline.some((e) => e.kind === 'notice' && e.code === 'stream.noFirstEvent'),
    );
    assert.equal(run.journal.decide(), undefined, 'a slow first event does not end the delegation');
    assert.equal(run.journal.state(), 'starting');
    await within(settled, 10_000, 'the deadline ends a delegation whose agent never answered');
    const d = run.journal.decide();
    assert.equal(d?.outcome, 'expired');
    assert.equal(d?.because?.code, 'expired.noTask');
    assert.match(d?.reason ?? '', /before the agent at http:\/\/127\.0\.0\.1:\d+\/rpc reported a task/);
    assert.match(d?.reason ?? '', /not known whether it received the request: it may have started work/);
    assert.match(d?.reason ?? '', /No cancel could be sent/);
    const entries = await run.entries();
    // Nothing recorded is lost: the request, the send, the notice, then the deadline's cancel and outcome.
    assert.deepEqual(
      entries.map((e) => e.kind),
      ['request', 'send', 'notice', 'cancel', 'cancelResult', 'outcome'],
    );
    assert.equal(notices(entries, 'stream.noFirstEvent').length, 1, 'said once');
    // One send; no cancel could name a task.
    assert.deepEqual(peer.seen.slice(sentBefore), ['SendStreamingMessage']);
  });

  it('Cancel ends it at once and says there was no task to cancel at the agent', async () => {
    const run = await silentRun();
    const started = run.runner.start();
    await until('the send', 5_000, () => run.journal.started);
    const d = await within(run.runner.cancel(), 5_000, 'cancel of a delegation whose agent never answered');
    await within(started, 5_000, 'the send stops');
    assert.equal(d.outcome, 'canceled');
    assert.equal(d.because?.code, 'canceled.noTask');
    assert.equal(d.cancelConfirmed, false);
    const view = run.journal.view(Date.now());
    assert.ok(view.timeline.some((e) => e.kind === 'notice' && e.code === 'cancel.noTask'));
  });

  it('a reload while it waits: the journal is kept and the delegation ends unknown, saying following stopped before any task', async () => {
    const sentBefore = peer.seen.length;
    const run = await silentRun({ deadline: Date.now() + 60_000 });
    void run.runner.start();
    await until('the notice', 5_000, () =>
      run.journal.view(Date.now()).timeline.some((e) => e.kind === 'notice' && e.code === 'stream.noFirstEvent'),
    );
    run.runner.dispose();
    const before = (await store.load(run.request.requestId)).entries;
    const journal = DelegationJournal.fromEntries(before);
    const connection = await connectAgent({ card: peer.card, endpoint: peer.endpoint });
    const again = new DelegationRunner({ connection, journal, sink: store, reconnect: FAST_RECONNECT });
    try {
      await within(again.resume(), 10_000, 'the reload recovers');
      const d = journal.decide();
      assert.equal(d?.outcome, 'unknown');
      assert.match(d?.reason ?? '', /following stopped \(a reload or an exit\) before the agent reported a task/);
      const after = (await store.load(run.request.requestId)).entries;
      assert.deepEqual(after.slice(0, before.length), before, 'nothing already recorded is lost');
      // It looked for the task by its message (ListTasks); it did not send again.
      assert.deepEqual(peer.seen.slice(sentBefore), ['SendStreamingMessage', 'ListTasks']);
    } finally {
      again.dispose();
    }
  });
});

describe('an agent slow to its first event', () => {
  let server: AgentServer;
  let tmp: ReturnType<typeof tempDir>;
  let store: JournalStore;
  before(async () => {
    server = await startAgentServer({
      script: async (t) => {
        await t.sleep(600);
        t.task();
        t.status(TaskState.TASK_STATE_WORKING, 'Thinking done');
        t.status(TaskState.TASK_STATE_COMPLETED, 'Hello');
      },
    });
    tmp = tempDir();
    store = new JournalStore(tmp.dir);
  });
  after(async () => {
    await store.close();
    await server.close();
    tmp.cleanup();
  });

  it('is told about, and not failed early: it completes', async () => {
    const run = await newRun(server, store, 'Think first', { runner: { firstEventNoticeMs: 150 } });
    await within(run.runner.start(), 10_000, 'a slow agent');
    assert.equal(run.journal.decide()?.outcome, 'completed');
    const entries = await run.entries();
    assert.equal(notices(entries, 'stream.noFirstEvent').length, 1);
  });
});
