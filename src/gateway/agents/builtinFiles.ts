/**
 * Which files a built-in agent works on, and safe reads and writes of them: only regular files
 * inside the workspace (a symlink or `..` can never make a built-in agent read or write elsewhere).
 * The scope itself (the files sent as context, else what the task names, else every file of tree A
 * the agent supports) is decided by `resolveScope` in scope.ts.
 */
import { lstat, readFile, realpath, writeFile } from 'node:fs/promises';
import { join, sep } from 'node:path';
import { runGit } from '../../node/git';
import type { Workspace } from '../workspace/workspaceManager';
import type { LocalRunEvent } from './localAgent';
import type { ScopeSource } from './scope';
import { describeScope, resolveScope } from './scope';

export const MAX_BUILTIN_FILE_BYTES = 2 * 1024 * 1024;

export interface TargetFiles {
  readonly files: readonly string[];
  /** Named files that were not worked on, with why. */
  readonly skipped: readonly string[];
  /** The run's first step: which scope was chosen and why ("Scope: src/ (named in the task): 4 files"). */
  readonly scope: string;
  readonly source: ScopeSource;
  /** Steps to show besides the skipped files: names that match nothing, names the context overrode. */
  readonly notes: readonly string[];
  /** Set when there is nothing to work on: the run fails with this reason. */
  readonly failure?: string;
}

export interface TargetOptions {
  /** The files and folders (`src/`) sent as context. */
  readonly requested: readonly string[];
  /** The task text: when no files were sent, the paths and globs it names are the scope. */
  readonly task?: string;
  /** Absolute paths that mean the repository (e.g. the caller's folder), for absolute paths in the task. */
  readonly roots?: readonly string[];
  supports(path: string): boolean;
  /** An ignore file in the workspace (gitignore syntax), e.g. `.prettierignore`. */
  readonly ignoreFile?: string;
}

export async function targetFiles(ws: Workspace, opts: TargetOptions): Promise<TargetFiles> {
  const all = ws.kind === 'clone' ? await treeFiles(ws) : [];
  const ignored = await ignoredOf(ws, all, opts.ignoreFile);
  const scope = resolveScope({
    task: opts.task ?? '',
    context: opts.requested,
    files: all,
    supports: opts.supports,
    ignored,
    roots: [...(opts.roots ?? []), ws.dir],
  });
  const skipped = [...scope.skipped];
  const files: string[] = [];
  const root = await realpath(ws.dir);
  for (const p of scope.files) {
    const why = await unsafeReason(root, p);
    // A symlink found while listing the whole repository is left out quietly; one the user chose is said.
    if (why) {
      if (scope.source !== 'repository') skipped.push(`${p} (${why})`);
    } else files.push(p);
  }
  let failure = scope.failure;
  if (!failure && !files.length && scope.source !== 'repository') {
    failure = `Nothing to work on in ${scope.label}: ${skipped.join('; ')}.`;
  }
  return {
    files,
    skipped,
    scope: describeScope(scope, files.length),
    source: scope.source,
    notes: scope.notes,
    failure,
  };
}

/** Says the scope first, then what was left out of it and why. */
export function announceScope(target: TargetFiles, emit: (e: LocalRunEvent) => void): void {
  emit({ kind: 'step', text: target.scope });
  for (const note of target.notes) emit({ kind: 'step', text: note });
  for (const s of target.skipped) emit({ kind: 'step', text: `Skipped ${s}` });
}

/** Every path of tree A (the copy as the agent found it), symlinks included: they are refused on disk. */
async function treeFiles(ws: Workspace): Promise<string[]> {
  const out = await runGit(['ls-tree', '-r', '-z', '--name-only', ws.treeA], {
    cwd: ws.privateDir,
    env: { GIT_DIR: ws.gitDir },
  });
  return out.stdout.toString('utf8').split('\0').filter(Boolean);
}

async function unsafeReason(root: string, rel: string): Promise<string | undefined> {
  const abs = join(root, rel);
  const st = await lstat(abs).catch(() => undefined);
  if (!st) return 'not found';
  if (st.isSymbolicLink()) return 'a symbolic link';
  if (!st.isFile()) return 'not a regular file';
  if (st.size > MAX_BUILTIN_FILE_BYTES) return `larger than ${MAX_BUILTIN_FILE_BYTES >> 20} MiB`;
  const real = await realpath(abs);
  if (!real.startsWith(root + sep)) return 'outside the repository';
  return undefined;
}

/** The paths matched by .gitignore files or by `ignoreFile` (git's own matcher, so gitignore syntax is exact). */
async function ignoredOf(ws: Workspace, paths: readonly string[], ignoreFile?: string): Promise<Set<string>> {
  if (!paths.length) return new Set();
  const args = ignoreFile ? ['-c', `core.excludesFile=${join(ws.dir, ignoreFile)}`] : [];
  const out = await runGit([...args, 'check-ignore', '--no-index', '-z', '--stdin'], {
    cwd: ws.dir,
    env: { GIT_DIR: ws.gitDir, GIT_WORK_TREE: ws.dir },
    input: paths.join('\0') + '\0',
    okCodes: [1],
  });
  return new Set(out.stdout.toString('utf8').split('\0').filter(Boolean));
}

export async function readWorkspaceFile(ws: Workspace, rel: string): Promise<string> {
  return readFile(join(ws.dir, rel), 'utf8');
}

export async function writeWorkspaceFile(ws: Workspace, rel: string, text: string): Promise<void> {
  // Checked again right before writing: the file must still be a regular file inside the folder.
  const root = await realpath(ws.dir);
  const why = await unsafeReason(root, rel);
  if (why) throw new Error(`${rel}: ${why}`);
  await writeFile(join(ws.dir, rel), text);
}

/** Whether the run should stop (deadline or cancel), and how to say so. */
export function interrupted(deadline: number, signal: AbortSignal): 'canceled' | 'expired' | undefined {
  if (signal.aborted) return 'canceled';
  if (Date.now() >= deadline) return 'expired';
  return undefined;
}
