/**
 * When another gateway instance counts as alive, decided the same way everywhere (orphan recovery on
 * start, and whether a cancel is forwarded to the instance that runs the task): a heartbeat newer than
 * `staleMs` (`STALE_MS` unless the store's `takeOverAfterSeconds` says otherwise), and, on this host, a
 * process that still exists.
 */
import { hostname } from 'node:os';
import type { GatewayStore } from './store/gatewayStore';

/** How often an instance records that it is alive. */
export const HEARTBEAT_MS = 5_000;
/** Another instance whose heartbeat is older than this is dead; its running tasks are orphans. */
export const STALE_MS = 30_000;

/** How often instances record their heartbeat, and how old one may be before the instance is taken for dead. */
export interface Liveness {
  readonly heartbeatMs: number;
  readonly staleMs: number;
}

export const DEFAULT_LIVENESS: Liveness = { heartbeatMs: HEARTBEAT_MS, staleMs: STALE_MS };

/**
 * The liveness for a take-over time (`store.takeOverAfterSeconds`): heartbeats six times within it
 * (at most every `HEARTBEAT_MS`), so a few lost ones do not make a live instance look dead.
 */
export function livenessFor(takeOverAfterMs: number | undefined): Liveness {
  if (takeOverAfterMs === undefined) return DEFAULT_LIVENESS;
  return { staleMs: takeOverAfterMs, heartbeatMs: Math.min(HEARTBEAT_MS, Math.max(100, takeOverAfterMs / 6)) };
}

export interface InstanceBeat {
  readonly host: string;
  readonly pid: number;
  readonly heartbeatAt: number;
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** False for an instance with no heartbeat, a stale one, or (same host) a process that is gone. */
export function isInstanceAlive(
  inst: InstanceBeat | undefined,
  now: number = Date.now(),
  staleMs: number = STALE_MS,
): boolean {
  if (!inst || now - inst.heartbeatAt > staleMs) return false;
  return inst.host !== hostname() || pidAlive(inst.pid);
}

/** What the checks below read: the store's heartbeats and the gateway's take-over time. */
export interface LivenessContext {
  readonly store: Pick<GatewayStore, 'instances'>;
  readonly liveness: Liveness;
}

/** Whether `instance` is alive now, by the store's heartbeats and `ctx`'s take-over time. */
export async function instanceAlive(ctx: LivenessContext, instance: string): Promise<boolean> {
  return isInstanceAlive((await ctx.store.instances()).get(instance), Date.now(), ctx.liveness.staleMs);
}

/**
 * Whether the instance that made an idempotency claim is gone, so nobody will finish what it began. A
 * claim recorded before claims named their instance (null) counts as gone once older than the take-over
 * time: nobody can still be working on it then.
 */
export async function claimantGone(
  ctx: LivenessContext,
  claim: { readonly instance: string | null; readonly createdAt: number },
): Promise<boolean> {
  if (claim.instance === null) return Date.now() - claim.createdAt >= ctx.liveness.staleMs;
  return !(await instanceAlive(ctx, claim.instance));
}
