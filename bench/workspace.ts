/**
 * `npm run bench -- workspace`: how long Baton takes to prepare an agent's workspace (clone --shared,
 * checkout, the caller's uncommitted and untracked files copied in, tree A recorded) against the
 * cheapest way git itself gives a second working tree (`git worktree add --detach`), on a repository
 * of 20,000 files with some uncommitted and untracked files. Measured alternately in the same run;
 * cleanup is not timed. Goal: ratio <= 1.2.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runGit } from '../src/node/git';
import { WorkspaceManager } from '../src/gateway/workspace/workspaceManager';
import { median, timeMs, loadNote } from './util';

const FILES = 20_000;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);

export async function run(): Promise<void> {
  const base = mkdtempSync(join(tmpdir(), 'baton-bench-ws-'));
  try {
    const repo = join(base, 'repo');
    await makeRepo(repo);
    const manager = new WorkspaceManager({ root: join(base, 'ws-root'), userHome: join(base, 'home') });
    const baton: number[] = [];
    const worktree: number[] = [];
    const once = {
      async baton(i: number) {
        let ws: Awaited<ReturnType<WorkspaceManager['prepare']>> | undefined;
        baton.push(await timeMs(async () => (ws = await manager.prepare({ taskId: `bench-${i}`, repoPath: repo }))));
        if (ws) await manager.remove(ws);
      },
      async worktree(i: number) {
        const dir = join(base, `wt-${i}`);
        worktree.push(
          await timeMs(() => runGit(['worktree', 'add', '--quiet', '--detach', dir, 'HEAD'], { cwd: repo })),
        );
        await runGit(['worktree', 'remove', '--force', dir], { cwd: repo });
      },
    };
    // One warm-up of each so both start with the same page cache.
    await once.baton(-1);
    await once.worktree(-1);
    baton.length = 0;
    worktree.length = 0;
    for (let i = 0; i < ROUNDS; i++) {
      if (i % 2 === 0) {
        await once.worktree(i);
        await once.baton(i);
      } else {
        await once.baton(i);
        await once.worktree(i);
      }
    }
    const b = median(baton);
    const w = median(worktree);
    console.log(
      `BENCH workspace ratio=${(b / w).toFixed(3)} baton_prep_ms=${b.toFixed(1)} worktree_add_ms=${w.toFixed(1)} files=${FILES} rounds=${ROUNDS} ${loadNote()}`,
    );
  } finally {
    rmSync(base, { recursive: true, force: true, maxRetries: 3 });
  }
}

async function makeRepo(repo: string): Promise<void> {
  mkdirSync(repo, { recursive: true });
  const env = {
    GIT_AUTHOR_NAME: 'bench',
    GIT_AUTHOR_EMAIL: 'bench@example.invalid',
    GIT_COMMITTER_NAME: 'bench',
    GIT_COMMITTER_EMAIL: 'bench@example.invalid',
  };
  await runGit(['init', '--quiet', '-b', 'main'], { cwd: repo });
  const perDir = 100;
  for (let d = 0; d < FILES / perDir; d++) {
    const dir = join(repo, `pkg${d}`, 'src');
    mkdirSync(dir, { recursive: true });
    for (let f = 0; f < perDir; f++)
      writeFileSync(
        join(dir, `file${f}.ts`),
        `export const value${f} = ${d * perDir + f};\n// package ${d}, file ${f}\n`,
      );
  }
  writeFileSync(join(repo, '.gitignore'), 'node_modules/\n*.log\n');
  await runGit(['add', '--all'], { cwd: repo });
  await runGit(['commit', '--quiet', '-m', 'bench'], { cwd: repo, env });
  // Uncommitted (staged and unstaged), deleted, untracked and ignored files.
  for (let i = 0; i < 20; i++)
    writeFileSync(join(repo, `pkg${i}`, 'src', 'file0.ts'), `export const changed = ${i};\n`);
  await runGit(['add', 'pkg0', 'pkg1'], { cwd: repo });
  rmSync(join(repo, 'pkg30', 'src', 'file1.ts'));
  mkdirSync(join(repo, 'scratch'));
  for (let i = 0; i < 20; i++) writeFileSync(join(repo, 'scratch', `new${i}.ts`), `export const n = ${i};\n`);
  mkdirSync(join(repo, 'node_modules', 'dep'), { recursive: true });
  writeFileSync(join(repo, 'node_modules', 'dep', 'index.js'), 'ignored\n');
  writeFileSync(join(repo, 'debug.log'), 'ignored\n');
}
