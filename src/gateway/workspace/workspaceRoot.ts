/**
 * Where the throwaway copies live, per platform. On Windows, never under the gateway's state folder:
 * the extension's is VS Code's globalStorage (`%APPDATA%\Code\User\globalStorage\<extension>\gateway`),
 * which leaves ~140 of MAX_PATH's 260 characters for the repository's own paths and sits in the
 * Roaming profile, which Windows copies to every machine the user signs in to. `%LOCALAPPDATA%\baton\ws`
 * is short and local. (Longer paths still work where the user's git has `core.longpaths`, which Baton's
 * git carries over.) Elsewhere the copies stay where they were: `<state>/ws`, or `~/.baton/ws`.
 */
import { homedir } from 'node:os';
import * as nodePath from 'node:path';
import type { PlatformPath } from 'node:path';

/** What the choice depends on; tests pass `path.win32` or `path.posix` with a platform and env of their own. */
export interface PlatformSeam {
  readonly platform: NodeJS.Platform;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly path: PlatformPath;
  readonly home: string;
}

function thisPlatform(): PlatformSeam {
  return { platform: process.platform, env: process.env, path: nodePath, home: homedir() };
}

/** The workspace root for a gateway with this state folder (none: a WorkspaceManager on its own). */
export function defaultWorkspaceRoot(stateDir?: string, seam: PlatformSeam = thisPlatform()): string {
  const { path, env } = seam;
  if (seam.platform === 'win32') {
    const local = env.LOCALAPPDATA && path.isAbsolute(env.LOCALAPPDATA) ? env.LOCALAPPDATA : undefined;
    return path.join(local ?? path.join(seam.home, 'AppData', 'Local'), 'baton', 'ws');
  }
  return stateDir ? path.join(stateDir, 'ws') : path.join(seam.home, '.baton', 'ws');
}
