/**
 * What Linux's /proc says about a process: whether a pid still names the process we started (its
 * start time) and where it runs (its cwd). Used so that a reused pid is never killed (docs/architecture.md "Headless workspace").
 * Other platforms have no /proc: there only whether a pid exists is known.
 */
import { readFileSync, readlinkSync } from 'node:fs';
import { sep } from 'node:path';

/** The process's start time in clock ticks since boot (field 22 of /proc/<pid>/stat), or undefined when it is gone. */
export function processStartTime(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) is in parentheses and may itself contain spaces and parentheses.
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return rest[19];
  } catch {
    return undefined;
  }
}

/**
 * Whether the process is still there. Without /proc (macOS, Windows) its start time cannot be
 * compared, so a pid that names any process counts as alive: a reused pid keeps a workspace longer,
 * it never gets a live one removed.
 */
export function isAlive(pid: number, startTime?: string, platform: NodeJS.Platform = process.platform): boolean {
  if (platform !== 'linux') return exists(pid);
  const now = processStartTime(pid);
  if (now === undefined) return false;
  return startTime === undefined || now === startTime;
}

export type CwdCheck = 'inside' | 'outside' | 'gone' | 'unknown';

/** Whether /proc/<pid>/cwd is `dir` or below it; 'unknown' when it cannot be read (e.g. another user's process). */
export function cwdInside(pid: number, dir: string, platform: NodeJS.Platform = process.platform): CwdCheck {
  // Elsewhere where a process runs cannot be read: a live worker is never stopped by a sweep.
  if (platform !== 'linux') return exists(pid) ? 'unknown' : 'gone';
  let cwd: string;
  try {
    cwd = readlinkSync(`/proc/${pid}/cwd`);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    return code === 'ENOENT' || code === 'ESRCH' ? 'gone' : 'unknown';
  }
  // A deleted cwd reads as "<path> (deleted)": still the workspace the worker was started in.
  const clean = cwd.endsWith(' (deleted)') ? cwd.slice(0, -' (deleted)'.length) : cwd;
  return clean === dir || clean.startsWith(dir + sep) ? 'inside' : 'outside';
}

export function selfStartTime(): string | undefined {
  return processStartTime(process.pid);
}

function exists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    // EPERM: it exists, it belongs to someone else.
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}
