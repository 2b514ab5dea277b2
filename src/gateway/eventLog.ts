/**
 * The replay profile's moving parts: a per-task writer that numbers events, folds them into the task
 * snapshot and commits them (grouped: everything queued in one tick is one transaction) before anyone
 * sees them, an in-process hub that wakes subscribers after each commit, and the subscriber loop that
 * replays from the store and then follows live events without losing or repeating one.
 */
import { Message, StreamResponse, Task, TaskState, taskStateFromJSON } from '@a2a-js/sdk';
import { META } from '../core/batonProfile';
import { isRecord } from '../core/isRecord';
import { foldWire, wireKind } from './wireFold';
import type { Json, WireEvent, WireKind } from './wireFold';
import { bodySize, bodyText } from './store/gatewayStore';
import type { EventRow, GatewayStore, TaskRow } from './store/gatewayStore';
import { endsTurn, isTerminal } from '../core/taskStates';

export { foldWire, wireKind };
export type { Json, WireEvent, WireKind };

export interface AppendNotice {
  readonly rows: readonly EventRow[];
  readonly lastSeq: number;
  readonly state: TaskState;
}

type HubListener = (notice: AppendNotice | undefined) => void;

/** Wakes subscribers of a task. `undefined` means "something was appended elsewhere: read the store". */
export class EventHub {
  private readonly listeners = new Map<string, Set<HubListener>>();

  static key(agent: string, taskId: string): string {
    return `${agent}\u0000${taskId}`;
  }

  subscribe(agent: string, taskId: string, fn: HubListener): () => void {
    const k = EventHub.key(agent, taskId);
    let set = this.listeners.get(k);
    if (!set) {
      set = new Set();
      this.listeners.set(k, set);
    }
    set.add(fn);
    return () => {
      set.delete(fn);
      if (set.size === 0) this.listeners.delete(k);
    };
  }

  publish(agent: string, taskId: string, notice: AppendNotice | undefined): void {
    const set = this.listeners.get(EventHub.key(agent, taskId));
    if (!set) return;
    for (const fn of [...set]) fn(notice);
  }

  /** Wakes every subscriber of every task (`undefined`: each reads the store). */
  publishAll(notice: undefined): void {
    for (const set of [...this.listeners.values()]) for (const fn of [...set]) fn(notice);
  }
}

const optObject = (v: unknown): boolean => v === undefined || isRecord(v);
const optArray = (v: unknown): boolean => v === undefined || Array.isArray(v);
const optString = (v: unknown): boolean => v === undefined || typeof v === 'string';
const statusOk = (s: unknown): boolean => s === undefined || (isRecord(s) && optString(s.state));

/** True when the fields this log reads and folds have the shapes the A2A wire JSON gives them. */
function wellFormed(ev: WireEvent): boolean {
  const k = wireKind(ev);
  if (!k) return false;
  const v = ev[k] as Json;
  if (!optObject(v.metadata)) return false;
  switch (k) {
    case 'task':
      return (
        typeof v.id === 'string' &&
        optString(v.contextId) &&
        statusOk(v.status) &&
        optArray(v.artifacts) &&
        optArray(v.history)
      );
    case 'statusUpdate':
      return optString(v.taskId) && statusOk(v.status);
    case 'artifactUpdate':
      return (
        optString(v.taskId) &&
        isRecord(v.artifact) &&
        typeof v.artifact.artifactId === 'string' &&
        optArray(v.artifact.parts) &&
        (v.append === undefined || typeof v.append === 'boolean')
      );
    case 'message':
      return true;
  }
}

/**
 * An event received from elsewhere (a remote agent) in the form the log keeps. Well-formed wire JSON
 * passes through as sent (no parse into SDK objects and back: relaying stays cheap); anything else is
 * read the way the SDK reads it, so odd input folds exactly as it would through the SDK's client.
 */
export function toWireEvent(raw: unknown): WireEvent | undefined {
  if (!isRecord(raw)) return undefined;
  if (wellFormed(raw)) return raw;
  const normal = StreamResponse.toJSON(StreamResponse.fromJSON(raw)) as Json;
  return wireKind(normal) ? normal : undefined;
}

/** The task state named by a wire `status.state` (enum name or number). */
export function wireState(status: unknown): TaskState {
  const s = isRecord(status) ? status.state : undefined;
  if (typeof s === 'number') return s as TaskState;
  if (typeof s === 'string') return taskStateFromJSON(s);
  return TaskState.TASK_STATE_UNSPECIFIED;
}

/** The state an event moves its task to, when it says one. */
export function wireEventState(ev: WireEvent, k: WireKind | undefined = wireKind(ev)): TaskState | undefined {
  if (k !== 'statusUpdate' && k !== 'task') return undefined;
  const status = (ev[k] as Json).status;
  return status === undefined ? undefined : wireState(status);
}

/** The task id an event names ('' when it names none). */
export function wireTaskId(ev: WireEvent, k: WireKind | undefined = wireKind(ev)): string {
  if (!k) return '';
  const v = ev[k] as Json;
  const id = k === 'task' ? v.id : v.taskId;
  return typeof id === 'string' ? id : '';
}

/**
 * A stored event body with `baton/seq` in the event's own metadata: what a client that activated the
 * replay profile gets (the SDK's client exposes no SSE ids, so the seq has to travel in the event).
 * Bodies are stored without it: plain A2A clients get the events as the agent sent them, and a relay
 * stores a remote's bytes as they came.
 */
export function withSeq(stored: string | Uint8Array, seq: number): string {
  const body = bodyText(stored);
  let ev: unknown;
  try {
    ev = JSON.parse(body);
  } catch {
    return body;
  }
  if (!isRecord(ev)) return body;
  const k = wireKind(ev);
  if (!k) return body;
  const v = ev[k] as Json;
  v.metadata = { ...(isRecord(v.metadata) ? v.metadata : {}), [META.seq]: seq };
  return JSON.stringify(ev);
}

/**
 * Batches of one task a store that orders appends may have in flight at once: one being committed and
 * the next waiting for the following group. More would only split what one group commits anyway.
 */
const MAX_IN_FLIGHT = 2;

/**
 * With a store that folds snapshots on read, a running task's snapshot is stored at least this often
 * (events, bytes of events, ms): what a read of the task folds is bounded, and its update time (task
 * listings sort by it) is at most this far behind.
 */
const SNAPSHOT_EVERY_EVENTS = 64;
const SNAPSHOT_EVERY_BYTES = 1024 * 1024;
const SNAPSHOT_EVERY_MS = 1000;

interface Deferred {
  readonly promise: Promise<void>;
  resolve(): void;
  reject(e: Error): void;
}

function deferred(): Deferred {
  let resolve!: () => void;
  let reject!: (e: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  // Nobody may be waiting for this commit: a failure is reported to those who ask, never unhandled.
  promise.catch(() => undefined);
  return { promise, resolve, reject };
}

/** Writers with a batch to send on the next turn of the event loop. */
const due = new Set<TaskWriter>();
let dueScheduled = false;

/**
 * The writers of every task flush in one turn of the event loop, one after another, so the store sees
 * their batches together (the SQLite store posts them to its thread as one message).
 */
function flushSoon(w: TaskWriter): void {
  due.add(w);
  if (dueScheduled) return;
  dueScheduled = true;
  setImmediate(() => {
    dueScheduled = false;
    const writers = [...due];
    due.clear();
    for (const x of writers) x.flushNow();
  });
}

/**
 * The single writer of one task's events in this process. Adding an event is synchronous (agents emit
 * from callbacks) and costs no promise; what is added in one turn of the event loop is one batch.
 * A store that applies appends in call order (`ordersAppends`: the SQLite thread) takes the next batch
 * while the previous one is still being committed, so an event does not wait for a commit
 * it is not part of before its own is even sent; any other store has one commit in flight at a time
 * and everything added meanwhile goes into the next, so the number of commits adapts to how fast the
 * disk is. Subscribers are woken only after the commit. The task is kept as wire JSON, so a relayed
 * event is folded and stored without a round trip through the SDK's objects.
 */
export class TaskWriter {
  private queue: EventRow[] = [];
  /** Settles when the events now in `queue` are committed (created with the queue's first event). */
  private queued: Deferred | undefined;
  /** Settles when the last batch sent to the store is committed (undefined once it is). */
  private lastSent: Promise<void> | undefined;
  /** Batches sent to the store and not yet answered. */
  private inFlight = 0;
  /** How many batches may be in flight at once. */
  private readonly maxInFlight: number;
  private flushScheduled = false;
  private failed: Error | undefined;
  private readonly wire: Json;
  /** The state the folded status names (worked out once per event that changes it). */
  private stateNow: TaskState;
  lastSeq: number;
  /** The last seq committed and announced on the hub (the writer's starting point until its first commit). */
  private published: number;

  constructor(
    private readonly store: GatewayStore,
    private readonly hub: EventHub,
    readonly agent: string,
    readonly taskId: string,
    task: Task,
    lastSeq: number,
  ) {
    this.maxInFlight = store.ordersAppends ? MAX_IN_FLIGHT : 1;
    this.wire = Task.toJSON(task) as Json;
    this.stateNow = wireState(this.wire.status);
    this.lastSeq = lastSeq;
    this.published = lastSeq;
    // A writer starts from a snapshot that is (or is about to be) stored: the task's creation or its row.
    this.stored = { at: Date.now(), events: 0, bytes: 0 };
  }

  /** The writer of a stored task, continuing after its last stored event. */
  static forRow(store: GatewayStore, hub: EventHub, row: TaskRow): TaskWriter {
    return new TaskWriter(store, hub, row.agent, row.id, Task.fromJSON(JSON.parse(row.snapshot)), row.lastSeq);
  }

  private readonly failureListeners: ((e: Error) => void)[] = [];

  /**
   * Calls `listener` once, when a commit fails for good (at once, on a later turn, if one already has):
   * for a run that should stop when nothing it does can be stored any more.
   */
  onFailure(listener: (e: Error) => void): void {
    const failed = this.failed;
    if (failed) queueMicrotask(() => listener(failed));
    else this.failureListeners.push(listener);
  }

  /** Why this writer stores nothing more (a commit failed for good), if it does not. */
  get failure(): Error | undefined {
    return this.failed;
  }

  /** The task as folded so far (a copy in the SDK's form). */
  get task(): Task {
    return Task.fromJSON(this.wire);
  }

  get contextId(): string {
    return typeof this.wire.contextId === 'string' ? this.wire.contextId : '';
  }

  get state(): TaskState {
    return this.stateNow;
  }

  /** Takes a task's history as the remote reports it (folded into the next commit's snapshot). */
  adoptHistory(history: unknown): void {
    if (!Array.isArray(history)) return;
    this.wire.history = history;
    this.unfoldable = true;
  }

  /**
   * What a follower of the task just created with `rows` (seq 1 on, committed by the caller) needs
   * instead of reading them back from the store. Taken before anything else is added.
   */
  createdWith(rows: readonly EventRow[]): CommittedStart {
    return { rows, state: this.stateNow, publishedSeq: () => this.published };
  }

  /** Resolves once everything added so far is committed; rejects if a commit failed. */
  committed(): Promise<void> {
    if (this.failed) return Promise.reject(this.failed);
    return this.queued?.promise ?? this.lastSent ?? Promise.resolve();
  }

  /** Events queued but not yet committed (a relay slows down when this grows). */
  get backlog(): number {
    return this.queue.length;
  }

  /** Numbers, folds and queues one event; resolves when it is committed. */
  push(resp: StreamResponse): Promise<void> {
    try {
      this.addResponse(resp);
    } catch (e) {
      return Promise.reject(e instanceof Error ? e : new Error(String(e)));
    }
    return this.committed();
  }

  /** `add` for an event in the SDK's form. */
  addResponse(resp: StreamResponse): void {
    this.add(StreamResponse.toJSON(resp) as Json);
  }

  /**
   * Numbers, folds and queues one event already in wire form (see `toWireEvent`); the writer takes it
   * over. `raw` is the event's JSON text as received (or its UTF-8 bytes, see `EventRow.body`), when it
   * is exactly `ev` on one line: it is stored as it came. Throws when an earlier commit failed (nothing
   * more is stored for this task then).
   */
  add(ev: WireEvent, kind: WireKind | undefined = wireKind(ev), raw?: string | Uint8Array): void {
    if (this.failed) throw this.failed;
    const seq = ++this.lastSeq;
    foldWire(this.wire, ev, kind);
    if (kind === 'statusUpdate' || kind === 'task') this.stateNow = wireState(this.wire.status);
    this.queue.push({ seq, body: raw ?? JSON.stringify(ev) });
    if (!this.queued) {
      this.queued = deferred();
      this.scheduleFlush();
    }
  }

  /** Sends the queued batch on the next turn of the event loop, when the store can take it. */
  private scheduleFlush(): void {
    if (this.flushScheduled || !this.queued || this.held || this.inFlight >= this.maxInFlight) return;
    this.flushScheduled = true;
    flushSoon(this);
  }

  /** Called by `flushSoon`'s turn. */
  flushNow(): void {
    this.flushScheduled = false;
    void this.flush();
  }

  /**
   * Adds a message the caller sent (a reply to input-required) to the task's history. It is not an
   * event (a client following the stream sent it, and a message event would read as the agent's
   * answer): it reaches the stored snapshot with the next commit, which the caller then awaits.
   */
  recordMessage(message: Message): void {
    this.wire.history = [...(Array.isArray(this.wire.history) ? this.wire.history : []), Message.toJSON(message)];
    this.unfoldable = true;
  }

  /** When the stored snapshot was stored, and the events and bytes stored since. */
  private stored: { at: number; events: number; bytes: number };
  /** The task changed in a way its events do not carry (history taken or recorded): the next batch stores it. */
  private unfoldable = false;

  /**
   * Whether a batch stores the snapshot. With a store that folds snapshots on read, only when the
   * change is not in the events or enough events or time have passed that a read would fold too
   * much. Otherwise the batch is its events (and the state and owner, when they change) alone: no
   * snapshot is serialised, sent or written, not even the last one of a task, whose patch is then
   * stored once, in its event (retention folds the events in before it drops them).
   */
  private snapshotDue(rows: readonly EventRow[]): boolean {
    if (!this.store.foldsSnapshots) return true;
    const st = this.stored;
    st.events += rows.length;
    for (const r of rows) st.bytes += bodySize(r.body);
    return (
      this.unfoldable ||
      st.events >= SNAPSHOT_EVERY_EVENTS ||
      st.bytes >= SNAPSHOT_EVERY_BYTES ||
      Date.now() - st.at >= SNAPSHOT_EVERY_MS
    );
  }

  private held = 0;
  /**
   * Holds commits back (what is added waits) until `release`: for a moment where the next event is
   * known to follow at once, e.g. a final status being signed right after the last artifact, so the
   * two go to the store (and the 1 MiB snapshot with them) once, not twice. Never wait for
   * `committed()` while holding.
   */
  hold(): void {
    this.held++;
  }

  release(): void {
    if (this.held > 0 && --this.held === 0) this.scheduleFlush();
  }

  /** Ownership changes (null when the run ends) travel with the next commit. */
  private owner: string | null | undefined;
  setOwner(owner: string | null): void {
    this.owner = owner;
  }

  /** The JSON text of the snapshot's artifacts and of its history, with the arrays they were made from. */
  private artifactsJson: { of: unknown; text: string } | undefined;
  private historyJson: { of: unknown; text: string } | undefined;

  /**
   * The task as stored (with every commit, or now and then: see `snapshotDue`). Artifacts and history are most of its size (a whole patch)
   * and change far less often than the status: their text is kept while they are the same arrays
   * (folding replaces an array it changes, never edits one in place), so a status event does not
   * serialise the patch again.
   */
  snapshotJson(): string {
    const { artifacts, history, metadata, ...rest } = this.wire;
    const head = JSON.stringify({
      ...rest,
      metadata: { ...(isRecord(metadata) ? metadata : {}), [META.seq]: this.lastSeq },
    });
    let tail = '';
    if (artifacts !== undefined) {
      if (this.artifactsJson?.of !== artifacts) this.artifactsJson = { of: artifacts, text: JSON.stringify(artifacts) };
      tail += `,"artifacts":${this.artifactsJson.text}`;
    }
    if (history !== undefined) {
      if (this.historyJson?.of !== history) this.historyJson = { of: history, text: JSON.stringify(history) };
      tail += `,"history":${this.historyJson.text}`;
    }
    // `head` always ends with the metadata object and the closing brace.
    return tail ? `${head.slice(0, -1)}${tail}}` : head;
  }

  private async flush(): Promise<void> {
    const done = this.queued;
    if (!done || this.inFlight >= this.maxInFlight || this.held) return;
    if (this.failed) {
      // An earlier batch failed while this one waited: it is not stored either.
      this.queued = undefined;
      this.queue = [];
      done.reject(this.failed);
      return;
    }
    const rows = this.queue;
    this.queue = [];
    this.queued = undefined;
    this.inFlight++;
    this.lastSent = done.promise;
    const state = this.state;
    const owner = this.owner;
    this.owner = undefined;
    // With several batches in flight, the next may be sent at once.
    this.scheduleFlush();
    let snapshot: string | undefined;
    if (this.snapshotDue(rows)) {
      snapshot = this.snapshotJson();
      this.stored = { at: Date.now(), events: 0, bytes: 0 };
      this.unfoldable = false;
    }
    try {
      await this.store.append({
        agent: this.agent,
        taskId: this.taskId,
        events: rows,
        state,
        ...(snapshot !== undefined ? { snapshot } : {}),
        ...(owner !== undefined ? { owner } : {}),
      });
    } catch (e) {
      // The first failure is the one reported; the batches sent after it fail with it (they do not
      // continue the task's stored seqs).
      const first = !this.failed;
      this.failed ??= e instanceof Error ? e : new Error(String(e));
      this.inFlight--;
      if (this.lastSent === done.promise) this.lastSent = undefined;
      done.reject(this.failed);
      // What was added meanwhile will not be stored either.
      const waiting = this.waitingBatch();
      if (waiting) {
        this.queued = undefined;
        this.queue = [];
        waiting.reject(this.failed);
      }
      if (first) for (const l of this.failureListeners.splice(0)) l(this.failed);
      return;
    }
    this.inFlight--;
    if (this.lastSent === done.promise) this.lastSent = undefined;
    if (this.failed) {
      // An earlier batch failed: this one cannot have been stored after it (see the catch above).
      done.reject(this.failed);
      return;
    }
    const lastSeq = rows[rows.length - 1]?.seq ?? this.lastSeq;
    this.published = lastSeq;
    this.hub.publish(this.agent, this.taskId, { rows, lastSeq, state });
    done.resolve();
    this.scheduleFlush();
  }

  /** The batch queued while a commit was in flight (read afresh: it changes across the await). */
  private waitingBatch(): Deferred | undefined {
    return this.queued;
  }
}

/**
 * A task this process has just created, as its writer knows it: the events committed with it
 * (contiguous from seq 1), the state they leave it in, and how far the writer's commits have got since.
 * A follower given it starts without reading the store, unless commits have gone past `rows` already.
 */
export interface CommittedStart {
  readonly rows: readonly EventRow[];
  readonly state: TaskState;
  readonly publishedSeq: () => number;
}

export interface FollowOptions {
  readonly store: GatewayStore;
  readonly hub: EventHub;
  readonly agent: string;
  readonly taskId: string;
  /** Deliver events with seq > afterSeq. */
  readonly afterSeq: number;
  readonly signal?: AbortSignal;
  /** Stop once the task's turn has ended (terminal or interrupted) and everything up to it was delivered. */
  readonly untilTurnEnds: boolean;
  /** With `untilTurnEnds`: stop only at a terminal state (a plain SubscribeToTask outlives input-required). */
  readonly onlyTerminal?: boolean;
  /** The task was just created here: its first events without a read (see `CommittedStart`). */
  readonly created?: CommittedStart;
}

const PAGE = 500;

/**
 * Yields stored events in seq order, in batches (what one read or one commit brought; never empty):
 * first what the store already has after `afterSeq`, then live ones. The hub listener is attached
 * before the first read, so nothing committed in between is missed; rows are deduplicated by seq, so
 * nothing is delivered twice.
 */
export async function* followTask(o: FollowOptions): AsyncGenerator<readonly EventRow[], void, undefined> {
  let cursor = o.afterSeq;
  let buffered: EventRow[] = [];
  let needRead = true;
  let endedAt: number | undefined;
  let wake: (() => void) | undefined;
  const ends = o.onlyTerminal ? isTerminal : endsTurn;
  const unsubscribe = o.hub.subscribe(o.agent, o.taskId, (n) => {
    if (n) {
      for (const r of n.rows) if (r.seq > cursor) buffered.push(r);
      endedAt = ends(n.state) ? n.lastSeq : undefined;
    } else {
      needRead = true;
    }
    wake?.();
  });
  /** `o.signal.aborted`, kept here: it is asked several times per event, and its getter is not free. */
  let aborted = o.signal?.aborted ?? false;
  const onAbort = (): void => {
    aborted = true;
    wake?.();
  };
  o.signal?.addEventListener('abort', onAbort);
  /** The contiguous run of `rows` right after the cursor (which it advances). */
  const next = (rows: readonly EventRow[]): EventRow[] => {
    const out: EventRow[] = [];
    for (const r of rows) {
      if (r.seq <= cursor) continue;
      if (r.seq !== cursor + 1) break;
      cursor = r.seq;
      out.push(r);
    }
    return out;
  };
  try {
    if (o.created) {
      // Subscribed above, so every commit from here on reaches `buffered`; one made before (the
      // writer's seq is already past these rows) sends this follower to the store as usual.
      const run = next(o.created.rows);
      if (run.length && o.created.publishedSeq() === cursor) {
        needRead = false;
        endedAt = ends(o.created.state) ? cursor : undefined;
      }
      if (run.length) yield run;
    }
    while (!aborted) {
      if (needRead) {
        needRead = false;
        for (;;) {
          const rows = await o.store.readEvents(o.agent, o.taskId, cursor, PAGE);
          const run = next(rows);
          if (run.length) {
            yield run;
            if (aborted) return;
          }
          if (rows.length < PAGE || run.length < rows.length) break;
        }
        buffered = buffered.filter((r) => r.seq > cursor);
        const row = await o.store.getTask(o.agent, o.taskId);
        if (!row) return;
        if (row.lastSeq > cursor) {
          if (row.compacted) {
            // Retention dropped the events after the cursor: the final snapshot stands for them, said so.
            yield [compactedSnapshot(row)];
            return;
          }
          needRead = true;
          continue;
        }
        if (o.untilTurnEnds && ends(row.state)) return;
      }
      if (buffered.length) {
        const batch = buffered;
        buffered = [];
        const run = next(batch);
        // Rows left beyond a gap (e.g. events committed by another instance): the store fills it.
        if (batch.some((r) => r.seq > cursor)) needRead = true;
        if (run.length) yield run;
        continue;
      }
      if (o.untilTurnEnds && endedAt !== undefined && cursor >= endedAt) return;
      await new Promise<void>((resolve) => {
        wake = resolve;
        if (buffered.length || needRead || aborted) resolve();
      });
      wake = undefined;
    }
  } finally {
    unsubscribe();
    o.signal?.removeEventListener('abort', onAbort);
  }
}

/**
 * A compacted task as one `task` event at its last seq, marked `baton/compacted`: what a replay from
 * a cursor before it gets instead of the events retention no longer keeps.
 */
export function compactedSnapshot(row: TaskRow): EventRow {
  const task = JSON.parse(row.snapshot) as Json;
  task.metadata = { ...(isRecord(task.metadata) ? task.metadata : {}), [META.compacted]: true };
  return { seq: row.lastSeq, body: JSON.stringify({ task }) };
}

/** Parses a stored row back into the SDK's in-memory form. */
export function rowToResponse(row: EventRow): StreamResponse {
  return StreamResponse.fromJSON(JSON.parse(bodyText(row.body)));
}

/** Batches of rows as a replay-profile client gets them: each body with its `baton/seq`. */
export async function* withSeqs(
  batches: AsyncGenerator<readonly EventRow[], void, undefined>,
): AsyncGenerator<readonly EventRow[], void, undefined> {
  try {
    for await (const rows of batches) yield rows.map((r) => ({ seq: r.seq, body: withSeq(r.body, r.seq) }));
  } finally {
    await batches.return();
  }
}
