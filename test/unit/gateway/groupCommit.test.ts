/**
 * Appends of many tasks at once. SQLite: writes that wait together share one transaction (an append
 * checked before it writes, every other write in its own savepoint); on real SQLite files, through the
 * store itself, the queue the store's thread runs, and the thread (SqliteWorkerStore). A commit is made to fail for real with a deferred foreign key that a
 * trigger violates when a page carries a marker: SQLite checks it at COMMIT. PostgreSQL (one transaction
 * per append; the server shares WAL flushes between concurrent commits): two stores on one schema, as
 * two instances.
 */
import { describe, it } from 'node:test';
import type { TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import pg from 'pg';
import { TaskState } from '@a2a-js/sdk';
import { channelsOf, PostgresGatewayStore } from '../../../src/gateway/store/postgresStore';
import { GATHER_MS, GATHER_WRITES, SqliteCallQueue } from '../../../src/gateway/store/sqliteCallQueue';
import type { CallQueueOptions } from '../../../src/gateway/store/sqliteCallQueue';
import { SqliteGatewayStore, hasNodeSqlite, toPage } from '../../../src/gateway/store/sqliteStore';
import type { GroupWrite, PageBatch } from '../../../src/gateway/store/sqliteStore';
import { SqliteWorkerStore } from '../../../src/gateway/store/sqliteWorkerStore';
import type { StoreCall, StoreReply } from '../../../src/gateway/store/sqliteWorkerStore';
import type { EventRow, GatewayStore, NewTask } from '../../../src/gateway/store/gatewayStore';
import { bounded, tempDir } from './helpers';
import { testSchema } from './pgFaultHelpers';

interface RawDb {
  exec(sql: string): void;
  close(): void;
}
const Database = createRequire(__filename)('better-sqlite3') as new (file: string) => RawDb;

const AGENT = 'echo';
const MARK = 'FAIL-COMMIT';
const DRIVERS = hasNodeSqlite() ? (['better-sqlite3', 'node:sqlite'] as const) : (['better-sqlite3'] as const);

const body = (taskId: string, seq: number, mark = false): string =>
  JSON.stringify({ statusUpdate: { taskId, seq, text: mark ? MARK : `step ${seq}` } });
const row = (taskId: string, seq: number, mark = false): EventRow => ({ seq, body: body(taskId, seq, mark) });
const rows = (taskId: string, from: number, to: number): EventRow[] =>
  Array.from({ length: to - from + 1 }, (_, i) => row(taskId, from + i));

function newTask(id: string): NewTask {
  return {
    agent: AGENT,
    id,
    contextId: 'ctx',
    principal: 'alice',
    kind: 'proxy',
    state: TaskState.TASK_STATE_WORKING,
    snapshot: JSON.stringify({ id }),
    owner: 'inst-1',
  };
}

function page(taskId: string, events: readonly EventRow[]): PageBatch {
  return {
    agent: AGENT,
    taskId,
    state: TaskState.TASK_STATE_WORKING,
    snapshot: JSON.stringify({ id: taskId, last: events[events.length - 1].seq }),
    ...toPage(taskId, events),
  };
}

const appendW = (taskId: string, events: readonly EventRow[]): GroupWrite => ({
  method: 'appendPage',
  args: [page(taskId, events)],
});
const createW = (id: string): GroupWrite => ({ method: 'createTask', args: [newTask(id), row(id, 1)] });

function append(store: GatewayStore, taskId: string, events: readonly EventRow[]): Promise<void> {
  return store.append({
    agent: AGENT,
    taskId,
    events,
    state: TaskState.TASK_STATE_WORKING,
    snapshot: JSON.stringify({ id: taskId, last: events[events.length - 1].seq }),
  });
}

/**
 * Appends `rounds` batches of 1 to 3 rows (the size varies by task `i` and round) to task `id`, one
 * after another as its writer does, from seq 2 on; `after` runs after each batch with its last seq.
 * Resolves with the next seq.
 */
async function appendRounds(
  store: GatewayStore,
  id: string,
  i: number,
  rounds: number,
  after: (lastSeq: number) => Promise<void> = () => Promise.resolve(),
): Promise<number> {
  let next = 2;
  for (let r = 0; r < rounds; r++) {
    const n = 1 + ((i + r) % 3);
    await append(store, id, rows(id, next, next + n - 1));
    await after(next + n - 1);
    next += n;
  }
  return next;
}

/** The seq of task `i`'s last row after `appendRounds` (its first row comes with createTask). */
function lastSeqAfter(i: number, rounds: number): number {
  let last = 1;
  for (let r = 0; r < rounds; r++) last += 1 + ((i + r) % 3);
  return last;
}

/** A state folder made by the store, with `sql` run on it (a trigger that makes some writes fail for real). */
async function storeFileWith(dir: string, sql: string): Promise<string> {
  const file = join(dir, 'baton.sqlite');
  await new SqliteGatewayStore({ file, driver: 'better-sqlite3' }).close();
  const raw = new Database(file);
  raw.exec(sql);
  raw.close();
  return file;
}

/** A state folder whose COMMIT fails whenever the transaction stored a page carrying MARK. */
function failingCommitFile(dir: string): Promise<string> {
  return storeFileWith(
    dir,
    `
CREATE TABLE fail_parent (id INTEGER PRIMARY KEY);
CREATE TABLE fail_child (parent INTEGER REFERENCES fail_parent (id) DEFERRABLE INITIALLY DEFERRED);
CREATE TRIGGER fail_on_mark AFTER INSERT ON baton_event_pages WHEN instr(NEW.bodies, '${MARK}') > 0
BEGIN INSERT INTO fail_child (parent) VALUES (1); END;`,
  );
}

/**
 * A state folder whose database refuses to insert a page carrying MARK, as a full disk would refuse
 * a write that is otherwise in order (past the store's own checks).
 */
function refusingPageFile(dir: string): Promise<string> {
  return storeFileWith(
    dir,
    `CREATE TRIGGER refuse_mark BEFORE INSERT ON baton_event_pages WHEN instr(NEW.bodies, '${MARK}') > 0
BEGIN SELECT RAISE(ABORT, 'page refused by the database'); END;`,
  );
}

/**
 * Commits a group with a marked append of task b on a store whose database fails it (`error`): the
 * group throws and stores nothing; the store is not left inside a transaction, and the same writes
 * without the marked one then commit.
 */
async function assertGroupFailsWhole(store: SqliteGatewayStore, error: RegExp): Promise<void> {
  await store.createTask(newTask('a'), row('a', 1));
  await store.createTask(newTask('b'), row('b', 1));

  assert.throws(
    () =>
      store.commitGroup([
        appendW('a', rows('a', 2, 3)),
        createW('c'),
        appendW('b', [row('b', 2, true)]),
        appendW('a', rows('a', 4, 4)),
      ]),
    error,
  );
  assert.deepEqual(await store.readEvents(AGENT, 'a', 0, 100), rows('a', 1, 1));
  assert.deepEqual(await store.readEvents(AGENT, 'b', 0, 100), rows('b', 1, 1));
  assert.equal(await store.getTask(AGENT, 'c'), undefined);
  assert.equal((await store.getTask(AGENT, 'a'))?.lastSeq, 1);

  const outcomes = store.commitGroup([appendW('a', rows('a', 2, 3)), createW('c'), appendW('a', rows('a', 4, 4))]);
  assert.deepEqual(
    outcomes.map((o) => o.ok),
    [true, true, true],
  );
  await append(store, 'b', rows('b', 2, 2));
  assert.deepEqual(await store.readEvents(AGENT, 'a', 0, 100), rows('a', 1, 4));
  assert.deepEqual(await store.readEvents(AGENT, 'b', 0, 100), rows('b', 1, 2));
  assert.equal(await store.integrityCheck(), 'ok');
}

function openStore(t: TestContext, file: string, driver: (typeof DRIVERS)[number] = 'better-sqlite3') {
  const store = new SqliteGatewayStore({ file, driver });
  t.after(() => store.close().catch(() => undefined));
  return store;
}

/** A queue on a real store, recording its replies and the size of every group it commits. */
function queueOn(store: SqliteGatewayStore, maxWrites?: number, extra: Partial<CallQueueOptions> = {}) {
  const replies: StoreReply[] = [];
  /** How many replies each message to the gateway carried. */
  const messages: number[] = [];
  const groups: number[] = [];
  const commitGroup = store.commitGroup.bind(store);
  store.commitGroup = (writes) => {
    groups.push(writes.length);
    return commitGroup(writes);
  };
  let closed = 0;
  const queue = new SqliteCallQueue(store, {
    reply: (rs) => {
      messages.push(rs.length);
      replies.push(...rs);
    },
    onClosed: () => closed++,
    maxWrites,
    ...extra,
  });
  let id = 0;
  const calls: StoreCall[] = [];
  return {
    replies,
    groups,
    messages,
    closed: () => closed,
    push(method: StoreCall['method'], ...args: unknown[]): number {
      const call = { id: ++id, method, args };
      calls.push(call);
      queue.push(call);
      return call.id;
    },
    /** Resolves once every call pushed so far is answered (replies to calls that came through a port do not count). */
    async settled(): Promise<void> {
      const answered = (): boolean => {
        const ids = new Set(replies.map((r) => r.id));
        return calls.every((c) => ids.has(c.id));
      };
      await bounded(
        (async () => {
          while (!answered()) await new Promise((r) => setImmediate(r));
        })(),
        'the queue to answer',
      );
    },
  };
}

for (const driver of DRIVERS) {
  describe(`SqliteGatewayStore.commitGroup (${driver})`, () => {
    it('commits every write of the group; one that fails is undone alone, the others are kept in order', async (t) => {
      const dir = tempDir('baton-group-');
      t.after(() => dir[Symbol.dispose]());
      const store = new SqliteGatewayStore({ file: join(dir.path, 'baton.sqlite'), driver });
      await store.createTask(newTask('a'), row('a', 1));

      const outcomes = store.commitGroup([
        appendW('a', rows('a', 2, 3)),
        createW('b'),
        appendW('a', rows('a', 3, 4)), // overlaps what the first write of this group stored
        appendW('b', rows('b', 2, 2)), // sees the task created earlier in the same group
        createW('a'), // already exists
        appendW('a', rows('a', 4, 6)),
      ]);
      assert.deepEqual(
        outcomes.map((o) => o.ok),
        [true, true, false, true, false, true],
      );
      const failed = outcomes.flatMap((o) => (o.ok ? [] : [o.error.message]));
      assert.match(failed[0], /must continue at seq 4, got 3/);
      assert.match(failed[1], /UNIQUE|PRIMARY KEY/i);

      assert.deepEqual(await store.readEvents(AGENT, 'a', 0, 100), rows('a', 1, 6));
      assert.deepEqual(await store.readEvents(AGENT, 'b', 0, 100), rows('b', 1, 2));
      assert.equal((await store.getTask(AGENT, 'a'))?.lastSeq, 6);
      assert.equal((await store.getTask(AGENT, 'b'))?.lastSeq, 2);
      assert.equal(await store.integrityCheck(), 'ok');

      // Durable: a fresh connection sees the same.
      await store.close();
      const again = openStore(t, join(dir.path, 'baton.sqlite'), driver);
      assert.deepEqual(await again.readEvents(AGENT, 'a', 0, 100), rows('a', 1, 6));
      assert.deepEqual(await again.readEvents(AGENT, 'b', 0, 100), rows('b', 1, 2));
    });

    it('a failed COMMIT throws and stores nothing of the group; the store goes on', async (t) => {
      const dir = tempDir('baton-group-');
      t.after(() => dir[Symbol.dispose]());
      await assertGroupFailsWhole(
        openStore(t, await failingCommitFile(dir.path), driver),
        /FOREIGN KEY constraint failed/,
      );
    });

    it('an append whose own write fails (past its seq check) fails the whole group, which stores nothing; the store goes on', async (t) => {
      const dir = tempDir('baton-group-');
      t.after(() => dir[Symbol.dispose]());
      await assertGroupFailsWhole(
        openStore(t, await refusingPageFile(dir.path), driver),
        /page refused by the database/,
      );
    });
  });
}

describe('SqliteCallQueue: the calls of the store thread', () => {
  it('writes waiting together share one commit; any other call ends the group, runs after it, and sees it', async (t) => {
    const dir = tempDir('baton-group-');
    t.after(() => dir[Symbol.dispose]());
    const store = openStore(t, join(dir.path, 'baton.sqlite'));
    const q = queueOn(store);

    const ids = [
      q.push('createTask', newTask('a'), row('a', 1)),
      q.push('createTask', newTask('b'), row('b', 1)),
      q.push('appendPage', page('a', rows('a', 2, 4))),
      q.push('readPages', AGENT, 'a', 0, 100),
      q.push('getTask', AGENT, 'b'),
      q.push('appendPage', page('b', rows('b', 2, 2))),
      q.push('appendPage', page('a', rows('a', 5, 5))),
      q.push('readEvents', AGENT, 'a', 0, 100),
    ];
    await q.settled();
    assert.deepEqual(q.groups, [3, 2]);
    // A group's replies go back together; each other call's alone.
    assert.deepEqual(q.messages, [3, 1, 1, 2, 1]);
    // Answered in the order of the calls.
    assert.deepEqual(
      q.replies.map((r) => r.id),
      ids,
    );
    assert.ok(q.replies.every((r) => r.ok));
    const value = (i: number): unknown => {
      const r = q.replies[i];
      return r.ok ? r.value : undefined;
    };
    // Reads see every write made before them, and none after.
    assert.deepEqual(value(3), [{ firstSeq: 1, bodies: body('a', 1) }, toPageBodies('a', 2, 4)]);
    assert.equal((value(4) as { lastSeq: number }).lastSeq, 1);
    assert.deepEqual(value(7), rows('a', 1, 5));
  });

  it('claims and bindings share the commit of the writes around them, and each sees the ones before it', async (t) => {
    const dir = tempDir('baton-group-');
    t.after(() => dir[Symbol.dispose]());
    const file = join(dir.path, 'baton.sqlite');
    const store = openStore(t, file);
    const q = queueOn(store);
    q.push('createTask', newTask('a'), row('a', 1));
    q.push('claimRequest', 'alice', AGENT, 'm1', 'd1', null, 'inst-1');
    q.push('appendPage', page('a', rows('a', 2, 3)));
    q.push('bindRequest', 'alice', AGENT, 'm1', 'a');
    q.push('claimRequest', 'alice', AGENT, 'm1', 'd1', null, 'inst-2');
    q.push('claimRequest', 'alice', AGENT, 'm1', 'other digest', null);
    q.push('claimRequest', 'alice', AGENT, 'm2', 'd2', 'a');
    q.push('findRequest', 'alice', AGENT, 'm1');
    await q.settled();
    assert.deepEqual(q.groups, [7]);
    assert.ok(q.replies.every((r) => r.ok));
    const value = (i: number): unknown => {
      const r = q.replies[i];
      return r.ok ? r.value : undefined;
    };
    assert.deepEqual(value(1), { kind: 'new' });
    assert.equal(value(3), undefined);
    assert.deepEqual(value(4), { kind: 'existing', taskId: 'a' });
    assert.deepEqual(value(5), { kind: 'conflict' });
    assert.deepEqual(value(6), { kind: 'new' });
    assert.equal((value(7) as { taskId: string | null; instance: string | null }).taskId, 'a');
    assert.equal((value(7) as { instance: string | null }).instance, 'inst-1');
    await store.close();
    // Committed: a reopened store has them.
    const again = openStore(t, file);
    assert.equal((await again.findRequest('alice', AGENT, 'm1'))?.taskId, 'a');
    assert.equal((await again.findRequest('alice', AGENT, 'm2'))?.taskId, 'a');
    assert.equal((await again.getTask(AGENT, 'a'))?.lastSeq, 3);
  });

  it('bounds a group: writes beyond the bound make the next group', async (t) => {
    const dir = tempDir('baton-group-');
    t.after(() => dir[Symbol.dispose]());
    const store = openStore(t, join(dir.path, 'baton.sqlite'));
    const q = queueOn(store, 4);
    for (let i = 0; i < 10; i++) q.push('createTask', newTask(`t${i}`), row(`t${i}`, 1));
    await q.settled();
    assert.deepEqual(q.groups, [4, 4, 2]);
    assert.ok(q.replies.every((r) => r.ok));
    for (let i = 0; i < 10; i++) assert.equal((await store.getTask(AGENT, `t${i}`))?.lastSeq, 1);
  });

  it('one failing write fails alone; a failed COMMIT fails every write of its group and only those', async (t) => {
    const dir = tempDir('baton-group-');
    t.after(() => dir[Symbol.dispose]());
    const store = openStore(t, await failingCommitFile(dir.path));
    const q = queueOn(store);
    for (const id of ['a', 'b', 'c']) await store.createTask(newTask(id), row(id, 1));

    // Group 1: a seq conflict among good writes.
    q.push('appendPage', page('a', rows('a', 2, 3)));
    q.push('appendPage', page('b', rows('b', 5, 5)));
    q.push('appendPage', page('c', rows('c', 2, 2)));
    q.push('getTask', AGENT, 'a');
    // Group 2: its COMMIT fails.
    q.push('appendPage', page('a', rows('a', 4, 4)));
    q.push('appendPage', page('b', [row('b', 2, true)]));
    q.push('createTask', newTask('d'), row('d', 1));
    q.push('integrityCheck');
    // Group 3: goes in.
    q.push('appendPage', page('c', rows('c', 3, 3)));
    q.push('appendPage', page('a', rows('a', 4, 5)));
    await q.settled();

    assert.deepEqual(q.groups, [3, 3, 2]);
    assert.deepEqual(
      q.replies.map((r) => r.ok),
      [true, false, true, true, false, false, false, true, true, true],
    );
    const errors = q.replies.flatMap((r) => (r.ok ? [] : [r.error]));
    assert.match(errors[0], /must continue at seq 2, got 5/);
    for (const e of errors.slice(1))
      assert.match(e, /^the gateway's SQLite store could not commit: .*FOREIGN KEY constraint failed/);

    assert.deepEqual(await store.readEvents(AGENT, 'a', 0, 100), rows('a', 1, 5));
    assert.deepEqual(await store.readEvents(AGENT, 'b', 0, 100), rows('b', 1, 1));
    assert.deepEqual(await store.readEvents(AGENT, 'c', 0, 100), rows('c', 1, 3));
    assert.equal(await store.getTask(AGENT, 'd'), undefined);
  });

  it('under load, the next group waits a moment for more writes to share its commit; a lone writer never waits', async (t) => {
    const dir = tempDir('baton-group-');
    t.after(() => dir[Symbol.dispose]());
    const store = openStore(t, join(dir.path, 'baton.sqlite'));
    // A clock the naps move, and writes that reach the port while the thread naps, as they trickle in from many tasks.
    let clock = 0;
    const naps: number[] = [];
    const coming: StoreCall[] = [];
    const port: StoreCall[] = [];
    let id = 1000;
    const q = queueOn(store, undefined, {
      now: () => clock,
      pull: () => port.shift(),
      sleep: (ms) => {
        naps.push(ms);
        clock += ms;
        port.push(...coming.splice(0));
      },
    });
    const tasks = Array.from({ length: 20 }, (_, i) => `t${i}`);
    for (const x of tasks) await store.createTask(newTask(x), row(x, 1));

    // A lone writer (groups of one): never waits.
    q.push('appendPage', page('t0', rows('t0', 2, 2)));
    await q.settled();
    q.push('appendPage', page('t0', rows('t0', 3, 3)));
    await q.settled();
    assert.deepEqual(q.groups, [1, 1]);
    assert.equal(naps.length, 0);
    // …nor with two batches of its own in one group (a fast task has two in flight).
    q.push('appendPage', page('t0', rows('t0', 4, 4)));
    q.push('appendPage', page('t0', rows('t0', 5, 5)));
    await q.settled();
    q.push('appendPage', page('t0', rows('t0', 6, 6)));
    await q.settled();
    assert.deepEqual(q.groups, [1, 1, 2, 1]);
    assert.equal(naps.length, 0);

    // Two writers at once: one group, at once (the last group was a lone writer's).
    q.push('appendPage', page('t1', rows('t1', 2, 2)));
    q.push('appendPage', page('t2', rows('t2', 2, 2)));
    await q.settled();
    assert.deepEqual(q.groups, [1, 1, 2, 1, 2]);
    assert.equal(naps.length, 0);

    // After a group of several, the next write waits until GATHER_MS after that group began, and
    // what arrives meanwhile shares its commit.
    q.push('appendPage', page('t3', rows('t3', 2, 2)));
    for (const x of ['t4', 't5', 't6']) coming.push({ id: ++id, method: 'appendPage', args: [page(x, rows(x, 2, 2))] });
    await q.settled();
    assert.deepEqual(q.groups, [1, 1, 2, 1, 2, 4]);
    // One nap, for what was left of GATHER_MS (the clock did not move since that group began).
    assert.deepEqual(naps, [GATHER_MS]);

    // A nap is only what is left: a group that began 1.5 ms ago waits 0.5 ms more.
    clock += 0.5; // the commit above took 0.5 ms
    clock += 1; // and 1 ms passed before the next write came
    q.push('appendPage', page('t7', rows('t7', 2, 2)));
    coming.push({ id: ++id, method: 'appendPage', args: [page('t8', rows('t8', 2, 2))] });
    await q.settled();
    assert.deepEqual(q.groups, [1, 1, 2, 1, 2, 4, 2], `groups: ${q.groups.join(', ')} naps: ${naps.join(', ')}`);
    assert.equal(naps.length, 2);
    assert.ok(Math.abs(naps[1] - 0.5) < 1e-9, `naps: ${naps.join(', ')}`);

    // Enough writes waiting already: no wait.
    const before = naps.length;
    const next = new Map<string, number>();
    for (const x of tasks.slice(0, GATHER_WRITES)) next.set(x, ((await store.getTask(AGENT, x))?.lastSeq ?? 0) + 1);
    for (const [x, seq] of next) q.push('appendPage', page(x, rows(x, seq, seq)));
    await q.settled();
    assert.equal(naps.length, before);
    assert.equal(q.groups.at(-1), GATHER_WRITES);
    assert.ok(q.replies.every((r) => r.ok));
    for (const [x, seq] of next) assert.equal((await store.getTask(AGENT, x))?.lastSeq, seq);
  });

  it('close waits for the writes before it; calls after it are refused', async (t) => {
    const dir = tempDir('baton-group-');
    t.after(() => dir[Symbol.dispose]());
    const file = join(dir.path, 'baton.sqlite');
    const store = new SqliteGatewayStore({ file, driver: 'better-sqlite3' });
    const q = queueOn(store);
    for (let i = 0; i < 20; i++) q.push('createTask', newTask(`t${i}`), row(`t${i}`, 1));
    q.push('close');
    q.push('appendPage', page('t0', rows('t0', 2, 2)));
    await q.settled();
    assert.deepEqual(
      q.replies.map((r) => r.ok),
      [...Array<boolean>(21).fill(true), false],
    );
    const last = q.replies[21];
    assert.ok(!last.ok && /closed/.test(last.error));
    assert.equal(q.closed(), 1);

    const again = openStore(t, file);
    for (let i = 0; i < 20; i++) assert.deepEqual(await again.readEvents(AGENT, `t${i}`, 0, 10), rows(`t${i}`, 1, 1));
  });
});

function toPageBodies(taskId: string, from: number, to: number): { firstSeq: number; bodies: string } {
  return {
    firstSeq: from,
    bodies: rows(taskId, from, to)
      .map((e) => e.body)
      .join('\n'),
  };
}

describe('SqliteWorkerStore: group commit on the store thread', () => {
  it('200 tasks appending at once: every event is stored once, in order, and survives a reopen', async (t) => {
    const dir = tempDir('baton-group-');
    t.after(() => dir[Symbol.dispose]());
    const file = join(dir.path, 'baton.sqlite');
    const store = await bounded(SqliteWorkerStore.open({ file, driver: 'better-sqlite3' }), 'the worker to open');
    t.after(() => store.close().catch(() => undefined));
    const TASKS = 200;
    const ROUNDS = 15;
    const ids = Array.from({ length: TASKS }, (_, i) => `t${i}`);
    await bounded(Promise.all(ids.map((id) => store.createTask(newTask(id), row(id, 1)))), 'creates');
    // Each task appends its batches one after another (as its writer does); all tasks at once.
    await bounded(
      Promise.all(
        ids.map(async (id, i) => {
          await appendRounds(store, id, i, ROUNDS, async (lastSeq) => {
            // Read-your-writes: the caller's next read sees what it was just told is committed.
            assert.equal((await store.getTask(AGENT, id))?.lastSeq, lastSeq);
          });
        }),
      ),
      'appends',
      120_000,
    );
    await store.close();

    const again = openStore(t, file);
    for (const [i, id] of ids.entries()) {
      const last = lastSeqAfter(i, ROUNDS);
      assert.deepEqual(await again.readEvents(AGENT, id, 0, 1000), rows(id, 1, last), id);
      assert.equal((await again.getTask(AGENT, id))?.lastSeq, last);
    }
    assert.equal(await again.integrityCheck(), 'ok');
  });

  it('a failing append among many at once fails alone; a failed COMMIT fails only writes that are not stored', async (t) => {
    const dir = tempDir('baton-group-');
    t.after(() => dir[Symbol.dispose]());
    const file = await failingCommitFile(dir.path);
    const store = await bounded(SqliteWorkerStore.open({ file, driver: 'better-sqlite3' }), 'the worker to open');
    t.after(() => store.close().catch(() => undefined));
    const ids = Array.from({ length: 60 }, (_, i) => `t${i}`);
    await bounded(Promise.all(ids.map((id) => store.createTask(newTask(id), row(id, 1)))), 'creates');

    // t7 sends a batch that does not continue its seqs; t13's page makes its group's COMMIT fail.
    const results = await bounded(
      Promise.allSettled(
        ids.map((id) =>
          id === 't7'
            ? append(store, id, rows(id, 3, 3))
            : id === 't13'
              ? append(store, id, [row(id, 2, true)])
              : append(store, id, rows(id, 2, 3)),
        ),
      ),
      'appends',
    );
    const byId = new Map(ids.map((id, i) => [id, results[i]]));
    const reason = (id: string): string => {
      const r = byId.get(id);
      assert.equal(r?.status, 'rejected', id);
      return r.status === 'rejected' ? String(r.reason) : '';
    };
    // t7 fails for its seqs, or with the commit when it shared t13's group.
    assert.match(reason('t7'), /must continue at seq 2, got 3|could not commit: .*FOREIGN KEY/);
    assert.match(reason('t13'), /could not commit: .*FOREIGN KEY/);
    for (const [id, r] of byId) {
      if (id === 't7' || id === 't13') continue;
      // The others share a group with t13 or not: either committed, or refused with the commit's error.
      if (r.status === 'rejected') assert.match(String(r.reason), /could not commit: .*FOREIGN KEY/, id);
      const stored = await store.readEvents(AGENT, id, 0, 100);
      assert.deepEqual(stored, r.status === 'fulfilled' ? rows(id, 1, 3) : rows(id, 1, 1), id);
    }
    assert.deepEqual(await store.readEvents(AGENT, 't7', 0, 100), rows('t7', 1, 1));
    assert.deepEqual(await store.readEvents(AGENT, 't13', 0, 100), rows('t13', 1, 1));
    // The store goes on after both.
    await append(store, 't7', rows('t7', 2, 2));
    assert.deepEqual(await store.readEvents(AGENT, 't7', 0, 100), rows('t7', 1, 2));
  });

  it('close() with appends still waiting answers them first, and they are stored', async (t) => {
    const dir = tempDir('baton-group-');
    t.after(() => dir[Symbol.dispose]());
    const file = join(dir.path, 'baton.sqlite');
    const store = await bounded(SqliteWorkerStore.open({ file, driver: 'better-sqlite3' }), 'the worker to open');
    const ids = Array.from({ length: 100 }, (_, i) => `t${i}`);
    await bounded(Promise.all(ids.map((id) => store.createTask(newTask(id), row(id, 1)))), 'creates');
    const pending = ids.map((id) => append(store, id, rows(id, 2, 4)));
    const closing = store.close();
    const results = await bounded(Promise.allSettled(pending), 'the appends');
    await bounded(closing, 'close');
    assert.deepEqual(
      results.filter((r) => r.status === 'rejected'),
      [],
    );
    await assert.rejects(append(store, 't0', rows('t0', 5, 5)), /closed/);

    const again = openStore(t, file);
    for (const id of ids) assert.deepEqual(await again.readEvents(AGENT, id, 0, 100), rows(id, 1, 4), id);
  });
});

const PG = process.env.BATON_TEST_PG;

describe('PostgresGatewayStore: appends of many tasks at once, from two instances', () => {
  // The session defaults a database or role may give every connection (ALTER DATABASE/ROLE … SET),
  // here through the URL: the store sets its own (under SERIALIZABLE the appends of two instances
  // failed with "could not serialize access"; a server-side timeout would cancel a waiting append).
  const defaults = [
    { what: '', options: '' },
    {
      what: ', on a database whose sessions default to SERIALIZABLE with a 30 ms statement and lock timeout',
      options: ' -c default_transaction_isolation=serializable -c statement_timeout=30 -c lock_timeout=30',
    },
  ];
  for (const d of defaults)
    it(
      `every event is stored once and in order, a stale writer fails alone, and a notice is sent only once its events are readable${d.what}`,
      { skip: PG ? false : 'BATON_TEST_PG is not set' },
      async (t) => {
        const { url } = await testSchema(t, PG ?? '', 'g', d.options);
        const a = await bounded(PostgresGatewayStore.open(url), 'instance a to open');
        t.after(() => a.close().catch(() => undefined));
        const b = await bounded(PostgresGatewayStore.open(url), 'instance b to open');
        t.after(() => b.close().catch(() => undefined));

        const TASKS = 200;
        const ROUNDS = 8;
        const ids = Array.from({ length: TASKS }, (_, i) => `t${i}`);
        const mine = new Set(ids);
        // What instance b hears of a's appends: each notice must find its events already committed.
        // Notices reach every listener of the database, so those of other tests' schemas are left out.
        const heard: Array<Promise<string | undefined>> = [];
        b.onRemoteAppend((agent, taskId, lastSeq) => {
          if (!mine.has(taskId)) return;
          heard.push(
            b.readEvents(agent, taskId, 0, 1000).then((got) => {
              const seqs = got.map((e) => e.seq);
              return seqs.length >= lastSeq && seqs[lastSeq - 1] === lastSeq
                ? undefined
                : `${taskId}: notice for ${lastSeq}, read ${seqs.length}`;
            }),
          );
        });

        // Half the tasks are written by each instance, all at once.
        const writer = (i: number): PostgresGatewayStore => (i % 2 === 0 ? a : b);
        await bounded(
          Promise.all(ids.map((id, i) => writer(i).createTask(newTask(id), row(id, 1)))),
          'creates',
          60_000,
        );
        await bounded(
          Promise.all(
            ids.map(async (id, i) => {
              const next = await appendRounds(writer(i), id, i, ROUNDS);
              // A stale second writer on the other instance, replaying a seq already stored: refused, alone.
              await assert.rejects(append(writer(i + 1), id, rows(id, next - 1, next)));
            }),
          ),
          'appends',
          120_000,
        );

        const fresh = await bounded(PostgresGatewayStore.open(url), 'a third store to open');
        t.after(() => fresh.close().catch(() => undefined));
        for (const [i, id] of ids.entries()) {
          const last = lastSeqAfter(i, ROUNDS);
          assert.deepEqual(await fresh.readEvents(AGENT, id, 0, 1000), rows(id, 1, last), id);
          assert.equal((await fresh.getTask(AGENT, id))?.lastSeq, last, id);
        }
        // b heard a's appends (notifications are asynchronous: wait until it has heard a's last batch).
        await bounded(
          (async () => {
            while (heard.length < (TASKS / 2) * (ROUNDS + 1)) await new Promise((r) => setTimeout(r, 20));
          })(),
          "b to hear a's appends",
        );
        assert.deepEqual(
          (await Promise.all(heard)).filter((x) => x !== undefined),
          [],
        );
      },
    );
});

describe('PostgresGatewayStore: the stores of different schemas of one database', () => {
  it(
    "do not hear each other's appends or cancel requests (a channel per schema); two stores of one schema do",
    { skip: PG ? false : 'BATON_TEST_PG is not set' },
    async (t) => {
      const base = PG ?? '';
      const admin = new pg.Client({ connectionString: base });
      await admin.connect();
      const schemas = [`c_${randomBytes(6).toString('hex')}`, `c_${randomBytes(6).toString('hex')}`];
      for (const s of schemas) await admin.query(`CREATE SCHEMA ${s}`);
      t.after(async () => {
        for (const s of schemas) await admin.query(`DROP SCHEMA IF EXISTS ${s} CASCADE`);
        await admin.end();
      });
      const urlOf = (s: string): string =>
        `${base}${base.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${s}`)}`;
      const open = async (s: string): Promise<PostgresGatewayStore> => {
        const store = await bounded(PostgresGatewayStore.open(urlOf(s)), `a store on ${s} to open`);
        t.after(() => store.close().catch(() => undefined));
        return store;
      };
      const [a1, a2, b1, b2] = [
        await open(schemas[0]),
        await open(schemas[0]),
        await open(schemas[1]),
        await open(schemas[1]),
      ];
      const heard = new Map<PostgresGatewayStore, string[]>();
      for (const s of [a1, a2, b1, b2]) {
        const log: string[] = [];
        heard.set(s, log);
        s.onRemoteAppend((_agent, taskId) => log.push(`append ${taskId}`));
      }
      // One store per schema runs the instance the cancels are for: a stored request is taken once.
      for (const s of [a2, b2]) s.onCancelRequest('inst-1', (_agent, taskId) => heard.get(s)?.push(`cancel ${taskId}`));
      const until = async (s: PostgresGatewayStore, what: string): Promise<void> => {
        await bounded(
          (async () => {
            while (!heard.get(s)?.includes(what)) await new Promise((r) => setTimeout(r, 10));
          })(),
          `${what} to be heard`,
        );
      };

      // Schema 0 first: its notices are sent before schema 1's, and a listener gets them in commit order.
      await a1.createTask(newTask('a'), row('a', 1));
      await append(a1, 'a', rows('a', 2, 3));
      await a1.requestCancel(AGENT, 'a', 'inst-1');
      await b1.createTask(newTask('b'), row('b', 1));
      await append(b1, 'b', rows('b', 2, 3));
      await b1.requestCancel(AGENT, 'b', 'inst-1');
      await until(a2, 'append a');
      await until(a2, 'cancel a');
      await until(b2, 'append b');
      await until(b2, 'cancel b');
      // By the time b2 heard schema 1's notices it would have heard schema 0's, sent before them.
      for (const s of [b1, b2])
        assert.ok(!heard.get(s)?.some((h) => h.endsWith(' a')), `heard: ${heard.get(s)?.join(', ')}`);
      for (const s of [a1, a2])
        assert.ok(!heard.get(s)?.some((h) => h.endsWith(' b')), `heard: ${heard.get(s)?.join(', ')}`);
      // A store does not hear its own appends.
      assert.ok(!heard.get(a1)?.includes('append a'));
    },
  );
});

describe('channelsOf', () => {
  it('keeps the plain channel names for the public schema and gives every other schema its own', () => {
    assert.deepEqual(channelsOf('public'), { events: 'baton_events', cancels: 'baton_cancel', turns: 'baton_turns' });
    const a = channelsOf('team_a');
    const b = channelsOf('Team A; DROP');
    assert.notEqual(a.events, b.events);
    assert.notEqual(a.cancels, b.cancels);
    assert.notEqual(a.turns, b.turns);
    for (const c of [...Object.values(a), ...Object.values(b)]) assert.match(c, /^baton_[a-z]+_[0-9a-f]{16}$/);
    assert.deepEqual(channelsOf('team_a'), a);
  });
});
