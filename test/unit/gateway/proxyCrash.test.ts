import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { checkStoredEnvelope, tempDir } from './helpers';
import {
  GatedExecutor,
  kill9,
  rpc,
  sendParams,
  sseEvents,
  sseResults,
  startChild,
  startRemote,
  stateOf,
  withChildStore,
} from './proxyCrashHarness';

for (const listTasks of [true, false]) {
  describe(`gateway: kill -9 after a proxied send reached the remote, before it named its task (remote ${listTasks ? 'lists' : 'cannot list'} its tasks)`, () => {
    it(
      listTasks
        ? 'the retry after a restart gets the task the remote ran, relayed to its end, and the remote ran it once'
        : 'the retry after a restart gets a task with an unknown outcome that says what to do, and the remote ran it once',
      async () => {
        using dir = tempDir();
        const executor = new GatedExecutor(3, 0);
        const remote = await startRemote(executor, { listTasks });
        let child = await startChild(dir.path, remote.url);
        try {
          const started = executor.nextStart();
          void rpc(child, 'SendStreamingMessage', sendParams('kill-after-send')).catch(() => undefined);
          await started; // the send reached the remote, which has not answered yet
          await kill9(child);
          executor.release(); // the remote runs the task to its end, with nobody relaying it

          child = await startChild(dir.path, remote.url);
          const retry = await rpc(child, 'SendStreamingMessage', sendParams('kill-after-send'));
          assert.equal(retry.status, 200);
          const events = await sseResults(retry);
          assert.ok(events.length > 0, 'the retry got events');
          const text = JSON.stringify(events);
          assert.doesNotMatch(text, /could not be created/);
          assert.ok(!events.some((e) => 'error' in e), `no error: ${text}`);
          const last = events[events.length - 1];
          if (listTasks) {
            assert.equal(stateOf(last), 'TASK_STATE_COMPLETED', text);
            assert.match(text, /changes\.patch/, 'the artifact made while nobody relayed is recorded');
            const meta = (last.statusUpdate as { metadata?: Record<string, unknown> }).metadata ?? {};
            assert.equal(typeof meta['baton/resultEnvelope'], 'string', 'the final status is signed');
          } else {
            assert.equal(stateOf(last), 'TASK_STATE_FAILED', text);
            assert.match(text, /unknown outcome/);
            assert.match(text, /may have run there/);
            assert.match(text, /new messageId/);
            const task = last.task as { metadata?: Record<string, unknown> };
            assert.equal(task.metadata?.['baton/outcome'], 'unknown');
          }
          assert.equal(executor.runs, 1, 'the remote ran the request once');
          // Signed for the request sent, like any result: a client verifies it (the unknown outcome too).
          const taskId =
            (events[0].task as { id?: string } | undefined)?.id ??
            (events[0].statusUpdate as { taskId?: string } | undefined)?.taskId ??
            '';
          const check = await checkStoredEnvelope(
            child.url,
            'remote',
            child.token,
            taskId,
            sendParams('kill-after-send'),
          );
          assert.ok(check.ok, JSON.stringify(check));

          // Sent once more, the same answer: the claim stays bound to that task.
          const again = await sseResults(await rpc(child, 'SendStreamingMessage', sendParams('kill-after-send')));
          const idOf = (ev: Record<string, unknown> | undefined): string | undefined =>
            (ev?.task as { id?: string } | undefined)?.id ??
            (ev?.statusUpdate as { taskId?: string } | undefined)?.taskId;
          assert.equal(idOf(again[0]), idOf(events[0]));
          assert.equal(executor.runs, 1);
        } finally {
          await kill9(child);
          await remote.close();
        }
        await withChildStore(dir.path, async (store) => {
          assert.deepEqual(await store.listUnboundRequests(), [], 'no claim is left unbound');
        });
      },
    );
  });
}

describe('gateway: kill -9 after a proxied send reached the remote, then a clean restart and no retry', () => {
  it('resolves the unbound claim on start: found at the remote and relayed to its end', async () => {
    using dir = tempDir();
    const executor = new GatedExecutor(2, 0);
    const remote = await startRemote(executor, { listTasks: true });
    let child = await startChild(dir.path, remote.url);
    try {
      const started = executor.nextStart();
      void rpc(child, 'SendStreamingMessage', sendParams('kill-no-retry')).catch(() => undefined);
      await started;
      await kill9(child);
      executor.release();
      child = await startChild(dir.path, remote.url);
      const until = Date.now() + 20_000;
      while (!/found again at the remote/.test(child.log()) && Date.now() < until)
        await new Promise((r) => setTimeout(r, 50));
      assert.match(child.log(), /messageId kill-no-retry was found again at the remote as task/);
    } finally {
      await kill9(child);
      await remote.close();
    }
    await withChildStore(dir.path, async (store) => {
      assert.deepEqual(await store.listUnboundRequests(), []);
    });
  });
});

describe('gateway: kill -9 and restart while relaying a remote that cannot replay', () => {
  it("records a gap notice in the task's log where events may be missing, then the remote's final state and artifacts", async () => {
    using dir = tempDir();
    const executor = new GatedExecutor(60, 120);
    const remote = await startRemote(executor, { listTasks: true });
    let child = await startChild(dir.path, remote.url);
    try {
      const first = await rpc(child, 'SendStreamingMessage', sendParams('gap-1'));
      const before = await sseEvents(first, (seen) => seen.length >= 15);
      const taskId = (before[0].result.task as { id: string }).id;
      await kill9(child);
      const lastBefore = before[before.length - 1].seq;
      // The remote goes on meanwhile; what it sends now reaches nobody.
      await new Promise((r) => setTimeout(r, 300));
      child = await startChild(dir.path, remote.url);
      const log = await sseEvents(
        await rpc(child, 'SubscribeToTask', { id: taskId }, { 'Last-Event-ID': '0' }),
        undefined,
        30_000,
      );
      const seqs = log.map((e) => e.seq);
      assert.deepEqual(
        seqs,
        seqs.map((_, i) => seqs[0] + i),
        'contiguous',
      );
      type Status = {
        status?: { state?: string; message?: { parts?: Array<{ text?: string }> } };
        metadata?: Record<string, unknown>;
      };
      const gaps = log.filter(
        (e) => (e.result.statusUpdate as Status | undefined)?.metadata?.['baton/gap'] !== undefined,
      );
      assert.equal(gaps.length, 1, 'one notice, for the one restart');
      const gap = gaps[0];
      const notice = gap.result.statusUpdate as Status;
      assert.equal(notice.status?.state, 'TASK_STATE_WORKING');
      assert.equal(
        notice.status?.message?.parts?.[0]?.text,
        'Some progress from the agent was not received while the gateway restarted.',
      );
      const meta = notice.metadata?.['baton/gap'] as { reason: string; lastSeq: number };
      assert.equal(meta.reason, 'restart');
      assert.ok(gap.seq > lastBefore, 'the notice comes after every event a client saw before the kill');
      assert.equal(meta.lastSeq, gap.seq - 1, 'the notice follows the last event stored before the restart');
      // Before the notice, the remote's steps as they came; after it, the ones relayed since.
      const stepsOf = (events: typeof log): number[] =>
        events
          .map((e) => (e.result.statusUpdate as Status | undefined)?.metadata?.i)
          .filter((i): i is number => typeof i === 'number');
      const beforeGap = stepsOf(log.filter((e) => e.seq < gap.seq));
      const afterGap = stepsOf(log.filter((e) => e.seq > gap.seq));
      assert.ok(
        beforeGap.length > 0 && afterGap.length > 0,
        `steps on both sides (${beforeGap.length}, ${afterGap.length})`,
      );
      assert.ok(Math.max(...beforeGap) < Math.min(...afterGap));
      const last = log[log.length - 1].result.statusUpdate as Status;
      assert.equal(last.status?.state, 'TASK_STATE_COMPLETED');
      assert.equal(typeof last.metadata?.['baton/resultEnvelope'], 'string');
      // Signed by the relay re-attached after the restart, for the request that was sent.
      const check = await checkStoredEnvelope(child.url, 'remote', child.token, taskId, sendParams('gap-1'));
      assert.ok(check.ok, JSON.stringify(check));
      assert.match(JSON.stringify(log), /changes\.patch/);
      assert.equal(executor.sent.get(taskId), 60);
    } finally {
      await kill9(child);
      await remote.close();
    }
  });
});
