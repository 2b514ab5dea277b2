import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { tempDir } from './helpers';
import {
  GatedExecutor,
  kill9,
  rpc,
  sendParams,
  sseResults,
  startChild,
  startRemote,
  stateOf,
  withChildStore,
} from './proxyCrashHarness';

const SENDS = 30;

describe('gateway: kill -9 among many concurrent proxied sends, then a restart and every send again', () => {
  it('answers every resend with its task (run once at the remote) or an unknown outcome, never a refusal', async () => {
    using dir = tempDir();
    // The first event comes 0–300 ms after the send: the kill finds sends at every point of their start.
    const executor = new GatedExecutor(3, 20, 300);
    const remote = await startRemote(executor, { listTasks: true });
    let child = await startChild(dir.path, remote.url);
    const ids = Array.from({ length: SENDS }, (_, i) => `many-${i}`);
    try {
      for (const id of ids) void rpc(child, 'SendStreamingMessage', sendParams(id)).catch(() => undefined);
      const until = Date.now() + 20_000;
      while (executor.runs < SENDS / 2 && Date.now() < until) await new Promise((r) => setTimeout(r, 5));
      await kill9(child);
      child = await startChild(dir.path, remote.url);
      const answers = await Promise.all(
        ids.map(async (id) => {
          const res = await rpc(child, 'SendStreamingMessage', sendParams(id));
          const text = await res.clone().text();
          const events = res.status === 200 ? await sseResults(res) : [];
          return { id, status: res.status, text, events };
        }),
      );
      let found = 0;
      let unknown = 0;
      const said = (a: (typeof answers)[number]): string => `${a.id}: ${a.text}\ngateway log:\n${child.log()}`;
      for (const a of answers) {
        assert.equal(a.status, 200, said(a));
        assert.ok(!a.events.some((e) => 'error' in e), said(a));
        const last = a.events[a.events.length - 1];
        const state = last ? stateOf(last) : undefined;
        if (state === 'TASK_STATE_COMPLETED') {
          found++;
          assert.equal(executor.runsOf.get(a.id), 1, `${a.id} ran once at the remote`);
        } else {
          unknown++;
          assert.equal(state, 'TASK_STATE_FAILED', `${a.id}: ${a.text}`);
          assert.match(a.text, /unknown outcome/);
          assert.ok((executor.runsOf.get(a.id) ?? 0) <= 1, `${a.id} was not run again`);
        }
      }
      assert.equal(found + unknown, SENDS);
      assert.ok(found > 0, 'some were found again');
    } finally {
      await kill9(child);
      await remote.close();
    }
    await withChildStore(dir.path, async (store) => {
      assert.deepEqual(await store.listUnboundRequests(), [], 'no claim is left unbound');
      assert.equal(await store.integrityCheck(), 'ok');
    });
  });
});
