/**
 * How many local runs (coding CLIs, built-in agents) one principal may have at once, and the line the
 * others wait in, first come first served (`limits.maxRunningTasksPerPrincipal`; none: no limit). A
 * team member who starts twenty tasks does not take the machine from the others: theirs start at
 * once, and the twenty run a few at a time.
 *
 * `RunQueue` keeps the line in memory, for a gateway that is one process (a SQLite state folder).
 * Instances sharing a PostgreSQL store keep one line for all of them (`SharedTurns`,
 * src/gateway/sharedTurns.ts), so a balancer spreading a member's tasks does not multiply the limit.
 */

/** The task asking for a turn, and whose it is. */
export interface TurnHolder {
  readonly principal: string;
  readonly agent: string;
  readonly taskId: string;
}

/** Turns for local runs: `RunQueue` (one process) or `SharedTurns` (instances on one PostgreSQL). */
export interface Turns {
  /** Runs at once per principal; 0 or less: no limit. */
  readonly limit: number;
  /**
   * Changes the limit (a reloaded config). Runs already going go on; when it rises (or goes), the
   * tasks waiting get the turns it frees, in the order they joined.
   */
  setLimit(limit: number): void;
  /** A turn now without waiting (with the function that gives it back), or undefined: ask `wait`. */
  tryTake(principal: string): (() => void) | undefined;
  /**
   * Waits in the holder's principal's line for a turn. `onPlace` hears the place in line (1: next)
   * when the task has to wait, and again whenever the line moves. Rejects with the signal's reason
   * when it is aborted meanwhile (a cancel, the deadline, a shutdown): the waiter leaves the line and
   * has run nothing.
   */
  wait(holder: TurnHolder, signal: AbortSignal, onPlace?: (place: number) => void): Promise<() => void>;
}

interface Waiter {
  readonly resolve: (release: () => void) => void;
  readonly reject: (e: unknown) => void;
  readonly onPlace?: (place: number) => void;
  detach(): void;
}

export class RunQueue implements Turns {
  private readonly running = new Map<string, number>();
  private readonly lines = new Map<string, Waiter[]>();

  /** `limit`: runs at once per principal; 0 or less: no limit. */
  constructor(private max: number) {}

  get limit(): number {
    return this.max;
  }

  setLimit(limit: number): void {
    this.max = limit;
    for (const principal of [...this.lines.keys()]) this.next(principal);
  }

  /** A slot for `principal` now (with the function that gives it back), or undefined when it must wait. */
  tryTake(principal: string): (() => void) | undefined {
    if (this.limit > 0 && ((this.running.get(principal) ?? 0) >= this.limit || this.lines.get(principal)?.length))
      return undefined;
    return this.hold(principal);
  }

  wait({ principal }: TurnHolder, signal: AbortSignal, onPlace?: (place: number) => void): Promise<() => void> {
    const now = this.tryTake(principal);
    if (now) return Promise.resolve(now);
    if (signal.aborted) return Promise.reject(abortReason(signal));
    return new Promise((resolve, reject) => {
      const line = this.lines.get(principal) ?? [];
      this.lines.set(principal, line);
      const onAbort = (): void => {
        const i = line.indexOf(waiter);
        if (i >= 0) line.splice(i, 1);
        if (!line.length) this.lines.delete(principal);
        reject(abortReason(signal));
        this.tell(line, i);
      };
      const waiter: Waiter = { resolve, reject, onPlace, detach: () => signal.removeEventListener('abort', onAbort) };
      signal.addEventListener('abort', onAbort, { once: true });
      line.push(waiter);
      onPlace?.(line.length);
    });
  }

  /** Runs of `principal` now holding a slot. */
  runningOf(principal: string): number {
    return this.running.get(principal) ?? 0;
  }

  private hold(principal: string): () => void {
    this.running.set(principal, (this.running.get(principal) ?? 0) + 1);
    let given = false;
    return () => {
      if (given) return;
      given = true;
      const left = (this.running.get(principal) ?? 1) - 1;
      if (left > 0) this.running.set(principal, left);
      else this.running.delete(principal);
      this.next(principal);
    };
  }

  /** Hands freed slots to the head of `principal`'s line. */
  private next(principal: string): void {
    const line = this.lines.get(principal);
    if (!line) return;
    let moved = false;
    while (line.length && (this.limit <= 0 || (this.running.get(principal) ?? 0) < this.limit)) {
      const w = line.shift();
      if (!w) break;
      w.detach();
      moved = true;
      w.resolve(this.hold(principal));
    }
    if (!line.length) this.lines.delete(principal);
    if (moved) this.tell(line, 0);
  }

  /** Tells the waiters from `from` on their new places. */
  private tell(line: readonly Waiter[], from: number): void {
    for (let i = Math.max(0, from); i < line.length; i++) line[i].onPlace?.(i + 1);
  }
}

export function abortReason(signal: AbortSignal): Error {
  const r: unknown = signal.reason;
  return r instanceof Error ? r : new Error('stopped while waiting for its turn');
}
