/**
 * A team gateway as docs/gateway.md "Team deployment" describes it: three `baton-gateway` processes on
 * one PostgreSQL with one shared signing key, behind a real nginx running docs/examples/nginx.conf, in
 * front of a remote SDK agent. Many clients stream tasks through nginx (the SDK's client and raw SSE);
 * the instance that relays the most of them is killed with SIGKILL mid-stream; every client resumes with
 * SubscribeToTask and Last-Event-ID through nginx (landing on a live instance), and gets every event once,
 * in order, up to the final state; every event a client received is in the store.
 *
 * Needs nginx and BATON_TEST_PG; skipped without them, except under CI, where they must be there.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { StreamResponse, TaskState } from '@a2a-js/sdk';
import type { AgentExecutor, ExecutionEventBus, RequestContext } from '@a2a-js/sdk/server';
import { parseGatewayConfig } from '../../../src/gateway/config';
import { PostgresGatewayStore } from '../../../src/gateway/store/postgresStore';
import { generateSigningKey, writeSigningKey } from '../../../src/node/signing';
import { REPLAY_EXTENSION_URI } from '../../../src/core/batonProfile';
import { bounded, clientFor, sendRequest, tempDir, userMessage } from '../gateway/helpers';
import { patchEvent, serveSdkAgent, statusEvent, taskEvent } from '../gateway/sdkServer';

const ROOT = resolve(__dirname, '../../..');
const CLI = join(ROOT, 'src/gateway/cli.ts');
const NGINX_TEMPLATE = join(ROOT, 'docs/examples/nginx.conf');
const GATEWAY_TEMPLATE = join(ROOT, 'docs/examples/team-gateway.json');

const PG = process.env.BATON_TEST_PG;
const NGINX = ['/usr/sbin/nginx', '/usr/bin/nginx', '/usr/local/sbin/nginx'].find((p) => existsSync(p));
const missing = [
  ...(PG ? [] : ['BATON_TEST_PG (start one with eval "$(bash scripts/postgres.sh start)")']),
  ...(NGINX ? [] : ['nginx (Debian package nginx-light)']),
];
// In CI both are installed and started by .ci/run: missing there is a failure, not a skip.
const skip = missing.length && !process.env.CI ? `needs ${missing.join(' and ')}` : false;

const INSTANCES = 3;
const TASKS = 24;
const STEPS = 60;
const STEP_MS = 100;
const REMOTE_TOKEN = `remote-${randomBytes(12).toString('hex')}`;
const ALICE_TOKEN = `alice-${randomBytes(16).toString('hex')}`;
const TERMINAL = new Set(['TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED']);

/** The remote: an SDK agent whose tasks report STEPS working steps STEP_MS apart, then a patch, then complete. */
class PacedExecutor implements AgentExecutor {
  async execute(ctx: RequestContext, bus: ExecutionEventBus): Promise<void> {
    const { taskId, contextId } = ctx;
    bus.publish(taskEvent(ctx, TaskState.TASK_STATE_WORKING));
    for (let i = 1; i <= STEPS; i++) {
      await new Promise((r) => setTimeout(r, STEP_MS));
      bus.publish(statusEvent(taskId, contextId, TaskState.TASK_STATE_WORKING, { metadata: { step: i } }));
    }
    bus.publish(patchEvent(taskId, contextId, `diff --git a/${taskId} b/${taskId}\n`, 'patch'));
    bus.publish(statusEvent(taskId, contextId, TaskState.TASK_STATE_COMPLETED));
    bus.finished();
  }
  cancelTask(): Promise<void> {
    return Promise.resolve();
  }
}

function startRemote(): Promise<{ url: string; close(): Promise<void> }> {
  return serveSdkAgent(new PacedExecutor(), {
    token: REMOTE_TOKEN,
    name: 'paced',
    description: 'SDK agent that works in steps',
    userName: 'gateway',
    liveCard: true,
  });
}

function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => resolvePort(port));
    });
  });
}

interface Instance {
  readonly proc: ChildProcess;
  readonly port: number;
  readonly instanceId: string;
  stderr: string;
}

async function startInstance(config: string, state: string, port: number, env: NodeJS.ProcessEnv): Promise<Instance> {
  const proc = spawn(
    process.execPath,
    ['--import', 'tsx', CLI, '--config', config, '--state', state, '--port', String(port)],
    { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const inst: { stderr: string } = { stderr: '' };
  proc.stderr?.on('data', (d: Buffer) => (inst.stderr += d.toString()));
  const line = await new Promise<string>((ok, fail) => {
    let out = '';
    const t = setTimeout(() => fail(new Error(`baton-gateway did not start in 60 s: ${inst.stderr}`)), 60_000);
    proc.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const nl = out.indexOf('\n');
      if (nl >= 0) {
        clearTimeout(t);
        ok(out.slice(0, nl));
      }
    });
    proc.once('exit', (code) => {
      clearTimeout(t);
      fail(new Error(`baton-gateway exited ${code}: ${inst.stderr}`));
    });
  });
  const info = JSON.parse(line) as { instanceId: string };
  return Object.assign(inst, { proc, port, instanceId: info.instanceId });
}

function stopProcess(proc: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  return new Promise((r) => {
    if (proc.exitCode !== null || proc.signalCode !== null) return r();
    const t = setTimeout(() => proc.kill('SIGKILL'), 10_000);
    proc.once('exit', () => {
      clearTimeout(t);
      r();
    });
    proc.kill(signal);
  });
}

/**
 * The nginx config the test runs: a minimal main file (paths inside the temp dir, so nginx needs no
 * system folder) that includes docs/examples/nginx.conf with the upstream servers and listen address
 * replaced by this machine's.
 */
function writeNginxConfig(dir: string, listenPort: number, upstreamPorts: readonly number[]): string {
  const template = readFileSync(NGINX_TEMPLATE, 'utf8');
  const serverLine = /^(\s*)server \d+\.\d+\.\d+\.\d+:\d+( [^;]*)?;\n/gm;
  const lines = [...template.matchAll(serverLine)];
  assert.ok(lines.length >= 2, 'the example upstream lists several instances');
  const [indent, params] = [lines[0][1], lines[0][2] ?? ''];
  let n = 0;
  const site = template
    .replace(serverLine, () =>
      n++ === 0 ? upstreamPorts.map((p) => `${indent}server 127.0.0.1:${p}${params};\n`).join('') : '',
    )
    .replace(/^(\s*)listen 80;$/m, `$1listen 127.0.0.1:${listenPort};`);
  assert.match(site, new RegExp(`listen 127\\.0\\.0\\.1:${listenPort};`), 'the example listens on port 80');
  writeFileSync(join(dir, 'baton.conf'), site);
  for (const t of ['body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) mkdirSync(join(dir, t), { recursive: true });
  const main = [
    // As root, nginx's workers would run as "nobody" and could not use the temp folders here.
    ...(process.getuid?.() === 0 ? ['user root;'] : []),
    'worker_processes 1;',
    `error_log ${join(dir, 'error.log')} info;`,
    'events { worker_connections 4096; }',
    'http {',
    `  access_log ${join(dir, 'access.log')};`,
    `  client_body_temp_path ${join(dir, 'body')};`,
    `  proxy_temp_path ${join(dir, 'proxy')};`,
    `  fastcgi_temp_path ${join(dir, 'fastcgi')};`,
    `  uwsgi_temp_path ${join(dir, 'uwsgi')};`,
    `  scgi_temp_path ${join(dir, 'scgi')};`,
    `  include ${join(dir, 'baton.conf')};`,
    '}',
    '',
  ].join('\n');
  const file = join(dir, 'nginx.conf');
  writeFileSync(file, main);
  return file;
}

async function startNginx(dir: string, conf: string, url: string): Promise<ChildProcess> {
  const nginx = NGINX ?? 'nginx';
  const args = [
    '-p',
    dir,
    '-c',
    conf,
    '-e',
    join(dir, 'error.log'),
    '-g',
    `daemon off; pid ${join(dir, 'nginx.pid')};`,
  ];
  const proc = spawn(nginx, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  proc.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (proc.exitCode !== null)
      throw new Error(`nginx exited ${proc.exitCode}: ${err}${readFileSync(join(dir, 'error.log'), 'utf8')}`);
    try {
      const res = await fetch(`${url}/.well-known/agent-card.json`);
      if (res.ok) return proc;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`nginx did not answer in 20 s: ${err}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** One event as a client received it: its seq and its wire JSON. */
interface Seen {
  readonly seq: number;
  readonly wire: Record<string, unknown>;
}

/** What identifies an event of this test's agent: its kind, the step or state it reports. */
function fingerprint(wire: Record<string, unknown>): string {
  const status = wire.statusUpdate as { status?: { state?: string }; metadata?: Record<string, unknown> } | undefined;
  if (status)
    return `status:${status.status?.state ?? ''}:${String(status.metadata?.step ?? '')}:${String(status.metadata?.['baton/outcome'] ?? '')}`;
  const artifact = wire.artifactUpdate as { artifact?: { artifactId?: string } } | undefined;
  if (artifact) return `artifact:${artifact.artifact?.artifactId ?? ''}`;
  const task = wire.task as { status?: { state?: string } } | undefined;
  if (task) return `task:${task.status?.state ?? ''}`;
  return `other:${Object.keys(wire).join(',')}`;
}

function stateOf(wire: Record<string, unknown>): string | undefined {
  const s = (wire.statusUpdate ?? wire.task) as { status?: { state?: string } } | undefined;
  return s?.status?.state;
}

function seqOfWire(wire: Record<string, unknown>): number | undefined {
  const v = (wire.statusUpdate ?? wire.artifactUpdate ?? wire.task) as
    { metadata?: Record<string, unknown> } | undefined;
  const s = v?.metadata?.['baton/seq'];
  return typeof s === 'number' ? s : undefined;
}

/**
 * POSTs one streaming JSON-RPC call and hands each SSE event (seq from `id:`, the JSON-RPC result) to
 * `onEvent`; returns when the stream ends, for whatever reason (the end of the task, a cut connection).
 */
async function rawStream(
  url: string,
  method: 'SendStreamingMessage' | 'SubscribeToTask',
  params: unknown,
  lastEventId: number | undefined,
  onEvent: (e: Seen) => void,
  signal: AbortSignal,
): Promise<void> {
  const res = await fetch(url, {
    signal,
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      Accept: 'text/event-stream',
      'A2A-Version': '1.0',
      'A2A-Extensions': REPLAY_EXTENSION_URI,
      Authorization: `Bearer ${ALICE_TOKEN}`,
      ...(lastEventId !== undefined ? { 'Last-Event-ID': String(lastEventId) } : {}),
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: randomUUID(), method, params }),
  });
  if (res.status !== 200) throw new Error(`${method} answered ${res.status}: ${await res.text()}`);
  if (!res.body) throw new Error(`${method}: no body`);
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  let buf = '';
  try {
    for (;;) {
      const r = await reader.read();
      if (r.done) return;
      buf += dec.decode(r.value, { stream: true });
      let i: number;
      while ((i = buf.indexOf('\n\n')) >= 0) {
        const block = buf.slice(0, i);
        buf = buf.slice(i + 2);
        const id = /^id: ?(\d+)$/m.exec(block)?.[1];
        const data = /^data: ?(.*)$/m.exec(block)?.[1];
        if (data === undefined) continue;
        const msg = JSON.parse(data) as { result?: Record<string, unknown>; error?: { message: string } };
        if (msg.error) throw new Error(`${method}: ${msg.error.message}`);
        if (!msg.result) continue;
        const seq = id !== undefined ? Number(id) : seqOfWire(msg.result);
        if (seq === undefined) throw new Error(`${method}: an event without a seq: ${data}`);
        onEvent({ seq, wire: msg.result });
      }
    }
  } catch (e) {
    // A cut connection ends the stream like the end of a task: the caller looks at what it got.
    if (signal.aborted || (e instanceof Error && /^(SendStreamingMessage|SubscribeToTask):/.test(e.message))) throw e;
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}

interface ClientRun {
  readonly taskId: string;
  readonly seen: Seen[];
  readonly cuts: number;
  readonly resumes: number;
}

describe('team gateway: three instances on one PostgreSQL behind nginx, one killed with SIGKILL under load', () => {
  let dir: ReturnType<typeof tempDir>;
  let dbUrl = '';
  let dbName = '';
  let remote: { url: string; close(): Promise<void> } | undefined;
  let nginx: ChildProcess | undefined;
  let balancer = '';
  const instances: Instance[] = [];
  let kid = '';
  let env: NodeJS.ProcessEnv = {};
  let configFile = '';

  before(async () => {
    if (skip) return;
    if (missing.length) assert.fail(`CI must provide ${missing.join(' and ')} (.ci/run installs and starts them)`);
    dir = tempDir('baton-team-');
    dbName = `baton_team_${randomBytes(6).toString('hex')}`;
    const admin = new pg.Client({ connectionString: PG });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${dbName}`);
    await admin.end();
    const u = new URL(PG ?? '');
    u.pathname = `/${dbName}`;
    dbUrl = u.toString();

    remote = await startRemote();
    // One key for the whole team, made once and given to every instance.
    const key = await generateSigningKey();
    kid = key.kid;
    const keyFile = join(dir.path, 'gateway-key.jwk');
    await writeSigningKey(key, keyFile);

    const nginxPort = await freePort();
    balancer = `http://127.0.0.1:${nginxPort}`;
    const template = JSON.parse(readFileSync(GATEWAY_TEMPLATE, 'utf8')) as Record<string, unknown>;
    const agents = template.agents as Record<string, Record<string, unknown>>;
    const config = {
      ...template,
      host: '127.0.0.1',
      publicUrl: balancer,
      keyFile,
      agents: { reviewer: { ...agents.reviewer, url: remote.url } },
    };
    configFile = join(dir.path, 'gateway.json');
    writeFileSync(configFile, JSON.stringify(config, null, 2));
    env = { BATON_PG_URL: dbUrl, BATON_ALICE_TOKEN: ALICE_TOKEN, REVIEWER_TOKEN: REMOTE_TOKEN };
    // The example's settings are all valid (the same parser the program uses).
    parseGatewayConfig(readFileSync(GATEWAY_TEMPLATE, 'utf8'), GATEWAY_TEMPLATE, {
      BATON_PG_URL: dbUrl,
      BATON_ALICE_TOKEN: ALICE_TOKEN,
      REVIEWER_TOKEN: REMOTE_TOKEN,
    });

    const ports = await Promise.all(Array.from({ length: INSTANCES }, () => freePort()));
    const started = await Promise.all(
      ports.map((p, i) => startInstance(configFile, join(dir.path, `state-${i}`), p, env)),
    );
    instances.push(...started);
    const nginxDir = join(dir.path, 'nginx');
    mkdirSync(nginxDir, { recursive: true });
    nginx = await startNginx(nginxDir, writeNginxConfig(nginxDir, nginxPort, ports), balancer);
  });

  after(async () => {
    if (nginx) await stopProcess(nginx, 'SIGQUIT');
    await Promise.all(instances.map((i) => stopProcess(i.proc, 'SIGTERM')));
    await remote?.close();
    if (dbName) {
      const admin = new pg.Client({ connectionString: PG });
      await admin.connect();
      await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
      await admin.end();
    }
    dir?.[Symbol.dispose]();
  });

  it('serves the same signed cards from every instance, naming the balancer', { skip }, async () => {
    const cards = await Promise.all(
      instances.map(async (i) => {
        const res = await fetch(`http://127.0.0.1:${i.port}/a2a/reviewer/.well-known/agent-card.json`, {
          headers: { 'A2A-Version': '1.0' },
        });
        assert.equal(res.status, 200);
        return (await res.json()) as {
          supportedInterfaces: Array<{ url: string }>;
          signatures: Array<{ protected: string }>;
        };
      }),
    );
    for (const card of cards) {
      assert.ok(
        card.supportedInterfaces.every((s) => s.url.startsWith(`${balancer}/a2a/reviewer`)),
        `every interface is at the balancer: ${JSON.stringify(card.supportedInterfaces)}`,
      );
      const header = JSON.parse(Buffer.from(card.signatures[0].protected, 'base64url').toString()) as {
        kid?: string;
        jwk?: { kid?: string };
      };
      assert.equal(header.kid ?? header.jwk?.kid, kid, 'signed with the shared key');
    }
    assert.deepEqual(cards[1], cards[0]);
    assert.deepEqual(cards[2], cards[0]);
    const viaBalancer = await fetch(`${balancer}/.well-known/agent-card.json`);
    assert.equal(viaBalancer.status, 200);
    const index = (await viaBalancer.json()) as { provider?: { url?: string } };
    assert.equal(index.provider?.url, balancer, 'the index card names the balancer');
  });

  it(
    'loses no acknowledged event: every client resumes on another instance with Last-Event-ID and gets every event once, in order, to the end',
    { skip },
    async (t) => {
      const cardUrl = `${balancer}/a2a/reviewer/.well-known/agent-card.json`;
      const rpcUrl = `${balancer}/a2a/reviewer`;
      // Bounds every client: a stream that stalls (nobody relays its task any more) fails the test, never hangs it.
      const abort = new AbortController();
      const runs: Array<Promise<ClientRun>> = [];
      const started: Array<Promise<void>> = [];
      for (let k = 0; k < TASKS; k++) {
        let markStarted!: () => void;
        started.push(new Promise<void>((r) => (markStarted = r)));
        runs.push(
          (async (): Promise<ClientRun> => {
            const seen: Seen[] = [];
            let taskId = '';
            const onEvent = (e: Seen): void => {
              seen.push(e);
              if (!taskId) taskId = String((e.wire.task as { id?: string } | undefined)?.id ?? '');
              if (seen.length === 5) markStarted();
            };
            const msg = userMessage(`task ${k}`);
            // Half the clients are the SDK's own client; the other half read the SSE themselves.
            if (k % 2 === 0) {
              const client = await clientFor(cardUrl, ALICE_TOKEN);
              try {
                for await (const ev of client.sendMessageStream(sendRequest(msg), { signal: abort.signal })) {
                  const wire = StreamResponse.toJSON(ev) as Record<string, unknown>;
                  const seq = seqOfWire(wire);
                  if (seq === undefined) throw new Error(`an event without baton/seq: ${JSON.stringify(wire)}`);
                  onEvent({ seq, wire });
                }
              } catch (e) {
                if (!/fetch failed|terminated|network|socket|aborted|closed|SSE/i.test((e as Error).message)) throw e;
              }
            } else {
              await rawStream(
                rpcUrl,
                'SendStreamingMessage',
                { message: msgWire(msg) },
                undefined,
                onEvent,
                abort.signal,
              );
            }
            let cuts = 0;
            let resumes = 0;
            while (!TERMINAL.has(stateOf(seen[seen.length - 1]?.wire ?? {}) ?? '')) {
              assert.ok(taskId, `client ${k}: its stream ended before it learnt the task id`);
              cuts++;
              assert.ok(resumes < 20, `client ${k}: still not at the end after ${resumes} resumes`);
              resumes++;
              const last = seen[seen.length - 1].seq;
              await rawStream(rpcUrl, 'SubscribeToTask', { id: taskId }, last, onEvent, abort.signal).catch(
                async (e: unknown) => {
                  // nginx may still send a request to the dead instance once, before it marks it down: try again.
                  if (!/answered 50[234]/.test((e as Error).message)) throw e;
                  await new Promise((r) => setTimeout(r, 200));
                },
              );
            }
            return { taskId, seen, cuts, resumes };
          })(),
        );
      }
      // Every task has started (and every client knows its id) before the kill.
      await Promise.race([
        Promise.all(started),
        Promise.all(runs).then(() => assert.fail('the tasks ended before the kill')),
      ]);
      const store = await PostgresGatewayStore.open(dbUrl);
      try {
        const owners = new Map<string, number>();
        for (const row of await store.listOwnedUnfinished())
          if (row.owner) owners.set(row.owner, (owners.get(row.owner) ?? 0) + 1);
        const victim = [...instances].sort(
          (a, b) => (owners.get(b.instanceId) ?? 0) - (owners.get(a.instanceId) ?? 0),
        )[0];
        const relayedByVictim = owners.get(victim.instanceId) ?? 0;
        assert.ok(relayedByVictim > 0, `the instance to kill relays tasks (${JSON.stringify([...owners])})`);
        await stopProcess(victim.proc, 'SIGKILL');
        const done = await bounded(Promise.all(runs), 'every client reaches the end of its task', 120_000).catch(
          (e: unknown) => {
            abort.abort();
            throw e;
          },
        );

        const cut = done.filter((r) => r.cuts > 0).length;
        t.diagnostic(
          `killed ${victim.instanceId}, which relayed ${relayedByVictim} of ${TASKS} tasks; ${cut} clients were cut off and resumed (${done.reduce((n, r) => n + r.resumes, 0)} resumes)`,
        );
        assert.ok(cut > 0, 'the kill cut some clients off mid-stream');
        for (const [k, r] of done.entries()) {
          const seqs = r.seen.map((e) => e.seq);
          assert.deepEqual(
            seqs,
            Array.from({ length: seqs.length }, (_, i) => i + 1),
            `client ${k} (task ${r.taskId}, ${r.resumes} resumes): every event once, in order`,
          );
          const final = r.seen[r.seen.length - 1].wire;
          assert.equal(
            stateOf(final),
            'TASK_STATE_COMPLETED',
            `client ${k}: the proxied task was re-attached and ended`,
          );
          const row = await store.getTask('reviewer', r.taskId);
          assert.equal(row?.lastSeq, seqs.length, `client ${k}: the store has exactly what the client received`);
          assert.equal(row?.state, TaskState.TASK_STATE_COMPLETED);
          assert.equal(row?.owner, null);
          const stored = await store.readEvents('reviewer', r.taskId, 0, 10_000);
          assert.deepEqual(
            stored.map((e) => `${e.seq} ${fingerprint(JSON.parse(e.body) as Record<string, unknown>)}`),
            r.seen.map((e) => `${e.seq} ${fingerprint(e.wire)}`),
            `client ${k}: every event it received is stored, under the same seq`,
          );
          assert.ok(
            r.seen.some((e) => fingerprint(e.wire) === 'artifact:patch'),
            `client ${k}: the remote's patch arrived`,
          );
        }
        assert.equal(await store.integrityCheck(), 'ok');
        assert.match(
          instances
            .filter((i) => i !== victim)
            .map((i) => i.stderr)
            .join('\n'),
          new RegExp(`its worker died with instance ${victim.instanceId.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`),
          "a live instance took over the dead one's tasks",
        );

        // Through the balancer, with the dead instance still in its upstream list: reads and a new task.
        const client = await clientFor(cardUrl, ALICE_TOKEN);
        const some = done[0];
        const task = await client.getTask({ tenant: '', id: some.taskId, historyLength: undefined });
        assert.equal(task.status?.state, TaskState.TASK_STATE_COMPLETED);
        const envelope = task.metadata?.['baton/resultEnvelope'];
        assert.equal(typeof envelope, 'string', 'the result is signed');
        const envHeader = JSON.parse(Buffer.from(String(envelope).split('.')[0], 'base64url').toString()) as {
          kid?: string;
        };
        assert.equal(envHeader.kid, kid, 'signed with the shared key, whichever instance recorded it');
        const listed = await client.listTasks({
          tenant: '',
          contextId: '',
          status: 0,
          pageToken: '',
          statusTimestampAfter: undefined,
          pageSize: 100,
        });
        const ids = new Set(listed.tasks.map((t) => t.id));
        assert.ok(
          done.every((r) => ids.has(r.taskId)),
          'ListTasks lists every task',
        );
        const fresh: Seen[] = [];
        for await (const ev of client.sendMessageStream(sendRequest(userMessage('after the kill')))) {
          const wire = StreamResponse.toJSON(ev) as Record<string, unknown>;
          fresh.push({ seq: seqOfWire(wire) ?? -1, wire });
        }
        assert.equal(stateOf(fresh[fresh.length - 1].wire), 'TASK_STATE_COMPLETED');
        assert.deepEqual(
          fresh.map((e) => e.seq),
          Array.from({ length: fresh.length }, (_, i) => i + 1),
        );
      } finally {
        await store.close();
      }
    },
  );
});

/** A message as A2A wire JSON, for the raw clients. */
function msgWire(msg: ReturnType<typeof userMessage>): Record<string, unknown> {
  return {
    messageId: msg.messageId,
    role: 'ROLE_USER',
    parts: [{ text: msg.parts[0]?.content?.$case === 'text' ? msg.parts[0].content.value : '' }],
  };
}
