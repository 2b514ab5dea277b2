/**
 * When another gateway instance counts as alive, decided the same way everywhere (orphan recovery on
 * start, and whether a cancel is forwarded to the instance that runs the task): a heartbeat newer than
 * `STALE_MS`, and, on this host, a process that still exists.
 */
import { hostname } from 'node:os';

/** How often an instance records that it is alive. */
export const HEARTBEAT_MS = 5_000;
/** Another instance whose heartbeat is older than this is dead; its running tasks are orphans. */
export const STALE_MS = 30_000;

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
export function isInstanceAlive(inst: InstanceBeat | undefined, now: number = Date.now()): boolean {
  if (!inst || now - inst.heartbeatAt > STALE_MS) return false;
  return inst.host !== hostname() || pidAlive(inst.pid);
}
