// `baton` sends the gateway's token to the gateway's origin and nowhere else, whatever a card, a
// journal or a redirect names. Real gateway, real SDK agents and plain HTTP servers on 127.0.0.1
// stand in for the attacker's origins; each asserts the Authorization headers it received.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingMessage, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { TaskState } from '@a2a-js/sdk';
import { batonMain } from '../../../src/gateway/batonCli';
import { startGateway } from '../../../src/gateway/server';
import type { RunningGateway } from '../../../src/gateway/server';
import { startAgentServer } from '../delegation/agentServers';
import type { AgentServer, Turn } from '../delegation/agentServers';
import { scriptedAgent, tempDir } from './helpers';

function capture(): { stream: PassThrough; text: () => string } {
  const stream = new PassThrough();
  let buf = '';
  stream.on('data', (d: Buffer) => (buf += d.toString()));
  return { stream, text: () => buf };
}

const patches = tempDir('baton-cli-patches-');
after(() => patches[Symbol.dispose]());

/** Runs the CLI (patches saved to a temp folder); a thrown error (what `baton` prints on stderr) is returned. */
async function run(argv: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | Error; text: string }> {
  const out = capture();
  try {
    return {
      code: await batonMain([...argv, '--out', join(patches.path, `${randomUUID()}.patch`)], out.stream, env),
      text: out.text(),
    };
  } catch (e) {
    return { code: e as Error, text: out.text() };
  }
}

interface Seen {
  readonly method: string;
  readonly path: string;
  readonly authorization: string | undefined;
}

/** A plain HTTP server: records every request and answers with `answer`. */
async function startRecorder(
  answer: (req: IncomingMessage, base: string) => { status: number; headers?: Record<string, string>; body?: unknown },
): Promise<{ base: string; seen: Seen[]; close(): Promise<void> }> {
  const seen: Seen[] = [];
  let base = '';
  const server: Server = createServer((req, res) => {
    seen.push({ method: req.method ?? '', path: req.url ?? '', authorization: req.headers.authorization });
    req.resume();
    req.on('end', () => {
      const a = answer(req, base);
      res.writeHead(a.status, { 'content-type': 'application/json', ...a.headers });
      res.end(a.body === undefined ? '' : JSON.stringify(a.body));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    base,
    seen,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** A card that asks for a bearer token, its one interface at `iface`. */
function bearerCard(iface: string): unknown {
  return {
    name: 'Wants your token',
    description: 'asks for a bearer token',
    version: '1.0.0',
    supportedInterfaces: [{ url: iface, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
    capabilities: { streaming: false },
    securitySchemes: { bearer: { httpAuthSecurityScheme: { scheme: 'Bearer' } } },
    securityRequirements: [{ schemes: { bearer: { list: [] } } }],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [],
  };
}

const completes = async (t: Turn): Promise<void> => {
  t.task(TaskState.TASK_STATE_WORKING);
  t.status(TaskState.TASK_STATE_COMPLETED, 'done');
};

const GATEWAY_TOKEN_RE = /Bearer /;

function assertNoToken(seen: readonly Seen[], token: string, what: string): void {
  assert.ok(seen.length > 0, `${what}: the server saw no request at all, so the test proves nothing`);
  for (const r of seen) {
    assert.equal(r.authorization, undefined, `${what}: ${r.method} ${r.path} carried Authorization ${r.authorization}`);
    assert.ok(!JSON.stringify(r).includes(token), `${what}: the token reached ${r.path}`);
  }
}

describe('baton command line: the gateway token goes only to the gateway origin', () => {
  const state = tempDir();
  const journals = tempDir('baton-cli-journals-');
  let gw: RunningGateway;
  let withEnvToken: NodeJS.ProcessEnv;
  let withTokenFile: NodeJS.ProcessEnv;
  before(async () => {
    gw = await startGateway({
      stateDir: state.path,
      localAgents: [scriptedAgent({ id: 'echo', steps: 1 })],
      log: () => undefined,
    });
    // What baton-gateway writes for the command line: its URL and token file.
    writeFileSync(join(state.path, 'gateway.json'), JSON.stringify({ url: gw.url, tokenFile: gw.tokenFile }));
    withEnvToken = {
      BATON_GATEWAY: gw.url,
      BATON_TOKEN: gw.token,
      BATON_CLI_DIR: journals.path,
      BATON_STATE_DIR: state.path,
    };
    withTokenFile = { BATON_CLI_DIR: journals.path, BATON_STATE_DIR: state.path };
  });
  after(async () => {
    await gw.close();
    for (const d of [state, journals]) d[Symbol.dispose]();
  });

  it('the gateway itself still gets its token, from $BATON_TOKEN and from the local token file', async () => {
    for (const env of [withEnvToken, withTokenFile]) {
      const r = await run(['delegate', 'echo', 'say hi'], env);
      assert.equal(r.code, 0, `${String(r.code)}\n${r.text}`);
      assert.match(r.text, /^completed/m);
    }
  });

  it('a token the gateway refuses: the delegation fails before any task, and the line says to set $BATON_TOKEN', async () => {
    const r = await run(['delegate', 'echo', 'say hi'], { ...withEnvToken, BATON_TOKEN: 'a-token-nobody-issued-0123' });
    assert.notEqual(r.code, 0, r.text);
    assert.match(r.text, /^failed: .*bearer token.*UNAUTHENTICATED/m);
    assert.match(r.text, /^the agent refused the token: set \$BATON_TOKEN .* \(nothing was started\)$/m);
  });

  it('a card URL on another origin, with its interface there too, gets no token (either token source)', async () => {
    const agent = await startAgentServer({ script: completes, declareBearer: true, wireCard: true, streaming: false });
    try {
      for (const env of [withEnvToken, withTokenFile]) {
        const r = await run(['delegate', `${agent.base}/.well-known/agent-card.json`, 'hello'], env);
        assert.equal(r.code, 0, `${String(r.code)}\n${r.text}`);
        assert.ok(
          agent.requests.some((q) => q.method === 'POST'),
          'the task was sent to the agent',
        );
        assertNoToken(agent.requests, gw.token, 'another port on the same host');
      }
    } finally {
      await agent.close();
    }
  });

  for (const [label, spell] of [
    ['decimal IPv4', (port: number) => `http://2130706433:${port}`],
    ['hex IPv4', (port: number) => `http://0x7f000001:${port}`],
    ['short IPv4', (port: number) => `http://127.1:${port}`],
    ['trailing dot', (port: number) => `http://127.0.0.1.:${port}`],
    ['upper-case scheme', (port: number) => `HTTP://127.0.0.1:${port}`],
  ] as const) {
    it(`another origin spelled as ${label} gets no token`, async () => {
      const agent = await startAgentServer({
        script: completes,
        declareBearer: true,
        wireCard: true,
        streaming: false,
        cardBase: spell,
      });
      try {
        const r = await run(['delegate', `${spell(agent.port)}/.well-known/agent-card.json`, 'hello'], withEnvToken);
        assert.equal(r.code, 0, `${String(r.code)}\n${r.text}`);
        assert.ok(
          agent.requests.some((q) => q.method === 'POST'),
          'the task was sent to the agent',
        );
        assertNoToken(agent.requests, gw.token, label);
      } finally {
        await agent.close();
      }
    });
  }

  it('status, reply, watch and cancel on a delegation to another origin send no token', async () => {
    const agent: AgentServer = await startAgentServer({
      script: async (t) => {
        if (!t.continuing) {
          t.task(TaskState.TASK_STATE_WORKING);
          t.status(TaskState.TASK_STATE_INPUT_REQUIRED, 'which file?');
          return;
        }
        t.status(TaskState.TASK_STATE_WORKING, 'thinking');
        await t.canceled;
      },
      declareBearer: true,
      wireCard: true,
      streaming: false,
    });
    try {
      const first = await run(['delegate', `${agent.base}/.well-known/agent-card.json`, 'hello'], withEnvToken);
      assert.equal(first.code, 15, `${String(first.code)}\n${first.text}`);
      const id = /as ([0-9a-f-]{36})/.exec(first.text)?.[1] ?? '';
      const before = agent.requests.length;
      assert.equal((await run(['status', id], withEnvToken)).code, 15);
      const reply = run(['reply', id, 'that one'], withEnvToken);
      // The reply's turn waits for a cancel: cancel it from a second command, then watch where it is.
      await waitFor(() => agent.requests.filter((q) => q.method === 'POST').length >= 2);
      const canceled = await run(['cancel', id], withEnvToken);
      assert.ok(canceled.code === 11 || canceled.code === 14, `${String(canceled.code)}\n${canceled.text}`);
      await reply;
      await run(['watch', id], withEnvToken);
      // At least the reply and the cancel (sent by whichever command runs the delegation at that moment).
      assert.ok(agent.requests.length >= before + 2, 'the follow-up commands talked to the agent');
      assertNoToken(agent.requests, gw.token, 'follow-up commands');
    } finally {
      await agent.close();
    }
  });

  it('a card whose interface carries credentials is refused before anything is sent to it', async () => {
    const rec = await startRecorder((_req, base) => ({
      status: 200,
      body: bearerCard(`${base.replace('http://', 'http://user:pass@')}/a2a`),
    }));
    try {
      const r = await run(['delegate', `${rec.base}/.well-known/agent-card.json`, 'hello'], withEnvToken);
      assert.ok(r.code instanceof Error && /credentials/.test(r.code.message), String(r.code));
      assert.ok(!(r.code as Error).message.includes('pass'), 'the message does not repeat the credentials');
      assert.deepEqual(
        rec.seen.map((s) => s.method),
        ['GET'],
      );
      assertNoToken(rec.seen, gw.token, 'card with credentials');
    } finally {
      await rec.close();
    }
  });

  it('a card that points requests to the gateway from another origin is refused', async () => {
    const rec = await startRecorder(() => ({ status: 200, body: bearerCard(`${gw.url}/a2a/echo`) }));
    try {
      const r = await run(['delegate', `${rec.base}/.well-known/agent-card.json`, 'hello'], withEnvToken);
      assert.ok(r.code instanceof Error && /another origin/.test(r.code.message), String(r.code));
      assertNoToken(rec.seen, gw.token, 'card naming the gateway');
    } finally {
      await rec.close();
    }
  });

  it('redirects are not followed: not from a card URL, not from an interface', async () => {
    const toGatewayCard = await startRecorder(() => ({
      status: 302,
      headers: { location: `${gw.url}/a2a/echo/.well-known/agent-card.json` },
    }));
    const toGatewayTask = await startRecorder((req, base) =>
      req.method === 'GET'
        ? { status: 200, body: bearerCard(`${base}/a2a`) }
        : { status: 307, headers: { location: `${gw.url}/a2a/echo` } },
    );
    try {
      const a = await run(['delegate', `${toGatewayCard.base}/.well-known/agent-card.json`, 'hello'], withEnvToken);
      assert.ok(a.code instanceof Error, `a redirected card fetch fails: ${String(a.code)}`);
      assertNoToken(toGatewayCard.seen, gw.token, 'card redirect');
      const b = await run(['delegate', `${toGatewayTask.base}/.well-known/agent-card.json`, 'hello'], withEnvToken);
      assert.notEqual(b.code, 0, b.text);
      assert.ok(
        toGatewayTask.seen.some((s) => s.method === 'POST'),
        'the task was attempted at the card origin',
      );
      assertNoToken(toGatewayTask.seen, gw.token, 'interface redirect');
    } finally {
      await toGatewayCard.close();
      await toGatewayTask.close();
    }
  });

  it('the local token file does not go to a gateway named by --gateway or $BATON_GATEWAY', async () => {
    const other = await startRecorder((req, base) =>
      req.method === 'GET'
        ? { status: 200, body: bearerCard(`${base}/a2a/echo`) }
        : { status: 401, body: { error: 'unauthorized' } },
    );
    try {
      await run(['delegate', 'echo', 'hello', '--gateway', other.base], withTokenFile);
      await run(['delegate', 'echo', 'hello'], { ...withTokenFile, BATON_GATEWAY: other.base });
      assert.ok(
        other.seen.filter((s) => s.method === 'POST').length >= 2,
        'both delegations reached the other gateway',
      );
      assertNoToken(other.seen, gw.token, 'another gateway');
      assert.ok(!other.seen.some((s) => GATEWAY_TOKEN_RE.test(s.authorization ?? '')));
    } finally {
      await other.close();
    }
  });
});

async function waitFor(cond: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 20));
  }
}
