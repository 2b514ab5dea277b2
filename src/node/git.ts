/**
 * The one way Baton runs git. Every call is hardened, because an agent can write the `.git/config`
 * of a workspace and a cloned repository can carry hooks, fsmonitor commands and diff/filter
 * drivers: no system or global config, hooks and fsmonitor off, no external diff or textconv,
 * no pager, no prompts, no optional locks.
 */
import { execFile, spawn } from 'node:child_process';

export class GitError extends Error {
  constructor(
    message: string,
    readonly args: readonly string[],
    readonly exitCode: number | null,
    readonly stderr: string,
  ) {
    super(message);
    this.name = 'GitError';
  }
}

export interface GitOptions {
  readonly cwd: string;
  /** Bytes written to git's stdin. */
  readonly input?: string | Buffer;
  /** Extra environment (e.g. GIT_INDEX_FILE for a private index). */
  readonly env?: Readonly<Record<string, string>>;
  /** Exit codes that are not errors (e.g. 1 for `diff --quiet`). */
  readonly okCodes?: readonly number[];
  readonly maxBuffer?: number;
  readonly signal?: AbortSignal;
}

export interface GitResult {
  readonly stdout: Buffer;
  readonly stderr: string;
  readonly exitCode: number;
}

/** `-c` settings put before every git subcommand. */
export const HARDENING_CONFIG: readonly string[] = [
  'core.hooksPath=/dev/null',
  'core.fsmonitor=false',
  'core.untrackedCache=false',
  'core.pager=cat',
  'diff.external=',
  'protocol.ext.allow=never',
  'credential.helper=',
  'commit.gpgSign=false',
  'tag.gpgSign=false',
  'gc.auto=0',
  'maintenance.auto=false',
];

/** Environment every git call runs with, on top of the caller's PATH/HOME. */
export function hardenedEnv(extra?: Readonly<Record<string, string>>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const k of ['PATH', 'HOME', 'LANG', 'LC_ALL', 'TMPDIR', 'SYSTEMROOT']) {
    const v = process.env[k];
    if (v !== undefined) env[k] = v;
  }
  return {
    ...env,
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_TERMINAL_PROMPT: '0',
    GIT_ASKPASS: '',
    SSH_ASKPASS: '',
    GIT_PAGER: 'cat',
    PAGER: 'cat',
    GIT_OPTIONAL_LOCKS: '0',
    GIT_NO_REPLACE_OBJECTS: '1',
    GIT_EXTERNAL_DIFF: '',
    ...extra,
  };
}

export function hardenedArgs(args: readonly string[]): string[] {
  return [...HARDENING_CONFIG.flatMap((c) => ['-c', c]), ...args];
}

/** Runs git with hardening; rejects with a GitError (naming the command and git's message) on failure. */
export function runGit(args: readonly string[], opts: GitOptions): Promise<GitResult> {
  const full = hardenedArgs(args);
  return new Promise((resolve, reject) => {
    const child = execFile(
      'git',
      full,
      {
        cwd: opts.cwd,
        env: hardenedEnv(opts.env),
        encoding: 'buffer',
        maxBuffer: opts.maxBuffer ?? 512 * 1024 * 1024,
        signal: opts.signal,
      },
      (err, stdout, stderrBuf) => {
        const stderr = stderrBuf.toString('utf8');
        const code = err
          ? typeof (err as { code?: unknown }).code === 'number'
            ? (err as { code: number }).code
            : null
          : 0;
        if (code !== null && (code === 0 || opts.okCodes?.includes(code))) {
          resolve({ stdout, stderr, exitCode: code });
          return;
        }
        const first = stderr.trim().split('\n').slice(-3).join(' ') || (err?.message ?? 'failed');
        reject(new GitError(`git ${args.slice(0, 3).join(' ')}: ${first}`, args, code, stderr));
      },
    );
    if (opts.input !== undefined) child.stdin?.end(opts.input);
    else child.stdin?.end();
  });
}

/** Like runGit but returns stdout as trimmed UTF-8 text. */
export async function git(args: readonly string[], opts: GitOptions): Promise<string> {
  return (await runGit(args, opts)).stdout.toString('utf8').trim();
}

/** Streams a large input into git (e.g. a 50 MB patch into `git apply`) without buffering twice. */
export function spawnGit(args: readonly string[], opts: Omit<GitOptions, 'input' | 'maxBuffer'>) {
  return spawn('git', hardenedArgs(args), {
    cwd: opts.cwd,
    env: hardenedEnv(opts.env),
    signal: opts.signal,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
}
