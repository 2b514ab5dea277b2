// A gateway answers 503 with Retry-After while its task store is down, and balancers answer 502/503/504
// while no instance is up; the body may be a JSON-RPC error. Before, the runner took that error for the
// agent refusing the request (a first send ended "failed: refused"; a cancel "refused or failed"; a
// reply was lost). Now such answers are tried again, honouring Retry-After, with the same request (the
// same messageId), and the user is told the gateway is unavailable. A 4xx or an error from the agent
// itself is still a refusal, and a 502/504 on a send to an agent without messageId idempotency is not
// sent again blindly.
import * as assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { TaskState } from '@a2a-js/sdk';
import type { JournalEntry } from '../../../src/core/delegation';
import { DelegationJournal } from '../../../src/core/delegation';
import { connectAgent } from '../../../src/node/a2a/clientFactory';
import type { PinnedEndpoint } from '../../../src/node/a2a/clientFactory';
import { DelegationRunner } from '../../../src/node/a2a/delegationRunner';
import {
  isMessageSend,
  retryAfterMs,
  TransientHttpError,
  transientRetryFetch,
} from '../../../src/node/a2a/transientAnswers';
import type { TransientReport } from '../../../src/node/a2a/transientAnswers';
import { JournalStore } from '../../../src/node/journalStore';
import type { AgentServer, Script } from './agentServers';
import { startAgentServer } from './agentServers';
import { FAST_RECONNECT, newRun, tempDir, within } from './harness';
import type { FlakyFront } from './silentPeer';
import { startFlakyFront } from './silentPeer';

function codes(entries: readonly JournalEntry[]): string[] {
  return entries.flatMap((e) => (e.kind === 'notice' && e.code ? [e.code] : []));
}

async function until(what: string, ms: number, ok: () => boolean): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('transientRetryFetch', () => {
  const url = 'http://127.0.0.1:1/a2a/jsonrpc';
  const body = (method: string): string => JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: {} });
  function answers(statuses: number[], headers: Record<string, string> = {}) {
    const bodies: string[] = [];
    const base: typeof fetch = (_input, init) => {
      bodies.push(String(init?.body));
      const status = statuses.shift() ?? 200;
      return Promise.resolve(
        new Response(
          status === 200
            ? '{"jsonrpc":"2.0","id":1,"result":{}}'
            : '{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"store down"}}',
          { status, headers: status === 200 ? {} : headers },
        ),
      );
    };
    return { base, bodies };
  }

  it('reads Retry-After as seconds or a date', () => {
    assert.equal(retryAfterMs('5'), 5_000);
    assert.equal(retryAfterMs(new Date(10_000).toUTCString(), 4_000), 6_000);
    assert.equal(retryAfterMs(null), undefined);
    assert.equal(retryAfterMs('soon'), undefined);
  });

  it('knows a message send by its JSON-RPC method or its HTTP+JSON route', () => {
    assert.equal(isMessageSend(new URL(url), body('SendStreamingMessage')), true);
    assert.equal(isMessageSend(new URL(url), body('message/send')), true);
    assert.equal(isMessageSend(new URL(url), body('GetTask')), false);
    assert.equal(isMessageSend(new URL('http://h/a2a/rest/message:send'), '{}'), true);
    assert.equal(isMessageSend(new URL('http://h/a2a/rest/tasks/1:cancel'), '{}'), false);
  });

  it('sends the same request again after the wait Retry-After asks for, and reports it', async () => {
    const { base, bodies } = answers([503, 429], { 'retry-after': '1' });
    const reports: TransientReport[] = [];
    const waits: number[] = [];
    const started = Date.now();
    const f = transientRetryFetch(base, { idempotentSend: false, report: (r) => reports.push(r) });
    const res = await f(url, { method: 'POST', body: body('SendMessage') });
    waits.push(Date.now() - started);
    assert.equal(res.status, 200);
    assert.equal(bodies.length, 3);
    assert.ok(
      bodies.every((b) => b === bodies[0]),
      'the same body, so the same messageId',
    );
    assert.ok(waits[0] >= 1_900, `waited ${waits[0]} ms for two Retry-After: 1`);
    assert.deepEqual(
      reports.map((r) =>
        r.kind === 'unavailable' ? `${r.answer.status} ${r.answer.message} ${r.answer.retryInMs}` : r.kind,
      ),
      ['503 store down 1000', '429 store down 1000', 'available'],
    );
  });

  it('gives up within its bounds with a TransientHttpError, never the agent’s error', async () => {
    const { base, bodies } = answers([503, 503, 503, 503], { 'retry-after': '0' });
    const f = transientRetryFetch(base, { idempotentSend: true, report: () => undefined, policy: { maxTries: 3 } });
    await assert.rejects(f(url, { method: 'POST', body: body('GetTask') }), (e: unknown) => {
      assert.ok(e instanceof TransientHttpError);
      assert.equal(e.status, 503);
      assert.equal(e.notTaken, true);
      assert.match(e.message, /the gateway is temporarily unavailable: HTTP 503 \(store down\), still after 3 tries/);
      return true;
    });
    assert.equal(bodies.length, 3);
  });

  it('does not send a message again after a 502/504 to an agent without messageId idempotency; other requests it does', async () => {
    for (const status of [502, 504]) {
      const send = answers([status]);
      const f = transientRetryFetch(send.base, { idempotentSend: false, report: () => undefined });
      await assert.rejects(f(url, { method: 'POST', body: body('SendStreamingMessage') }), (e: unknown) => {
        assert.ok(e instanceof TransientHttpError && e.notRetried && !e.notTaken);
        assert.match(e.message, /the agent may have received the message/);
        return true;
      });
      assert.equal(send.bodies.length, 1);
      const idem = answers([status], { 'retry-after': '0' });
      const g = transientRetryFetch(idem.base, { idempotentSend: true, report: () => undefined });
      assert.equal((await g(url, { method: 'POST', body: body('SendStreamingMessage') })).status, 200);
      const get = answers([status], { 'retry-after': '0' });
      const h = transientRetryFetch(get.base, { idempotentSend: false, report: () => undefined });
      assert.equal((await h(url, { method: 'POST', body: body('GetTask') })).status, 200);
    }
  });

  it('passes a 4xx on as it came (the agent’s refusal)', async () => {
    const { base, bodies } = answers([400]);
    const f = transientRetryFetch(base, { idempotentSend: true, report: () => undefined });
    assert.equal((await f(url, { method: 'POST', body: body('SendMessage') })).status, 400);
    assert.equal(bodies.length, 1);
  });

  it('an abort during the wait ends the request', async () => {
    const { base } = answers([503], { 'retry-after': '30' });
    const f = transientRetryFetch(base, { idempotentSend: true, report: () => undefined });
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 50);
    const started = Date.now();
    await assert.rejects(f(url, { method: 'POST', body: body('GetTask'), signal: ac.signal }), { name: 'AbortError' });
    assert.ok(Date.now() - started < 5_000);
  });
});

/** Three steps a little apart, then done. */
const steps: Script = async (t) => {
  t.task();
  for (let i = 1; i <= 3; i++) {
    t.status(TaskState.TASK_STATE_WORKING, `Step ${i}`);
    await t.sleep(150);
  }
  t.artifact('answer', 'response.txt', 'hello', { lastChunk: true, mediaType: 'text/plain' });
  t.status(TaskState.TASK_STATE_COMPLETED, 'Done');
};

describe('the runner behind a gateway that answers 503 with Retry-After', () => {
  let tmp: ReturnType<typeof tempDir>;
  let store: JournalStore;
  before(() => {
    tmp = tempDir();
    store = new JournalStore(tmp.dir);
  });
  after(async () => {
    await store.close();
    tmp.cleanup();
  });

  async function withFront(
    opts: { script: Script; streaming?: boolean; replay?: boolean },
    body: (s: AgentServer, front: FlakyFront, endpoint: PinnedEndpoint) => Promise<void>,
  ): Promise<void> {
    const s = await startAgentServer(opts);
    const front = await startFlakyFront(s.port);
    try {
      await body(s, front, { ...s.jsonRpc, url: `http://127.0.0.1:${front.port}/a2a/jsonrpc` });
    } finally {
      await front.close();
      await s.close();
    }
  }

  it('the first send: tried again with the same messageId, one task, the user told the gateway is unavailable', async () => {
    await withFront({ script: steps }, async (s, front, endpoint) => {
      front.fail(/^SendStreamingMessage$/, 2);
      const run = await newRun(s, store, 'Hello', { endpoint });
      await within(run.runner.start(), 15_000, 'a send through a 503');
      const d = run.journal.decide();
      assert.equal(d?.outcome, 'completed', d?.reason);
      assert.equal(s.executor.executions.length, 1, 'one task at the agent');
      const entries = await run.entries();
      assert.deepEqual(codes(entries), ['gateway.unavailable', 'gateway.available']);
      assert.deepEqual(
        entries.filter((e) => e.kind === 'send').length,
        1,
        'one send in the journal: the retries are the same request',
      );
      const notice = run.journal.view(Date.now()).timeline.find((e) => e.kind === 'notice');
      assert.match(notice?.text ?? '', /^The gateway is temporarily unavailable; retrying \(HTTP 503 from http/);
    });
  });

  it('GetTask while polling an agent that cannot stream', async () => {
    await withFront({ script: steps, streaming: false }, async (s, front, endpoint) => {
      const connection = await connectAgent({ card: s.card, endpoint });
      const run = await newRun(s, store, 'Poll me', { endpoint, connection });
      void run.runner.start();
      await until('the task', 5_000, () => run.journal.taskId !== undefined);
      front.fail(/^GetTask$/, 2);
      await within(run.runner.idle(), 15_000, 'polling through a 503');
      assert.equal(run.journal.decide()?.outcome, 'completed');
      assert.deepEqual(front.refused, ['GetTask', 'GetTask']);
      const entries = await run.entries();
      assert.deepEqual(codes(entries), ['stream.notOffered', 'gateway.unavailable', 'gateway.available']);
      assert.deepEqual(
        entries.filter((e) => e.kind === 'connection'),
        [],
        'no lost contact: only the gateway was unavailable',
      );
    });
  });

  it('GetTask and SubscribeToTask after a reload', async () => {
    let finish!: () => void;
    const mayFinish = new Promise<void>((r) => (finish = r));
    const gated: Script = async (t) => {
      t.task();
      t.status(TaskState.TASK_STATE_WORKING, 'Step 1');
      await Promise.race([mayFinish, t.sleep(10_000)]);
      t.status(TaskState.TASK_STATE_COMPLETED, 'Done');
    };
    await withFront({ script: gated }, async (s, front, endpoint) => {
      const run = await newRun(s, store, 'Reload me', { endpoint });
      void run.runner.start();
      await until('the first step', 5_000, () => run.journal.state() === 'working');
      run.runner.dispose();
      front.fail(/^GetTask$/, 1);
      front.fail(/^SubscribeToTask$/, 2);
      const journal = DelegationJournal.fromEntries((await store.load(run.request.requestId)).entries);
      const connection = await connectAgent({ card: s.card, endpoint });
      const again = new DelegationRunner({ connection, journal, sink: store, reconnect: FAST_RECONNECT });
      try {
        const resumed = again.resume();
        await until('subscribed again', 10_000, () => front.passed.includes('SubscribeToTask'));
        finish();
        await within(resumed, 15_000, 'following again through a 503');
        await again.idle();
        assert.equal(journal.decide()?.outcome, 'completed');
        assert.deepEqual(front.refused, ['GetTask', 'SubscribeToTask', 'SubscribeToTask']);
        assert.equal(s.executor.executions.length, 1);
        const view = journal.view(Date.now());
        assert.ok(view.timeline.some((e) => e.kind === 'notice' && e.code === 'gateway.unavailable'));
      } finally {
        again.dispose();
      }
    });
  });

  it('a reply: delivered once, and the task goes on to completion', async () => {
    const script: Script = async (t) => {
      if (!t.continuing) {
        t.task();
        t.status(TaskState.TASK_STATE_INPUT_REQUIRED, 'Which branch?');
        return;
      }
      t.task(TaskState.TASK_STATE_WORKING);
      t.status(TaskState.TASK_STATE_COMPLETED, `Used ${t.text}`);
    };
    await withFront({ script }, async (s, front, endpoint) => {
      const run = await newRun(s, store, 'Merge', { endpoint });
      await within(run.runner.start(), 10_000, 'start');
      assert.equal(run.journal.decide()?.outcome, 'input-required');
      front.fail(/^SendStreamingMessage$/, 2);
      await run.runner.reply('main');
      await within(run.runner.idle(), 15_000, 'the reply through a 503');
      const d = run.journal.decide();
      assert.equal(d?.outcome, 'completed', d?.reason);
      assert.equal(d?.reason, 'Used main');
      assert.equal(s.executor.executions.length, 2, 'the first turn and the reply, once');
      assert.ok(codes(await run.entries()).includes('gateway.unavailable'));
    });
  });

  it('cancel: tried again and confirmed', async () => {
    const longRunning: Script = async (t) => {
      t.task();
      t.status(TaskState.TASK_STATE_WORKING, 'Working');
      await Promise.race([t.canceled, t.sleep(8_000)]);
    };
    await withFront({ script: longRunning }, async (s, front, endpoint) => {
      const connection = await connectAgent({ card: s.card, endpoint });
      const run = await newRun(s, store, 'Long', { endpoint, connection, runner: { cancelWaitMs: 5_000 } });
      void run.runner.start();
      await until('working', 5_000, () => run.journal.state() === 'working');
      front.fail(/^CancelTask$/, 2);
      const d = await within(run.runner.cancel(), 15_000, 'cancel through a 503');
      assert.equal(d.outcome, 'canceled');
      assert.equal(d.because?.code, 'canceled.confirmed');
      assert.deepEqual(front.refused, ['CancelTask', 'CancelTask']);
    });
  });

  it('a 4xx answer to the send is still the agent refusing it', async () => {
    await withFront({ script: steps }, async (s, front, endpoint) => {
      front.fail(/^SendStreamingMessage$/, 1, 400);
      const run = await newRun(s, store, 'No', { endpoint });
      await within(run.runner.start(), 10_000, 'a refused send');
      const d = run.journal.decide();
      assert.equal(d?.outcome, 'failed');
      assert.equal(d?.because?.code, 'failed.refused');
      assert.deepEqual(front.refused, ['SendStreamingMessage']);
    });
  });

  it('a 502 to the send of an agent without messageId idempotency: not sent again; the task is looked for', async () => {
    await withFront({ script: steps }, async (s, front, endpoint) => {
      front.fail(/^SendStreamingMessage$/, 1, 502);
      const run = await newRun(s, store, 'Maybe', { endpoint });
      await within(run.runner.start(), 10_000, 'a send answered 502');
      const d = run.journal.decide();
      assert.equal(d?.outcome, 'unknown');
      assert.match(d?.reason ?? '', /HTTP 502 from the gateway in front of the agent/);
      assert.deepEqual(front.refused, ['SendStreamingMessage']);
      assert.ok(!front.passed.includes('SendStreamingMessage'), 'not sent again');
      assert.ok(front.passed.includes('ListTasks'), 'looked for by its messageId');
      assert.equal(s.executor.executions.length, 0);
    });
  });

  it('a 502 to the send of an agent with messageId idempotency: sent again, one task', async () => {
    await withFront({ script: steps, replay: true }, async (s, front, endpoint) => {
      front.fail(/^SendStreamingMessage$/, 1, 502);
      const run = await newRun(s, store, 'Again', { endpoint });
      await within(run.runner.start(), 15_000, 'a send answered 502, then sent again');
      assert.equal(run.journal.decide()?.outcome, 'completed');
      assert.equal(s.executor.executions.length, 1);
    });
  });
});
