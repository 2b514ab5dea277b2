import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { TaskState } from '@a2a-js/sdk';
import type { StreamResponse } from '@a2a-js/sdk';
import { startGateway } from '../../../src/gateway/server';
import type { RunningGateway } from '../../../src/gateway/server';
import { sha256HexOf } from '../../../src/gateway/config';
import { clientFor, collect, readSse, scriptedAgent, sendRequest, seqOf, tempDir, userMessage } from './helpers';

describe('gateway: local agents over A2A', () => {
  const dir = tempDir();
  const repos = tempDir('baton-roots-');
  let gw: RunningGateway;
  const otherToken = `other-${randomUUID()}`;
  before(async () => {
    gw = await startGateway({
      stateDir: dir.path,
      roots: [repos.path],
      localAgents: [
        scriptedAgent({ steps: 5 }),
        scriptedAgent({ id: 'stuck', hang: true }),
        scriptedAgent({ id: 'slow', waitForCancel: true }),
      ],
      tokens: [{ principal: 'other', sha256: sha256HexOf(otherToken) }],
      limits: { cancelGraceMs: 300 },
      log: () => undefined,
    });
  });
  after(async () => {
    await gw.close();
    dir[Symbol.dispose]();
    repos[Symbol.dispose]();
  });

  it('serves public cards: the gateway index and each agent with real URLs, streaming, bearer and the replay extension', async () => {
    const root = (await (
      await fetch(`${gw.url}/.well-known/agent-card.json`, { headers: { 'A2A-Version': '1.0' } })
    ).json()) as Record<string, unknown>;
    const ext = (
      root.capabilities as {
        extensions: Array<{ uri: string; params?: { agents?: Array<{ id: string; cardUrl: string }> } }>;
      }
    ).extensions;
    const index = ext.find((e) => e.uri === 'urn:baton:a2a:agent-index:v1');
    assert.deepEqual(
      index?.params?.agents?.map((a) => a.id),
      ['echo', 'stuck', 'slow'],
    );
    const card = (await (
      await fetch(new URL(index?.params?.agents?.[0].cardUrl ?? '', `${gw.url}/`), {
        headers: { 'A2A-Version': '1.0' },
      })
    ).json()) as {
      supportedInterfaces: Array<{ url: string; protocolBinding: string; protocolVersion: string }>;
      capabilities: { streaming: boolean; extensions: Array<{ uri: string }> };
      securitySchemes: Record<string, unknown>;
      skills: Array<{ id: string }>;
    };
    assert.ok(
      card.supportedInterfaces.some(
        (i) => i.url === `${gw.url}/a2a/echo` && i.protocolBinding === 'JSONRPC' && i.protocolVersion === '1.0',
      ),
    );
    assert.ok(card.supportedInterfaces.some((i) => i.protocolBinding === 'HTTP+JSON'));
    assert.ok(card.supportedInterfaces.some((i) => i.protocolVersion === '0.3'));
    assert.equal(card.capabilities.streaming, true);
    assert.ok(card.capabilities.extensions.some((e) => e.uri === 'urn:baton:a2a:replay:v1'));
    assert.ok('bearer' in card.securitySchemes);
    assert.deepEqual(
      card.skills.map((s) => s.id),
      ['echo'],
    );
  });

  it('refuses A2A calls without a valid token', async () => {
    for (const auth of [undefined, 'Bearer wrong-token', `Basic ${gw.token}`]) {
      const res = await fetch(`${gw.url}/a2a/echo`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', ...(auth ? { Authorization: auth } : {}) },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'x' } }),
      });
      assert.equal(res.status, 401, String(auth));
      assert.match(res.headers.get('www-authenticate') ?? '', /Bearer/);
    }
  });

  it('streams a task with seq 1..n on every event and ends completed with the patch', async () => {
    const client = await clientFor(`${gw.url}/a2a/echo/.well-known/agent-card.json`, gw.token);
    const events = await collect(client.sendMessageStream(sendRequest(userMessage('format src'))));
    assert.deepEqual(
      events.map(seqOf),
      events.map((_, i) => i + 1),
    );
    assert.equal(events[0].payload?.$case, 'task');
    const steps = events
      .filter((e) => e.payload?.$case === 'statusUpdate')
      .map(
        (e) =>
          (e.payload?.value as { status?: { message?: { parts: Array<{ content?: { value: unknown } }> } } }).status
            ?.message?.parts[0]?.content?.value,
      );
    assert.deepEqual(
      steps.filter((s) => typeof s === 'string' && s.startsWith('step')),
      ['step 1', 'step 2', 'step 3', 'step 4', 'step 5'],
    );
    const last = events[events.length - 1];
    assert.equal(last.payload?.$case, 'statusUpdate');
    const lastStatus = last.payload?.$case === 'statusUpdate' ? last.payload.value : undefined;
    assert.equal(lastStatus?.status?.state, TaskState.TASK_STATE_COMPLETED);
    assert.equal(lastStatus?.metadata?.['baton/outcome'], 'completed');
    const taskId = events[0].payload?.$case === 'task' ? events[0].payload.value.id : '';
    const task = await client.getTask({ tenant: '', id: taskId });
    assert.equal(task.status?.state, TaskState.TASK_STATE_COMPLETED);
    assert.equal(task.artifacts[0]?.name, 'changes.patch');
    assert.match(String(task.artifacts[0]?.parts[0]?.content?.value), /^diff --git/);
  });

  it('a plain A2A client gets the events as the agent made them (no baton/seq) and still the SSE id: lines; a 0.3 plain client too', async () => {
    const plain = await clientFor(`${gw.url}/a2a/echo/.well-known/agent-card.json`, gw.token, { replay: false });
    const events = await collect(plain.sendMessageStream(sendRequest(userMessage('plain'))));
    assert.ok(events.length >= 7, `got ${events.length} events`);
    assert.deepEqual(
      events.map(seqOf),
      events.map(() => undefined),
    );
    const taskId = events[0].payload?.$case === 'task' ? events[0].payload.value.id : '';
    const legacy = await clientFor(`${gw.url}/a2a/echo/.well-known/agent-card.json`, gw.token, {
      legacy: true,
      replay: false,
    });
    const old = await collect(legacy.sendMessageStream(sendRequest(userMessage('plain 0.3'))));
    assert.ok(old.length >= 7);
    assert.deepEqual(
      old.map(seqOf),
      old.map(() => undefined),
    );
    // The same stored events, asked for without the extension: ids on the SSE lines, none in the events.
    const res = await fetch(`${gw.url}/a2a/echo`, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        'A2A-Version': '1.0',
        Authorization: `Bearer ${gw.token}`,
        'Last-Event-ID': '0',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 'p', method: 'SubscribeToTask', params: { id: taskId } }),
    });
    assert.equal(res.headers.get('a2a-extensions'), null);
    const sse = await readSse(res);
    assert.deepEqual(
      sse.map((e) => Number(e.id)),
      events.map((_, i) => i + 1),
    );
    for (const e of sse) assert.doesNotMatch(e.data, /baton\/seq/);
    // The replay client, on the same task: each event carries its seq.
    const replaying = await clientFor(`${gw.url}/a2a/echo/.well-known/agent-card.json`, gw.token);
    const again = await collect(
      replaying.resubscribeTask({ tenant: '', id: taskId }, { serviceParameters: { 'Last-Event-ID': '2' } }),
    );
    assert.deepEqual(
      again.map(seqOf),
      events.slice(2).map((_, i) => i + 3),
    );
  });

  it('replays after Last-Event-ID with id: lines, then closes on a finished task', async () => {
    const client = await clientFor(`${gw.url}/a2a/echo/.well-known/agent-card.json`, gw.token);
    const events: StreamResponse[] = await collect(client.sendMessageStream(sendRequest(userMessage('again'))));
    const taskId = events[0].payload?.$case === 'task' ? events[0].payload.value.id : '';
    const n = events.length;
    const res = await fetch(`${gw.url}/a2a/echo`, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        'A2A-Version': '1.0',
        Authorization: `Bearer ${gw.token}`,
        'Last-Event-ID': '3',
        'A2A-Extensions': 'urn:baton:a2a:replay:v1',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'SubscribeToTask', params: { id: taskId } }),
    });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /text\/event-stream/);
    assert.equal(res.headers.get('a2a-extensions'), 'urn:baton:a2a:replay:v1');
    const sse = await readSse(res);
    assert.deepEqual(
      sse.map((e) => Number(e.id)),
      Array.from({ length: n - 3 }, (_, i) => i + 4),
    );
    const parsed = sse.map(
      (e) => JSON.parse(e.data) as { id: number; result: Record<string, { metadata?: Record<string, unknown> }> },
    );
    assert.ok(parsed.every((p, i) => p.id === 7 && Object.values(p.result)[0].metadata?.['baton/seq'] === i + 4));
    // The same via the cursor in request metadata, over HTTP+JSON.
    const rest = await fetch(`${gw.url}/a2a/echo/tasks/${taskId}:subscribe`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', Authorization: `Bearer ${gw.token}` },
      body: JSON.stringify({ metadata: { 'baton/cursor': n - 1 } }),
    });
    const restSse = await readSse(rest);
    assert.deepEqual(
      restSse.map((e) => Number(e.id)),
      [n],
    );
    // Without a cursor, a finished task is an error (plain A2A).
    const plain = await fetch(`${gw.url}/a2a/echo`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', Authorization: `Bearer ${gw.token}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 8, method: 'SubscribeToTask', params: { id: taskId } }),
    });
    const body = (await plain.json()) as { error?: { code: number } };
    assert.equal(body.error?.code, -32004);
  });

  it("answers another principal's task exactly like an unknown one", async () => {
    const mine = await clientFor(`${gw.url}/a2a/echo/.well-known/agent-card.json`, gw.token);
    const events = await collect(mine.sendMessageStream(sendRequest(userMessage('secret'))));
    const taskId = events[0].payload?.$case === 'task' ? events[0].payload.value.id : '';
    const call = async (id: string): Promise<unknown> => {
      const res = await fetch(`${gw.url}/a2a/echo`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', Authorization: `Bearer ${otherToken}` },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id } }),
      });
      const j = (await res.json()) as { error: { message: string } };
      return {
        status: res.status,
        code: (j.error as { code?: number }).code,
        message: j.error.message.replace(id, '<id>'),
      };
    };
    assert.deepEqual(await call(taskId), await call(randomUUID()));
    const listed = await (
      await clientFor(`${gw.url}/a2a/echo/.well-known/agent-card.json`, otherToken)
    ).listTasks({ tenant: '', contextId: '', status: 0, pageToken: '', statusTimestampAfter: undefined });
    assert.equal(listed.tasks.length, 0);
  });

  it('makes one task for concurrent sends of the same messageId, and another body under the id is a task of its own', async () => {
    const client = await clientFor(`${gw.url}/a2a/echo/.well-known/agent-card.json`, gw.token);
    const msg = userMessage('once');
    const results = await Promise.all(
      Array.from({ length: 6 }, () => client.sendMessage(sendRequest(structuredClone(msg)))),
    );
    const ids = new Set(results.map((r) => ('id' in r ? r.id : '')));
    assert.equal(ids.size, 1);
    const list = await client.listTasks({
      tenant: '',
      contextId: '',
      status: 0,
      pageToken: '',
      statusTimestampAfter: undefined,
      pageSize: 100,
    });
    assert.equal(list.tasks.filter((t) => t.history[0]?.messageId === msg.messageId).length, 1);
    const changed = {
      ...structuredClone(msg),
      parts: [
        {
          content: { $case: 'text' as const, value: 'twice' },
          metadata: undefined,
          filename: '',
          mediaType: 'text/plain',
        },
      ],
    };
    const other = await client.sendMessage(sendRequest(changed));
    assert.ok('id' in other && !ids.has(other.id), 'never answered with the first task');
    assert.equal(other.history[0]?.parts[0]?.content?.value, 'twice');
  });

  it('refuses a repository outside the roots it was started with', async () => {
    const client = await clientFor(`${gw.url}/a2a/echo/.well-known/agent-card.json`, gw.token);
    await assert.rejects(
      client.sendMessage(sendRequest(userMessage('x', { 'baton/repository': '/etc' }))),
      /outside the folders this gateway serves/,
    );
    await assert.rejects(
      client.sendMessage(sendRequest(userMessage('x', { 'baton/repository': `${repos.path}/../..` }))),
      /outside the folders|does not exist/,
    );
    const ok = await client.sendMessage(sendRequest(userMessage('x', { 'baton/repository': repos.path })));
    assert.ok('id' in ok && ok.status?.state === TaskState.TASK_STATE_COMPLETED);
  });

  it('answers a cancel within the grace period even when the agent ignores it, and records canceled', async () => {
    const client = await clientFor(`${gw.url}/a2a/stuck/.well-known/agent-card.json`, gw.token);
    const started = await client.sendMessage(sendRequest(userMessage('hang'), true));
    const id = 'id' in started ? started.id : '';
    const canceled = await client.cancelTask({ tenant: '', id, metadata: undefined });
    assert.equal(canceled.status?.state, TaskState.TASK_STATE_CANCELED);
    assert.match(JSON.stringify(canceled.status?.message?.parts), /did not stop within 300 ms/);
    const cooperative = await clientFor(`${gw.url}/a2a/slow/.well-known/agent-card.json`, gw.token);
    const t2 = await cooperative.sendMessage(sendRequest(userMessage('wait'), true));
    const c2 = await cooperative.cancelTask({ tenant: '', id: 'id' in t2 ? t2.id : '', metadata: undefined });
    assert.equal(c2.status?.state, TaskState.TASK_STATE_CANCELED);
    assert.equal(c2.metadata?.['baton/outcome'], 'canceled');
  });

  it('serves an A2A 0.3 client (legacyCompat)', async () => {
    const client = await clientFor(`${gw.url}/a2a/echo/.well-known/agent-card.json`, gw.token, { legacy: true });
    const events = await collect(client.sendMessageStream(sendRequest(userMessage('old client'))));
    const last = events[events.length - 1];
    assert.equal(
      last.payload?.$case === 'statusUpdate' ? last.payload.value.status?.state : undefined,
      TaskState.TASK_STATE_COMPLETED,
    );
    const res = await client.sendMessage(sendRequest(userMessage('old blocking')));
    assert.ok('id' in res && res.status?.state === TaskState.TASK_STATE_COMPLETED);
  });

  it('names an unknown agent', async () => {
    const res = await fetch(`${gw.url}/a2a/nobody`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${gw.token}`, 'Content-Type': 'application/json' },
      body: '{}',
    });
    assert.equal(res.status, 404);
    assert.match(
      JSON.stringify(await res.json()),
      /unknown agent \\"nobody\\"; this gateway serves: echo, stuck, slow/,
    );
  });
});
