/**
 * Review preparation and apply for `changes.patch` (docs/security.md, "Patches").
 *
 * - `prepareReview` parses (streaming), classifies, checks with `git apply --check` from the
 *   repository's top level (never a subfolder: there git silently skips paths outside it) and reports
 *   drift against the delegation's base. The check runs while the patch is parsed.
 * - `applyReviewed` applies a selection (all / files / hunks) in one step after a snapshot of every
 *   touched file; a failed or partial apply restores them byte for byte. `threeWay` (only when the user
 *   chose it) merges with a private index, so the user's own index is never touched, and reports
 *   conflicted files for the merge editor; `abortApply` restores the snapshot.
 * - `undoApply` restores the snapshot unless the user edited those files since.
 * - Outside git the same contract holds with jsdiff (patchPlain.ts).
 *
 * Git must read the patch as Baton does: the check compares git's list of files with the parser's and
 * refuses the patch when they differ (a crafted patch must not show one thing and apply another).
 */
import { randomUUID } from 'node:crypto';
import {
  copyFileSync,
  existsSync,
  lstatSync,
  mkdtempSync,
  rmSync,
  writeFileSync,
  chmodSync,
  unlinkSync,
  mkdirSync,
  readFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { english } from '../core/protocol/l10n';
import { applyMessageText, type ApplyMessage } from '../core/patch/applyText';
import type { ParsedPatch, PatchFile, PatchFileStatus, PatchSelection } from '../core/patch/patchModel';
import { gitQuotePath } from '../core/patch/patchParser';
import type { RiskReport } from '../core/patch/patchRisk';
import { classifyPatch, defaultSelection } from '../core/patch/patchRisk';
import type { AppliedParts, SelectedFile, SubPatch } from '../core/patch/subPatch';
import { buildSubPatch, NOTHING_APPLIED } from '../core/patch/subPatch';
import { git, runGit, spawnGit } from './git';
import { lfsObjectsInPlace } from './lfsPointer';
import type { DriftBase, DriftReport } from './patchDrift';
import { detectDrift, repositoryTopLevel } from './patchDrift';
import { planPlain } from './patchPlain';
import type { FileState, Snapshot } from './patchSnapshot';
import { changedSince, currentDigest, insideRoot, readState, restoreSnapshot, takeSnapshot } from './patchSnapshot';
import type { PatchSource, ProgressCallback } from './patchSource';
import { readPatch, writeSubPatch } from './patchSource';

export interface PatchTarget {
  /** The repository's top level (git) or the folder itself (plain). */
  readonly root: string;
  readonly kind: 'git' | 'folder';
}

export interface FileCheck {
  readonly fileId: string;
  readonly path: string;
  readonly ok: boolean;
  /** What git (or the plain patcher) said about this file, e.g. "patch does not apply". */
  readonly errors: readonly string[];
}

export interface PatchCheck {
  /** The whole patch applies cleanly to the current tree. */
  readonly ok: boolean;
  readonly files: readonly FileCheck[];
  /** Patch-wide errors (git could not read the patch). */
  readonly errors: readonly string[];
  /** Git read the same files in the same order as Baton's parser. When false nothing may be applied. */
  readonly consistent: boolean;
}

export interface PatchReview {
  readonly target: PatchTarget;
  readonly source: PatchSource;
  readonly patch: ParsedPatch;
  readonly risks: RiskReport;
  readonly check: PatchCheck;
  /** Present when a base was given. */
  readonly drift: DriftReport | undefined;
}

export interface PrepareReviewOptions {
  /** Any folder inside the repository (or the plain folder); the top level is found from it. */
  readonly folder: string;
  /** The result of `resolveTarget(folder)`, when already known (saves a git call). */
  readonly target?: PatchTarget;
  readonly source: PatchSource;
  /** The delegation's base (META.baseCommit / META.uncommittedDigest and per-file digests). */
  readonly base?: DriftBase;
  readonly onProgress?: ProgressCallback;
  readonly signal?: AbortSignal;
}

export interface AppliedFile {
  readonly fileId: string;
  readonly status: PatchFileStatus;
  readonly oldPath: string | undefined;
  readonly newPath: string | undefined;
  readonly whole: boolean;
  readonly hunkIds: readonly string[];
}

/** What was applied, for the delegation's journal and the audit log (JSON-safe). */
export interface ApplyRecord {
  readonly id: string;
  readonly root: string;
  readonly kind: 'git' | 'folder';
  readonly appliedAt: string;
  readonly threeWay: boolean;
  readonly files: readonly AppliedFile[];
  readonly overrides: readonly string[];
  /** Every touched path's digest before and after (null: missing). `after` is null until a 3-way merge is finished. */
  readonly digests: readonly { readonly path: string; readonly before: string | null; readonly after: string | null }[];
}

/** An apply that succeeded: keep it to undo. */
export interface AppliedPatch {
  readonly record: ApplyRecord;
  readonly snapshot: Snapshot;
}

export interface ConflictFile {
  readonly path: string;
  /** Stage contents for the merge editor (undefined when that side has no file). */
  readonly base: Buffer | undefined;
  /** The user's version (the working tree before the apply). */
  readonly ours: Buffer | undefined;
  /** The agent's version. */
  readonly theirs: Buffer | undefined;
}

/** A 3-way apply that left conflicts in the working tree (files with conflict markers). */
export interface PendingMerge {
  readonly record: ApplyRecord;
  readonly snapshot: Snapshot;
  readonly conflicts: readonly ConflictFile[];
}

export type ApplyOutcome =
  | { readonly kind: 'applied'; readonly applied: AppliedPatch }
  | { readonly kind: 'conflicts'; readonly pending: PendingMerge }
  | {
      readonly kind: 'failed';
      /** Why, as data: the host says it in the user's language (`applyMessageText`). */
      readonly failure: ApplyMessage;
      /** Why, in English (logs, the CLI). */
      readonly message: string;
      readonly files: readonly FileCheck[];
      readonly restored: readonly string[];
    };

export interface ApplyOptions {
  readonly selection: PatchSelection;
  /** Only when the user chose it after a failed check. */
  readonly threeWay?: boolean;
  /**
   * What earlier applies of this review wrote: left out of this one, and the rest is checked with
   * `git apply --check` against the tree as it is now before anything is written.
   */
  readonly applied?: AppliedParts;
  readonly signal?: AbortSignal;
}

export class PatchApplyError extends Error {
  /** The `message` is English (logs, the CLI); the host says `why` in the user's language. */
  constructor(
    readonly why: ApplyMessage,
    readonly code: 'inconsistent' | 'edited-since' | 'unresolved' | 'not-repository',
    readonly paths: readonly string[] = [],
  ) {
    super(applyMessageText(why, english));
    this.name = 'PatchApplyError';
  }
}

const C_ENV = { LC_ALL: 'C', LANGUAGE: 'C' };
/** Settings a repository's own config must not change for apply: we decide whitespace handling and quoting. */
const APPLY_ARGS = [
  '-c',
  'core.quotePath=true',
  '-c',
  'apply.whitespace=nowarn',
  '-c',
  'apply.ignoreWhitespace=no',
  'apply',
  '-p1',
  '--whitespace=nowarn',
];
/** `--numstat -z` is git's own list of files and line counts, written in one piece (unlike `-v`, a write per file). */
const NUMSTAT = ['--numstat', '-z'];

/**
 * Finds the top level for a folder (git) or uses the folder itself (plain). Looks for `.git` upwards as
 * git's own discovery does (no process needed on the review's hot path), and asks git only when it
 * finds one, to get the canonical top level when `.git` is a file (worktrees, submodules).
 */
export async function resolveTarget(folder: string): Promise<PatchTarget> {
  let dir = resolve(folder);
  for (;;) {
    const dotGit = join(dir, '.git');
    let st;
    try {
      st = lstatSync(dotGit);
    } catch {
      st = undefined;
    }
    if (st?.isDirectory() && existsSync(join(dotGit, 'HEAD'))) return { root: dir, kind: 'git' };
    if (st?.isFile()) {
      const top = await repositoryTopLevel(folder);
      return top ? { root: top, kind: 'git' } : { root: resolve(folder), kind: 'folder' };
    }
    const up = dirname(dir);
    if (up === dir) return { root: resolve(folder), kind: 'folder' };
    dir = up;
  }
}

interface GitRun {
  readonly exitCode: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `git apply` with the patch given by path (read by git itself) or a sub-patch on stdin. */
async function runApply(
  root: string,
  flags: readonly string[],
  input: { path: string } | { sub: SubPatch; source: PatchSource },
  env?: Record<string, string>,
  signal?: AbortSignal,
): Promise<GitRun> {
  const args = [...APPLY_ARGS, ...flags];
  if ('path' in input) {
    const r = await runGit([...args, input.path], {
      cwd: root,
      env: { ...C_ENV, ...env },
      okCodes: [1, 128],
      signal,
      noFilterDrivers: true,
    });
    return { exitCode: r.exitCode, stdout: r.stdout.toString('utf8'), stderr: r.stderr };
  }
  const child = await spawnGit(args, { cwd: root, env: { ...C_ENV, ...env }, signal, noFilterDrivers: true });
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  child.stdout.on('data', (d: Buffer) => out.push(d));
  child.stderr.on('data', (d: Buffer) => err.push(d));
  const done = new Promise<number>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve(code ?? 1));
  });
  // git may exit before reading everything (a parse error): its exit code tells, not the broken pipe.
  child.stdin.on('error', () => undefined);
  try {
    await writeSubPatch(input.sub, input.source, child.stdin);
  } catch {
    /* reported through the exit code and stderr */
  }
  child.stdin.end();
  const exitCode = await done;
  return { exitCode, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') };
}

interface ApplyLog {
  /** Names git announced with "Checking patch …", in order. */
  readonly names: string[];
  /** Error lines per announced file, by position. */
  readonly perFile: string[][];
  readonly global: string[];
}

function parseApplyLog(stderr: string): ApplyLog {
  const names: string[] = [];
  const perFile: string[][] = [];
  const global: string[] = [];
  for (const line of stderr.split('\n')) {
    const m = /^Checking patch (.*)\.\.\.$/.exec(line);
    if (m) {
      names.push(m[1]);
      perFile.push([]);
      continue;
    }
    const e = /^(?:error|fatal): (.*)$/.exec(line);
    if (!e) continue;
    if (perFile.length) perFile[perFile.length - 1].push(e[1]);
    else global.push(e[1]);
  }
  return { names, perFile, global };
}

/** The name git prints for a file in "Checking patch %s..." (say_patch_name). */
function gitAnnouncedName(f: PatchFile): string {
  if (f.oldPath !== undefined && f.newPath !== undefined && f.oldPath !== f.newPath)
    return `${gitQuotePath(f.oldPath)} => ${gitQuotePath(f.newPath)}`;
  return gitQuotePath(f.newPath ?? f.oldPath ?? '');
}

/**
 * Per-file results from git's verbose log. Git may stop at a file it will not touch at all (an invalid
 * path is fatal), so its list can be a prefix of ours; any other difference means git reads the patch
 * differently from Baton's parser.
 */
function checkFromLog(files: readonly PatchFile[], log: ApplyLog, exitCode: number): PatchCheck {
  const expected = files.map(gitAnnouncedName);
  const prefix = log.names.length <= expected.length && log.names.every((n, i) => n === expected[i]);
  const stoppedEarly =
    log.names.length < expected.length &&
    exitCode !== 0 &&
    (log.names.length === 0 ? log.global.length > 0 : (log.perFile[log.names.length - 1]?.length ?? 0) > 0);
  const consistent = prefix && (log.names.length === expected.length || stoppedEarly);
  const result: FileCheck[] = files.map((f, i) => {
    const path = f.newPath ?? f.oldPath ?? '';
    if (!consistent) return { fileId: f.id, path, ok: false, errors: [] };
    if (i >= log.names.length)
      return { fileId: f.id, path, ok: false, errors: ['not checked: git stopped at an earlier file'] };
    const errors = log.perFile[i];
    return { fileId: f.id, path, ok: log.global.length === 0 && errors.length === 0, errors };
  });
  const errors = [...log.global];
  if (!consistent)
    errors.push(
      `git reads this patch differently from Baton's parser (git saw: ${log.names.slice(0, 5).join(', ') || 'nothing'}); it will not be applied`,
    );
  if (exitCode !== 0 && errors.length === 0 && result.every((r) => r.ok))
    errors.push('git apply --check failed without saying why');
  return {
    ok: exitCode === 0 && consistent && errors.length === 0 && result.every((r) => r.ok),
    files: result,
    errors,
    consistent,
  };
}

/** Whether git's `--numstat -z` lists the same files, in order, with the same line counts as Baton's parser (renames are also checked by the verbose run when anything fails). */
function numstatAgrees(files: readonly (PatchFile | SelectedFile)[], stdout: string): boolean {
  const tokens = stdout.split('\0');
  let t = 0;
  for (const item of files) {
    const f = 'file' in item ? item.file : item;
    const added = 'file' in item ? item.hunks.reduce((n, h) => n + h.added, 0) : f.added;
    const removed = 'file' in item ? item.hunks.reduce((n, h) => n + h.removed, 0) : f.removed;
    const m = /^(-|\d+)\t(-|\d+)\t(.*)$/s.exec(tokens[t++] ?? '');
    if (!m) return false;
    // git apply's numstat names each file once: the new name, else the old one.
    if (m[3] !== (f.newPath ?? f.oldPath ?? '')) return false;
    if (m[1] !== '-' && (Number(m[1]) !== added || Number(m[2]) !== removed)) return false;
  }
  return tokens.slice(t).every((x) => x === '');
}

const DISAGREE = applyMessageText({ code: 'parsers-disagree', restored: false }, english);

/**
 * `git apply --check` with per-file results. The fast path (one git run, numstat on stdout) answers
 * when everything applies; when something does not, a verbose run attributes each error to its file.
 */
async function gitCheck(
  root: string,
  items: readonly (PatchFile | SelectedFile)[],
  input: { path: string } | { sub: SubPatch; source: PatchSource },
  signal?: AbortSignal,
  first?: Promise<GitRun>,
): Promise<PatchCheck> {
  const r = await (first ?? runApply(root, ['--check', ...NUMSTAT], input, undefined, signal));
  const files = items.map((i) => ('file' in i ? i.file : i));
  if (r.exitCode === 0) {
    // A file cut to some hunks has their line counts, not the whole file's.
    const consistent = numstatAgrees(items, r.stdout);
    return {
      ok: consistent,
      files: files.map((f) => ({ fileId: f.id, path: f.newPath ?? f.oldPath ?? '', ok: consistent, errors: [] })),
      errors: consistent ? [] : [DISAGREE],
      consistent,
    };
  }
  const v = await runApply(root, ['--check', '-v'], input, undefined, signal);
  return explainSparse(root, files, checkFromLog(files, parseApplyLog(v.stderr), v.exitCode));
}

/**
 * A file the patch changes that git says is missing may be outside the user's sparse checkout (in
 * the index, not in the working tree; the agent's copy has every file): git's "No such file or
 * directory" does not say that, nor what to do. Failure path only: it lists the whole index.
 */
async function explainSparse(root: string, files: readonly PatchFile[], check: PatchCheck): Promise<PatchCheck> {
  if (!check.files.some((f) => f.errors.some((e) => /: No such file or directory$/.test(e)))) return check;
  // `--sparse` (git 2.35) lists a sparse index as it is ("S dir/"): expanding it, as a pathspec
  // would, writes tree objects into the user's repository.
  let listed = await runGit(['ls-files', '--sparse', '-t', '-z'], { cwd: root, okCodes: [128, 129] });
  if (listed.exitCode !== 0) listed = await runGit(['ls-files', '-t', '-z'], { cwd: root, okCodes: [128] });
  const skipped = listed.stdout
    .toString('utf8')
    .split('\0')
    .filter((e) => e.startsWith('S '))
    .map((e) => e.slice(2));
  const exact = new Set(skipped.filter((p) => !p.endsWith('/')));
  const dirs = skipped.filter((p) => p.endsWith('/'));
  const outside = (p: string | undefined): boolean =>
    p !== undefined && (exact.has(p) || dirs.some((d) => p.startsWith(d)));
  if (!exact.size && !dirs.length) return check;
  const byId = new Map(files.map((f) => [f.id, f] as const));
  return {
    ...check,
    files: check.files.map((c) => {
      const f = byId.get(c.fileId);
      const path = [f?.oldPath, f?.newPath].find(outside);
      if (c.ok || path === undefined) return c;
      const folder = dirname(path);
      return {
        ...c,
        errors: [
          `${path} is outside your sparse checkout, so it is not in your working tree: run git sparse-checkout add "${folder === '.' ? path : folder}" (or git sparse-checkout disable), then review the patch again.`,
        ],
      };
    }),
  };
}

/** The check of the files offered by default replaces the whole-patch verdict for them. */
function mergeChecks(whole: PatchCheck, offered: PatchCheck, offeredIds: ReadonlySet<string>): PatchCheck {
  const byId = new Map(offered.files.map((f) => [f.fileId, f] as const));
  const files = whole.files.map((f) => (offeredIds.has(f.fileId) ? (byId.get(f.fileId) ?? f) : f));
  return { ok: whole.ok, files, errors: whole.errors, consistent: whole.consistent && offered.consistent };
}

function plainCheck(root: string, patch: ParsedPatch): PatchCheck {
  const plan = planPlain(
    root,
    patch.files.map((f) => ({ file: f, hunks: f.hunks, whole: true })),
  );
  const files = patch.files.map((f) => {
    const errors = plan.errors.get(f.id) ?? [];
    return { fileId: f.id, path: f.newPath ?? f.oldPath ?? '', ok: errors.length === 0, errors };
  });
  return { ok: files.every((f) => f.ok), files, errors: [], consistent: true };
}

function readTextIn(root: string): (path: string) => string | undefined {
  return (path) => {
    try {
      const s = readState(root, path);
      return s.kind === 'file' && s.content ? s.content.toString('utf8') : undefined;
    } catch {
      return undefined;
    }
  };
}

function touchedPaths(files: readonly { file: PatchFile }[]): string[] {
  const out = new Set<string>();
  for (const { file } of files) {
    if (file.oldPath !== undefined) out.add(file.oldPath);
    if (file.newPath !== undefined) out.add(file.newPath);
  }
  return [...out];
}

/** Everything the review shows before the user decides. */
export async function prepareReview(opts: PrepareReviewOptions): Promise<PatchReview> {
  const { source } = opts;
  // Finding the top level, git's check (reading the patch file itself) and Baton's parse run side by side.
  const targetRun = opts.target ? Promise.resolve(opts.target) : resolveTarget(opts.folder);
  const patchPath =
    'path' in source ? { path: isAbsolute(source.path) ? source.path : join(process.cwd(), source.path) } : undefined;
  const wholeRun = targetRun.then((t) =>
    t.kind === 'git' && patchPath
      ? runApply(t.root, ['--check', ...NUMSTAT], patchPath, undefined, opts.signal)
      : undefined,
  );
  let patch: ParsedPatch;
  try {
    patch = await readPatch(source, { onProgress: opts.onProgress, signal: opts.signal });
  } catch (e) {
    await wholeRun.catch(() => undefined);
    throw e;
  }
  const target = await targetRun;
  let check: PatchCheck;
  if (target.kind === 'git') {
    const first = await wholeRun;
    const input = patchPath ?? {
      sub: { files: [], parts: [{ kind: 'bytes' as const, range: { start: 0, end: patch.size } }], isWholePatch: true },
      source,
    };
    check = await gitCheck(target.root, patch.files, input, opts.signal, first ? Promise.resolve(first) : undefined);
  } else {
    check = plainCheck(target.root, patch);
  }
  if (target.kind === 'git' && !check.ok) check = await explainRefusals(target.root, patch.files, check);
  const risks = classifyPatch(patch, { readText: readTextIn(target.root) });
  if (target.kind === 'git' && risks.refusedFiles.size > 0 && !check.ok) {
    // Git stops at some refused items (an invalid path is fatal to it): check what is offered on its own.
    const offered = defaultSelection(patch, risks);
    if (offered.files?.length) {
      const sub = buildSubPatch(patch, risks, offered);
      check = mergeChecks(
        check,
        await gitCheck(
          target.root,
          sub.files.map((s) => s.file),
          { sub, source },
          opts.signal,
        ),
        new Set(offered.files),
      );
    }
  }
  let drift: DriftReport | undefined;
  if (opts.base && target.kind === 'git')
    drift = await detectDrift(target.root, opts.base, touchedPaths(patch.files.map((file) => ({ file }))));
  else if (opts.base?.files && target.kind === 'folder') {
    const files = opts.base.files;
    const changed = touchedPaths(patch.files.map((file) => ({ file }))).filter(
      (p) => (p in files ? files[p] : undefined) !== (currentDigest(target.root, p) ?? undefined),
    );
    drift = {
      headMoved: false,
      baseCommit: undefined,
      head: undefined,
      uncommittedChanged: changed.length > 0,
      changedFiles: changed.sort(),
      approximate: false,
    };
  }
  return { target, source, patch, risks, check, drift };
}

/**
 * Why git refused files it only says "does not match" or "wrong type" about, where Baton can tell:
 * - the patch starts from a Git LFS pointer while the user's checkout has the object that pointer names
 *   (the agent's copy held the pointer, docs/security.md, and the agent changed it);
 * - the patch changes a symbolic link in a checkout with `core.symlinks=false` (Git for Windows without
 *   the right to make links), where the link is a plain file holding its target: git cannot apply a
 *   change to it there.
 */
async function explainRefusals(root: string, files: readonly PatchFile[], check: PatchCheck): Promise<PatchCheck> {
  const failed = new Set(check.files.filter((f) => !f.ok).map((f) => f.fileId));
  const refused = files.filter((f) => failed.has(f.id) && f.oldPath);
  if (!refused.length) return check;
  const explained = new Map<string, string>();
  const links = refused.filter((f) => f.oldMode === '120000');
  if (links.length && (await git(['config', '--bool', 'core.symlinks'], { cwd: root, okCodes: [1] })) === 'false')
    for (const f of links)
      explained.set(
        f.id,
        `${f.oldPath} is a symbolic link in the repository, and this checkout has core.symlinks=false (links are plain files holding their target), where git cannot apply a change to a link. Leave this file out and change its text yourself, or apply the patch in a checkout with symbolic links.`,
      );
  try {
    const lfs = refused.flatMap((f) =>
      f.oldBlob && f.oldPath && f.oldMode !== '120000' ? [{ id: f.id, path: f.oldPath, blob: f.oldBlob }] : [],
    );
    for (const f of await lfsObjectsInPlace(lfs, root, { cwd: root }))
      explained.set(
        f.id,
        `${f.path} is tracked by Git LFS: the agent's copy has its pointer file, not the file you have checked out, and the agent changed the pointer file, so the change cannot be applied to your file. Leave this file out, or make the change yourself.`,
      );
  } catch {
    // git could not read the blobs: its own words stand
  }
  if (!explained.size) return check;
  return {
    ...check,
    files: check.files.map((f) => {
      const why = explained.get(f.fileId);
      return why === undefined ? f : { ...f, errors: [why, ...f.errors] };
    }),
  };
}

interface RecordParts {
  readonly record: ApplyRecord;
  /** Paths whose bytes and mode are exactly as before the apply. */
  readonly unchanged: ReadonlySet<string>;
}

function sameState(a: FileState, b: FileState): boolean {
  if (a.kind !== b.kind || a.mode !== b.mode) return false;
  if (a.content === undefined || b.content === undefined) return a.content === b.content;
  return a.content.equals(b.content);
}

/**
 * The journal record. Digests are computed lazily (enumerable getters: JSON.stringify and undo see
 * them), so hashing does not sit on the apply's path; `after` is the digest of the bytes read right
 * after git finished, whenever it is computed. Serialise the record promptly (the journal does): until
 * then it holds those bytes.
 */
function recordFor(
  review: PatchReview,
  files: readonly SelectedFile[],
  snapshot: Snapshot,
  threeWay: boolean,
  overrides: readonly string[],
  withAfter: boolean,
): RecordParts {
  const unchanged = new Set<string>();
  const digests = [...snapshot.files.values()].map((s) => {
    const entry = { path: s.path } as { path: string; before: string | null; after: string | null };
    Object.defineProperty(entry, 'before', { enumerable: true, get: () => s.digest });
    if (!withAfter) {
      entry.after = null;
      return entry;
    }
    let now: FileState | undefined = readState(snapshot.root, s.path, true);
    if (sameState(now, s)) unchanged.add(s.path);
    let after: string | null | undefined;
    Object.defineProperty(entry, 'after', {
      enumerable: true,
      get: () => {
        if (after === undefined && now) {
          after = now.digest;
          now = undefined;
        }
        return after ?? null;
      },
    });
    return entry;
  });
  const record: ApplyRecord = {
    id: randomUUID(),
    root: review.target.root,
    kind: review.target.kind,
    appliedAt: new Date().toISOString(),
    threeWay,
    files: files.map((f) => ({
      fileId: f.file.id,
      status: f.file.status,
      oldPath: f.file.oldPath,
      newPath: f.file.newPath,
      whole: f.whole,
      hunkIds: f.hunks.map((h) => h.id),
    })),
    overrides: [...overrides],
    digests,
  };
  return { record, unchanged };
}

/** Files git left as they were although the patch changes them: it skipped them silently. */
function untouched(parts: RecordParts, files: readonly SelectedFile[]): string[] {
  const out: string[] = [];
  for (const { file } of files) {
    const p = file.newPath ?? file.oldPath ?? '';
    const oldStayed = file.status === 'renamed' && parts.unchanged.has(file.oldPath ?? '');
    if (parts.unchanged.has(p) || oldStayed) out.push(p);
  }
  return out;
}

function failed(failure: ApplyMessage, files: readonly FileCheck[], snapshot: Snapshot | undefined): ApplyOutcome {
  const restored = snapshot ? restoreSnapshot(snapshot) : [];
  return { kind: 'failed', failure, message: applyMessageText(failure, english), files, restored };
}

/**
 * Applies the chosen part of a reviewed patch. Throws PatchSelectionError (core) for a selection that
 * includes refused items without an override, and PatchApplyError when git and Baton disagree on the
 * patch; every other failure is an outcome with the user's files restored.
 */
export async function applyReviewed(review: PatchReview, opts: ApplyOptions): Promise<ApplyOutcome> {
  if (!review.check.consistent)
    throw new PatchApplyError({ code: 'inconsistent', detail: review.check.errors.join('; ') }, 'inconsistent');
  const applied = opts.applied ?? NOTHING_APPLIED;
  const continuing = applied.files.size > 0 || applied.hunks.size > 0;
  const sub = buildSubPatch(review.patch, review.risks, opts.selection, applied);
  const overrides = opts.selection.overrides ?? [];
  const { root } = review.target;
  const threeWay = opts.threeWay === true;
  if (continuing && review.target.kind === 'git' && !threeWay) {
    // The review's check was against the tree before the first apply: check the rest against the tree as it is now.
    const pre = await gitCheck(root, sub.files, { sub, source: review.source }, opts.signal);
    if (!pre.consistent)
      throw new PatchApplyError(
        pre.errors.length
          ? { code: 'inconsistent', detail: pre.errors.join('; ') }
          : { code: 'parsers-disagree', restored: false },
        'inconsistent',
      );
    if (!pre.ok) {
      const detail = [...pre.errors, ...pre.files.flatMap((f) => f.errors.map((e) => `${f.path}: ${e}`))].join('; ');
      return failed({ code: 'rest-does-not-apply', detail }, pre.files, undefined);
    }
  }
  const snapshot = takeSnapshot(root, touchedPaths(sub.files));
  if (review.target.kind === 'folder') return applyPlain(review, sub, snapshot, overrides);
  let tmp: string | undefined;
  try {
    const env: Record<string, string> = {};
    if (threeWay) {
      tmp = mkdtempSync(join(tmpdir(), 'baton-3way-'));
      env.GIT_INDEX_FILE = join(tmp, 'index');
      await preparePrivateIndex(root, env.GIT_INDEX_FILE, snapshot);
    }
    const input =
      sub.isWholePatch && 'path' in review.source
        ? { path: isAbsolute(review.source.path) ? review.source.path : join(process.cwd(), review.source.path) }
        : { sub, source: review.source };
    const r = await runApply(root, [...NUMSTAT, '--apply', ...(threeWay ? ['--3way'] : [])], input, env, opts.signal);
    if (threeWay) {
      const conflicts = await readConflicts(root, env);
      if (conflicts.length) {
        return {
          kind: 'conflicts',
          pending: {
            record: recordFor(review, sub.files, snapshot, true, overrides, false).record,
            snapshot,
            conflicts,
          },
        };
      }
    }
    if (r.exitCode !== 0) {
      restoreSnapshot(snapshot);
      // Failure path only: a verbose check says which file failed and why.
      const verdict = await gitCheck(
        root,
        sub.files.map((s) => s.file),
        input,
        opts.signal,
      );
      const msg =
        [...verdict.errors, ...verdict.files.flatMap((f) => f.errors.map((e) => e))].join('; ') ||
        r.stderr.trim() ||
        `git apply exited with ${r.exitCode}`;
      return failed({ code: 'did-not-apply', detail: msg }, verdict.files, snapshot);
    }
    if (!numstatAgrees(sub.files, r.stdout)) {
      restoreSnapshot(snapshot);
      throw new PatchApplyError({ code: 'parsers-disagree', restored: true }, 'inconsistent');
    }
    const fileChecks = sub.files.map((s) => ({
      fileId: s.file.id,
      path: s.file.newPath ?? s.file.oldPath ?? '',
      ok: true,
      errors: [],
    }));
    const parts = recordFor(review, sub.files, snapshot, threeWay, overrides, true);
    const skipped = untouched(parts, sub.files);
    if (skipped.length) return failed({ code: 'git-skipped', paths: skipped }, fileChecks, snapshot);
    return { kind: 'applied', applied: { record: parts.record, snapshot } };
  } catch (e) {
    restoreSnapshot(snapshot);
    throw e;
  } finally {
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  }
}

function applyPlain(
  review: PatchReview,
  sub: SubPatch,
  snapshot: Snapshot,
  overrides: readonly string[],
): ApplyOutcome {
  const { root } = review.target;
  const plan = planPlain(root, sub.files);
  const files = sub.files.map((s) => {
    const errors = plan.errors.get(s.file.id) ?? [];
    return { fileId: s.file.id, path: s.file.newPath ?? s.file.oldPath ?? '', ok: errors.length === 0, errors };
  });
  if (plan.errors.size)
    return failed({ code: 'did-not-apply', detail: [...plan.errors.values()].flat().join('; ') }, files, undefined);
  try {
    for (const [path, w] of plan.writes) {
      const abs = insideRoot(root, path);
      if (w.kind === 'delete') {
        unlinkSync(abs);
        continue;
      }
      mkdirSync(dirname(abs), { recursive: true });
      if (existsSync(abs)) unlinkSync(abs);
      writeFileSync(abs, w.content, { mode: w.mode });
      chmodSync(abs, w.mode);
    }
  } catch (e) {
    restoreSnapshot(snapshot);
    return failed({ code: 'write-failed', detail: e instanceof Error ? e.message : String(e) }, files, undefined);
  }
  return {
    kind: 'applied',
    applied: { record: recordFor(review, sub.files, snapshot, false, overrides, true).record, snapshot },
  };
}

/**
 * A private index for `--3way` that matches the working tree for the touched paths: 3-way needs an
 * index, and the user's own index (what they staged) must not change.
 */
async function preparePrivateIndex(root: string, indexFile: string, snapshot: Snapshot): Promise<void> {
  const real = await git(['rev-parse', '--git-path', 'index'], { cwd: root });
  const realAbs = isAbsolute(real) ? real : join(root, real);
  const env = { GIT_INDEX_FILE: indexFile };
  if (existsSync(realAbs)) copyFileSync(realAbs, indexFile);
  else await runGit(['read-tree', '--empty'], { cwd: root, env });
  const present = [...snapshot.files.values()].filter((s) => s.kind === 'file' || s.kind === 'symlink');
  const missing = [...snapshot.files.values()].filter((s) => s.kind === 'missing');
  let info = '';
  if (present.length) {
    // As git apply reads them: line endings converted (a CRLF working file of an autocrlf=true user
    // is LF in the repository, as the patch's base and the agent's version are; raw, every line would
    // conflict), no filter driver run (a repository's drivers are commands; Baton runs none).
    const shas = (
      await runGit(['-c', 'core.safecrlf=false', 'hash-object', '-w', '--stdin-paths'], {
        cwd: root,
        input: present.map((s) => s.path).join('\n') + '\n',
        noFilterDrivers: true,
      })
    ).stdout
      .toString('utf8')
      .trim()
      .split('\n');
    present.forEach((s, i) => {
      const mode = s.kind === 'symlink' ? '120000' : (s.mode ?? 0) & 0o111 ? '100755' : '100644';
      info += `${mode} ${shas[i]}\t${s.path}\0`;
    });
  }
  for (const s of missing) info += `0 ${'0'.repeat(40)}\t${s.path}\0`;
  if (info) await runGit(['update-index', '-z', '--index-info'], { cwd: root, env, input: info });
  await runGit(['update-index', '-q', '--refresh'], { cwd: root, env, okCodes: [1], noFilterDrivers: true });
}

async function readConflicts(root: string, env: Record<string, string>): Promise<ConflictFile[]> {
  const out = (await runGit(['ls-files', '-u', '-z'], { cwd: root, env })).stdout.toString('utf8');
  const byPath = new Map<string, Record<string, string>>();
  for (const entry of out.split('\0')) {
    const m = /^\d+ ([0-9a-f]+) ([123])\t(.*)$/s.exec(entry);
    if (!m) continue;
    const stages = byPath.get(m[3]) ?? {};
    stages[m[2]] = m[1];
    byPath.set(m[3], stages);
  }
  const blob = async (sha: string | undefined): Promise<Buffer | undefined> =>
    sha ? (await runGit(['cat-file', 'blob', sha], { cwd: root })).stdout : undefined;
  const result: ConflictFile[] = [];
  for (const [path, st] of byPath)
    result.push({ path, base: await blob(st['1']), ours: await blob(st['2']), theirs: await blob(st['3']) });
  return result;
}

/** Aborts a 3-way merge (or any apply): restores the snapshot, whatever the files hold now. */
export function abortApply(pending: PendingMerge | AppliedPatch): string[] {
  return restoreSnapshot(pending.snapshot);
}

/** Paths of a pending merge that still hold conflict markers. */
export function unresolvedConflicts(pending: PendingMerge): string[] {
  return pending.conflicts
    .filter((c) => {
      try {
        return /^<{7} |^>{7} /m.test(readFileSync(insideRoot(pending.snapshot.root, c.path), 'utf8'));
      } catch {
        return false;
      }
    })
    .map((c) => c.path);
}

/** Completes a 3-way apply once the user resolved every conflict: records the final digests. */
export function finishMerge(pending: PendingMerge): AppliedPatch {
  const left = unresolvedConflicts(pending);
  if (left.length) throw new PatchApplyError({ code: 'conflict-markers', paths: left }, 'unresolved', left);
  const digests = pending.record.digests.map((d) => ({ ...d, after: currentDigest(pending.snapshot.root, d.path) }));
  return { record: { ...pending.record, digests }, snapshot: pending.snapshot };
}

/**
 * Undoes an apply by restoring the snapshot. Refuses (PatchApplyError 'edited-since', naming the files)
 * when any touched file changed after the apply: undoing would throw those edits away.
 */
export function undoApply(applied: AppliedPatch): string[] {
  const edited = applied.record.digests
    .filter((d) => currentDigest(applied.snapshot.root, d.path) !== d.after)
    .map((d) => d.path);
  if (edited.length) {
    throw new PatchApplyError({ code: 'edited-since-apply', paths: edited }, 'edited-since', edited);
  }
  return restoreSnapshot(applied.snapshot);
}

/**
 * Undoes several applies of one review, newest first, as one step: refuses (naming the files) when
 * any touched file changed after the apply that last wrote it, before restoring anything.
 */
export function undoApplies(applies: readonly AppliedPatch[]): string[] {
  const last = new Map<string, { root: string; after: string | null }>();
  for (const a of applies)
    for (const d of a.record.digests) last.set(d.path, { root: a.snapshot.root, after: d.after });
  const edited = [...last]
    .filter(([path, { root, after }]) => currentDigest(root, path) !== after)
    .map(([path]) => path);
  if (edited.length) {
    throw new PatchApplyError({ code: 'edited-since-apply', paths: edited }, 'edited-since', edited);
  }
  const restored = new Set<string>();
  for (const a of [...applies].reverse()) for (const p of restoreSnapshot(a.snapshot)) restored.add(p);
  return [...restored];
}

/** Paths whose current state differs from before the apply (e.g. to confirm an undo). */
export function differsFromSnapshot(snapshot: Snapshot): string[] {
  return changedSince(snapshot);
}
