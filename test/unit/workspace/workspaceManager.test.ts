import { spawn } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { PRIVATE_DIR_NAME, WorkspaceError, WorkspaceManager } from '../../../src/gateway/workspace/workspaceManager';
import { applyCheck, applyToCopy, fingerprint, makeRepo, sh, tempSpace, write } from './repoFixtures';
import type { TempSpace } from './repoFixtures';

describe('WorkspaceManager', () => {
  let space: TempSpace;
  let manager: WorkspaceManager;
  let n = 0;
  const id = () => `task-${++n}`;
  before(() => {
    space = tempSpace();
    manager = new WorkspaceManager({ root: space.root, userHome: space.home });
  });
  after(() => space.dispose());

  it('copies HEAD plus staged, unstaged and untracked files, not ignored ones, detached and without a remote', async () => {
    const repo = makeRepo(space.base, 'basic', {
      'a.txt': 'a\n',
      'b.txt': 'b\n',
      'gone.txt': 'bye\n',
      '.gitignore': 'build/\n*.log\n',
      'src/x.js': 'x\n',
    });
    sh(repo, 'remote', 'add', 'origin', 'https://example.invalid/r.git');
    write(repo, 'a.txt', 'a staged\n');
    sh(repo, 'add', 'a.txt');
    write(repo, 'a.txt', 'a staged then unstaged\n');
    write(repo, 'b.txt', 'b unstaged\n');
    write(repo, 'new/untracked.txt', 'new\n');
    write(repo, 'build/out.js', 'ignored\n');
    write(repo, 'debug.log', 'ignored\n');
    unlinkSync(join(repo, 'gone.txt'));
    const before = fingerprint(repo);
    const ws = await manager.prepare({ taskId: id(), repoPath: join(repo, 'src') });
    try {
      assert.equal(ws.kind, 'clone');
      assert.equal(ws.repoTop, repo);
      assert.equal(readFileSync(join(ws.dir, 'a.txt'), 'utf8'), 'a staged then unstaged\n');
      assert.equal(readFileSync(join(ws.dir, 'b.txt'), 'utf8'), 'b unstaged\n');
      assert.equal(readFileSync(join(ws.dir, 'new/untracked.txt'), 'utf8'), 'new\n');
      assert.equal(existsSync(join(ws.dir, 'gone.txt')), false);
      assert.equal(existsSync(join(ws.dir, 'build/out.js')), false);
      assert.equal(existsSync(join(ws.dir, 'debug.log')), false);
      assert.equal(sh(ws.dir, 'rev-parse', 'HEAD'), sh(repo, 'rev-parse', 'HEAD'));
      assert.equal(sh(ws.dir, 'remote'), '');
      assert.match(sh(ws.dir, 'status', '--porcelain=v1', '-b').split('\n')[0], /HEAD \(no branch\)/);
      // Baton's index and trees live outside the agent's folder.
      assert.ok(!ws.privateDir.startsWith(ws.dir));
      assert.ok(existsSync(join(ws.privateDir, 'index-a')));
      assert.ok(ws.dir.startsWith(space.root));
      const unchanged = await manager.changes(ws);
      assert.equal(unchanged.patch, '', 'a fresh workspace has no changes');
    } finally {
      await manager.remove(ws);
    }
    assert.equal(fingerprint(repo), before);
    assert.equal(existsSync(ws.dir), false);
    assert.equal(existsSync(ws.privateDir), false);
  });

  it('returns a patch (edits, additions, deletions, renames, binary, mode) that git apply --check accepts on the user tree', async () => {
    const big = Array.from({ length: 40 }, (_, i) => `line ${i}\n`).join('');
    const repo = makeRepo(space.base, 'patching', {
      'keep.txt': 'keep\n',
      'edit.txt': 'one\ntwo\n',
      'del.txt': 'del\n',
      'old-name.txt': big,
      'run.sh': 'echo hi\n',
    });
    write(repo, 'dirty.txt', 'uncommitted and untracked\n');
    const before = fingerprint(repo);
    const ws = await manager.prepare({ taskId: id(), repoPath: repo });
    try {
      write(ws.dir, 'edit.txt', 'one\nTWO\n');
      unlinkSync(join(ws.dir, 'del.txt'));
      write(ws.dir, 'new-name.txt', readFileSync(join(ws.dir, 'old-name.txt')));
      unlinkSync(join(ws.dir, 'old-name.txt'));
      write(ws.dir, 'bin.dat', Buffer.from([0, 1, 2, 255, 0, 7]));
      write(ws.dir, 'dirty.txt', 'uncommitted, then edited by the agent\n');
      sh(ws.dir, 'update-index', '--chmod=+x', 'run.sh');
      execChmod(join(ws.dir, 'run.sh'));
      const { patch, destroyed } = await manager.changes(ws);
      assert.equal(destroyed, undefined);
      assert.match(patch, /rename from old-name\.txt\nrename to new-name\.txt/);
      assert.match(patch, /GIT binary patch/);
      assert.match(patch, /^index [0-9a-f]{40}\.\.[0-9a-f]{40}/m, 'full index');
      assert.match(patch, /old mode 100644\nnew mode 100755/);
      const check = applyCheck(repo, patch);
      assert.ok(check.ok, check.message);
      const applied = applyToCopy(repo, patch, join(space.base, 'patching-applied'));
      assert.equal(readFileSync(join(applied, 'edit.txt'), 'utf8'), 'one\nTWO\n');
      assert.equal(readFileSync(join(applied, 'dirty.txt'), 'utf8'), 'uncommitted, then edited by the agent\n');
      assert.equal(existsSync(join(applied, 'del.txt')), false);
      assert.deepEqual(readFileSync(join(applied, 'bin.dat')), Buffer.from([0, 1, 2, 255, 0, 7]));
    } finally {
      await manager.remove(ws);
    }
    assert.equal(fingerprint(repo), before);
  });

  it('outside a repository the agent gets an empty scratch folder, and its patch adds files', async () => {
    const plain = join(space.base, 'not-a-repo');
    mkdirSync(plain);
    writeFileSync(join(plain, 'notes.txt'), 'x');
    const ws = await manager.prepare({ taskId: id(), repoPath: plain });
    try {
      assert.equal(ws.kind, 'scratch');
      assert.match(ws.notes.join('\n'), /not a git repository/);
      assert.equal(existsSync(join(ws.dir, 'notes.txt')), false);
      write(ws.dir, 'hello.md', '# hi\n');
      const { patch } = await manager.changes(ws);
      assert.match(patch, /new file mode 100644/);
      assert.match(patch, /\+# hi/);
    } finally {
      await manager.remove(ws);
    }
    const none = await manager.prepare({ taskId: id() });
    assert.equal(none.kind, 'scratch');
    await manager.remove(none);
  });

  it('refuses a bare repository, a missing folder, a .git folder and a bad task id with clear errors and leaves nothing', async () => {
    const bare = join(space.base, 'bare.git');
    sh(space.base, 'init', '-q', '--bare', bare);
    const beforeBare = fingerprint(bare);
    await assert.rejects(
      manager.prepare({ taskId: 'bare-1', repoPath: bare }),
      (e: unknown) => e instanceof WorkspaceError && e.code === 'bare-repository' && /bare repository/.test(e.message),
    );
    assert.equal(fingerprint(bare), beforeBare);
    assert.equal(existsSync(join(space.root, 'bare-1')), false);
    assert.equal(existsSync(join(space.root, PRIVATE_DIR_NAME, 'bare-1')), false);
    await assert.rejects(
      manager.prepare({ taskId: id(), repoPath: join(space.base, 'nope') }),
      (e: unknown) => e instanceof WorkspaceError && e.code === 'repository-missing',
    );
    const repo = makeRepo(space.base, 'dotgit', { 'a.txt': 'a\n' });
    await assert.rejects(
      manager.prepare({ taskId: id(), repoPath: join(repo, '.git') }),
      (e: unknown) => e instanceof WorkspaceError && (e.code === 'not-a-work-tree' || e.code === 'bare-repository'),
    );
    await assert.rejects(
      manager.prepare({ taskId: '../escape', repoPath: repo }),
      (e: unknown) => e instanceof WorkspaceError && e.code === 'invalid-task-id',
    );
    const ws = await manager.prepare({ taskId: 'dup', repoPath: repo });
    await assert.rejects(
      manager.prepare({ taskId: 'dup', repoPath: repo }),
      (e: unknown) => e instanceof WorkspaceError && e.code === 'workspace-exists',
    );
    await manager.remove(ws);
  });

  it('copies a repository mid-merge with its conflict markers, says so, and a resolving patch applies', async () => {
    const repo = makeRepo(space.base, 'merging', { 'f.txt': 'base\n' });
    sh(repo, 'checkout', '-q', '-b', 'other');
    write(repo, 'f.txt', 'theirs\n');
    sh(repo, 'commit', '-qam', 'theirs');
    sh(repo, 'checkout', '-q', 'main');
    write(repo, 'f.txt', 'ours\n');
    sh(repo, 'commit', '-qam', 'ours');
    assert.throws(() => sh(repo, 'merge', 'other'));
    const before = fingerprint(repo);
    const ws = await manager.prepare({ taskId: id(), repoPath: repo });
    try {
      assert.match(readFileSync(join(ws.dir, 'f.txt'), 'utf8'), /<<<<<<< HEAD\nours\n=======\ntheirs\n>>>>>>> other/);
      assert.match(ws.notes.join('\n'), /middle of a merge.*unresolved: f\.txt/s);
      write(ws.dir, 'f.txt', 'ours and theirs\n');
      const { patch } = await manager.changes(ws);
      const check = applyCheck(repo, patch);
      assert.ok(check.ok, check.message);
    } finally {
      await manager.remove(ws);
    }
    assert.equal(fingerprint(repo), before);
  });

  it('handles a detached HEAD, an unborn branch, and paths with spaces and unicode', async () => {
    const repo = makeRepo(space.base, 'detached', { 'dir with space/naïve file ü.txt': 'x\n', '日本語.md': 'y\n' });
    write(repo, 'second.txt', '2\n');
    sh(repo, 'add', '-A');
    sh(repo, 'commit', '-qm', 'second');
    sh(repo, 'checkout', '-q', '--detach', 'HEAD~1');
    write(repo, 'untracked é.txt', 'u\n');
    const before = fingerprint(repo);
    const ws = await manager.prepare({ taskId: id(), repoPath: repo });
    try {
      assert.equal(sh(ws.dir, 'rev-parse', 'HEAD'), sh(repo, 'rev-parse', 'HEAD'));
      assert.equal(existsSync(join(ws.dir, 'second.txt')), false);
      assert.match(ws.notes.join('\n'), /detached HEAD/);
      assert.equal(readFileSync(join(ws.dir, 'untracked é.txt'), 'utf8'), 'u\n');
      write(ws.dir, 'dir with space/naïve file ü.txt', 'edited\n');
      write(ws.dir, '日本語.md', 'y\nz\n');
      const { patch } = await manager.changes(ws);
      const check = applyCheck(repo, patch);
      assert.ok(check.ok, check.message);
      const applied = applyToCopy(repo, patch, join(space.base, 'detached-applied'));
      assert.equal(readFileSync(join(applied, 'dir with space/naïve file ü.txt'), 'utf8'), 'edited\n');
      assert.equal(readFileSync(join(applied, '日本語.md'), 'utf8'), 'y\nz\n');
    } finally {
      await manager.remove(ws);
    }
    assert.equal(fingerprint(repo), before);

    const unborn = join(space.base, 'unborn');
    mkdirSync(unborn);
    sh(unborn, 'init', '-q');
    write(unborn, 'first.txt', 'first\n');
    const ws2 = await manager.prepare({ taskId: id(), repoPath: unborn });
    try {
      assert.equal(readFileSync(join(ws2.dir, 'first.txt'), 'utf8'), 'first\n');
      assert.match(ws2.notes.join('\n'), /no commits yet/);
      write(ws2.dir, 'first.txt', 'first!\n');
      const { patch } = await manager.changes(ws2);
      assert.ok(applyCheck(unborn, patch).ok);
    } finally {
      await manager.remove(ws2);
    }
  });

  it('leaves submodules empty and LFS pointers as pointers, and says so', async () => {
    const sub = makeRepo(space.base, 'sub-origin', { 'lib.txt': 'lib\n' });
    const pointer =
      'version https://git-lfs.github.com/spec/v1\noid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 12345\n';
    const repo = makeRepo(space.base, 'super', {
      'main.txt': 'main\n',
      '.gitattributes': '*.bin filter=lfs diff=lfs merge=lfs -text\n',
      'big.bin': pointer,
    });
    sh(repo, '-c', 'protocol.file.allow=always', 'submodule', 'add', '-q', sub, 'vendor/sub');
    sh(repo, 'commit', '-qm', 'add submodule');
    const before = fingerprint(repo);
    const ws = await manager.prepare({ taskId: id(), repoPath: repo });
    try {
      const notes = ws.notes.join('\n');
      assert.match(notes, /Submodules are not checked out.*vendor\/sub/);
      assert.match(notes, /Git LFS are pointer files/);
      assert.equal(readFileSync(join(ws.dir, 'big.bin'), 'utf8'), pointer);
      assert.equal(existsSync(join(ws.dir, 'vendor/sub/lib.txt')), false);
      write(ws.dir, 'vendor/sub/agent-wrote.txt', 'inside the submodule\n');
      write(ws.dir, 'main.txt', 'main edited\n');
      const { patch } = await manager.changes(ws);
      assert.doesNotMatch(patch, /vendor\/sub/);
      assert.ok(applyCheck(repo, patch).ok);
    } finally {
      await manager.remove(ws);
    }
    assert.equal(fingerprint(repo), before);
  });

  it('runs no hook, fsmonitor, filter or diff driver planted in the clone or the user repository', async () => {
    const markers = join(space.base, 'markers');
    mkdirSync(markers);
    const script = (name: string) => {
      const p = join(space.base, `evil-${name}.sh`);
      writeFileSync(p, `#!/bin/sh\ntouch "${markers}/${name}"\ncat\n`, { mode: 0o755 });
      return p;
    };
    const repo = makeRepo(space.base, 'hostile', { 'a.txt': 'a\n', '.gitattributes': '* filter=evil diff=evil\n' });
    // In the user's repository: hooks and fsmonitor (config a cloned repo cannot carry, but a user may have).
    for (const hook of ['post-checkout', 'pre-commit', 'post-index-change', 'reference-transaction']) {
      writeFileSync(join(repo, '.git/hooks', hook), `#!/bin/sh\ntouch "${markers}/user-${hook}"\n`, { mode: 0o755 });
    }
    sh(repo, 'config', 'core.fsmonitor', script('user-fsmonitor'));
    write(repo, 'a.txt', 'dirty\n');
    const before = fingerprint(repo);
    const ws = await manager.prepare({ taskId: id(), repoPath: repo });
    try {
      // What an agent can plant in its clone.
      sh(ws.dir, 'config', 'core.fsmonitor', script('fsmonitor'));
      sh(ws.dir, 'config', 'core.hooksPath', join(ws.dir, 'hooks'));
      sh(ws.dir, 'config', 'filter.evil.clean', script('clean'));
      sh(ws.dir, 'config', 'filter.evil.smudge', script('smudge'));
      sh(ws.dir, 'config', 'diff.evil.textconv', script('textconv'));
      sh(ws.dir, 'config', 'diff.evil.command', script('diffcmd'));
      sh(ws.dir, 'config', 'diff.external', script('external'));
      sh(ws.dir, 'config', 'core.pager', script('pager'));
      mkdirSync(join(ws.dir, 'hooks'));
      for (const hook of ['post-checkout', 'pre-commit', 'post-index-change', 'reference-transaction']) {
        writeFileSync(join(ws.dir, 'hooks', hook), `#!/bin/sh\ntouch "${markers}/clone-${hook}"\n`, { mode: 0o755 });
        writeFileSync(join(ws.dir, '.git/hooks', hook), `#!/bin/sh\ntouch "${markers}/clone-git-${hook}"\n`, {
          mode: 0o755,
        });
      }
      write(ws.dir, '.gitattributes', '* filter=evil diff=evil\n*.txt filter=evil diff=evil\n');
      write(ws.dir, 'a.txt', 'changed by the agent\n');
      write(ws.dir, 'b.txt', 'new\n');
      const { patch } = await manager.changes(ws);
      assert.match(patch, /\+changed by the agent/);
      assert.ok(applyCheck(repo, patch).ok);
    } finally {
      await manager.remove(ws);
    }
    assert.deepEqual(listMarkers(markers), [], 'no planted program ran');
    assert.equal(fingerprint(repo), before);
  });

  it('sweeps orphans: stops a worker only when /proc/<pid>/cwd is inside the workspace, keeps live owners', async () => {
    const repo = makeRepo(space.base, 'sweep', { 'a.txt': 'a\n' });
    const orphanMgr = new WorkspaceManager({ root: space.root, userHome: space.home });
    const orphan = await orphanMgr.prepare({ taskId: 'orphan', repoPath: repo });
    const reused = await orphanMgr.prepare({ taskId: 'reused', repoPath: repo });
    const mine = await orphanMgr.prepare({ taskId: 'mine', repoPath: repo });
    const worker = spawn('sleep', ['60'], { cwd: orphan.dir, detached: true, stdio: 'ignore' });
    const stranger = spawn('sleep', ['60'], { cwd: space.base, detached: true, stdio: 'ignore' });
    try {
      await orphanMgr.recordWorker(orphan, worker.pid!);
      await orphanMgr.recordWorker(reused, stranger.pid!);
      // Their owner is a process that has exited.
      const dead = spawn('true');
      await new Promise((r) => dead.on('exit', r));
      for (const ws of [orphan, reused]) {
        const p = join(ws.privateDir, 'owner.json');
        const rec = JSON.parse(readFileSync(p, 'utf8')) as Record<string, unknown>;
        writeFileSync(p, JSON.stringify({ ...rec, ownerPid: dead.pid }));
      }
      const workerExit = new Promise((r) => worker.on('exit', r));
      const report = await manager.sweep();
      assert.deepEqual(report.killed, [worker.pid]);
      assert.ok(report.removed.includes(orphan.dir) && report.removed.includes(reused.dir));
      assert.ok(!report.removed.includes(mine.dir), 'a live owner keeps its workspace');
      await workerExit;
      assert.equal(stranger.exitCode, null, 'a pid that runs elsewhere is never killed');
      assert.ok(isRunning(stranger.pid!));
      assert.equal(existsSync(orphan.dir), false);
      assert.equal(existsSync(mine.dir), true);
    } finally {
      stranger.kill('SIGKILL');
      worker.kill('SIGKILL');
      await manager.remove(mine);
    }
  });

  it('sweeps with the running tasks: keeps theirs whoever owns them, judges another host only by them, and a clean stop removes its own', async () => {
    const repo = makeRepo(space.base, 'sweep-running', { 'a.txt': 'a\n' });
    const dead = spawn('true');
    await new Promise((r) => dead.on('exit', r));
    const setOwner = (ws: { privateDir: string }, patch: Record<string, unknown>): void => {
      const p = join(ws.privateDir, 'owner.json');
      writeFileSync(p, JSON.stringify({ ...(JSON.parse(readFileSync(p, 'utf8')) as object), ...patch }));
    };
    const stillRunning = await manager.prepare({ taskId: 'sr-running', repoPath: repo });
    const deadOwner = await manager.prepare({ taskId: 'sr-dead', repoPath: repo });
    const otherHost = await manager.prepare({ taskId: 'sr-other-host', repoPath: repo });
    const mineDone = await manager.prepare({ taskId: 'sr-mine-done', repoPath: repo });
    const mineRunning = await manager.prepare({ taskId: 'sr-mine-running', repoPath: repo });
    try {
      setOwner(stillRunning, { ownerPid: dead.pid });
      setOwner(deadOwner, { ownerPid: dead.pid });
      // A live pid here, but recorded by another host: it says nothing about that process.
      setOwner(otherHost, { ownerHost: 'another-host.invalid' });

      const alone = await manager.sweep();
      assert.ok(alone.removed.includes(deadOwner.dir));
      assert.ok(alone.removed.includes(stillRunning.dir), 'without the running tasks only the owner counts');
      assert.ok(!alone.removed.includes(otherHost.dir), 'another host’s workspace is left without the store’s word');

      const again = await manager.prepare({ taskId: 'sr-running', repoPath: repo });
      setOwner(again, { ownerPid: dead.pid });
      const running = new Set(['sr-running', 'sr-mine-running', 'sr-other-host']);
      const periodic = await manager.sweep({ running: () => Promise.resolve(running) });
      assert.deepEqual(periodic.removed, [], 'a running task’s workspace is kept, even when its owner looks dead');
      assert.ok(existsSync(again.dir) && existsSync(mineDone.dir), 'this process’s workspaces stay while it runs');

      running.delete('sr-other-host');
      const atStop = await manager.sweep({ running: () => Promise.resolve(running), own: true });
      assert.deepEqual(atStop.removed.sort(), [mineDone.dir, otherHost.dir].sort());
      assert.ok(existsSync(again.dir) && existsSync(mineRunning.dir));
      assert.equal(existsSync(join(space.root, PRIVATE_DIR_NAME, 'sr-mine-done')), false);
    } finally {
      for (const ws of [stillRunning, deadOwner, otherHost, mineDone, mineRunning]) await manager.remove(ws);
    }
  });

  it('says when the agent deleted its folder or every file in it', async () => {
    const repo = makeRepo(space.base, 'destroy', { 'a.txt': 'a\n', 'b/c.txt': 'c\n' });
    const ws = await manager.prepare({ taskId: id(), repoPath: repo });
    rmSync(join(ws.dir, 'a.txt'));
    rmSync(join(ws.dir, 'b'), { recursive: true });
    const all = await manager.changes(ws);
    assert.match(all.destroyed ?? '', /deleted every file/);
    assert.equal(all.patch, '');
    rmSync(ws.dir, { recursive: true });
    symlinkSync('/', ws.dir);
    const gone = await manager.changes(ws);
    assert.match(gone.destroyed ?? '', /deleted its workspace folder/);
    unlinkSync(ws.dir);
    await manager.remove(ws);
  });

  it('copies a linked worktree at its own HEAD with its own uncommitted changes', async () => {
    const repo = makeRepo(space.base, 'main-wt', { 'a.txt': 'main\n' });
    const wt = join(space.base, 'linked-wt');
    sh(repo, 'worktree', 'add', '-q', '-b', 'feature', wt);
    write(wt, 'a.txt', 'feature commit\n');
    sh(wt, 'commit', '-qam', 'feature');
    write(wt, 'a.txt', 'feature dirty\n');
    write(repo, 'a.txt', 'main dirty\n');
    const before = [fingerprint(repo), fingerprint(wt)];
    const ws = await manager.prepare({ taskId: id(), repoPath: wt });
    try {
      assert.equal(sh(ws.dir, 'rev-parse', 'HEAD'), sh(wt, 'rev-parse', 'HEAD'));
      assert.equal(readFileSync(join(ws.dir, 'a.txt'), 'utf8'), 'feature dirty\n');
      write(ws.dir, 'a.txt', 'feature agent\n');
      const { patch } = await manager.changes(ws);
      assert.ok(applyCheck(wt, patch).ok);
      assert.equal(applyCheck(repo, patch).ok, false, 'the patch is against the linked worktree, not the main one');
    } finally {
      await manager.remove(ws);
    }
    assert.deepEqual([fingerprint(repo), fingerprint(wt)], before);
  });

  it('mentions unsaved editor files in the notes', async () => {
    const repo = makeRepo(space.base, 'unsaved', { 'a.txt': 'a\n' });
    const ws = await manager.prepare({ taskId: id(), repoPath: repo, unsavedFiles: ['a.txt'] });
    assert.match(ws.notes.join('\n'), /unsaved editor changes to a\.txt/);
    await manager.remove(ws);
  });
});

function execChmod(p: string): void {
  chmodSync(p, 0o755);
}

function listMarkers(dir: string): string[] {
  return readdirSync(dir);
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
