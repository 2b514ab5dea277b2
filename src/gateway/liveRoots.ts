/**
 * The folders a gateway serves, changed at run time: every window of the editor that shares the local
 * gateway adds its folders when it attaches and removes them when it closes. A folder two windows (or
 * a window and the command line) both asked for is counted twice and served until both let go of it.
 * Each is kept with its symlinks resolved, as the repository check compares real paths.
 */
import { realpathSync } from 'node:fs';

export class LiveRoots {
  private readonly counts = new Map<string, number>();

  constructor(initial: readonly string[]) {
    this.add(initial);
  }

  /** The folders served now, each once. */
  get list(): readonly string[] {
    return [...this.counts.keys()];
  }

  /** Adds folders (all or none: a folder that does not exist refuses the whole call). */
  add(paths: readonly string[]): void {
    for (const r of realRoots(paths)) this.counts.set(r, (this.counts.get(r) ?? 0) + 1);
  }

  /** Lets go of folders once each; a folder no longer asked for is no longer served. */
  remove(paths: readonly string[]): void {
    for (const p of paths) {
      const r = this.counts.has(p) ? p : realOrSelf(p);
      const n = this.counts.get(r);
      if (n === undefined) continue;
      if (n > 1) this.counts.set(r, n - 1);
      else this.counts.delete(r);
    }
  }
}

/** The folders requests may name repositories in, with symlinks resolved. */
export function realRoots(roots: readonly string[]): string[] {
  return roots.map((r) => {
    try {
      return realpathSync(r);
    } catch {
      throw new Error(`root ${r} does not exist; create it or remove it from --root / "roots"`);
    }
  });
}

/** A folder removed from disk since it was added is let go of by the real path it had, or as given. */
function realOrSelf(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return p;
  }
}
