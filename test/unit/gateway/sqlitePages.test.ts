/**
 * The SQLite store's event pages (one row per commit) and its migration from the per-event table of
 * older state folders, on real SQLite files; and the same store run on its worker thread.
 */
import { describe, it } from 'node:test';
import type { TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import fc from 'fast-check';
import { TaskState } from '@a2a-js/sdk';
import { SqliteGatewayStore } from '../../../src/gateway/store/sqliteStore';
import { SqliteWorkerStore, TRANSFER_BYTES, crossing } from '../../../src/gateway/store/sqliteWorkerStore';
import type { EventRow, GatewayStore, NewTask } from '../../../src/gateway/store/gatewayStore';
import { bounded, tempDir } from './helpers';
import { endProcess, startGatewayProcess } from './gatewayProcess';
import { LARGE_AGENT, LARGE_EVENTS, LARGE_PAGES, LARGE_TASK, STORED_PAGES_SQL, writeLargePages } from './largePages';
import type { StoredPage } from './largePages';
import { NODE24, NODE24_SKIP } from '../node24';

/** better-sqlite3's surface used here (the store itself is what is under test). */
interface RawDb {
  exec(sql: string): void;
  prepare(sql: string): {
    run(...p: unknown[]): unknown;
    get(...p: unknown[]): unknown;
    all(...p: unknown[]): unknown[];
  };
  pragma(sql: string, o?: { simple: boolean }): unknown;
  close(): void;
}
const Database = createRequire(__filename)('better-sqlite3') as new (
  file: string,
  opts?: { readonly?: boolean },
) => RawDb;

const AGENT = 'echo';

/** A single-line JSON body, different for every (task, seq); some carry escaped newlines and non-ASCII. */
function body(taskId: string, seq: number): string {
  return JSON.stringify({
    statusUpdate: {
      taskId,
      contextId: 'ctx',
      status: {
        state: 'TASK_STATE_WORKING',
        message: {
          messageId: `${taskId}-${seq}`,
          role: 'ROLE_AGENT',
          parts: [{ text: seq % 3 === 0 ? `line one\nline two ✓ ${seq}` : `step ${seq}` }],
        },
      },
      metadata: { 'baton/seq': seq },
    },
  });
}
const row = (taskId: string, seq: number): EventRow => ({ seq, body: body(taskId, seq) });
const rows = (taskId: string, from: number, to: number): EventRow[] =>
  Array.from({ length: to - from + 1 }, (_, i) => row(taskId, from + i));

function newTask(id: string): NewTask {
  return {
    agent: AGENT,
    id,
    contextId: 'ctx',
    principal: 'alice',
    kind: 'local',
    state: TaskState.TASK_STATE_WORKING,
    snapshot: JSON.stringify({ id, contextId: 'ctx' }),
    owner: 'inst-1',
  };
}

async function appendRows(store: GatewayStore, taskId: string, events: EventRow[]): Promise<void> {
  await store.append({
    agent: AGENT,
    taskId,
    events,
    state: TaskState.TASK_STATE_WORKING,
    snapshot: JSON.stringify({ id: taskId, n: events.length }),
  });
}

/** Creates a task (its first event, seq 1, is a page of its own) and appends batches of these sizes. */
async function buildTask(store: GatewayStore, taskId: string, sizes: readonly number[]): Promise<EventRow[]> {
  await store.createTask(newTask(taskId), row(taskId, 1));
  let next = 2;
  for (const n of sizes) {
    await appendRows(store, taskId, rows(taskId, next, next + n - 1));
    next += n;
  }
  return rows(taskId, 1, next - 1);
}

/** What readEvents must return: the contiguous events after afterSeq, at most limit of them. */
const model = (all: readonly EventRow[], afterSeq: number, limit: number): EventRow[] =>
  all.filter((e) => e.seq > afterSeq).slice(0, Math.max(0, limit));

function openStore(t: TestContext, file: string): SqliteGatewayStore {
  const store = new SqliteGatewayStore({ file, driver: 'better-sqlite3' });
  t.after(() => store.close().catch(() => undefined));
  return store;
}

describe('SQLite store: migration from the per-event table', () => {
  it('moves every old event into pages, drops baton_events, and appends after them', async (t) => {
    const dir = tempDir('baton-pages-');
    t.after(() => dir[Symbol.dispose]());
    const file = join(dir.path, 'baton.sqlite');

    // A state folder as the store wrote it before pages (its schema of that time).
    const old = new Database(file);
    old.pragma('journal_mode = WAL');
    old.exec(`
CREATE TABLE baton_tasks (
  agent TEXT NOT NULL, id TEXT NOT NULL, context_id TEXT NOT NULL, principal TEXT NOT NULL,
  kind TEXT NOT NULL, state INTEGER NOT NULL, last_seq INTEGER NOT NULL, snapshot TEXT NOT NULL,
  owner TEXT, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
  PRIMARY KEY (agent, id));
CREATE INDEX baton_tasks_by_principal ON baton_tasks (agent, principal, updated_at DESC, id DESC);
CREATE TABLE baton_events (agent TEXT NOT NULL, task_id TEXT NOT NULL, seq INTEGER NOT NULL, body TEXT NOT NULL, PRIMARY KEY (agent, task_id, seq));`);
    const insTask = old.prepare(
      'INSERT INTO baton_tasks (agent, id, context_id, principal, kind, state, last_seq, snapshot, owner, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
    );
    const insEvent = old.prepare('INSERT INTO baton_events (agent, task_id, seq, body) VALUES (?, ?, ?, ?)');
    const oldA = rows('old-a', 1, 25);
    const oldB = rows('old-b', 1, 3);
    insTask.run(
      AGENT,
      'old-a',
      'ctx',
      'alice',
      'local',
      TaskState.TASK_STATE_WORKING,
      25,
      '{"id":"old-a"}',
      null,
      1,
      2,
    );
    insTask.run(
      AGENT,
      'old-b',
      'ctx',
      'alice',
      'local',
      TaskState.TASK_STATE_COMPLETED,
      3,
      '{"id":"old-b"}',
      null,
      1,
      2,
    );
    // Inserted out of order: the migration must not depend on rowid order.
    for (const e of [...oldA].reverse()) insEvent.run(AGENT, 'old-a', e.seq, e.body);
    for (const e of oldB) insEvent.run(AGENT, 'old-b', e.seq, e.body);
    old.close();

    const store = openStore(t, file);
    assert.deepEqual(await store.readEvents(AGENT, 'old-a', 0, 1000), oldA);
    assert.deepEqual(await store.readEvents(AGENT, 'old-b', 0, 1000), oldB);
    assert.deepEqual(await store.readEvents(AGENT, 'old-a', 10, 5), model(oldA, 10, 5));
    assert.equal(await store.integrityCheck(), 'ok');
    assert.equal((await store.getTask(AGENT, 'old-a'))?.lastSeq, 25);

    // New events go after the old ones, as pages.
    await appendRows(store, 'old-a', rows('old-a', 26, 28));
    await appendRows(store, 'old-a', rows('old-a', 29, 29));
    const all = rows('old-a', 1, 29);
    assert.deepEqual(await store.readEvents(AGENT, 'old-a', 0, 1000), all);
    assert.deepEqual(await store.readEvents(AGENT, 'old-a', 24, 3), model(all, 24, 3));
    assert.equal((await store.getTask(AGENT, 'old-a'))?.lastSeq, 29);
    await store.close();

    const raw = new Database(file, { readonly: true });
    try {
      const tables = (
        raw.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as { name: string }[]
      ).map((r) => r.name);
      assert.ok(!tables.includes('baton_events'), `tables: ${tables.join(', ')}`);
      assert.ok(tables.includes('baton_event_pages'));
      // The old events are one page each; the two new batches are two pages.
      const pages = raw
        .prepare("SELECT first_seq, last_seq FROM baton_event_pages WHERE task_id = 'old-a' ORDER BY last_seq")
        .all() as { first_seq: number; last_seq: number }[];
      assert.equal(pages.length, 27);
      assert.deepEqual(pages.slice(-2), [
        { first_seq: 26, last_seq: 28 },
        { first_seq: 29, last_seq: 29 },
      ]);
    } finally {
      raw.close();
    }

    // Opening again finds nothing left to migrate and loses nothing.
    const again = openStore(t, file);
    assert.deepEqual(await again.readEvents(AGENT, 'old-a', 0, 1000), all);
    assert.deepEqual(await again.readEvents(AGENT, 'old-b', 0, 1000), oldB);
    assert.equal(await again.integrityCheck(), 'ok');
  });
});

describe('SQLite store: migration from pages kept in a WITHOUT ROWID table', () => {
  it('moves every page into the rowid table, keeps the order and the seq check, once', async (t) => {
    const dir = tempDir('baton-pages-');
    t.after(() => dir[Symbol.dispose]());
    const file = join(dir.path, 'baton.sqlite');
    // A state folder as the previous version wrote it: today's tables, but pages in a WITHOUT ROWID table.
    const previous = new SqliteGatewayStore({ file, driver: 'better-sqlite3' });
    await previous.close();
    const raw1 = new Database(file);
    raw1.exec(`DROP TABLE baton_event_pages;
CREATE TABLE baton_event_pages (
  agent TEXT NOT NULL, task_id TEXT NOT NULL, last_seq INTEGER NOT NULL, first_seq INTEGER NOT NULL, bodies TEXT NOT NULL,
  PRIMARY KEY (agent, task_id, last_seq)) WITHOUT ROWID;`);
    const insTask = raw1.prepare(
      'INSERT INTO baton_tasks (agent, id, context_id, principal, kind, state, last_seq, snapshot, owner, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
    );
    const insPage = raw1.prepare(
      'INSERT INTO baton_event_pages (agent, task_id, last_seq, first_seq, bodies) VALUES (?, ?, ?, ?, ?)',
    );
    const all = rows('wr', 1, 40);
    insTask.run(AGENT, 'wr', 'ctx', 'alice', 'local', TaskState.TASK_STATE_WORKING, 40, '{"id":"wr"}', null, 1, 2);
    // Pages of 1, 9, 30 events, inserted last first.
    for (const [from, to] of [
      [11, 40],
      [2, 10],
      [1, 1],
    ] as const)
      insPage.run(
        AGENT,
        'wr',
        to,
        from,
        all
          .slice(from - 1, to)
          .map((e) => e.body)
          .join('\n'),
      );
    raw1.close();

    const store = openStore(t, file);
    assert.deepEqual(await store.readEvents(AGENT, 'wr', 0, 1000), all);
    assert.deepEqual(await store.readEvents(AGENT, 'wr', 5, 7), model(all, 5, 7));
    assert.equal(await store.integrityCheck(), 'ok');
    // The seq check still holds on the new table: a batch that does not continue at 41 is refused.
    await assert.rejects(appendRows(store, 'wr', rows('wr', 40, 41)), /must continue at seq 41/);
    await appendRows(store, 'wr', rows('wr', 41, 42));
    await store.close();

    const raw = new Database(file, { readonly: true });
    try {
      const tables = raw
        .prepare("SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name LIKE 'baton_event_pages%'")
        .all() as { name: string; sql: string }[];
      assert.deepEqual(
        tables.map((x) => x.name),
        ['baton_event_pages'],
      );
      assert.doesNotMatch(tables[0].sql, /WITHOUT\s+ROWID/i);
      assert.equal((raw.prepare('SELECT count(*) AS n FROM baton_event_pages').get() as { n: number }).n, 4);
    } finally {
      raw.close();
    }
    const again = openStore(t, file);
    assert.deepEqual(await again.readEvents(AGENT, 'wr', 0, 1000), rows('wr', 1, 42));
    assert.equal(await again.integrityCheck(), 'ok');
  });
});

describe('SQLite store: event pages', () => {
  it('readEvents returns exactly the contiguous events after afterSeq, up to limit, from every start near a page edge, for many limits', async (t) => {
    const dir = tempDir('baton-pages-');
    t.after(() => dir[Symbol.dispose]());
    const store = openStore(t, join(dir.path, 'baton.sqlite'));
    // Pages of 1 (the first event), 1, 3, 500, 3, 1, 2, 7: edges everywhere.
    const all = await buildTask(store, 'pages', [1, 3, 500, 3, 1, 2, 7]);
    assert.equal(all.length, 518);
    // Another task's pages in between must never leak in.
    await buildTask(store, 'other', [2, 4]);
    const limits = [0, 1, 2, 3, 4, 5, 7, 499, 500, 501, 502, 1000];
    // Cursors are >= 0 (requestContext refuses negative ones); seqs start at 1. Every start near a
    // page edge (pages end at seqs 1, 2, 5, 505, 508, 509, 511, 518), and a sample inside the big page.
    const starts = Array.from({ length: all.length + 2 }, (_, i) => i).filter(
      (i) => i <= 12 || i >= 500 || i % 13 === 0,
    );
    for (const afterSeq of starts) {
      for (const limit of limits) {
        const got = await store.readEvents(AGENT, 'pages', afterSeq, limit);
        const want = model(all, afterSeq, limit);
        // Compare seqs first (a readable failure), then bodies.
        assert.deepEqual(
          got.map((e) => e.seq),
          want.map((e) => e.seq),
          `afterSeq=${afterSeq} limit=${limit}`,
        );
        if (limit <= 7) assert.deepEqual(got, want, `afterSeq=${afterSeq} limit=${limit}`);
      }
      // Bodies in full for one long read from every start (they come out of the page intact).
      assert.deepEqual(
        await store.readEvents(AGENT, 'pages', afterSeq, 1000),
        model(all, afterSeq, 1000),
        `afterSeq=${afterSeq}`,
      );
    }
    assert.deepEqual(await store.readEvents(AGENT, 'nope', 0, 10), []);
  });

  it('random page layouts read back like the model (fast-check)', async (t) => {
    const dir = tempDir('baton-pages-');
    t.after(() => dir[Symbol.dispose]());
    const store = openStore(t, join(dir.path, 'baton.sqlite'));
    let n = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 1, max: 40 }), { minLength: 0, maxLength: 12 }),
        fc.array(fc.tuple(fc.integer({ min: 0, max: 300 }), fc.integer({ min: 0, max: 60 })), {
          minLength: 1,
          maxLength: 20,
        }),
        async (sizes, queries) => {
          const taskId = `t${n++}`;
          const all = await buildTask(store, taskId, sizes);
          for (const [afterSeq, limit] of queries)
            assert.deepEqual(await store.readEvents(AGENT, taskId, afterSeq, limit), model(all, afterSeq, limit));
        },
      ),
      { numRuns: 80 },
    );
    assert.equal(await store.integrityCheck(), 'ok');
  });

  it('a body with a raw newline, or seqs that are not contiguous, is refused and nothing of that batch is stored', async (t) => {
    const dir = tempDir('baton-pages-');
    t.after(() => dir[Symbol.dispose]());
    const store = openStore(t, join(dir.path, 'baton.sqlite'));
    const before = await buildTask(store, 'strict', [3]);
    const taskBefore = await store.getTask(AGENT, 'strict');

    await assert.rejects(
      async () =>
        appendRows(store, 'strict', [row('strict', 5), { seq: 6, body: '{"statusUpdate":\n{}}' }, row('strict', 7)]),
      /not single-line JSON/,
    );
    await assert.rejects(
      async () => appendRows(store, 'strict', [row('strict', 5), row('strict', 6), row('strict', 8)]),
      /not contiguous/,
    );
    await assert.rejects(
      async () => appendRows(store, 'strict', [row('strict', 6), row('strict', 5)]),
      /not contiguous/,
    );

    assert.deepEqual(await store.readEvents(AGENT, 'strict', 0, 100), before);
    assert.deepEqual(await store.getTask(AGENT, 'strict'), taskBefore);
    // The failed batches left the store usable: the next good batch goes in.
    await appendRows(store, 'strict', rows('strict', 5, 6));
    assert.deepEqual(await store.readEvents(AGENT, 'strict', 0, 100), rows('strict', 1, 6));
    assert.equal(await store.integrityCheck(), 'ok');
  });

  it('a batch whose seqs were already stored is refused (a seq is stored once)', async (t) => {
    const dir = tempDir('baton-pages-');
    t.after(() => dir[Symbol.dispose]());
    const store = openStore(t, join(dir.path, 'baton.sqlite'));
    const before = await buildTask(store, 'dup', [3]); // pages [1], [2..4]
    // Same last seq as a stored page: refused by the primary key.
    await assert.rejects(async () => appendRows(store, 'dup', rows('dup', 4, 4)));
    // Overlapping, with a new last seq (a stale second writer).
    await assert.rejects(async () => appendRows(store, 'dup', rows('dup', 3, 5)));
    assert.deepEqual(await store.readEvents(AGENT, 'dup', 0, 100), before);
  });
});

/** The page rows hold TEXT (what the queries that measure and fold pages expect), byte for byte each page's UTF-8. */
function assertStoredAsText(stored: readonly StoredPage[]): void {
  assert.deepEqual(
    stored.map((r) => r.type),
    LARGE_PAGES.map(() => 'text'),
  );
  assert.deepEqual(
    stored.map((r) => r.bytes),
    LARGE_PAGES.map((p) => Buffer.byteLength(p)),
  );
  assert.deepEqual(
    stored.map((r) => r.bodies),
    LARGE_PAGES,
  );
}

describe('SqliteWorkerStore: the same store on its own thread', () => {
  it('reads and writes through the thread, refuses bad batches, and rejects every call after close()', async (t) => {
    const dir = tempDir('baton-pages-');
    t.after(() => dir[Symbol.dispose]());
    const file = join(dir.path, 'baton.sqlite');
    const store = await bounded(SqliteWorkerStore.open({ file, driver: 'better-sqlite3' }), 'the worker to open');
    t.after(() => store.close().catch(() => undefined));
    assert.equal(store.driverName, 'better-sqlite3');

    const all = await bounded(buildTask(store, 'w', [1, 3, 500]), 'writes');
    assert.deepEqual(await bounded(store.readEvents(AGENT, 'w', 0, 10_000), 'read'), all);
    for (const [afterSeq, limit] of [
      [0, 1],
      [1, 1],
      [2, 3],
      [3, 2],
      [5, 500],
      [4, 501],
      [504, 10],
      [505, 10],
    ] as const) {
      assert.deepEqual(
        await bounded(store.readEvents(AGENT, 'w', afterSeq, limit), 'read'),
        model(all, afterSeq, limit),
        `afterSeq=${afterSeq} limit=${limit}`,
      );
    }
    const task = await bounded(store.getTask(AGENT, 'w'), 'getTask');
    assert.equal(task?.lastSeq, 505);
    assert.equal(task?.principal, 'alice');

    // The worker's errors come back as rejections with the store's message, and nothing is stored.
    await assert.rejects(
      bounded(appendRows(store, 'w', [row('w', 506), row('w', 508)]), 'bad append'),
      /not contiguous/,
    );
    await assert.rejects(
      bounded(appendRows(store, 'w', [{ seq: 506, body: 'a\nb' }]), 'bad append'),
      /not single-line JSON/,
    );
    assert.deepEqual(await bounded(store.readEvents(AGENT, 'w', 500, 100), 'read'), model(all, 500, 100));
    assert.equal(await bounded(store.integrityCheck(), 'integrity'), 'ok');

    // A call that cannot cross to the thread is refused as a rejection (no exception escapes); the
    // calls made in the same turn (which cross in the same message) and later ones go on.
    const uncloneable = (() => 'w') as unknown as string;
    const [refused, sameTurn] = await Promise.allSettled([
      bounded(store.getTask(AGENT, uncloneable), 'an uncloneable call'),
      bounded(store.getTask(AGENT, 'w'), 'getTask in the same turn'),
    ]);
    assert.equal(refused.status, 'rejected');
    assert.match(String((refused as PromiseRejectedResult).reason), /could not be sent/);
    assert.equal(sameTurn.status === 'fulfilled' ? sameTurn.value?.lastSeq : sameTurn.reason, 505);
    assert.equal((await bounded(store.getTask(AGENT, 'w'), 'getTask'))?.lastSeq, 505);

    await bounded(store.close(), 'close');
    const calls: (() => Promise<unknown>)[] = [
      () => store.readEvents(AGENT, 'w', 0, 10),
      () => store.getTask(AGENT, 'w'),
      () => appendRows(store, 'w', [row('w', 506)]),
      () => store.integrityCheck(),
    ];
    for (const call of calls) {
      await assert.rejects(
        bounded(call(), 'a call after close'),
        (e: unknown) => e instanceof Error && /SQLite thread/.test(e.message),
        'a call after close must reject with a clear error',
      );
    }
    await bounded(store.close(), 'a second close'); // harmless

    // What the thread wrote is on disk.
    const reopened = openStore(t, file);
    assert.deepEqual(await reopened.readEvents(AGENT, 'w', 0, 10_000), all);
  });

  it('crossing: a page from TRANSFER_BYTES up becomes UTF-8 bytes in a buffer of their own, to be moved; a smaller one stays text', () => {
    const small = 'é'.repeat(TRANSFER_BYTES - 1);
    assert.deepEqual(crossing(small), { bodies: small });
    for (const text of ['a'.repeat(TRANSFER_BYTES), '😀'.repeat(TRANSFER_BYTES), `${'✓'.repeat(40_000)}\n{}`]) {
      const c = crossing(text);
      assert.ok(c.bodies instanceof Uint8Array);
      assert.equal(c.moved, c.bodies.buffer, 'the buffer moved is the one holding the bytes');
      assert.equal(c.moved?.byteLength, Buffer.byteLength(text), 'and it holds nothing else');
      assert.equal(new TextDecoder().decode(c.bodies), text);
    }
  });

  it('pages from TRANSFER_BYTES up cross as UTF-8 bytes and are stored as the same text; smaller ones as strings', async (t) => {
    const dir = tempDir('baton-pages-');
    t.after(() => dir[Symbol.dispose]());
    const file = join(dir.path, 'baton.sqlite');
    const store = await bounded(SqliteWorkerStore.open({ file, driver: 'better-sqlite3' }), 'the worker to open');
    t.after(() => store.close().catch(() => undefined));
    assert.deepEqual(
      LARGE_EVENTS.slice(1).map((e) => e.body.length),
      [TRANSFER_BYTES - 1, TRANSFER_BYTES, 64 * 1024, 20_000, 30_000, 64 * 1024, 300, 20_000, 500],
    );
    await bounded(writeLargePages(store), 'writes');
    assert.deepEqual(await bounded(store.readEvents(LARGE_AGENT, LARGE_TASK, 0, 100), 'read'), LARGE_EVENTS);
    await bounded(store.close(), 'close');
    const db = new Database(file, { readonly: true });
    t.after(() => db.close());
    assertStoredAsText(db.prepare(STORED_PAGES_SQL).all() as StoredPage[]);
  });

  it("the same with node:sqlite under Node 24 (the driver of VS Code's runtime)", { skip: NODE24_SKIP }, async (t) => {
    const dir = tempDir('baton-pages-');
    t.after(() => dir[Symbol.dispose]());
    const g = await startGatewayProcess<{ driver: string; events: EventRow[]; stored: StoredPage[] }>(
      'largePagesChild.ts',
      [join(dir.path, 'baton.sqlite'), 'node:sqlite'],
      NODE24,
    );
    t.after(() => endProcess(g.proc));
    assert.equal(g.ready.driver, 'node:sqlite');
    assert.deepEqual(g.ready.events, LARGE_EVENTS);
    assertStoredAsText(g.ready.stored);
  });

  it('opening a file in a folder that does not exist rejects with a clear error', async (t) => {
    const dir = tempDir('baton-pages-');
    t.after(() => dir[Symbol.dispose]());
    const file = join(dir.path, 'no', 'such', 'folder', 'baton.sqlite');
    await assert.rejects(
      bounded(SqliteWorkerStore.open({ file, driver: 'better-sqlite3' }), 'the worker to fail to open'),
      (e: unknown) => {
        assert.ok(e instanceof Error);
        assert.doesNotMatch(e.message, /bounded wait exceeded/);
        assert.match(e.message, /directory does not exist|unable to open|cannot open/i);
        return true;
      },
    );
  });
});
