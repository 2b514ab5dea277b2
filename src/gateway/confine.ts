/**
 * Confinement for agent processes with bubblewrap (Debian `bubblewrap`), where it is installed and
 * usable: the whole filesystem read-only, the workspace the only writable place (plus a private
 * HOME and /tmp), the real HOME and other workspaces hidden, and no network unless the harness
 * needs its model API. Where bwrap is missing or cannot create namespaces, the run is unconfined
 * and the 'started' event says so (docs/security.md "Workspaces and agent processes": a throwaway clone is not a sandbox, and Baton says so).
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';

export interface ConfineRequest {
  /** The program and its arguments. */
  readonly argv: readonly string[];
  /** The agent's folder: the only writable place besides `home` and a private /tmp. */
  readonly workspace: string;
  /** The agent's private HOME (outside the workspace). */
  readonly home: string;
  /** Allow the network (a CLI that talks to its model API). */
  readonly network: boolean;
  /** Folders the agent may read even though they are hidden otherwise (e.g. the caller's git objects). */
  readonly readOnly?: readonly string[];
  /** Folders that stay hidden (e.g. the workspace root with other tasks' folders). */
  readonly hide?: readonly string[];
  /** Paths under the real HOME bound read-write into the private HOME (a CLI's login state). */
  readonly homeEntries?: readonly string[];
  /** The real HOME to hide (default os.homedir()). */
  readonly realHome?: string;
}

export interface ConfinedCommand {
  readonly command: string;
  readonly args: readonly string[];
  readonly confined: boolean;
  /** For the 'started' event: how the process runs, in words. */
  readonly detail: string;
}

export interface ConfineOptions {
  /** 'off' runs unconfined (said so in the detail); default 'auto'. */
  readonly mode?: 'auto' | 'off';
  /** bwrap to use (default: found on PATH). */
  readonly bwrapPath?: string;
}

let probe: Promise<{ ok: true; path: string } | { ok: false; reason: string }> | undefined;

/** Whether bwrap is installed and can create the namespaces we use (probed once per process). */
export function bwrapStatus(bwrapPath?: string): Promise<{ ok: true; path: string } | { ok: false; reason: string }> {
  if (bwrapPath !== undefined) return probeBwrap(bwrapPath);
  probe ??= (async () => {
    const found = findOnPath('bwrap');
    if (!found) return { ok: false as const, reason: 'bubblewrap (bwrap) is not installed' };
    return probeBwrap(found);
  })();
  return probe;
}

function probeBwrap(path: string): Promise<{ ok: true; path: string } | { ok: false; reason: string }> {
  return new Promise((resolve) => {
    execFile(
      path,
      [
        '--die-with-parent',
        '--unshare-pid',
        '--unshare-net',
        '--ro-bind',
        '/',
        '/',
        '--dev',
        '/dev',
        '--proc',
        '/proc',
        '--tmpfs',
        '/tmp',
        'true',
      ],
      { timeout: 10_000 },
      (err, _out, stderr) => {
        if (err)
          resolve({
            ok: false,
            reason: `bubblewrap cannot create a sandbox here: ${String(stderr).trim() || err.message}`,
          });
        else resolve({ ok: true, path });
      },
    );
  });
}

export function findOnPath(name: string, pathVar = process.env.PATH ?? ''): string | undefined {
  for (const dir of pathVar.split(delimiter)) {
    if (!dir) continue;
    const p = join(dir, name);
    if (existsSync(p)) return p;
  }
  return undefined;
}

/** Wraps argv in bwrap when possible; otherwise returns it as is with an honest detail line. */
export async function confineCommand(req: ConfineRequest, opts: ConfineOptions = {}): Promise<ConfinedCommand> {
  const [command, ...args] = req.argv;
  if (opts.mode === 'off')
    return {
      command,
      args,
      confined: false,
      detail:
        'Unconfined: confinement is turned off. The agent runs with your user rights; only its working folder is a throwaway copy.',
    };
  const status = await bwrapStatus(opts.bwrapPath);
  if (!status.ok)
    return {
      command,
      args,
      confined: false,
      detail: `Unconfined: ${status.reason}. The agent runs with your user rights; only its working folder is a throwaway copy (apt-get install bubblewrap to confine it).`,
    };
  const realHome = req.realHome ?? homedir();
  const b: string[] = ['--die-with-parent', '--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try'];
  if (!req.network) b.push('--unshare-net');
  b.push('--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--tmpfs', '/tmp');
  if (realHome && realHome !== '/' && existsSync(realHome)) b.push('--tmpfs', realHome);
  for (const h of req.hide ?? []) if (existsSync(h)) b.push('--tmpfs', h);
  for (const r of req.readOnly ?? []) if (existsSync(r)) b.push('--ro-bind', r, r);
  b.push('--bind', req.home, req.home);
  for (const e of req.homeEntries ?? []) {
    const src = join(realHome, e);
    if (existsSync(src)) b.push('--bind', src, join(req.home, e));
  }
  b.push('--bind', req.workspace, req.workspace, '--chdir', req.workspace, '--');
  const detail = `Confined with bubblewrap: filesystem read-only except the workspace, a private HOME and /tmp; ${req.network ? "network allowed for the agent's model API" : 'no network'}.`;
  return { command: status.path, args: [...b, command, ...args], confined: true, detail };
}
