// A stream that goes silent without breaking (a half-open connection: the laptop slept, the network
// changed) must not leave a delegation "working" forever: after `silenceCheckMs` without an event the
// runner asks GetTask and, when the task settled meanwhile, drops the stream and reconciles. A task
// that is merely quiet keeps its stream.
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

const PATCH = 'diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new\n';

async function script(t: Turn): Promise<void> {
  t.task();
  t.status(TaskState.TASK_STATE_WORKING, 'Reading the files');
  await t.sleep(2);
  t.artifact('patch', 'changes.patch', PATCH, { lastChunk: true, mediaType: 'text/x-diff' });
  await t.sleep(2);
  t.status(TaskState.TASK_STATE_COMPLETED, 'Done');
}

/** An agent that keeps reporting progress for a while after its first events. */
async function longScript(t: Turn): Promise<void> {
  t.task();
  t.status(TaskState.TASK_STATE_WORKING, 'Reading the files');
  t.status(TaskState.TASK_STATE_WORKING, 'Planning');
  for (let i = 1; i <= 8; i++) {
    await t.sleep(150);
    t.status(TaskState.TASK_STATE_WORKING, `Step ${i}`);
  }
  t.artifact('patch', 'changes.patch', PATCH, { lastChunk: true, mediaType: 'text/x-diff' });
  t.status(TaskState.TASK_STATE_COMPLETED, 'Done');
}

/** An agent that thinks for a while between events (longer than the silence check). */
async function quietScript(t: Turn): Promise<void> {
  t.task();
  t.status(TaskState.TASK_STATE_WORKING, 'Thinking');
  await t.sleep(900);
  t.artifact('patch', 'changes.patch', PATCH, { lastChunk: true, mediaType: 'text/x-diff' });
  t.status(TaskState.TASK_STATE_COMPLETED, 'Done');
}

for (const replay of [true, false]) {
  describe(`a silent stream (${replay ? 'replay profile' : 'plain A2A agent'})`, () => {
    let server: AgentServer;
    let quiet: AgentServer;
    let proxy: CutProxy;
    let tmp: ReturnType<typeof tempDir>;
    let store: JournalStore;
    before(async () => {
      server = await startAgentServer({ script, replay });
      quiet = await startAgentServer({ script: quietScript, replay });
      proxy = await startCutProxy(server.port);
      proxy.setMode('stall');
      tmp = tempDir();
      store = new JournalStore(tmp.dir);
    });
    after(async () => {
      await store.close();
      await proxy.close();
      await server.close();
      await quiet.close();
      tmp.cleanup();
    });

    it('that stalls before the final event: the runner notices, finds the task completed, and ends completed with the patch', async () => {
      proxy.setCutPoint(CUT_POINTS.atFinalEvent);
      const endpoint = { ...server.jsonRpc, url: `http://127.0.0.1:${proxy.port}/a2a/jsonrpc` };
      const connection = await connectAgent({ card: server.card, endpoint });
      const run = await newRun(server, store, 'Fix it', { endpoint, connection, runner: { silenceCheckMs: 300 } });
      await within(run.runner.start(), 15_000, 'a delegation whose stream stalled');
      assert.equal(proxy.cuts, 1, 'the stream was stalled');
      const d = run.journal.decide();
      assert.equal(d?.outcome, 'completed', d?.reason);
      assert.equal(run.journal.patch()?.text, PATCH);
      const entries = await run.entries();
      const lost = entries.filter((e) => e.kind === 'connection' && e.status === 'lost');
      assert.equal(lost.length, 1);
      assert.match(
        lost[0].kind === 'connection' ? (lost[0].error ?? '') : '',
        /no event for 300 ms while the agent reports the task completed/,
      );
      if (replay) {
        // The events the stall withheld were fetched with Last-Event-ID: each once, none missing.
        const seqs = eventSeqs(entries);
        assert.deepEqual(
          seqs,
          seqs.map((_, i) => i + 1),
        );
      }
      assert.equal(entries.filter((e) => e.kind === 'outcome').length, 1);
    });

    {
      it(`that stalls while the task goes on: the runner follows it again${replay ? ' from the last event' : ' (the agent reports a status it never brought)'}, live, without calling it a lost connection`, async () => {
        const long = await startAgentServer({ script: longScript, replay });
        const stall = await startCutProxy(long.port);
        try {
          stall.setMode('stall');
          stall.setCutPoint(CUT_POINTS.midEvent);
          const endpoint = { ...long.jsonRpc, url: `http://127.0.0.1:${stall.port}/a2a/jsonrpc` };
          const connection = await connectAgent({ card: long.card, endpoint });
          const run = await newRun(long, store, 'Take your time', {
            endpoint,
            connection,
            runner: { silenceCheckMs: 300 },
          });
          const settledAt: number[] = [];
          const stepsSeenAt: number[] = [];
          run.runner.onDidChange((j) => {
            const steps = j
              .view(Date.now())
              .timeline.filter((e) => e.kind === 'step' && /^Step \d/.test(e.text)).length;
            if (steps > stepsSeenAt.length) stepsSeenAt.push(Date.now());
            if (j.decide()) settledAt.push(Date.now());
          });
          await within(run.runner.start(), 15_000, 'a delegation whose stream stalled mid-task');
          assert.equal(stall.cuts, 1, 'the stream was stalled');
          assert.equal(run.journal.decide()?.outcome, 'completed');
          const entries = await run.entries();
          assert.deepEqual(
            entries.filter((e) => e.kind === 'connection' && e.status === 'lost'),
            [],
          );
          if (replay) {
            const seqs = eventSeqs(entries);
            assert.deepEqual(
              seqs,
              seqs.map((_, i) => i + 1),
              'every event once, in order',
            );
          }
          assert.equal(run.journal.patch()?.text, PATCH);
          // Progress came back while the task was still running, not all at once at the end.
          assert.ok(
            stepsSeenAt.length > 0 && settledAt.length > 0 && stepsSeenAt[0] < settledAt[0],
            'steps arrived before the task settled',
          );
        } finally {
          await stall.close();
          await long.close();
        }
      });
    }

    it('that is only quiet: the stream is kept (no reconnect) and the task completes on it', async () => {
      const connection = await connectAgent({ card: quiet.card, endpoint: quiet.jsonRpc });
      const run = await newRun(quiet, store, 'Think first', { connection, runner: { silenceCheckMs: 200 } });
      await within(run.runner.start(), 15_000, 'a quiet delegation');
      assert.equal(run.journal.decide()?.outcome, 'completed');
      const entries = await run.entries();
      assert.deepEqual(
        entries.filter((e) => e.kind === 'connection'),
        [],
        'no connection was dropped or retried',
      );
      assert.equal(run.journal.patch()?.text, PATCH);
    });
  });
}
