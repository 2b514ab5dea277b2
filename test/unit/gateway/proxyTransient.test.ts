/**
 * A remote agent behind the gateway whose balancer (or its own gateway, while its store is down)
 * answers "not now" (429/502/503/504, Retry-After: 1) for a while: the proxy tries each call again as
 * it asks, reuses the messageId so the remote makes one task, tells its own client to try again later
 * (503 with Retry-After) when the tries are used up before a task exists, keeps relaying a task through
 * the outage, and says in the log what happened. An answer that is no such "not now" stays what it is.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { TaskState } from '@a2a-js/sdk';
import type { StreamResponse } from '@a2a-js/sdk';
import { fetchRemoteCard } from '../../../src/gateway/remoteCard';
import { StoreUnavailableError } from '../../../src/gateway/store/gatewayStore';
import { sleep } from '../../../src/core/sleep';
import { startGateway } from '../../../src/gateway/server';
import type { RunningGateway } from '../../../src/gateway/server';
import { clientFor, seqOf, tempDir } from './helpers';
import { startRemote } from './remoteAgent';
import { startFlakyFront } from '../delegation/silentPeer';
import type { FlakyFront } from '../delegation/silentPeer';

interface RpcAnswer {
  readonly status: number;
  readonly retryAfter: string | null;
  readonly text: string;
  readonly body: {
    result?: { task?: { id?: string; status?: { state?: string }; metadata?: Record<string, unknown> } } & {
      id?: string;
      status?: { state?: string };
      metadata?: Record<string, unknown>;
    };
    error?: { code?: number; message?: string };
  };
}

describe('gateway: a remote agent that answers 429/502/503 for a while', () => {
  const dir = tempDir();
  const token = 'remote-secret-token-0123456789';
  let remote: Awaited<ReturnType<typeof startRemote>>;
  let front: FlakyFront;
  let gw: RunningGateway;
  const log: string[] = [];

  before(async () => {
    remote = await startRemote(3, token, false);
    const remotePort = new URL(remote.url).port;
    front = await startFlakyFront(Number(remotePort));
    gw = await startGateway({
      stateDir: dir.path,
      remoteAgents: [
        {
          id: 'remote',
          name: 'Remote',
          description: 'proxied',
          url: `http://127.0.0.1:${front.port}/rpc`,
          protocolBinding: 'JSONRPC',
          protocolVersion: '1.0',
          auth: { kind: 'bearer', token },
          skills: [],
        },
      ],
      limits: { cancelGraceMs: 5000, remoteRetry: { maxTries: 4 } },
      log: (line) => log.push(line),
    });
  });
  after(async () => {
    remote.executor.finishStubborn = true;
    await gw.close();
    await front.close();
    await remote.close();
    dir[Symbol.dispose]();
  });

  const rpc = async (method: string, params: unknown): Promise<RpcAnswer> => {
    const res = await fetch(`${gw.url}/a2a/remote`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', Authorization: `Bearer ${gw.token}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 7, method, params }),
    });
    const text = await res.text();
    let body: RpcAnswer['body'] = {};
    try {
      body = JSON.parse(text) as RpcAnswer['body'];
    } catch {
      // An event stream: the text says it.
    }
    return { status: res.status, retryAfter: res.headers.get('retry-after'), text, body };
  };
  const message = (text: string, messageId = randomUUID(), taskId?: string): Record<string, unknown> => ({
    message: { messageId, role: 'ROLE_USER', parts: [{ text }], ...(taskId ? { taskId } : {}) },
  });
  const count = (list: readonly string[], method: string): number => list.filter((m) => m === method).length;
  /** The log's lines from `from` on that tell of an outage at the remote. */
  const outageLines = (from: number): string[] =>
    log.slice(from).filter((l) => l.startsWith('remote agent remote:') && /unavailable/.test(l));

  it('a blocking first send answered 503 + Retry-After three times is sent again as asked, with the same messageId, and the remote makes one task; the log says so in one line', async () => {
    const from = log.length;
    const passed = count(front.passed, 'SendStreamingMessage');
    front.fail(/^SendStreamingMessage$/, 3, 503);
    const started = Date.now();
    const a = await rpc('SendMessage', message('go'));
    assert.equal(a.status, 200, a.text);
    assert.equal(a.body.result?.task?.status?.state, 'TASK_STATE_COMPLETED', a.text);
    assert.ok(Date.now() - started >= 2900, 'waited the Retry-After each time');
    assert.equal(count(front.passed, 'SendStreamingMessage') - passed, 1, 'one send reached the remote');
    const lines = outageLines(from);
    assert.equal(lines.length, 1, lines.join('\n'));
    assert.match(lines[0], /was unavailable for .* \(HTTP 503: .*task store is unavailable.*; 3 such answer\(s\)\)/);
  });

  it('a streaming first send answered 429 twice is sent again and relayed to its end', async () => {
    const passed = count(front.passed, 'SendStreamingMessage');
    front.fail(/^SendStreamingMessage$/, 2, 429);
    const a = await rpc('SendStreamingMessage', message('go'));
    assert.equal(a.status, 200, a.text);
    assert.match(a.text, /TASK_STATE_COMPLETED/);
    assert.equal(count(front.passed, 'SendStreamingMessage') - passed, 1);
  });

  it("tries used up before any task exists: the gateway's client gets 503 + Retry-After (not a refusal), and the same message sent again then makes one task", async () => {
    const from = log.length;
    const passed = count(front.passed, 'SendStreamingMessage');
    front.fail(/^SendStreamingMessage$/, 4, 503);
    const id = randomUUID();
    const a = await rpc('SendMessage', message('go', id));
    assert.equal(a.status, 503, a.text);
    assert.equal(a.retryAfter, '5');
    assert.match(
      String(a.body.error?.message),
      /^the remote agent is temporarily unavailable: remote answered HTTP 503 \(.*\) still after 4 tries; no task was started; send the request again in a few seconds$/,
    );
    assert.equal(count(front.passed, 'SendStreamingMessage'), passed, 'nothing reached the remote');
    assert.equal(outageLines(from).filter((l) => /gave up/.test(l)).length, 1, log.slice(from).join('\n'));
    const b = await rpc('SendMessage', message('go', id));
    assert.equal(b.status, 200, b.text);
    assert.equal(b.body.result?.task?.status?.state, 'TASK_STATE_COMPLETED', b.text);
    assert.equal(count(front.passed, 'SendStreamingMessage') - passed, 1, 'one send reached the remote');
  });

  it("tries used up while the store cannot release the send's claim: a resend is answered 503 (store unavailable) until the store answers, then runs once; a release that failed goes through in the background", async () => {
    const store = gw.store;
    const release = store.releaseRequest;
    let refusing = true;
    store.releaseRequest = (...a) =>
      refusing ? Promise.reject(new StoreUnavailableError('connection refused')) : release(...a);
    try {
      const from = log.length;
      const passed = count(front.passed, 'SendStreamingMessage');
      front.fail(/^SendStreamingMessage$/, 4, 503);
      const id = randomUUID();
      const a = await rpc('SendMessage', message('go', id));
      assert.equal(a.status, 503, a.text);
      assert.match(String(a.body.error?.message), /^the remote agent is temporarily unavailable: /);
      assert.ok(
        log.slice(from).some((l) => l.includes(`could not release the claim of messageId ${id} on remote`)),
        log.slice(from).join('\n'),
      );
      // The store still refuses: the resend says so at once (it is not taken for a send still under way).
      const b = await rpc('SendMessage', message('go', id));
      assert.equal(b.status, 503, b.text);
      assert.equal(b.retryAfter, '5');
      assert.match(
        String(b.body.error?.message),
        /^the gateway's task store is unavailable \(an earlier send of messageId /,
      );
      assert.equal(count(front.passed, 'SendStreamingMessage'), passed, 'nothing reached the remote');
      refusing = false;
      const c = await rpc('SendMessage', message('go', id));
      assert.equal(c.status, 200, c.text);
      assert.equal(c.body.result?.task?.status?.state, 'TASK_STATE_COMPLETED', c.text);
      assert.equal(count(front.passed, 'SendStreamingMessage') - passed, 1, 'one send reached the remote');

      // A release refused once is tried again without a resend, and the log says when it went through.
      refusing = true;
      const from2 = log.length;
      front.fail(/^SendStreamingMessage$/, 4, 503);
      const id2 = randomUUID();
      assert.equal((await rpc('SendMessage', message('go', id2))).status, 503);
      refusing = false;
      const released = `released the claim of messageId ${id2} on remote now that the store answers`;
      for (let i = 0; i < 100 && !log.slice(from2).some((l) => l.includes(released)); i++) await sleep(50);
      assert.ok(
        log.slice(from2).some((l) => l.includes(released)),
        log.slice(from2).join('\n'),
      );
      const d = await rpc('SendMessage', message('go', id2));
      assert.equal(d.status, 200, d.text);
      assert.equal(d.body.result?.task?.status?.state, 'TASK_STATE_COMPLETED', d.text);
    } finally {
      store.releaseRequest = release;
    }
  });

  it('a 502 to a first send is not sent again (the remote may have it): the remote is asked for its tasks, lists none, and the client is told to try again', async () => {
    const sends = count(front.refused, 'SendStreamingMessage');
    const lists = count(front.passed, 'ListTasks');
    front.fail(/^SendStreamingMessage$/, 1, 502);
    const id = randomUUID();
    const a = await rpc('SendMessage', message('go', id));
    assert.equal(a.status, 503, a.text);
    assert.match(String(a.body.error?.message), /HTTP 502 .* does not list a task for it/);
    assert.equal(count(front.refused, 'SendStreamingMessage') - sends, 1, 'sent once');
    assert.equal(count(front.passed, 'ListTasks') - lists, 1, 'looked for the task');
    const b = await rpc('SendMessage', message('go', id));
    assert.equal(b.body.result?.task?.status?.state, 'TASK_STATE_COMPLETED', b.text);
  });

  it('a follow-up answered 503 twice is sent again and ends the task', async () => {
    const a = await rpc('SendMessage', message('ask'));
    const taskId = a.body.result?.task?.id ?? '';
    assert.equal(a.body.result?.task?.status?.state, 'TASK_STATE_INPUT_REQUIRED', a.text);
    front.fail(/^SendStreamingMessage$/, 2, 503);
    const b = await rpc('SendMessage', message('main.ts', randomUUID(), taskId));
    assert.equal(b.status, 200, b.text);
    assert.equal(b.body.result?.task?.status?.state, 'TASK_STATE_COMPLETED', b.text);
  });

  it('a follow-up whose tries are used up gets 503 + Retry-After and is forwarded when sent again (it was not taken for delivered)', async () => {
    const a = await rpc('SendMessage', message('ask'));
    const taskId = a.body.result?.task?.id ?? '';
    front.fail(/^SendStreamingMessage$/, 4, 503);
    const id = randomUUID();
    const b = await rpc('SendMessage', message('main.ts', id, taskId));
    assert.equal(b.status, 503, b.text);
    assert.match(String(b.body.error?.message), /the follow-up was not delivered/);
    const c = await rpc('SendMessage', message('main.ts', id, taskId));
    assert.equal(c.body.result?.task?.status?.state, 'TASK_STATE_COMPLETED', c.text);
  });

  it('GetTask and SubscribeToTask answered 503 while the gateway follows a task again are tried again; the task ends completed, not unknown', async () => {
    const client = await clientFor(`${gw.url}/a2a/remote/.well-known/agent-card.json`, gw.token);
    const a = await rpc('SendMessage', message('auth'));
    const id = a.body.result?.task?.id ?? '';
    assert.equal(a.body.result?.task?.status?.state, 'TASK_STATE_AUTH_REQUIRED', a.text);
    remote.executor.authorize();
    front.fail(/^GetTask$/, 2, 503);
    front.fail(/^SubscribeToTask$/, 2, 503);
    let state = TaskState.TASK_STATE_AUTH_REQUIRED;
    for (let i = 0; i < 300 && state === TaskState.TASK_STATE_AUTH_REQUIRED; i++) {
      state = (await client.getTask({ tenant: '', id })).status?.state ?? state;
      if (state === TaskState.TASK_STATE_AUTH_REQUIRED) await new Promise((r) => setTimeout(r, 20));
    }
    assert.equal(state, TaskState.TASK_STATE_WORKING);
    assert.equal(count(front.refused, 'GetTask'), 2);
    const events: StreamResponse[] = [];
    for await (const ev of client.resubscribeTask(
      { tenant: '', id },
      { serviceParameters: { 'Last-Event-ID': '0' } },
    )) {
      events.push(ev);
      remote.executor.finishAuthTask = true;
    }
    assert.equal(count(front.refused, 'SubscribeToTask'), 2);
    const end = events[events.length - 1];
    assert.ok(seqOf(end));
    assert.equal(
      end.payload?.$case === 'statusUpdate' ? end.payload.value.status?.state : -1,
      TaskState.TASK_STATE_COMPLETED,
    );
    const task = await rpc('GetTask', { id });
    assert.equal(task.body.result?.status?.state, 'TASK_STATE_COMPLETED', task.text);
    assert.equal(task.body.result?.metadata?.['baton/outcome'], 'completed');
  });

  it('a cancel answered 503 once is sent again and the remote confirms it (canceled, not an unknown outcome)', async () => {
    const a = await rpc('SendMessage', {
      ...message('wait'),
      configuration: { returnImmediately: true },
    });
    const id = a.body.result?.task?.id ?? '';
    assert.ok(id, a.text);
    front.fail(/^CancelTask$/, 1, 503);
    const c = await rpc('CancelTask', { id });
    assert.equal(c.status, 200, c.text);
    assert.equal(count(front.refused, 'CancelTask'), 1);
    assert.equal(count(front.passed, 'CancelTask'), 1);
    let state = '';
    for (let i = 0; i < 200 && state !== 'TASK_STATE_CANCELED'; i++) {
      state = (await rpc('GetTask', { id })).body.result?.status?.state ?? '';
      if (state !== 'TASK_STATE_CANCELED') await new Promise((r) => setTimeout(r, 20));
    }
    const t = await rpc('GetTask', { id });
    assert.equal(t.body.result?.status?.state, 'TASK_STATE_CANCELED', t.text);
    assert.notEqual(t.body.result?.metadata?.['baton/outcome'], 'unknown');
  });

  it('a 400 from the remote stays what it is: not sent again, not taken for an unavailable remote, even when its text reads like one', async () => {
    const from = log.length;
    const sends = count(front.refused, 'SendStreamingMessage');
    const passed = count(front.passed, 'SendStreamingMessage');
    front.fail(/^SendStreamingMessage$/, 1, 400);
    const a = await rpc('SendMessage', message('go'));
    assert.ok(a.body.error, a.text);
    assert.doesNotMatch(String(a.body.error?.message), /remote agent is temporarily unavailable/);
    // The remote's error text reads like this gateway's own "store unavailable" (the front says so):
    // passed through, it is the remote's error, not a reason for this gateway to answer 503.
    assert.match(String(a.body.error?.message), /task store is unavailable \(test: paused\)/);
    assert.equal(a.status, 200, a.text);
    assert.equal(a.retryAfter, null);
    assert.equal(count(front.refused, 'SendStreamingMessage') - sends, 1);
    assert.equal(count(front.passed, 'SendStreamingMessage'), passed);
    assert.deepEqual(outageLines(from), []);
  });
});

describe("gateway: a remote agent's card read answered 503 for a while", () => {
  it('is read again after the Retry-After, and says so; used-up tries still say what the remote answered', async () => {
    const token = 'remote-secret-token-0123456789';
    const remote = await startRemote(1, token, false, { serveCard: true });
    const front = await startFlakyFront(Number(new URL(remote.url).port));
    try {
      const cfg = {
        id: 'remote',
        name: 'Remote',
        description: 'proxied',
        descriptionIsDefault: false,
        url: `http://127.0.0.1:${front.port}/rpc`,
        protocolBinding: 'JSONRPC' as const,
        protocolVersion: '1.0' as const,
        auth: { kind: 'bearer' as const, token },
        skills: [],
      };
      front.fail(/agent-card\.json/, 2, 503);
      const read = await fetchRemoteCard(cfg);
      assert.ok(read.facts.interfaces.length > 0);
      assert.deepEqual(read.retried, { status: 503, answers: 2, waitedMs: 2000 });
      front.fail(/agent-card\.json/, 10, 502);
      await assert.rejects(
        fetchRemoteCard(cfg, { transient: { maxTries: 2 } }),
        /answered HTTP 502 still after 2 tries/,
      );
    } finally {
      await front.close();
      await remote.close();
    }
  });
});

describe('gateway: a 0.3 remote agent that answers 503 for a while (through the SDK client)', () => {
  it('a first send answered 503 twice is sent again once and the task completes', async () => {
    const dir = tempDir();
    const token = 'remote-secret-token-0123456789';
    const remote = await startRemote(2, token, true);
    const front = await startFlakyFront(Number(new URL(remote.url).port));
    const gw = await startGateway({
      stateDir: dir.path,
      remoteAgents: [
        {
          id: 'remote',
          name: 'Remote',
          description: 'proxied',
          url: `http://127.0.0.1:${front.port}/rpc`,
          protocolBinding: 'JSONRPC',
          protocolVersion: '0.3',
          auth: { kind: 'bearer', token },
          skills: [],
        },
      ],
      limits: { cancelGraceMs: 2000 },
      log: () => undefined,
    });
    try {
      const rpc = async (method: string, params: unknown): Promise<RpcAnswer['body']> => {
        const res = await fetch(`${gw.url}/a2a/remote`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', Authorization: `Bearer ${gw.token}` },
          body: JSON.stringify({ jsonrpc: '2.0', id: 7, method, params }),
        });
        return (await res.json()) as RpcAnswer['body'];
      };
      front.fail(/^message\/stream$/, 2, 503);
      const a = await rpc('SendMessage', {
        message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'go' }] },
      });
      assert.equal(a.result?.task?.status?.state, 'TASK_STATE_COMPLETED', JSON.stringify(a));
      assert.deepEqual(front.refused, ['message/stream', 'message/stream']);
      assert.equal(front.passed.filter((m) => m === 'message/stream').length, 1);
    } finally {
      await gw.close();
      await front.close();
      await remote.close();
      dir[Symbol.dispose]();
    }
  });
});
