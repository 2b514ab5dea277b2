/**
 * The task writer's commit grouping, on a real SQLite store whose appends the test holds back (so a
 * commit is provably in flight while more events are added).
 */
import { describe, it } from 'node:test';
import type { TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { Task as TaskCodec, TaskState } from '@a2a-js/sdk';
import type { Task } from '@a2a-js/sdk';
import { EventHub, foldWire, followTask, TaskWriter } from '../../../src/gateway/eventLog';
import type { AppendNotice, CommittedStart, Json } from '../../../src/gateway/eventLog';
import { META } from '../../../src/core/batonProfile';
import { SqliteGatewayStore } from '../../../src/gateway/store/sqliteStore';
import type { AppendBatch, GatewayStore } from '../../../src/gateway/store/gatewayStore';
import { bounded, tempDir } from './helpers';

const AGENT = 'echo';

/** A real store whose appends wait until the test lets each one through (or fail when told to). */
class GatedStore {
  readonly started: AppendBatch[] = [];
  private gates: Array<{ open(): void; fail(e: Error): void }> = [];
  private arrived: Array<() => void> = [];

  /** `ordered`: the store says it applies appends in call order (the writer may then send ahead). */
  constructor(
    readonly inner: SqliteGatewayStore,
    private readonly ordered = false,
  ) {}

  asStore(): GatewayStore {
    return new Proxy(this.inner, {
      get: (target, prop, receiver) => {
        if (prop === 'append') return (batch: AppendBatch) => this.append(batch);
        if (prop === 'ordersAppends') return this.ordered;
        const v: unknown = Reflect.get(target, prop, receiver);
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
  }

  private async append(batch: AppendBatch): Promise<void> {
    this.started.push(batch);
    const gate = new Promise<void>((open, fail) => this.gates.push({ open, fail }));
    this.arrived.shift()?.();
    await gate;
    await this.inner.append(batch);
  }

  /** Resolves once `n` appends have started. */
  async untilStarted(n: number): Promise<void> {
    while (this.started.length < n)
      await bounded(new Promise<void>((r) => this.arrived.push(r)), `append ${n} to start`);
  }

  release(): void {
    this.gates.shift()?.open();
  }

  failNext(e: Error): void {
    this.gates.shift()?.fail(e);
  }
}

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

const working = (n: number): Record<string, unknown> => ({
  statusUpdate: { taskId: 't1', contextId: 'ctx', status: { state: 'TASK_STATE_WORKING', timestamp: String(n) } },
});

async function setUp(
  t: TestContext,
  ordered = false,
): Promise<{
  gated: GatedStore;
  writer: TaskWriter;
  notices: AppendNotice[];
  store: SqliteGatewayStore;
  hub: EventHub;
}> {
  const dir = tempDir('baton-writer-');
  const store = new SqliteGatewayStore({ file: join(dir.path, 'g.sqlite'), driver: 'better-sqlite3' });
  t.after(async () => {
    await store.close();
    dir[Symbol.dispose]();
  });
  const gated = new GatedStore(store, ordered);
  const hub = new EventHub();
  const notices: AppendNotice[] = [];
  hub.subscribe(AGENT, 't1', (n) => {
    if (n) notices.push(n);
  });
  const writer = new TaskWriter(gated.asStore(), hub, AGENT, 't1', task('t1'), 1);
  await store.createTask(
    {
      agent: AGENT,
      id: 't1',
      contextId: 'ctx',
      principal: 'p',
      kind: 'proxy',
      state: TaskState.TASK_STATE_SUBMITTED,
      snapshot: writer.snapshotJson(),
      owner: 'me',
    },
    { seq: 1, body: JSON.stringify({ task: TaskCodec.toJSON(task('t1')) }) },
  );
  return { gated, writer, notices, store, hub };
}

/** The store as a follower sees it, counting its reads. */
function counting(store: SqliteGatewayStore): { store: GatewayStore; reads: () => number } {
  let reads = 0;
  const view = new Proxy(store, {
    get: (target, prop, receiver) => {
      if (prop === 'readEvents' || prop === 'getTask') reads++;
      const v: unknown = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  return { store: view, reads: () => reads };
}

const completed = (): Record<string, unknown> => ({
  statusUpdate: { taskId: 't1', contextId: 'ctx', status: { state: 'TASK_STATE_COMPLETED' } },
});

describe('TaskWriter', () => {
  it('groups what is added during a commit into the next one, and resolves a wait only once its own events are stored', async (t) => {
    const { gated, writer, notices, store } = await setUp(t);
    writer.add(working(2));
    writer.add(working(3));
    const first = writer.committed();
    await gated.untilStarted(1);
    // Commit 1 (seq 2..3) is in flight; these go into commit 2.
    writer.add(working(4));
    const second = writer.committed();
    let secondDone = false;
    void second.then(() => (secondDone = true));
    gated.release();
    await bounded(first, 'first commit');
    assert.deepEqual(
      notices.map((n) => n.rows.map((r) => r.seq)),
      [[2, 3]],
    );
    await gated.untilStarted(2);
    await new Promise((r) => setImmediate(r));
    assert.equal(secondDone, false, 'the wait for seq 4 resolved while seq 4 was still uncommitted');
    assert.equal((await store.getTask(AGENT, 't1'))?.lastSeq, 3);
    gated.release();
    await bounded(second, 'second commit');
    assert.equal((await store.getTask(AGENT, 't1'))?.lastSeq, 4);
    assert.deepEqual(
      notices.map((n) => n.rows.map((r) => r.seq)),
      [[2, 3], [4]],
    );
    assert.deepEqual(
      gated.started.map((b) => b.events.map((e) => e.seq)),
      [[2, 3], [4]],
    );
    await bounded(writer.committed(), 'nothing left');
  });

  it('with a store that orders appends, the next batch is sent while the first is in flight, and both are published in order', async (t) => {
    const { gated, writer, notices, store } = await setUp(t, true);
    writer.add(working(2));
    const first = writer.committed();
    await gated.untilStarted(1);
    writer.add(working(3));
    const second = writer.committed();
    let secondDone = false;
    void second.then(() => (secondDone = true));
    // Sent before the first is answered.
    await gated.untilStarted(2);
    assert.equal(notices.length, 0, 'published before its commit returned');
    gated.release();
    await bounded(first, 'first commit');
    assert.equal(secondDone, false, 'the wait for seq 3 resolved while seq 3 was still uncommitted');
    assert.deepEqual(
      notices.map((n) => n.rows.map((r) => r.seq)),
      [[2]],
    );
    gated.release();
    await bounded(second, 'second commit');
    assert.deepEqual(
      notices.map((n) => n.rows.map((r) => r.seq)),
      [[2], [3]],
    );
    assert.equal((await store.getTask(AGENT, 't1'))?.lastSeq, 3);
    assert.deepEqual(
      (await store.readEvents(AGENT, 't1', 0, 10)).map((r) => r.seq),
      [1, 2, 3],
    );
  });

  it('with batches in flight, a failed one fails those sent after it with its error, and none of them is published', async (t) => {
    const { gated, writer, notices, store } = await setUp(t, true);
    writer.add(working(2));
    const first = writer.committed();
    await gated.untilStarted(1);
    writer.add(working(3));
    const second = writer.committed();
    await gated.untilStarted(2);
    gated.failNext(new Error('disk full'));
    await assert.rejects(bounded(first, 'first'), /disk full/);
    // The second reaches the real store, which refuses it (it does not continue the stored seqs).
    gated.release();
    await assert.rejects(bounded(second, 'second'), /disk full/);
    assert.throws(() => writer.add(working(4)), /disk full/);
    assert.deepEqual(notices, []);
    assert.equal((await store.getTask(AGENT, 't1'))?.lastSeq, 1);
  });

  it('hold: what is added while held waits, and goes to the store in one commit on release', async (t) => {
    const { gated, writer, notices } = await setUp(t);
    writer.hold();
    writer.add(working(2));
    const waiting = writer.committed();
    // Several turns of the event loop pass (a signature being made): nothing is committed.
    for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
    assert.equal(gated.started.length, 0);
    writer.add(working(3));
    writer.release();
    await gated.untilStarted(1);
    gated.release();
    await bounded(waiting, 'held events');
    assert.deepEqual(
      gated.started.map((b) => b.events.map((e) => e.seq)),
      [[2, 3]],
    );
    assert.deepEqual(
      notices.map((n) => n.rows.map((r) => r.seq)),
      [[2, 3]],
    );
  });

  it('a failed commit fails its waiters and everything added meanwhile, and refuses further events', async (t) => {
    const { gated, writer, notices } = await setUp(t);
    writer.add(working(2));
    const first = writer.committed();
    await gated.untilStarted(1);
    writer.add(working(3));
    const second = writer.committed();
    gated.failNext(new Error('disk full'));
    await assert.rejects(bounded(first, 'first'), /disk full/);
    await assert.rejects(bounded(second, 'second'), /disk full/);
    assert.throws(() => writer.add(working(4)), /disk full/);
    await assert.rejects(writer.committed(), /disk full/);
    assert.deepEqual(notices, []);
    assert.equal(gated.started.length, 1);
  });

  it('a wait asked for once its batch is in flight settles with that commit; a failure nobody waits for is not unhandled', async (t) => {
    const { gated, writer, notices } = await setUp(t);
    const unhandled: unknown[] = [];
    const onUnhandled = (e: unknown): void => void unhandled.push(e);
    process.on('unhandledRejection', onUnhandled);
    t.after(() => process.off('unhandledRejection', onUnhandled));
    // Nobody waits while the batch is queued and sent: the wait is asked for only once it is in flight.
    writer.add(working(2));
    await gated.untilStarted(1);
    const late = writer.committed();
    let settled = false;
    void late.then(() => (settled = true));
    await new Promise((r) => setImmediate(r));
    assert.equal(settled, false, 'the commit is still in flight');
    gated.release();
    await bounded(late, 'the late wait');
    assert.deepEqual(
      notices.map((n) => n.rows.map((r) => r.seq)),
      [[2]],
    );
    // Committed already: a wait asked for now settles at once.
    await bounded(writer.committed(), 'a wait after the commit');
    // The next batch fails and nobody waits for it.
    writer.add(working(3));
    await gated.untilStarted(2);
    gated.failNext(new Error('disk full'));
    for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
    assert.deepEqual(unhandled, []);
    await assert.rejects(writer.committed(), /disk full/);
    assert.throws(() => writer.add(working(4)), /disk full/);
  });

  it("a read after each commit gets the task folded so far: artifacts and history as they are after that commit's events", async (t) => {
    const { gated, writer, store } = await setUp(t);
    const expected: Json = TaskCodec.toJSON(task('t1')) as Json;
    const artifact = (text: string, append: boolean): Json => ({
      artifactUpdate: {
        taskId: 't1',
        contextId: 'ctx',
        append,
        artifact: { artifactId: 'patch', name: 'changes.patch', parts: [{ text }] },
      },
    });
    const message = (text: string): Json => ({
      message: { messageId: text, role: 'ROLE_AGENT', parts: [{ text }] },
    });
    // One commit per step: what each stored snapshot must say after it.
    const steps: Array<{ events: Json[]; history?: unknown[]; parts: string[]; historyLength: number }> = [
      { events: [working(2)], parts: [], historyLength: 0 },
      { events: [artifact('first ', false)], parts: ['first '], historyLength: 0 },
      { events: [working(4), working(5)], parts: ['first '], historyLength: 0 },
      { events: [artifact('second', true)], parts: ['first ', 'second'], historyLength: 0 },
      { events: [message('hello')], parts: ['first ', 'second'], historyLength: 1 },
      {
        events: [working(8)],
        history: [{ messageId: 'sent', role: 'ROLE_USER', parts: [{ text: 'go' }] }],
        parts: ['first ', 'second'],
        historyLength: 1,
      },
      { events: [artifact('replaced', false), working(10)], parts: ['replaced'], historyLength: 1 },
    ];
    let seq = 1;
    for (const step of steps) {
      if (step.history) {
        writer.adoptHistory(step.history);
        expected.history = step.history;
      }
      for (const ev of step.events) {
        foldWire(expected, structuredClone(ev));
        writer.add(ev);
        seq++;
      }
      const done = writer.committed();
      await gated.untilStarted(gated.started.length + 1);
      gated.release();
      await bounded(done, `commit up to seq ${seq}`);
      const row = await store.getTask(AGENT, 't1');
      assert.ok(row);
      const stored = JSON.parse(row.snapshot) as Json;
      const parts =
        (stored.artifacts as Array<{ parts: Array<{ text: string }> }> | undefined)?.[0]?.parts.map((p) => p.text) ??
        [];
      assert.deepEqual(parts, step.parts);
      assert.equal((stored.history as unknown[] | undefined)?.length ?? 0, step.historyLength);
      assert.deepEqual(stored, {
        ...expected,
        metadata: { ...(expected.metadata as Json | undefined), [META.seq]: seq },
      });
    }
  });
});

describe('followTask from a task just created in this process', () => {
  const FIRST = { seq: 1, body: JSON.stringify({ task: TaskCodec.toJSON(task('t1')) }) };

  /** A send stream's follower of a task this process just created (`created`), from its first event. */
  const followCreated = (
    store: GatewayStore,
    hub: EventHub,
    taskId: string,
    created: CommittedStart,
  ): ReturnType<typeof followTask> =>
    followTask({ store, hub, agent: AGENT, taskId, afterSeq: 0, untilTurnEnds: true, created });

  /** Every seq the follower delivers, until it ends. */
  async function seqsOf(follower: ReturnType<typeof followTask>): Promise<number[]> {
    const got: number[] = [];
    for await (const rows of follower) got.push(...rows.map((r) => r.seq));
    return got;
  }

  it('starts with the rows the writer committed and follows its commits without reading the store', async (t) => {
    const { gated, writer, store, hub } = await setUp(t);
    const view = counting(store);
    const follower = followCreated(view.store, hub, 't1', writer.createdWith([FIRST]));
    const got: number[][] = [];
    const first = await bounded(follower.next(), 'first batch');
    assert.ok(!first.done);
    got.push(first.value.map((r) => r.seq));
    writer.add(working(2));
    await gated.untilStarted(1);
    gated.release();
    got.push(((await bounded(follower.next(), 'second batch')).value ?? []).map((r) => r.seq));
    writer.add(completed());
    await gated.untilStarted(2);
    gated.release();
    for (;;) {
      const n = await bounded(follower.next(), 'the rest');
      if (n.done) break;
      got.push(n.value.map((r) => r.seq));
    }
    assert.deepEqual(got, [[1], [2], [3]]);
    assert.equal(view.reads(), 0, 'the follower read the store');
  });

  it('reads the store when the writer committed more before the follower subscribed, and loses or repeats nothing', async (t) => {
    const { gated, writer, store, hub } = await setUp(t);
    const view = counting(store);
    const created = writer.createdWith([FIRST]);
    writer.add(working(2));
    writer.add(completed());
    const done = writer.committed();
    await gated.untilStarted(1);
    gated.release();
    await bounded(done, 'commit before the follower starts');
    assert.deepEqual(await seqsOf(followCreated(view.store, hub, 't1', created)), [1, 2, 3]);
    assert.ok(view.reads() > 0, 'the events committed before the subscription came from nowhere');
  });

  it('ends after the first rows when the task was created with its turn already over', async (t) => {
    const { store, hub } = await setUp(t);
    const view = counting(store);
    const done = task('t2');
    done.status = { state: TaskState.TASK_STATE_COMPLETED, message: undefined, timestamp: undefined };
    const writer = new TaskWriter(view.store, hub, AGENT, 't2', done, 1);
    const created = writer.createdWith([{ seq: 1, body: JSON.stringify({ task: TaskCodec.toJSON(done) }) }]);
    assert.deepEqual(await seqsOf(followCreated(view.store, hub, 't2', created)), [1]);
    assert.equal(view.reads(), 0);
  });
});
