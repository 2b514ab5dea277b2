/**
 * The PostgreSQL store through PgBouncer (Debian package `pgbouncer`) in transaction mode, as many teams
 * run PostgreSQL: a real PgBouncer, started here with its own config in front of the test server.
 * Seen before: the store could not connect at all ("unsupported startup parameter:
 * idle_in_transaction_session_timeout"), and with that fixed it opened and then heard no notification
 * (PgBouncer accepts LISTEN and passes nothing on), so instances would silently stop seeing each
 * other's events; its start-up lock could be taken on one server connection and released on another.
 *
 * Needs BATON_TEST_PG and pgbouncer; skipped without them, except under CI, where they must be there.
 */
import { describe, it } from 'node:test';
import type { TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import pg from 'pg';
import { TaskState } from '@a2a-js/sdk';
import { PostgresGatewayStore } from '../../../src/gateway/store/postgresStore';
import { loadGatewayConfig, sha256HexOf } from '../../../src/gateway/config';
import { startGateway } from '../../../src/gateway/server';
import { bounded, tempDir } from './helpers';
import { proxyTask, remoteSdkAgent, stepsOf, SteppingExecutor, streamTask, until } from './pgFaultHelpers';
import { serveSdkAgent } from './sdkServer';

const PG = process.env.BATON_TEST_PG;
const PGBOUNCER = ['/usr/sbin/pgbouncer', '/usr/bin/pgbouncer'].find((p) => existsSync(p));
const missing = [
  ...(PG ? [] : ['BATON_TEST_PG (start one with eval "$(bash scripts/postgres.sh start)")']),
  ...(PGBOUNCER ? [] : ['pgbouncer (Debian package pgbouncer)']),
];
// In CI both are installed and started by .ci/run: missing there is a failure, not a skip.
const skip = missing.length && !process.env.CI ? `needs ${missing.join(' and ')}` : false;

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

async function waitForPort(port: number, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = createConnection({ host: '127.0.0.1', port }, () => {
        s.end();
        resolve(true);
      });
      s.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`nothing listened on port ${port} within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

interface Bouncer {
  /** Through PgBouncer (transaction pooling), as the role made for the test. */
  readonly pooled: string;
  /** Straight to the server, as the same role. */
  readonly direct: string;
  readonly role: string;
  readonly schema: string;
}

/**
 * A role whose search_path is a fresh schema (set on the role: PgBouncer does not pass a URL's
 * `options` on), and a PgBouncer in transaction mode in front of the test server.
 */
async function startBouncer(t: TestContext): Promise<Bouncer> {
  const server = new URL(PG ?? '');
  const tag = randomBytes(5).toString('hex');
  const role = `bouncer_${tag}`;
  const schema = `bouncer_${tag}`;
  const admin = new pg.Client({ connectionString: PG });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${schema}`);
  await admin.query(`CREATE ROLE ${role} LOGIN`);
  await admin.query(`GRANT USAGE, CREATE ON SCHEMA ${schema} TO ${role}`);
  await admin.query(`ALTER ROLE ${role} SET search_path = ${schema}`);
  t.after(async () => {
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.query(`DROP OWNED BY ${role}`).catch(() => undefined);
    await admin.query(`DROP ROLE IF EXISTS ${role}`).catch(() => undefined);
    await admin.end();
  });

  const tmp = tempDir('baton-pgbouncer-');
  t.after(() => tmp[Symbol.dispose]());
  const dir = tmp.path;
  const port = await freePort();
  const db = server.pathname.slice(1);
  writeFileSync(join(dir, 'users.txt'), `"${role}" ""\n`);
  writeFileSync(
    join(dir, 'pgbouncer.ini'),
    [
      '[databases]',
      `${db} = host=${server.hostname} port=${server.port} dbname=${db}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${join(dir, 'users.txt')}`,
      'pool_mode = transaction',
      'max_client_conn = 200',
      'default_pool_size = 10',
      `logfile = ${join(dir, 'pgbouncer.log')}`,
      '',
    ].join('\n'),
  );
  // PgBouncer will not run as root: it switches to the postgres user (created by scripts/postgres.sh).
  const args = [join(dir, 'pgbouncer.ini')];
  if (process.getuid?.() === 0) {
    args.unshift('-u', 'postgres');
    chmodSync(dir, 0o777);
    execFileSync('chmod', ['-R', 'a+rw', dir]);
  }
  const proc = spawn(PGBOUNCER ?? 'pgbouncer', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  proc.stderr.on('data', (d: Buffer) => (err += d.toString()));
  t.after(() => {
    proc.kill('SIGTERM');
  });
  try {
    await waitForPort(port, 15_000);
  } catch (e) {
    const log = existsSync(join(dir, 'pgbouncer.log')) ? readFileSync(join(dir, 'pgbouncer.log'), 'utf8') : '';
    throw new Error(`pgbouncer did not start: ${(e as Error).message}\n${err}\n${log}`);
  }
  return {
    pooled: `postgresql://${role}@127.0.0.1:${port}/${db}`,
    direct: `postgresql://${role}@${server.host}/${db}`,
    role,
    schema,
  };
}

describe('PostgreSQL store through PgBouncer in transaction mode', () => {
  it(
    'connects, and with store.listenUrl direct, two instances share every event and hear each other',
    { skip },
    async (t) => {
      const b = await startBouncer(t);
      // Three instances starting at once: their schema checks take the start-up lock in turn.
      const [one, two, three] = await bounded(
        Promise.all([0, 1, 2].map(() => PostgresGatewayStore.open(b.pooled, () => undefined, undefined, b.direct))),
        'three instances to open through PgBouncer',
      );
      t.after(async () => {
        for (const s of [one, two, three]) await s.close().catch(() => undefined);
      });
      // The tables are in the role's schema (its search_path, which PgBouncer leaves to the server).
      const admin = new pg.Client({ connectionString: PG });
      await admin.connect();
      t.after(() => admin.end());
      const tables = await admin.query<{ n: string }>(
        `SELECT tablename AS n FROM pg_tables WHERE schemaname = $1 AND tablename = 'baton_events'`,
        [b.schema],
      );
      assert.equal(tables.rowCount, 1);

      const TASKS = 40;
      const ROUNDS = 5;
      const ids = Array.from({ length: TASKS }, (_, i) => `bt${i}`);
      const mine = new Set(ids);
      let heard = 0;
      two.onRemoteAppend((_agent, taskId) => {
        if (mine.has(taskId)) heard++;
      });
      await bounded(
        Promise.all(
          ids.map((id) => one.createTask(proxyTask(id, JSON.stringify({ id })), { seq: 1, body: `{"s":1}` })),
        ),
        'creates',
      );
      for (let seq = 2; seq <= ROUNDS + 1; seq++)
        await bounded(
          Promise.all(
            ids.map((id) =>
              one.append({
                agent: 'echo',
                taskId: id,
                events: [{ seq, body: `{"s":${seq}}` }],
                state: TaskState.TASK_STATE_WORKING,
                snapshot: JSON.stringify({ id, seq }),
              }),
            ),
          ),
          `appends of round ${seq}`,
        );
      await bounded(
        (async () => {
          while (heard < TASKS * (ROUNDS + 1)) await new Promise((r) => setTimeout(r, 20));
        })(),
        'instance two to hear every append of instance one',
      );
      for (const id of ids)
        assert.deepEqual(
          (await three.readEvents('echo', id, 0, 100)).map((e) => e.seq),
          Array.from({ length: ROUNDS + 1 }, (_, i) => i + 1),
          id,
        );
    },
  );

  it(
    'two gateways on it (store.listenUrl direct): a task started on one is followed live from the other to its end',
    { skip },
    async (t) => {
      const b = await startBouncer(t);
      const token = `team-${randomBytes(16).toString('hex')}`;
      const exec = new SteppingExecutor();
      const remote = await serveSdkAgent(exec, { liveCard: true });
      t.after(() => remote.close());
      const gateway = async (): Promise<Awaited<ReturnType<typeof startGateway>>> => {
        const state = tempDir();
        t.after(() => state[Symbol.dispose]());
        const gw = await startGateway({
          stateDir: state.path,
          store: { kind: 'postgres', url: b.pooled, listenUrl: b.direct },
          tokens: [{ principal: 'team', sha256: sha256HexOf(token) }],
          localAgents: [],
          remoteAgents: [remoteSdkAgent(remote.url)],
          log: () => undefined,
        });
        t.after(() => gw.close());
        return gw;
      };
      const [gwA, gwB] = await bounded(Promise.all([gateway(), gateway()]), 'two gateways to start');
      const onA = streamTask(`${gwA.url}/a2a/remote`, token);
      await until(() => onA.taskId() !== '' && exec.steps >= 3, 'the task to start on A');
      const onB = streamTask(`${gwB.url}/a2a/remote`, token, { taskId: onA.taskId(), lastId: 0 });
      await until(() => exec.steps >= 15, 'more steps while B follows');
      exec.finish = true;
      assert.equal(await bounded(onA.done, 'A to end'), 'TASK_STATE_COMPLETED');
      assert.equal(await bounded(onB.done, 'B to end'), 'TASK_STATE_COMPLETED');
      // B got every event, once and in order, the same as A.
      assert.deepEqual(
        onB.events.map((e) => e.id),
        onB.events.map((_, i) => i + 1),
      );
      assert.deepEqual(stepsOf(onB.events.map((e) => e.data)), stepsOf(onA.events.map((e) => e.data)));
      assert.ok(stepsOf(onB.events.map((e) => e.data)).length >= 15);
    },
  );

  it(
    'without store.listenUrl, the start says that LISTEN hears nothing through the pooler and what to set',
    { skip },
    async (t) => {
      const b = await startBouncer(t);
      const said = await PostgresGatewayStore.open(b.pooled).then(
        async (s) => {
          await s.close();
          return 'opened';
        },
        (e: Error) => e.message,
      );
      assert.match(said, /its LISTEN connection \(store\.url\) received no notification within 5 s/);
      assert.match(said, /PgBouncer's pool_mode = transaction/);
      assert.match(said, /set store\.listenUrl \(or listenUrlEnv\) to a direct or session-pooled connection/);
    },
  );

  it('config: store.listenUrlEnv names the direct connection', (t) => {
    const tmp = tempDir('baton-pgbouncer-config-');
    t.after(() => tmp[Symbol.dispose]());
    const file = join(tmp.path, 'gateway.json');
    writeFileSync(file, JSON.stringify({ store: { kind: 'postgres', urlEnv: 'POOLED', listenUrlEnv: 'DIRECT' } }));
    const cfg = loadGatewayConfig(file, { POOLED: 'postgres://a@pooler/db', DIRECT: 'postgres://a@db/db' });
    assert.deepEqual(cfg.store, { kind: 'postgres', url: 'postgres://a@pooler/db', listenUrl: 'postgres://a@db/db' });
    writeFileSync(
      file,
      JSON.stringify({ store: { kind: 'postgres', url: 'postgres://a@db/db', listenUrl: 'db:5432' } }),
    );
    assert.throws(() => loadGatewayConfig(file, {}), /store\.listenUrl: must be a postgres:\/\/ connection string/);
  });
});
