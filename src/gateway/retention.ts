/**
 * The retention job (docs/gateway.md "Retention"): now and then, finished tasks past their replay
 * window lose their events (snapshot and signed envelope kept), finished tasks past the retention
 * time are deleted, and while the store is above its size cap the oldest finished tasks go first.
 * Unfinished tasks, and finished ones with an unfinished child, are never touched. The work is done
 * in small steps, so the store's other callers (appends of running tasks) get their turn in between;
 * on PostgreSQL one instance runs a step at a time.
 */
import type { RetentionConfig } from './config';
import type { GatewayStore, RetentionStep } from './store/gatewayStore';
import { STALE_MS } from './instanceLiveness';

export interface RetentionPolicy {
  /** Finished tasks are deleted this long after they ended; 0 keeps them (as long as the size cap allows). */
  readonly keepFinishedMs: number;
  /** Above this many bytes the oldest finished tasks are deleted; 0: no cap. */
  readonly maxStoreBytes: number;
  /** A finished task's events are compacted this long after it ended (0: at the next pass). */
  readonly replayWindowMs: number;
  /** How often a pass runs. */
  readonly intervalMs: number;
}

const HOUR_MS = 3_600_000;
const MIB = 1024 * 1024;

export const DEFAULT_RETENTION: RetentionPolicy = {
  keepFinishedMs: 168 * HOUR_MS,
  maxStoreBytes: 2048 * MIB,
  replayWindowMs: 60 * 60_000,
  intervalMs: 60_000,
};

/** The config file's `retention` section over the defaults. */
export function retentionFromConfig(c: RetentionConfig): RetentionPolicy {
  return {
    keepFinishedMs:
      c.finishedTaskHours !== undefined ? c.finishedTaskHours * HOUR_MS : DEFAULT_RETENTION.keepFinishedMs,
    maxStoreBytes: c.maxStoreMb !== undefined ? c.maxStoreMb * MIB : DEFAULT_RETENTION.maxStoreBytes,
    replayWindowMs:
      c.replayWindowMinutes !== undefined ? c.replayWindowMinutes * 60_000 : DEFAULT_RETENTION.replayWindowMs,
    intervalMs: c.intervalSeconds !== undefined ? c.intervalSeconds * 1000 : DEFAULT_RETENTION.intervalMs,
  };
}

/**
 * The size cap: deleting starts once the store holds more than this fraction of the cap (so it stays
 * under the cap while the next pass is awaited) and goes on down to `RETENTION_LOW_WATER` of it (so a
 * pass makes room for a while rather than one task's worth).
 */
export const RETENTION_HIGH_WATER = 0.9;
export const RETENTION_LOW_WATER = 0.8;

/** Tasks compacted, and tasks deleted, per store call. */
export const RETENTION_STEP_TASKS = 50;
/** A pass stops after this many steps; the next pass goes on. */
const MAX_STEPS_PER_PASS = 200;
/** An instance whose heartbeat is older than this (and that owns no unfinished task) loses its row. */
export const INSTANCE_FORGET_MS = 10 * STALE_MS;

export interface RetentionPassResult {
  readonly compacted: number;
  readonly deleted: number;
  readonly instancesPruned: number;
  readonly sizeBytes: number;
  /** Another instance was running retention (PostgreSQL); this pass did nothing to tasks. */
  readonly busy: boolean;
}

/** One retention pass over the store, as `policy` says; stops early once `signal` fires. */
export async function retentionPass(
  store: GatewayStore,
  policy: RetentionPolicy,
  signal?: AbortSignal,
  now: number = Date.now(),
): Promise<RetentionPassResult> {
  let compacted = 0;
  let deleted = 0;
  let busy = false;
  const cap = policy.maxStoreBytes;
  let step: RetentionStep = {
    compactBefore: now - policy.replayWindowMs,
    ...(policy.keepFinishedMs > 0 ? { deleteBefore: now - policy.keepFinishedMs } : {}),
    ...(cap > 0 ? { maxBytes: cap * RETENTION_HIGH_WATER, downToBytes: cap * RETENTION_LOW_WATER } : {}),
    limit: RETENTION_STEP_TASKS,
  };
  for (let i = 0; i < MAX_STEPS_PER_PASS && !signal?.aborted; i++) {
    const out = await store.retain(step);
    // Once deleting for space, the pass goes on down to the low-water mark.
    if (out.deletedForSpace > 0 && cap > 0) step = { ...step, maxBytes: cap * RETENTION_LOW_WATER };
    compacted += out.compacted;
    deleted += out.deleted;
    if (out.busy) {
      busy = true;
      break;
    }
    if (!out.more) break;
    // The store's other callers first.
    await new Promise<void>((r) => setImmediate(r));
  }
  const instancesPruned = signal?.aborted ? 0 : await store.pruneInstances(now - INSTANCE_FORGET_MS);
  return { compacted, deleted, instancesPruned, sizeBytes: await store.size(), busy };
}

/** The log line after a pass. */
export function retentionLine(r: RetentionPassResult, policy: RetentionPolicy): string {
  const cap = policy.maxStoreBytes > 0 ? `cap ${mb(policy.maxStoreBytes)} MB` : 'no size cap';
  const what = r.busy
    ? 'another instance is running it'
    : `compacted ${r.compacted}, deleted ${r.deleted} finished task(s)` +
      (r.instancesPruned ? `, forgot ${r.instancesPruned} stopped instance(s)` : '');
  return `retention: ${what}; store ${mb(r.sizeBytes)} MB (${cap})`;
}

export function mb(bytes: number): string {
  return (bytes / MIB).toFixed(1);
}

/** A running retention job (`startRetention`). */
export interface RetentionJob {
  /** Takes a new policy (a config read again): a pass runs with it at once, then at its interval. */
  setPolicy(policy: RetentionPolicy): void;
  stop(): Promise<void>;
}

/**
 * Runs `retentionPass` every `policy.intervalMs`, never two at once. `stop()` waits for a pass in
 * progress to end (it stops at its next step), so the store can be closed after it.
 */
export function startRetention(
  store: GatewayStore,
  initial: RetentionPolicy,
  log: (line: string) => void,
  onPass?: (r: RetentionPassResult, at: number) => void,
): RetentionJob {
  const abort = new AbortController();
  let policy = initial;
  let running: Promise<void> | undefined;
  /** A new policy arrived while a pass ran: one more pass follows it. */
  let again = false;
  const tick = (): void => {
    if (running || abort.signal.aborted) return;
    running = retentionPass(store, policy, abort.signal)
      .then(
        (r) => {
          onPass?.(r, Date.now());
          if (!abort.signal.aborted) log(retentionLine(r, policy));
        },
        (e: unknown) => {
          if (!abort.signal.aborted)
            log(
              `retention pass failed (${(e as Error).message ?? String(e)}); it runs again in ${policy.intervalMs / 1000} s`,
            );
        },
      )
      .finally(() => {
        running = undefined;
        if (again) {
          again = false;
          tick();
        }
      });
  };
  let timer = setInterval(tick, policy.intervalMs);
  timer.unref();
  return {
    setPolicy(next: RetentionPolicy): void {
      if (!(next.intervalMs >= 1)) throw new Error('retention.intervalMs must be at least 1 ms');
      policy = next;
      if (abort.signal.aborted) return;
      clearInterval(timer);
      timer = setInterval(tick, policy.intervalMs);
      timer.unref();
      if (running) again = true;
      else tick();
    },
    async stop(): Promise<void> {
      abort.abort();
      clearInterval(timer);
      await running;
    },
  };
}

/** A policy in the config file's words, e.g. `cap 512.0 MB, finished tasks kept 24 h, events 60 min, every 60 s`. */
export function retentionWords(p: RetentionPolicy): string {
  return [
    p.maxStoreBytes > 0 ? `cap ${mb(p.maxStoreBytes)} MB` : 'no size cap',
    p.keepFinishedMs > 0 ? `finished tasks kept ${+(p.keepFinishedMs / HOUR_MS).toFixed(2)} h` : 'finished tasks kept',
    `events ${+(p.replayWindowMs / 60_000).toFixed(2)} min`,
    `every ${+(p.intervalMs / 1000).toFixed(2)} s`,
  ].join(', ');
}
