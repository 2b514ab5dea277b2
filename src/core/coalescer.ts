/**
 * Host-side update coalescer for a webview panel: however fast events arrive, the
 * panel gets at most one post per interval (default ~60/s) carrying the latest snapshot. While the
 * panel is hidden nothing is posted (a hidden webview drops `postMessage`); the latest snapshot is
 * produced and posted when it is shown again.
 *
 * Snapshots are produced lazily: `invalidate()` only marks the state dirty, and `produce()` runs once
 * per post, so 10,000 events a second cost 60 view-model builds, not 10,000. Pure: the clock and timer
 * are injected.
 */

export interface CoalescerClock {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export interface UpdateCoalescerOptions<T> {
  /** Builds the current snapshot; called only when a post is about to happen. */
  readonly produce: () => T;
  /** Delivers a snapshot to the panel. */
  readonly post: (snapshot: T) => void;
  readonly clock: CoalescerClock;
  /** Minimum ms between posts. Default 1000/60. */
  readonly minIntervalMs?: number;
  /** Whether the panel starts visible. Default true. */
  readonly visible?: boolean;
}

export class UpdateCoalescer<T> {
  private readonly produce: () => T;
  private readonly postFn: (snapshot: T) => void;
  private readonly clock: CoalescerClock;
  private readonly interval: number;
  private visible: boolean;
  private dirty = false;
  private lastPostAt = Number.NEGATIVE_INFINITY;
  private timer: unknown = undefined;
  private disposed = false;
  private _posts = 0;

  constructor(options: UpdateCoalescerOptions<T>) {
    this.produce = options.produce;
    this.postFn = options.post;
    this.clock = options.clock;
    this.interval = options.minIntervalMs ?? 1000 / 60;
    this.visible = options.visible ?? true;
  }

  /** Posts made so far. */
  get posts(): number {
    return this._posts;
  }

  get isVisible(): boolean {
    return this.visible;
  }

  /** Something changed: post the latest snapshot now if the interval allows, else at the end of it. */
  invalidate(): void {
    if (this.disposed) return;
    this.dirty = true;
    if (!this.visible || this.timer !== undefined) return;
    this.schedule();
  }

  /** Posts now if a full interval has passed since the last post, else arms the timer for the rest of it. */
  private schedule(): void {
    const wait = this.lastPostAt + this.interval - this.clock.now();
    if (wait <= 0) this.post();
    // Timers round down to whole ms; round up so two posts are never closer than the interval.
    else this.timer = this.clock.setTimeout(() => this.onTimer(), Math.ceil(wait));
  }

  /**
   * The panel became visible or hidden. On becoming visible the latest snapshot is posted (replayed)
   * straight away, dirty or not, because the webview may have dropped posts or been recreated.
   */
  setVisible(visible: boolean): void {
    if (this.disposed || visible === this.visible) return;
    this.visible = visible;
    if (!visible) {
      this.cancelTimer();
      return;
    }
    this.replay();
  }

  /** Posts the latest snapshot now (e.g. when the webview says `ready`), if visible. */
  replay(): void {
    if (this.disposed || !this.visible) return;
    this.cancelTimer();
    this.dirty = true;
    this.post();
  }

  /** Posts pending changes now instead of waiting for the interval (e.g. when a delegation settles). */
  flush(): void {
    if (this.disposed || !this.visible || !this.dirty) return;
    this.cancelTimer();
    this.post();
  }

  dispose(): void {
    this.disposed = true;
    this.cancelTimer();
  }

  private onTimer(): void {
    this.timer = undefined;
    if (this.dirty && this.visible && !this.disposed) this.schedule();
  }

  private post(): void {
    this.dirty = false;
    this.lastPostAt = this.clock.now();
    this._posts++;
    this.postFn(this.produce());
  }

  private cancelTimer(): void {
    if (this.timer !== undefined) {
      this.clock.clearTimeout(this.timer);
      this.timer = undefined;
    }
  }
}
