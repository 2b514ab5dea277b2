/**
 * Confinement for agent processes with bubblewrap (Debian `bubblewrap`), where it is installed and
 * usable: the whole filesystem read-only, the workspace the only writable place (plus a private
 * HOME and /tmp), the real HOME and other workspaces hidden, and no network unless the harness
 * needs its model API. Where bwrap is missing or cannot create namespaces, and on macOS and Windows
 * (no bubblewrap there), the run is unconfined and the 'started' event says so, what that means and,
 * on Linux, what to do about it (docs/security.md "Workspaces and agent processes": a throwaway clone
 * is not a sandbox, and Baton says so).
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
  /** Default process.platform: only Linux has bubblewrap. */
  readonly platform?: NodeJS.Platform;
}

/** Why bwrap cannot be used; `missing` when it is not installed at all (installing it helps). */
export type BwrapStatus = { ok: true; path: string } | { ok: false; reason: string; missing?: boolean };

let probe: Promise<BwrapStatus> | undefined;

/** Whether bwrap is installed and can create the namespaces we use (probed once per process). */
export function bwrapStatus(bwrapPath?: string): Promise<BwrapStatus> {
  if (bwrapPath !== undefined) return probeBwrap(bwrapPath);
  probe ??= (async () => {
    const found = findOnPath('bwrap');
    if (!found) return { ok: false as const, reason: 'bubblewrap (bwrap) is not installed', missing: true };
    return probeBwrap(found);
  })();
  return probe;
}

function probeBwrap(path: string): Promise<BwrapStatus> {
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
      { timeout: 10_000, windowsHide: true },
      (err, _out, stderr) => {
        if (err && err.code === 'ENOENT')
          resolve({ ok: false, reason: `bubblewrap (bwrap) is not installed at ${path}`, missing: true });
        else if (err)
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
  const platform = opts.platform ?? process.platform;
  if (platform !== 'linux') return { command, args, confined: false, detail: unconfinedElsewhere(platform) };
  const status = await bwrapStatus(opts.bwrapPath);
  if (!status.ok) return { command, args, confined: false, detail: unconfinedOnLinux(status) };
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
  const detail = `Confined with bubblewrap: filesystem read-only except the workspace, a private HOME and /tmp; your HOME and other tasks' workspaces hidden; ${req.network ? "network allowed for the agent's model API" : 'no network'}.`;
  return { command: status.path, args: [...b, command, ...args], confined: true, detail };
}

const USER_RIGHTS =
  'The agent runs with your user rights: it can read and change any file you can, run programs and use the network; only its working folder is a throwaway copy and its HOME a private folder.';

function unconfinedOnLinux(status: { reason: string; missing?: boolean }): string {
  const fix = status.missing
    ? 'To confine it, install bubblewrap (sudo apt-get install bubblewrap on Debian and Ubuntu, sudo dnf install bubblewrap on Fedora) and restart the gateway.'
    : 'To confine it, let bubblewrap create user namespaces (Ubuntu 24.04 restricts them with AppArmor; many containers forbid them) and restart the gateway.';
  return `Unconfined: ${status.reason}. ${USER_RIGHTS} ${fix}`;
}

/** Baton has no sandbox for macOS or Windows: say so, and what is still kept apart. */
function unconfinedElsewhere(platform: NodeJS.Platform): string {
  const name = platform === 'darwin' ? 'macOS' : platform === 'win32' ? 'Windows' : platform;
  const home =
    platform === 'win32'
      ? ' On Windows HOME, USERPROFILE, APPDATA and LOCALAPPDATA point at that private folder, which keeps well-behaved programs out of your profile but stops nothing.'
      : '';
  return `Unconfined: Baton confines agents only on Linux (with bubblewrap); there is no sandbox on ${name}. ${USER_RIGHTS}${home}`;
}
