import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { TaskState } from '@a2a-js/sdk';
import type { LocalAgent } from '../../../src/gateway/agents/localAgent';
import { startGateway } from '../../../src/gateway/server';
import type { RunningGateway } from '../../../src/gateway/server';
import { clientFor, readSse, scriptedAgent, sendRequest, tempDir, userMessage } from './helpers';

const METHODS = [
  'SendMessage',
  'SendStreamingMessage',
  'GetTask',
  'ListTasks',
  'CancelTask',
  'SubscribeToTask',
  'GetExtendedAgentCard',
  'message/send',
  'tasks/get',
  'nope',
];

/** One agent whose single progress line is over the SDK client's 4 MiB event limit. */
const hugeAgent: LocalAgent = {
  ...scriptedAgent({ id: 'huge' }),
  async run(_req, emit) {
    emit({ kind: 'step', text: 'before' });
    emit({ kind: 'log', stream: 'stdout', text: 'x'.repeat(5 * 1024 * 1024) });
    emit({ kind: 'step', text: 'after' });
    return { outcome: 'completed', patch: '' };
  },
};

describe('gateway: bad input gets a well-formed error, never a crash', () => {
  const dir = tempDir();
  let gw: RunningGateway;
  before(async () => {
    gw = await startGateway({
      stateDir: dir.path,
      localAgents: [scriptedAgent(), scriptedAgent({ id: 'slow', steps: 40, stepDelayMs: 20 }), hugeAgent],
      maxBodyBytes: 1024 * 1024,
      log: () => undefined,
    });
  });
  after(async () => {
    await gw.close();
    dir[Symbol.dispose]();
  });

  const post = async (body: string | Uint8Array, headers: Record<string, string> = {}): Promise<Response> =>
    fetch(`${gw.url}/a2a/echo`, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        Authorization: `Bearer ${gw.token}`,
        'A2A-Version': '1.0',
        ...headers,
      },
      body,
    });

  /** Every answer is JSON-RPC: an error with a numeric code and a message, or a result; or an SSE stream of them. */
  const assertWellFormed = async (res: Response, what: string): Promise<void> => {
    const ct = res.headers.get('content-type') ?? '';
    if (ct.includes('text/event-stream')) {
      for (const ev of await readSse(res)) assert.ok(JSON.parse(ev.data), what);
      return;
    }
    assert.match(ct, /json/, what);
    const j = (await res.json()) as {
      jsonrpc?: string;
      error?: { code?: unknown; message?: unknown };
      result?: unknown;
    };
    assert.equal(j.jsonrpc, '2.0', what);
    assert.ok(j.error !== undefined || j.result !== undefined, what);
    if (j.error) {
      assert.equal(typeof j.error.code, 'number', what);
      assert.equal(typeof j.error.message, 'string', what);
    }
    assert.ok(res.status === 200 || res.status === 413 || res.status === 500, `${what}: HTTP ${res.status}`);
  };

  const alive = async (): Promise<void> => {
    const r = await fetch(`${gw.url}/.well-known/agent-card.json`, { headers: { 'A2A-Version': '1.0' } });
    assert.equal(r.status, 200);
  };

  it('answers arbitrary bodies, JSON values and near-miss JSON-RPC requests (property)', async () => {
    const rpcLike = fc.record(
      {
        jsonrpc: fc.oneof(fc.constant('2.0'), fc.constant('1.0'), fc.constant(2), fc.constant(null)),
        id: fc.oneof(fc.integer(), fc.string(), fc.constant(null), fc.double(), fc.object()),
        method: fc.oneof(fc.constantFrom(...METHODS), fc.string()),
        params: fc.oneof(
          fc.anything(),
          fc.record({ id: fc.string(), message: fc.anything(), metadata: fc.anything() }),
        ),
      },
      { requiredKeys: [] },
    );
    const body = fc.oneof(
      fc.string(),
      fc.json(),
      rpcLike.map((o) => JSON.stringify(o)),
      fc
        .string({ unit: 'binary' })
        .map((s) => JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: s } })),
    );
    await fc.assert(
      fc.asyncProperty(body, fc.boolean(), async (b, legacy) => {
        await assertWellFormed(await post(b, legacy ? { 'A2A-Version': '' } : {}), JSON.stringify(b).slice(0, 200));
      }),
      { numRuns: 300 },
    );
    await alive();
  });

  it('refuses lone surrogates, deep nesting, huge bodies and wrong content types clearly', async () => {
    const cases: Array<[string, string | Uint8Array, RegExp, Record<string, string>?]> = [
      [
        'lone surrogate',
        '{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"\\ud800"}}',
        /lone UTF-16 surrogate/,
      ],
      [
        'lone surrogate in a key',
        '{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"\\udc00":1}}',
        /lone UTF-16 surrogate/,
      ],
      [
        'deep nesting',
        `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":${'['.repeat(200_000)}${']'.repeat(200_000)}}`,
        /nested deeper than 64/,
      ],
      [
        'huge body',
        JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { pad: 'x'.repeat(2 * 1024 * 1024) } }),
        /exceeds 1048576 bytes/,
      ],
      ['malformed JSON', '{"jsonrpc": "2.0", "id": 1, "method": ', /not JSON/],
      ['invalid UTF-8', new Uint8Array([0x7b, 0xff, 0xfe, 0x7d]), /not JSON/],
      [
        'wrong version',
        '{"jsonrpc":"1.0","id":1,"method":"GetTask","params":{"id":"x"}}',
        /Invalid JSON-RPC Request|invalid/i,
      ],
      ['unknown method', '{"jsonrpc":"2.0","id":1,"method":"DoEverything","params":{}}', /method/i],
      ['wrong content type', '{}', /Content-Type/, { 'Content-Type': 'text/plain' }],
    ];
    for (const [what, body, message, headers] of cases) {
      const res = await post(body, headers);
      const j = (await res.json()) as { jsonrpc: string; error: { code: number; message: string } };
      assert.equal(j.jsonrpc, '2.0', what);
      assert.equal(typeof j.error.code, 'number', what);
      assert.match(j.error.message, message, what);
    }
    await alive();
  });

  it('ends a stream with a clear error event when one event is over the 4 MiB limit', async () => {
    const res = await fetch(`${gw.url}/a2a/huge`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${gw.token}`, 'A2A-Version': '1.0' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'SendStreamingMessage',
        params: { message: { messageId: 'huge-1', role: 'ROLE_USER', parts: [{ text: 'go' }] } },
      }),
    });
    const events = await readSse(res);
    const last = events[events.length - 1];
    assert.equal(last.event, 'error');
    assert.match(last.data, /over the 4194304-byte limit for one stream event; get the task with GetTask instead/);
    assert.ok(events.slice(0, -1).every((e) => e.event === undefined && e.id !== undefined));
    await alive();
  });

  it('keeps running a task whose streaming client disconnected mid-stream', async () => {
    const ac = new AbortController();
    const res = await fetch(`${gw.url}/a2a/slow`, {
      method: 'POST',
      signal: ac.signal,
      headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${gw.token}`, 'A2A-Version': '1.0' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'SendStreamingMessage',
        params: { message: { messageId: 'dc-1', role: 'ROLE_USER', parts: [{ text: 'go' }] } },
      }),
    });
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    const taskId = /"id":"([0-9a-f-]{36})"/.exec(first)?.[1] ?? '';
    assert.ok(taskId);
    ac.abort();
    await reader.cancel().catch(() => undefined);
    const client = await clientFor(`${gw.url}/a2a/slow/.well-known/agent-card.json`, gw.token);
    // The same messageId again is the same task: blocking send waits for it to finish.
    const again = await client.sendMessage(
      sendRequest({
        ...userMessage('go', undefined, 'dc-1'),
        parts: [{ content: { $case: 'text', value: 'go' }, metadata: undefined, filename: '', mediaType: '' }],
      }),
    );
    assert.ok('id' in again);
    assert.equal(again.id, taskId);
    assert.equal(again.status?.state, TaskState.TASK_STATE_COMPLETED);
    await alive();
  });
});
