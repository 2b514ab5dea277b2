// Users' real repositories and real git configurations, end to end: the throwaway copy, the agent's
// patch, the review's check and the apply back into the user's tree. Every test has its own HOME and
// global config (GIT_CONFIG_GLOBAL, XDG_CONFIG_HOME) through process.env (this file runs in its own
// process), never the machine's. For each case: the copy is made (or a clear error says what to do),
// the user's tree, index and .git are unchanged until the apply, the patch applies back exactly
// (bytes, modes, symlinks, line endings as the user's git writes them), and a conflicting apply fails
// with everything left as it was.
import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  symlinkSync,
  unlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, beforeEach, describe, it } from 'node:test';
import { defaultSelection } from '../../../src/core/patch/patchRisk';
import type { Workspace } from '../../../src/gateway/workspace/workspaceManager';
import { WorkspaceError, WorkspaceManager } from '../../../src/gateway/workspace/workspaceManager';
import { abortApply, applyReviewed, prepareReview } from '../../../src/node/patchApply';
import { captureWorkingState } from '../../../src/node/patchDrift';
import type { DriftBase } from '../../../src/node/patchDrift';
import type { ApplyOutcome, PatchReview } from '../../../src/node/patchApply';
import { fingerprint } from './repoFixtures';

const base = mkdtempSync(join(tmpdir(), 'baton-real-git-'));
after(() => rmSync(base, { recursive: true, force: true, maxRetries: 3 }));
let n = 0;

interface User {
  readonly dir: string;
  readonly home: string;
  readonly globalConfig: string;
  readonly manager: WorkspaceManager;
}

/** A fresh user: HOME, XDG_CONFIG_HOME and GIT_CONFIG_GLOBAL of their own, for Baton's git and the test's. */
function user(globalConfig = ''): User {
  const dir = join(base, `u${++n}`);
  const home = join(dir, 'home');
  mkdirSync(join(home, '.config'), { recursive: true });
  const file = join(home, '.gitconfig');
  writeFileSync(file, globalConfig);
  process.env.HOME = home;
  process.env.XDG_CONFIG_HOME = join(home, '.config');
  process.env.GIT_CONFIG_GLOBAL = file;
  const root = join(dir, 'ws');
  mkdirSync(root);
  return { dir, home, globalConfig: file, manager: new WorkspaceManager({ root, userHome: home }) };
}

beforeEach(() => {
  process.env.GIT_CONFIG_NOSYSTEM = '1';
  delete process.env.GIT_CONFIG_SYSTEM;
});

/** The user's own git: unhardened, with their global config. */
function ugit(u: User, cwd: string, ...args: string[]): string {
  return execFileSync('git', args, {
    cwd,
    encoding: 'utf8',
    env: {
      PATH: process.env.PATH ?? '',
      HOME: u.home,
      XDG_CONFIG_HOME: join(u.home, '.config'),
      GIT_CONFIG_GLOBAL: u.globalConfig,
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_AUTHOR_NAME: 'T',
      GIT_AUTHOR_EMAIL: 't@example.invalid',
      GIT_COMMITTER_NAME: 'T',
      GIT_COMMITTER_EMAIL: 't@example.invalid',
      GIT_AUTHOR_DATE: '2024-01-01T00:00:00Z',
      GIT_COMMITTER_DATE: '2024-01-01T00:00:00Z',
      GIT_PROTOCOL_FROM_USER: '1',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    maxBuffer: 256 * 1024 * 1024,
  }).trim();
}

function put(dir: string, rel: string, content: string | Buffer, mode?: number): void {
  const p = join(dir, rel);
  mkdirSync(dirname(p), { recursive: true });
  if (existsSync(p)) unlinkSync(p);
  writeFileSync(p, content);
  if (mode !== undefined) chmodSync(p, mode);
}

/**
 * A repository the user made: the files committed with their git (`-c` extras only for the commit),
 * then checked out again so the working tree has what their config makes, with the index older than
 * the files (no "racily clean" entries, as on a desktop).
 */
function userRepo(u: User, files: Record<string, string | Buffer>, name = 'repo'): string {
  const repo = join(u.dir, name);
  mkdirSync(repo, { recursive: true });
  ugit(u, repo, 'init', '-q');
  for (const [p, c] of Object.entries(files)) put(repo, p, c);
  ugit(u, repo, 'add', '-A');
  ugit(u, repo, '-c', 'commit.gpgSign=false', '-c', 'core.hooksPath=/dev/null', 'commit', '-q', '-m', 'initial');
  for (const p of Object.keys(files)) rmSync(join(repo, p), { force: true });
  ugit(u, repo, 'checkout', '--', '.');
  settle(u, repo);
  return repo;
}

/** Makes every file older than the index, then refreshes it: the index is as a desktop's. */
function settle(u: User, repo: string): void {
  const past = new Date(Date.now() - 60_000);
  const walk = (rel: string): void => {
    for (const name of readdirSync(join(repo, rel))) {
      if (name === '.git') continue;
      const r = rel ? `${rel}/${name}` : name;
      const st = lstatSync(join(repo, r));
      if (st.isDirectory()) walk(r);
      else if (st.isFile()) utimesSync(join(repo, r), past, past);
    }
  };
  walk('');
  try {
    ugit(u, repo, 'update-index', '-q', '--refresh');
  } catch {
    // exit 1 when something is modified
  }
}

type Entry = string;
/** Every path under dir except .git entries (any level) and `skip`: type, exec bit, bytes or link target. */
function tree(dir: string, skip: (rel: string) => boolean = () => false): Map<string, Entry> {
  const out = new Map<string, Entry>();
  const walk = (rel: string): void => {
    for (const name of readdirSync(join(dir, rel)).sort()) {
      if (name === '.git') continue;
      const r = rel ? `${rel}/${name}` : name;
      if (skip(r)) continue;
      const st = lstatSync(join(dir, r));
      if (st.isSymbolicLink()) out.set(r, `link -> ${readlinkSync(join(dir, r))}`);
      else if (st.isDirectory()) {
        const before = out.size;
        walk(r);
        if (out.size === before) out.set(r + '/', 'empty dir');
      } else
        out.set(
          r,
          `file ${st.mode & 0o111 ? 'x' : '-'} ${createHash('sha256')
            .update(readFileSync(join(dir, r)))
            .digest('hex')
            .slice(0, 16)} ${JSON.stringify(readFileSync(join(dir, r)).subarray(0, 60).toString('latin1'))}`,
        );
    }
  };
  walk('');
  return out;
}

function sameTree(actual: Map<string, Entry>, expected: Map<string, Entry>, what: string): void {
  assert.deepEqual(Object.fromEntries(actual), Object.fromEntries(expected), what);
}

async function review(u: User, repo: string, patch: string, base?: DriftBase): Promise<PatchReview> {
  const patchPath = join(u.dir, `changes-${++n}.patch`);
  writeFileSync(patchPath, patch);
  return prepareReview({ folder: repo, source: { path: patchPath }, base });
}

/** Applies every file, the risky ones too (as a user who allowed each after reading why it is flagged). */
async function applyAll(r: PatchReview): Promise<ApplyOutcome> {
  return applyReviewed(r, {
    selection: defaultSelection(
      r.patch,
      r.risks,
      r.risks.items.map((i) => i.id),
    ),
  });
}

interface RoundTrip {
  readonly ws: Workspace;
  readonly patch: string;
  readonly review: PatchReview;
  readonly outcome: ApplyOutcome;
}

/**
 * The whole loop: the copy equals the user's working tree (except `notInCopy`), nothing of the user's
 * changes while the copy is made and the patch recorded, the agent's `edit` comes back as a patch that
 * applies, and afterwards the user's tree equals the agent's folder (except `skip` paths).
 */
async function roundTrip(
  u: User,
  repo: string,
  edit: (dir: string) => void,
  opts: {
    readonly repoPath?: string;
    readonly skip?: (rel: string) => boolean;
    readonly copyDiffers?: (copy: Map<string, Entry>, user: Map<string, Entry>) => void;
  } = {},
): Promise<RoundTrip> {
  const skip = opts.skip ?? (() => false);
  const before = fingerprint(repo);
  // What a delegation's start records, for the review's drift report.
  const base = await captureWorkingState(repo);
  const ws = await u.manager.prepare({ taskId: `t${++n}`, repoPath: opts.repoPath ?? repo });
  try {
    assert.equal(fingerprint(repo), before, 'making the copy changed nothing of the user’s');
    if (opts.copyDiffers) opts.copyDiffers(tree(ws.dir), tree(repo));
    else sameTree(tree(ws.dir, skip), tree(repo, skip), 'the copy is the user’s working tree');
    edit(ws.dir);
    const { patch, destroyed } = await u.manager.changes(ws);
    assert.equal(destroyed, undefined);
    assert.equal(fingerprint(repo), before, 'recording the patch changed nothing of the user’s');
    const expected = tree(ws.dir, skip);
    const r = await review(u, repo, patch, base);
    assert.equal(fingerprint(repo), before, 'the review changed nothing of the user’s');
    assert.deepEqual(r.drift?.changedFiles, [], 'nothing drifted');
    assert.equal(r.drift?.uncommittedChanged, false);
    assert.equal(r.check.ok, true, `check: ${JSON.stringify(r.check)}\n${patch}`);
    const indexBefore = readFileSync(join(gitDirOf(u, repo), 'index'));
    const outcome = await applyAll(r);
    assert.equal(outcome.kind, 'applied', JSON.stringify(outcome));
    sameTree(tree(repo, skip), expected, 'after the apply the user’s tree is the agent’s folder');
    assert.deepEqual(readFileSync(join(gitDirOf(u, repo), 'index')), indexBefore, 'the index is not touched');
    return { ws, patch, review: r, outcome };
  } finally {
    await u.manager.remove(ws);
  }
}

function gitDirOf(u: User, repo: string): string {
  return ugit(u, repo, 'rev-parse', '--path-format=absolute', '--git-dir');
}

/** A conflicting apply: the user changed `path` after the copy was made; everything stays as it was. */
async function conflictStays(u: User, repo: string, patch: string, change: () => void): Promise<void> {
  change();
  const before = fingerprint(repo);
  const r = await review(u, repo, patch);
  assert.equal(r.check.ok, false, 'the check says it does not apply');
  const outcome = await applyAll(r);
  assert.equal(outcome.kind, 'failed', JSON.stringify(outcome));
  if (outcome.kind === 'failed') assert.ok(outcome.message.length > 0);
  assert.equal(fingerprint(repo), before, 'a failed apply leaves everything as it was');
}

const lines = (k: number, tag = 'line'): string => Array.from({ length: k }, (_, i) => `${tag} ${i + 1}\n`).join('');

describe('line endings', () => {
  it('core.autocrlf=true with .gitattributes (text=auto, eol=crlf, binary, -diff) round-trips byte for byte', async () => {
    const u = user('[core]\n\tautocrlf = true\n');
    const repo = userRepo(u, {
      '.gitattributes':
        '* text=auto\n*.bat eol=crlf\n*.sh eol=lf\n*.png binary\n*.dat -diff\n*.ps1 text working-tree-encoding=UTF-16LE eol=crlf\n',
      'script.ps1': Buffer.from('Write-Host one\r\nWrite-Host two\r\n', 'utf16le'),
      'a.txt': lines(10),
      'run.bat': 'echo one\necho two\n',
      'run.sh': 'echo one\necho two\n',
      'img.png': Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 1, 2, 0x0a, 3]),
      'blob.dat': 'not\r\ndiffed\n',
    });
    assert.equal(readFileSync(join(repo, 'a.txt'), 'utf8'), lines(10).replace(/\n/g, '\r\n'));
    assert.equal(readFileSync(join(repo, 'run.sh'), 'utf8'), 'echo one\necho two\n');
    assert.equal(readFileSync(join(repo, 'script.ps1'), 'utf16le'), 'Write-Host one\r\nWrite-Host two\r\n');
    const { patch } = await roundTrip(u, repo, (d) => {
      put(d, 'a.txt', readFileSync(join(d, 'a.txt'), 'utf8').replace('line 3\r\n', 'LINE 3\r\n'));
      put(d, 'run.bat', 'echo one\r\necho TWO\r\n');
      put(d, 'run.sh', 'echo one\necho TWO\n');
      put(d, 'img.png', Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 9, 9, 9, 0x0a]));
      put(d, 'blob.dat', 'changed\r\nbytes\r\n');
      put(d, 'new.txt', 'added\r\nby the agent\r\n');
      put(d, 'script.ps1', Buffer.from('Write-Host one\r\nWrite-Host TWO\r\n', 'utf16le'));
    });
    assert.match(patch, /^\+LINE 3$/m, 'the patch is in the repository’s form (LF)');
    assert.match(patch, /GIT binary patch/);
    assert.equal(readFileSync(join(repo, 'new.txt'), 'utf8'), 'added\r\nby the agent\r\n');
  });

  it('core.autocrlf=input: files are copied and applied as the user’s git writes them (LF)', async () => {
    const u = user('[core]\n\tautocrlf = input\n');
    const repo = userRepo(u, { 'a.txt': lines(5) });
    put(repo, 'untracked-crlf.txt', 'one\r\ntwo\r\n');
    // autocrlf=input stores LF and never writes CR: like `git stash -u && git stash pop`, the copy has the
    // untracked CRLF file as the user's git checks it out, and git apply writes the agent's edit with LF.
    const { patch } = await roundTrip(
      u,
      repo,
      (d) => {
        put(d, 'a.txt', lines(5).replace('line 2', 'LINE 2'));
        put(d, 'untracked-crlf.txt', 'one\nTWO\n');
      },
      {
        copyDiffers: (copy, mine) => {
          assert.equal(copy.get('untracked-crlf.txt')?.endsWith('"one\\ntwo\\n"'), true);
          assert.equal(mine.get('untracked-crlf.txt')?.endsWith('"one\\r\\ntwo\\r\\n"'), true);
        },
      },
    );
    assert.doesNotMatch(patch, /\r/, 'autocrlf=input stores LF');
  });

  for (const [where, set] of [
    [
      'core.autocrlf in the repository’s own config',
      (repo: string, u: User) => ugit(u, repo, 'config', 'core.autocrlf', 'true'),
    ],
    [
      'core.eol in the repository’s own config',
      (repo: string, u: User) => {
        ugit(u, repo, 'config', 'core.eol', 'crlf');
        put(repo, '.gitattributes', '*.txt text\n');
      },
    ],
    ['the repository’s info/attributes', (repo: string) => put(repo, '.git/info/attributes', '*.txt text eol=crlf\n')],
  ] as const)
    it(`${where} (not the global config) is honoured for the copy and the apply`, async () => {
      const u = user('');
      const repo = join(u.dir, 'repo');
      mkdirSync(repo);
      ugit(u, repo, 'init', '-q');
      set(repo, u);
      put(repo, 'a.txt', lines(5));
      ugit(u, repo, 'add', '-A');
      ugit(u, repo, 'commit', '-q', '-m', 'x');
      rmSync(join(repo, 'a.txt'));
      ugit(u, repo, 'checkout', '--', '.');
      settle(u, repo);
      assert.equal(readFileSync(join(repo, 'a.txt'), 'utf8'), lines(5).replace(/\n/g, '\r\n'));
      put(repo, 'modified.txt', 'user\r\nfile\r\n');
      const { patch, ws } = await roundTrip(u, repo, (d) => {
        put(d, 'a.txt', readFileSync(join(d, 'a.txt'), 'utf8').replace('line 2', 'LINE 2'));
        put(d, 'modified.txt', 'user\r\nFILE\r\n');
        put(d, 'b.txt', 'new\r\n');
      });
      assert.doesNotMatch(patch, /\r/, 'the patch is in the repository’s form (LF)');
      assert.match(ws.notes.join('\n'), /includes 1 uncommitted change/, 'only modified.txt');
    });

  it('core.safecrlf=true: a file with mixed line endings, in the agent’s output or the user’s tree, stops nothing', async () => {
    const u = user('[core]\n\tautocrlf = true\n');
    const repo = userRepo(u, { 'a.txt': lines(5), 'b.txt': 'one\ntwo\nthree\n' });
    writeFileSync(u.globalConfig, '[core]\n\tautocrlf = true\n\tsafecrlf = true\n');
    // What the user's git makes of a file with mixed endings under autocrlf=true: every line CRLF.
    const ws = await u.manager.prepare({ taskId: `t${++n}`, repoPath: repo });
    try {
      put(ws.dir, 'b.txt', 'one\r\nTWO\nthree\r\n');
      put(ws.dir, 'agent-mixed.txt', 'x\ny\r\n');
      const { patch } = await u.manager.changes(ws);
      const outcome = await applyAll(await review(u, repo, patch));
      assert.equal(outcome.kind, 'applied', JSON.stringify(outcome));
      assert.equal(readFileSync(join(repo, 'b.txt'), 'utf8'), 'one\r\nTWO\r\nthree\r\n');
      assert.equal(readFileSync(join(repo, 'agent-mixed.txt'), 'utf8'), 'x\r\ny\r\n');
    } finally {
      await u.manager.remove(ws);
    }
    put(repo, 'mixed.txt', 'one\r\ntwo\nthree\r\n');
    await roundTrip(u, repo, (d) => put(d, 'mixed.txt', 'one\r\nTWO\r\nthree\r\n'), {
      copyDiffers: (copy, mine) => {
        assert.equal(copy.get('mixed.txt')?.endsWith('"one\\r\\ntwo\\r\\nthree\\r\\n"'), true);
        assert.equal(mine.get('mixed.txt')?.endsWith('"one\\r\\ntwo\\nthree\\r\\n"'), true);
      },
    });
  });
});

/** The working files and the index (a 3-way merge writes blobs into the object store, nothing else). */
function filesAndIndex(repo: string): { files: Record<string, Entry>; index: string } {
  return {
    files: Object.fromEntries(tree(repo)),
    index: createHash('sha256')
      .update(readFileSync(join(repo, '.git', 'index')))
      .digest('hex'),
  };
}

describe('a 3-way apply', () => {
  for (const config of ['', '[core]\n\tautocrlf = true\n'])
    it(`merges the user's later edit with the agent's${config ? ' (core.autocrlf=true)' : ''}`, async () => {
      const u = user(config);
      const repo = userRepo(u, { 'a.txt': lines(10) });
      const eol = config ? '\r\n' : '\n';
      const ws = await u.manager.prepare({ taskId: `t${++n}`, repoPath: repo });
      let patch: string;
      try {
        put(ws.dir, 'a.txt', lines(10).replace('line 4\n', 'agent 4\n').replace(/\n/g, eol));
        patch = (await u.manager.changes(ws)).patch;
      } finally {
        await u.manager.remove(ws);
      }
      // The user edits line 1, inside the patch's context: it no longer applies as it is.
      put(repo, 'a.txt', lines(10).replace('line 1\n', 'user 1\n').replace(/\n/g, eol));
      const before = filesAndIndex(repo);
      const r = await review(u, repo, patch);
      assert.equal(r.check.ok, false);
      const outcome = await applyReviewed(r, { selection: defaultSelection(r.patch, r.risks), threeWay: true });
      assert.equal(outcome.kind, 'applied', JSON.stringify(outcome));
      assert.equal(
        readFileSync(join(repo, 'a.txt'), 'utf8'),
        lines(10).replace('line 1\n', 'user 1\n').replace('line 4\n', 'agent 4\n').replace(/\n/g, eol),
      );
      if (outcome.kind === 'applied') abortApply(outcome.applied);
      assert.deepEqual(filesAndIndex(repo), before, 'undone, the tree and index are as they were');

      // The user edits the agent's line too: a conflict on that line only, and aborting restores everything.
      put(repo, 'a.txt', lines(10).replace('line 1\n', 'user 1\n').replace('line 4\n', 'user 4\n').replace(/\n/g, eol));
      const conflicted = filesAndIndex(repo);
      const r2 = await review(u, repo, patch);
      const merge = await applyReviewed(r2, { selection: defaultSelection(r2.patch, r2.risks), threeWay: true });
      assert.equal(merge.kind, 'conflicts', JSON.stringify(merge));
      if (merge.kind !== 'conflicts') return;
      const marked = readFileSync(join(repo, 'a.txt'), 'utf8');
      assert.match(marked, /^user 1\r?\n/, 'the lines without a conflict are merged, not put between markers');
      assert.match(marked, /<<<<<<< [^\n]*\r?\nuser 4\r?\n=======\r?\nagent 4\r?\n>>>>>>> /);
      assert.deepEqual(
        merge.pending.conflicts.map((c) => c.path),
        ['a.txt'],
      );
      abortApply(merge.pending);
      assert.deepEqual(filesAndIndex(repo), conflicted, 'aborted, the tree and index are as they were');
    });
});

describe('file names', () => {
  it('spaces, NFC and NFD unicode, leading dashes, quotes, backslashes and tabs in names', async () => {
    const u = user('');
    const nfc = 'caf\u00e9.txt';
    const nfd = 'cafe\u0301-nfd.txt';
    const repo = userRepo(u, {
      'with space.txt': 'a\n',
      [nfc]: 'nfc\n',
      [nfd]: 'nfd\n',
      '-dash.txt': 'dash\n',
      '--double.txt': 'dd\n',
      'quo"te.txt': 'q\n',
      "apo'strophe.txt": 'a\n',
      'back\\slash.txt': 'b\n',
      'tab\there.txt': 't\n',
      'dir with space/ünïcödé name.md': 'u\n',
    });
    put(repo, 'untracked -x "y".txt', 'untracked\n');
    await roundTrip(u, repo, (d) => {
      put(d, 'with space.txt', 'A\n');
      put(d, nfc, 'NFC\n');
      put(d, nfd, 'NFD\n');
      put(d, '-dash.txt', 'DASH\n');
      renameSync(join(d, '--double.txt'), join(d, '--renamed "x".txt'));
      put(d, 'quo"te.txt', 'Q\n');
      unlinkSync(join(d, "apo'strophe.txt"));
      put(d, 'back\\slash.txt', 'B\n');
      put(d, 'tab\there.txt', 'T\n');
      put(d, 'dir with space/ünïcödé name.md', 'U\n');
      put(d, 'untracked -x "y".txt', 'edited\n');
      put(d, '-new file "z".txt', 'new\n');
    });
  });
});

describe('kinds of change', () => {
  it('exec bit, rename, copy, delete, binary, empty files and no trailing newline', async () => {
    const u = user('');
    const repo = userRepo(u, {
      'run.sh': 'echo hi\n',
      'old.txt': lines(30),
      'src.txt': lines(30, 'copy'),
      'gone.txt': 'bye\n',
      'bin.dat': Buffer.from([0, 1, 2, 3, 255]),
      'empty.txt': '',
      'becomes-empty.txt': 'x\n',
      'no-eol.txt': 'one\ntwo',
      'gets-eol.txt': 'one\ntwo',
    });
    chmodSync(join(repo, 'run.sh'), 0o755);
    ugit(u, repo, 'add', '-A');
    ugit(u, repo, 'commit', '-q', '-m', 'exec');
    settle(u, repo);
    await roundTrip(u, repo, (d) => {
      chmodSync(join(d, 'run.sh'), 0o644);
      renameSync(join(d, 'old.txt'), join(d, 'new.txt'));
      put(d, 'copied.txt', readFileSync(join(d, 'src.txt')));
      unlinkSync(join(d, 'gone.txt'));
      put(d, 'bin.dat', Buffer.from([0, 1, 2, 3, 254, 0]));
      unlinkSync(join(d, 'empty.txt'));
      put(d, 'becomes-empty.txt', '');
      put(d, 'new-empty.txt', '');
      put(d, 'no-eol.txt', 'one\nTWO');
      put(d, 'gets-eol.txt', 'one\ntwo\n');
      put(d, 'new-no-eol.txt', 'last');
      put(d, 'new-exec.sh', '#!/bin/sh\n', 0o755);
    });
  });
});

describe('symlinks', () => {
  it('in-repo links and links pointing outside the repository are copied as links and their changes apply', async () => {
    const u = user('');
    const repo = userRepo(u, { 'target.txt': 't\n', 'other.txt': 'o\n' });
    symlinkSync('target.txt', join(repo, 'in.lnk'));
    symlinkSync('../../outside', join(repo, 'out.lnk'));
    symlinkSync('/etc/hostname', join(repo, 'abs.lnk'));
    ugit(u, repo, 'add', '-A');
    ugit(u, repo, 'commit', '-q', '-m', 'links');
    settle(u, repo);
    symlinkSync('other.txt', join(repo, 'untracked.lnk'));
    const { review: r } = await roundTrip(u, repo, (d) => {
      unlinkSync(join(d, 'in.lnk'));
      symlinkSync('other.txt', join(d, 'in.lnk'));
      symlinkSync('target.txt', join(d, 'new.lnk'));
    });
    assert.ok(r.patch.files.length >= 2);
  });
});

describe('core.symlinks=false (Git for Windows without the right to make links)', () => {
  it('links are plain files holding their targets, in the user’s tree and the copy alike; a changed target is refused saying why, the rest applies', async () => {
    const u = user('');
    const repo = join(u.dir, 'repo');
    mkdirSync(repo);
    ugit(u, repo, 'init', '-q');
    put(repo, 'target.txt', 't\n');
    put(repo, 'other.txt', 'o\n');
    symlinkSync('target.txt', join(repo, 'link'));
    put(repo, 'a.txt', 'a\n');
    ugit(u, repo, 'add', '-A');
    ugit(u, repo, '-c', 'commit.gpgSign=false', 'commit', '-q', '-m', 'initial');
    ugit(u, repo, 'config', 'core.symlinks', 'false');
    rmSync(join(repo, 'link'));
    ugit(u, repo, 'checkout', '--', 'link');
    settle(u, repo);
    assert.equal(readFileSync(join(repo, 'link'), 'utf8'), 'target.txt', 'the user has a plain file');
    assert.equal(ugit(u, repo, 'status', '--porcelain'), '');
    const { ws } = await roundTrip(u, repo, (d) => put(d, 'a.txt', 'agent\n'));
    assert.doesNotMatch(ws.notes.join('\n'), /uncommitted change/, 'the plain file is no change of the user’s');
    assert.equal(ugit(u, repo, 'status', '--porcelain'), 'M a.txt');
    // Git itself cannot apply a change to a link there ("wrong type"): the review says why.
    const copy = await u.manager.prepare({ taskId: `t${++n}`, repoPath: repo });
    let patch: string;
    try {
      assert.equal(readFileSync(join(copy.dir, 'link'), 'utf8'), 'target.txt', 'a plain file in the copy too');
      writeFileSync(join(copy.dir, 'link'), 'other.txt');
      put(copy.dir, 'other.txt', 'o2\n');
      patch = (await u.manager.changes(copy)).patch;
    } finally {
      await u.manager.remove(copy);
    }
    assert.match(patch, /diff --git a\/link b\/link\nindex \w+\.\.\w+ 120000\n/, 'a change of the link’s target');
    const r = await review(u, repo, patch);
    const link = r.check.files.find((f) => f.path === 'link');
    assert.match(
      link?.errors[0] ?? '',
      /^link is a symbolic link in the repository, and this checkout has core\.symlinks=false/,
    );
    assert.equal(r.check.files.find((f) => f.path === 'other.txt')?.ok, true);
    const outcome = await applyReviewed(r, { selection: { files: ['other.txt'] } });
    assert.equal(outcome.kind, 'applied', JSON.stringify(outcome));
    assert.equal(readFileSync(join(repo, 'other.txt'), 'utf8'), 'o2\n');
  });
});

describe('submodules', () => {
  it('an initialised and an uninitialised submodule: the copy says so, and the agent’s other edits apply', async () => {
    const u = user('[protocol "file"]\n\tallow = always\n');
    const lib = userRepo(u, { 'lib.txt': 'lib\n' }, 'lib');
    const other = userRepo(u, { 'o.txt': 'o\n' }, 'other');
    const repo = userRepo(u, { 'a.txt': lines(5) });
    ugit(u, repo, 'submodule', 'add', '-q', lib, 'sub-init');
    ugit(u, repo, 'submodule', 'add', '-q', other, 'sub-uninit');
    ugit(u, repo, '-c', 'commit.gpgSign=false', 'commit', '-q', '-m', 'subs');
    ugit(u, repo, 'submodule', 'deinit', '-q', '-f', 'sub-uninit');
    settle(u, repo);
    put(join(repo, 'sub-init'), 'lib.txt', 'changed inside the submodule\n');
    const insideSub = (rel: string): boolean => rel === 'sub-init' || rel.startsWith('sub-init/');
    const { ws } = await roundTrip(
      u,
      repo,
      (d) => {
        put(d, 'a.txt', lines(5).replace('line 1', 'LINE 1'));
        put(d, '.gitmodules', readFileSync(join(d, '.gitmodules'), 'utf8') + '# note\n');
      },
      { skip: insideSub },
    );
    assert.match(
      ws.notes.join('\n'),
      /Submodules are not checked out in the copy.*sub-init.*sub-uninit|sub-uninit.*sub-init/,
    );
    assert.equal(readFileSync(join(repo, 'sub-init', 'lib.txt'), 'utf8'), 'changed inside the submodule\n');
  });

  it('files the agent writes inside an empty submodule folder do not turn into a patch that replaces the submodule', async () => {
    const u = user('[protocol "file"]\n\tallow = always\n');
    const lib = userRepo(u, { 'lib.txt': 'lib\n' }, 'lib');
    const repo = userRepo(u, { 'a.txt': 'a\n' });
    ugit(u, repo, 'submodule', 'add', '-q', lib, 'sub');
    ugit(u, repo, '-c', 'commit.gpgSign=false', 'commit', '-q', '-m', 'sub');
    settle(u, repo);
    const ws = await u.manager.prepare({ taskId: `t${++n}`, repoPath: repo });
    try {
      put(ws.dir, 'sub/new.txt', 'written in the submodule folder\n');
      put(ws.dir, 'a.txt', 'A\n');
      const { patch } = await u.manager.changes(ws);
      assert.doesNotMatch(patch, /\bsub\b/, 'the submodule is not in the patch (the notes say so)');
      const r = await review(u, repo, patch);
      const outcome = await applyAll(r);
      assert.equal(outcome.kind, 'applied', JSON.stringify(outcome));
      assert.equal(readFileSync(join(repo, 'a.txt'), 'utf8'), 'A\n');
      assert.equal(readFileSync(join(repo, 'sub', 'lib.txt'), 'utf8'), 'lib\n');
      assert.equal(ugit(u, repo, 'ls-files', '-s', 'sub').slice(0, 6), '160000');
    } finally {
      await u.manager.remove(ws);
    }
  });
});

describe('Git LFS without git-lfs installed', () => {
  it('filter.lfs.required=true with a missing git-lfs: pointer files are copied and edited as they are', async () => {
    const pointer = (oid: string): string =>
      `version https://git-lfs.github.com/spec/v1\noid sha256:${oid.repeat(64 / oid.length)}\nsize 12345\n`;
    const u = user('');
    const repo = userRepo(u, {
      '.gitattributes': '*.bin filter=lfs diff=lfs merge=lfs -text\n',
      'big.bin': pointer('a'),
      'a.txt': 'a\n',
    });
    writeFileSync(
      u.globalConfig,
      '[filter "lfs"]\n\tclean = git-lfs clean -- %f\n\tsmudge = git-lfs smudge -- %f\n\tprocess = git-lfs filter-process\n\trequired = true\n',
    );
    put(repo, 'new.bin', pointer('b'));
    const { ws } = await roundTrip(u, repo, (d) => {
      put(d, 'big.bin', pointer('c'));
      put(d, 'a.txt', 'A\n');
      put(d, 'agent.bin', pointer('d'));
    });
    assert.match(ws.notes.join('\n'), /Git LFS/);
  });
});

describe('Git LFS set up in the repository’s own config, git-lfs missing', () => {
  it('the pointer files are copied, edited and applied', async () => {
    const pointer = (oid: string): string =>
      `version https://git-lfs.github.com/spec/v1\noid sha256:${oid.repeat(64 / oid.length)}\nsize 12345\n`;
    const u = user('');
    const repo = userRepo(u, {
      '.gitattributes': '*.bin filter=lfs diff=lfs merge=lfs -text\n',
      'big.bin': pointer('a'),
      'a.txt': 'a\n',
    });
    for (const [k, v] of [
      ['filter.lfs.clean', 'git-lfs clean -- %f'],
      ['filter.lfs.smudge', 'git-lfs smudge -- %f'],
      ['filter.lfs.process', 'git-lfs filter-process'],
      ['filter.lfs.required', 'true'],
    ])
      ugit(u, repo, 'config', k, v);
    await roundTrip(u, repo, (d) => {
      put(d, 'big.bin', pointer('c'));
      put(d, 'agent.bin', pointer('d'));
    });
  });
});

describe('a clean filter in the repository’s own config (nbstripout-like)', () => {
  it('is never run: the agent edits the file as it is, and the patch applies to it as it is', async () => {
    const u = user('');
    const repo = userRepo(u, { 'nb.ipynb': 'cell 1\ncell 2\n', 'a.txt': 'a\n' });
    const marker = join(u.dir, 'filter-ran');
    const strip = join(u.dir, 'strip.sh');
    writeFileSync(strip, `#!/bin/sh\necho ran >> '${marker}'\ngrep -v '^output'\n`, { mode: 0o755 });
    put(repo, '.gitattributes', '*.ipynb filter=strip\n');
    ugit(u, repo, 'add', '.gitattributes');
    ugit(u, repo, '-c', 'commit.gpgSign=false', 'commit', '-q', '-m', 'attrs');
    ugit(u, repo, 'config', 'filter.strip.clean', strip);
    put(repo, 'nb.ipynb', 'cell 1\noutput of cell 1\ncell 2\n');
    rmSync(marker, { force: true });
    await roundTrip(u, repo, (d) => put(d, 'nb.ipynb', 'cell 1\noutput of cell 1\ncell 2 edited\n'));
    assert.equal(existsSync(marker), false, 'the filter never ran');
  });
});

describe('sparse checkout', () => {
  for (const sparseIndex of [false, true])
    it(`cone mode${sparseIndex ? ' with a sparse index' : ''}: the agent sees and edits every file; a patch to files outside the cone fails saying what to do`, async () => {
      const u = user('');
      const repo = userRepo(u, { 'in/a.txt': 'a\n', 'out/b.txt': 'b\n', 'top.txt': 't\n' });
      ugit(u, repo, 'sparse-checkout', 'set', '--cone', ...(sparseIndex ? ['--sparse-index'] : []), 'in');
      settle(u, repo);
      assert.equal(existsSync(join(repo, 'out/b.txt')), false);
      put(repo, 'in/untracked.txt', 'u\n');
      const { ws } = await roundTrip(u, repo, (d) => put(d, 'in/a.txt', 'A\n'), {
        copyDiffers: (copy, mine) => {
          assert.equal(copy.get('out/b.txt')?.endsWith('"b\\n"'), true, 'the agent sees the whole tree');
          copy.delete('out/b.txt');
          sameTree(copy, mine, 'the rest of the copy is the user’s tree');
        },
        skip: (rel) => rel === 'out' || rel.startsWith('out/'),
      });
      assert.match(ws.notes.join('\n'), /includes 1 uncommitted change/, 'only the untracked file');
      const ws2 = await u.manager.prepare({ taskId: `t${++n}`, repoPath: repo });
      try {
        put(ws2.dir, 'out/b.txt', 'B\n');
        const { patch } = await u.manager.changes(ws2);
        const before = fingerprint(repo);
        const r = await review(u, repo, patch);
        assert.equal(r.check.ok, false);
        const says = /out\/b\.txt is outside your sparse checkout.*git sparse-checkout add "out"/;
        assert.match(r.check.files[0].errors.join('\n'), says);
        const outcome = await applyAll(r);
        assert.equal(outcome.kind, 'failed');
        if (outcome.kind === 'failed') assert.match(outcome.message, says);
        assert.equal(fingerprint(repo), before);
      } finally {
        await u.manager.remove(ws2);
      }
    });
});

describe('the user’s index', () => {
  it('a file rewritten with the same size in the same tick as `git add` ("racily clean") is copied as it is now', async () => {
    const u = user('');
    const repo = userRepo(u, { 'racy.txt': 'committed\n', 'other.txt': 'o\n' });
    // The state such a rewrite leaves, made on purpose (a minute ago, so the copy is made in a later
    // second): the index entry has the file's stat data but the blob staged before (same size), and
    // the index was written in the same second as the file. Git trusts no such entry and hashes the
    // file again; so must Baton, whose copy of the index is made later.
    put(repo, 'racy.txt', 'version 2\n');
    ugit(u, repo, 'add', 'racy.txt');
    const v1 = execFileSync('git', ['hash-object', '-w', '--stdin'], { cwd: repo, input: 'version 1\n' });
    const past = Math.floor(Date.now() / 1000) - 60;
    utimesSync(join(repo, 'racy.txt'), past, past);
    const st = lstatSync(join(repo, 'racy.txt'), { bigint: true });
    const indexFile = join(repo, '.git', 'index');
    const index = readFileSync(indexFile);
    const at = index.indexOf(Buffer.from('racy.txt\0')) - 62;
    assert.equal(index.subarray(at + 40, at + 60).toString('hex'), ugit(u, repo, 'rev-parse', ':racy.txt'));
    index.writeUInt32BE(Number(st.ctimeNs / 1_000_000_000n), at);
    index.writeUInt32BE(Number(st.ctimeNs % 1_000_000_000n), at + 4);
    index.writeUInt32BE(past, at + 8);
    index.writeUInt32BE(0, at + 12);
    Buffer.from(v1.toString().trim(), 'hex').copy(index, at + 40);
    createHash('sha1')
      .update(index.subarray(0, index.length - 20))
      .digest()
      .copy(index, index.length - 20);
    writeFileSync(indexFile, index);
    utimesSync(indexFile, past, past);
    assert.equal(ugit(u, repo, 'diff-files', '--name-only'), 'racy.txt', 'the user’s git sees the change');
    await roundTrip(u, repo, (d) => put(d, 'other.txt', 'O\n'));
    assert.equal(readFileSync(join(repo, 'racy.txt'), 'utf8'), 'version 2\n');
  });

  it('an assume-unchanged file the agent edits is in the patch', async () => {
    const u = user('');
    const repo = userRepo(u, { 'config.local': 'committed\n', 'a.txt': 'a\n' });
    ugit(u, repo, 'update-index', '--assume-unchanged', 'config.local');
    await roundTrip(u, repo, (d) => put(d, 'config.local', 'edited by the agent\n'));
  });
});

describe('where the user works', () => {
  it('a linked worktree with uncommitted, staged and untracked changes', async () => {
    const u = user('');
    const main = userRepo(u, { 'a.txt': lines(5), 'b.txt': 'b\n' });
    const wt = join(u.dir, 'linked');
    ugit(u, main, 'worktree', 'add', '-q', '-b', 'feature', wt);
    settle(u, wt);
    put(wt, 'a.txt', lines(5).replace('line 5', 'user line 5'));
    put(wt, 'b.txt', 'b staged\n');
    ugit(u, wt, 'add', 'b.txt');
    put(wt, 'c.txt', 'untracked\n');
    const mainBefore = tree(main);
    await roundTrip(u, wt, (d) => {
      put(d, 'a.txt', readFileSync(join(d, 'a.txt'), 'utf8').replace('line 1', 'agent line 1'));
      put(d, 'c.txt', 'untracked, edited\n');
    });
    assert.equal(
      readFileSync(join(wt, 'a.txt'), 'utf8'),
      lines(5).replace('line 5', 'user line 5').replace('line 1', 'agent line 1'),
    );
    assert.equal(ugit(u, wt, 'diff', '--cached', '--name-only'), 'b.txt', 'what the user staged stays staged');
    sameTree(tree(main), mainBefore, 'the main worktree is untouched');
  });

  it('a detached HEAD, an unborn branch under init.defaultBranch, and a subfolder as the starting point', async () => {
    const u = user('[init]\n\tdefaultBranch = trunk\n');
    const repo = userRepo(u, { 'a.txt': 'a\n', 'sub/b.txt': 'b\n' });
    assert.equal(ugit(u, repo, 'symbolic-ref', '--short', 'HEAD'), 'trunk');
    ugit(u, repo, 'checkout', '-q', '--detach');
    const { ws } = await roundTrip(u, repo, (d) => put(d, 'sub/b.txt', 'B\n'), { repoPath: join(repo, 'sub') });
    assert.match(ws.notes.join('\n'), /detached HEAD/);

    const unborn = join(u.dir, 'unborn');
    mkdirSync(unborn);
    ugit(u, unborn, 'init', '-q');
    put(unborn, 'x.txt', 'x\n');
    put(unborn, 'staged.txt', 's\n');
    ugit(u, unborn, 'add', 'staged.txt');
    const r2 = await roundTrip(u, unborn, (d) => put(d, 'x.txt', 'X\n'));
    assert.match(r2.ws.notes.join('\n'), /no commits yet/);
  });

  it('uncommitted, staged and untracked work is in the copy and survives the apply; a conflicting apply loses nothing', async () => {
    const u = user('');
    const repo = userRepo(u, { 'a.txt': lines(20), 'b.txt': lines(20, 'b'), 'gone.txt': 'g\n' });
    put(repo, 'a.txt', lines(20).replace('line 18', 'user 18'));
    ugit(u, repo, 'add', 'a.txt');
    put(repo, 'a.txt', lines(20).replace('line 18', 'user 18').replace('line 19', 'user 19'));
    put(repo, 'b.txt', lines(20, 'b').replace('b 20', 'user b 20'));
    put(repo, 'notes/todo.md', 'untracked\n');
    unlinkSync(join(repo, 'gone.txt'));
    put(repo, '.gitignore', 'ignored.log\n');
    put(repo, 'ignored.log', 'not in the copy\n');
    const stagedBefore = ugit(u, repo, 'diff', '--cached');
    const { patch } = await roundTrip(
      u,
      repo,
      (d) => {
        put(d, 'a.txt', readFileSync(join(d, 'a.txt'), 'utf8').replace('line 2\n', 'agent 2\n'));
        put(d, 'notes/todo.md', 'untracked\nagent\n');
      },
      { skip: (rel) => rel === 'ignored.log' },
    );
    assert.equal(ugit(u, repo, 'diff', '--cached'), stagedBefore, 'the staged change is as it was');
    assert.equal(readFileSync(join(repo, 'ignored.log'), 'utf8'), 'not in the copy\n');
    assert.equal(readFileSync(join(repo, 'b.txt'), 'utf8'), lines(20, 'b').replace('b 20', 'user b 20'));
    // The same patch again, now on a tree where it no longer applies.
    await conflictStays(u, repo, patch, () => put(repo, 'a.txt', lines(20).replace('line 2\n', 'user 2\n')));
  });
});

describe('hostile or broken user settings', () => {
  it('commit.gpgsign with no key, failing hooks in core.hooksPath, a missing core.fsmonitor program (global and local)', async () => {
    const hooks = join(base, `hooks${++n}`);
    mkdirSync(hooks);
    for (const h of ['post-checkout', 'pre-commit', 'post-index-change', 'reference-transaction', 'pre-applypatch'])
      writeFileSync(join(hooks, h), `#!/bin/sh\necho ${h} >> '${hooks}/ran'\nexit 1\n`, { mode: 0o755 });
    const broken = [
      '[commit]',
      '\tgpgSign = true',
      '[user]',
      '\tsigningKey = DEADBEEF',
      '[gpg]',
      `\tprogram = ${join(base, 'no-gpg')}`,
      '[core]',
      `\thooksPath = ${hooks}`,
      `\tfsmonitor = ${join(base, 'no-such-fsmonitor')}`,
      '',
    ].join('\n');
    const u = user('');
    const repo = userRepo(u, { 'a.txt': 'a\n' });
    writeFileSync(u.globalConfig, broken);
    ugit(u, repo, 'config', 'core.fsmonitor', join(base, 'missing-local-fsmonitor'));
    ugit(u, repo, 'config', 'core.hooksPath', hooks);
    put(repo, 'b.txt', 'untracked\n');
    await roundTrip(u, repo, (d) => put(d, 'a.txt', 'A\n'));
    assert.equal(existsSync(join(hooks, 'ran')), false, 'no hook ran');
  });

  it('a change to the global config is honoured on the next try, without a restart', async () => {
    const u = user('');
    const repo = userRepo(u, { 'a.txt': 'one\ntwo\n' });
    const first = await u.manager.prepare({ taskId: `t${++n}`, repoPath: repo });
    assert.equal(readFileSync(join(first.dir, 'a.txt'), 'utf8'), 'one\ntwo\n');
    await u.manager.remove(first);
    // The user turns on CRLF checkouts and checks the file out again.
    ugit(u, repo, 'config', '--global', 'core.autocrlf', 'true');
    rmSync(join(repo, 'a.txt'));
    ugit(u, repo, 'checkout', '--', 'a.txt');
    settle(u, repo);
    await roundTrip(u, repo, (d) => put(d, 'a.txt', 'one\r\nTWO\r\n'));
    assert.equal(readFileSync(join(repo, 'a.txt'), 'utf8'), 'one\r\nTWO\r\n');
  });

  it(
    'a repository another user owns: marked safe it works, not marked it says how',
    { skip: process.getuid?.() !== 0 },
    async () => {
      const u = user('');
      const repo = userRepo(u, { 'a.txt': 'a\n' });
      put(repo, 'dirty.txt', 'x\n');
      execFileSync('chown', ['-R', '65534:65534', repo]);
      await assert.rejects(
        u.manager.prepare({ taskId: `t${++n}`, repoPath: repo }),
        (e: unknown) => e instanceof WorkspaceError && e.message.includes(`safe.directory "${repo}"`),
      );
      writeFileSync(u.globalConfig, `[safe]\n\tdirectory = ${repo}\n`);
      await roundTrip(u, repo, (d) => put(d, 'a.txt', 'A\n'));
    },
  );
});

describe('size', () => {
  it('a huge file: copied, edited in one line, and the patch stays small', async () => {
    const u = user('');
    const big = lines(200_000, 'a fairly long line of text to make the file big'); // ~11 MB
    const repo = userRepo(u, { 'big.txt': big, 'small.txt': 's\n' });
    put(repo, 'untracked-big.txt', big);
    const { patch } = await roundTrip(u, repo, (d) => {
      const text = readFileSync(join(d, 'big.txt'), 'utf8');
      put(d, 'big.txt', text.replace('big 100000\n', 'BIG 100000\n'));
    });
    assert.ok(patch.length < 2000, String(patch.length));
  });
});

const gitLfs = ((): boolean => {
  try {
    execFileSync('git', ['lfs', 'version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

/** A repository of a user who ran `git lfs install`, `*.bin` tracked (`git lfs track`), `files` committed through git-lfs. */
function lfsTracked(files: Record<string, string | Buffer>): { u: User; repo: string } {
  const u = user('');
  const repo = join(u.dir, 'repo');
  mkdirSync(repo);
  ugit(u, repo, 'init', '-q');
  ugit(u, repo, 'lfs', 'install', '--skip-repo');
  ugit(u, repo, 'lfs', 'track', '*.bin');
  for (const [p, c] of Object.entries(files)) put(repo, p, c);
  ugit(u, repo, 'add', '-A');
  ugit(u, repo, '-c', 'commit.gpgSign=false', 'commit', '-q', '-m', 'initial');
  settle(u, repo);
  return { u, repo };
}

describe('Git LFS with git-lfs installed', { skip: !gitLfs && 'git-lfs is not installed (Debian: git-lfs)' }, () => {
  /** A repository set up as `git lfs install` and `git lfs track` set one up, its object committed through git-lfs. */
  function lfsRepo(): { u: User; repo: string; object: Buffer; pointer: string } {
    const object = Buffer.from(Array.from({ length: 5000 }, (_, i) => (i * 7) % 251));
    const { u, repo } = lfsTracked({ 'big.bin': object, 'a.txt': lines(3) });
    const pointer = ugit(u, repo, 'cat-file', 'blob', 'HEAD:big.bin') + '\n';
    assert.match(pointer, /^version https:\/\/git-lfs/, 'git-lfs stored a pointer');
    assert.deepEqual(readFileSync(join(repo, 'big.bin')), object, 'the user has the object');
    return { u, repo, object, pointer };
  }

  /** The file's bytes unchanged, its stat data no longer the index's (a touch, a tool that rewrites it). */
  const touch = (file: string): void => utimesSync(file, new Date(), new Date(Date.now() + 5_000));

  it('an object whose stat data is out of date is no uncommitted change: the copy has its pointer, and the patch round-trips', async () => {
    const { u, repo, object, pointer } = lfsRepo();
    touch(join(repo, 'big.bin'));
    const { ws } = await roundTrip(u, repo, (d) => put(d, 'a.txt', lines(3).replace('line 2', 'LINE 2')), {
      copyDiffers: (copy, mine) => {
        const hash = createHash('sha256').update(pointer).digest('hex').slice(0, 16);
        assert.equal(copy.get('big.bin'), `file - ${hash} ${JSON.stringify(pointer.slice(0, 60))}`, 'the pointer');
        copy.delete('big.bin');
        mine.delete('big.bin');
        sameTree(copy, mine, 'the rest of the copy is the user’s tree');
      },
      skip: (rel) => rel === 'big.bin',
    });
    assert.doesNotMatch(ws.notes.join('\n'), /uncommitted change/);
    assert.match(ws.notes.join('\n'), /Git LFS are pointer files/);
    assert.deepEqual(readFileSync(join(repo, 'big.bin')), object, 'the user’s object is untouched');
    assert.equal(ugit(u, repo, 'status', '--porcelain'), 'M a.txt', 'the user’s git sees the agent’s change only');
  });

  it('a changed object is an uncommitted change: the copy has the user’s new content', async () => {
    const { u, repo } = lfsRepo();
    const changed = Buffer.from('new object content\n');
    put(repo, 'big.bin', changed);
    const ws = await u.manager.prepare({ taskId: `t${++n}`, repoPath: repo });
    try {
      assert.deepEqual(readFileSync(join(ws.dir, 'big.bin')), changed);
      assert.match(ws.notes.join('\n'), /1 uncommitted change/);
    } finally {
      await u.manager.remove(ws);
    }
  });

  it('an agent that changed a pointer file: the review says the file is tracked by Git LFS and what to do, and the rest applies', async () => {
    const { u, repo, object } = lfsRepo();
    const ws = await u.manager.prepare({ taskId: `t${++n}`, repoPath: repo });
    let patch: string;
    try {
      put(ws.dir, 'big.bin', Buffer.from([0, 1, 2, 3, 0, 9]));
      put(ws.dir, 'a.txt', 'agent\n');
      patch = (await u.manager.changes(ws)).patch;
    } finally {
      await u.manager.remove(ws);
    }
    const r = await review(u, repo, patch);
    const big = r.check.files.find((f) => f.path === 'big.bin');
    assert.equal(big?.ok, false);
    assert.match(
      big?.errors[0] ?? '',
      /big\.bin is tracked by Git LFS: the agent's copy has its pointer file.*Leave this file out/,
    );
    assert.equal(r.check.files.find((f) => f.path === 'a.txt')?.ok, true);
    const outcome = await applyReviewed(r, { selection: { files: ['a.txt'] } });
    assert.equal(outcome.kind, 'applied', JSON.stringify(outcome));
    assert.equal(readFileSync(join(repo, 'a.txt'), 'utf8'), 'agent\n');
    assert.deepEqual(readFileSync(join(repo, 'big.bin')), object);
  });

  it('the review’s drift report: a touched object is no change, a rewritten one is', async () => {
    const { u, repo } = lfsRepo();
    const base = await captureWorkingState(repo);
    assert.deepEqual(base.files, {});
    touch(join(repo, 'big.bin'));
    const patch = (await roundTripPatch(u, repo)).patch;
    const touched = await review(u, repo, patch, base);
    assert.equal(touched.drift?.uncommittedChanged, false, JSON.stringify(touched.drift));
    put(repo, 'big.bin', Buffer.from('rewritten\n'));
    const rewritten = await review(u, repo, patch, base);
    assert.equal(rewritten.drift?.uncommittedChanged, true, JSON.stringify(rewritten.drift));
  });
});

describe(
  'Git LFS with git-lfs installed, many objects',
  { skip: !gitLfs && 'git-lfs is not installed (Debian: git-lfs)' },
  () => {
    it('600 touched objects are no uncommitted change at the start of a delegation', async () => {
      const objects = Object.fromEntries(
        Array.from({ length: 600 }, (_, i) => [`assets/o${i}.bin`, Buffer.from(`object ${i}\n`)]),
      );
      const { repo } = lfsTracked({ ...objects, 'a.txt': 'a\n' });
      const later = new Date(Date.now() + 5_000);
      for (let i = 0; i < 600; i++) utimesSync(join(repo, `assets/o${i}.bin`), later, later);
      put(repo, 'a.txt', 'changed\n');
      const state = await captureWorkingState(repo);
      assert.deepEqual(Object.keys(state.files), ['a.txt']);
    });
  },
);

/** A copy of `repo`, one line of a.txt changed by the agent, and its patch (nothing applied). */
async function roundTripPatch(u: User, repo: string): Promise<{ patch: string }> {
  const ws = await u.manager.prepare({ taskId: `t${++n}`, repoPath: repo });
  try {
    put(ws.dir, 'a.txt', 'agent\n');
    return { patch: (await u.manager.changes(ws)).patch };
  } finally {
    await u.manager.remove(ws);
  }
}

describe('repository formats and index settings', () => {
  const settings: readonly (readonly [string, (u: User, repo: string) => void, (u: User, repo: string) => void])[] = [
    [
      'a SHA-256 repository (git init --object-format=sha256)',
      () => undefined,
      (u, repo) => assert.equal(ugit(u, repo, 'rev-parse', '--show-object-format'), 'sha256'),
    ],
    [
      'feature.manyFiles (index version 4, untracked cache)',
      (u, repo) => ugit(u, repo, 'config', 'feature.manyFiles', 'true'),
      (_u, repo) => assert.equal(readFileSync(join(repo, '.git', 'index')).readUInt32BE(4), 4, 'index version 4'),
    ],
    [
      'core.splitIndex (a shared index beside the index)',
      (u, repo) => ugit(u, repo, 'config', 'core.splitIndex', 'true'),
      (_u, repo) =>
        assert.ok(
          readdirSync(join(repo, '.git')).some((f) => f.startsWith('sharedindex.')),
          'the index is split',
        ),
    ],
  ];
  for (const [what, setup, holds] of settings)
    it(`${what}: staged, unstaged and untracked work is copied, and the patch round-trips`, async () => {
      const u = user('');
      const repo = join(u.dir, 'repo');
      mkdirSync(repo);
      ugit(u, repo, 'init', '-q', ...(what.includes('SHA-256') ? ['--object-format=sha256'] : []));
      setup(u, repo);
      put(repo, 'a.txt', lines(5));
      put(repo, 'dir/b.txt', 'b\n');
      put(repo, 'c.txt', 'c\n');
      ugit(u, repo, 'add', '-A');
      ugit(u, repo, '-c', 'commit.gpgSign=false', 'commit', '-q', '-m', 'initial');
      put(repo, 'a.txt', lines(5).replace('line 1', 'user 1'));
      put(repo, 'dir/b.txt', 'staged\n');
      ugit(u, repo, 'add', 'dir/b.txt');
      put(repo, 'untracked.txt', 'u\n');
      settle(u, repo);
      holds(u, repo);
      const { ws } = await roundTrip(u, repo, (d) => {
        put(d, 'c.txt', 'agent\n');
        put(d, 'a.txt', lines(5).replace('line 1', 'user 1').replace('line 4', 'agent 4'));
        put(d, 'new.txt', 'new\n');
      });
      assert.match(ws.notes.join('\n'), /3 uncommitted change/);
      assert.equal(ugit(u, repo, 'diff', '--cached', '--name-only'), 'dir/b.txt', 'what the user staged stays staged');
    });
});

describe('conditional includes in the global config', () => {
  /** A user whose global config gives the repositories under `work/` the settings of `work.gitconfig`. */
  function workUser(included: string): { u: User; work: string; inc: string } {
    const u = user('');
    const work = join(u.dir, 'work');
    mkdirSync(work);
    const inc = join(u.dir, 'work.gitconfig');
    writeFileSync(inc, included);
    writeFileSync(u.globalConfig, `[includeIf "gitdir:${work}/"]\n\tpath = ${inc}\n`);
    return { u, work, inc };
  }

  /** A repository at `dir` with a.txt committed and checked out again by the user's git. */
  function committed(u: User, dir: string): string {
    mkdirSync(dir, { recursive: true });
    ugit(u, dir, 'init', '-q');
    put(dir, 'a.txt', lines(5));
    ugit(u, dir, 'add', '-A');
    ugit(u, dir, '-c', 'commit.gpgSign=false', 'commit', '-q', '-m', 'initial');
    rmSync(join(dir, 'a.txt'));
    ugit(u, dir, 'checkout', '--', '.');
    settle(u, dir);
    return dir;
  }

  const agentEdit = (d: string): void =>
    put(d, 'a.txt', readFileSync(join(d, 'a.txt'), 'utf8').replace('line 2', 'LINE 2'));

  it('includeIf "gitdir:…" setting core.autocrlf=true for the repositories under a folder counts there, and only there', async () => {
    const { u, work } = workUser('[core]\n\tautocrlf = true\n');
    const inside = committed(u, join(work, 'repo'));
    const outside = committed(u, join(u.dir, 'home-repo'));
    assert.equal(readFileSync(join(inside, 'a.txt'), 'utf8'), lines(5).replace(/\n/g, '\r\n'), 'CRLF under work/');
    assert.equal(readFileSync(join(outside, 'a.txt'), 'utf8'), lines(5), 'LF elsewhere');
    await roundTrip(u, inside, agentEdit);
    assert.equal(
      readFileSync(join(inside, 'a.txt'), 'utf8'),
      lines(5).replace('line 2', 'LINE 2').replace(/\n/g, '\r\n'),
    );
    await roundTrip(u, outside, agentEdit);
    assert.equal(readFileSync(join(outside, 'a.txt'), 'utf8'), lines(5).replace('line 2', 'LINE 2'));
  });

  it('includeIf "onbranch:…": the settings of the branch checked out, also after a switch', async () => {
    const u = user('');
    const inc = join(u.dir, 'release.gitconfig');
    writeFileSync(inc, '[core]\n\tautocrlf = true\n');
    writeFileSync(u.globalConfig, `[includeIf "onbranch:release/**"]\n\tpath = ${inc}\n`);
    const repo = committed(u, join(u.dir, 'repo'));
    await roundTrip(u, repo, agentEdit);
    assert.equal(readFileSync(join(repo, 'a.txt'), 'utf8'), lines(5).replace('line 2', 'LINE 2'), 'LF on main');
    ugit(u, repo, 'checkout', '-q', '--', 'a.txt');
    ugit(u, repo, 'checkout', '-q', '-b', 'release/1');
    rmSync(join(repo, 'a.txt'));
    ugit(u, repo, 'checkout', '--', '.');
    settle(u, repo);
    assert.equal(readFileSync(join(repo, 'a.txt'), 'utf8'), lines(5).replace(/\n/g, '\r\n'), 'CRLF on release/1');
    await roundTrip(u, repo, agentEdit);
    assert.equal(
      readFileSync(join(repo, 'a.txt'), 'utf8'),
      lines(5).replace('line 2', 'LINE 2').replace(/\n/g, '\r\n'),
    );
  });

  it('a change to the included file is honoured on the next try, without a restart', async () => {
    const { u, work, inc } = workUser('[core]\n\tautocrlf = true\n');
    const repo = committed(u, join(work, 'repo'));
    await roundTrip(u, repo, agentEdit);
    writeFileSync(inc, '[core]\n\tautocrlf = false\n');
    rmSync(join(repo, 'a.txt'));
    ugit(u, repo, 'checkout', '--', '.');
    settle(u, repo);
    assert.equal(readFileSync(join(repo, 'a.txt'), 'utf8'), lines(5), 'the user’s git now writes LF');
    await roundTrip(u, repo, agentEdit);
    assert.equal(readFileSync(join(repo, 'a.txt'), 'utf8'), lines(5).replace('line 2', 'LINE 2'));
  });
});

describe('where the repository’s git data lives', () => {
  it('a repository folder whose name has spaces, unicode, brackets, $, backquotes and quotes', async () => {
    const u = user('');
    const repo = userRepo(u, { 'a.txt': lines(3) }, "my repo é [x] $HOME `q` 's");
    put(repo, 'u.txt', 'u\n');
    settle(u, repo);
    await roundTrip(u, repo, (d) => put(d, 'a.txt', 'agent\n'));
  });

  it('objects borrowed from another repository (clone --shared, and a relative objects/info/alternates)', async () => {
    const u = user('');
    const src = userRepo(u, { 'a.txt': lines(3), 'b.txt': 'b\n' }, 'src');
    const shared = join(u.dir, 'borrowing');
    ugit(u, u.dir, 'clone', '-q', '--shared', src, shared);
    const relative = join(u.dir, 'relative');
    ugit(u, u.dir, 'clone', '-q', '--shared', src, relative);
    writeFileSync(join(relative, '.git', 'objects', 'info', 'alternates'), '../../../src/.git/objects\n');
    for (const repo of [shared, relative]) {
      assert.equal(ugit(u, repo, 'count-objects', '-v').match(/^count: (\d+)/m)?.[1], '0', 'no objects of its own');
      put(repo, 'u.txt', 'u\n');
      settle(u, repo);
      await roundTrip(u, repo, (d) => put(d, 'a.txt', 'agent\n'));
    }
  });

  it('a separate git dir (git init --separate-git-dir: .git is a file)', async () => {
    const u = user('');
    const repo = join(u.dir, 'repo');
    mkdirSync(repo);
    ugit(u, repo, 'init', '-q', `--separate-git-dir=${join(u.dir, 'gitdir')}`);
    put(repo, 'a.txt', lines(3));
    ugit(u, repo, 'add', '-A');
    ugit(u, repo, '-c', 'commit.gpgSign=false', 'commit', '-q', '-m', 'initial');
    put(repo, 'u.txt', 'u\n');
    settle(u, repo);
    await roundTrip(u, repo, (d) => put(d, 'a.txt', 'agent\n'));
  });
  it('a worktree of a bare repository (clone --bare, then worktree add)', async () => {
    const u = user('');
    const src = userRepo(u, { 'a.txt': lines(3) }, 'src');
    const bare = join(u.dir, 'proj.git');
    ugit(u, u.dir, 'clone', '-q', '--bare', src, bare);
    const wt = join(u.dir, 'proj-main');
    ugit(u, bare, 'worktree', 'add', '-q', wt);
    put(wt, 'u.txt', 'u\n');
    settle(u, wt);
    await roundTrip(u, wt, (d) => put(d, 'a.txt', 'agent\n'));
  });
  it('a blobless partial clone (--filter=blob:none), its old blobs never fetched', async () => {
    const u = user(
      '[uploadpack]\n\tallowFilter = true\n\tallowAnySHA1InWant = true\n[protocol "file"]\n\tallow = always\n',
    );
    const src = userRepo(u, { 'a.txt': lines(3), 'b.txt': 'b\n' }, 'src');
    put(src, 'a.txt', 'v2\n');
    ugit(u, src, 'commit', '-qam', 'v2');
    const clone = join(u.dir, 'partial');
    ugit(u, u.dir, 'clone', '-q', '--filter=blob:none', `file://${src}`, clone);
    assert.equal(ugit(u, clone, 'config', 'remote.origin.promisor'), 'true');
    const missing = ugit(u, clone, 'rev-list', '--objects', '--all', '--missing=print')
      .split('\n')
      .filter((l) => l.startsWith('?'));
    assert.equal(missing.length, 1, 'the first a.txt was never fetched');
    // The promisor remote is gone (offline): a lazy fetch by Baton's git would fail.
    renameSync(src, `${src}-gone`);
    put(clone, 'u.txt', 'u\n');
    settle(u, clone);
    await roundTrip(u, clone, (d) => put(d, 'b.txt', 'agent\n'));
  });
});

describe('ignore rules outside the repository (core.excludesFile)', () => {
  for (const where of ['global', 'repository'] as const)
    it(`in the ${where === 'global' ? 'global config (~/.gitignore_global)' : 'repository’s own config'}: an ignored secret stays out of the copy, the drift report and the agent’s patch`, async () => {
      const u = user('');
      const ignore = join(u.home, '.gitignore_global');
      writeFileSync(ignore, '.env\n*.log\n');
      if (where === 'global') writeFileSync(u.globalConfig, `[core]\n\texcludesFile = ~/.gitignore_global\n`);
      const repo = userRepo(u, { 'a.txt': 'a\n' });
      if (where === 'repository') ugit(u, repo, 'config', 'core.excludesFile', ignore);
      put(repo, '.env', 'SECRET=1\n');
      put(repo, 'debug.log', 'x\n');
      assert.equal(ugit(u, repo, 'status', '--porcelain'), '', 'the user’s git ignores both');
      assert.deepEqual((await captureWorkingState(repo)).files, {}, 'no uncommitted change');
      const { ws, patch } = await roundTrip(
        u,
        repo,
        (d) => {
          put(d, 'a.txt', 'agent\n');
          put(d, 'agent.log', 'log\n');
        },
        { skip: (rel) => rel === '.env' || rel.endsWith('.log') },
      );
      assert.deepEqual(ws.notes, []);
      assert.doesNotMatch(patch, /agent\.log/, 'what the user ignores is not in the patch');
      assert.match(patch, /a\.txt/);
    });

  it('the copy leaves out the ignored files', async () => {
    const u = user('');
    writeFileSync(join(u.home, '.gitignore_global'), '.env\n');
    writeFileSync(u.globalConfig, `[core]\n\texcludesFile = ~/.gitignore_global\n`);
    const repo = userRepo(u, { 'a.txt': 'a\n' });
    put(repo, '.env', 'SECRET=1\n');
    const ws = await u.manager.prepare({ taskId: `t${++n}`, repoPath: repo });
    try {
      assert.equal(existsSync(join(ws.dir, '.env')), false, 'the secret is not handed to the agent');
    } finally {
      await u.manager.remove(ws);
    }
  });
});

describe('core.fileMode=false (Windows, a repository on a mounted drive)', () => {
  it('an executable bit the user’s git does not see is no change, and the patch carries no mode', async () => {
    const u = user('');
    const repo = userRepo(u, { 'a.txt': 'a\n', 'b.txt': 'b\n' });
    ugit(u, repo, 'config', 'core.fileMode', 'false');
    chmodSync(join(repo, 'a.txt'), 0o755);
    settle(u, repo);
    assert.equal(ugit(u, repo, 'status', '--porcelain'), '', 'the user’s git sees no change');
    const { ws, patch } = await roundTrip(
      u,
      repo,
      (d) => {
        writeFileSync(join(d, 'a.txt'), 'agent\n');
        writeFileSync(join(d, 'b.txt'), 'agent b\n');
        chmodSync(join(d, 'b.txt'), 0o755);
      },
      { skip: (rel) => rel === 'a.txt' || rel === 'b.txt' },
    );
    assert.doesNotMatch(ws.notes.join('\n'), /uncommitted change/);
    assert.doesNotMatch(patch, /mode/, 'no mode in the patch');
    assert.equal(readFileSync(join(repo, 'a.txt'), 'utf8'), 'agent\n');
    assert.equal(readFileSync(join(repo, 'b.txt'), 'utf8'), 'agent b\n');
    assert.equal(ugit(u, repo, 'status', '--porcelain'), 'M a.txt\n M b.txt');
  });
});

/** True when git, run in `LANG=de_DE.UTF-8`, speaks German here (the locale and git's translations are installed). */
const germanGit = ((): boolean => {
  const plain = mkdtempSync(join(tmpdir(), 'baton-de-'));
  try {
    execFileSync('git', ['rev-parse', '--git-dir'], {
      cwd: plain,
      env: { PATH: process.env.PATH ?? '', LANG: 'de_DE.UTF-8', GIT_CEILING_DIRECTORIES: tmpdir() },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    return false;
  } catch (e) {
    return /Kein Git-Repository/.test(String((e as { stderr?: unknown }).stderr));
  } finally {
    rmSync(plain, { recursive: true, force: true });
  }
})();

describe(
  'a user whose git speaks German (LANG=de_DE.UTF-8)',
  { skip: !germanGit && 'git does not speak German here (localedef -i de_DE -f UTF-8 de_DE.UTF-8)' },
  () => {
    const lang = process.env.LANG;
    beforeEach(() => {
      process.env.LANG = 'de_DE.UTF-8';
    });
    after(() => {
      if (lang === undefined) delete process.env.LANG;
      else process.env.LANG = lang;
    });

    it('a folder that is not a repository gets an empty workspace, as in English', async () => {
      const u = user('');
      const plain = join(u.dir, 'plain');
      mkdirSync(plain);
      put(plain, 'a.txt', 'a\n');
      const ws = await u.manager.prepare({ taskId: `t${++n}`, repoPath: plain });
      try {
        assert.equal(ws.kind, 'scratch');
        assert.match(ws.notes.join('\n'), /is not a git repository: the agent starts in an empty folder/);
      } finally {
        await u.manager.remove(ws);
      }
    });

    it('a repository is copied, and the patch checked and applied', async () => {
      const u = user('');
      const repo = userRepo(u, { 'a.txt': lines(3) });
      put(repo, 'u.txt', 'u\n');
      settle(u, repo);
      await roundTrip(u, repo, (d) => put(d, 'a.txt', 'agent\n'));
    });
  },
);
