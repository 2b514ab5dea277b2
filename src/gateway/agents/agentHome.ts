/**
 * The private HOME an agent process gets: its environment (only what a CLI needs, HOME pointing at
 * the private folder) and the CLI's login state from the real HOME. On Windows programs find the
 * home through USERPROFILE, APPDATA and LOCALAPPDATA rather than HOME, so those point into the
 * private folder too; and a link to a file needs Developer Mode there, so folders are joined with a
 * junction (no rights needed) and files are copied, and the run's steps say so.
 */
import { constants } from 'node:fs';
import { copyFile, mkdir, stat, symlink } from 'node:fs/promises';
import type { Host } from '../harness/host';
import { isWindows } from '../harness/host';
import { envValue } from '../harness/resolveExecutable';

/** What Windows itself and Node need to start at all (without SystemRoot, networking fails). */
const WINDOWS_SYSTEM_VARS = [
  'SystemRoot',
  'windir',
  'SystemDrive',
  'ComSpec',
  'PATHEXT',
  'NUMBER_OF_PROCESSORS',
  'PROCESSOR_ARCHITECTURE',
  'ProgramFiles',
  'ProgramFiles(x86)',
  'ProgramData',
];

export interface AgentHomeDirs {
  readonly home: string;
  readonly tmp: string;
}

/** The environment of an agent process, before the harness's passthrough variables. */
export function agentEnv(source: NodeJS.ProcessEnv, dirs: AgentHomeDirs, host: Host): NodeJS.ProcessEnv {
  if (!isWindows(host))
    return {
      PATH: source.PATH ?? '/usr/bin:/bin',
      HOME: dirs.home,
      TMPDIR: dirs.tmp,
      LANG: source.LANG ?? 'C.UTF-8',
      TERM: 'dumb',
      NO_COLOR: '1',
      CI: '1',
    };
  const { path } = host;
  const env: NodeJS.ProcessEnv = {};
  for (const k of WINDOWS_SYSTEM_VARS) {
    const v = envValue(source, k, true);
    if (v !== undefined) env[k] = v;
  }
  const drive = path.parse(dirs.home).root.replace(/\\$/, '');
  Object.assign(env, {
    PATH: envValue(source, 'PATH', true) ?? '',
    HOME: dirs.home,
    USERPROFILE: dirs.home,
    APPDATA: path.join(dirs.home, 'AppData', 'Roaming'),
    LOCALAPPDATA: path.join(dirs.home, 'AppData', 'Local'),
    HOMEDRIVE: drive,
    HOMEPATH: dirs.home.slice(drive.length) || '\\',
    TEMP: dirs.tmp,
    TMP: dirs.tmp,
    TMPDIR: dirs.tmp,
    TERM: 'dumb',
    NO_COLOR: '1',
    CI: '1',
  });
  return env;
}

/** The file operations bringing login state in uses (tests record them). */
export interface HomeFs {
  /** 'dir', 'file', or undefined when missing. */
  kind(p: string): Promise<'dir' | 'file' | undefined>;
  mkdir(p: string): Promise<void>;
  symlink(target: string, p: string, type: 'junction' | undefined): Promise<void>;
  copyFile(from: string, to: string): Promise<void>;
}

export const nodeHomeFs: HomeFs = {
  kind: async (p) => {
    const s = await stat(p).catch(() => undefined);
    return s === undefined ? undefined : s.isDirectory() ? 'dir' : 'file';
  },
  mkdir: async (p) => {
    await mkdir(p, { recursive: true });
  },
  symlink: (target, p, type) => symlink(target, p, type),
  copyFile: (from, to) => copyFile(from, to, constants.COPYFILE_EXCL),
};

/**
 * Makes the private home usable on this platform and brings the CLI's login entries into it (for an
 * unconfined run; bubblewrap binds them itself). Returns steps for the run: what was copied rather
 * than linked, and what could not be brought in.
 */
export async function prepareAgentHome(
  home: string,
  realHome: string,
  entries: readonly string[],
  host: Host,
  fs: HomeFs = nodeHomeFs,
): Promise<string[]> {
  const { path } = host;
  const windows = isWindows(host);
  const notes: string[] = [];
  if (windows) {
    await fs.mkdir(path.join(home, 'AppData', 'Roaming'));
    await fs.mkdir(path.join(home, 'AppData', 'Local'));
  }
  const copied: string[] = [];
  for (const e of entries) {
    const src = path.join(realHome, e);
    const dst = path.join(home, e);
    const kind = await fs.kind(src);
    if (kind === undefined) continue;
    try {
      await fs.mkdir(path.dirname(dst));
      if (windows && kind === 'file') {
        await fs.copyFile(src, dst);
        copied.push(e);
      } else await fs.symlink(src, dst, windows ? 'junction' : undefined);
    } catch (err) {
      notes.push(
        `Could not bring ${src} into the agent's private home (${(err as Error).message}); the CLI may not find its login: set its API key variable for the gateway, or sign in again.`,
      );
    }
  }
  if (copied.length)
    notes.push(
      `Copied ${copied.join(', ')} into the agent's private home (Windows links files only in Developer Mode): changes the CLI makes to ${copied.length > 1 ? 'them' : 'it'}, such as a refreshed login, are not kept.`,
    );
  return notes;
}
