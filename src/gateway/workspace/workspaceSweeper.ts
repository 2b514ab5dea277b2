/**
 * The gateway's sweeps of its local agents' workspaces: once at start (after the tasks a dead
 * process left running are recorded as "unknown outcome"), every `intervalMs` after that (an unref'd
 * timer), and at a clean stop, when this process's own leftovers go too. A workspace is kept while
 * its task is unfinished in the store and owned by this instance or another live one (with
 * PostgreSQL, instances on other hosts sharing the state folder count).
 */
import type { GatewayStore } from '../store/gatewayStore';
import { isInstanceAlive } from '../instanceLiveness';
import type { SweepReport, WorkspaceManager } from './workspaceManager';

/** How often a running gateway sweeps. */
export const WORKSPACE_SWEEP_MS = 10 * 60_000;

export interface WorkspaceSweeperOptions {
  readonly managers: readonly WorkspaceManager[];
  readonly store: GatewayStore;
  readonly instanceId: string;
  readonly log: (line: string) => void;
  readonly intervalMs?: number;
}

export class WorkspaceSweeper {
  private timer: NodeJS.Timeout | undefined;
  private current: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(private readonly opts: WorkspaceSweeperOptions) {}

  /** The first sweep (awaited), then the periodic ones. */
  async start(): Promise<void> {
    if (!this.opts.managers.length) return;
    await this.sweep(false);
    if (this.closed) return;
    this.timer = setInterval(() => void this.sweep(false), this.opts.intervalMs ?? WORKSPACE_SWEEP_MS);
    this.timer.unref();
  }

  /** Stops the timer and sweeps once more, this process's finished workspaces included. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.timer);
    if (this.opts.managers.length) await this.sweep(true);
  }

  /** Stops the timer without a last sweep (a start that failed). */
  stop(): void {
    this.closed = true;
    clearInterval(this.timer);
  }

  private sweep(own: boolean): Promise<void> {
    // One at a time: a slow removal is never raced by the next tick.
    this.current = this.current.then(async () => {
      for (const manager of this.opts.managers) {
        try {
          report(await manager.sweep({ running: () => this.running(), own }), this.opts.log);
        } catch (e) {
          this.opts.log(`workspace sweep of ${manager.root} failed: ${(e as Error).message}`);
        }
      }
    });
    return this.current;
  }

  /** Tasks unfinished in the store whose instance is this one or still alive. */
  private async running(): Promise<ReadonlySet<string>> {
    const [rows, instances] = await Promise.all([this.opts.store.listOwnedUnfinished(), this.opts.store.instances()]);
    const now = Date.now();
    const ids = new Set<string>();
    for (const row of rows)
      if (row.owner === this.opts.instanceId || (row.owner && isInstanceAlive(instances.get(row.owner), now)))
        ids.add(row.id);
    return ids;
  }
}

function report(r: SweepReport, log: (line: string) => void): void {
  for (const dir of r.removed) log(`removed the workspace ${dir}: its task is no longer running`);
  if (r.killed.length) log(`stopped ${r.killed.length} leftover worker process(es): ${r.killed.join(', ')}`);
  for (const dir of r.left) log(`left the workspace ${dir}: a process in it could not be checked`);
}
