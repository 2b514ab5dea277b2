/**
 * Differential tests: one SDK agent (the `@a2a-js/sdk` server itself, differentialAgent.ts) is asked
 * the same thing directly and through the gateway's proxy routes to it (over JSON-RPC and over
 * HTTP+JSON), with raw HTTP and with the SDK's own clients (JSON-RPC and HTTP+JSON, A2A 1.0 and 0.3),
 * and the answers must be the same once what differs by design is set aside (`normalize`): ids and
 * timestamps, the gateway's `baton/*` metadata, the text of error messages (codes, reasons and HTTP
 * statuses are compared), `application/json` for `application/a2a+json` (A2A §11.1), SSE `id:` lines,
 * opaque page tokens, and the agent's status messages in a task's history (the gateway's snapshot keeps
 * the status, not every message an agent reported; docs/conformance.md). Where the gateway answers
 * otherwise on purpose (it is stricter than the SDK's server), the last block says what it answers.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import {
  AgentCard,
  ListTasksResponse,
  Message,
  Role,
  StreamResponse,
  Task,
  TaskPushNotificationConfig,
  TaskState,
} from '@a2a-js/sdk';
import type { SendMessageRequest } from '@a2a-js/sdk';
import { ClientFactory, JsonRpcTransportFactory, RestTransportFactory } from '@a2a-js/sdk/client';
import type { Client } from '@a2a-js/sdk/client';
import type { RunningGateway } from '../../../src/gateway/server';
import { PROXY_ROUTES, startProxyGateway, startSdkAgent } from './differentialAgent';
import type { SdkAgent } from './differentialAgent';
import { bearerFetch, bounded } from './helpers';

const UUIDS = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;

/**
 * An answer with what differs by design set aside: each id (a UUID, also inside a text such as the
 * `reply-<messageId>` of a Message answer) becomes its place of first appearance, timestamps, `baton/*`
 * metadata, error message texts and page tokens go, and a history keeps its user messages.
 */
function normalize(v: unknown, ids: Map<string, string> = new Map()): unknown {
  if (Array.isArray(v)) return v.map((x) => normalize(x, ids));
  if (v && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
      if (k === 'timestamp') continue;
      if (k === 'message' && typeof x === 'string') continue; // an error's text
      if (k === 'nextPageToken') {
        out[k] = Boolean(x);
        continue;
      }
      if (k === 'history' && Array.isArray(x)) {
        out[k] = normalize(
          x.filter((m) => (m as { role?: unknown }).role === 'ROLE_USER'),
          ids,
        );
        continue;
      }
      if (k === 'metadata' && x && typeof x === 'object') {
        const kept = Object.entries(x).filter(([mk]) => !mk.startsWith('baton/'));
        if (kept.length) out[k] = normalize(Object.fromEntries(kept), ids);
        continue;
      }
      out[k] = normalize(x, ids);
    }
    return out;
  }
  if (typeof v === 'string')
    return v.replace(UUIDS, (id) => {
      if (!ids.has(id)) ids.set(id, `<id${ids.size}>`);
      return ids.get(id) ?? id;
    });
  return v;
}

interface Answer {
  readonly status: number;
  /** `json` (application/json or application/a2a+json), `sse`, or the content type as sent. */
  readonly type: string;
  /** The JSON body, or the data of each SSE event. */
  readonly body: unknown;
}

async function answerOf(res: Response): Promise<Answer> {
  return answerFrom(res, await res.text());
}

function answerFrom(res: Response, text: string): Answer {
  const ct = (res.headers.get('content-type') ?? '').split(';')[0].trim();
  if (ct === 'text/event-stream') {
    const events = text
      .split('\n\n')
      .filter((b) => b.trim() && !b.startsWith(':'))
      .map(
        (b) =>
          JSON.parse(
            b
              .split('\n')
              .filter((l) => l.startsWith('data: '))
              .map((l) => l.slice(6))
              .join(''),
          ) as unknown,
      );
    return { status: res.status, type: 'sse', body: events };
  }
  const json = ct === 'application/json' || ct === 'application/a2a+json';
  return { status: res.status, type: json ? 'json' : ct, body: json && text ? (JSON.parse(text) as unknown) : text };
}

function userMessage(text: string, more: Partial<Message> = {}): Message {
  return {
    messageId: randomUUID(),
    contextId: '',
    taskId: '',
    role: Role.ROLE_USER,
    parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' }],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
    ...more,
  };
}

function sendRequest(msg: Message, returnImmediately = false): SendMessageRequest {
  return {
    tenant: '',
    message: msg,
    configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately },
    metadata: undefined,
  };
}

/** A message in the wire JSON a raw request sends. */
const wireMessage = (text: string, more: Record<string, unknown> = {}): Record<string, unknown> => ({
  messageId: randomUUID(),
  role: 'ROLE_USER',
  parts: [{ text }],
  ...more,
});

/** What the SDK's server logs about answers these tests ask for on purpose (errors, refused versions). */
const SDK_NOISE = [
  'Pre-stream error for request',
  'Unhandled error in JSON-RPC POST handler',
  'Error during SSE streaming',
  'Legacy SSE streaming error',
  'SSE streaming error',
];

let agent: SdkAgent;
let gw: RunningGateway & { dispose(): Promise<void> };
let hook: Server;
/** A webhook that takes every delivery (both sides deliver to it). */
let hookUrl = '';
const consoleError = console.error;

before(async () => {
  console.error = (...args: unknown[]) => {
    if (typeof args[0] === 'string' && SDK_NOISE.some((p) => (args[0] as string).startsWith(p))) return;
    consoleError(...args);
  };
  hook = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(204).end());
  });
  await new Promise<void>((r) => hook.listen(0, '127.0.0.1', () => r()));
  hookUrl = `http://127.0.0.1:${(hook.address() as AddressInfo).port}/hook`;
  agent = await startSdkAgent({ push: true });
  gw = await startProxyGateway(agent);
  // The route cards offer push once the remote's own card has been read (in the background).
  for (const route of Object.keys(PROXY_ROUTES)) {
    for (let i = 0; ; i++) {
      const card = (await (
        await fetch(`${gw.url}/a2a/${route}/.well-known/agent-card.json`, { headers: { 'A2A-Version': '1.0' } })
      ).json()) as { capabilities?: { pushNotifications?: boolean } };
      if (card.capabilities?.pushNotifications) break;
      assert.ok(i < 500, `the card of /a2a/${route} never offered push`);
      await new Promise((r) => setTimeout(r, 10));
    }
  }
});

after(async () => {
  await gw.dispose();
  await agent.close();
  await new Promise<void>((r) => hook.close(() => r()));
  console.error = consoleError;
});

type SideName = 'sdk' | 'gw';
interface Side {
  readonly name: SideName;
  readonly rpc: string;
  readonly rest: string;
  readonly headers: Record<string, string>;
}

function sidesOf(route: string): readonly [Side, Side] {
  return [
    { name: 'sdk', rpc: agent.rpc, rest: agent.rest, headers: {} },
    {
      name: 'gw',
      rpc: `${gw.url}/a2a/${route}`,
      rest: `${gw.url}/a2a/${route}`,
      headers: { authorization: `Bearer ${gw.token}` },
    },
  ];
}

/** Runs `f` against the SDK server, then the gateway route, and asserts the answers are the same. */
async function same<T>(
  route: string,
  what: string,
  f: (side: Side) => Promise<T>,
): Promise<{ readonly sdk: T; readonly gw: T }> {
  const [s, g] = sidesOf(route);
  const sdk = await f(s);
  const got = await f(g);
  assert.deepEqual(normalize(got), normalize(sdk), `${what}: the gateway answered otherwise than the SDK's server`);
  return { sdk, gw: got };
}

const rpc = async (
  side: Side,
  method: string,
  params: unknown,
  headers: Record<string, string> = {},
): Promise<Answer> =>
  answerOf(
    await fetch(side.rpc, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'A2A-Version': '1.0', ...side.headers, ...headers },
      body: JSON.stringify({ jsonrpc: '2.0', id: 7, method, params }),
    }),
  );

const rawRpc = async (side: Side, body: string, headers: Record<string, string> = {}): Promise<Answer> =>
  answerOf(
    await fetch(side.rpc, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'A2A-Version': '1.0', ...side.headers, ...headers },
      body,
    }),
  );

const rest = async (
  side: Side,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Answer> =>
  answerOf(
    await fetch(`${side.rest}${path}`, {
      method,
      headers: {
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        'A2A-Version': '1.0',
        ...side.headers,
        ...headers,
      },
      ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
    }),
  );

/** The task of a SendMessage answer (JSON-RPC `result.task`, HTTP+JSON `task`) or of a GetTask one. */
function taskIn(a: Answer): { id: string; contextId: string } {
  const b = a.body as { result?: { task?: Task; id?: string; contextId?: string }; task?: Task };
  const t = (b.result?.task ?? b.task ?? b.result) as { id?: string; contextId?: string } | undefined;
  assert.ok(t?.id, `no task in ${JSON.stringify(a.body)}`);
  return { id: t.id, contextId: t.contextId ?? '' };
}

/**
 * Resolves once the side has recorded the running task as working: the SDK's server (its GetTask), the
 * gateway (its own store, which a subscription reads first). A subscription then begins in the same state.
 */
async function working(side: Side, route: string, id: string): Promise<void> {
  for (let i = 0; i < 1000; i++) {
    const state =
      side.name === 'gw'
        ? (await gw.store.getTask(route, id))?.state
        : TaskState[
            ((await rpc(side, 'GetTask', { id })).body as { result?: { status?: { state?: string } } }).result?.status
              ?.state as keyof typeof TaskState
          ];
    if (state === TaskState.TASK_STATE_WORKING) return;
    await new Promise((r) => setTimeout(r, 5));
  }
  assert.fail(`task ${id} never became working on the ${side.name} side`);
}

/** A raw SubscribeToTask (JSON-RPC) whose `onFirst` runs when its first event has arrived. */
async function subscribeRaw(side: Side, id: string, onFirst: () => void): Promise<Answer> {
  const res = await fetch(side.rpc, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'A2A-Version': '1.0', ...side.headers },
    body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'SubscribeToTask', params: { id } }),
  });
  assert.ok(res.body);
  const decoder = new TextDecoder();
  let text = '';
  let first = false;
  for await (const chunk of res.body) {
    text += decoder.decode(chunk as Uint8Array, { stream: true });
    if (!first && text.includes('\n\n')) {
      first = true;
      onFirst();
    }
  }
  return answerFrom(res, text);
}

/** The SSE events' payload kinds (`task`, `statusUpdate`, …) of a JSON-RPC or HTTP+JSON stream. */
function kindsOf(a: Answer): string[] {
  assert.equal(a.type, 'sse', JSON.stringify(a.body));
  return (a.body as Array<Record<string, unknown>>).map((e) => Object.keys((e.result ?? e) as object)[0] ?? '');
}

for (const route of Object.keys(PROXY_ROUTES)) {
  describe(`differential, raw HTTP: the SDK's server and the gateway route proxying to it over ${PROXY_ROUTES[route as keyof typeof PROXY_ROUTES]}`, () => {
    it('SendMessage: a task to completion, a Message answer, a failed task, history cut to 0', async () => {
      await same(route, 'go', (s) => rpc(s, 'SendMessage', { message: wireMessage('go') }));
      await same(route, 'reply', (s) => rpc(s, 'SendMessage', { message: wireMessage('reply') }));
      await same(route, 'fail', (s) => rpc(s, 'SendMessage', { message: wireMessage('fail') }));
      await same(route, 'historyLength 0', (s) =>
        rpc(s, 'SendMessage', { message: wireMessage('go'), configuration: { historyLength: 0 } }),
      );
      await same(route, 'every part kind, and metadata', (s) =>
        rpc(s, 'SendMessage', {
          message: wireMessage('go', {
            parts: [
              { text: 'go', metadata: { k: 1 } },
              { data: { a: [1, 2], b: null }, mediaType: 'application/json' },
              { raw: 'aGVsbG8=', filename: 'h.bin', mediaType: 'application/octet-stream' },
              { url: 'https://example.com/x.png', filename: 'x.png', mediaType: 'image/png' },
            ],
            metadata: { m: 'x' },
            extensions: ['urn:x'],
          }),
          metadata: { top: 1 },
        }),
      );
      await same(route, 'HTTP+JSON go', (s) => rest(s, 'POST', '/message:send', { message: wireMessage('go') }));
      await same(route, 'HTTP+JSON reply', (s) => rest(s, 'POST', '/message:send', { message: wireMessage('reply') }));
    });

    it('a message into an existing context (contextId, no taskId) makes a new task there', async () => {
      const first = await same(route, 'go', (s) => rpc(s, 'SendMessage', { message: wireMessage('go') }));
      const next = await same(route, 'same context', (s) =>
        rpc(s, 'SendMessage', { message: wireMessage('go', { contextId: taskIn(first[s.name]).contextId }) }),
      );
      for (const side of ['sdk', 'gw'] as const) {
        assert.equal(taskIn(next[side]).contextId, taskIn(first[side]).contextId, side);
        assert.notEqual(taskIn(next[side]).id, taskIn(first[side]).id, side);
      }
    });

    it('an input-required turn answered by a follow-up; then the task has ended for further messages', async () => {
      const asked = await same(route, 'ask', (s) => rpc(s, 'SendMessage', { message: wireMessage('ask') }));
      const follow = (s: Side, text: string): Promise<Answer> =>
        rpc(s, 'SendMessage', { message: wireMessage(text, { taskId: taskIn(asked[s.name]).id }) });
      await same(route, 'the answer', (s) => follow(s, 'a.ts'));
      await same(route, 'a message to the ended task', (s) => follow(s, 'more'));
      await same(route, 'GetTask of the ended task', (s) => rpc(s, 'GetTask', { id: taskIn(asked[s.name]).id }));
      await same(route, 'GetTask, historyLength 0', (s) =>
        rpc(s, 'GetTask', { id: taskIn(asked[s.name]).id, historyLength: 0 }),
      );
      await same(route, 'HTTP+JSON GetTask', (s) => rest(s, 'GET', `/tasks/${taskIn(asked[s.name]).id}`));
    });

    it('a follow-up message streams a turn that begins with the task (A2A §3.1.2), over both bindings', async () => {
      // Before, the gateway's stream of a follow-up began with the turn's first update.
      const viaRpc = await same(route, 'JSON-RPC', async (s) => {
        const asked = taskIn(await rpc(s, 'SendMessage', { message: wireMessage('ask') }));
        return rpc(s, 'SendStreamingMessage', {
          message: wireMessage('b.ts', { taskId: asked.id, contextId: asked.contextId }),
        });
      });
      assert.deepEqual(kindsOf(viaRpc.gw), ['task', 'statusUpdate', 'artifactUpdate', 'statusUpdate']);
      const viaRest = await same(route, 'HTTP+JSON', async (s) => {
        const asked = taskIn(await rest(s, 'POST', '/message:send', { message: wireMessage('ask') }));
        return rest(s, 'POST', '/message:stream', {
          message: wireMessage('c.ts', { taskId: asked.id, contextId: asked.contextId }),
          configuration: { historyLength: 1 },
        });
      });
      assert.deepEqual(kindsOf(viaRest.gw), ['task', 'statusUpdate', 'artifactUpdate', 'statusUpdate']);
      // The task as the answer found it: still waiting, the answer the last of its history.
      const first = (
        viaRest.gw.body as Array<{ task: { status: { state: string }; history: Array<{ parts: unknown }> } }>
      )[0];
      assert.equal(first.task.status.state, 'TASK_STATE_INPUT_REQUIRED');
      assert.deepEqual(
        first.task.history.map((m) => m.parts),
        [[{ text: 'c.ts' }]],
      );
    });

    it('GetTask and CancelTask: an unknown id, an empty id, a finished task', async () => {
      const done = await same(route, 'go', (s) => rpc(s, 'SendMessage', { message: wireMessage('go') }));
      await same(route, 'GetTask unknown', (s) => rpc(s, 'GetTask', { id: 'no-such-task' }));
      await same(route, 'GetTask empty id', (s) => rpc(s, 'GetTask', { id: '' }));
      await same(route, 'CancelTask unknown', (s) => rpc(s, 'CancelTask', { id: 'no-such-task' }));
      await same(route, 'CancelTask finished', (s) => rpc(s, 'CancelTask', { id: taskIn(done[s.name]).id }));
      await same(route, 'HTTP+JSON GetTask unknown', (s) => rest(s, 'GET', '/tasks/no-such-task'));
      await same(route, 'HTTP+JSON bad historyLength', (s) =>
        rest(s, 'GET', `/tasks/${taskIn(done[s.name]).id}?historyLength=abc`),
      );
      await same(route, 'HTTP+JSON CancelTask unknown', (s) => rest(s, 'POST', '/tasks/no-such-task:cancel', {}));
      await same(route, 'HTTP+JSON CancelTask finished', (s) =>
        rest(s, 'POST', `/tasks/${taskIn(done[s.name]).id}:cancel`, {}),
      );
    });

    it('CancelTask of a running task: canceled, and the agent saw it', async () => {
      await same(route, 'JSON-RPC', async (s) => {
        const held = taskIn(
          await rpc(s, 'SendMessage', {
            message: wireMessage(`hold ${randomUUID()}`),
            configuration: { returnImmediately: true },
          }),
        );
        return rpc(s, 'CancelTask', { id: held.id });
      });
      await same(route, 'HTTP+JSON', async (s) => {
        const held = taskIn(
          await rest(s, 'POST', '/message:send', {
            message: wireMessage(`hold ${randomUUID()}`),
            configuration: { returnImmediately: true },
          }),
        );
        return rest(s, 'POST', `/tasks/${held.id}:cancel`, {});
      });
    });

    it('ListTasks: by context and status, one page at a time, and what is out of range', async () => {
      const made = await same(route, 'go', (s) => rpc(s, 'SendMessage', { message: wireMessage('go') }));
      const ctx = (s: Side): string => taskIn(made[s.name]).contextId;
      await same(route, 'a failed task in the context', (s) =>
        rpc(s, 'SendMessage', { message: wireMessage('fail', { contextId: ctx(s) }) }),
      );
      await same(route, 'by context, page 1', (s) => rpc(s, 'ListTasks', { contextId: ctx(s), pageSize: 1 }));
      await same(route, 'by context, page 2', async (s) => {
        const p1 = (await rpc(s, 'ListTasks', { contextId: ctx(s), pageSize: 1 })).body as {
          result: { nextPageToken: string };
        };
        return rpc(s, 'ListTasks', { contextId: ctx(s), pageSize: 1, pageToken: p1.result.nextPageToken });
      });
      await same(route, 'by context and status', (s) =>
        rpc(s, 'ListTasks', { contextId: ctx(s), status: 'TASK_STATE_FAILED' }),
      );
      await same(route, 'with artifacts, no history', (s) =>
        rpc(s, 'ListTasks', { contextId: ctx(s), includeArtifacts: true, historyLength: 0 }),
      );
      await same(route, 'changed since long ago', (s) =>
        rpc(s, 'ListTasks', { contextId: ctx(s), statusTimestampAfter: '2000-01-01T00:00:00Z' }),
      );
      await same(route, 'changed since a future time', (s) =>
        rpc(s, 'ListTasks', { contextId: ctx(s), statusTimestampAfter: '2999-01-01T00:00:00Z' }),
      );
      await same(route, 'an unknown context', (s) => rpc(s, 'ListTasks', { contextId: randomUUID() }));
      for (const [what, params] of [
        ['pageSize 0', { pageSize: 0 }],
        ['pageSize 101', { pageSize: 101 }],
        ['not a state', { status: 'NOPE' }],
        ['not a timestamp', { statusTimestampAfter: 'yesterday' }],
        ['a page token not issued', { pageToken: 'zzz' }],
      ] as const)
        await same(route, what, (s) => rpc(s, 'ListTasks', params));
      await same(route, 'HTTP+JSON by context and status', (s) =>
        rest(s, 'GET', `/tasks?contextId=${ctx(s)}&status=TASK_STATE_COMPLETED&includeArtifacts=true`),
      );
      await same(route, 'HTTP+JSON pageSize 0', (s) => rest(s, 'GET', '/tasks?pageSize=0'));
    });

    it('push-notification configs: create, get, list, delete (twice), and an unknown task or config', async () => {
      const held = await same(route, 'a task', (s) => rpc(s, 'SendMessage', { message: wireMessage('ask') }));
      const taskId = (s: Side): string => taskIn(held[s.name]).id;
      await same(route, 'create', (s) =>
        rpc(s, 'CreateTaskPushNotificationConfig', { taskId: taskId(s), id: 'c1', url: hookUrl, token: 'tok' }),
      );
      await same(route, 'get', (s) => rpc(s, 'GetTaskPushNotificationConfig', { taskId: taskId(s), id: 'c1' }));
      await same(route, 'list', (s) => rpc(s, 'ListTaskPushNotificationConfigs', { taskId: taskId(s) }));
      await same(route, 'get an unknown config', (s) =>
        rpc(s, 'GetTaskPushNotificationConfig', { taskId: taskId(s), id: 'zz' }),
      );
      await same(route, 'delete', (s) => rpc(s, 'DeleteTaskPushNotificationConfig', { taskId: taskId(s), id: 'c1' }));
      await same(route, 'delete again', (s) =>
        rpc(s, 'DeleteTaskPushNotificationConfig', { taskId: taskId(s), id: 'c1' }),
      );
      await same(route, 'list after', (s) => rpc(s, 'ListTaskPushNotificationConfigs', { taskId: taskId(s) }));
      await same(route, 'create for an unknown task', (s) =>
        rpc(s, 'CreateTaskPushNotificationConfig', { taskId: 'no-such-task', id: 'c1', url: hookUrl }),
      );
      await same(route, 'HTTP+JSON create', (s) =>
        rest(s, 'POST', `/tasks/${taskId(s)}/pushNotificationConfigs`, { id: 'c9', url: hookUrl }),
      );
      await same(route, 'HTTP+JSON get', (s) => rest(s, 'GET', `/tasks/${taskId(s)}/pushNotificationConfigs/c9`));
      await same(route, 'HTTP+JSON list', (s) => rest(s, 'GET', `/tasks/${taskId(s)}/pushNotificationConfigs`));
      await same(route, 'HTTP+JSON delete', (s) => rest(s, 'DELETE', `/tasks/${taskId(s)}/pushNotificationConfigs/c9`));
      await same(route, 'HTTP+JSON get deleted', (s) =>
        rest(s, 'GET', `/tasks/${taskId(s)}/pushNotificationConfigs/c9`),
      );
    });

    it('streams: a task lifecycle, a Message alone, a failed task; HTTP+JSON too', async () => {
      for (const text of ['go', 'reply', 'fail'])
        await same(route, `stream ${text}`, (s) => rpc(s, 'SendStreamingMessage', { message: wireMessage(text) }));
      await same(route, 'stream, historyLength 0', (s) =>
        rpc(s, 'SendStreamingMessage', { message: wireMessage('go'), configuration: { historyLength: 0 } }),
      );
      const go = await same(route, 'HTTP+JSON stream go', (s) =>
        rest(s, 'POST', '/message:stream', { message: wireMessage('go') }),
      );
      assert.deepEqual(kindsOf(go.gw), ['task', 'statusUpdate', 'artifactUpdate', 'statusUpdate']);
      await same(route, 'HTTP+JSON stream reply', (s) =>
        rest(s, 'POST', '/message:stream', { message: wireMessage('reply') }),
      );
      await same(route, 'a stream to an ended task', async (s) => {
        const done = taskIn(await rpc(s, 'SendMessage', { message: wireMessage('go') }));
        return rpc(s, 'SendStreamingMessage', { message: wireMessage('more', { taskId: done.id }) });
      });
    });

    it('SubscribeToTask: a running task (the task first, then live events to its end), a finished one, an unknown one', async () => {
      const running = await same(route, 'running', async (s) => {
        const key = `hold ${randomUUID()}`;
        const held = taskIn(
          await rpc(s, 'SendMessage', { message: wireMessage(key), configuration: { returnImmediately: true } }),
        );
        await working(s, route, held.id);
        return bounded(
          subscribeRaw(s, held.id, () => agent.executor.release(key)),
          'the subscription',
        );
      });
      assert.deepEqual(kindsOf(running.gw), ['task', 'artifactUpdate', 'statusUpdate']);
      const done = await same(route, 'go', (s) => rpc(s, 'SendMessage', { message: wireMessage('go') }));
      await same(route, 'finished', (s) => rpc(s, 'SubscribeToTask', { id: taskIn(done[s.name]).id }));
      await same(route, 'unknown', (s) => rpc(s, 'SubscribeToTask', { id: 'no-such-task' }));
      await same(route, 'HTTP+JSON finished', (s) => rest(s, 'GET', `/tasks/${taskIn(done[s.name]).id}:subscribe`));
      await same(route, 'HTTP+JSON finished, POST', (s) =>
        rest(s, 'POST', `/tasks/${taskIn(done[s.name]).id}:subscribe`, {}),
      );
      await same(route, 'HTTP+JSON unknown', (s) => rest(s, 'GET', '/tasks/no-such-task:subscribe'));
    });

    it('requests that are wrong: no message, no messageId, params not an object, unknown method, bad JSON, other versions', async () => {
      await same(route, 'no message', (s) => rpc(s, 'SendMessage', {}));
      await same(route, 'no messageId', (s) =>
        rpc(s, 'SendMessage', { message: { role: 'ROLE_USER', parts: [{ text: 'x' }] } }),
      );
      await same(route, 'params an array', (s) => rpc(s, 'SendMessage', []));
      await same(route, 'params a string', (s) =>
        rawRpc(s, '{"jsonrpc":"2.0","id":1,"method":"GetTask","params":"x"}'),
      );
      await same(route, 'no params', (s) => rawRpc(s, '{"jsonrpc":"2.0","id":3,"method":"GetTask"}'));
      await same(route, 'a task id that is a number', (s) => rpc(s, 'GetTask', { id: 5 }));
      await same(route, 'unknown method', (s) => rpc(s, 'NoSuchMethod', {}));
      await same(route, 'a 0.3 method under A2A-Version 1.0', (s) =>
        rpc(s, 'message/send', { message: wireMessage('go') }),
      );
      await same(route, 'a 0.3 method under A2A-Version 0.3', (s) =>
        rpc(s, 'tasks/get', { id: 'no-such-task' }, { 'A2A-Version': '0.3' }),
      );
      await same(route, 'bad JSON', (s) => rawRpc(s, '{"jsonrpc":'));
      await same(route, 'a string id', (s) =>
        rawRpc(s, '{"jsonrpc":"2.0","id":"abc","method":"GetTask","params":{"id":"x"}}'),
      );
      await same(route, 'a null id', (s) =>
        rawRpc(s, '{"jsonrpc":"2.0","id":null,"method":"GetTask","params":{"id":"x"}}'),
      );
      await same(route, 'an unsupported version', (s) => rpc(s, 'GetTask', { id: 'x' }, { 'A2A-Version': '2.0' }));
      await same(route, 'HTTP+JSON no message', (s) => rest(s, 'POST', '/message:send', {}));
      await same(route, 'HTTP+JSON stream, no message', (s) => rest(s, 'POST', '/message:stream', {}));
      await same(route, 'HTTP+JSON bad JSON', (s) => rest(s, 'POST', '/message:send', '{"message":'));
      await same(route, 'HTTP+JSON an array', (s) => rest(s, 'POST', '/message:send', '[1]'));
    });

    it('GetExtendedAgentCard of a card that declares none: UnsupportedOperation (A2A §3.3.4), over both bindings', async () => {
      // Before, the gateway answered ExtendedAgentCardNotConfigured (-32007), which is for a card that declares one.
      const viaRpc = await same(route, 'JSON-RPC', (s) => rpc(s, 'GetExtendedAgentCard', {}));
      assert.equal((viaRpc.gw.body as { error?: { code?: number } }).error?.code, -32004);
      await same(route, 'HTTP+JSON', (s) => rest(s, 'GET', '/extendedAgentCard'));
    });

    it('a Content-Type that is not JSON: ContentTypeNotSupported with its ErrorInfo, over both bindings', async () => {
      // Before: no ErrorInfo over JSON-RPC, and the reason INVALID_PARAMS over HTTP+JSON.
      const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'x' } });
      await same(route, 'JSON-RPC', (s) => rawRpc(s, body, { 'content-type': 'text/plain' }));
      const viaRest = await same(route, 'HTTP+JSON', async (s) => {
        const a = await rest(s, 'POST', '/message:send', JSON.stringify({ message: wireMessage('go') }), {
          'content-type': 'text/plain',
        });
        // Documented: the gateway answers 415 Unsupported Media Type (gateway.md, "Request limits"), the SDK 400.
        const e = (a.body as { error: { code: number } }).error;
        return { ...a, status: 0, body: { error: { ...e, code: 0 } } } as Answer;
      });
      assert.equal(
        (viaRest.gw.body as { error: { details: Array<{ reason: string }> } }).error.details[0]?.reason,
        'CONTENT_TYPE_NOT_SUPPORTED',
      );
    });
  });
}

/** The SDK's client for one interface (binding, version) of `card` at `url`. */
function sdkClient(
  card: AgentCard,
  binding: 'JSONRPC' | 'HTTP+JSON',
  version: '1.0' | '0.3',
  url: string,
  fetchImpl: typeof fetch,
): Promise<Client> {
  const legacyCompat = { enabled: version === '0.3' };
  const factory = new ClientFactory({
    transports: [
      new JsonRpcTransportFactory({ fetchImpl, legacyCompat }),
      new RestTransportFactory({ fetchImpl, legacyCompat }),
    ],
  });
  return factory.createFromAgentCard({
    ...card,
    supportedInterfaces: [{ url, protocolBinding: binding, tenant: '', protocolVersion: version }],
  });
}

/** A call's result in wire JSON, or the class of the error it threw. */
async function outcome(f: () => Promise<unknown>): Promise<unknown> {
  try {
    const r = await f();
    if (r && typeof r === 'object' && 'status' in r && 'artifacts' in r) return Task.toJSON(r as Task);
    if (r && typeof r === 'object' && 'messageId' in r) return { message: Message.toJSON(r as Message) };
    if (r && typeof r === 'object' && 'tasks' in r) return ListTasksResponse.toJSON(r as ListTasksResponse);
    if (r && typeof r === 'object' && 'url' in r)
      return TaskPushNotificationConfig.toJSON(r as TaskPushNotificationConfig);
    return r ?? null;
  } catch (e) {
    return { error: (e as Error).constructor.name };
  }
}

/** A stream's events in wire JSON, and the class of the error that ended it, if one did. */
async function streamed(it: () => AsyncIterable<StreamResponse>): Promise<{ events: unknown[]; error?: string }> {
  const events: unknown[] = [];
  try {
    for await (const ev of it()) events.push(StreamResponse.toJSON(ev));
    return { events };
  } catch (e) {
    return { events, error: (e as Error).constructor.name };
  }
}

const CLIENTS = [
  { binding: 'JSONRPC', version: '1.0' },
  { binding: 'HTTP+JSON', version: '1.0' },
  { binding: 'JSONRPC', version: '0.3' },
  { binding: 'HTTP+JSON', version: '0.3' },
] as const;

for (const { binding, version } of CLIENTS) {
  describe(`differential, the SDK's ${binding} ${version} client: the SDK's server and the gateway route proxying to it over JSON-RPC`, () => {
    const clients = {} as Record<SideName, Client>;
    before(async () => {
      const res = await fetch(`${gw.url}/a2a/rpc/.well-known/agent-card.json`, { headers: { 'A2A-Version': '1.0' } });
      const card = AgentCard.fromJSON(await res.json());
      const iface = card.supportedInterfaces.find(
        (i) => i.protocolBinding === binding && i.protocolVersion === version,
      );
      assert.ok(iface, `the route card offers ${binding} ${version}`);
      clients.sdk = await sdkClient(card, binding, version, binding === 'JSONRPC' ? agent.rpc : agent.rest, fetch);
      clients.gw = await sdkClient(card, binding, version, iface.url, bearerFetch(gw.token));
    });
    const both = async <T>(
      what: string,
      f: (c: Client, side: SideName) => Promise<T>,
    ): Promise<Record<SideName, T>> => {
      const sdk = await f(clients.sdk, 'sdk');
      const got = await f(clients.gw, 'gw');
      assert.deepEqual(normalize(got), normalize(sdk), `${what}: the gateway answered otherwise than the SDK's server`);
      return { sdk, gw: got };
    };

    it('sendMessage and sendMessageStream: a task, and a Message answer', async () => {
      await both('send go', (c) => outcome(() => c.sendMessage(sendRequest(userMessage('go')))));
      await both('send reply', (c) => outcome(() => c.sendMessage(sendRequest(userMessage('reply')))));
      await both('stream go', (c) => streamed(() => c.sendMessageStream(sendRequest(userMessage('go')))));
      await both('stream reply', (c) => streamed(() => c.sendMessageStream(sendRequest(userMessage('reply')))));
    });

    it('input-required: a subscription follows the task through the answer, whose stream begins with the task', async () => {
      const out = await both('ask, subscribe, answer', async (c) => {
        const asked = (await c.sendMessage(sendRequest(userMessage('ask')))) as Task;
        const subscription: unknown[] = [];
        let first!: () => void;
        const gotFirst = new Promise<void>((r) => (first = r));
        const sub = (async () => {
          for await (const ev of c.resubscribeTask({ tenant: '', id: asked.id })) {
            subscription.push(StreamResponse.toJSON(ev));
            first();
          }
        })();
        await bounded(gotFirst, 'the subscription to begin');
        const answer = await streamed(() =>
          c.sendMessageStream(sendRequest(userMessage('x.ts', { taskId: asked.id, contextId: asked.contextId }))),
        );
        await bounded(sub, 'the subscription to end');
        // The SDK's subscription also relays the task the agent published again when it resumed (A2A
        // lets a stream send a task snapshot again); what comes after the first task is compared.
        const updates = subscription.filter((e, i) => i === 0 || !('task' in (e as object)));
        const ended = await outcome(() => c.getTask({ tenant: '', id: asked.id }));
        return { updates, answer, ended };
      });
      assert.equal(Object.keys(out.gw.answer.events[0] as object)[0], 'task');
    });

    it('errors: unknown task, finished task (get, cancel, subscribe, send), and a wrong contextId', async () => {
      const done = await both(
        'go',
        async (c) => Task.toJSON((await c.sendMessage(sendRequest(userMessage('go')))) as Task) as { id: string },
      );
      await both('getTask unknown', (c) => outcome(() => c.getTask({ tenant: '', id: 'no-such-task' })));
      await both('cancelTask unknown', (c) =>
        outcome(() => c.cancelTask({ tenant: '', id: 'no-such-task', metadata: undefined })),
      );
      await both('cancelTask finished', (c, s) =>
        outcome(() => c.cancelTask({ tenant: '', id: done[s].id, metadata: undefined })),
      );
      await both('send to finished', (c, s) =>
        outcome(() => c.sendMessage(sendRequest(userMessage('more', { taskId: done[s].id })))),
      );
      await both('stream to finished', (c, s) =>
        streamed(() => c.sendMessageStream(sendRequest(userMessage('more', { taskId: done[s].id })))),
      );
      // The SDK's 0.3 JSON-RPC server sends these errors inside the event stream (its client then throws a
      // plain Error); the gateway answers them as JSON-RPC errors before the stream, as its 1.0 route does.
      if (!(binding === 'JSONRPC' && version === '0.3')) {
        await both('resubscribe finished', (c, s) => streamed(() => c.resubscribeTask({ tenant: '', id: done[s].id })));
        await both('resubscribe unknown', (c) => streamed(() => c.resubscribeTask({ tenant: '', id: 'no-such-task' })));
      }
      await both('a follow-up in another context', (c) =>
        outcome(async () => {
          const asked = (await c.sendMessage(sendRequest(userMessage('ask')))) as Task;
          return c.sendMessage(sendRequest(userMessage('y', { taskId: asked.id, contextId: 'another-context' })));
        }),
      );
    });

    it('cancel: a streaming task canceled from the side, and a task waiting for input', async () => {
      await both('stream, then cancel', async (c) => {
        let canceled: Promise<unknown> | undefined;
        const stream = await streamed(async function* () {
          for await (const ev of c.sendMessageStream(sendRequest(userMessage(`hold ${randomUUID()}`)))) {
            if (!canceled && ev.payload?.$case === 'task') {
              const id = ev.payload.value.id;
              canceled = outcome(() => c.cancelTask({ tenant: '', id, metadata: undefined }));
            }
            yield ev;
          }
        });
        return { stream, canceled: await canceled };
      });
      await both('input-required, canceled', (c) =>
        outcome(async () => {
          const asked = (await c.sendMessage(sendRequest(userMessage('ask')))) as Task;
          return c.cancelTask({ tenant: '', id: asked.id, metadata: undefined });
        }),
      );
    });

    it('resubscribe to a running task: the task, then its events to the end', async () => {
      await both('resubscribe running', async (c, s) => {
        const key = `hold ${randomUUID()}`;
        const held = (await c.sendMessage(sendRequest(userMessage(key), true))) as Task;
        await working(sidesOf('rpc')[s === 'sdk' ? 0 : 1], 'rpc', held.id);
        return bounded(
          streamed(async function* () {
            let first = true;
            for await (const ev of c.resubscribeTask({ tenant: '', id: held.id })) {
              if (first) agent.executor.release(key);
              first = false;
              yield ev;
            }
          }),
          'the subscription',
        );
      });
    });

    if (version === '1.0') {
      it('listTasks by context, a page at a time; push-config CRUD', async () => {
        await both('list', (c) =>
          outcome(async () => {
            const t = (await c.sendMessage(sendRequest(userMessage('go')))) as Task;
            await c.sendMessage(sendRequest(userMessage('go', { contextId: t.contextId })));
            const q = {
              tenant: '',
              contextId: t.contextId,
              status: TaskState.TASK_STATE_UNSPECIFIED,
              pageSize: 1,
              pageToken: '',
              historyLength: undefined,
              statusTimestampAfter: undefined,
              includeArtifacts: true,
            };
            const p1 = await c.listTasks(q);
            const p2 = await c.listTasks({ ...q, pageToken: p1.nextPageToken });
            return [p1, p2].map((p) => ListTasksResponse.toJSON(p));
          }),
        );
        await both('push CRUD', async (c) => {
          const t = (await c.sendMessage(sendRequest(userMessage('ask')))) as Task;
          const cfg = { tenant: '', id: 'p1', taskId: t.id, url: hookUrl, token: 'tk', authentication: undefined };
          return [
            await outcome(() => c.createTaskPushNotificationConfig(cfg)),
            await outcome(() => c.getTaskPushNotificationConfig({ tenant: '', taskId: t.id, id: 'p1' })),
            await outcome(async () =>
              (
                await c.listTaskPushNotificationConfig({ tenant: '', taskId: t.id, pageSize: 0, pageToken: '' })
              ).configs.map((x) => TaskPushNotificationConfig.toJSON(x)),
            ),
            await outcome(() => c.deleteTaskPushNotificationConfig({ tenant: '', taskId: t.id, id: 'p1' })),
            await outcome(() => c.getTaskPushNotificationConfig({ tenant: '', taskId: t.id, id: 'p1' })),
            await outcome(() => c.getTaskPushNotificationConfig({ tenant: '', taskId: 'no-such-task', id: 'p1' })),
          ];
        });
      });
    }
  });
}

describe('differential: where the gateway answers otherwise on purpose', () => {
  const gwSide = (): Side => sidesOf('rpc')[1];
  const errorOf = (a: Answer): { code?: number } | undefined => (a.body as { error?: { code?: number } }).error;

  it('it is stricter than the SDK server about what A2A requires (the SDK server accepts each of these)', async () => {
    const s = gwSide();
    // a2a.proto: role and parts are required; historyLength is 0 or more (A2A §3.2.4 and its example).
    const noRole = await rpc(s, 'SendMessage', { message: { messageId: randomUUID(), parts: [{ text: 'go' }] } });
    assert.equal(errorOf(noRole)?.code, -32602);
    const noParts = await rpc(s, 'SendMessage', { message: wireMessage('go', { parts: [] }) });
    assert.equal(errorOf(noParts)?.code, -32602);
    const negative = await rpc(s, 'SendMessage', { message: wireMessage('go'), configuration: { historyLength: -1 } });
    assert.equal(errorOf(negative)?.code, -32602);
    // JSON-RPC 2.0 §4: a request without "jsonrpc": "2.0" is an Invalid Request (the SDK: -32602).
    const noVersion = await rawRpc(s, '{"id":1,"method":"GetTask","params":{"id":"x"}}');
    assert.equal(errorOf(noVersion)?.code, -32600);
  });

  it('canceling a canceled task is TaskNotCancelable (A2A §3.1.5 lists canceled); the SDK server answers the task', async () => {
    const s = gwSide();
    const held = taskIn(
      await rpc(s, 'SendMessage', {
        message: wireMessage(`hold ${randomUUID()}`),
        configuration: { returnImmediately: true },
      }),
    );
    const first = await rpc(s, 'CancelTask', { id: held.id });
    assert.equal(
      (first.body as { result?: { status?: { state?: string } } }).result?.status?.state,
      'TASK_STATE_CANCELED',
    );
    assert.equal(errorOf(await rpc(s, 'CancelTask', { id: held.id }))?.code, -32002);
  });

  it('a path of an agent that no A2A method serves is answered as such, not as an unknown agent', async () => {
    // Before: `unknown agent "rpc"; this gateway serves: rpc, rest` for an agent it serves.
    for (const [method, path] of [
      ['GET', '/a2a/rpc'],
      ['GET', '/a2a/rpc/nope'],
      ['GET', '/a2a/rpc/message:send'],
      ['POST', '/a2a/rpc/nope'],
    ] as const) {
      const res = await fetch(`${gw.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${gw.token}`, 'A2A-Version': '1.0', 'content-type': 'application/json' },
        ...(method === 'POST' ? { body: '{}' } : {}),
      });
      const body = (await res.json()) as { error?: { code?: number; status?: string; message?: string } };
      assert.equal(res.status, 404, `${method} ${path}`);
      assert.equal(body.error?.status, 'NOT_FOUND');
      assert.doesNotMatch(body.error?.message ?? '', /unknown agent/, `${method} ${path}`);
      assert.match(
        body.error?.message ?? '',
        new RegExp(
          `^${method} ${path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} is not an A2A method: JSON-RPC is POST /a2a/rpc`,
        ),
      );
    }
    // An agent it does not serve is still said to be unknown.
    const unknown = await fetch(`${gw.url}/a2a/nobody/tasks`, { headers: { authorization: `Bearer ${gw.token}` } });
    assert.equal(unknown.status, 404);
    assert.match(((await unknown.json()) as { error: { message: string } }).error.message, /unknown agent "nobody"/);
  });
});
