/**
 * Turns for local runs kept in the database, one line per principal for every instance of the
 * gateway (PostgreSQL). Behind a balancer a member's tasks land on any instance; with a line per
 * instance (`RunQueue`) three instances would let three times the limit run. Here each waiting task
 * has a row in `baton_turns`, numbered in the order it joined, and it runs once fewer than `limit`
 * unfinished tasks of the line are ahead of it. Rows of tasks that have ended, and of instances that
 * are gone (no heartbeat within the take-over time, or a process on this host that no longer exists),
 * do not count, so a crash never holds a member's line.
 *
 * A task leaving the line is announced (NOTIFY with the line's `turnKey`), and every instance looks
 * at its waiters of that line again; the line is also looked at every heartbeat, which is how an
 * instance that died is noticed, and when notifications may have been missed.
 */
import type { Liveness } from './instanceLiveness';
import { isInstanceAlive } from './instanceLiveness';
import type { TurnHolder, Turns } from './runQueue';
import { abortReason } from './runQueue';
import type { GatewayStore, TurnRow } from './store/gatewayStore';
import { StoreUnavailableError, turnKey } from './store/gatewayStore';

export type TurnStore = Required<Pick<GatewayStore, 'queueTurn' | 'turnsOf' | 'dropTurn' | 'onTurnsMoved'>> &
  Pick<GatewayStore, 'onMissedAppends'>;

/** Whether `store` keeps turns for several instances. */
export function hasSharedTurns(store: GatewayStore): store is GatewayStore & TurnStore {
  return (
    typeof store.queueTurn === 'function' &&
    typeof store.turnsOf === 'function' &&
    typeof store.dropTurn === 'function' &&
    typeof store.onTurnsMoved === 'function'
  );
}

/** How many of `rows` before `seq` hold or wait for a turn: those of live instances (this one is). */
export function aheadOf(
  rows: readonly TurnRow[],
  seq: number,
  self: string,
  staleMs: number,
  now: number = Date.now(),
): number {
  let n = 0;
  for (const r of rows) if (r.seq < seq && (r.instance === self || isInstanceAlive(r.beat, now, staleMs))) n++;
  return n;
}

/** The waiters of one line on this instance. */
interface Line {
  waiters: number;
  /** How many times the line moved: a waiter that saw it move while it read looks again at once. */
  moves: number;
  readonly sleepers: Set<() => void>;
}

export class SharedTurns implements Turns {
  /** The lines this instance has waiters in, by `turnKey`. */
  private readonly lines = new Map<string, Line>();

  constructor(
    private max: number,
    private readonly store: TurnStore,
    private readonly instance: string,
    private readonly liveness: Liveness,
    private readonly log: (line: string) => void,
  ) {
    store.onTurnsMoved((key) => this.wake(key));
    store.onMissedAppends?.(() => {
      for (const key of [...this.lines.keys()]) this.wake(key);
    });
  }

  get limit(): number {
    return this.max;
  }

  /** Every waiter here looks at its line again with the new limit (the other instances take theirs). */
  setLimit(limit: number): void {
    this.max = limit;
    for (const key of [...this.lines.keys()]) this.wake(key);
  }

  /** Only an answer from the database can say whether a turn is free (another instance may hold it). */
  tryTake(): (() => void) | undefined {
    return this.limit > 0 ? undefined : () => undefined;
  }

  async wait(holder: TurnHolder, signal: AbortSignal, onPlace?: (place: number) => void): Promise<() => void> {
    if (this.limit <= 0) return () => undefined;
    if (signal.aborted) throw abortReason(signal);
    const key = turnKey(holder.principal);
    const line = this.lines.get(key) ?? { waiters: 0, moves: 0, sleepers: new Set<() => void>() };
    this.lines.set(key, line);
    line.waiters++;
    try {
      return await this.waitIn(line, holder, signal, onPlace);
    } finally {
      if (--line.waiters === 0 && this.lines.get(key) === line) this.lines.delete(key);
    }
  }

  private async waitIn(
    line: Line,
    { principal, agent, taskId }: TurnHolder,
    signal: AbortSignal,
    onPlace?: (place: number) => void,
  ): Promise<() => void> {
    const seq = await this.join(line, { principal, agent, taskId }, signal);
    const drop = (): void => {
      this.store
        .dropTurn(principal, seq, agent, taskId)
        .catch((e: unknown) =>
          this.log(
            `task ${taskId}: cannot take it out of its line for turns (${(e as Error).message}); it stops counting once the task has ended`,
          ),
        );
    };
    let place = 0;
    let failing = false;
    try {
      for (;;) {
        if (signal.aborted) throw abortReason(signal);
        const seen = line.moves;
        let ahead: number | undefined;
        try {
          ahead = aheadOf(await this.store.turnsOf(principal), seq, this.instance, this.liveness.staleMs);
          failing = false;
        } catch (e) {
          if (!failing)
            this.log(
              `task ${taskId}: cannot read its line for turns (${(e as Error).message}); it keeps waiting and reads it again`,
            );
          failing = true;
        }
        if (ahead !== undefined && (this.limit <= 0 || ahead < this.limit)) break;
        if (ahead !== undefined && ahead - this.limit + 1 !== place) {
          place = ahead - this.limit + 1;
          onPlace?.(place);
        }
        if (line.moves === seen) await this.sleep(line, signal);
      }
    } catch (e) {
      drop();
      throw e;
    }
    let given = false;
    return () => {
      if (given) return;
      given = true;
      drop();
    };
  }

  /**
   * Puts the task in its line; while the database cannot take it (an outage), tries again at each
   * heartbeat or when the line moves, until it can or `signal` fires (the task then never started).
   */
  private async join(line: Line, { principal, agent, taskId }: TurnHolder, signal: AbortSignal): Promise<number> {
    for (let said = false; ; said = true) {
      if (signal.aborted) throw abortReason(signal);
      try {
        return await this.store.queueTurn(principal, agent, taskId, this.instance);
      } catch (e) {
        if (!(e instanceof StoreUnavailableError)) throw e;
        if (!said)
          this.log(`task ${taskId}: cannot join its line for turns yet (${e.message}); it waits and tries again`);
        await this.sleep(line, signal);
      }
    }
  }

  private wake(key: string): void {
    const line = this.lines.get(key);
    if (!line) return;
    line.moves++;
    const sleepers = [...line.sleepers];
    line.sleepers.clear();
    for (const wake of sleepers) wake();
  }

  /** Until the line moves, a heartbeat passes (an instance may have died), or `signal` fires. */
  private sleep(line: Line, signal: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      const wake = (): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', wake);
        line.sleepers.delete(wake);
        resolve();
      };
      // Not unref'd: a task waiting for its turn is work in progress (a shutdown aborts it).
      const timer = setTimeout(wake, this.liveness.heartbeatMs);
      signal.addEventListener('abort', wake, { once: true });
      line.sleepers.add(wake);
    });
  }
}
