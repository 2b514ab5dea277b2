/** Real git repositories in temp folders for the workspace, harness and agent tests. */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

export const GIT_ENV = {
  ...process.env,
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_AUTHOR_NAME: 'Test',
  GIT_AUTHOR_EMAIL: 'test@example.invalid',
  GIT_COMMITTER_NAME: 'Test',
  GIT_COMMITTER_EMAIL: 'test@example.invalid',
  GIT_AUTHOR_DATE: '2024-01-01T00:00:00Z',
  GIT_COMMITTER_DATE: '2024-01-01T00:00:00Z',
};

/** Runs git in a test repository (unhardened on purpose: tests set up hostile repositories). */
export function sh(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, env: GIT_ENV, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

/** Like sh but returns exit status and output instead of throwing. */
export function shTry(cwd: string, ...args: string[]): { code: number; out: string } {
  try {
    return { code: 0, out: sh(cwd, ...args) };
  } catch (e) {
    const err = e as { status?: number; stdout?: string; stderr?: string };
    return { code: err.status ?? 1, out: `${err.stdout ?? ''}${err.stderr ?? ''}` };
  }
}

export interface TempSpace {
  readonly base: string;
  /** Workspace root for the manager (never the real ~/.baton). */
  readonly root: string;
  /** A HOME-like folder for the run. */
  readonly home: string;
  dispose(): void;
}

export function tempSpace(prefix = 'baton-ws-'): TempSpace {
  const base = mkdtempSync(join(tmpdir(), prefix));
  const root = join(base, 'home', '.baton', 'ws');
  const home = join(base, 'home');
  mkdirSync(root, { recursive: true });
  return { base, root, home, dispose: () => rmSync(base, { recursive: true, force: true, maxRetries: 3 }) };
}

export function write(dir: string, rel: string, content: string | Buffer): void {
  const p = join(dir, rel);
  mkdirSync(dirname(p), { recursive: true });
  writeFileSync(p, content);
}

/** A repository with one commit of `files`. */
export function makeRepo(parent: string, name: string, files: Record<string, string>): string {
  const dir = join(parent, name);
  mkdirSync(dir, { recursive: true });
  sh(dir, 'init', '-q', '-b', 'main');
  for (const [rel, content] of Object.entries(files)) write(dir, rel, content);
  sh(dir, 'add', '-A');
  sh(dir, 'commit', '-q', '-m', 'initial');
  return dir;
}

/**
 * Everything that could change in a repository: every file under it (the .git folder included)
 * hashed with its mode, plus refs, stash and config as git lists them.
 */
export function fingerprint(dir: string): string {
  const h = createHash('sha256');
  const walk = (rel: string): void => {
    const abs = join(dir, rel);
    for (const name of readdirSync(abs).sort()) {
      const r = rel ? `${rel}/${name}` : name;
      const st = lstatSync(join(dir, r));
      if (st.isSymbolicLink()) h.update(`L ${r} ${readlinkSync(join(dir, r))}\n`);
      else if (st.isDirectory()) {
        h.update(`D ${r}\n`);
        walk(r);
      } else
        h.update(
          `F ${r} ${st.mode} ${createHash('sha256')
            .update(readFileSync(join(dir, r)))
            .digest('hex')}\n`,
        );
    }
  };
  walk('');
  h.update(shTry(dir, 'for-each-ref').out);
  h.update(shTry(dir, 'stash', 'list').out);
  h.update(shTry(dir, 'config', '--local', '--list').out);
  return h.digest('hex');
}

/** `git apply --check` of a patch on a repository's working tree; returns git's message on failure. */
export function applyCheck(repo: string, patch: string): { ok: boolean; message: string } {
  try {
    execFileSync('git', ['apply', '--check', '-'], {
      cwd: repo,
      env: GIT_ENV,
      input: patch,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    return { ok: true, message: '' };
  } catch (e) {
    return { ok: false, message: String((e as { stderr?: Buffer }).stderr ?? e) };
  }
}

/** Applies a patch to a throwaway copy of `repo` and returns the copy (for checking the result). */
export function applyToCopy(repo: string, patch: string, into: string): string {
  execFileSync('cp', ['-a', repo, into]);
  execFileSync('git', ['apply', '-'], { cwd: into, env: GIT_ENV, input: patch, stdio: ['pipe', 'pipe', 'pipe'] });
  return into;
}
