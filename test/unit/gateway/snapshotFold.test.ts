/**
 * A running task's snapshot is not stored with every batch: on SQLite, a batch that changes nothing
 * but the task's progress is stored as its events alone, and a read of the task folds the events
 * stored after its snapshot. Real SQLite files, through the store and through its thread; the raw rows
 * are read with a separate connection to see what was written.
 */
import { describe, it } from 'node:test';
import type { TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { Task as TaskCodec, TaskState } from '@a2a-js/sdk';
import type { Task } from '@a2a-js/sdk';
import { EventHub, TaskWriter } from '../../../src/gateway/eventLog';
import type { Json } from '../../../src/gateway/eventLog';
import { META } from '../../../src/core/batonProfile';
import { SqliteGatewayStore } from '../../../src/gateway/store/sqliteStore';
import { SqliteWorkerStore } from '../../../src/gateway/store/sqliteWorkerStore';
import type { GatewayStore } from '../../../src/gateway/store/gatewayStore';
import { bounded, tempDir } from './helpers';

interface RawDb {
  prepare(sql: string): { get(...a: unknown[]): Record<string, unknown> | undefined };
  close(): void;
}
const Database = createRequire(__filename)('better-sqlite3') as new (file: string, o?: { readonly?: boolean }) => RawDb;

const AGENT = 'remote';

function task(id: string): Task {
  return {
    id,
    contextId: 'ctx',
    status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: undefined },
    artifacts: [],
    history: [],
    metadata: undefined,
  };
}

const status = (state: string, n: number): Json => ({
  statusUpdate: { taskId: 't1', contextId: 'ctx', status: { state, timestamp: `t${n}` }, metadata: { step: n } },
});
const artifact = (text: string, append = false): Json => ({
  artifactUpdate: {
    taskId: 't1',
    contextId: 'ctx',
    artifact: { artifactId: 'patch', parts: [{ text }] },
    append,
  },
});

/** What the task's row holds on disk (not what a read of the task returns). */
function rawRow(file: string): { lastSeq: number; state: number; snapshot: Json } {
  const db = new Database(file, { readonly: true });
  try {
    const r = db
      .prepare('SELECT last_seq, state, snapshot FROM baton_tasks WHERE agent = ? AND id = ?')
      .get(AGENT, 't1');
    assert.ok(r, 'the task has a row');
    return { lastSeq: Number(r.last_seq), state: Number(r.state), snapshot: JSON.parse(String(r.snapshot)) as Json };
  } finally {
    db.close();
  }
}

const STORES = {
  'the store': (file: string) => Promise.resolve(new SqliteGatewayStore({ file, driver: 'better-sqlite3' })),
  'the store thread': (file: string) => SqliteWorkerStore.open({ file, driver: 'better-sqlite3' }),
} satisfies Record<string, (file: string) => Promise<GatewayStore>>;

async function setUp(t: TestContext, open: (file: string) => Promise<GatewayStore>) {
  const dir = tempDir('baton-fold-');
  const file = join(dir.path, 'g.sqlite');
  let store = await bounded(open(file), 'the store to open');
  t.after(async () => {
    await store.close().catch(() => undefined);
    dir[Symbol.dispose]();
  });
  const hub = new EventHub();
  const writer = new TaskWriter(store, hub, AGENT, 't1', task('t1'), 1);
  await store.createTask(
    {
      agent: AGENT,
      id: 't1',
      contextId: 'ctx',
      principal: 'alice',
      kind: 'proxy',
      state: TaskState.TASK_STATE_SUBMITTED,
      snapshot: writer.snapshotJson(),
      owner: 'inst-1',
    },
    { seq: 1, body: JSON.stringify(TaskCodec.toJSON(task('t1'))) },
  );
  return {
    file,
    hub,
    writer,
    store: () => store,
    async reopen(): Promise<void> {
      await store.close();
      store = await bounded(open(file), 'the store to reopen');
    },
  };
}

/** The task as a read returns it, and as its writer has it, both parsed. */
async function bothViews(
  store: GatewayStore,
  writer: TaskWriter,
): Promise<{ read: Json; writer: Json; lastSeq: number }> {
  const row = await store.getTask(AGENT, 't1');
  assert.ok(row);
  return {
    read: JSON.parse(row.snapshot) as Json,
    writer: JSON.parse(writer.snapshotJson()) as Json,
    lastSeq: row.lastSeq,
  };
}

for (const [name, open] of Object.entries(STORES)) {
  describe(`Snapshots folded on read (${name})`, () => {
    it('progress is stored as events alone; a read folds them into the task exactly as its writer has it', async (t) => {
      const s = await setUp(t, open);
      s.writer.add(status('TASK_STATE_WORKING', 2));
      await bounded(s.writer.committed(), 'the state change');
      // The state changed: that batch stored the new state, not the snapshot.
      assert.equal(rawRow(s.file).lastSeq, 1);
      assert.equal(rawRow(s.file).state, TaskState.TASK_STATE_WORKING);

      for (let n = 3; n <= 12; n++) {
        s.writer.add(status('TASK_STATE_WORKING', n));
        if (n === 7) s.writer.add(artifact('first half\n'));
        if (n === 9) s.writer.add(artifact('second half\n', true));
        await bounded(s.writer.committed(), `progress ${n}`);
      }
      // Nothing but progress: the row still holds the snapshot of the task's creation.
      const raw = rawRow(s.file);
      assert.equal(raw.lastSeq, 1);
      assert.equal((raw.snapshot.metadata as Json)[META.seq], 1);

      // A read folds the 13 events after it: the same task the writer has, at the last seq.
      const v = await bothViews(s.store(), s.writer);
      assert.equal(v.lastSeq, 14);
      assert.deepEqual(v.read, v.writer);
      assert.equal((v.read.metadata as Json)[META.seq], 14);
      assert.deepEqual((v.read.metadata as Json).step, 12);
      assert.deepEqual(v.read.artifacts, [
        { artifactId: 'patch', parts: [{ text: 'first half\n' }, { text: 'second half\n' }] },
      ]);
      const listed = await s.store().listTasks({ agent: AGENT, principal: 'alice', limit: 10 });
      assert.equal(listed.length, 1);
      assert.equal(listed[0].lastSeq, 14);
      assert.deepEqual(JSON.parse(listed[0].snapshot), v.writer);
      const owned = await s.store().listOwnedUnfinished();
      assert.deepEqual(
        owned.map((r) => [r.lastSeq, JSON.parse(r.snapshot) as Json]),
        [[14, v.writer]],
      );
    });

    it('a restarted gateway continues after the last stored event, from the folded task', async (t) => {
      const s = await setUp(t, open);
      s.writer.add(status('TASK_STATE_WORKING', 2));
      for (let n = 3; n <= 6; n++) s.writer.add(status('TASK_STATE_WORKING', n));
      await bounded(s.writer.committed(), 'progress');
      await s.reopen();
      const row = await s.store().getTask(AGENT, 't1');
      assert.ok(row);
      assert.equal(row.lastSeq, 6);
      const next = TaskWriter.forRow(s.store(), s.hub, row);
      assert.equal(next.lastSeq, 6);
      next.add(status('TASK_STATE_WORKING', 7));
      next.add(status('TASK_STATE_COMPLETED', 8));
      await bounded(next.committed(), 'the final state');
      const v = await bothViews(s.store(), next);
      assert.equal(v.lastSeq, 8);
      assert.deepEqual(v.read, v.writer);
      assert.equal((await s.store().readEvents(AGENT, 't1', 0, 100)).length, 8);
    });

    it('the end of a task stores its state and its patch once; retention makes the snapshot whole before it drops the events', async (t) => {
      const s = await setUp(t, open);
      s.writer.add(status('TASK_STATE_WORKING', 2));
      for (let n = 3; n <= 5; n++) s.writer.add(status('TASK_STATE_WORKING', n));
      await bounded(s.writer.committed(), 'progress');
      s.writer.add(artifact('the patch\n'));
      s.writer.add(status('TASK_STATE_COMPLETED', 7));
      await bounded(s.writer.committed(), 'the end');
      const raw = rawRow(s.file);
      assert.equal(raw.state, TaskState.TASK_STATE_COMPLETED);
      assert.equal(raw.lastSeq, 1, 'the patch went into the snapshot as well as its event');
      const v = await bothViews(s.store(), s.writer);
      assert.equal(v.lastSeq, 7);
      assert.deepEqual(v.read, v.writer);
      const done = await s
        .store()
        .listTasks({ agent: AGENT, principal: 'alice', state: TaskState.TASK_STATE_COMPLETED, limit: 10 });
      assert.deepEqual(
        done.map((r) => r.id),
        ['t1'],
      );

      // Compacted: the events are gone, the row holds the whole task, and it reads as it was.
      const out = await s.store().retain({ compactBefore: Date.now() + 60_000, limit: 10 });
      assert.equal(out.compacted, 1);
      assert.equal((await s.store().readEvents(AGENT, 't1', 0, 100)).length, 0);
      const after = rawRow(s.file);
      assert.equal(after.lastSeq, 7);
      assert.deepEqual(after.snapshot, v.writer);
      const row = await s.store().getTask(AGENT, 't1');
      assert.ok(row?.compacted);
      assert.equal(row.lastSeq, 7);
      assert.deepEqual(JSON.parse(row.snapshot), v.writer);
    });

    it('a change the events do not carry (a reply recorded in the history) goes with the next batch', async (t) => {
      const s = await setUp(t, open);
      s.writer.add(status('TASK_STATE_WORKING', 2));
      await bounded(s.writer.committed(), 'working');
      s.writer.add(status('TASK_STATE_WORKING', 3));
      await bounded(s.writer.committed(), 'progress');
      assert.equal(rawRow(s.file).lastSeq, 1);
      s.writer.adoptHistory([{ messageId: 'm1', role: 'ROLE_USER', parts: [{ text: 'hello' }] }]);
      s.writer.add(status('TASK_STATE_WORKING', 4));
      await bounded(s.writer.committed(), 'with the history');
      const raw = rawRow(s.file);
      assert.equal(raw.lastSeq, 4);
      assert.deepEqual(raw.snapshot.history, [{ messageId: 'm1', role: 'ROLE_USER', parts: [{ text: 'hello' }] }]);
      const v = await bothViews(s.store(), s.writer);
      assert.deepEqual(v.read, v.writer);
    });
  });
}
