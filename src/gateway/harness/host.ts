/**
 * The one seam for what differs between operating systems when Baton finds and starts a coding CLI:
 * the platform, its environment, its path rules and the few file checks lookup needs. Tests pass a
 * Windows host (path.win32 and a fake file system) to check Windows behaviour on any machine.
 */
import { accessSync, constants, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import type { PlatformPath } from 'node:path';

export interface Host {
  readonly platform: NodeJS.Platform;
  readonly env: NodeJS.ProcessEnv;
  readonly path: PlatformPath;
  /** A regular file this user may execute (on Windows, any regular file: the extension decides). */
  isExecutableFile(p: string): boolean;
  /** The text of a small file (a launcher script), or undefined when it cannot be read. */
  readText(p: string): string | undefined;
}

export function isWindows(host: Pick<Host, 'platform'>): boolean {
  return host.platform === 'win32';
}

/** This machine. */
export function nodeHost(env: NodeJS.ProcessEnv = process.env): Host {
  const platform = process.platform;
  return {
    platform,
    env,
    path: platform === 'win32' ? path.win32 : path.posix,
    isExecutableFile: (p) => {
      try {
        if (!statSync(p).isFile()) return false;
        if (platform !== 'win32') accessSync(p, constants.X_OK);
        return true;
      } catch {
        return false;
      }
    },
    readText: (p) => {
      try {
        return readFileSync(p, 'utf8');
      } catch {
        return undefined;
      }
    },
  };
}
