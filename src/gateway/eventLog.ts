/**
 * The replay profile's moving parts: a per-task writer that numbers events, folds them into the task
 * snapshot and commits them (grouped: everything queued in one tick is one transaction) before anyone
 * sees them, an in-process hub that wakes subscribers after each commit, and the subscriber loop that
 * replays from the store and then follows live events without losing or repeating one.
 */
import { StreamResponse, Task } from '@a2a-js/sdk';
import type { TaskState } from '@a2a-js/sdk';
import { META } from '../core/batonProfile';
import type { EventRow, GatewayStore } from './store/gatewayStore';
import { endsTurn } from './taskStates';

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
}

/** Puts `baton/seq` into the event's own metadata (the SDK client exposes no SSE ids). */
export function stampSeq(resp: StreamResponse, seq: number): void {
  const p = resp.payload;
  if (!p) return;
  const v = p.value;
  v.metadata = { ...(v.metadata ?? {}), [META.seq]: seq };
}

/** Applies one event to a task snapshot the way a client would see it (A2A §3.7: GetTask is the truth). */
export function foldEvent(task: Task, resp: StreamResponse): void {
  const p = resp.payload;
  if (!p) return;
  switch (p.$case) {
    case 'task': {
      const t = p.value;
      task.status = t.status;
      task.artifacts = t.artifacts;
      task.history = t.history;
      task.metadata = { ...(task.metadata ?? {}), ...(t.metadata ?? {}) };
      break;
    }
    case 'statusUpdate': {
      // Progress messages stay in the event log (replayable); the snapshot keeps the latest status
      // only, so it does not grow with every step an agent reports.
      const s = p.value.status;
      if (s) task.status = s;
      if (p.value.metadata) {
        const { [META.seq]: _seq, ...rest } = p.value.metadata as Record<string, unknown>;
        void _seq;
        task.metadata = { ...(task.metadata ?? {}), ...rest };
      }
      break;
    }
    case 'artifactUpdate': {
      const a = p.value.artifact;
      if (!a) break;
      const i = task.artifacts.findIndex((x) => x.artifactId === a.artifactId);
      if (i < 0) task.artifacts = [...task.artifacts, a];
      else if (p.value.append) task.artifacts[i] = { ...task.artifacts[i], parts: [...task.artifacts[i].parts, ...a.parts] };
      else task.artifacts[i] = a;
      break;
    }
    case 'message':
      task.history = [...task.history, p.value];
      break;
  }
}

function stateOf(task: Task): TaskState {
  return task.status?.state ?? 0;
}

/**
 * The single writer of one task's events in this process. `push` is synchronous (agents emit from
 * callbacks); commits are grouped per tick, and subscribers are woken only after the commit.
 */
export class TaskWriter {
  private queue: EventRow[] = [];
  private flushing: Promise<void> | undefined;
  private failed: Error | undefined;
  lastSeq: number;

  constructor(
    private readonly store: GatewayStore,
    private readonly hub: EventHub,
    readonly agent: string,
    readonly taskId: string,
    readonly task: Task,
    lastSeq: number,
  ) {
    this.lastSeq = lastSeq;
  }

  get state(): TaskState {
    return stateOf(this.task);
  }

  /** Resolves once everything pushed so far is committed. */
  async idle(): Promise<void> {
    while (this.flushing) await this.flushing;
    if (this.failed) throw this.failed;
  }

  /** Events queued but not yet committed (a relay slows down when this grows). */
  get backlog(): number {
    return this.queue.length;
  }

  /** Numbers, folds and queues one event; resolves when it is committed. */
  push(resp: StreamResponse): Promise<void> {
    if (this.failed) return Promise.reject(this.failed);
    const seq = ++this.lastSeq;
    stampSeq(resp, seq);
    foldEvent(this.task, resp);
    this.queue.push({ seq, body: JSON.stringify(StreamResponse.toJSON(resp)) });
    return this.schedule();
  }

  /** Ownership changes (null when the run ends) travel with the next commit. */
  private owner: string | null | undefined;
  setOwner(owner: string | null): void {
    this.owner = owner;
  }

  snapshotJson(): string {
    const t = Task.toJSON({ ...this.task, metadata: { ...(this.task.metadata ?? {}), [META.seq]: this.lastSeq } });
    return JSON.stringify(t);
  }

  private schedule(): Promise<void> {
    if (!this.flushing) {
      this.flushing = new Promise<void>((resolve) => setImmediate(resolve)).then(() => this.flush());
    }
    return this.flushing;
  }

  private async flush(): Promise<void> {
    const rows = this.queue;
    this.queue = [];
    const state = this.state;
    const owner = this.owner;
    this.owner = undefined;
    try {
      await this.store.append({ agent: this.agent, taskId: this.taskId, events: rows, state, snapshot: this.snapshotJson(), ...(owner !== undefined ? { owner } : {}) });
    } catch (e) {
      this.failed = e instanceof Error ? e : new Error(String(e));
      throw this.failed;
    } finally {
      this.flushing = undefined;
    }
    this.hub.publish(this.agent, this.taskId, { rows, lastSeq: rows[rows.length - 1]?.seq ?? this.lastSeq, state });
    if (this.queue.length) void this.schedule().catch(() => undefined);
  }
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
}

const PAGE = 500;

/**
 * Yields stored events in seq order: first what the store already has after `afterSeq`, then live ones.
 * The hub listener is attached before the first read, so nothing committed in between is missed; rows
 * are deduplicated by seq, so nothing is delivered twice.
 */
export async function* followTask(o: FollowOptions): AsyncGenerator<EventRow, void, undefined> {
  let cursor = o.afterSeq;
  let buffered: EventRow[] = [];
  let needRead = true;
  let endedAt: number | undefined;
  let wake: (() => void) | undefined;
  const unsubscribe = o.hub.subscribe(o.agent, o.taskId, (n) => {
    if (n) {
      for (const r of n.rows) if (r.seq > cursor) buffered.push(r);
      endedAt = endsTurn(n.state) ? n.lastSeq : undefined;
    } else {
      needRead = true;
    }
    wake?.();
  });
  const onAbort = (): void => wake?.();
  o.signal?.addEventListener('abort', onAbort);
  try {
    while (!o.signal?.aborted) {
      if (needRead) {
        needRead = false;
        for (;;) {
          const rows = await o.store.readEvents(o.agent, o.taskId, cursor, PAGE);
          for (const r of rows) {
            if (r.seq !== cursor + 1) break;
            cursor = r.seq;
            yield r;
            if (o.signal?.aborted) return;
          }
          if (rows.length < PAGE) break;
        }
        buffered = buffered.filter((r) => r.seq > cursor);
        const row = await o.store.getTask(o.agent, o.taskId);
        if (!row) return;
        if (row.lastSeq > cursor) {
          needRead = true;
          continue;
        }
        if (o.untilTurnEnds && endsTurn(row.state)) return;
      }
      while (buffered.length && buffered[0].seq <= cursor) buffered.shift();
      if (buffered.length && buffered[0].seq !== cursor + 1) {
        // A gap (e.g. events committed by another instance): the store fills it.
        needRead = true;
        continue;
      }
      if (buffered.length) {
        const batch = buffered;
        buffered = [];
        for (const r of batch) {
          if (r.seq !== cursor + 1) continue;
          cursor = r.seq;
          yield r;
        }
        continue;
      }
      if (o.untilTurnEnds && endedAt !== undefined && cursor >= endedAt) return;
      await new Promise<void>((resolve) => {
        wake = resolve;
        if (buffered.length || needRead || o.signal?.aborted) resolve();
      });
      wake = undefined;
    }
  } finally {
    unsubscribe();
    o.signal?.removeEventListener('abort', onAbort);
  }
}

/** Parses a stored row back into the SDK's in-memory form. */
export function rowToResponse(row: EventRow): StreamResponse {
  return StreamResponse.fromJSON(JSON.parse(row.body));
}
