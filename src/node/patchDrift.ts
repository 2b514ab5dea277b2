/**
 * Drift: whether the user's tree moved between the start of a delegation (when the agent got its copy)
 * and the review of its patch. At delegation start Baton records `captureWorkingState` (HEAD, a digest
 * of the uncommitted state, and each uncommitted file's digest, META.baseCommit /
 * META.uncommittedDigest); at review `detectDrift` says which files under the patch changed since.
 */
import { createHash } from 'node:crypto';
import type { RepositoryContext } from '../core/delegation/context';
import { runGit } from './git';
import { lfsObjectsInPlace } from './lfsPointer';
import { currentDigest } from './patchSnapshot';

export interface WorkingState {
  /** HEAD's commit id, undefined in a repository without commits. */
  readonly baseCommit: string | undefined;
  /** `sha256:…` over every path that differs from HEAD (staged, unstaged or untracked) and its current digest. */
  readonly uncommittedDigest: string;
  /** Each such path's digest (null when deleted in the working tree). */
  readonly files: Readonly<Record<string, string | null>>;
}

export interface DriftReport {
  readonly headMoved: boolean;
  readonly baseCommit: string | undefined;
  readonly head: string | undefined;
  readonly uncommittedChanged: boolean;
  /** Paths the patch touches that changed since the base (committed or not), sorted. */
  readonly changedFiles: readonly string[];
  /** True when the per-file digests at the base were not recorded, so `changedFiles` lists every uncommitted patch path. */
  readonly approximate: boolean;
}

const LITERAL = { GIT_LITERAL_PATHSPECS: '1' };

async function head(root: string): Promise<string | undefined> {
  const r = await runGit(['rev-parse', '--verify', '-q', 'HEAD^{commit}'], { cwd: root, okCodes: [1, 128] });
  return r.exitCode === 0 ? r.stdout.toString('utf8').trim() : undefined;
}

/** Paths that differ from HEAD in the index or working tree, or are untracked (not ignored). */
async function uncommittedPaths(root: string, paths?: readonly string[]): Promise<string[]> {
  const args = ['status', '--porcelain=v1', '-z', '--untracked-files=all', '--no-renames', '--ignore-submodules=all'];
  if (paths) args.push('--', ...paths);
  const out = (await runGit(args, { cwd: root, env: LITERAL, noFilterDrivers: true })).stdout.toString('utf8');
  const result: string[] = [];
  const worktreeOnly: string[] = [];
  for (const entry of out.split('\0'))
    if (entry.length > 3) {
      result.push(entry.slice(3));
      if (entry.startsWith(' M')) worktreeOnly.push(entry.slice(3));
    }
  const unchanged = await lfsObjectsAsStaged(root, worktreeOnly);
  return unchanged.size ? result.filter((p) => !unchanged.has(p)) : result;
}

/**
 * Of `paths` (modified in the working tree only), those whose index entry is a Git LFS pointer and whose
 * file is the object it names: unchanged, as git with git-lfs's clean filter would say (src/node/lfsPointer.ts).
 */
async function lfsObjectsAsStaged(root: string, paths: readonly string[]): Promise<Set<string>> {
  if (!paths.length) return new Set();
  // Many paths (every LFS file racily clean after a clone) would not fit on a command line: list the index.
  const wanted = new Set(paths);
  const args = paths.length > 500 ? ['ls-files', '-s', '-z'] : ['ls-files', '-s', '-z', '--', ...paths];
  const staged = (await runGit(args, { cwd: root, env: LITERAL })).stdout
    .toString('utf8')
    .split('\0')
    .flatMap((line) => {
      const tab = line.indexOf('\t');
      const [mode, blob] = line.slice(0, tab).split(' ');
      const path = line.slice(tab + 1);
      return tab > 0 && mode === '100644' && wanted.has(path) ? [{ blob, path }] : [];
    });
  return new Set((await lfsObjectsInPlace(staged, root, { cwd: root })).map((e) => e.path));
}

/** Records the state a delegation starts from (see module comment). */
export async function captureWorkingState(root: string): Promise<WorkingState> {
  const [baseCommit, paths] = await Promise.all([head(root), uncommittedPaths(root)]);
  const files: Record<string, string | null> = {};
  const h = createHash('sha256');
  for (const p of paths.sort()) {
    const d = currentDigest(root, p);
    files[p] = d;
    h.update(`${p}\0${d ?? 'deleted'}\n`);
  }
  return { baseCommit, uncommittedDigest: `sha256:${h.digest('hex')}`, files };
}

export interface DriftBase {
  readonly baseCommit?: string;
  readonly uncommittedDigest?: string;
  readonly files?: Readonly<Record<string, string | null>>;
}

/** Compares the current tree with the delegation's base, for the paths a patch touches. */
export async function detectDrift(root: string, base: DriftBase, patchPaths: readonly string[]): Promise<DriftReport> {
  const now = await captureWorkingState(root);
  const headMoved = base.baseCommit !== undefined && base.baseCommit !== now.baseCommit;
  const uncommittedChanged = base.uncommittedDigest !== undefined && base.uncommittedDigest !== now.uncommittedDigest;
  const wanted = new Set(patchPaths);
  const changed = new Set<string>();
  if (headMoved && patchPaths.length) {
    if (now.baseCommit === undefined) for (const p of patchPaths) changed.add(p);
    else {
      const r = await runGit(
        [
          'diff',
          '--no-ext-diff',
          '--no-textconv',
          '--no-renames',
          '--name-only',
          '-z',
          base.baseCommit ?? '',
          now.baseCommit,
        ],
        { cwd: root, okCodes: [128] },
      );
      if (r.exitCode === 128)
        for (const p of patchPaths) changed.add(p); // base commit unknown here: assume every path moved
      else for (const p of r.stdout.toString('utf8').split('\0')) if (wanted.has(p)) changed.add(p);
    }
  }
  let approximate = false;
  if (uncommittedChanged || (base.files && !headMoved)) {
    if (base.files) {
      for (const p of patchPaths) {
        const was = p in base.files ? base.files[p] : undefined;
        const is = p in now.files ? now.files[p] : undefined;
        if (was !== is) changed.add(p);
      }
    } else {
      approximate = true;
      for (const p of patchPaths) if (p in now.files) changed.add(p);
    }
  }
  return {
    headMoved,
    baseCommit: base.baseCommit,
    head: now.baseCommit,
    uncommittedChanged,
    changedFiles: [...changed].sort(),
    approximate,
  };
}

/** The repository's top level for a folder inside it, or undefined outside git (or without git). */
export async function repositoryTopLevel(folder: string): Promise<string | undefined> {
  try {
    // Fails (128) outside a work tree, including inside a .git folder.
    const r = await runGit(['rev-parse', '--show-toplevel'], { cwd: folder, okCodes: [128] });
    const top = r.stdout.toString('utf8').trim();
    return r.exitCode === 0 && top ? top : undefined;
  } catch {
    return undefined;
  }
}

/**
 * What a delegation started from `folder` says about its repository: the repository's top level with
 * its base commit and uncommitted digest (so review can tell drift), or the folder itself outside a
 * repository. `base` is the captured state, kept by the caller as the drift base.
 */
export async function delegationRepository(folder: string | undefined): Promise<{
  readonly root: string | undefined;
  readonly base: WorkingState | undefined;
  readonly repository: RepositoryContext | undefined;
}> {
  const root = folder ? await repositoryTopLevel(folder) : undefined;
  const base = root ? await captureWorkingState(root) : undefined;
  const repository =
    root && base
      ? { root, baseCommit: base.baseCommit ?? '', uncommittedDigest: base.uncommittedDigest }
      : folder
        ? { root: folder, baseCommit: '', uncommittedDigest: '' }
        : undefined;
  return { root, base, repository };
}
