import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { Artifact, SendMessageRequest, TaskState, TaskStatus } from '@a2a-js/sdk';
import type { StreamResponse } from '@a2a-js/sdk';
import { requestDigest, toVerifiedKey, verifyResultEnvelope } from '../../../src/node/signing';
import type { PublicJwk } from '../../../src/node/signing';
import { startGateway } from '../../../src/gateway/server';
import { retentionPass, retentionWords, startRetention } from '../../../src/gateway/retention';
import type { RetentionPolicy } from '../../../src/gateway/retention';
import type { GatewayStore } from '../../../src/gateway/store/gatewayStore';
import { PostgresGatewayStore } from '../../../src/gateway/store/postgresStore';
import { SqliteGatewayStore } from '../../../src/gateway/store/sqliteStore';
import { SqliteWorkerStore } from '../../../src/gateway/store/sqliteWorkerStore';
import { clientFor, readSse, scriptedAgent, sendRequest, seqOf, suiteGateway, tempDir, userMessage } from './helpers';

const PG = process.env.BATON_TEST_PG;
const skipPg = PG ? false : 'BATON_TEST_PG is not set: start one with eval "$(bash scripts/postgres.sh start)"';

/**
 * A new schema in BATON_TEST_PG, created over `admin` (kept open): `url` connects with it as the search
 * path; `drop` drops it and ends `admin`.
 */
async function scratchSchema(): Promise<{ schema: string; url: string; admin: pg.Client; drop(): Promise<void> }> {
  const schema = `t_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: PG });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${schema}`);
  const url = `${PG ?? ''}${(PG ?? '').includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${schema}`)}`;
  return {
    schema,
    url,
    admin,
    drop: async () => {
      await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await admin.end();
    },
  };
}

const AGENT = 'echo';
const KIB = 1024;

function statusBody(taskId: string, state: string, pad = 0): string {
  return JSON.stringify({
    statusUpdate: {
      taskId,
      contextId: 'ctx',
      status: { state },
      // Random text: PostgreSQL compresses what it stores, a repeated character would take no room.
      metadata: pad
        ? {
            pad: randomBytes(Math.ceil((pad * 3) / 4))
              .toString('base64')
              .slice(0, pad),
          }
        : {},
    },
  });
}

function snapshotOf(taskId: string, state: string): string {
  return JSON.stringify({ id: taskId, contextId: 'ctx', status: { state }, artifacts: [], history: [] });
}

/** A task of `events` events (the last one `padBytes` long), finished unless `finish` is false. */
async function putTask(
  store: GatewayStore,
  id: string,
  o: { finish?: boolean; padBytes?: number; principal?: string; events?: number; owner?: string } = {},
): Promise<void> {
  await store.createTask(
    {
      agent: AGENT,
      id,
      contextId: 'ctx',
      principal: o.principal ?? 'alice',
      kind: 'local',
      state: TaskState.TASK_STATE_WORKING,
      snapshot: snapshotOf(id, 'TASK_STATE_WORKING'),
      owner: o.owner ?? 'inst-1',
    },
    { seq: 1, body: statusBody(id, 'TASK_STATE_WORKING') },
  );
  const n = o.events ?? 3;
  const finish = o.finish ?? true;
  const events = Array.from({ length: n }, (_, i) => ({
    seq: i + 2,
    body: statusBody(
      id,
      finish && i === n - 1 ? 'TASK_STATE_COMPLETED' : 'TASK_STATE_WORKING',
      i === n - 1 ? (o.padBytes ?? 0) : 0,
    ),
  }));
  await store.append({
    agent: AGENT,
    taskId: id,
    events,
    state: finish ? TaskState.TASK_STATE_COMPLETED : TaskState.TASK_STATE_WORKING,
    snapshot: snapshotOf(id, finish ? 'TASK_STATE_COMPLETED' : 'TASK_STATE_WORKING'),
    ...(finish ? { owner: null } : {}),
  });
}

/** The claim's digest and task, whatever else the store records with it. */
const pick = (
  r: { digest: string; taskId: string | null } | undefined,
): { digest: string; taskId: string | null } | undefined => r && { digest: r.digest, taskId: r.taskId };

const tick = (ms = 15): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Steps until the store says there is nothing more to do (bounded). */
async function retainAll(store: GatewayStore, step: Parameters<GatewayStore['retain']>[0]): Promise<number> {
  let deleted = 0;
  for (let i = 0; i < 500; i++) {
    const out = await store.retain(step);
    deleted += out.deleted;
    if (!out.more) return deleted;
  }
  throw new Error('retention did not settle in 500 steps');
}

/** The tests every store passes; `fresh` opens an empty store of that kind. */
function storeSuite(kind: string, fresh: () => Promise<GatewayStore>, skip: string | false): void {
  describe(`retention on the ${kind} store`, { skip }, () => {
    let store: GatewayStore;
    before(async () => {
      if (!skip) store = await fresh();
    });
    after(async () => {
      await store?.close();
    });

    it('deletes finished tasks older than the cutoff, with their claims and push configs, and never an unfinished one', async () => {
      await putTask(store, 'age-old-running', { finish: false });
      await putTask(store, 'age-old');
      await store.claimRequest('alice', AGENT, 'm-old', 'd', 'age-old');
      await store.putPushConfig(AGENT, 'age-old', 'p1', '{}');
      await tick();
      const cutoff = Date.now();
      await tick();
      await putTask(store, 'age-new');
      await store.claimRequest('alice', AGENT, 'm-new', 'd', 'age-new');
      const out = await store.retain({ deleteBefore: cutoff, limit: 50 });
      assert.equal(out.deleted, 1);
      assert.equal(await store.getTask(AGENT, 'age-old'), undefined);
      assert.equal(await store.findRequest('alice', AGENT, 'm-old'), undefined, 'its claim went with it');
      assert.deepEqual(await store.listPushConfigs(AGENT, 'age-old'), []);
      assert.deepEqual(await store.readEvents(AGENT, 'age-old', 0, 100), []);
      assert.ok(await store.getTask(AGENT, 'age-new'));
      assert.deepEqual(pick(await store.findRequest('alice', AGENT, 'm-new')), { digest: 'd', taskId: 'age-new' });
      // Even with every cutoff in the future, a running task stays.
      await retainAll(store, { deleteBefore: Date.now() + 60_000, compactBefore: Date.now() + 60_000, limit: 50 });
      const running = await store.getTask(AGENT, 'age-old-running');
      assert.ok(running);
      assert.equal(running.compacted, false);
      assert.equal((await store.readEvents(AGENT, 'age-old-running', 0, 100)).length, 4);
      assert.equal(await store.integrityCheck(), 'ok');
    });

    it('keeps a finished task while a child it started is unfinished', async () => {
      await putTask(store, 'parent');
      await putTask(store, 'child', { finish: false, principal: `task:${AGENT}/parent` });
      const later = Date.now() + 60_000;
      await retainAll(store, { deleteBefore: later, compactBefore: later, limit: 50 });
      const parent = await store.getTask(AGENT, 'parent');
      assert.ok(parent, 'the parent is kept');
      assert.equal(parent.compacted, false, 'and not compacted');
      await store.append({
        agent: AGENT,
        taskId: 'child',
        events: [{ seq: 5, body: statusBody('child', 'TASK_STATE_COMPLETED') }],
        state: TaskState.TASK_STATE_COMPLETED,
        snapshot: snapshotOf('child', 'TASK_STATE_COMPLETED'),
        owner: null,
      });
      await retainAll(store, { deleteBefore: Date.now() + 60_000, limit: 50 });
      assert.equal(await store.getTask(AGENT, 'parent'), undefined, 'once the child ended, both go');
      assert.equal(await store.getTask(AGENT, 'child'), undefined);
    });

    it('compacts a finished task: events gone, snapshot kept, integrity still ok', async () => {
      await putTask(store, 'compact-me', { events: 20 });
      const before = await store.getTask(AGENT, 'compact-me');
      assert.ok(before);
      const out = await store.retain({ compactBefore: Date.now() + 1, limit: 50 });
      assert.ok(out.compacted >= 1);
      const row = await store.getTask(AGENT, 'compact-me');
      assert.ok(row);
      assert.equal(row.compacted, true);
      assert.equal(row.snapshot, before.snapshot);
      assert.equal(row.lastSeq, 21);
      assert.deepEqual(await store.readEvents(AGENT, 'compact-me', 0, 100), []);
      assert.equal(await store.integrityCheck(), 'ok');
      // A second pass finds nothing left to compact.
      assert.equal((await store.retain({ compactBefore: Date.now() + 1, limit: 50 })).compacted, 0);
    });

    it('forgets instances long dead that own no unfinished task', async () => {
      for (let i = 0; i < 5; i++) await store.heartbeat(`gone-${i}`, 'h', 1000 + i);
      await putTask(store, 'owned', { finish: false, owner: 'gone-0' });
      await tick();
      const pruned = await store.pruneInstances(Date.now());
      assert.ok(pruned >= 4);
      const left = await store.instances();
      assert.ok(left.has('gone-0'), 'the owner of an unfinished task stays');
      for (let i = 1; i < 5; i++) assert.ok(!left.has(`gone-${i}`));
      await store.heartbeat('fresh', 'h', 1);
      assert.equal(await store.pruneInstances(Date.now() - 60_000), 0, 'a live one stays');
      assert.equal(await store.pruneInstances(Date.now() - 60_000, 'fresh'), 1, 'unless it is the one stopping');
    });

    it('deletes the oldest finished tasks while the store is above its cap', async () => {
      const cap = 3 * KIB * KIB;
      const oldRunning = 'cap-running';
      await putTask(store, oldRunning, { finish: false });
      const ids: string[] = [];
      for (let i = 0; i < 120; i++) {
        const id = `cap-${String(i).padStart(3, '0')}`;
        await putTask(store, id, { padBytes: 64 * KIB });
        ids.push(id);
      }
      const deleted = await retainAll(store, { maxBytes: cap, limit: 50 });
      assert.ok(deleted > 0);
      assert.ok(await store.getTask(AGENT, oldRunning), 'an unfinished task is never deleted for space');
      assert.equal(await store.getTask(AGENT, ids[0]), undefined, 'the oldest went');
      assert.ok(await store.getTask(AGENT, ids[ids.length - 1]), 'the newest stayed');
      const kept = ids.filter((_, i) => i >= ids.length - 5);
      for (const id of kept) assert.ok(await store.getTask(AGENT, id), `${id} is among the newest`);
      const left = (await Promise.all(ids.map((id) => store.getTask(AGENT, id)))).filter(Boolean).length;
      // What is left holds at most the cap (64 KiB a task), and the deletes stopped near it.
      assert.ok(left * 64 * KIB <= cap, `${left} tasks of 64 KiB left under a ${cap} byte cap`);
      assert.ok(left * 64 * KIB >= cap / 4, `${left} tasks left: not everything was deleted`);
    });
  });
}

storeSuite(
  'SQLite',
  async () => {
    const dir = tempDir();
    const store = await SqliteWorkerStore.open({ file: join(dir.path, 'gateway.db') });
    const close = store.close.bind(store);
    store.close = async () => {
      await close();
      dir[Symbol.dispose]();
    };
    return store;
  },
  false,
);

storeSuite(
  'PostgreSQL',
  async () => {
    const schema = `t_${randomBytes(6).toString('hex')}`;
    const c = new pg.Client({ connectionString: PG });
    await c.connect();
    await c.query(`CREATE SCHEMA ${schema}`);
    await c.end();
    const url = `${PG ?? ''}${(PG ?? '').includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${schema}`)}`;
    const store = await PostgresGatewayStore.open(url);
    const close = store.close.bind(store);
    store.close = async () => {
      await close();
      const d = new pg.Client({ connectionString: PG });
      await d.connect();
      await d.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await d.end();
    };
    return store;
  },
  skipPg,
);

describe('SQLite store: space is reused', () => {
  it('switches an existing database to incremental auto-vacuum once, and says so', async () => {
    using dir = tempDir();
    const file = join(dir.path, 'old.db');
    const old = new Database(file);
    old.pragma('journal_mode = WAL');
    old.exec(
      `CREATE TABLE baton_tasks (agent TEXT NOT NULL, id TEXT NOT NULL, context_id TEXT NOT NULL, principal TEXT NOT NULL,
        kind TEXT NOT NULL, state INTEGER NOT NULL, last_seq INTEGER NOT NULL, snapshot TEXT NOT NULL,
        owner TEXT, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, PRIMARY KEY (agent, id))`,
    );
    old
      .prepare('INSERT INTO baton_tasks VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)')
      .run(
        AGENT,
        'kept',
        'ctx',
        'alice',
        'local',
        TaskState.TASK_STATE_COMPLETED,
        0,
        snapshotOf('kept', 'x'),
        null,
        1,
        1,
      );
    assert.equal(old.pragma('auto_vacuum', { simple: true }), 0);
    old.close();
    const lines: string[] = [];
    const store = await SqliteWorkerStore.open({ file }, (l) => lines.push(l));
    try {
      assert.equal(lines.length, 1);
      assert.match(lines[0], /switched to incremental auto-vacuum.*one-time VACUUM/);
      const row = await store.getTask(AGENT, 'kept');
      assert.equal(row?.compacted, false, 'the old rows are there, with the new column');
    } finally {
      await store.close();
    }
    const check = new Database(file);
    assert.equal(check.pragma('auto_vacuum', { simple: true }), 2);
    check.close();
    const again: string[] = [];
    const reopened = await SqliteWorkerStore.open({ file }, (l) => again.push(l));
    await reopened.close();
    assert.deepEqual(again, [], 'once only');
  });

  it('a retention pass keeps the database between 80% and 90% of its cap', async () => {
    using dir = tempDir();
    const store = new SqliteGatewayStore({ file: join(dir.path, 'cap.db') });
    try {
      const cap = 4 * KIB * KIB;
      for (let i = 0; i < 120; i++) await putTask(store, `t${String(i).padStart(3, '0')}`, { padBytes: 64 * KIB });
      assert.ok((await store.size()) > cap);
      const policy: RetentionPolicy = {
        keepFinishedMs: 0,
        maxStoreBytes: cap,
        replayWindowMs: 3_600_000,
        intervalMs: 1,
      };
      const pass = await retentionPass(store, policy);
      assert.ok(pass.deleted > 0);
      assert.equal(pass.sizeBytes, await store.size());
      assert.ok(pass.sizeBytes <= cap * 0.8, `${pass.sizeBytes} bytes after the pass, cap ${cap}`);
      assert.ok(pass.sizeBytes >= cap * 0.6, `${pass.sizeBytes} bytes: not more deleted than needed`);
      assert.equal((await retentionPass(store, policy)).deleted, 0, 'under the high-water mark: nothing to do');
      assert.ok(await store.getTask(AGENT, 't119'), 'the newest is kept');
    } finally {
      await store.close();
    }
  });

  it('does not grow through rounds of writing and deleting finished tasks', async () => {
    using dir = tempDir();
    const file = join(dir.path, 'churn.db');
    const store = new SqliteGatewayStore({ file });
    const bytes = (): number => {
      let wal = 0;
      try {
        wal = statSync(`${file}-wal`).size;
      } catch {
        // no WAL
      }
      return statSync(file).size + wal;
    };
    try {
      const sizes: number[] = [];
      for (let round = 0; round < 6; round++) {
        for (let i = 0; i < 40; i++) await putTask(store, `r${round}-${i}`, { padBytes: 64 * KIB });
        const written = bytes();
        assert.ok(written > 40 * 64 * KIB, `round ${round}: the data reached the file (${written} bytes)`);
        await retainAll(store, { deleteBefore: Date.now() + 1, limit: 50 });
        sizes.push(bytes());
        assert.equal(await store.size(), sizes[sizes.length - 1], 'size() is the file and its WAL');
      }
      // Everything deleted each round: the file went back to (about) empty every time, instead of
      // keeping 6 × 40 × 64 KiB of free pages.
      for (const s of sizes) assert.ok(s < 40 * 64 * KIB, `${s} bytes after deleting: the space was handed back`);
      assert.ok(sizes[5] <= sizes[0] + 64 * KIB, `no growth across rounds: ${sizes.join(', ')}`);
    } finally {
      await store.close();
    }
  });
});

describe('PostgreSQL store: deleted rows make room for new ones', { skip: skipPg }, () => {
  it('keeps its tables near one round of data through rounds of writing and deleting (autovacuum reuses the space)', async () => {
    const { url, drop } = await scratchSchema();
    const store = await PostgresGatewayStore.open(url);
    const direct = new pg.Client({ connectionString: url });
    await direct.connect();
    try {
      const sizes: number[] = [];
      for (let round = 0; round < 5; round++) {
        for (let i = 0; i < 30; i++) await putTask(store, `r${round}-${i}`, { padBytes: 64 * KIB });
        await retainAll(store, { deleteBefore: Date.now() + 1, limit: 50 });
        // What autovacuum does after deletes (run here rather than waited for). A transaction of
        // another test on this database can hold back the rows VACUUM may remove for a moment, as it
        // would hold back autovacuum: vacuum again, as autovacuum would, until the space comes back
        // (or a few seconds pass, and the assertion below says so).
        let size = 0;
        for (let attempt = 0; attempt < 20; attempt++) {
          await direct.query('VACUUM baton_tasks, baton_events, baton_requests, baton_push_configs');
          size = await store.size();
          if (sizes.length === 0 || size <= sizes[0] * 1.5) break;
          await new Promise((resolve) => setTimeout(resolve, 250));
        }
        sizes.push(size);
      }
      assert.ok(sizes[4] <= sizes[0] * 1.5, `no steady growth across rounds: ${sizes.join(', ')}`);
    } finally {
      await direct.end();
      await store.close();
      await drop();
    }
  });

  it('adds the compacted column to a baton_tasks table made before it', async () => {
    const { schema, url, admin, drop } = await scratchSchema();
    await admin.query(
      `CREATE TABLE ${schema}.baton_tasks (agent TEXT NOT NULL, id TEXT NOT NULL, context_id TEXT NOT NULL, principal TEXT NOT NULL,
        kind TEXT NOT NULL, state INTEGER NOT NULL, last_seq BIGINT NOT NULL, snapshot TEXT NOT NULL,
        owner TEXT, created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL, PRIMARY KEY (agent, id))`,
    );
    await admin.query(
      `INSERT INTO ${schema}.baton_tasks VALUES ($1, 'old', 'ctx', 'alice', 'local', $2, 0, '{}', NULL, 1, 1)`,
      [AGENT, TaskState.TASK_STATE_COMPLETED],
    );
    const store = await PostgresGatewayStore.open(url);
    try {
      assert.equal((await store.getTask(AGENT, 'old'))?.compacted, false);
      assert.equal((await store.retain({ compactBefore: Date.now(), limit: 50 })).compacted, 1);
      assert.equal((await store.getTask(AGENT, 'old'))?.compacted, true);
    } finally {
      await store.close();
      await drop();
    }
  });

  it('runs one retention step at a time across instances (advisory lock)', async () => {
    const { url, drop } = await scratchSchema();
    const store = await PostgresGatewayStore.open(url);
    const other = new pg.Client({ connectionString: url });
    await other.connect();
    try {
      await putTask(store, 'done');
      await other.query('BEGIN');
      await other.query('SELECT pg_advisory_xact_lock(4242002)');
      const blocked = await store.retain({ deleteBefore: Date.now() + 1, limit: 50 });
      assert.equal(blocked.busy, true);
      assert.ok(await store.getTask(AGENT, 'done'), 'nothing done while the other holds the lock');
      await other.query('COMMIT');
      const ran = await store.retain({ deleteBefore: Date.now() + 1, limit: 50 });
      assert.equal(ran.deleted, 1);
    } finally {
      await other.end();
      await store.close();
      await drop();
    }
  });
});

const COMPACT_NOW: RetentionPolicy = { keepFinishedMs: 0, maxStoreBytes: 0, replayWindowMs: 0, intervalMs: 3_600_000 };

describe('gateway: a compacted task', () => {
  const gw = suiteGateway({ localAgents: [scriptedAgent({ steps: 30 })], retention: COMPACT_NOW });

  it('still answers GetTask with a result envelope that verifies, and a replay gets its snapshot, said to be compacted', async () => {
    const cardUrl = `${gw.url}/a2a/echo/.well-known/agent-card.json`;
    const card = (await (await fetch(cardUrl, { headers: { 'A2A-Version': '1.0' } })).json()) as {
      capabilities: { extensions: Array<{ uri: string; params?: { publicKeyJwk?: PublicJwk } }> };
    };
    const jwk = card.capabilities.extensions.find((e) => e.uri === 'urn:baton:a2a:signed-result:v1')?.params
      ?.publicKeyJwk as PublicJwk;
    const client = await clientFor(cardUrl, gw.token);
    const msg = userMessage('format src');
    const done = await client.sendMessage(sendRequest(msg));
    assert.ok('id' in done);
    const before = await gw.store.getTask('echo', done.id);
    assert.ok(before && before.lastSeq > 30);
    const pass = await retentionPass(gw.store, COMPACT_NOW, undefined, Date.now() + 1);
    assert.ok(pass.compacted >= 1);
    assert.deepEqual(await gw.store.readEvents('echo', done.id, 0, 1000), [], 'the events are gone');

    const task = await client.getTask({ tenant: '', id: done.id });
    assert.equal(task.status?.state, TaskState.TASK_STATE_COMPLETED);
    const artifacts = task.artifacts.map(
      (a) => Artifact.toJSON(a) as { artifactId: string; name?: string; parts: unknown[] },
    );
    assert.ok(artifacts.length > 0, 'the artifacts are kept');
    const ok = await verifyResultEnvelope(String(task.metadata?.['baton/resultEnvelope']), {
      keys: [await toVerifiedKey(jwk)],
      taskId: task.id,
      artifacts,
      requestDigest: requestDigest(SendMessageRequest.toJSON(sendRequest(msg)) as Record<string, unknown>),
      status: TaskStatus.toJSON(task.status ?? { state: 0, message: undefined, timestamp: undefined }) as Record<
        string,
        unknown
      >,
    });
    assert.equal(ok.ok, true, JSON.stringify(ok));

    // Replay from seq 3: one task event at the last seq, marked compacted, then the stream closes.
    const res = await fetch(`${gw.url}/a2a/echo`, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        Authorization: `Bearer ${gw.token}`,
        'A2A-Version': '1.0',
        'A2A-Extensions': 'urn:baton:a2a:replay:v1',
        'Last-Event-ID': '3',
        Accept: 'text/event-stream',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SubscribeToTask', params: { id: done.id } }),
    });
    assert.equal(res.status, 200);
    const events = await readSse(res);
    assert.equal(events.length, 1, JSON.stringify(events));
    assert.equal(events[0].id, String(before.lastSeq));
    const body = JSON.parse(events[0].data) as { result?: { task?: { metadata?: Record<string, unknown> } } };
    const md = body.result?.task?.metadata ?? {};
    assert.equal(md['baton/compacted'], true);
    assert.equal(md['baton/seq'], before.lastSeq);
    assert.equal(typeof md['baton/resultEnvelope'], 'string');

    // The SDK client, as Baton's own client resumes (Last-Event-ID), gets the same: the task, then the end.
    const replayed: StreamResponse[] = [];
    for await (const ev of client.resubscribeTask(
      { tenant: '', id: done.id },
      { serviceParameters: { 'Last-Event-ID': '0' } },
    ))
      replayed.push(ev);
    assert.equal(replayed.length, 1);
    assert.equal(replayed[0].payload?.$case, 'task');
    assert.equal(seqOf(replayed[0]), before.lastSeq);
  });

  it('reports the store size at GET /baton/instance', async () => {
    const res = await fetch(`${gw.url}/baton/instance`, { headers: { Authorization: `Bearer ${gw.token}` } });
    const info = (await res.json()) as { store?: { kind?: string; sizeBytes?: number; maxBytes?: number | null } };
    assert.equal(info.store?.kind, 'sqlite');
    assert.ok((info.store?.sizeBytes ?? 0) > 0);
    assert.equal(info.store?.maxBytes, null);
  });
});

describe('gateway: instance rows', () => {
  it('20 starts and stops leave at most one row in the instances table', async () => {
    using dir = tempDir();
    for (let i = 0; i < 20; i++) {
      const gw = await startGateway({ stateDir: dir.path, localAgents: [scriptedAgent()], log: () => undefined });
      const rows = await gw.store.instances();
      assert.ok(rows.size <= 1, `start ${i}: ${rows.size} rows`);
      await gw.close();
    }
    const check = new Database(join(dir.path, 'gateway.db'));
    const n = (check.prepare('SELECT count(*) AS n FROM baton_instances').get() as { n: number }).n;
    check.close();
    assert.equal(n, 0);
  });

  it('a start forgets instances long dead (as a kill -9 leaves them)', async () => {
    using dir = tempDir();
    const gw0 = await startGateway({ stateDir: dir.path, localAgents: [scriptedAgent()], log: () => undefined });
    await gw0.close();
    const db = new Database(join(dir.path, 'gateway.db'));
    const old = Date.now() - 3_600_000;
    for (let i = 0; i < 20; i++)
      db.prepare('INSERT INTO baton_instances (id, host, pid, heartbeat_at) VALUES (?, ?, ?, ?)').run(
        `killed-${i}`,
        'h',
        999_000 + i,
        old,
      );
    db.close();
    const gw = await startGateway({ stateDir: dir.path, localAgents: [scriptedAgent()], log: () => undefined });
    try {
      const rows = await gw.store.instances();
      assert.deepEqual([...rows.keys()], [gw.instanceId]);
    } finally {
      await gw.close();
    }
  });
});

describe('retention job: a policy taken while it runs (SIGHUP)', () => {
  it('runs a pass with the new policy at once, and again after a pass that was under way', async () => {
    using dir = tempDir();
    const store = await SqliteWorkerStore.open({ file: join(dir.path, 'gateway.db') });
    const hour = 3_600_000;
    const policy: RetentionPolicy = { keepFinishedMs: 0, maxStoreBytes: 0, replayWindowMs: hour, intervalMs: hour };
    const passes: string[] = [];
    const job = startRetention(store, policy, (line) => passes.push(line));
    try {
      await new Promise((r) => setTimeout(r, 100));
      assert.equal(passes.length, 0, 'nothing runs before the interval');
      job.setPolicy({ ...policy, maxStoreBytes: 512 * 1024 * 1024 });
      /** Waits for a pass whose line ends with `cap`. */
      const passWith = async (cap: string): Promise<void> => {
        const end = Date.now() + 10_000;
        while (!passes.some((l) => l.endsWith(`(cap ${cap})`))) {
          if (Date.now() > end)
            throw new Error(`timed out waiting for a pass with cap ${cap}: ${JSON.stringify(passes)}`);
          await new Promise((r) => setTimeout(r, 10));
        }
      };
      await passWith('512.0 MB');
      // Two policies in a row, the second while a pass may be under way: the latest one gets a pass.
      job.setPolicy({ ...policy, maxStoreBytes: 256 * 1024 * 1024 });
      job.setPolicy({ ...policy, maxStoreBytes: 128 * 1024 * 1024 });
      await passWith('128.0 MB');
      assert.throws(() => job.setPolicy({ ...policy, intervalMs: 0 }), /at least 1 ms/);
    } finally {
      await job.stop();
      await store.close();
    }
  });

  it('says a policy in the config file’s words', () => {
    assert.equal(
      retentionWords({
        keepFinishedMs: 24 * 3_600_000,
        maxStoreBytes: 512 * 1024 * 1024,
        replayWindowMs: 90 * 60_000,
        intervalMs: 30_000,
      }),
      'cap 512.0 MB, finished tasks kept 24 h, events 90 min, every 30 s',
    );
    assert.equal(
      retentionWords({ keepFinishedMs: 0, maxStoreBytes: 0, replayWindowMs: 0, intervalMs: 60_000 }),
      'no size cap, finished tasks kept, events 0 min, every 60 s',
    );
  });
});
