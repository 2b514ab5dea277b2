import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { SendMessageRequest, TaskState } from '@a2a-js/sdk';
import type { StreamResponse } from '@a2a-js/sdk';
import { startGateway } from '../../../src/gateway/server';
import type { RunningGateway } from '../../../src/gateway/server';
import { randomUUID } from 'node:crypto';
import {
  bounded,
  checkStoredEnvelope,
  clientFor,
  collect,
  readSse,
  sendRequest,
  seqOf,
  tempDir,
  userMessage,
} from './helpers';
import type { CutProxy } from '../delegation/cutProxy';
import { CUT_POINTS, startCutProxy } from '../delegation/cutProxy';
import { LARGE_PATCH, startRemote } from './remoteAgent';

/** A gateway whose agent `remote` is the remote agent at `url` (its JSON-RPC URL), reached over `binding`. */
function proxyingGateway(
  stateDir: string,
  url: string,
  binding: 'JSONRPC' | 'HTTP+JSON',
  legacy: boolean,
  token: string,
): Promise<RunningGateway> {
  return startGateway({
    stateDir,
    remoteAgents: [
      {
        id: 'remote',
        name: 'Remote',
        description: 'proxied',
        url: binding === 'JSONRPC' ? url : url.replace(/\/rpc$/, '/rest'),
        protocolBinding: binding,
        protocolVersion: legacy ? '0.3' : '1.0',
        auth: { kind: 'bearer', token },
        skills: [],
      },
    ],
    limits: { cancelGraceMs: 2000 },
    log: () => undefined,
  });
}

const variants = [
  { legacy: false, binding: 'JSONRPC' },
  { legacy: false, binding: 'HTTP+JSON' },
  { legacy: true, binding: 'JSONRPC' },
] as const;

for (const { legacy, binding } of variants) {
  describe(`gateway: transparent proxy to a remote ${legacy ? '0.3' : '1.0'} agent over ${binding}`, () => {
    const dir = tempDir();
    let gw: RunningGateway;
    let remote: Awaited<ReturnType<typeof startRemote>>;
    const remoteToken = 'remote-secret-token-0123456789';
    before(async () => {
      remote = await startRemote(50, remoteToken, legacy);
      gw = await proxyingGateway(dir.path, remote.url, binding, legacy, remoteToken);
    });
    after(async () => {
      remote.executor.finishStubborn = true;
      await gw.close();
      await remote.close();
      dir[Symbol.dispose]();
    });

    it("relays a stream with the gateway's seq, keeps the remote's task id, and holds the remote's credentials", async () => {
      const client = await clientFor(`${gw.url}/a2a/remote/.well-known/agent-card.json`, gw.token);
      const events = await collect(client.sendMessageStream(sendRequest(userMessage('go'))));
      assert.deepEqual(
        events.map(seqOf),
        events.map((_, i) => i + 1),
      );
      const working = events.filter(
        (e) => e.payload?.$case === 'statusUpdate' && e.payload.value.status?.state === TaskState.TASK_STATE_WORKING,
      );
      assert.equal(working.length, 50);
      const last = events[events.length - 1];
      assert.equal(
        last.payload?.$case === 'statusUpdate' ? last.payload.value.status?.state : -1,
        TaskState.TASK_STATE_COMPLETED,
      );
      assert.equal(
        typeof (last.payload?.value as { metadata?: Record<string, unknown> }).metadata?.['baton/resultEnvelope'],
        'string',
      );
      const id = events[0].payload?.$case === 'task' ? events[0].payload.value.id : '';
      const task = await client.getTask({ tenant: '', id });
      assert.equal(task.id, id);
      assert.equal(task.artifacts[0]?.name, 'changes.patch');
      // The remote saw the gateway's credentials on every call, never the caller's token.
      assert.ok(remote.seenAuth.length > 0);
      assert.ok(remote.seenAuth.every((a) => a === `Bearer ${remoteToken}`));
      assert.ok(!remote.seenAuth.some((a) => a.includes(gw.token)));
    });

    it('an auth-required task: once authorized out of band, a client subscribing again gets what the remote did meanwhile, then the rest, live', async () => {
      const client = await clientFor(`${gw.url}/a2a/remote/.well-known/agent-card.json`, gw.token);
      const first = await collect(client.sendMessageStream(sendRequest(userMessage('auth'))));
      const last = first[first.length - 1];
      assert.equal(
        last.payload?.$case === 'statusUpdate' ? last.payload.value.status?.state : -1,
        TaskState.TASK_STATE_AUTH_REQUIRED,
      );
      const id = first[0].payload?.$case === 'task' ? first[0].payload.value.id : '';
      const cursor = seqOf(last) ?? 0;
      // Not authorized yet: subscribing again brings nothing new and ends.
      assert.deepEqual(
        await collect(
          client.resubscribeTask({ tenant: '', id }, { serviceParameters: { 'Last-Event-ID': String(cursor) } }),
        ),
        [],
      );
      remote.executor.authorize();
      // The remote goes on by itself (the gateway relays nothing meanwhile: the turn ended).
      // (GetTask through the gateway asks the remote while the task is not over.)
      for (
        let i = 0;
        i < 500 && (await client.getTask({ tenant: '', id })).status?.state === TaskState.TASK_STATE_AUTH_REQUIRED;
        i++
      )
        await new Promise((r) => setTimeout(r, 10));
      const events: StreamResponse[] = [];
      for await (const ev of client.resubscribeTask(
        { tenant: '', id },
        { serviceParameters: { 'Last-Event-ID': String(cursor) } },
      )) {
        events.push(ev);
        // The task ends only once this subscriber has what the remote did meanwhile.
        remote.executor.finishAuthTask = true;
      }
      assert.deepEqual(
        events.map(seqOf),
        events.map((_, i) => cursor + 1 + i),
        'continues the seq without a gap',
      );
      // What the remote did unseen arrives (the artifact it made), then the rest, ending on the signed result.
      const made = events.find((e) => e.payload?.$case === 'artifactUpdate');
      assert.equal(
        made?.payload?.$case === 'artifactUpdate' ? made.payload.value.artifact?.name : undefined,
        'changes.patch',
      );
      const end = events[events.length - 1];
      assert.equal(
        end.payload?.$case === 'statusUpdate' ? end.payload.value.status?.state : -1,
        TaskState.TASK_STATE_COMPLETED,
      );
      assert.equal(
        typeof (end.payload?.value as { metadata?: Record<string, unknown> }).metadata?.['baton/resultEnvelope'],
        'string',
      );
      const task = await client.getTask({ tenant: '', id });
      assert.equal(task.status?.state, TaskState.TASK_STATE_COMPLETED);
      assert.match(String(task.artifacts[0]?.parts[0]?.content?.value), /^diff --git a\/auth/);
    });

    it('forwards cancel and records the remote outcome', async () => {
      const client = await clientFor(`${gw.url}/a2a/remote/.well-known/agent-card.json`, gw.token);
      const started = await client.sendMessage(sendRequest(userMessage('wait'), true));
      const id = 'id' in started ? started.id : '';
      const canceled = await client.cancelTask({ tenant: '', id, metadata: undefined });
      assert.equal(canceled.status?.state, TaskState.TASK_STATE_CANCELED);
      const again = await client.getTask({ tenant: '', id });
      assert.equal(again.status?.state, TaskState.TASK_STATE_CANCELED);
    });

    it('a cancel the remote does not confirm in time ends as unknown, signed for the request like any result', async () => {
      const client = await clientFor(`${gw.url}/a2a/remote/.well-known/agent-card.json`, gw.token);
      const request = sendRequest(userMessage('ignore cancel'), true);
      const started = await client.sendMessage(request);
      const id = 'id' in started ? started.id : '';
      const ended = await client.cancelTask({ tenant: '', id, metadata: undefined });
      assert.equal(ended.status?.state, TaskState.TASK_STATE_FAILED);
      assert.equal(ended.metadata?.['baton/outcome'], 'unknown');
      const check = await checkStoredEnvelope(gw.url, 'remote', gw.token, id, SendMessageRequest.toJSON(request));
      assert.ok(check.ok, JSON.stringify(check));
    });
  });
}

describe('gateway: a relay whose stream to the remote breaks while the remote finishes', () => {
  const dir = tempDir();
  let gw: RunningGateway;
  let remote: Awaited<ReturnType<typeof startRemote>>;
  let cut: CutProxy;
  const remoteToken = 'remote-secret-token-0123456789';
  before(async () => {
    remote = await startRemote(0, remoteToken, false);
    cut = await startCutProxy(Number(new URL(remote.url).port));
    // The relay's streaming call is cut after its second event; the remote goes on without it.
    cut.setCutPoint(CUT_POINTS.midEvent);
    gw = await startGateway({
      stateDir: dir.path,
      remoteAgents: [
        {
          id: 'remote',
          name: 'Remote',
          description: 'proxied',
          url: `http://127.0.0.1:${cut.port}/rpc`,
          protocolBinding: 'JSONRPC',
          protocolVersion: '1.0',
          auth: { kind: 'bearer', token: remoteToken },
          skills: [],
        },
      ],
      log: () => undefined,
    });
  });
  after(async () => {
    await gw.close();
    await cut.close();
    await remote.close();
    dir[Symbol.dispose]();
  });

  it('finds the task finished on reconnecting and records the artifact made meanwhile before the signed result', async () => {
    const client = await clientFor(`${gw.url}/a2a/remote/.well-known/agent-card.json`, gw.token);
    const events = await collect(client.sendMessageStream(sendRequest(userMessage('patch later'))));
    assert.equal(cut.cuts, 1, 'the relay lost its stream');
    assert.deepEqual(
      events.map(seqOf),
      events.map((_, i) => i + 1),
    );
    const made = events.find((e) => e.payload?.$case === 'artifactUpdate');
    assert.equal(
      made?.payload?.$case === 'artifactUpdate' ? made.payload.value.artifact?.name : undefined,
      'changes.patch',
    );
    const end = events[events.length - 1];
    assert.equal(
      end.payload?.$case === 'statusUpdate' ? end.payload.value.status?.state : -1,
      TaskState.TASK_STATE_COMPLETED,
    );
    assert.equal(
      typeof (end.payload?.value as { metadata?: Record<string, unknown> }).metadata?.['baton/resultEnvelope'],
      'string',
    );
    const id = events[0].payload?.$case === 'task' ? events[0].payload.value.id : '';
    // GetTask of a finished task answers from the gateway's store: the artifact is there.
    const task = await client.getTask({ tenant: '', id });
    assert.equal(task.status?.state, TaskState.TASK_STATE_COMPLETED);
    assert.match(String(task.artifacts[0]?.parts[0]?.content?.value), /^diff --git a\/later/);
  });
});

for (const binding of ['JSONRPC', 'HTTP+JSON'] as const) {
  describe(`gateway: a large event relayed from a 1.0 remote over ${binding} (kept as UTF-8 bytes)`, () => {
    const dir = tempDir();
    let gw: RunningGateway;
    let remote: Awaited<ReturnType<typeof startRemote>>;
    before(async () => {
      remote = await startRemote(0, 'remote-secret-token-0123456789', false);
      gw = await proxyingGateway(dir.path, remote.url, binding, false, 'remote-secret-token-0123456789');
    });
    after(async () => {
      await gw.close();
      await remote.close();
      dir[Symbol.dispose]();
    });

    const post = (path: string, body: unknown): Promise<Response> =>
      fetch(`${gw.url}/a2a/remote${path}`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${gw.token}`,
          'A2A-Version': '1.0',
          'content-type': 'application/json',
          accept: 'text/event-stream',
        },
        body: JSON.stringify(body),
      });
    type Wire = {
      task?: { id?: string };
      artifactUpdate?: { artifact?: { parts?: Array<{ text?: string }> } };
      statusUpdate?: { status?: { state?: string } };
    };
    const patchIn = (events: readonly Wire[]): string | undefined =>
      events.find((e) => e.artifactUpdate)?.artifactUpdate?.artifact?.parts?.[0]?.text;
    const message = { messageId: '', role: 'ROLE_USER', parts: [{ text: 'big' }] };

    it('reaches JSON-RPC and HTTP+JSON streams, a replay-profile client, GetTask and the store exactly as the remote sent it', async () => {
      // JSON-RPC, read as the bytes on the wire: each event in its own `data` line, in the response's framing.
      const rpc = await readSse(
        await post('', {
          jsonrpc: '2.0',
          id: 7,
          method: 'SendStreamingMessage',
          params: { message: { ...message, messageId: randomUUID() } },
        }),
      );
      const rpcEvents = rpc.map((e) => JSON.parse(e.data) as { jsonrpc?: string; id?: number; result?: Wire });
      assert.ok(rpcEvents.every((e) => e.jsonrpc === '2.0' && e.id === 7 && e.result));
      assert.equal(patchIn(rpcEvents.map((e) => e.result ?? {})), LARGE_PATCH);
      assert.equal(rpcEvents[rpcEvents.length - 1].result?.statusUpdate?.status?.state, 'TASK_STATE_COMPLETED');
      assert.deepEqual(
        rpc.map((e) => Number(e.id)),
        rpc.map((_, i) => i + 1),
        'every event keeps its id line',
      );
      const taskId = rpcEvents[0].result?.task?.id ?? '';

      const rest = await readSse(await post('/message:stream', { message: { ...message, messageId: randomUUID() } }));
      const restEvents = rest.map((e) => JSON.parse(e.data) as Wire);
      assert.equal(patchIn(restEvents), LARGE_PATCH);
      assert.equal(restEvents[restEvents.length - 1].statusUpdate?.status?.state, 'TASK_STATE_COMPLETED');

      // The replay profile's clients get each event with its seq in it (the bytes read back as text).
      const client = await clientFor(`${gw.url}/a2a/remote/.well-known/agent-card.json`, gw.token);
      const live = await collect(client.sendMessageStream(sendRequest(userMessage('big'))));
      const patchOf = (events: readonly StreamResponse[]): string | undefined => {
        const a = events.find((e) => e.payload?.$case === 'artifactUpdate');
        return a?.payload?.$case === 'artifactUpdate'
          ? String(a.payload.value.artifact?.parts[0]?.content?.value)
          : undefined;
      };
      assert.equal(patchOf(live), LARGE_PATCH);
      assert.deepEqual(
        live.map(seqOf),
        live.map((_, i) => i + 1),
      );
      const replayed = await collect(
        client.resubscribeTask({ tenant: '', id: taskId }, { serviceParameters: { 'Last-Event-ID': '0' } }),
      );
      assert.equal(patchOf(replayed), LARGE_PATCH);

      const task = await client.getTask({ tenant: '', id: taskId });
      assert.equal(task.artifacts[0]?.parts[0]?.content?.value, LARGE_PATCH);
      const stored = await gw.store.readEvents('remote', taskId, 0, 100);
      assert.ok(stored.every((r) => typeof r.body === 'string'));
      assert.equal(patchIn(stored.map((r) => JSON.parse(r.body) as Wire)), LARGE_PATCH);
    });
  });
}

describe('gateway: a relay whose events the store refuses for good (another instance took the task over)', () => {
  const dir = tempDir();
  let gw: RunningGateway;
  let remote: Awaited<ReturnType<typeof startRemote>>;
  const remoteToken = 'remote-secret-token-0123456789';
  const log: string[] = [];
  before(async () => {
    remote = await startRemote(5, remoteToken, false);
    gw = await startGateway({
      stateDir: dir.path,
      remoteAgents: [
        {
          id: 'remote',
          name: 'Remote',
          description: 'proxied',
          url: remote.url,
          protocolBinding: 'JSONRPC',
          protocolVersion: '1.0',
          auth: { kind: 'bearer', token: remoteToken },
          skills: [],
        },
      ],
      log: (line) => log.push(line),
    });
  });
  after(async () => {
    remote.executor.finishStubborn = true;
    await gw.close();
    await remote.close();
    dir[Symbol.dispose]();
  });

  it('stops relaying, says so once, and never reconnects to the remote', async () => {
    const client = await clientFor(`${gw.url}/a2a/remote/.well-known/agent-card.json`, gw.token);
    const stream = client.sendMessageStream(sendRequest(userMessage('ignore cancel')));
    let taskId = '';
    for await (const ev of stream) {
      if (ev.payload?.$case === 'task') taskId = ev.payload.value.id;
      if (ev.payload?.$case === 'statusUpdate') taskId = ev.payload.value.taskId;
      if (ev.payload?.$case === 'statusUpdate' && ev.payload.value.status?.state === TaskState.TASK_STATE_WORKING)
        break;
    }
    assert.ok(taskId);
    const row = await gw.store.getTask('remote', taskId);
    assert.ok(row);
    // Another instance, as it looks from here: it owns the task now and stored the event that follows.
    await gw.store.append({
      agent: 'remote',
      taskId,
      events: [
        {
          seq: row.lastSeq + 1,
          body: JSON.stringify({ statusUpdate: { taskId, contextId: row.contextId, metadata: { elsewhere: true } } }),
        },
      ],
      state: row.state,
      snapshot: row.snapshot,
      owner: 'another-instance',
    });
    const requests = remote.seenAuth.length;
    // The remote ends the task: this instance's writer tries to store it at a seq already taken.
    remote.executor.finishStubborn = true;
    await bounded(
      (async () => {
        while (!log.some((l) => l.includes('stopped relaying'))) await new Promise((r) => setTimeout(r, 20));
      })(),
      'the relay to say it stopped',
    );
    // Long enough for the reconnects the relay used to make (the first within half a second).
    await new Promise((r) => setTimeout(r, 1500));
    const relayLines = log.filter((l) => l.includes(`task ${taskId}`));
    assert.equal(relayLines.filter((l) => l.includes('stopped relaying')).length, 1, relayLines.join('\n'));
    assert.match(
      relayLines.find((l) => l.includes('stopped relaying')) ?? '',
      /another gateway instance|refused|stored/,
    );
    assert.ok(!relayLines.some((l) => l.includes('stream broke')), relayLines.join('\n'));
    assert.equal(remote.seenAuth.length, requests, 'no request to the remote after the store refused the relay');
  });
});
