/**
 * The PostgreSQL store with the roles teams really give a service: not a superuser. Since PostgreSQL
 * 15 a role may not create tables in `public` unless it owns the database, and many teams have a
 * database administrator create the tables once and give the service's role SELECT, INSERT, UPDATE and
 * DELETE only. Each case on a real server: what the gateway says, and that doing what it says works.
 * Also a transaction the server rolls back to be tried again (a deadlock, a serialization failure).
 */
import { describe, it } from 'node:test';
import type { TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import pg from 'pg';
import { TaskState } from '@a2a-js/sdk';
import {
  PostgresGatewayStore,
  postgresSchemaSql,
  schemaObjects,
  unavailableReason,
} from '../../../src/gateway/store/postgresStore';
import { bounded } from './helpers';
import { openFails, PG, pgSkip, proxyTask, testSchema } from './pgFaultHelpers';

const CLI = resolve(__dirname, '../../../src/gateway/cli.ts');

/** `base` as another role (password auth is trust on the test server's loopback) in `schema`. */
function urlAs(base: string, role: string, schema: string): string {
  const u = new URL(base);
  u.username = role;
  u.password = '';
  u.searchParams.set('options', `-c search_path=${schema}`);
  return u.toString();
}

/** A schema owned by the test's superuser, and a login role with nothing on it; both dropped after. */
async function setUp(t: TestContext): Promise<{ admin: pg.Client; schema: string; role: string; url: string }> {
  const base = PG ?? '';
  const tag = randomBytes(5).toString('hex');
  const schema = `roles_${tag}`;
  const role = `svc_${tag}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${schema}`);
  await admin.query(`CREATE ROLE ${role} LOGIN`);
  t.after(async () => {
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.query(`DROP OWNED BY ${role}`).catch(() => undefined);
    await admin.query(`DROP ROLE IF EXISTS ${role}`);
    await admin.end();
  });
  return { admin, schema, role, url: urlAs(base, role, schema) };
}

/** Runs `baton-gateway --print-postgres-schema` and returns what it printed. */
function printedSchema(): Promise<string> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, ['--import', 'tsx', CLI, '--print-postgres-schema'], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.once('error', fail);
    child.once('exit', (code) => (code === 0 ? done(out) : fail(new Error(`exit ${String(code)}`))));
  });
}

/** A task made, appended to and read back: what the gateway does with its tables. */
async function useIt(url: string): Promise<void> {
  const store = await bounded(PostgresGatewayStore.open(url), 'the store to open');
  try {
    const id = `t-${randomBytes(4).toString('hex')}`;
    await store.createTask(proxyTask(id, JSON.stringify({ id })), { seq: 1, body: '{"a":1}' });
    await store.append({
      agent: 'echo',
      taskId: id,
      events: [{ seq: 2, body: '{"a":2}' }],
      state: TaskState.TASK_STATE_COMPLETED,
      snapshot: JSON.stringify({ id, done: true }),
    });
    assert.deepEqual(
      (await store.readEvents('echo', id, 0, 10)).map((e) => e.seq),
      [1, 2],
    );
    assert.equal((await store.getTask('echo', id))?.state, TaskState.TASK_STATE_COMPLETED);
  } finally {
    await store.close();
  }
}

describe('PostgreSQL store: a service role that is not a superuser', () => {
  it(
    'may not create the tables: says so and what to grant; with CREATE granted it makes them',
    { skip: pgSkip },
    async (t) => {
      const { admin, schema, role, url } = await setUp(t);
      await admin.query(`GRANT USAGE ON SCHEMA ${schema} TO ${role}`);
      const said = await openFails(url);
      assert.match(said, new RegExp(`the role ${role} may not create it \\(permission denied for schema ${schema}\\)`));
      assert.match(said, /lacks baton_tasks, baton_events/);
      assert.ok(said.includes(`GRANT CREATE ON SCHEMA ${schema} TO ${role};`), said);
      assert.ok(said.includes('baton-gateway --print-postgres-schema'), said);
      assert.doesNotMatch(said, /accepts connections/, 'not a connection problem');
      await admin.query(`GRANT CREATE ON SCHEMA ${schema} TO ${role}`);
      await useIt(url);
    },
  );

  it(
    'with tables an administrator made from --print-postgres-schema, it needs only the four privileges it names',
    { skip: pgSkip },
    async (t) => {
      const { admin, schema, role, url } = await setUp(t);
      await admin.query(`GRANT USAGE ON SCHEMA ${schema} TO ${role}`);
      const sql = await printedSchema();
      assert.equal(sql, postgresSchemaSql());
      await admin.query(`SET search_path TO ${schema}`);
      await admin.query(sql);
      // Made: every table and index the store checks for.
      const made = await admin.query<{ n: string }>(
        `SELECT relname AS n FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace WHERE s.nspname = $1`,
        [schema],
      );
      const names = new Set(made.rows.map((r) => r.n));
      const want = schemaObjects();
      for (const n of [...want.tables.keys(), ...want.indexes]) assert.ok(names.has(n), `${n} made`);

      const said = await openFails(url);
      assert.match(
        said,
        new RegExp(`the role ${role} lacks privileges the gateway needs on its tables in schema ${schema}`),
      );
      assert.match(said, /baton_events: SELECT, INSERT, UPDATE, DELETE/);
      const grant = /have their owner run: (GRANT .*;)$/.exec(said)?.[1];
      assert.equal(grant, `GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA ${schema} TO ${role};`);
      await admin.query(grant ?? '');
      // No CREATE on the schema, owns nothing: the tables are complete, so no DDL runs.
      await useIt(url);

      // An index missing (an upgrade added one, say): the role may not add it; the owner runs the SQL again.
      await admin.query(`DROP INDEX ${schema}.baton_requests_by_task`);
      const again = await openFails(url);
      assert.match(
        again,
        new RegExp(`schema ${schema} lacks baton_requests_by_task, and the role ${role} may not add it`),
      );
      assert.match(again, /have the tables' owner run the SQL that `baton-gateway --print-postgres-schema` prints/);
      await admin.query(sql);
      await useIt(url);
    },
  );

  it('a search_path naming no schema the role may use is said plainly', { skip: pgSkip }, async (t) => {
    const { role } = await setUp(t);
    const said = await openFails(urlAs(PG ?? '', role, `nosuch_${randomBytes(3).toString('hex')}`));
    assert.match(said, /no schema of its search_path exists or may be used by the role/);
  });
});

describe('PostgreSQL store: a transaction the server rolls back to be tried again', () => {
  for (const [code, what] of [
    ['40001', 'a serialization failure'],
    ['40P01', 'a deadlock'],
  ] as const)
    it(`is run again after ${what} (SQLSTATE ${code}); its events are stored once`, { skip: pgSkip }, async (t) => {
      const { admin, schema, url } = await testSchema(t, PG ?? '', 'retry');
      const store = await bounded(PostgresGatewayStore.open(url), 'the store to open');
      t.after(() => store.close());
      // The first two inserts of an event whose body says so fail as the server fails them.
      await admin.query(`SET search_path TO ${schema}`);
      // A sequence counts the failures: it is not rolled back with the failing transaction.
      await admin.query(`CREATE SEQUENCE failures`);
      await admin.query(`CREATE FUNCTION fail_twice() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          IF NEW.body LIKE '%"fail"%' AND nextval('${schema}.failures') <= 2 THEN
            RAISE EXCEPTION 'as the server would' USING ERRCODE = '${code}';
          END IF;
          RETURN NEW;
        END $$`);
      await admin.query(
        `CREATE TRIGGER fail_twice BEFORE INSERT ON baton_events FOR EACH ROW EXECUTE FUNCTION fail_twice()`,
      );
      const id = 'retried';
      await store.createTask(proxyTask(id, '{}'), { seq: 1, body: '{"a":1}' });
      await bounded(
        store.append({
          agent: 'echo',
          taskId: id,
          events: [{ seq: 2, body: '{"fail":true}' }],
          state: TaskState.TASK_STATE_WORKING,
          snapshot: '{}',
        }),
        'the append',
      );
      assert.equal(Number((await admin.query<{ v: string }>('SELECT last_value AS v FROM failures')).rows[0]?.v), 3);
      assert.deepEqual(
        (await store.readEvents('echo', id, 0, 10)).map((e) => e.body),
        ['{"a":1}', '{"fail":true}'],
      );
    });
});

describe('PostgreSQL store: a database that turns read-only, as in a failover', () => {
  it(
    'holds the events while writes are refused as read-only, stores them once writes come back, and will not start read-only',
    { skip: pgSkip },
    async (t) => {
      const { admin, schema, role, url } = await setUp(t);
      await admin.query(`GRANT USAGE, CREATE ON SCHEMA ${schema} TO ${role}`);
      const log: string[] = [];
      const store = await bounded(
        PostgresGatewayStore.open(url, (l) => log.push(l)),
        'the store to open',
      );
      t.after(() => store.close());
      const id = 'failover';
      await store.createTask(proxyTask(id, '{}'), { seq: 1, body: '{"s":1}' });
      const append = (seq: number): Promise<void> =>
        store.append({
          agent: 'echo',
          taskId: id,
          events: [{ seq, body: `{"s":${seq}}` }],
          state: TaskState.TASK_STATE_WORKING,
          snapshot: '{}',
        });
      await append(2);
      // The primary is demoted: new sessions are read-only, and the old ones are cut.
      const cut = (): Promise<unknown> =>
        admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1', [role]);
      await admin.query(`ALTER ROLE ${role} SET default_transaction_read_only = on`);
      await cut();
      let stored = false;
      const third = append(3).then(() => (stored = true));
      const seqsNow = async (): Promise<number[]> =>
        (
          await admin.query<{ seq: string }>(`SELECT seq FROM ${schema}.baton_events WHERE task_id = $1 ORDER BY seq`, [
            id,
          ])
        ).rows.map((r) => Number(r.seq));
      await new Promise((r) => setTimeout(r, 1500));
      assert.equal(stored, false, 'not acknowledged while the database is read-only');
      assert.deepEqual(await seqsNow(), [1, 2]);
      // Said once per outage, with its first cause (the cut connections, or the read-only answer).
      assert.ok(
        log.some((l) => l.startsWith('PostgreSQL is unavailable (')),
        log.join('\n'),
      );
      assert.equal(
        unavailableReason(
          Object.assign(new Error('cannot execute INSERT in a read-only transaction'), { code: '25006' }),
        ),
        'the database is read-only (a standby, or a failover in progress)',
      );
      // A gateway started meanwhile does not start, and says why.
      const said = await openFails(url);
      assert.match(
        said,
        /its sessions are read-only \(default_transaction_read_only is on for the database or the role\)/,
      );
      // The new primary answers: the held batch is stored, once.
      await admin.query(`ALTER ROLE ${role} RESET default_transaction_read_only`);
      await cut();
      await bounded(third, 'the held batch to be stored');
      await append(4);
      assert.deepEqual(await seqsNow(), [1, 2, 3, 4]);
      assert.ok(
        log.some((l) => l.startsWith('PostgreSQL is available again')),
        log.join('\n'),
      );
    },
  );
});

describe('PostgreSQL store: a role whose idle sessions are ended (idle_session_timeout)', () => {
  it(
    'keeps its LISTEN connection, so an instance idle for longer still hears the next append at once',
    { skip: pgSkip },
    async (t) => {
      const { admin, schema, role, url } = await setUp(t);
      await admin.query(`GRANT USAGE, CREATE ON SCHEMA ${schema} TO ${role}`);
      await admin.query(`ALTER ROLE ${role} SET idle_session_timeout = '500ms'`);
      const log: string[] = [];
      const a = await bounded(
        PostgresGatewayStore.open(url, (l) => log.push(`a: ${l}`)),
        'a to open',
      );
      t.after(() => a.close());
      const b = await bounded(
        PostgresGatewayStore.open(url, (l) => log.push(`b: ${l}`)),
        'b to open',
      );
      t.after(() => b.close());
      const heard: number[] = [];
      b.onRemoteAppend((_agent, taskId, lastSeq) => {
        if (taskId === 'idle') heard.push(lastSeq);
      });
      await a.createTask(proxyTask('idle'), { seq: 1, body: '{"s":1}' });
      // Idle for four times the timeout.
      await new Promise((r) => setTimeout(r, 2000));
      await a.append({
        agent: 'echo',
        taskId: 'idle',
        events: [{ seq: 2, body: '{"s":2}' }],
        state: TaskState.TASK_STATE_WORKING,
        snapshot: '{}',
      });
      await bounded(
        (async () => {
          while (!heard.includes(2)) await new Promise((r) => setTimeout(r, 10));
        })(),
        'b to hear the append',
        2000,
      );
      assert.deepEqual(
        log.filter((l) => l.includes('LISTEN connection lost')),
        [],
        'no LISTEN connection was ended',
      );
    },
  );
});
