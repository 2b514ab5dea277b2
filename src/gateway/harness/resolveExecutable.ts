/**
 * Finding a CLI's executable the way the platform's own shell would, without running one. On POSIX a
 * name is looked up as is. On Windows it is looked up with each PATHEXT extension in PATHEXT order
 * (case-insensitively), folder by folder; the extension-less file npm installs beside its `.cmd`
 * shim is a POSIX sh script Windows cannot start, so it never counts as found.
 */
import type { Host } from './host';
import { isWindows } from './host';

/** What Baton can start on Windows: programs directly, batch scripts through agents/launch.ts. */
const STARTABLE = new Set(['.exe', '.com', '.cmd', '.bat']);
/** Windows' own default, for an environment without PATHEXT. */
const DEFAULT_PATHEXT = '.COM;.EXE;.BAT;.CMD';

/** A variable by name; Windows environment names are case-insensitive (`Path` is PATH). */
export function envValue(env: NodeJS.ProcessEnv, name: string, windows: boolean): string | undefined {
  if (env[name] !== undefined || !windows) return env[name];
  const key = Object.keys(env).find((k) => k.toUpperCase() === name.toUpperCase());
  return key === undefined ? undefined : env[key];
}

/** PATHEXT extensions Baton can start, lower-cased, in PATHEXT order (others, like .JS or .VBS, are skipped). */
export function pathExtensions(host: Host): string[] {
  const raw = envValue(host.env, 'PATHEXT', true) || DEFAULT_PATHEXT;
  const exts = raw.split(';').map((e) => e.trim().toLowerCase());
  return [...new Set(exts.filter((e) => STARTABLE.has(e)))];
}

/** The absolute folders of a PATH value (relative entries would depend on the gateway's cwd). */
export function searchDirs(host: Host, pathVar?: string): string[] {
  const windows = isWindows(host);
  const raw = pathVar ?? envValue(host.env, 'PATH', windows) ?? '';
  return raw
    .split(host.path.delimiter)
    .map((d) => (windows ? d.trim().replace(/^"(.*)"$/, '$1') : d))
    .filter((d) => d !== '' && host.path.isAbsolute(d));
}

/** The files a path may name: itself on POSIX; on Windows itself if it ends in a PATHEXT extension, else it with each. */
function candidates(file: string, host: Host): string[] {
  if (!isWindows(host)) return [file];
  const exts = pathExtensions(host);
  if (exts.includes(host.path.extname(file).toLowerCase())) return [file];
  return exts.map((e) => file + e);
}

/** The first executable for `name` on PATH, or undefined. */
export function findExecutable(name: string, host: Host, pathVar?: string): string | undefined {
  for (const dir of searchDirs(host, pathVar))
    for (const p of candidates(host.path.join(dir, name), host)) if (host.isExecutableFile(p)) return p;
  return undefined;
}

/**
 * A configured executable (`baton.cliPaths`), resolved like a PATH entry: on Windows
 * `C:\npm\claude` finds `C:\npm\claude.cmd`. Undefined when it is relative or nothing startable is there.
 */
export function resolveConfigured(file: string, host: Host): string | undefined {
  if (!host.path.isAbsolute(file)) return undefined;
  return candidates(file, host).find((p) => host.isExecutableFile(p));
}
