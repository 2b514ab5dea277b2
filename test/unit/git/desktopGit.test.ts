// Baton's git with the user's own git config, as on a Windows or macOS desktop: line endings and
// safe.directory from the global config are honoured, the programs it names are not. Every test gives
// git its own HOME through process.env (this file runs in its own process) and never reads the
// machine's ~/.gitconfig.
import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, beforeEach, describe, it } from 'node:test';
import { defaultSelection } from '../../../src/core/patch/patchRisk';
import { WorkspaceError, WorkspaceManager } from '../../../src/gateway/workspace/workspaceManager';
import { git, runGit } from '../../../src/node/git';
import { applyReviewed, prepareReview } from '../../../src/node/patchApply';

const base = mkdtempSync(join(tmpdir(), 'baton-desktop-git-'));
after(() => rmSync(base, { recursive: true, force: true }));
let n = 0;

interface Desktop {
  readonly dir: string;
  readonly home: string;
  readonly manager: WorkspaceManager;
}

/** A fresh HOME with this global config, used by Baton's git (process.env) and by the test's own git. */
function desktop(globalConfig: string): Desktop {
  const dir = join(base, `d${++n}`);
  const home = join(dir, 'home');
  mkdirSync(home, { recursive: true });
  writeFileSync(join(home, '.gitconfig'), globalConfig);
  process.env.HOME = home;
  const root = join(dir, 'ws');
  mkdirSync(root);
  return { dir, home, manager: new WorkspaceManager({ root, userHome: home }) };
}

beforeEach(() => {
  // Only the test HOME's ~/.gitconfig counts: no system config, no XDG or explicit global file.
  process.env.GIT_CONFIG_NOSYSTEM = '1';
  delete process.env.GIT_CONFIG_GLOBAL;
  delete process.env.GIT_CONFIG_SYSTEM;
  delete process.env.XDG_CONFIG_HOME;
});

/** The user's own git (unhardened, with the test HOME's config). */
function userGit(d: Desktop, cwd: string, ...args: string[]): string {
  return execFileSync('git', args, {
    cwd,
    encoding: 'utf8',
    env: {
      PATH: process.env.PATH ?? '',
      HOME: d.home,
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_AUTHOR_NAME: 'T',
      GIT_AUTHOR_EMAIL: 't@example.invalid',
      GIT_COMMITTER_NAME: 'T',
      GIT_COMMITTER_EMAIL: 't@example.invalid',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  }).trim();
}

/** A repository committed with the user's git, then checked out again so the working tree has what their config makes. */
function userRepo(d: Desktop, files: Record<string, string>): string {
  const repo = join(d.dir, 'repo');
  mkdirSync(repo);
  userGit(d, repo, 'init', '-q', '-b', 'main');
  for (const [p, c] of Object.entries(files)) writeFileSync(join(repo, p), c);
  userGit(d, repo, 'add', '-A');
  userGit(d, repo, 'commit', '-q', '-m', 'initial');
  for (const p of Object.keys(files)) rmSync(join(repo, p));
  userGit(d, repo, 'checkout', '--', '.');
  // As on a desktop, the index is older than nothing it describes: no "racily clean" entry makes git
  // hash the files again (which would hide what the user's config does to them).
  const past = new Date(Date.now() - 60_000);
  for (const p of Object.keys(files)) utimesSync(join(repo, p), past, past);
  userGit(d, repo, 'update-index', '-q', '--refresh');
  return repo;
}

describe('git on a Windows-shaped checkout (core.autocrlf=true in the global config)', () => {
  it("an agent's edit in the throwaway copy applies to the user's CRLF tree and the file keeps CRLF", async () => {
    const d = desktop('[core]\n\tautocrlf = true\n');
    const repo = userRepo(d, { 'a.txt': 'one\ntwo\nthree\n', 'b.txt': 'keep\n' });
    assert.equal(readFileSync(join(repo, 'a.txt'), 'utf8'), 'one\r\ntwo\r\nthree\r\n', 'the user tree has CRLF');

    const ws = await d.manager.prepare({ taskId: 'crlf', repoPath: repo });
    try {
      const inCopy = readFileSync(join(ws.dir, 'a.txt'), 'utf8');
      assert.equal(inCopy, 'one\r\ntwo\r\nthree\r\n', 'the copy is checked out as the user’s git would');
      writeFileSync(join(ws.dir, 'a.txt'), inCopy.replace('two', 'TWO'));
      const { patch } = await d.manager.changes(ws);
      assert.match(patch, /^\+TWO/m);
      const patchPath = join(d.dir, 'changes.patch');
      writeFileSync(patchPath, patch);

      const review = await prepareReview({ folder: repo, source: { path: patchPath } });
      assert.equal(review.check.ok, true, JSON.stringify(review.check));
      const outcome = await applyReviewed(review, { selection: defaultSelection(review.patch, review.risks) });
      assert.equal(outcome.kind, 'applied', JSON.stringify(outcome));
      assert.equal(readFileSync(join(repo, 'a.txt'), 'utf8'), 'one\r\nTWO\r\nthree\r\n');
      assert.equal(readFileSync(join(repo, 'b.txt'), 'utf8'), 'keep\r\n');
    } finally {
      await d.manager.remove(ws);
    }
  });

  it('honours none of the programs the same global config names (fsmonitor, hooks, pager, textconv, filters)', async () => {
    const dir = join(base, 'hostile');
    mkdirSync(join(dir, 'hooks'), { recursive: true });
    const marker = join(dir, 'ran');
    const script = join(dir, 'tool.sh');
    writeFileSync(script, `#!/bin/sh\necho "$0 $*" >> '${marker}'\ncat\n`, { mode: 0o755 });
    for (const h of ['post-checkout', 'pre-commit', 'post-commit', 'reference-transaction'])
      writeFileSync(join(dir, 'hooks', h), `#!/bin/sh\necho hook >> '${marker}'\n`, { mode: 0o755 });
    const d = desktop(
      [
        '[core]',
        '\tautocrlf = true',
        `\tfsmonitor = ${script}`,
        `\thooksPath = ${join(dir, 'hooks')}`,
        `\tpager = ${script}`,
        `\tsshCommand = ${script}`,
        '[diff "x"]',
        `\ttextconv = ${script}`,
        '[filter "x"]',
        `\tclean = ${script}`,
        `\tsmudge = ${script}`,
        '[credential]',
        `\thelper = !${script}`,
        '[alias]',
        `\tstatus = !${script}`,
        '',
      ].join('\n'),
    );
    // The user's repository asks for the drivers through .gitattributes; their definitions are config.
    const repo = userRepo(d, { 'a.txt': 'one\ntwo\n', '.gitattributes': '*.txt diff=x filter=x\n' });
    rmSync(marker, { force: true });

    const ws = await d.manager.prepare({ taskId: 'hostile', repoPath: repo });
    try {
      writeFileSync(join(ws.dir, 'a.txt'), 'one\r\nTWO\r\n');
      const { patch } = await d.manager.changes(ws);
      assert.match(patch, /^\+TWO$/m, 'the line endings setting is still honoured');
      await git(['status', '--porcelain'], { cwd: repo });
      await git(['diff', '--no-ext-diff', 'HEAD', '--', 'a.txt'], { cwd: ws.dir });
      await git(['log', '--no-ext-diff', '-p', '-1'], { cwd: repo });
      await runGit(['commit', '--allow-empty', '-q', '-m', 'x'], {
        cwd: ws.dir,
        env: { GIT_AUTHOR_NAME: 'T', GIT_AUTHOR_EMAIL: 't@e', GIT_COMMITTER_NAME: 'T', GIT_COMMITTER_EMAIL: 't@e' },
      });
    } finally {
      await d.manager.remove(ws);
    }
    assert.equal(existsSync(marker), false, existsSync(marker) ? readFileSync(marker, 'utf8') : '');
  });
});

describe('safe.directory from the global config', () => {
  const isRoot = process.getuid?.() === 0;
  const skip = isRoot ? false : 'needs root to make a repository another user owns (git calls it "dubious")';

  it('a repository another user owns works once the user marked it safe', { skip }, async () => {
    const d = desktop('');
    const repo = userRepo(d, { 'a.txt': 'one\n' });
    execFileSync('chown', ['-R', '65534:65534', repo]);
    writeFileSync(join(d.home, '.gitconfig'), `[safe]\n\tdirectory = /nowhere\n\tdirectory = ${repo}\n`);
    const ws = await d.manager.prepare({ taskId: 'safe', repoPath: repo });
    try {
      assert.equal(ws.kind, 'clone');
      assert.equal(readFileSync(join(ws.dir, 'a.txt'), 'utf8'), 'one\n');
    } finally {
      await d.manager.remove(ws);
    }
  });

  it('without it, the error says how to mark the repository safe', { skip }, async () => {
    const d = desktop('');
    const repo = userRepo(d, { 'a.txt': 'one\n' });
    execFileSync('chown', ['-R', '65534:65534', repo]);
    await assert.rejects(
      d.manager.prepare({ taskId: 'unsafe', repoPath: repo }),
      (e: unknown) =>
        e instanceof WorkspaceError &&
        e.message.includes('Manage Unsafe Repositories') &&
        e.message.includes(`git config --global --add safe.directory "${repo}"`),
    );
  });
});
