/**
 * A2A conformance of the gateway's routes: through the proxy route (remote = the SDK's own agent, 1.0
 * and 0.3) the caller gets what the agent answered, and the gateway's own rules follow the spec.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Message, TaskState } from '@a2a-js/sdk';
import type { StreamResponse, Task } from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import { LOCAL_PRINCIPAL } from '../../../src/gateway/auth';
import { startGateway } from '../../../src/gateway/server';
import type { RunningGateway } from '../../../src/gateway/server';
import {
  bounded,
  clientFor,
  collect,
  rpcPost,
  scriptedAgent,
  sendRequest,
  suiteGateway,
  tempDir,
  userMessage,
} from './helpers';
import { startRemote } from './remoteAgent';
import { META } from '../../../src/core/batonProfile';
import { startForeignAgent } from './foreignAgent';
import type { ForeignAgent } from './foreignAgent';

const REMOTE_TOKEN = 'remote-secret-token-0123456789';

function stateOf(ev: StreamResponse | undefined): TaskState | undefined {
  const p = ev?.payload;
  if (p?.$case === 'statusUpdate') return p.value.status?.state;
  if (p?.$case === 'task') return p.value.status?.state;
  return undefined;
}

async function rpc(
  gw: RunningGateway,
  agent: string,
  method: string,
  params: Record<string, unknown>,
): Promise<{ result?: unknown; error?: { code: number; message: string } }> {
  const res = await fetch(`${gw.url}/a2a/${agent}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${gw.token}`, 'A2A-Version': '1.0' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  return (await res.json()) as { result?: unknown; error?: { code: number; message: string } };
}

/** Waits until the route's card shows what the remote's own card says (it is read in the background). */
async function cardSettles(
  gw: RunningGateway,
  agent: string,
  ok: (card: { capabilities?: { pushNotifications?: boolean } }) => boolean,
): Promise<void> {
  for (let i = 0; i < 500; i++) {
    const res = await fetch(`${gw.url}/a2a/${agent}/.well-known/agent-card.json`, {
      headers: { 'A2A-Version': '1.0' },
    });
    if (ok((await res.json()) as { capabilities?: { pushNotifications?: boolean } })) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  assert.fail(`the card of ${agent} did not settle`);
}

const PUSH_NOT_SUPPORTED = -32003;
const UNSUPPORTED_OPERATION = -32004;
const INVALID_REQUEST = -32600;
const INVALID_PARAMS = -32602;

function taskOf(r: unknown): Task {
  assert.ok(r && typeof r === 'object' && 'status' in r, `expected a task, got ${JSON.stringify(r)}`);
  return r as Task;
}

for (const legacy of [false, true]) {
  describe(`gateway conformance: through the proxy route to a ${legacy ? '0.3' : '1.0'} SDK agent`, () => {
    const dir = tempDir();
    let gw: RunningGateway;
    let remote: Awaited<ReturnType<typeof startRemote>>;
    let client: Client;
    before(async () => {
      remote = await startRemote(2, REMOTE_TOKEN, legacy, { serveCard: true });
      gw = await startGateway({
        stateDir: dir.path,
        remoteAgents: [
          {
            id: 'remote',
            name: 'Remote',
            description: 'proxied',
            url: remote.url,
            protocolBinding: 'JSONRPC',
            protocolVersion: legacy ? '0.3' : '1.0',
            auth: { kind: 'bearer', token: REMOTE_TOKEN },
            skills: [],
          },
        ],
        limits: { cancelGraceMs: 2000 },
        log: () => undefined,
      });
      // A plain A2A client (no replay profile), as a conformance suite is.
      client = await clientFor(`${gw.url}/a2a/remote/.well-known/agent-card.json`, gw.token, { replay: false });
    });
    after(async () => {
      await gw.close();
      await remote.close();
      dir[Symbol.dispose]();
    });

    it('a remote that answers with a Message: SendMessage returns that Message, not a task', async () => {
      const answer = await client.sendMessage(sendRequest(userMessage('reply')));
      assert.ok(!('status' in answer), `got a task: ${JSON.stringify(answer)}`);
      assert.equal(answer.parts[0]?.content?.value, 'hello back');
    });

    it('a remote that answers with a Message: the stream is that one Message', async () => {
      const events = await collect(client.sendMessageStream(sendRequest(userMessage('reply'))));
      assert.deepEqual(
        events.map((e) => e.payload?.$case),
        ['message'],
      );
      const p = events[0]?.payload;
      assert.equal(p?.$case === 'message' ? p.value.parts[0]?.content?.value : undefined, 'hello back');
    });

    it('a remote that ends its answer with the task working (fire-and-forget): a blocking SendMessage gets the working task, as from the agent itself, and the task is still followed', async () => {
      // Before, the blocking send waited for a terminal state the remote would never report by itself.
      const left = taskOf(
        await bounded(client.sendMessage(sendRequest(userMessage('leave working'))), 'blocking send'),
      );
      assert.equal(left.status?.state, TaskState.TASK_STATE_WORKING, JSON.stringify(left));
      const got = taskOf(await client.getTask({ tenant: '', id: left.id }));
      assert.equal(got.status?.state, TaskState.TASK_STATE_WORKING);
      // The gateway still follows it: a cancel reaches the remote and ends the task there and here.
      const canceled = taskOf(
        await bounded(client.cancelTask({ tenant: '', id: left.id, metadata: undefined }), 'cancel'),
      );
      assert.equal(canceled.status?.state, TaskState.TASK_STATE_CANCELED, JSON.stringify(canceled));
      // A blocking send to a remote that finishes still waits for the end (the answer is the completed task).
      const done = taskOf(await client.sendMessage(sendRequest(userMessage('go'))));
      assert.equal(done.status?.state, TaskState.TASK_STATE_COMPLETED);
    });

    it('SubscribeToTask outlives input-required and ends at the terminal state (A2A §3.1.6)', async () => {
      const asked = taskOf(await client.sendMessage(sendRequest(userMessage('ask'))));
      assert.equal(asked.status?.state, TaskState.TASK_STATE_INPUT_REQUIRED);
      const events: StreamResponse[] = [];
      let firstSeen!: () => void;
      const gotFirst = new Promise<void>((r) => (firstSeen = r));
      const subscribed = (async () => {
        for await (const ev of client.resubscribeTask({ tenant: '', id: asked.id })) {
          events.push(ev);
          firstSeen();
        }
      })();
      await bounded(gotFirst, 'the first event of the subscription');
      const answer = { ...userMessage('a.ts'), taskId: asked.id, contextId: asked.contextId };
      const done = taskOf(await client.sendMessage(sendRequest(answer)));
      assert.equal(done.status?.state, TaskState.TASK_STATE_COMPLETED);
      await bounded(subscribed, 'the subscription to end');
      assert.equal(events[0]?.payload?.$case, 'task', 'the first event is the task');
      assert.equal(
        stateOf(events[events.length - 1]),
        TaskState.TASK_STATE_COMPLETED,
        `ended at ${String(stateOf(events[events.length - 1]))}`,
      );
    });

    it("push-config calls answer PushNotificationNotSupported when the route's card offers no push, and nothing is created", async () => {
      await cardSettles(gw, 'remote', (c) => c.capabilities?.pushNotifications === false);
      const asked = taskOf(await client.sendMessage(sendRequest(userMessage('ask'))));
      const url = 'http://127.0.0.1:9/hook';
      const calls: Array<[string, Record<string, unknown>]> = [
        ['CreateTaskPushNotificationConfig', { taskId: asked.id, url, token: 't' }],
        ['GetTaskPushNotificationConfig', { taskId: asked.id, id: 'c1' }],
        ['ListTaskPushNotificationConfigs', { taskId: asked.id }],
        ['DeleteTaskPushNotificationConfig', { taskId: asked.id, id: 'c1' }],
        ['GetTaskPushNotificationConfig', { taskId: 'no-such-task', id: 'c1' }],
      ];
      for (const [method, params] of calls) {
        const out = await rpc(gw, 'remote', method, params);
        assert.equal(out.error?.code, PUSH_NOT_SUPPORTED, `${method}: ${JSON.stringify(out)}`);
      }
      // A send that asks for push is refused too, before anything runs.
      const withPush = {
        ...sendRequest(userMessage('go')),
        configuration: {
          acceptedOutputModes: [],
          returnImmediately: false,
          taskPushNotificationConfig: { tenant: '', id: '', taskId: '', url, token: '', authentication: undefined },
        },
      };
      await assert.rejects(client.sendMessage(withPush), /push/i);
      assert.deepEqual(await gw.store.listPushConfigs('remote', asked.id), []);
    });

    it('messageId: a follow-up may reuse the messageId of the send that made the task; a retried follow-up is not forwarded twice', async () => {
      const first = userMessage('ask');
      const asked = taskOf(await client.sendMessage(sendRequest(first)));
      assert.equal(asked.status?.state, TaskState.TASK_STATE_INPUT_REQUIRED);
      const answer = {
        ...userMessage('c.ts', undefined, first.messageId),
        taskId: asked.id,
        contextId: asked.contextId,
      };
      const done = taskOf(await client.sendMessage(sendRequest(answer)));
      assert.equal(done.id, asked.id);
      assert.equal(done.status?.state, TaskState.TASK_STATE_COMPLETED);
      // The same follow-up again is the one already sent: the task as it is, nothing forwarded.
      const again = taskOf(await client.sendMessage(sendRequest(structuredClone(answer))));
      assert.equal(again.id, asked.id);
      assert.equal(again.status?.state, TaskState.TASK_STATE_COMPLETED);
    });

    it('a message to a task that has ended: UnsupportedOperation (-32004), as on the local route (A2A §3.1.1)', async () => {
      const done = taskOf(await client.sendMessage(sendRequest(userMessage('go'))));
      assert.equal(done.status?.state, TaskState.TASK_STATE_COMPLETED);
      const late = { ...userMessage('more'), taskId: done.id, contextId: done.contextId };
      const out = await rpc(gw, 'remote', 'SendMessage', { message: Message.toJSON(late) });
      assert.equal(out.error?.code, UNSUPPORTED_OPERATION, JSON.stringify(out));
      assert.match(out.error?.message ?? '', new RegExp(`task ${done.id} has ended; start a new task`));
    });

    it('a message without a role is refused with InvalidParams, and no task is made', async () => {
      const listed = async (): Promise<number> =>
        (await gw.store.countTasks({ agent: 'remote', principal: LOCAL_PRINCIPAL })) +
        (await gw.store.listUnboundRequests()).length;
      const before = await listed();
      for (const role of [undefined, 'ROLE_UNSPECIFIED']) {
        for (const method of ['SendMessage', 'SendStreamingMessage']) {
          const message = { ...(Message.toJSON(userMessage('go')) as Record<string, unknown>), role };
          const out = await rpc(gw, 'remote', method, { message });
          assert.equal(out.error?.code, INVALID_PARAMS, `${method} role ${String(role)}: ${JSON.stringify(out)}`);
          assert.match(out.error?.message ?? '', /message\.role is required/);
        }
      }
      assert.equal(await listed(), before, 'no task, and no claim of one');
    });

    it('a follow-up message (the answer to input-required) streams the new turn', async () => {
      const asked = taskOf(await client.sendMessage(sendRequest(userMessage('ask'))));
      assert.equal(asked.status?.state, TaskState.TASK_STATE_INPUT_REQUIRED);
      const answer = { ...userMessage('b.ts'), taskId: asked.id, contextId: asked.contextId };
      const events = await bounded(collect(client.sendMessageStream(sendRequest(answer))), 'the follow-up stream');
      assert.ok(events.length >= 2, `got ${events.length} events`);
      assert.equal(stateOf(events[events.length - 1]), TaskState.TASK_STATE_COMPLETED);
      const said = events.find(
        (e) =>
          e.payload?.$case === 'statusUpdate' &&
          e.payload.value.status?.message?.parts[0]?.content?.value === 'got b.ts',
      );
      assert.ok(said, 'the remote saw the answer and its reply came through');
    });
  });
}

/** The fields of an A2A 1.0 AgentCard (its JSON schema allows no others). */
const CARD_1_0_FIELDS = new Set([
  'capabilities',
  'defaultInputModes',
  'defaultOutputModes',
  'description',
  'documentationUrl',
  'iconUrl',
  'name',
  'provider',
  'securityRequirements',
  'securitySchemes',
  'signatures',
  'skills',
  'supportedInterfaces',
  'version',
]);

describe('gateway conformance: which card form a request gets', () => {
  const dir = tempDir();
  let gw: RunningGateway;
  before(async () => {
    gw = await startGateway({ stateDir: dir.path, localAgents: [scriptedAgent()], log: () => undefined });
  });
  after(async () => {
    await gw.close();
    dir[Symbol.dispose]();
  });

  const read = async (
    path: string,
    headers: Record<string, string>,
  ): Promise<{ card: Record<string, unknown>; vary: string }> => {
    const res = await fetch(`${gw.url}${path}`, { headers });
    assert.equal(res.status, 200);
    return { card: (await res.json()) as Record<string, unknown>, vary: res.headers.get('vary') ?? '' };
  };
  const is10 = (card: Record<string, unknown>, what: string): void => {
    assert.ok(Array.isArray(card.supportedInterfaces), `${what}: no supportedInterfaces`);
    assert.deepEqual(
      Object.keys(card).filter((k) => !CARD_1_0_FIELDS.has(k)),
      [],
      `${what}: fields a 1.0 card does not have`,
    );
  };
  const is03 = (card: Record<string, unknown>, what: string): void => {
    assert.equal(card.protocolVersion, '0.3', what);
    assert.equal(typeof card.url, 'string', what);
  };

  it("the gateway's own card: a bare fetch gets the 1.0 form (it names no interfaces: it is an index)", async () => {
    const { card } = await read('/.well-known/agent-card.json', {});
    assert.deepEqual(
      Object.keys(card).filter((k) => !CARD_1_0_FIELDS.has(k)),
      [],
    );
  });

  for (const path of ['/a2a/echo/.well-known/agent-card.json']) {
    it(`${path}: a bare fetch (a 1.0 client, a conformance suite) gets a valid 1.0 card`, async () => {
      is10((await read(path, {})).card, 'no headers');
      is10((await read(path, { accept: '*/*' })).card, 'Accept: */*');
      is10((await read(path, { accept: 'application/json', 'A2A-Version': '1.0' })).card, 'A2A-Version 1.0');
    });

    it(`${path}: a 0.3 client (Accept: application/json and no version, or version 0.3) gets the 0.3 form`, async () => {
      const legacy = await read(path, { accept: 'application/json' });
      is03(legacy.card, 'Accept: application/json');
      assert.match(legacy.vary, /Accept/);
      is03((await read(path, { 'A2A-Version': '0.3' })).card, 'A2A-Version 0.3');
      is03((await read(`${path}?A2A-Version=0.3`, {})).card, 'the A2A-Version query parameter');
    });
  }

  it('messageId: the same message again is the same task; another message under the same messageId is a new task', async () => {
    const client = await clientFor(`${gw.url}/a2a/echo/.well-known/agent-card.json`, gw.token, { replay: false });
    const a = userMessage('first body');
    const t1 = taskOf(await client.sendMessage(sendRequest(a)));
    const retried = taskOf(await client.sendMessage(sendRequest(structuredClone(a))));
    assert.equal(retried.id, t1.id, 'a retried send makes no second task');
    const b = userMessage('second body', undefined, a.messageId);
    const t2 = taskOf(await client.sendMessage(sendRequest(b)));
    assert.notEqual(t2.id, t1.id, 'never answered with the first task');
    assert.equal(t2.history[0]?.parts[0]?.content?.value, 'second body');
    assert.equal(t2.status?.state, TaskState.TASK_STATE_COMPLETED);
  });

  it('the 1.0 card carries an ETag, and a request with it gets 304 Not Modified (A2A §8.6)', async () => {
    const first = await fetch(`${gw.url}/a2a/echo/.well-known/agent-card.json`, { headers: { 'A2A-Version': '1.0' } });
    const etag = first.headers.get('etag');
    assert.ok(etag, 'an ETag');
    await first.arrayBuffer();
    const again = await fetch(`${gw.url}/a2a/echo/.well-known/agent-card.json`, {
      headers: { 'A2A-Version': '1.0', 'If-None-Match': etag },
    });
    assert.equal(again.status, 304);
  });

  it('a 0.3 SDK client and a 1.0 one both complete a task on the route', async () => {
    for (const legacy of [true, false]) {
      const client = await clientFor(`${gw.url}/a2a/echo/.well-known/agent-card.json`, gw.token, {
        legacy,
        replay: false,
      });
      const t = taskOf(await client.sendMessage(sendRequest(userMessage(`hi ${String(legacy)}`))));
      assert.equal(t.status?.state, TaskState.TASK_STATE_COMPLETED, `legacy ${String(legacy)}`);
    }
  });
});

describe('gateway conformance: through the proxy route to a foreign 0.3 agent (no SDK)', () => {
  const dir = tempDir();
  let gw: RunningGateway;
  let remote: ForeignAgent;
  let client: Client;
  const logs: string[] = [];
  before(async () => {
    remote = await startForeignAgent();
    gw = await startGateway({
      stateDir: dir.path,
      remoteAgents: [
        {
          id: 'foreign',
          name: 'Foreign',
          description: 'proxied',
          url: remote.url,
          protocolBinding: 'JSONRPC',
          protocolVersion: '0.3',
          auth: { kind: 'none' },
          skills: [],
        },
      ],
      limits: { cancelGraceMs: 1000 },
      log: (l) => logs.push(l),
    });
    client = await clientFor(`${gw.url}/a2a/foreign/.well-known/agent-card.json`, gw.token, { replay: false });
  });
  after(async () => {
    await gw.close();
    await remote.close();
    dir[Symbol.dispose]();
  });

  it('a remote that reports progress, and its end, as full task snapshots: progress arrives as status updates and the end is signed', async () => {
    const events = await bounded(
      collect(client.sendMessageStream(sendRequest(userMessage('snapshots')))),
      'the snapshot stream',
    );
    assert.equal(events[0]?.payload?.$case, 'task');
    const progress = events.flatMap((e) =>
      e.payload?.$case === 'statusUpdate' && e.payload.value.status?.state === TaskState.TASK_STATE_WORKING
        ? [String(e.payload.value.status.message?.parts[0]?.content?.value)]
        : [],
    );
    assert.deepEqual(progress, ['reading', 'writing']);
    assert.ok(
      events.slice(1).every((e) => e.payload?.$case !== 'task'),
      'after the first event, updates only (A2A 1.0)',
    );
    const made = events.find((e) => e.payload?.$case === 'artifactUpdate');
    assert.equal(
      made?.payload?.$case === 'artifactUpdate' ? made.payload.value.artifact?.name : undefined,
      'changes.patch',
    );
    const end = events[events.length - 1];
    assert.equal(end?.payload?.$case, 'statusUpdate');
    assert.equal(stateOf(end), TaskState.TASK_STATE_COMPLETED);
    assert.equal(
      typeof (end?.payload?.value as { metadata?: Record<string, unknown> }).metadata?.['baton/resultEnvelope'],
      'string',
      'the result is signed',
    );
    const id = events[0]?.payload?.$case === 'task' ? events[0].payload.value.id : '';
    const task = await client.getTask({ tenant: '', id });
    assert.equal(task.status?.state, TaskState.TASK_STATE_COMPLETED);
    assert.equal(typeof task.metadata?.['baton/resultEnvelope'], 'string');
    assert.match(String(task.artifacts[0]?.parts[0]?.content?.value), /^diff --git a\/f/);
  });

  it("the 0.3 remote gets the caller's chain with this gateway's hop added once", async () => {
    const before = new Set(remote.tasks.keys());
    await bounded(
      collect(client.sendMessageStream(sendRequest(userMessage('snapshots', { [META.chain]: ['vscode:alice'] })))),
      'the snapshot stream',
    );
    const made = [...remote.tasks.values()].find((t) => !before.has(t.id));
    const chain = (made?.history[0]?.metadata as Record<string, unknown> | undefined)?.[META.chain];
    assert.ok(Array.isArray(chain), JSON.stringify(made?.history[0]));
    assert.equal(chain.length, 2, JSON.stringify(chain));
    assert.equal(chain[0], 'vscode:alice');
    assert.match(String(chain[1]), /^baton-gateway:[\w-]+\/foreign$/);
  });
});

describe("gateway: a remote's protocol version comes from its card unless the config names one", () => {
  const dir = tempDir();
  let gw: RunningGateway;
  let remote: ForeignAgent;
  const logs: string[] = [];
  before(async () => {
    remote = await startForeignAgent();
    const base = {
      name: 'Foreign',
      description: 'proxied',
      url: remote.url,
      protocolBinding: 'JSONRPC' as const,
      auth: { kind: 'none' as const },
      skills: [],
    };
    gw = await startGateway({
      stateDir: dir.path,
      remoteAgents: [
        { id: 'follows-card', ...base },
        { id: 'says-1-0', ...base, protocolVersion: '1.0' },
      ],
      log: (l) => logs.push(l),
    });
  });
  after(async () => {
    await gw.close();
    await remote.close();
    dir[Symbol.dispose]();
  });

  /** The remote's card has been read once the route card lists its skill. */
  const cardRead = (agent: string): Promise<void> =>
    cardSettles(gw, agent, (c) => JSON.stringify(c).includes('"id":"x"'));

  it('no protocolVersion in the config: a remote whose card says 0.3 is spoken to in 0.3', async () => {
    await cardRead('follows-card');
    const client = await clientFor(`${gw.url}/a2a/follows-card/.well-known/agent-card.json`, gw.token, {
      replay: false,
    });
    const events = await bounded(
      collect(client.sendMessageStream(sendRequest(userMessage('snapshots')))),
      'the stream',
    );
    assert.equal(stateOf(events[events.length - 1]), TaskState.TASK_STATE_COMPLETED);
    assert.ok(remote.calls.includes('message/stream'));
  });

  it('a config that says 1.0 to a 0.3 remote: the config is followed, and the error and the log say what the card says', async () => {
    await cardRead('says-1-0');
    const client = await clientFor(`${gw.url}/a2a/says-1-0/.well-known/agent-card.json`, gw.token, { replay: false });
    await assert.rejects(
      client.sendMessage(sendRequest(userMessage('snapshots'))),
      /protocolVersion 1\.0, but its card offers A2A 0\.3/,
    );
    assert.ok(
      logs.some((l) => l.includes('says-1-0') && l.includes('its card offers A2A 0.3')),
      logs.join('\n'),
    );
  });
});

for (const version of ['0.3', '1.0'] as const) {
  describe(`gateway proxy: a ${version} remote whose first event cannot be read`, () => {
    const dir = tempDir();
    let gw: RunningGateway;
    let remote: ForeignAgent;
    before(async () => {
      remote = await startForeignAgent();
      gw = await startGateway({
        stateDir: dir.path,
        remoteAgents: [
          {
            id: 'foreign',
            name: 'Foreign',
            description: 'proxied',
            url: remote.url,
            protocolBinding: 'JSONRPC',
            protocolVersion: version,
            auth: { kind: 'none' },
            skills: [],
          },
        ],
        limits: { cancelGraceMs: 2000 },
        log: () => undefined,
      });
    });
    after(async () => {
      await gw.close();
      await remote.close();
      dir[Symbol.dispose]();
    });

    it('cancels the task that event names on the remote, and the error says so', async () => {
      const client = await clientFor(`${gw.url}/a2a/foreign/.well-known/agent-card.json`, gw.token, { replay: false });
      await assert.rejects(
        client.sendMessage(sendRequest(userMessage('broken'))),
        /first event the gateway cannot read .*its task foreign-1 there was canceled/,
      );
      assert.equal(remote.tasks.get('foreign-1')?.state, 'canceled', 'not left running unfollowed');
      assert.deepEqual(
        (
          await client.listTasks({
            tenant: '',
            contextId: '',
            status: 0,
            pageToken: '',
            statusTimestampAfter: undefined,
            pageSize: 10,
          })
        ).tasks,
        [],
        'no task recorded here',
      );
    });
  });
}

describe('gateway conformance: the HTTP+JSON binding answers application/json (A2A §11.1)', () => {
  const dir = tempDir();
  let gw: RunningGateway;
  before(async () => {
    gw = await startGateway({ stateDir: dir.path, localAgents: [scriptedAgent()], log: () => undefined });
  });
  after(async () => {
    await gw.close();
    dir[Symbol.dispose]();
  });

  const call = (method: string, path: string, body?: unknown): Promise<Response> =>
    fetch(`${gw.url}/a2a/echo${path}`, {
      method,
      headers: { authorization: `Bearer ${gw.token}`, 'A2A-Version': '1.0', 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });

  it('a result and an error both come as application/json, the error in the AIP-193 shape', async () => {
    const sent = await call('POST', '/message:send', {
      message: { messageId: 'ct-1', role: 'ROLE_USER', parts: [{ text: 'hi' }] },
    });
    assert.equal(sent.status, 200);
    assert.match(sent.headers.get('content-type') ?? '', /^application\/json/);
    assert.ok(((await sent.json()) as { task?: { id?: string } }).task?.id);
    const missing = await call('GET', '/tasks/no-such-task');
    assert.equal(missing.status, 404);
    assert.match(missing.headers.get('content-type') ?? '', /^application\/json/);
    const err = ((await missing.json()) as { error?: { code?: number; status?: string; message?: string } }).error;
    assert.equal(err?.code, 404);
    assert.equal(typeof err?.status, 'string');
    assert.equal(typeof err?.message, 'string');
  });

  it('A2A errors get the HTTP status of the A2A 1.0.1 mapping table (§5.4): TaskNotCancelable is 400, not 409', async () => {
    // A2A 1.0.0 listed 409 Conflict for TaskNotCancelableError (and 415 and 502 for two others); 1.0.1
    // (a2aproject/A2A 757f0ec, "fix(spec): recent transcoding-related error changes") maps every A2A
    // error to the HTTP status of its google.rpc.Code: 400 but for TaskNotFound (404) and
    // InvalidAgentResponse (500). The SDK's REST table is that one; a suite that expects 409 follows 1.0.0.
    const sent = await call('POST', '/message:send', {
      message: { messageId: 'ct-2', role: 'ROLE_USER', parts: [{ text: 'hi' }] },
    });
    const id = ((await sent.json()) as { task?: { id?: string } }).task?.id ?? '';
    const expect = async (res: Response, status: number, reason: string): Promise<void> => {
      const body = (await res.json()) as { error?: { code?: number; details?: Array<{ reason?: string }> } };
      assert.equal(res.status, status, JSON.stringify(body));
      assert.equal(body.error?.code, status);
      assert.equal(body.error?.details?.[0]?.reason, reason, JSON.stringify(body));
    };
    await expect(await call('POST', `/tasks/${id}:cancel`), 400, 'TASK_NOT_CANCELABLE');
    await expect(await call('GET', '/tasks/no-such-task'), 404, 'TASK_NOT_FOUND');
    await expect(
      await call('POST', '/message:send', {
        message: { messageId: 'ct-3', role: 'ROLE_USER', taskId: id, parts: [{ text: 'more' }] },
      }),
      400,
      'UNSUPPORTED_OPERATION',
    );
  });
});

describe('gateway conformance: JSON-RPC requests and messages the A2A TCK sends malformed', () => {
  const gw = suiteGateway();

  const post = async (
    body: unknown,
    headers: Record<string, string> = {},
  ): Promise<{
    status: number;
    body: { jsonrpc?: string; id?: unknown; error?: { code: number; message: string } };
  }> => {
    const res = await rpcPost(`${gw.url}/a2a/echo`, JSON.stringify(body), {
      Authorization: `Bearer ${gw.token}`,
      ...headers,
    });
    return { status: res.status, body: (await res.json()) as { error?: { code: number; message: string } } };
  };

  it('a body that is not a JSON-RPC 2.0 request object is an Invalid Request (-32600), with its id when it has a readable one', async () => {
    const cases: Array<[string, unknown, unknown, RegExp]> = [
      ['jsonrpc "aaa"', { jsonrpc: 'aaa', method: 'SendMessage', params: {} }, null, /"jsonrpc" must be "2\.0"/],
      ['jsonrpc "1.0", with an id', { jsonrpc: '1.0', id: 'r1', method: 'GetTask', params: {} }, 'r1', /"jsonrpc"/],
      ['no jsonrpc', { id: 7, method: 'GetTask', params: {} }, 7, /"jsonrpc" must be "2\.0"/],
      ['no method', { jsonrpc: '2.0', id: 8, params: {} }, 8, /"method" must be a non-empty string/],
      ['a method that is not a string', { jsonrpc: '2.0', id: 9, method: 5, params: {} }, 9, /"method"/],
      ['an object id', { jsonrpc: '2.0', id: { bad: 'type' }, method: 'SendMessage', params: {} }, null, /"id" must/],
      ['an array id', { jsonrpc: '2.0', id: [1], method: 'SendMessage', params: {} }, null, /"id" must/],
      ['a fractional id', { jsonrpc: '2.0', id: 1.5, method: 'SendMessage', params: {} }, null, /"id" must/],
      ['a batch', [{ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'x' } }], null, /batch/],
      ['a JSON string', 'GetTask', null, /not a JSON-RPC request object/],
    ];
    for (const headers of [{ 'A2A-Version': '1.0' }, { 'A2A-Version': '' }]) {
      for (const [what, body, id, message] of cases) {
        const { status, body: out } = await post(body, headers);
        const label = `${what} (A2A-Version ${JSON.stringify(headers['A2A-Version'])}): ${JSON.stringify(out)}`;
        assert.equal(status, 200, label);
        assert.equal(out.jsonrpc, '2.0', label);
        assert.equal(out.error?.code, INVALID_REQUEST, label);
        assert.equal(out.id, id, label);
        assert.match(out.error?.message ?? '', message, label);
      }
    }
  });

  it('what the envelope does not decide keeps its own code: an unknown method -32601, bad params -32602', async () => {
    const unknown = await post({ jsonrpc: '2.0', id: '3', method: 'SendMessageXXX', params: {} });
    assert.equal(unknown.body.error?.code, -32601, JSON.stringify(unknown.body));
    assert.equal(unknown.body.id, '3');
    const badParams = await post({ jsonrpc: '2.0', id: '4', method: 'SendMessage', params: { '': 'not_a_dict' } });
    assert.equal(badParams.body.error?.code, INVALID_PARAMS, JSON.stringify(badParams.body));
    const noId = await post({ jsonrpc: '2.0', method: 'GetTask', params: { id: 'no-such-task' } });
    assert.equal(noId.body.error?.code, -32001, 'a request without an id is served');
  });

  it('a message without a role (or an unspecified one), or a send asking for a negative or fractional historyLength, is refused with InvalidParams', async () => {
    const listed = (): Promise<number> => gw.store.countTasks({ agent: 'echo', principal: LOCAL_PRINCIPAL });
    const before = await listed();
    for (const role of [undefined, 'ROLE_UNSPECIFIED']) {
      for (const method of ['SendMessage', 'SendStreamingMessage']) {
        const message = { ...(Message.toJSON(userMessage('go')) as Record<string, unknown>), role };
        const { body } = await post({ jsonrpc: '2.0', id: 1, method, params: { message } }, { 'A2A-Version': '1.0' });
        assert.equal(body.error?.code, INVALID_PARAMS, `${method} role ${String(role)}: ${JSON.stringify(body)}`);
        assert.match(body.error?.message ?? '', /message\.role is required: send "ROLE_USER"/);
      }
      for (const path of ['/message:send', '/message:stream']) {
        const res = await fetch(`${gw.url}/a2a/echo${path}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${gw.token}`, 'A2A-Version': '1.0', 'content-type': 'application/json' },
          body: JSON.stringify({ message: { messageId: `no-role-${path}`, role, parts: [{ text: 'hi' }] } }),
        });
        const text = await res.text();
        assert.equal(res.status, 400, `${path} role ${String(role)}: ${text}`);
        assert.match(text, /message\.role is required/);
      }
    }
    assert.equal(await listed(), before, 'no task was made');
    // The history a send asks back follows GetTask's rule.
    for (const historyLength of [-1, 1.5]) {
      for (const method of ['SendMessage', 'SendStreamingMessage']) {
        const { body } = await post(
          {
            jsonrpc: '2.0',
            id: 3,
            method,
            params: { message: Message.toJSON(userMessage('go')), configuration: { historyLength } },
          },
          { 'A2A-Version': '1.0' },
        );
        assert.equal(
          body.error?.code,
          INVALID_PARAMS,
          `${method} historyLength ${historyLength}: ${JSON.stringify(body)}`,
        );
        assert.match(body.error?.message ?? '', /historyLength must be a whole number, 0 or more/);
      }
    }
    assert.equal(await listed(), before, 'no task was made');
    // The same message with its role goes through.
    const ok = await post(
      { jsonrpc: '2.0', id: 2, method: 'SendMessage', params: { message: Message.toJSON(userMessage('go')) } },
      { 'A2A-Version': '1.0' },
    );
    assert.equal(ok.body.error, undefined, JSON.stringify(ok.body));
  });
});

describe('gateway conformance: the A2A version a request names, in the header or in the query (A2A §3.6)', () => {
  const gw = suiteGateway();

  const rpcAt = async (
    query: string,
    headers: Record<string, string>,
    method: string,
    params: Record<string, unknown>,
  ): Promise<{ result?: Record<string, unknown>; error?: { code: number; message: string } }> => {
    const res = await fetch(`${gw.url}/a2a/echo${query}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${gw.token}`, ...headers },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    });
    return (await res.json()) as { result?: Record<string, unknown>; error?: { code: number; message: string } };
  };
  const send = (id: string): Record<string, unknown> => ({
    message: { messageId: id, role: 'ROLE_USER', parts: [{ text: 'hi' }] },
  });

  it('JSON-RPC: ?A2A-Version=1.0 is served as 1.0, as the header is; the header wins when both are given', async () => {
    const byQuery = await rpcAt('?A2A-Version=1.0', {}, 'SendMessage', send('v-q-1'));
    assert.equal(byQuery.error, undefined, JSON.stringify(byQuery));
    const task = byQuery.result?.task as { id?: string } | undefined;
    assert.ok(task?.id, JSON.stringify(byQuery));
    const got = await rpcAt('?A2A-Version=1.0', {}, 'GetTask', { id: task.id });
    assert.equal((got.result as { id?: string } | undefined)?.id, task.id, JSON.stringify(got));
    // A 0.3 header with a 1.0 query: the header decides, and 0.3 has no method "GetTask".
    const both = await rpcAt('?A2A-Version=1.0', { 'A2A-Version': '0.3' }, 'GetTask', { id: task.id });
    assert.equal(both.error?.code, -32601, JSON.stringify(both));
    assert.match(both.error?.message ?? '', /"GetTask" is an A2A 1\.0 method, and this request says A2A-Version 0\.3/);
    // A version the route does not serve, named in the query, is refused as it is in the header.
    const unknown = await rpcAt('?A2A-Version=9.9', {}, 'GetTask', { id: task.id });
    assert.equal(unknown.error?.code, -32009, JSON.stringify(unknown));
  });

  it('JSON-RPC: a 1.0 method without any version gets Method not found, saying which header to send', async () => {
    for (const method of ['SendMessage', 'GetTask', 'ListTasks', 'SubscribeToTask']) {
      const out = await rpcAt('', {}, method, method === 'SendMessage' ? send(`v-none-${method}`) : { id: 'x' });
      assert.equal(out.error?.code, -32601, `${method}: ${JSON.stringify(out)}`);
      assert.match(
        out.error?.message ?? '',
        new RegExp(`"${method}" is an A2A 1\\.0 method, and this request names no A2A-Version.*"A2A-Version: 1\\.0"`),
      );
    }
    // The 0.3 methods are still served without a version.
    const legacy = await rpcAt('', {}, 'message/send', {
      message: { kind: 'message', messageId: 'v-legacy-1', role: 'user', parts: [{ kind: 'text', text: 'hi' }] },
    });
    assert.equal(legacy.error, undefined, JSON.stringify(legacy));
    assert.equal(legacy.result?.kind, 'task', JSON.stringify(legacy));
  });

  it('HTTP+JSON: ?A2A-Version=1.0 is served as 1.0, for a send, a read, a list and a stream; a version the route does not serve is refused', async () => {
    const auth = { authorization: `Bearer ${gw.token}`, 'content-type': 'application/json' };
    for (const [method, path] of [
      ['POST', '/message:send'],
      ['POST', '/message:stream'],
      ['GET', '/tasks'],
    ] as const) {
      const res = await fetch(`${gw.url}/a2a/echo${path}?A2A-Version=9.9`, {
        method,
        headers: auth,
        ...(method === 'POST' ? { body: JSON.stringify(send(`v-rest-9-${path}`)) } : {}),
      });
      const text = await res.text();
      assert.equal(res.status, 400, `${path}: ${text}`);
      assert.match(text, /version '9\.9' is not supported/, path);
    }
    const sent = await fetch(`${gw.url}/a2a/echo/message:send?A2A-Version=1.0`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify(send('v-rest-1')),
    });
    const sentBody = (await sent.json()) as { task?: { id?: string } };
    assert.equal(sent.status, 200, JSON.stringify(sentBody));
    const id = sentBody.task?.id ?? '';
    assert.ok(id, JSON.stringify(sentBody));
    const got = await fetch(`${gw.url}/a2a/echo/tasks/${id}?A2A-Version=1.0&historyLength=1`, { headers: auth });
    const gotBody = (await got.json()) as { id?: string; history?: unknown[] };
    assert.equal(got.status, 200, JSON.stringify(gotBody));
    assert.equal(gotBody.id, id);
    const listed = await fetch(`${gw.url}/a2a/echo/tasks?A2A-Version=1.0&pageSize=5`, { headers: auth });
    const listBody = (await listed.json()) as { tasks?: Array<{ id?: string }> };
    assert.equal(listed.status, 200, JSON.stringify(listBody));
    assert.ok(
      listBody.tasks?.some((t) => t.id === id),
      JSON.stringify(listBody),
    );
    const stream = await fetch(`${gw.url}/a2a/echo/message:stream?A2A-Version=1.0`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify(send('v-rest-2')),
    });
    assert.equal(stream.status, 200);
    assert.match(stream.headers.get('content-type') ?? '', /^text\/event-stream/);
    const text = await stream.text();
    assert.match(text, /"statusUpdate"|"task"/, text.slice(0, 400));
  });
});
