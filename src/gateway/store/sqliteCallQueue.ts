/**
 * The calls the SQLite thread has received, run in arrival order. Appends, task creations and
 * idempotency claims and bindings waiting together are committed as one transaction (one fsync for all of them; see `commitGroup`), each in
 * its own savepoint, and each is answered only once that COMMIT is done, so nobody is told an event is
 * stored before it is on disk. Any other call waits until the writes that came before it are
 * committed and runs alone: replies keep the order of the calls, so a task's writes keep their order
 * and a read sees every write made before it.
 */
import type { EventRow, NewTask } from './gatewayStore';
import type { GroupOutcome, GroupWrite, PageBatch, SqliteGatewayStore } from './sqliteStore';
import type { StoreCall, StoreReply } from './sqliteWorkerStore';

/**
 * At most this many writes, or about this many bytes of events and snapshots, share one commit: the
 * first write of a group waits for all of the group, and a transaction's size is what the WAL grows by.
 */
export const MAX_GROUP_WRITES = 64;
export const MAX_GROUP_BYTES = 8 * 1024 * 1024;

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null;
}

const isString = (v: unknown): v is string => typeof v === 'string';
const isNumber = (v: unknown): v is number => typeof v === 'number';

function isPageBatch(v: unknown): v is PageBatch {
  return (
    isRecord(v) &&
    isString(v.agent) &&
    isString(v.taskId) &&
    isNumber(v.firstSeq) &&
    isNumber(v.lastSeq) &&
    (isString(v.bodies) || v.bodies instanceof Uint8Array) &&
    isNumber(v.state) &&
    (v.snapshot === undefined || isString(v.snapshot)) &&
    (v.owner === undefined || v.owner === null || isString(v.owner))
  );
}

function isNewTask(v: unknown): v is NewTask {
  return (
    isRecord(v) &&
    isString(v.agent) &&
    isString(v.id) &&
    isString(v.contextId) &&
    isString(v.principal) &&
    (v.kind === 'local' || v.kind === 'proxy') &&
    isNumber(v.state) &&
    isString(v.snapshot) &&
    (v.owner === null || isString(v.owner)) &&
    (v.request === undefined || isString(v.request))
  );
}

const isEventRow = (v: unknown): v is EventRow => isRecord(v) && isNumber(v.seq) && isString(v.body);

/** The call as a write `commitGroup` takes, or undefined for any other call (which then runs alone). */
export function asGroupWrite(call: StoreCall): GroupWrite | undefined {
  const [a, b] = call.args;
  if (call.method === 'appendPage' && call.args.length === 1 && isPageBatch(a))
    return { method: 'appendPage', args: [a] };
  if (call.method === 'createTask' && call.args.length === 2 && isNewTask(a) && isEventRow(b))
    return { method: 'createTask', args: [a, b] };
  const [, , c, d, e, f, g] = call.args;
  if (
    call.method === 'claimRequest' &&
    call.args.length >= 5 &&
    call.args.length <= 7 &&
    isString(a) &&
    isString(b) &&
    isString(c) &&
    isString(d) &&
    (e === null || isString(e)) &&
    (f === undefined || isString(f)) &&
    (g === undefined || isString(g))
  )
    return { method: 'claimRequest', args: [a, b, c, d, e, f, g] };
  if (
    call.method === 'bindRequest' &&
    call.args.length === 4 &&
    isString(a) &&
    isString(b) &&
    isString(c) &&
    isString(d)
  )
    return { method: 'bindRequest', args: [a, b, c, d] };
  return undefined;
}

function sizeOf(w: GroupWrite): number {
  switch (w.method) {
    case 'appendPage':
      return w.args[0].bodies.length + (w.args[0].snapshot?.length ?? 0);
    case 'createTask':
      return w.args[0].snapshot.length + w.args[1].body.length;
    default:
      return 256; // a claim or a binding: one small row
  }
}

/**
 * How many tasks (or other writers: a claim, a binding) the group's writes come from: one fast task
 * with two batches in flight is not the load gathering is for.
 */
function writers(group: readonly QueuedWrite[]): number {
  const seen = new Set<string>();
  for (const { write: w } of group) {
    if (w.method === 'appendPage') seen.add(`${w.args[0].agent}\u0000${w.args[0].taskId}`);
    else if (w.method === 'createTask') seen.add(`${w.args[0].agent}\u0000${w.args[0].id}`);
    else seen.add(`\u0001${seen.size}`);
  }
  return seen.size;
}

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

interface QueuedWrite {
  readonly id: number;
  readonly write: GroupWrite;
}

export interface CallQueueOptions {
  /** Sends replies to the gateway: those of one group (or of one other call) together, in call order. */
  readonly reply: (replies: readonly StoreReply[]) => void;
  /** Called once the store is closed (after the reply to `close`). */
  readonly onClosed?: () => void;
  readonly maxWrites?: number;
  readonly maxBytes?: number;
  /**
   * Takes a call that has arrived but not been delivered yet (the thread's port, read synchronously),
   * or undefined when there is none: what came in during a commit joins the next group at once
   * instead of after a turn of the event loop, and shares its fsync.
   */
  readonly pull?: () => StoreCall | undefined;
  /**
   * Blocks the thread for `ms` (fractions allowed). Given one, and while many tasks are writing (the
   * last group had writes of several tasks), the next group starts no sooner than `GATHER_MS` after the last
   * one did, unless `GATHER_WRITES` writes are waiting by then: at thousands of events a second a
   * commit then carries a dozen tasks' batches instead of one or two, and most of a commit's cost (its
   * fsync, the WAL frames of the pages it touches) is per commit, not per write. The thread sleeps
   * once for what is left of that time and then takes what has arrived: looking at the port every
   * quarter of a millisecond instead woke it up to eight times per commit, which cost the store's
   * thread about 5% more CPU per relayed event (`npm run bench -- ab`, twice).
   */
  readonly sleep?: (ms: number) => void;
  /** The clock gathering goes by (ms; `performance.now` unless a test gives its own). */
  readonly now?: () => number;
}

/** See `CallQueueOptions.sleep`: at most this long between the starts of two commits under load… */
export const GATHER_MS = 2;
/** …unless this many writes are waiting already. */
export const GATHER_WRITES = 16;

export class SqliteCallQueue {
  private readonly queue: StoreCall[] = [];
  private scheduled = false;
  private closed = false;
  private closeReported = false;
  private readonly maxWrites: number;
  private readonly maxBytes: number;
  private readonly pull: () => StoreCall | undefined;
  private readonly now: () => number;
  /** When the last group's commit began (performance.now()) and how many writers its writes came from. */
  private lastGroupAt = 0;
  private lastGroupSize = 0;

  constructor(
    private readonly store: SqliteGatewayStore,
    private readonly o: CallQueueOptions,
  ) {
    this.maxWrites = o.maxWrites ?? MAX_GROUP_WRITES;
    this.maxBytes = o.maxBytes ?? MAX_GROUP_BYTES;
    this.pull = o.pull ?? (() => undefined);
    this.now = o.now ?? (() => performance.now());
  }

  /**
   * Takes a call; the queue is worked through on the next turn of the event loop, so every call that
   * has arrived by then can share a commit. Calls that arrive while it is being worked through (the
   * thread is busy committing) are delivered afterwards and make the next group.
   */
  push(call: StoreCall): void {
    this.queue.push(call);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => void this.drain());
  }

  private async drain(): Promise<void> {
    try {
      for (let call = this.pullAll(); call !== undefined; call = this.pullAll()) {
        if (this.closed) {
          const refused = this.queue.splice(0);
          this.o.reply(refused.map((c) => ({ id: c.id, ok: false, error: "the gateway's SQLite store is closed" })));
          break;
        }
        if (asGroupWrite(call)) this.gather();
        const group = this.takeGroup();
        if (group.length > 0) this.commit(group);
        else {
          this.queue.shift();
          await this.runOne(call);
        }
      }
    } finally {
      this.scheduled = false;
    }
    if (this.closed && !this.closeReported) {
      this.closeReported = true;
      this.o.onClosed?.();
    }
  }

  /** Moves the calls waiting at the port into the queue; returns the queue's head. */
  private pullAll(): StoreCall | undefined {
    for (let c = this.pull(); c !== undefined; c = this.pull()) this.queue.push(c);
    return this.queue[0];
  }

  /** Under load, waits for more writes to share the next commit (see `CallQueueOptions.sleep`). */
  private gather(): void {
    const sleep = this.o.sleep;
    if (!sleep || this.lastGroupSize < 2) return;
    const left = this.lastGroupAt + GATHER_MS - this.now();
    if (left <= 0 || this.queue.length >= GATHER_WRITES) return;
    sleep(left);
    this.pullAll();
  }

  /** The writes at the head of the queue, up to the group's bounds (at least one when the head is a write). */
  private takeGroup(): QueuedWrite[] {
    const group: QueuedWrite[] = [];
    let bytes = 0;
    for (let call = this.queue[0]; call !== undefined && group.length < this.maxWrites; call = this.queue[0]) {
      const write = asGroupWrite(call);
      if (!write) break;
      const size = sizeOf(write);
      if (group.length > 0 && bytes + size > this.maxBytes) break;
      this.queue.shift();
      group.push({ id: call.id, write });
      bytes += size;
    }
    return group;
  }

  private commit(group: readonly QueuedWrite[]): void {
    this.lastGroupAt = this.now();
    this.lastGroupSize = writers(group);
    let outcomes: GroupOutcome[];
    try {
      outcomes = this.store.commitGroup(group.map((g) => g.write));
    } catch (e) {
      // Nothing of the group is stored: every write in it fails.
      const error = `the gateway's SQLite store could not commit: ${message(e)}`;
      this.o.reply(group.map((g) => ({ id: g.id, ok: false, error })));
      return;
    }
    this.o.reply(
      group.map((g, i): StoreReply => {
        const o = outcomes[i];
        return o.ok ? { id: g.id, ok: true, value: o.value } : { id: g.id, ok: false, error: o.error.message };
      }),
    );
  }

  private async runOne(call: StoreCall): Promise<void> {
    try {
      const fn = this.store[call.method] as (...args: unknown[]) => Promise<unknown>;
      const value = await fn.apply(this.store, [...call.args]);
      this.o.reply([{ id: call.id, ok: true, value }]);
    } catch (e) {
      this.o.reply([{ id: call.id, ok: false, error: message(e) }]);
    }
    if (call.method === 'close') this.closed = true;
  }
}
