/**
 * Idempotency claims whose release the store refused (it was unavailable: PostgreSQL restarting,
 * stopped or unreachable). A claim is released when a first message or a follow-up came to nothing
 * (the remote refused it, it was answered directly, no task could be stored), so that sending it
 * again runs it. A release that fails would otherwise leave a claim that this live instance holds
 * and nobody resolves: every resend of that messageId would wait on it and be refused, until the
 * instance stopped. Here the release is tried again in the background until the store takes it, and
 * at once when the same request comes back (`releaseNow`), which claims again only after it.
 */
import { StoreUnavailableError } from './store/gatewayStore';
import type { GatewayStore } from './store/gatewayStore';

/** The first retry's wait, doubled each time up to `MAX_RETRY_MS`. */
const FIRST_RETRY_MS = 500;
const MAX_RETRY_MS = 30_000;

interface Pending {
  readonly principal: string;
  readonly agent: string;
  readonly key: string;
  /** The try under way; released requests are no longer in the map. */
  attempt: Promise<boolean> | undefined;
  waitMs: number;
  timer: NodeJS.Timeout | undefined;
}

export class ClaimReleases {
  private readonly pending = new Map<string, Pending>();
  private closed = false;

  constructor(
    private readonly store: Pick<GatewayStore, 'releaseRequest'>,
    private readonly log: (line: string) => void,
  ) {}

  /** How many releases wait for the store (for tests and the log). */
  get waiting(): number {
    return this.pending.size;
  }

  /**
   * Releases a claim; never throws. When the store refuses, the release is kept and tried again
   * (and the log says so once per claim, and once when it went through).
   */
  async release(principal: string, agent: string, key: string): Promise<void> {
    const id = idOf(principal, agent, key);
    const known = this.pending.get(id);
    if (known) {
      await this.releaseNow(principal, agent, key);
      return;
    }
    try {
      await this.store.releaseRequest(principal, agent, key);
    } catch (e) {
      if (this.closed) return;
      const p: Pending = { principal, agent, key, attempt: undefined, waitMs: FIRST_RETRY_MS, timer: undefined };
      this.pending.set(id, p);
      this.log(
        `could not release the claim of messageId ${messageIdOf(key)} on ${agent} (${(e as Error).message}); trying again until the store answers, so that sending it again runs it`,
      );
      this.schedule(id, p);
    }
  }

  /**
   * Before a request is claimed (or looked up as already taken): when an earlier send of it left a
   * claim whose release waits for the store, that release goes first, so the request runs instead of
   * finding its own failed send's claim. Throws `StoreUnavailableError` (503, Retry-After) while the
   * store still refuses.
   */
  async settle(principal: string, agent: string, key: string): Promise<void> {
    if (!this.pending.has(idOf(principal, agent, key))) return;
    if (!(await this.releaseNow(principal, agent, key)))
      throw new StoreUnavailableError(`an earlier send of messageId ${messageIdOf(key)} is still to be released in it`);
  }

  /**
   * Tries a waiting release now (or waits for the try under way). True once the claim is released:
   * the caller may claim the request again. False while the store still refuses.
   */
  releaseNow(principal: string, agent: string, key: string): Promise<boolean> {
    const id = idOf(principal, agent, key);
    const p = this.pending.get(id);
    if (!p) return Promise.resolve(true);
    return this.attempt(id, p);
  }

  close(): void {
    this.closed = true;
    for (const p of this.pending.values()) clearTimeout(p.timer);
    this.pending.clear();
  }

  private attempt(id: string, p: Pending): Promise<boolean> {
    if (p.attempt) return p.attempt;
    clearTimeout(p.timer);
    p.timer = undefined;
    p.attempt = this.store.releaseRequest(p.principal, p.agent, p.key).then(
      () => {
        this.pending.delete(id);
        this.log(`released the claim of messageId ${messageIdOf(p.key)} on ${p.agent} now that the store answers`);
        return true;
      },
      () => {
        p.attempt = undefined;
        if (!this.closed && this.pending.get(id) === p) this.schedule(id, p);
        return false;
      },
    );
    return p.attempt;
  }

  private schedule(id: string, p: Pending): void {
    if (p.timer || this.closed) return;
    const wait = p.waitMs;
    p.waitMs = Math.min(MAX_RETRY_MS, p.waitMs * 2);
    p.timer = setTimeout(() => {
      p.timer = undefined;
      void this.attempt(id, p);
    }, wait);
    p.timer.unref();
  }
}

function idOf(principal: string, agent: string, key: string): string {
  return JSON.stringify([principal, agent, key]);
}

/** The messageId of an idempotency key (`<messageId>#<digest>`; a follow-up's key is its messageId). */
function messageIdOf(key: string): string {
  return key.replace(/^task:[^/]*\//, '').replace(/#[^#]*$/, '');
}
