/**
 * Which files a built-in agent works on, and safe reads and writes of them: only regular files
 * inside the workspace (a symlink or `..` can never make a built-in agent read or write elsewhere),
 * the requested ones or, when none are named, every file of tree A the agent supports.
 */
import { lstat, readFile, realpath, writeFile } from 'node:fs/promises';
import { join, posix, sep } from 'node:path';
import { runGit } from '../../node/git';
import type { Workspace } from '../workspace/workspaceManager';

export const MAX_BUILTIN_FILE_BYTES = 2 * 1024 * 1024;
/** Folders built-in agents never touch when no files are named (generated or vendored code). */
const SKIP_DIRS = /(^|\/)(node_modules|dist|build|out|coverage|vendor|\.next|\.nuxt|\.cache)\//;

export interface TargetFiles {
  readonly files: readonly string[];
  /** Named files that were not worked on, with why. */
  readonly skipped: readonly string[];
}

export interface TargetOptions {
  readonly requested: readonly string[];
  supports(path: string): boolean;
  /** An ignore file in the workspace (gitignore syntax), e.g. `.prettierignore`. */
  readonly ignoreFile?: string;
}

export async function targetFiles(ws: Workspace, opts: TargetOptions): Promise<TargetFiles> {
  const skipped: string[] = [];
  let candidates: string[];
  if (opts.requested.length) {
    candidates = [];
    for (const raw of opts.requested) {
      const p = normalize(raw);
      if (!p) skipped.push(`${raw} (not a path inside the repository)`);
      else if (!opts.supports(p)) skipped.push(`${raw} (not a supported file type)`);
      else candidates.push(p);
    }
  } else if (ws.kind === 'clone') {
    const out = await runGit(['ls-tree', '-r', '-z', '--name-only', ws.treeA], { cwd: ws.privateDir, env: { GIT_DIR: ws.gitDir } });
    candidates = out.stdout.toString('utf8').split('\0').filter((p) => p && !SKIP_DIRS.test(p) && opts.supports(p));
    candidates = await withoutIgnored(ws, candidates, opts.ignoreFile);
  } else {
    candidates = [];
  }
  const files: string[] = [];
  const root = await realpath(ws.dir);
  for (const p of candidates) {
    const why = await unsafeReason(root, p);
    if (why) {
      if (opts.requested.length) skipped.push(`${p} (${why})`);
    } else files.push(p);
  }
  return { files, skipped };
}

function normalize(raw: string): string | undefined {
  const p = posix.normalize(raw.replace(/\\/g, '/')).replace(/^\.\//, '');
  if (!p || p.startsWith('/') || p === '..' || p.startsWith('../') || /^[A-Za-z]:/.test(p)) return undefined;
  if (p.split('/').some((s) => s.toLowerCase() === '.git')) return undefined;
  return p;
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

/** Drops paths matched by .gitignore files or by `ignoreFile` (git's own matcher, so gitignore syntax is exact). */
async function withoutIgnored(ws: Workspace, paths: string[], ignoreFile?: string): Promise<string[]> {
  if (!paths.length) return paths;
  const args = ignoreFile ? ['-c', `core.excludesFile=${join(ws.dir, ignoreFile)}`] : [];
  const out = await runGit([...args, 'check-ignore', '--no-index', '-z', '--stdin'], {
    cwd: ws.dir,
    env: { GIT_DIR: ws.gitDir, GIT_WORK_TREE: ws.dir },
    input: paths.join('\0') + '\0',
    okCodes: [1],
  });
  const ignored = new Set(out.stdout.toString('utf8').split('\0').filter(Boolean));
  return paths.filter((p) => !ignored.has(p));
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
