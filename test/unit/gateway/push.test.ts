import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { lookup } from 'node:dns/promises';
import { createServer as createHttpServer } from 'node:http';
import type { IncomingHttpHeaders, Server } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import type { AddressInfo, Server as NetServer, Socket } from 'node:net';
import { startGateway } from '../../../src/gateway/server';
import type { GatewayOptions, RunningGateway } from '../../../src/gateway/server';
import { ConfigError, parseGatewayConfig, sha256HexOf } from '../../../src/gateway/config';
import { clientFor, scriptedAgent, tempDir } from './helpers';

// ---------------------------------------------------------------------------------------------------
// Real servers on 127.0.0.1

interface Hit {
  readonly headers: IncomingHttpHeaders;
  readonly body: { task?: { id?: string; status?: { state?: string }; artifacts?: Array<{ name?: string }> } };
}

interface Receiver {
  readonly port: number;
  readonly hits: Hit[];
  /** Requests received and not answered (the hanging receiver holds every one). */
  open: number;
  close(): Promise<void>;
}

/** A webhook receiver: answers 200, or redirects to `redirectTo`, or never answers. */
async function receiver(
  mode: { kind: 'ok' } | { kind: 'redirect'; to: () => string } | { kind: 'hang' },
): Promise<Receiver> {
  const sockets = new Set<Socket>();
  const r: Receiver = { port: 0, hits: [], open: 0, close: () => Promise.resolve() };
  const server: Server = createHttpServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let body: Hit['body'] = {};
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Hit['body'];
      } catch {
        body = {};
      }
      r.hits.push({ headers: req.headers, body });
      if (mode.kind === 'ok') res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
      else if (mode.kind === 'redirect') res.writeHead(307, { location: mode.to() }).end();
      else {
        r.open++;
        res.on('close', () => r.open--);
      }
    });
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((res) => server.listen(0, '127.0.0.1', () => res()));
  return Object.assign(r, {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((res) => {
        for (const s of sockets) s.destroy();
        server.close(() => res());
      }),
  });
}

/** Counts TCP connections: anything that reaches it got past the checks. */
async function canary(): Promise<{ port: number; connections: number; close(): Promise<void> }> {
  const c = { port: 0, connections: 0, close: () => Promise.resolve() };
  const server: NetServer = createNetServer((s) => {
    c.connections++;
    s.destroy();
  });
  await new Promise<void>((res) => server.listen(0, '127.0.0.1', () => res()));
  c.port = (server.address() as AddressInfo).port;
  c.close = () => new Promise<void>((res) => server.close(() => res()));
  return c;
}

async function until(what: string, pred: () => boolean, timeoutMs = 8_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!pred()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

interface RpcAnswer {
  readonly result?: Record<string, unknown> | null;
  readonly error?: { code: number; message: string };
}

async function rpc(
  gw: RunningGateway,
  token: string,
  agent: string,
  method: string,
  params: Record<string, unknown>,
): Promise<RpcAnswer> {
  const res = await fetch(`${gw.url}/a2a/${agent}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'a2a-version': '1.0', authorization: `Bearer ${token}` },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    signal: AbortSignal.timeout(15_000),
  });
  return (await res.json()) as RpcAnswer;
}

function message(text: string): Record<string, unknown> {
  return { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text }] };
}

async function startTask(
  gw: RunningGateway,
  agent: string,
  extra: Record<string, unknown> = {},
  token = gw.token,
): Promise<{ id: string; answer: RpcAnswer }> {
  const answer = await rpc(gw, token, agent, 'SendMessage', {
    message: message('go'),
    configuration: { returnImmediately: true, ...extra },
  });
  const task = (answer.result?.task ?? {}) as { id?: string };
  return { id: task.id ?? '', answer };
}

const stateOf = (h: Hit): string | undefined => h.body.task?.status?.state;

// A resolver for names that must never reach real DNS; everything else (localhost) resolves for real.
const names = new Map<string, string>([
  ['public.test', '93.184.216.34'],
  ['private.test', '10.1.2.3'],
  ['rebind.test', '93.184.216.34'],
]);
const resolve = async (host: string): Promise<readonly { address: string; family: number }[]> => {
  const a = names.get(host);
  if (a) return [{ address: a, family: 4 }];
  return lookup(host, { all: true, verbatim: true });
};

// ---------------------------------------------------------------------------------------------------

describe('gateway: push notifications through the SSRF-safe sender', () => {
  const dir = tempDir();
  const otherToken = `other-${randomUUID()}`;
  const logs: string[] = [];
  const echo = scriptedAgent({ steps: 2 });
  const slow = scriptedAgent({ id: 'slow', waitForCancel: true });
  let gw: RunningGateway;
  let ok: Receiver;
  let redirector: Receiver;
  let hang: Receiver;
  let trap: Awaited<ReturnType<typeof canary>>;
  let control: Awaited<ReturnType<typeof canary>>;

  before(async () => {
    trap = await canary();
    control = await canary();
    ok = await receiver({ kind: 'ok' });
    redirector = await receiver({ kind: 'redirect', to: () => `http://127.0.0.1:${trap.port}/stolen` });
    hang = await receiver({ kind: 'hang' });
    gw = await startGateway({
      stateDir: dir.path,
      localAgents: [echo, slow],
      tokens: [{ principal: 'other', sha256: sha256HexOf(otherToken) }],
      limits: { cancelGraceMs: 300 },
      pushAllowPrivateHosts: [`127.0.0.1:${ok.port}`, `127.0.0.1:${redirector.port}`, `127.0.0.1:${hang.port}`],
      // Every dial that passes the checks goes to 127.0.0.1 (same port): a check that let a refused
      // address through would reach a canary here, never a real host.
      push: {
        timeoutMs: 3_000,
        attempts: 2,
        backoffMs: 20,
        drainMs: 200,
        resolve,
        testHooks: { dialOverride: '127.0.0.1' },
      },
      log: (l) => logs.push(l),
    });
  });
  after(async () => {
    await gw.close();
    await Promise.all([ok.close(), redirector.close(), hang.close(), trap.close(), control.close()]);
    dir[Symbol.dispose]();
  });

  it('says pushNotifications: true in the agent cards and the gateway card', async () => {
    for (const path of ['/.well-known/agent-card.json', '/a2a/echo/.well-known/agent-card.json']) {
      const card = (await (await fetch(`${gw.url}${path}`, { headers: { 'A2A-Version': '1.0' } })).json()) as {
        capabilities: { pushNotifications?: boolean };
      };
      assert.equal(card.capabilities.pushNotifications, true, path);
    }
  });

  it("POSTs the terminal task (wire JSON) with the token header and the config's credentials, for a config sent with SendMessage", async () => {
    const token = `tok-${randomUUID()}`;
    const answer = await rpc(gw, gw.token, 'echo', 'SendMessage', {
      message: message('format src'),
      configuration: {
        taskPushNotificationConfig: {
          url: `http://127.0.0.1:${ok.port}/hook?k=1`,
          token,
          authentication: { scheme: 'Bearer', credentials: 'receiver-cred' },
        },
      },
    });
    const id = (answer.result?.task as { id?: string } | undefined)?.id ?? '';
    assert.ok(id, JSON.stringify(answer));
    await until('the completed task at the receiver', () =>
      ok.hits.some((h) => h.body.task?.id === id && stateOf(h) === 'TASK_STATE_COMPLETED'),
    );
    const hit = ok.hits.find((h) => h.body.task?.id === id && stateOf(h) === 'TASK_STATE_COMPLETED');
    assert.equal(hit?.headers['x-a2a-notification-token'], token);
    assert.equal(hit?.headers.authorization, 'Bearer receiver-cred');
    assert.match(String(hit?.headers['content-type']), /json/);
    assert.equal(hit?.body.task?.artifacts?.[0]?.name, 'changes.patch');
    // No state is sent twice in a row to one receiver.
    const states = ok.hits.filter((h) => h.body.task?.id === id).map(stateOf);
    assert.ok(
      states.every((s, i) => i === 0 || s !== states[i - 1]),
      states.join(','),
    );
    const list = await rpc(gw, gw.token, 'echo', 'ListTaskPushNotificationConfigs', { taskId: id });
    const configs = (list.result?.configs ?? []) as Array<{ id: string; url: string; token: string }>;
    assert.equal(configs.length, 1);
    assert.equal(configs[0].token, token);
    assert.match(configs[0].id, /^url-/);
    assert.ok(!logs.some((l) => l.includes(token) || l.includes('receiver-cred')), 'tokens never logged');
  });

  it('creates, gets, lists and deletes a config, and delivers the canceled task to it', async () => {
    const { id } = await startTask(gw, 'slow');
    const token = `tok-${randomUUID()}`;
    const created = await rpc(gw, gw.token, 'slow', 'CreateTaskPushNotificationConfig', {
      taskId: id,
      url: `http://127.0.0.1:${ok.port}/hook`,
      token,
    });
    const cfg = created.result as { id: string; taskId: string; url: string; token: string };
    assert.ok(cfg?.id, JSON.stringify(created));
    assert.equal(cfg.taskId, id);
    const got = await rpc(gw, gw.token, 'slow', 'GetTaskPushNotificationConfig', { taskId: id, id: cfg.id });
    assert.deepEqual(got.result, cfg);
    const canceled = await rpc(gw, gw.token, 'slow', 'CancelTask', { id });
    assert.equal((canceled.result as { status?: { state?: string } }).status?.state, 'TASK_STATE_CANCELED');
    await until('the canceled task at the receiver', () =>
      ok.hits.some((h) => h.body.task?.id === id && stateOf(h) === 'TASK_STATE_CANCELED'),
    );
    assert.equal(
      ok.hits.find((h) => h.body.task?.id === id && stateOf(h) === 'TASK_STATE_CANCELED')?.headers[
        'x-a2a-notification-token'
      ],
      token,
    );
    assert.equal(
      (await rpc(gw, gw.token, 'slow', 'DeleteTaskPushNotificationConfig', { taskId: id, id: cfg.id })).error,
      undefined,
    );
    assert.deepEqual(
      (await rpc(gw, gw.token, 'slow', 'ListTaskPushNotificationConfigs', { taskId: id })).result?.configs ?? [],
      [],
    );
    assert.equal(
      (await rpc(gw, gw.token, 'slow', 'GetTaskPushNotificationConfig', { taskId: id, id: cfg.id })).error?.code,
      -32001,
    );
  });

  it('refuses webhook URLs that break the SSRF rules at creation, saying why and what to do; nothing reaches the canary', async () => {
    const { id } = await startTask(gw, 'slow');
    const p = trap.port;
    const cases: Array<[string, RegExp]> = [
      [`https://127.0.0.1:${p}/hook`, /loopback address.*pushAllowPrivateHosts/],
      [`http://127.0.0.1:${p}/hook`, /only https.*pushAllowPrivateHosts/],
      [`https://localhost:${p}/hook`, /loopback/],
      [`https://169.254.169.254:${p}/latest/meta-data/`, /linkLocal/],
      [`https://[::ffff:10.0.0.1]:${p}/`, /ipv4Mapped/],
      [`https://private.test:${p}/`, /10\.1\.2\.3.*private/],
      [`http://public.test:${p}/hook`, /only https webhooks/],
      [`https://user:secret@public.test:${p}/hook`, /user name or password/],
      [`ftp://public.test:${p}/`, /only https/],
      ['not a url', /not an absolute URL/],
    ];
    for (const [url, why] of cases) {
      const a = await rpc(gw, gw.token, 'slow', 'CreateTaskPushNotificationConfig', { taskId: id, url, token: 't' });
      assert.equal(a.error?.code, -32602, `${url}: ${JSON.stringify(a)}`);
      assert.match(a.error?.message ?? '', /^push-notification URL refused: /, url);
      assert.match(a.error?.message ?? '', why, url);
      assert.ok(!(a.error?.message ?? '').includes('secret'), 'credentials are not echoed');
    }
    // The same refusal for a config sent with SendMessage, before any task starts.
    const before = slow.requests.length;
    const sent = await startTask(gw, 'slow', {
      taskPushNotificationConfig: { url: `https://169.254.169.254:${p}/`, token: 't' },
    });
    assert.equal(sent.answer.error?.code, -32602);
    assert.match(sent.answer.error?.message ?? '', /linkLocal/);
    assert.equal(slow.requests.length, before, 'no task was started');
    assert.deepEqual(
      (await rpc(gw, gw.token, 'slow', 'ListTaskPushNotificationConfigs', { taskId: id })).result?.configs ?? [],
      [],
    );
    await rpc(gw, gw.token, 'slow', 'CancelTask', { id });
    assert.equal(trap.connections, 0);
  });

  it('control: a public https name passes the checks and the delivery dials (the canary would count a leak)', async () => {
    const { id } = await startTask(gw, 'slow');
    const created = await rpc(gw, gw.token, 'slow', 'CreateTaskPushNotificationConfig', {
      taskId: id,
      url: `https://public.test:${control.port}/hook`,
      token: 't',
    });
    assert.equal(created.error, undefined, JSON.stringify(created));
    await rpc(gw, gw.token, 'slow', 'CancelTask', { id });
    await until('a dial to the control canary', () => control.connections > 0);
  });

  it('checks again at delivery: a name that resolves to a private address after creation is refused', async () => {
    const { id } = await startTask(gw, 'slow');
    const created = await rpc(gw, gw.token, 'slow', 'CreateTaskPushNotificationConfig', {
      taskId: id,
      url: `https://rebind.test:${trap.port}/hook`,
      token: 'rebind-token',
    });
    assert.equal(created.error, undefined, JSON.stringify(created));
    names.set('rebind.test', '10.0.0.7');
    await rpc(gw, gw.token, 'slow', 'CancelTask', { id });
    await until('the refused delivery in the log', () =>
      logs.some((l) => l.includes(id) && /not delivered: blocked-address/.test(l)),
    );
    assert.equal(trap.connections, 0);
    assert.ok(!logs.some((l) => l.includes('rebind-token')));
  });

  it('does not follow a redirect: the receiver gets the POST once, its redirect target gets nothing', async () => {
    const { id } = await startTask(gw, 'slow');
    const created = await rpc(gw, gw.token, 'slow', 'CreateTaskPushNotificationConfig', {
      taskId: id,
      url: `http://127.0.0.1:${redirector.port}/hook`,
      token: 'redir-token',
    });
    assert.equal(created.error, undefined, JSON.stringify(created));
    await rpc(gw, gw.token, 'slow', 'CancelTask', { id });
    await until('the refused redirect in the log', () =>
      logs.some((l) => l.includes(id) && /not delivered: redirect/.test(l)),
    );
    assert.equal(redirector.hits.filter((h) => h.body.task?.id === id).length, 1, 'a redirect is not retried');
    assert.equal(trap.connections, 0);
  });

  it("a receiver that hangs delays neither the task nor another task's notification", async () => {
    const a = await startTask(gw, 'slow');
    await rpc(gw, gw.token, 'slow', 'CreateTaskPushNotificationConfig', {
      taskId: a.id,
      url: `http://127.0.0.1:${hang.port}/hook`,
      token: 't',
    });
    const canceled = await rpc(gw, gw.token, 'slow', 'CancelTask', { id: a.id });
    assert.equal((canceled.result as { status?: { state?: string } }).status?.state, 'TASK_STATE_CANCELED');
    await until('the hanging receiver to hold a delivery', () => hang.open > 0);
    const b = await rpc(gw, gw.token, 'echo', 'SendMessage', {
      message: message('b'),
      configuration: { taskPushNotificationConfig: { url: `http://127.0.0.1:${ok.port}/b`, token: 'tb' } },
    });
    const bId = (b.result?.task as { id?: string } | undefined)?.id ?? '';
    await until("task B's notification", () =>
      ok.hits.some((h) => h.body.task?.id === bId && stateOf(h) === 'TASK_STATE_COMPLETED'),
    );
    assert.ok(hang.open > 0, "task A's delivery was still hanging when task B's arrived");
    assert.equal(
      ((await rpc(gw, gw.token, 'slow', 'GetTask', { id: a.id })).result as { status?: { state?: string } }).status
        ?.state,
      'TASK_STATE_CANCELED',
    );
  });

  it('serves the config methods to SDK clients over JSON-RPC 1.0, HTTP+JSON and 0.3', async () => {
    for (const o of [{}, { preferRest: true }, { legacy: true }]) {
      const { id } = await startTask(gw, 'slow');
      const client = await clientFor(`${gw.url}/a2a/slow/.well-known/agent-card.json`, gw.token, o);
      const made = await client.createTaskPushNotificationConfig({
        tenant: '',
        id: 'c1',
        taskId: id,
        url: `http://127.0.0.1:${ok.port}/sdk`,
        token: 'sdk-token',
        authentication: undefined,
      });
      assert.equal(made.id, 'c1', JSON.stringify(o));
      const listed = await client.listTaskPushNotificationConfig({
        tenant: '',
        taskId: id,
        pageSize: 0,
        pageToken: '',
      });
      assert.deepEqual(
        listed.configs.map((c) => [c.id, c.url, c.token]),
        [['c1', `http://127.0.0.1:${ok.port}/sdk`, 'sdk-token']],
        JSON.stringify(o),
      );
      await assert.rejects(
        client.createTaskPushNotificationConfig({
          tenant: '',
          id: 'c2',
          taskId: id,
          url: `https://169.254.169.254:${trap.port}/`,
          token: '',
          authentication: undefined,
        }),
        /linkLocal/,
        JSON.stringify(o),
      );
      await rpc(gw, gw.token, 'slow', 'CancelTask', { id });
    }
    assert.equal(trap.connections, 0);
  });

  it("answers another principal's config calls exactly like an unknown task's, and changes nothing", async () => {
    const { id } = await startTask(gw, 'slow');
    const created = await rpc(gw, gw.token, 'slow', 'CreateTaskPushNotificationConfig', {
      taskId: id,
      url: `http://127.0.0.1:${ok.port}/mine`,
      token: 'mine',
    });
    const cfgId = (created.result as { id: string }).id;
    const unknown = randomUUID();
    const calls: Array<[string, (t: string) => Record<string, unknown>]> = [
      ['GetTaskPushNotificationConfig', (t) => ({ taskId: t, id: cfgId })],
      ['ListTaskPushNotificationConfigs', (t) => ({ taskId: t })],
      ['DeleteTaskPushNotificationConfig', (t) => ({ taskId: t, id: cfgId })],
      [
        'CreateTaskPushNotificationConfig',
        (t) => ({ taskId: t, url: `http://127.0.0.1:${ok.port}/theirs`, token: 'theirs' }),
      ],
    ];
    for (const [method, params] of calls) {
      const theirs = await rpc(gw, otherToken, 'slow', method, params(id));
      const none = await rpc(gw, otherToken, 'slow', method, params(unknown));
      assert.equal(theirs.error?.code, -32001, method);
      assert.equal(theirs.result, undefined, method);
      assert.equal(theirs.error?.message.replace(id, 'X'), none.error?.message.replace(unknown, 'X'), method);
    }
    const still = await rpc(gw, gw.token, 'slow', 'ListTaskPushNotificationConfigs', { taskId: id });
    assert.deepEqual(
      (still.result?.configs as Array<{ id: string; token: string }>).map((c) => [c.id, c.token]),
      [[cfgId, 'mine']],
    );
    await rpc(gw, gw.token, 'slow', 'CancelTask', { id });
  });
});

describe('gateway: push configs survive a restart (SQLite)', () => {
  const dir = tempDir();
  let ok: Receiver;
  before(async () => {
    ok = await receiver({ kind: 'ok' });
  });
  after(async () => {
    await ok.close();
    dir[Symbol.dispose]();
  });

  it("keeps configs across a restart, and the shutdown's own outcome is delivered", async () => {
    const opts = (): GatewayOptions => ({
      stateDir: dir.path,
      localAgents: [scriptedAgent({ id: 'stuck', hang: true })],
      limits: { cancelGraceMs: 200 },
      pushAllowPrivateHosts: [`127.0.0.1:${ok.port}`],
      push: { timeoutMs: 3_000, attempts: 2, backoffMs: 20 },
      log: () => undefined,
    });
    const gw1 = await startGateway(opts());
    let taskId = '';
    let cfg: Record<string, unknown> = {};
    try {
      taskId = (await startTask(gw1, 'stuck')).id;
      const created = await rpc(gw1, gw1.token, 'stuck', 'CreateTaskPushNotificationConfig', {
        taskId,
        url: `http://127.0.0.1:${ok.port}/hook`,
        token: 'persisted-token',
        authentication: { scheme: 'Bearer', credentials: 'persisted-cred' },
      });
      cfg = created.result ?? {};
      assert.ok(cfg.id, JSON.stringify(created));
    } finally {
      await gw1.close();
    }
    // Closing recorded the task as failed; that state change was delivered before close returned.
    assert.ok(
      ok.hits.some(
        (h) =>
          h.body.task?.id === taskId &&
          stateOf(h) === 'TASK_STATE_FAILED' &&
          h.headers['x-a2a-notification-token'] === 'persisted-token',
      ),
    );
    const gw2 = await startGateway(opts());
    try {
      const got = await rpc(gw2, gw2.token, 'stuck', 'GetTaskPushNotificationConfig', { taskId, id: cfg.id });
      assert.deepEqual(got.result, cfg);
      const list = await rpc(gw2, gw2.token, 'stuck', 'ListTaskPushNotificationConfigs', { taskId });
      assert.deepEqual(list.result?.configs, [cfg]);
    } finally {
      await gw2.close();
    }
  });
});

describe('gateway config: pushAllowPrivateHosts', () => {
  it('reads names, .domains and host:port entries, defaults to none, and names the field on a bad entry', () => {
    assert.deepEqual(parseGatewayConfig('{}', 'gw.json').pushAllowPrivateHosts, []);
    assert.deepEqual(
      parseGatewayConfig(
        '{"pushAllowPrivateHosts": ["hooks.internal", ".corp.example", "10.0.0.5:8443", "[fd00::1]:443"]}',
        'gw.json',
      ).pushAllowPrivateHosts,
      ['hooks.internal', '.corp.example', '10.0.0.5:8443', '[fd00::1]:443'],
    );
    for (const bad of ['"hooks.internal"', '["https://hooks.internal/x"]', '[""]', '[42]']) {
      assert.throws(
        () => parseGatewayConfig(`{"pushAllowPrivateHosts": ${bad}}`, 'gw.json'),
        (e: unknown) => e instanceof ConfigError && /pushAllowPrivateHosts/.test(e.message),
        bad,
      );
    }
  });
});

const PG = process.env.BATON_TEST_PG;
describe('gateway: push configs in the PostgreSQL store', () => {
  it(
    'puts (replacing by id), lists oldest first and deletes',
    { skip: PG ? false : 'BATON_TEST_PG is not set: start one with eval "$(bash scripts/postgres.sh start)"' },
    async () => {
      const { PostgresGatewayStore } = await import('../../../src/gateway/store/postgresStore');
      const store = await PostgresGatewayStore.open(PG ?? '');
      try {
        const agent = `push-${randomUUID()}`;
        await store.putPushConfig(agent, 't1', 'a', '{"url":"https://a.example/1"}');
        await store.putPushConfig(agent, 't1', 'b', '{"url":"https://b.example/"}');
        await store.putPushConfig(agent, 't1', 'a', '{"url":"https://a.example/2"}');
        await store.putPushConfig(agent, 't2', 'a', '{"url":"https://other.example/"}');
        assert.deepEqual(
          (await store.listPushConfigs(agent, 't1')).map((r) => [r.id, r.config]),
          [
            ['a', '{"url":"https://a.example/2"}'],
            ['b', '{"url":"https://b.example/"}'],
          ],
        );
        assert.equal(await store.deletePushConfig(agent, 't1', 'a'), true);
        assert.equal(await store.deletePushConfig(agent, 't1', 'a'), false);
        assert.deepEqual(
          (await store.listPushConfigs(agent, 't1')).map((r) => r.id),
          ['b'],
        );
        assert.deepEqual(
          (await store.listPushConfigs(agent, 't2')).map((r) => r.id),
          ['a'],
        );
      } finally {
        await store.close();
      }
    },
  );
});
