/**
 * VoltAgent's A2A server (voltAgentWire.ts replays its wire: a record separator before each SSE
 * event's JSON, tasks without `kind`, `tasks/resubscribe` unknown), reached directly by the `baton` CLI
 * (its card URL) and through baton-gateway's proxy.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { batonMain } from '../../../src/gateway/batonCli';
import { startGateway } from '../../../src/gateway/server';
import type { RunningGateway } from '../../../src/gateway/server';
import { legacyResponseText, mapSseData } from '../../../src/node/a2a/legacyWire';
import { tempDir } from '../gateway/helpers';
import { startVoltAgentWire } from './voltAgentWire';
import type { VoltAgentWire } from './voltAgentWire';

function capture(): { stream: PassThrough; text: () => string } {
  const stream = new PassThrough();
  let buf = '';
  stream.on('data', (d: Buffer) => (buf += d.toString()));
  return { stream, text: () => buf };
}

const task = { id: 't1', contextId: 'c1', history: [], status: { state: 'working', timestamp: 'x' } };

describe('0.3 answers made readable (legacyResponseText)', () => {
  it('drops the record separator before the JSON and names the kind a bare task leaves out', () => {
    const text = legacyResponseText(`\u001e${JSON.stringify({ jsonrpc: '2.0', id: 1, result: task })}`);
    assert.deepEqual(JSON.parse(text ?? ''), { jsonrpc: '2.0', id: 1, result: { kind: 'task', ...task } });
  });

  it('names each kind by the fields only it has', () => {
    const kindOf = (result: object): unknown =>
      (
        JSON.parse(legacyResponseText(JSON.stringify({ jsonrpc: '2.0', id: 1, result })) ?? '{}') as {
          result?: { kind?: unknown };
        }
      ).result?.kind;
    assert.equal(kindOf({ messageId: 'm', role: 'agent', parts: [] }), 'message');
    assert.equal(kindOf({ taskId: 't', contextId: 'c', status: { state: 'working' } }), 'status-update');
    assert.equal(kindOf({ taskId: 't', contextId: 'c', artifact: { artifactId: 'a', parts: [] } }), 'artifact-update');
  });

  it('leaves alone what it need not or cannot change', () => {
    const named = JSON.stringify({ jsonrpc: '2.0', id: 1, result: { kind: 'task', ...task } });
    assert.equal(legacyResponseText(named), undefined, 'a result that names its kind');
    assert.equal(legacyResponseText(JSON.stringify({ jsonrpc: '2.0', id: 1, result: { odd: true } })), undefined);
    assert.equal(legacyResponseText(JSON.stringify({ jsonrpc: '2.0', id: 1, error: { code: -32601 } })), undefined);
    assert.equal(legacyResponseText('not json'), undefined);
    assert.equal(legacyResponseText(`\u001e${named}`), named, 'only the separator is dropped');
  });
});

describe('0.3 events made readable one by one (mapSseData)', () => {
  const body = (chunks: string[]): ReadableStream<Uint8Array> =>
    new ReadableStream({
      start(c) {
        for (const ch of chunks) c.enqueue(new TextEncoder().encode(ch));
        c.close();
      },
    });

  it('rewrites each event, keeps its id, and passes split UTF-8 and CRLF framing as they came', async () => {
    const euro = new TextEncoder().encode('data: €1\n\n');
    const stream = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new TextEncoder().encode('id: 7\r\ndata: \u001e{"a":1}\r\n\r\n'));
        c.enqueue(euro.slice(0, 7));
        c.enqueue(euro.slice(7));
        c.close();
      },
    });
    const out = await new Response(mapSseData(stream, (d) => (d.startsWith('\u001e') ? d.slice(1) : undefined))).text();
    assert.equal(out, 'id: 7\ndata: {"a":1}\r\n\r\ndata: €1\n\n');
  });

  it('fails with the SDK’s words for an event too large, instead of holding an event that never ends', async () => {
    const endless = Array.from({ length: 40 }, () => 'x'.repeat(1024));
    const out = new Response(mapSseData(body(['data: ', ...endless]), () => undefined, 16 * 1024)).text();
    await assert.rejects(out, /exceeded the maximum allowed size of 16384 characters/);
    // Under the limit the same event passes whole.
    const fine = await new Response(mapSseData(body(['data: ', ...endless, '\n\n']), () => undefined)).text();
    assert.equal(fine.length, 6 + 40 * 1024 + 2);
  });
});

describe('VoltAgent’s A2A server: directly and through the gateway', () => {
  const state = tempDir();
  const journals = tempDir('baton-volt-journals-');
  let volt: VoltAgentWire;
  /** Its answers take a few seconds (a word every 150 ms). */
  let slow: VoltAgentWire;
  let gw: RunningGateway;
  let env: NodeJS.ProcessEnv;
  const logs: string[] = [];

  before(async () => {
    volt = await startVoltAgentWire();
    slow = await startVoltAgentWire({ stepMs: 150 });
    gw = await startGateway({
      stateDir: join(state.path, 'gw'),
      remoteAgents: [
        {
          id: 'volt',
          name: 'volt',
          description: 'Remote A2A agent',
          descriptionIsDefault: true,
          url: volt.url,
          cardUrl: volt.cardUrl,
          protocolBinding: 'JSONRPC',
          auth: { kind: 'none' },
          skills: [],
        },
        {
          id: 'volt-slow',
          name: 'volt-slow',
          description: 'Remote A2A agent',
          descriptionIsDefault: true,
          url: slow.url,
          cardUrl: slow.cardUrl,
          protocolBinding: 'JSONRPC',
          auth: { kind: 'none' },
          skills: [],
        },
      ],
      limits: { cancelGraceMs: 2000 },
      log: (l) => logs.push(l),
    });
    env = {
      BATON_GATEWAY: gw.url,
      BATON_TOKEN: gw.token,
      BATON_CLI_DIR: journals.path,
      BATON_STATE_DIR: join(state.path, 'gw'),
    };
    for (let i = 0; i < 200 && logs.filter((l) => l.includes('using the card at')).length < 2; i++)
      await new Promise((r) => setTimeout(r, 50));
  });
  after(async () => {
    await gw?.close();
    await volt?.close();
    await slow?.close();
    for (const d of [state, journals]) d[Symbol.dispose]();
  });

  const delegate = async (target: string, text: string): Promise<{ code: number; out: string }> => {
    const out = capture();
    const code = await batonMain(['delegate', target, text], out.stream, env);
    return { code, out: out.text() };
  };

  it('direct: the CLI streams the answer and ends completed with it', async () => {
    const r = await delegate(volt.cardUrl, 'hello there friend');
    assert.equal(r.code, 0, r.out);
    assert.match(r.out, /· echo: hello there \n/);
    assert.match(r.out, /^completed: echo: hello there friend$/m);
    assert.deepEqual(volt.methods.slice(-2), ['message/stream', 'tasks/get']);
  });

  it('gateway: the proxied delegation streams the answer and ends completed with it, signed', async () => {
    const r = await delegate('volt', 'hello from afar');
    assert.equal(r.code, 0, `${r.out}\n${logs.slice(-5).join('\n')}`);
    assert.match(r.out, /^completed: echo: hello from afar$/m);
    assert.match(r.out, /^signature: verified/m);
  });

  it('gateway: after its stream to the agent breaks, the relay is refused tasks/resubscribe once, then follows the task by tasks/get to its end', async () => {
    slow.cutNextStreamAfter(2);
    const words =
      'one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty';
    const r = await delegate('volt-slow', words);
    assert.equal(r.code, 0, `${r.out}\n${logs.slice(-8).join('\n')}`);
    assert.match(r.out, new RegExp(`^completed: echo: ${words}$`, 'm'));
    assert.equal(
      slow.methods.filter((m) => m === 'tasks/resubscribe').length,
      1,
      `asked to subscribe again after it refused: ${slow.methods.join(' ')}`,
    );
    assert.ok(
      logs.some((l) => l.includes('the remote refuses to stream the task again')),
      logs.join('\n'),
    );
  });
});
