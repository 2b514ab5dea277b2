/**
 * The PostgreSQL store under real database faults: a PostgreSQL server of this file's own (started with
 * scripts/postgres.sh in a folder of its own, so stopping it or refusing connections disturbs no other
 * test), a gateway relaying a remote SDK agent's task while a client streams it, and the faults an
 * operator or a restart brings: backends ended with pg_terminate_backend, the server stopped and started
 * again, the database refusing new connections, a statement held up by another session's lock, and a
 * connection lost right after the server committed. What must hold: the process does not crash, no
 * event a client got is lost or repeated, the gateway recovers by itself, and a request made meanwhile
 * gets a clear answer to retry (503 with Retry-After).
 *
 * Needs the PostgreSQL binaries; skipped (saying so) when BATON_TEST_PG is not set, as postgres.test.ts.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { createConnection, createServer } from 'node:net';
import type { AddressInfo, Server, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TaskState } from '@a2a-js/sdk';
import { sha256HexOf } from '../../../src/gateway/config';
import { startGateway } from '../../../src/gateway/server';
import type { RunningGateway } from '../../../src/gateway/server';
import { PostgresGatewayStore } from '../../../src/gateway/store/postgresStore';
import { DelegationJournal } from '../../../src/core/delegation';
import { connectAgent, normalizeCard } from '../../../src/node/a2a/clientFactory';
import { DelegationRunner } from '../../../src/node/a2a/delegationRunner';
import { JournalStore } from '../../../src/node/journalStore';
import { makeRequest } from '../delegation/harness';
import { bounded, tempDir } from './helpers';
import {
  inSchema,
  PG,
  pgScript,
  pgSkip,
  remoteSdkAgent,
  sql,
  SteppingExecutor,
  stepsOf,
  streamTask,
  until,
} from './pgFaultHelpers';
import { serveSdkAgent } from './sdkServer';

describe('gateway: PostgreSQL faults', () => {
  // Not made here: the script makes it and, as root, hands it to the postgres user (a folder inside a
  // mkdtemp folder, 0700 root, would be out of that user's reach).
  const serverDir = join(tmpdir(), `baton-pg-faults-${randomBytes(6).toString('hex')}`);
  let base = '';
  const token = `team-${randomBytes(16).toString('hex')}`;
  const remoteExec = new SteppingExecutor();
  let remote: { url: string; close(): Promise<void> } | undefined;
  let running: RunningGateway | undefined;
  const log: string[] = [];
  const stateDir = tempDir();

  /** The gateway relaying `remote`, on a schema of its own (started by the first test that needs it). */
  const gateway = async (): Promise<RunningGateway> => {
    if (running) return running;
    const schema = `down_${randomBytes(4).toString('hex')}`;
    const admin = await sql(base);
    await admin.query(`CREATE SCHEMA ${schema}`);
    await admin.end();
    remote = await serveSdkAgent(remoteExec, { liveCard: true });
    running = await startGateway({
      stateDir: stateDir.path,
      store: { kind: 'postgres', url: inSchema(base, schema, 'faults-gateway') },
      tokens: [{ principal: 'team', sha256: sha256HexOf(token) }],
      localAgents: [],
      log: (l) => log.push(l),
      remoteAgents: [remoteSdkAgent(remote.url)],
    });
    return running;
  };

  before(async () => {
    if (!PG) return;
    const out = await pgScript('start', serverDir);
    base = /BATON_TEST_PG=(\S+)/.exec(out)?.[1] ?? '';
    assert.ok(base, `postgres.sh printed no URL: ${out}`);
  });
  after(async () => {
    await running?.close();
    await remote?.close();
    if (PG) await pgScript('stop', serverDir).catch(() => undefined);
    stateDir[Symbol.dispose]();
  });

  it(
    'a statement held up by a lock and then ended with pg_terminate_backend neither crashes the process nor loses the batch',
    { skip: pgSkip },
    async () => {
      const schema = `lock_${randomBytes(4).toString('hex')}`;
      const admin = await sql(base);
      await admin.query(`CREATE SCHEMA ${schema}`);
      const app = `faults-${schema}`;
      const url = inSchema(base, schema, app);
      const store = await PostgresGatewayStore.open(url, () => undefined);
      const locker = await sql(url);
      try {
        await store.createTask(
          { agent: 'a', id: 't', contextId: 'c', principal: 'p', kind: 'proxy', state: 2, snapshot: '{}', owner: null },
          { seq: 1, body: '{"task":{"id":"t"}}' },
        );
        // Another session holds the event table for a while (a migration, a manual fix).
        await locker.query('BEGIN');
        await locker.query('LOCK TABLE baton_events IN ACCESS EXCLUSIVE MODE');
        const appended = store.append({
          agent: 'a',
          taskId: 't',
          events: [
            { seq: 2, body: '{"statusUpdate":{"taskId":"t","metadata":{"step":1}}}' },
            { seq: 3, body: '{"statusUpdate":{"taskId":"t","metadata":{"step":2}}}' },
          ],
          state: 2,
          snapshot: '{"id":"t"}',
        });
        let waiting: number | undefined;
        await until(async () => {
          const r = await admin.query<{ pid: number }>(
            "SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'",
            [app],
          );
          waiting = r.rows[0]?.pid;
          return waiting !== undefined;
        }, "the store's append to wait for the lock");
        // An operator ends the waiting backend: mid-transaction, with the INSERT running. The driver
        // reports the lost connection as an 'error' event on a client checked out of the pool; the
        // process must not die of it.
        const ended = await admin.query<{ ok: boolean }>('SELECT pg_terminate_backend($1) AS ok', [waiting]);
        assert.equal(ended.rows[0]?.ok, true);
        await new Promise((r) => setTimeout(r, 300));
        await locker.query('COMMIT');
        // The batch is stored once the lock is gone, on a new connection.
        await bounded(appended, 'the append to be stored after the lock is released');
        const rows = await store.readEvents('a', 't', 0, 100);
        assert.deepEqual(
          rows.map((r) => r.seq),
          [1, 2, 3],
        );
        assert.equal((await store.getTask('a', 't'))?.lastSeq, 3);
        assert.equal(await store.integrityCheck(), 'ok');
      } finally {
        await locker.end().catch(() => undefined);
        await store.close();
        await admin.query(`DROP SCHEMA ${schema} CASCADE`);
        await admin.end();
      }
    },
  );

  it(
    'PostgreSQL stopped and started again while a remote task is relayed and streamed: the relay waits and goes on, and the client gets every event once, in order',
    { skip: pgSkip },
    async () => {
      const gw = await gateway();
      const client = streamTask(`${gw.url}/a2a/remote`, token);
      await until(() => client.events.length >= 5, 'the first events to stream');
      await pgScript('pause', serverDir);
      // The remote goes on while the database is down: its steps are relayed once it is back.
      const stepsBefore = remoteExec.steps;
      await until(() => log.some((l) => /PostgreSQL is unavailable/.test(l)), 'the gateway to notice the outage');
      await until(() => remoteExec.steps >= stepsBefore + 25, 'the remote to go on for a second');
      const seenDuringOutage = client.events.length;
      await pgScript('resume', serverDir);
      await until(() => log.some((l) => /PostgreSQL is available again/.test(l)), 'the gateway to store again');
      await until(() => client.events.length > seenDuringOutage + 25, 'the steps made meanwhile to reach the client');
      remoteExec.finish = true;
      assert.equal(await bounded(client.done, 'the stream to end with the task'), 'TASK_STATE_COMPLETED');

      // Everything the client got, once and in order; the store holds exactly that.
      const ids = client.events.map((e) => e.id);
      assert.deepEqual(
        ids,
        ids.map((_, i) => i + 1),
        'ids 1..n, none repeated or skipped',
      );
      const steps = stepsOf(client.events.map((e) => e.data));
      assert.deepEqual(
        steps,
        steps.map((_, i) => i + 1),
        'every step of the remote, in order, none lost while the database was down',
      );
      assert.equal(steps.length, remoteExec.steps);
      const rows = await gw.store.readEvents('remote', client.taskId(), 0, 10_000);
      assert.deepEqual(
        rows.map((r) => r.seq),
        ids,
      );
      for (const [i, r] of rows.entries()) assert.ok(client.events[i].data.includes(String(r.body)), `event ${r.seq}`);
      assert.equal(await gw.store.integrityCheck(), 'ok');
      const row = await gw.store.getTask('remote', client.taskId());
      assert.equal(row?.state, TaskState.TASK_STATE_COMPLETED);
      assert.equal(row?.owner, null);
      // In plain words, once each: down, then back.
      assert.equal(log.filter((l) => /PostgreSQL is unavailable \(/.test(l)).length, 1, log.join('\n'));
      assert.equal(log.filter((l) => /PostgreSQL is available again/.test(l)).length, 1, log.join('\n'));
      assert.deepEqual(
        log.filter((l) => /relay of .* (failed|stream broke)/.test(l)),
        [],
        'the relay is not told the remote broke',
      );
    },
  );

  it(
    'a connection lost after the server committed a batch, before its answer arrived: the batch is stored once, not twice and not refused',
    { skip: pgSkip },
    async () => {
      // A TCP relay between the store and PostgreSQL (the network between them), which can cut the
      // connection that carries a COMMIT right after the server's answer to it, dropping the answer.
      const port = Number(new URL(base).port);
      const committed = Buffer.concat([Buffer.from([0x43, 0, 0, 0, 11]), Buffer.from('COMMIT\0')]);
      let cutNextCommit = false;
      let cut = 0;
      const sockets = new Set<Socket>();
      const relay: Server = createServer((client) => {
        const server = createConnection({ port, host: '127.0.0.1' });
        for (const s of [client, server]) {
          sockets.add(s);
          s.on('close', () => sockets.delete(s));
          s.on('error', () => undefined);
        }
        client.pipe(server);
        server.on('data', (d: Buffer) => {
          if (cutNextCommit && d.includes(committed)) {
            cutNextCommit = false;
            cut++;
            client.destroy();
            server.destroy();
            return;
          }
          client.write(d);
        });
        server.on('close', () => client.destroy());
        client.on('close', () => server.destroy());
      });
      await new Promise<void>((r) => relay.listen(0, '127.0.0.1', r));
      const schema = `commit_${randomBytes(4).toString('hex')}`;
      const admin = await sql(base);
      await admin.query(`CREATE SCHEMA ${schema}`);
      const relayed = new URL(base);
      relayed.port = String((relay.address() as AddressInfo).port);
      const logged: string[] = [];
      const store = await PostgresGatewayStore.open(inSchema(relayed.toString(), schema, 'faults-commit'), (l) =>
        logged.push(l),
      );
      try {
        await store.createTask(
          { agent: 'a', id: 't', contextId: 'c', principal: 'p', kind: 'proxy', state: 2, snapshot: '{}', owner: null },
          { seq: 1, body: '{"task":{"id":"t"}}' },
        );
        cutNextCommit = true;
        await bounded(
          store.append({
            agent: 'a',
            taskId: 't',
            events: [{ seq: 2, body: '{"statusUpdate":{"taskId":"t","metadata":{"step":1}}}' }],
            state: 2,
            snapshot: '{"id":"t"}',
          }),
          'the append whose answer was lost',
        );
        assert.equal(cut, 1, 'the answer to the COMMIT was cut');
        // The next batch continues after it: the task's seqs stay whole.
        await store.append({
          agent: 'a',
          taskId: 't',
          events: [{ seq: 3, body: '{"statusUpdate":{"taskId":"t","metadata":{"step":2}}}' }],
          state: 2,
          snapshot: '{"id":"t"}',
        });
        assert.deepEqual(
          (await store.readEvents('a', 't', 0, 100)).map((r) => r.seq),
          [1, 2, 3],
        );
        assert.equal(await store.integrityCheck(), 'ok');
        assert.ok(
          logged.some((l) => /PostgreSQL is unavailable \(the connection to the database was lost/.test(l)),
          logged.join('\n'),
        );
      } finally {
        await store.close();
        for (const s of sockets) s.destroy();
        await new Promise((r) => relay.close(r));
        await admin.query(`DROP SCHEMA ${schema} CASCADE`);
        await admin.end();
      }
    },
  );

  it(
    'a network that drops every packet without a word (a black hole): statements and connects end as the database unavailable within their timeouts, and an append waiting then is stored once the network is back',
    { skip: pgSkip },
    async () => {
      // A TCP relay that, once blackholed, forwards nothing either way and closes nothing: what a
      // dropped link or a lost firewall state looks like to both ends.
      const port = Number(new URL(base).port);
      let blackhole = false;
      const sockets = new Set<Socket>();
      const relay: Server = createServer((client) => {
        sockets.add(client);
        client.on('close', () => sockets.delete(client));
        client.on('error', () => undefined);
        if (blackhole) return; // accepted, never answered
        const server = createConnection({ port, host: '127.0.0.1' });
        sockets.add(server);
        server.on('close', () => sockets.delete(server));
        server.on('error', () => undefined);
        client.on('data', (d: Buffer) => void (blackhole || server.write(d)));
        server.on('data', (d: Buffer) => void (blackhole || client.write(d)));
        server.on('close', () => client.destroy());
        client.on('close', () => server.destroy());
      });
      await new Promise<void>((r) => relay.listen(0, '127.0.0.1', r));
      const schema = `hole_${randomBytes(4).toString('hex')}`;
      const admin = await sql(base);
      await admin.query(`CREATE SCHEMA ${schema}`);
      const relayed = new URL(base);
      relayed.port = String((relay.address() as AddressInfo).port);
      const logged: string[] = [];
      const store = await PostgresGatewayStore.open(
        inSchema(relayed.toString(), schema, 'faults-hole'),
        (l) => logged.push(l),
        { connectMs: 500, statementMs: 1_000, keepAliveMs: 1_000, idleInTransactionMs: 2_000 },
      );
      try {
        await store.createTask(
          { agent: 'a', id: 't', contextId: 'c', principal: 'p', kind: 'proxy', state: 2, snapshot: '{}', owner: null },
          { seq: 1, body: '{"task":{"id":"t"}}' },
        );
        blackhole = true;
        // A read on a pooled connection gets no answer, then a new connection none either: both end
        // as the database unavailable (a 503 to the client), not a wait of many minutes.
        const started = Date.now();
        await bounded(
          assert.rejects(store.getTask('a', 't'), (e: Error) => e.name === 'StoreUnavailableError'),
          'a read to end while nothing answers',
        );
        await bounded(
          assert.rejects(store.getTask('a', 't'), (e: Error) => e.name === 'StoreUnavailableError'),
          'a read on a new connection to end while nothing answers',
        );
        assert.ok(Date.now() - started < 5_000, `ended after ${Date.now() - started} ms`);
        assert.ok(
          logged.some((l) => /^PostgreSQL is unavailable \(the database did not answer in time: /.test(l)),
          logged.join('\n'),
        );
        // An append meanwhile waits, tried again, and is stored once the network forwards again.
        let stored = false;
        const appended = store
          .append({
            agent: 'a',
            taskId: 't',
            events: [{ seq: 2, body: '{"statusUpdate":{"taskId":"t","metadata":{"step":1}}}' }],
            state: 2,
            snapshot: '{"id":"t"}',
          })
          .then(() => (stored = true));
        await new Promise((r) => setTimeout(r, 2_500));
        assert.equal(stored, false, 'nothing can be stored through the black hole');
        blackhole = false;
        for (const s of sockets) s.destroy(); // the connections cut off stay so; new ones get through
        await bounded(appended, 'the append once the network is back');
        assert.deepEqual(
          (await store.readEvents('a', 't', 0, 100)).map((r) => r.seq),
          [1, 2],
        );
        assert.equal(await store.integrityCheck(), 'ok');
        assert.ok(
          logged.some((l) => /^PostgreSQL is available again/.test(l)),
          logged.join('\n'),
        );
      } finally {
        // Cut first: a statement still waiting (a failure) ends, so closing the store does not hang.
        blackhole = true;
        for (const s of sockets) s.destroy();
        await store.close();
        await new Promise((r) => relay.close(r));
        await admin.query(`DROP SCHEMA ${schema} CASCADE`);
        await admin.end();
      }
    },
  );

  it(
    "a balancer's readiness check (GET /baton/ready, no token) answers 503 while the store takes no heartbeat, and 200 again once it does",
    { skip: pgSkip },
    async () => {
      const schema = `ready_${randomBytes(4).toString('hex')}`;
      const setup = await sql(base);
      await setup.query(`CREATE SCHEMA ${schema}`);
      await setup.end();
      using dir = tempDir();
      // Heartbeats every 500 ms (a take-over time of 3 s): not ready 2 s after the last one stored.
      const gw = await startGateway({
        stateDir: dir.path,
        store: { kind: 'postgres', url: inSchema(base, schema, 'ready-gateway'), takeOverAfterSeconds: 3 },
        localAgents: [],
        log: () => undefined,
      });
      const ready = async (): Promise<{ status: number; body: Record<string, unknown>; retryAfter: string | null }> => {
        const r = await fetch(`${gw.url}/baton/ready`);
        return {
          status: r.status,
          body: (await r.json()) as Record<string, unknown>,
          retryAfter: r.headers.get('retry-after'),
        };
      };
      try {
        assert.deepEqual(await ready(), { status: 200, body: { ready: true }, retryAfter: null });
        const admin = await sql(new URL('/postgres', base).toString());
        try {
          await admin.query('ALTER DATABASE baton ALLOW_CONNECTIONS false');
          await admin.query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = 'baton' AND backend_type = 'client backend'",
          );
          let away = await ready();
          await until(async () => (away = await ready()).status === 503, 'the instance to say it is not ready');
          assert.match(String(away.body.reason), /^its task store has not answered for \d+ s$/);
          assert.equal(away.body.ready, false);
          assert.equal(away.retryAfter, '5');
          // The process itself still serves (a liveness check asks the card).
          assert.equal((await fetch(`${gw.url}/.well-known/agent-card.json`)).status, 200);
        } finally {
          await admin.query('ALTER DATABASE baton ALLOW_CONNECTIONS true');
          await admin.end();
        }
        await until(async () => (await ready()).status === 200, 'the instance to be ready again');
      } finally {
        await gw.close();
      }
    },
  );

  it(
    "the database refusing new connections (ALLOW_CONNECTIONS false, the gateway's connections ended): requests get 503 with Retry-After and a clear message, and are served again once it accepts them, without a restart",
    { skip: pgSkip },
    async () => {
      const gw = await gateway();
      remoteExec.finish = true; // tasks complete at once
      const headers = { 'Content-Type': 'application/json', 'A2A-Version': '1.0', Authorization: `Bearer ${token}` };
      const rpc = (method: string, params: unknown, extra: Record<string, string> = {}): Promise<Response> =>
        fetch(`${gw.url}/a2a/remote`, {
          method: 'POST',
          headers: { ...headers, ...extra },
          body: JSON.stringify({ jsonrpc: '2.0', id: 7, method, params }),
        });
      const message = (): unknown => ({
        message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'hello' }] },
      });
      const sent = (await (await rpc('SendMessage', message())).json()) as { result?: { task?: { id?: string } } };
      const id = sent.result?.task?.id ?? '';
      assert.ok(id, JSON.stringify(sent));
      const from = log.length;

      const admin = await sql(new URL('/postgres', base).toString());
      try {
        await admin.query('ALTER DATABASE baton ALLOW_CONNECTIONS false');
        await admin.query(
          "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = 'baton' AND backend_type = 'client backend'",
        );
        const unavailable = /^the gateway's task store is unavailable \(.+\); try again in a few seconds$/;
        const refused = async (res: Response, what: string): Promise<Record<string, unknown>> => {
          const body = (await res.json()) as { error?: Record<string, unknown> };
          assert.equal(res.status, 503, `${what}: ${JSON.stringify(body)}`);
          assert.equal(res.headers.get('retry-after'), '5', what);
          assert.match(String(body.error?.message), unavailable, what);
          return body.error ?? {};
        };
        for (const [method, params, extra] of [
          ['SendMessage', message(), {}],
          ['SendStreamingMessage', message(), {}],
          ['GetTask', { id }, {}],
          ['ListTasks', {}, {}],
          ['CancelTask', { id }, {}],
          ['SubscribeToTask', { id }, { 'Last-Event-ID': '0' }],
        ] as const) {
          const error = await refused(await rpc(method, params, extra), method);
          assert.equal(error.code, -32603, method);
        }
        const rest = await refused(
          await fetch(`${gw.url}/a2a/remote/tasks/${id}`, { headers }),
          'HTTP+JSON GET /tasks/<id>',
        );
        assert.deepEqual([rest.code, rest.status], [503, 'UNAVAILABLE']);
        await refused(
          await fetch(`${gw.url}/a2a/remote`, {
            method: 'POST',
            headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${token}` },
            body: JSON.stringify({ jsonrpc: '2.0', id: 8, method: 'tasks/get', params: { id } }),
          }),
          'A2A 0.3 tasks/get',
        );
        // The liveness check the docs name still answers: the instance serves, its store is what is away.
        assert.equal((await fetch(`${gw.url}/.well-known/agent-card.json`)).status, 200);
      } finally {
        await admin.query('ALTER DATABASE baton ALLOW_CONNECTIONS true');
        await admin.end();
      }
      // Served again by the same process.
      const res = await rpc('GetTask', { id });
      assert.equal(res.status, 200);
      assert.equal(((await res.json()) as { result?: { id?: string } }).result?.id, id);
      const said = log.slice(from);
      assert.equal(
        said.filter((l) =>
          /^PostgreSQL is unavailable \(the (database does not accept connections|connection to the database was lost|server ended the connection)/.test(
            l,
          ),
        ).length,
        1,
        said.join('\n'),
      );
      assert.equal(said.filter((l) => /^PostgreSQL is available again/.test(l)).length, 1, said.join('\n'));
      assert.deepEqual(
        said.filter((l) => /failed(:| \()|at .*\.ts:\d+/.test(l)),
        [],
        'no stack, no request logged as failed',
      );
    },
  );
  it(
    'a delegation sent while the database refuses connections: the runner is told the gateway is unavailable, not refused, and tries the same message again until it completes with one task',
    { skip: pgSkip },
    async () => {
      const gw = await gateway();
      remoteExec.finish = true; // tasks complete at once
      const raw: unknown = await (await fetch(`${gw.url}/a2a/remote/.well-known/agent-card.json`)).json();
      const card = normalizeCard(raw);
      const iface = card.supportedInterfaces.find(
        (i) => i.protocolBinding === 'JSONRPC' && i.protocolVersion === '1.0',
      );
      assert.ok(iface);
      const endpoint = { url: iface.url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' };
      const connection = await connectAgent({ card, endpoint, getToken: () => Promise.resolve(token) });
      const journals = tempDir();
      const store = new JournalStore(journals.path);
      const admin = await sql(new URL('/postgres', base).toString());
      let allowed = false;
      const allow = async (): Promise<void> => {
        if (allowed) return;
        allowed = true;
        await admin.query('ALTER DATABASE baton ALLOW_CONNECTIONS true');
      };
      try {
        await admin.query('ALTER DATABASE baton ALLOW_CONNECTIONS false');
        await admin.query(
          "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = 'baton' AND backend_type = 'client backend'",
        );
        const request = makeRequest(endpoint, 'hello while the store is away');
        await store.create(request);
        const journal = new DelegationJournal(request);
        const runner = new DelegationRunner({ connection, journal, sink: store });
        try {
          const started = runner.start();
          await until(
            () =>
              journal.view(Date.now()).timeline.some((e) => e.kind === 'notice' && e.code === 'gateway.unavailable'),
            'the runner saying the gateway is unavailable',
          );
          assert.equal(journal.decide(), undefined, 'not taken for a refusal');
          await allow();
          await bounded(started, 'the delegation once the database accepts connections', 60_000);
          await runner.idle();
          const d = journal.decide();
          assert.equal(d?.outcome, 'completed', d?.reason);
          const entries = (await store.load(request.requestId)).entries;
          assert.equal(
            entries.filter((e) => e.kind === 'send').length,
            1,
            'one send: the retries were the same request',
          );
          assert.equal(entries.filter((e) => e.kind === 'task').length, 1, 'one task');
          const said = journal
            .view(Date.now())
            .timeline.flatMap((e) => (e.kind === 'notice' && e.code === 'gateway.unavailable' ? [e] : []))[0];
          assert.match(
            said?.text ?? '',
            /^The gateway is temporarily unavailable; retrying \(HTTP 503 from .*: the gateway's task store is unavailable/,
          );
        } finally {
          runner.dispose();
        }
      } finally {
        await allow();
        await admin.end();
        await store.close();
        journals[Symbol.dispose]();
      }
    },
  );
});
