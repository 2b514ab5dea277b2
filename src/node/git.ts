/**
 * The one way Baton runs git. Every call is hardened, because an agent can write the `.git/config`
 * of a workspace and a cloned repository can carry hooks, fsmonitor commands and diff/filter
 * drivers: no repository-chosen programs, hooks and fsmonitor off, no external diff or textconv,
 * no pager, no prompts, no optional locks.
 *
 * The system and global config are not read as they are (`GIT_CONFIG_NOSYSTEM=1`, and
 * `GIT_CONFIG_GLOBAL` names a file Baton writes): they can name programs too (credential helpers,
 * filter and diff drivers, fsmonitor, pager, hooks path, aliases). But some of the user's settings
 * make their checkout what it is, and without them Baton's git would see another tree than the
 * user's git does. Once per process (and per environment that decides where that config lives)
 * Baton reads `git config --list --show-scope --includes` outside any repository, keeps only the
 * entries of the system and global scopes that are on KEPT_SETTINGS, and writes them to a private
 * file (a 0700 temp folder, removed at exit). The listing is read again when one of the files it came
 * from (or a global one `git config --global` would create) changes, so a fix the user makes is
 * honoured on the next try. A repository's own config is never a source: an agent can write it. What
 * is kept, and why:
 *
 * - `core.autocrlf`, `core.eol`, `core.safecrlf`: line endings. Git for Windows sets
 *   `core.autocrlf=true` in its system config, so the user's tree has CRLF while the blobs have LF;
 *   without it the throwaway copy gets LF files and its patch does not apply to the user's CRLF tree.
 * - `safe.directory` (every value, in order): a repository the user marked safe (VS Code's "Manage
 *   Unsafe Repositories" writes it to the global config) must not fail with "dubious ownership".
 *   Git honours it only from protected config, and from `-c` only since 2.38, so it goes in the file.
 * - `core.longpaths`: Git for Windows refuses paths over 260 characters without it.
 * - `core.ignorecase`, `core.symlinks`, `core.fileMode`, `core.precomposeunicode`: how the file system behaves
 *   (Windows, macOS); git probes them at `init`/`clone`, some installers set them globally.
 * - `core.protectNTFS`, `core.protectHFS`: refuse paths that Windows or macOS would alias to `.git`;
 *   they only add checks.
 * - `core.excludesFile`: the user's global ignore rules (`~/.gitignore_global` and the like). Without
 *   them a globally ignored file (`.env`, `*.log`, an editor's folder) was untracked to Baton: copied
 *   into the agent's folder, counted as the user's change, and put in the patch when the agent made
 *   one. A file of patterns, read, never run.
 * - `core.attributesFile`: attributes are data (eol, text, binary). The drivers they name live in
 *   config, are not on the list, and stay dropped, as do hooks, fsmonitor, pager, credential
 *   helpers, `diff.*`, `filter.*`, `merge.*`, aliases and `include`s (their entries are listed
 *   already expanded).
 *
 * Conditional includes (`includeIf "gitdir:…"` and the like) apply only inside a repository they match,
 * so outside any repository the listing has none of their settings. When the system or global config
 * has one, the kept settings of a call are listed again in its folder (`keptFileAt`).
 *
 * The same setup checks `git --version` (Baton needs 2.32: `rev-parse --path-format=absolute`,
 * `GIT_CONFIG_GLOBAL`) and fails every call with an error that says what to do when git is missing
 * or older.
 */
import { execFile, spawn } from 'node:child_process';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

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
  /**
   * Git dirs of repositories git already accepted by their work tree (owned by the user, or marked
   * safe there), that this call enters by the git dir itself: `clone` runs upload-pack in `<top>/.git`,
   * which git checks as another folder than the `<top>` the user marked safe.
   */
  readonly safeDirectories?: readonly string[];
  /**
   * Turn off every filter driver (clean, smudge, process, required) the repository's own config
   * defines, for a call that reads or writes the user's working files: Baton records patches from
   * the files as they are and runs no driver (the global ones are dropped already), so it checks and
   * applies them, and tells what changed, the same way. A driver whose program is missing (Git LFS
   * set up with `filter.lfs.required`, git-lfs not installed) would otherwise fail the call, and a
   * clean filter (nbstripout) would make the files differ from the patch. Costs one git call.
   */
  readonly noFilterDrivers?: boolean;
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

/** Settings carried over from the user's system and global config (lower case, as git lists keys). */
export const KEPT_SETTINGS: ReadonlySet<string> = new Set([
  'core.autocrlf',
  'core.eol',
  'core.safecrlf',
  'safe.directory',
  'core.longpaths',
  'core.ignorecase',
  'core.symlinks',
  'core.filemode',
  'core.precomposeunicode',
  'core.protectntfs',
  'core.protecthfs',
  'core.attributesfile',
  'core.excludesfile',
]);

/** The oldest git Baton works with. */
export const MIN_GIT_VERSION: GitVersion = { major: 2, minor: 32, patch: 0 };

/** Environment every git call runs with, on top of the caller's PATH/HOME. */
export function hardenedEnv(extra?: Readonly<Record<string, string>>, globalConfig = '/dev/null'): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const k of ['PATH', 'HOME', 'TMPDIR', 'SYSTEMROOT']) {
    const v = process.env[k];
    if (v !== undefined) env[k] = v;
  }
  return {
    ...env,
    // Git's messages in English whatever the user's locale: Baton reads some of them ("not a git
    // repository", "dubious ownership"), and a German desktop's `Kein Git-Repository` made a folder
    // that is not a repository fail instead of giving the agent an empty one. Paths are bytes either
    // way. VS Code's own git extension runs git in English for the same reason.
    LC_ALL: 'C',
    LANGUAGE: 'C',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: globalConfig,
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

export interface GitVersion {
  readonly major: number;
  readonly minor: number;
  readonly patch: number;
}

/** Reads `git --version` output: "git version 2.39.5", "…2.45.1.windows.1", "…2.39.3 (Apple Git-146)". */
export function parseGitVersion(text: string): GitVersion | undefined {
  const m = /\bgit version (\d+)\.(\d+)(?:\.(\d+))?/.exec(text);
  return m ? { major: Number(m[1]), minor: Number(m[2]), patch: Number(m[3] ?? 0) } : undefined;
}

export function versionAtLeast(v: GitVersion, min: GitVersion): boolean {
  if (v.major !== min.major) return v.major > min.major;
  if (v.minor !== min.minor) return v.minor > min.minor;
  return v.patch >= min.patch;
}

const formatVersion = (v: GitVersion): string => `${v.major}.${v.minor}.${v.patch}`;

/** The error for a git that is too old (or says a version Baton cannot read). */
export function versionError(output: string): GitError | undefined {
  const v = parseGitVersion(output);
  if (v && versionAtLeast(v, MIN_GIT_VERSION)) return undefined;
  const found = v ? `git ${formatVersion(v)}` : `a git that reports its version as "${output.trim()}"`;
  return new GitError(
    `Baton needs git ${formatVersion(MIN_GIT_VERSION)} or newer, and found ${found}. Install a newer git (https://git-scm.com/downloads), make sure it comes first on PATH, then restart VS Code or the gateway.`,
    ['--version'],
    null,
    '',
  );
}

/**
 * The variables that decide which git runs and which system and global config it reads. Only these
 * reach the config listing; the setup is cached per their values.
 */
const USER_CONFIG_VARS = [
  'PATH',
  'HOME',
  'XDG_CONFIG_HOME',
  'GIT_CONFIG_GLOBAL',
  'GIT_CONFIG_SYSTEM',
  'GIT_CONFIG_NOSYSTEM',
  'USERPROFILE',
  'HOMEDRIVE',
  'HOMEPATH',
  'SYSTEMROOT',
  'PROGRAMDATA',
] as const;

type UserConfigEnv = Partial<Record<(typeof USER_CONFIG_VARS)[number], string>>;

function userConfigEnv(extra?: Readonly<Record<string, string>>): UserConfigEnv {
  const out: UserConfigEnv = {};
  for (const k of USER_CONFIG_VARS) {
    const v = extra?.[k] ?? process.env[k];
    if (v !== undefined) out[k] = v;
  }
  return out;
}

interface GitSetup {
  /** The private folder. */
  readonly dir: string;
  /** The kept settings, as config text. */
  readonly text: string;
  /** The file GIT_CONFIG_GLOBAL names: the kept settings. */
  readonly globalConfig: string;
  /** The config files the settings came from, and the global ones that may be created later. */
  readonly watched: readonly string[];
  /** Their state when they were read (`fileStamp`). */
  readonly stamp: string;
  /** The user's env the listing ran with (`userConfigEnv`, C locale, no prompts). */
  readonly env: NodeJS.ProcessEnv;
  /**
   * The system or global config has conditional includes (`includeIf "gitdir:…"`, `"onbranch:…"`,
   * `"hasconfig:…"`): outside any repository none of them applies, so the kept settings of a call are
   * listed again where it runs (`keptFileAt`).
   */
  readonly conditional: boolean;
  /** Per folder a call ran in: the kept settings there, while their files are unchanged (`conditional` only). */
  readonly at: Map<string, { readonly made: Promise<KeptFile>; stamp?: string; watched?: readonly string[] }>;
}

/** Kept settings as config text, and the file that holds them. */
interface KeptFile {
  readonly text: string;
  readonly file: string;
}

interface CachedSetup {
  readonly made: Promise<GitSetup>;
  /** Set once `made` resolved. */
  setup?: GitSetup;
}

const setups = new Map<string, CachedSetup>();
const setupDirs: string[] = [];

/**
 * The setup for this environment, read again when one of its config files changed: the user who
 * follows an error's advice (`git config --global --add safe.directory …`, a line-ending setting)
 * and tries again must not have to restart VS Code or the gateway first.
 */
function gitSetup(extra?: Readonly<Record<string, string>>): Promise<GitSetup> {
  const userEnv = userConfigEnv(extra);
  const key = JSON.stringify(USER_CONFIG_VARS.map((k) => userEnv[k] ?? null));
  const cached = setups.get(key);
  if (cached && !(cached.setup && fileStamp(cached.setup.watched) !== cached.setup.stamp)) return cached.made;
  const entry: CachedSetup = { made: prepareSetup(userEnv) };
  setups.set(key, entry);
  entry.made.then(
    (setup) => {
      entry.setup = setup;
    },
    // A failure is not kept: the user may install or upgrade git and try again without restarting.
    () => {
      if (setups.get(key) === entry) setups.delete(key);
    },
  );
  return entry.made;
}

/**
 * `fileStamp` of the files of two lists, the first read before a listing and the second after it:
 * equal to `fileStamp([...first, ...second])` while none of them changes (either list may be empty).
 */
function stampOf(first: string, second: string): string {
  return [first, second].filter((p) => p !== '').join('|');
}

/** The state of some files (size, times, inode; or absent), to tell when one was written. */
function fileStamp(files: readonly string[]): string {
  return files
    .map((f) => {
      const st = statSync(f, { throwIfNoEntry: false, bigint: true });
      return st ? `${st.size}:${st.mtimeNs}:${st.ctimeNs}:${st.ino}` : '-';
    })
    .join('|');
}

/** The global config files git reads, or would read once created (`git config --global` writes one of them). */
function globalConfigFiles(env: UserConfigEnv): string[] {
  if (env.GIT_CONFIG_GLOBAL !== undefined) return env.GIT_CONFIG_GLOBAL ? [env.GIT_CONFIG_GLOBAL] : [];
  const home = env.HOME ?? env.USERPROFILE;
  const files: string[] = [];
  if (home) files.push(join(home, '.gitconfig'));
  const xdg = env.XDG_CONFIG_HOME ?? (home ? join(home, '.config') : undefined);
  if (xdg) files.push(join(xdg, 'git', 'config'));
  return files;
}

function execText(
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  cwd?: string,
): Promise<{ stdout: string; stderr: string; error: (Error & { code?: unknown }) | null }> {
  return new Promise((resolve) => {
    execFile(
      'git',
      args,
      { env, cwd, encoding: 'utf8', maxBuffer: 16 * 1024 * 1024, windowsHide: true },
      (error, stdout, stderr) => resolve({ stdout, stderr, error }),
    );
  });
}

async function prepareSetup(userEnv: UserConfigEnv): Promise<GitSetup> {
  const env: NodeJS.ProcessEnv = { ...userEnv, LC_ALL: 'C', GIT_TERMINAL_PROMPT: '0' };
  const ver = await execText(['--version'], env);
  if (ver.error) {
    if (ver.error.code === 'ENOENT')
      throw new GitError(
        `Baton needs git ${formatVersion(MIN_GIT_VERSION)} or newer, and git is not on PATH. Install git (https://git-scm.com/downloads) so that \`git --version\` works in a terminal, then restart VS Code or the gateway.`,
        ['--version'],
        null,
        '',
      );
    throw new GitError(
      `git --version failed: ${ver.stderr.trim() || ver.error.message}`,
      ['--version'],
      null,
      ver.stderr,
    );
  }
  const tooOld = versionError(ver.stdout);
  if (tooOld) throw tooOld;

  const dir = privateDir();
  const candidates = globalConfigFiles(userEnv);
  if (env.GIT_CONFIG_SYSTEM && !env.GIT_CONFIG_NOSYSTEM) candidates.push(env.GIT_CONFIG_SYSTEM);
  // Before the listing: a file written while git reads it is read again on the next call.
  const before = fileStamp(candidates);
  // Outside any repository: a ceiling right above the empty private folder stops git's search.
  const listing = await execText(
    ['config', '--list', '--show-scope', '--show-origin', '-z', '--includes'],
    { ...env, GIT_CEILING_DIRECTORIES: dirname(dir) },
    dir,
  );
  if (listing.error)
    throw new GitError(
      `Git cannot read your git configuration: ${listing.stderr.trim() || listing.error.message}. Fix the file it names (git config --global --edit opens yours), then try again.`,
      ['config', '--list'],
      null,
      listing.stderr,
    );
  const globalConfig = join(dir, 'config');
  const text = configText(keptEntries(listing.stdout));
  writeFileSync(globalConfig, text, { mode: 0o600 });
  const origins = configOrigins(listing.stdout).map((f) => resolve(dir, f));
  const more = [...new Set(origins)].filter((f) => !candidates.includes(f));
  return {
    dir,
    text,
    globalConfig,
    watched: [...candidates, ...more],
    stamp: stampOf(before, fileStamp(more)),
    env,
    conditional: hasConditionalIncludes(listing.stdout),
    at: new Map(),
  };
}

/** True when a system or global config file has an `includeIf` section (listed as `includeif.<condition>.path`). */
function hasConditionalIncludes(listing: string): boolean {
  return listedEntries(listing).some(
    (e) => (e.scope === 'system' || e.scope === 'global') && e.key.startsWith('includeif.'),
  );
}

/** Folders whose kept settings are remembered (`GitSetup.at`); the oldest is listed again when needed. */
const KEPT_AT_MAX = 64;

/**
 * The kept settings for a call in `cwd`, when the user's config has conditional includes: listed in
 * `cwd` with the user's config, so an `includeIf "gitdir:~/work/"` that sets `core.autocrlf` for the
 * repositories under ~/work counts for them as it does for the user's git. Only the system and global
 * scopes are kept, as outside (what the repository's own config includes stays its own). A listing that
 * fails there (a repository git refuses) falls back to the settings listed outside any repository.
 */
function keptFileAt(setup: GitSetup, cwd: string): Promise<KeptFile> {
  const base: KeptFile = { text: setup.text, file: setup.globalConfig };
  if (!setup.conditional) return Promise.resolve(base);
  const key = resolve(cwd);
  const cached = setup.at.get(key);
  if (cached && cached.watched && cached.stamp === fileStamp(cached.watched)) return cached.made;
  setup.at.delete(key);
  if (setup.at.size >= KEPT_AT_MAX) setup.at.delete(setup.at.keys().next().value ?? '');
  const list = async (): Promise<KeptFile> => {
    const watched = setup.watched;
    const before = fileStamp(watched);
    const listing = await execText(
      ['config', '--list', '--show-scope', '--show-origin', '-z', '--includes'],
      setup.env,
      key,
    );
    if (listing.error) {
      entry.watched = watched;
      entry.stamp = before;
      return base;
    }
    const origins = [...new Set(configOrigins(listing.stdout).map((f) => resolve(key, f)))];
    // An `onbranch:` condition changes with the branch checked out: HEAD is watched too.
    if (listedEntries(listing.stdout).some((e) => e.key.startsWith('includeif.onbranch:'))) {
      const head = await execText(['rev-parse', '--path-format=absolute', '--git-path', 'HEAD'], setup.env, key);
      if (!head.error && head.stdout.trim()) origins.push(head.stdout.trim());
    }
    const more = origins.filter((f) => !watched.includes(f));
    entry.watched = [...watched, ...more];
    entry.stamp = stampOf(before, fileStamp(more));
    const text = configText(keptEntries(listing.stdout));
    if (text === setup.text) return base;
    const file = join(setup.dir, `config-at-${createHash('sha256').update(text).digest('hex').slice(0, 16)}`);
    if (!existsSync(file)) writeFileSync(file, text, { mode: 0o600 });
    return { text, file };
  };
  const entry: { made: Promise<KeptFile>; stamp?: string; watched?: readonly string[] } = { made: list() };
  setup.at.set(key, entry);
  return entry.made;
}

function privateDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'baton-git-'));
  if (setupDirs.length === 0)
    process.once('exit', () => {
      for (const d of setupDirs) rmSync(d, { recursive: true, force: true });
    });
  setupDirs.push(dir);
  return dir;
}

interface ListedEntry {
  readonly scope: string;
  /** `file:<path>`, `command line:`, … */
  readonly origin: string;
  readonly key: string;
  readonly value: string | undefined;
}

/** `git config --list --show-scope --show-origin -z` output (`scope\0origin\0key\nvalue\0`), in order. */
function listedEntries(listing: string): ListedEntry[] {
  const fields = listing.split('\0');
  const out: ListedEntry[] = [];
  for (let i = 0; i + 2 < fields.length; i += 3) {
    const entry = fields[i + 2];
    const nl = entry.indexOf('\n');
    out.push({
      scope: fields[i],
      origin: fields[i + 1],
      key: (nl < 0 ? entry : entry.slice(0, nl)).toLowerCase(),
      value: nl < 0 ? undefined : entry.slice(nl + 1),
    });
  }
  return out;
}

/** The kept entries of the system and global scopes, in order. */
export function keptEntries(listing: string): { key: string; value: string | undefined }[] {
  return listedEntries(listing)
    .filter((e) => (e.scope === 'system' || e.scope === 'global') && KEPT_SETTINGS.has(e.key))
    .map(({ key, value }) => ({ key, value }));
}

/** The system and global config files the listing was read from (includes too). */
export function configOrigins(listing: string): string[] {
  return listedEntries(listing)
    .filter((e) => (e.scope === 'system' || e.scope === 'global') && e.origin.startsWith('file:'))
    .map((e) => e.origin.slice('file:'.length));
}

/** A config file with the entries, values quoted so that any text reads back as it was. */
export function configText(entries: readonly { key: string; value: string | undefined }[]): string {
  const lines: string[] = [];
  let section: string | undefined;
  const quote = (text: string): string => `"${text.replace(/[\\"\n\t]/g, (c) => CONFIG_ESCAPES[c])}"`;
  for (const { key, value } of entries) {
    // section[.subsection].name: the subsection is everything between the first and the last dot.
    const first = key.indexOf('.');
    const last = key.lastIndexOf('.');
    const header = first === last ? key.slice(0, first) : `${key.slice(0, first)} ${quote(key.slice(first + 1, last))}`;
    if (header !== section) lines.push(`[${header}]`);
    section = header;
    lines.push(`\t${key.slice(last + 1)}${value === undefined ? '' : ` = ${quote(value)}`}`);
  }
  return lines.length ? lines.join('\n') + '\n' : '';
}

const CONFIG_ESCAPES: Record<string, string> = { '\\': '\\\\', '"': '\\"', '\n': '\\n', '\t': '\\t' };

/** The environment for one git call in `cwd`: hardened, with the kept settings as the global config. */
async function gitEnv(
  cwd: string,
  extra?: Readonly<Record<string, string>>,
  safeDirectories?: readonly string[],
): Promise<NodeJS.ProcessEnv> {
  const setup = await gitSetup(extra);
  const kept = await keptFileAt(setup, cwd);
  return hardenedEnv(extra, safeDirectories?.length ? withSafe(setup, kept, safeDirectories) : kept.file);
}

/** The kept settings plus more `safe.directory` entries, in a file of their own (written once). */
function withSafe(setup: GitSetup, kept: KeptFile, dirs: readonly string[]): string {
  const name = createHash('sha256')
    .update(JSON.stringify([kept.file, dirs]))
    .digest('hex')
    .slice(0, 16);
  const file = join(setup.dir, `config-${name}`);
  if (!existsSync(file)) {
    const more = configText(dirs.map((value) => ({ key: 'safe.directory', value })));
    writeFileSync(file, kept.text + more, { mode: 0o600 });
  }
  return file;
}

/** Git's message for a failed call, with what to do where git's own text does not say it. */
function failureMessage(args: readonly string[], stderr: string, err: Error | null): string {
  const dubious = /detected dubious ownership in repository at '([^'\n]*)'/.exec(stderr);
  if (dubious)
    return `git ${args.slice(0, 3).join(' ')}: git refuses the repository at ${dubious[1]} because another user owns it ("dubious ownership"). If you trust it, mark it safe: in VS Code run "Git: Manage Unsafe Repositories", or run git config --global --add safe.directory "${dubious[1]}"; then try again.`;
  const first = stderr.trim().split('\n').slice(-3).join(' ') || (err?.message ?? 'failed');
  return `git ${args.slice(0, 3).join(' ')}: ${first}`;
}

/** `-c` settings that turn off the filter drivers git sees configured in `cwd` (see GitOptions.noFilterDrivers). */
async function filterDriversOff(opts: GitOptions): Promise<string[]> {
  const r = await runGit(['config', '-z', '--get-regexp', '^filter\\.'], {
    cwd: opts.cwd,
    env: opts.env,
    safeDirectories: opts.safeDirectories,
    okCodes: [1],
    signal: opts.signal,
  });
  const names = new Set<string>();
  for (const entry of r.stdout.toString('utf8').split('\0')) {
    const nl = entry.indexOf('\n');
    const key = nl < 0 ? entry : entry.slice(0, nl);
    const last = key.lastIndexOf('.');
    if (last > 'filter.'.length) names.add(key.slice('filter.'.length, last));
  }
  return [...names].flatMap((name) =>
    ['clean=', 'smudge=', 'process=', 'required=false'].flatMap((v) => ['-c', `filter.${name}.${v}`]),
  );
}

async function fullArgs(args: readonly string[], opts: GitOptions): Promise<string[]> {
  return hardenedArgs(opts.noFilterDrivers ? [...(await filterDriversOff(opts)), ...args] : args);
}

/** Runs git with hardening; rejects with a GitError (naming the command and git's message) on failure. */
export async function runGit(args: readonly string[], opts: GitOptions): Promise<GitResult> {
  const full = await fullArgs(args, opts);
  const env = await gitEnv(opts.cwd, opts.env, opts.safeDirectories);
  return new Promise((resolve, reject) => {
    const child = execFile(
      'git',
      full,
      {
        cwd: opts.cwd,
        env,
        encoding: 'buffer',
        maxBuffer: opts.maxBuffer ?? 512 * 1024 * 1024,
        signal: opts.signal,
        // No console window flashing up for each git call on Windows.
        windowsHide: true,
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
        reject(new GitError(failureMessage(args, stderr, err), args, code, stderr));
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
export async function spawnGit(
  args: readonly string[],
  opts: Omit<GitOptions, 'input' | 'maxBuffer'>,
): Promise<ChildProcessWithoutNullStreams> {
  const env = await gitEnv(opts.cwd, opts.env, opts.safeDirectories);
  return spawn('git', await fullArgs(args, opts), {
    cwd: opts.cwd,
    env,
    signal: opts.signal,
    stdio: ['pipe', 'pipe', 'pipe'],
    windowsHide: true,
  });
}
