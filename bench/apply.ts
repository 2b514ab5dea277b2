/**
 * Review and apply of a big agent patch: a repository of 2,000 files and a patch changing
 * 100,000 lines (25 replaced lines per file: 50,000 removed + 50,000 added). Prints, with both medians
 * measured alternately in the same run:
 *   BENCH review ratio=<prepareReview (parse + classification + check) / bare `git apply --check`>  goal ≤ 1.5
 *   BENCH apply  ratio=<applyReviewed (snapshot + apply + record) / bare `git apply`>               goal ≤ 1.3
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { applyReviewed, prepareReview } from '../src/node/patchApply';
import { median, timeMs } from './util';

const FILES = 2000;
const LINES = 120;
const CHANGED_PER_FILE = 25;
const ROUNDS = 9;

function gitPlain(cwd: string, args: string[]): void {
  execFileSync(
    'git',
    ['-c', 'user.name=B', '-c', 'user.email=b@example.invalid', '-c', 'core.hooksPath=/dev/null', ...args],
    {
      cwd,
      env: { PATH: process.env.PATH ?? '', HOME: cwd, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' },
      stdio: ['ignore', 'ignore', 'pipe'],
      maxBuffer: 1 << 30,
    },
  );
}

function build(): { root: string; patchPath: string; dir: string } {
  const dir = mkdtempSync(join(tmpdir(), 'baton-bench-apply-'));
  const root = join(dir, 'repo');
  mkdirSync(root);
  gitPlain(root, ['init', '-q', '.']);
  const content = (f: number, changed: boolean): string => {
    const out: string[] = [];
    for (let l = 0; l < LINES; l++) {
      const isChanged = changed && l % 4 === 1 && Math.floor(l / 4) < CHANGED_PER_FILE;
      out.push(
        isChanged
          ? `    value_${f}_${l} = compute(${l}, "changed by the agent");`
          : `    value_${f}_${l} = compute(${l}, "original line of file ${f}");`,
      );
    }
    return out.join('\n') + '\n';
  };
  for (let f = 0; f < FILES; f++) {
    const d = join(root, `pkg${f % 40}`);
    mkdirSync(d, { recursive: true });
    writeFileSync(join(d, `mod${f}.py`), content(f, false));
  }
  gitPlain(root, ['add', '-A']);
  gitPlain(root, ['commit', '-q', '-m', 'base']);
  for (let f = 0; f < FILES; f++) writeFileSync(join(root, `pkg${f % 40}`, `mod${f}.py`), content(f, true));
  const patch = execFileSync('git', ['diff'], {
    cwd: root,
    maxBuffer: 1 << 30,
    env: { PATH: process.env.PATH ?? '', GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' },
  });
  gitPlain(root, ['checkout', '-q', '--', '.']);
  const patchPath = join(dir, 'changes.patch');
  writeFileSync(patchPath, patch);
  return { root, patchPath, dir };
}

async function alternate(
  rounds: number,
  baseline: () => Promise<unknown> | unknown,
  candidate: () => Promise<unknown> | unknown,
  between: () => void,
): Promise<{ b: number; c: number }> {
  const b: number[] = [];
  const c: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const order = i % 2 === 0 ? [0, 1] : [1, 0];
    for (const which of order) {
      if (which === 0) b.push(await timeMs(baseline));
      else c.push(await timeMs(candidate));
      between();
    }
  }
  return { b: median(b), c: median(c) };
}

export async function run(): Promise<void> {
  const { root, patchPath, dir } = build();
  try {
    // Warm caches once for both sides.
    gitPlain(root, ['apply', '--check', patchPath]);
    const warm = await prepareReview({ folder: root, source: { path: patchPath } });
    const lines = warm.patch.files.reduce((n, f) => n + f.added + f.removed, 0);
    if (!warm.check.ok || warm.patch.files.length !== FILES)
      throw new Error(`bench setup: check failed ${JSON.stringify(warm.check.errors)}`);

    const review = await alternate(
      ROUNDS,
      () => gitPlain(root, ['apply', '--check', patchPath]),
      () => prepareReview({ folder: root, source: { path: patchPath } }),
      () => undefined,
    );
    console.log(
      `BENCH review ratio=${(review.c / review.b).toFixed(3)} baton_ms=${review.c.toFixed(1)} git_check_ms=${review.b.toFixed(1)} files=${FILES} changed_lines=${lines} load1=${loadavg()[0].toFixed(1)}`,
    );

    const all = { files: warm.patch.files.map((f) => f.id) };
    let recordMs = 0;
    let lastRecord: unknown;
    const revert = (): void => {
      // The journal serialises the record (digests before/after) right away: measured apart, untimed above.
      if (lastRecord !== undefined) {
        const t = process.hrtime.bigint();
        JSON.stringify(lastRecord);
        recordMs = Math.max(recordMs, Number(process.hrtime.bigint() - t) / 1e6);
        lastRecord = undefined;
      }
      gitPlain(root, ['apply', '-R', patchPath]);
    };
    const apply = await alternate(
      ROUNDS,
      () => gitPlain(root, ['apply', patchPath]),
      async () => {
        const out = await applyReviewed(warm, { selection: all });
        if (out.kind !== 'applied') throw new Error(`bench apply failed: ${JSON.stringify(out)}`);
        lastRecord = out.applied.record;
      },
      revert,
    );
    console.log(
      `BENCH apply ratio=${(apply.c / apply.b).toFixed(3)} baton_ms=${apply.c.toFixed(1)} git_apply_ms=${apply.b.toFixed(1)} record_digests_max_ms=${recordMs.toFixed(1)} files=${FILES} changed_lines=${lines} load1=${loadavg()[0].toFixed(1)}`,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
