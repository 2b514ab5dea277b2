/**
 * The relay's cost before and after a change, side by side in one run: two gateways, one built from an
 * earlier commit (`BENCH_AB_BASE`, default `HEAD~1`) and one from the working tree, proxy the same SDK
 * agent (bench/scale/child.ts), and an SDK client runs 200-task rounds through each in turn, the order
 * swapped every round. On a small shared machine two runs of `npm run bench -- scale` differ by more
 * than most changes to the relay do; two gateways measured in alternating rounds of one run differ by
 * a few percent, so this is the bench that says whether a change to the relay paid.
 *
 * `BENCH ab`: `ratio` is the working tree's CPU per relayed event over the base's (all threads;
 * `main_ratio` the event loop's alone); `round_ratios` is the lowest and highest of the ratios of the
 * rounds taken in pairs, the spread to read `ratio` against (with the base at HEAD and a clean tree,
 * an A/A run, it shows what is noise: about ±5% on a 2-core machine); the p95 latencies are from the
 * agent's publish to the client (`start` and `end`: of the tasks' first and last events, as in
 * `npm run bench -- scale`). `BENCH_AB_ROUNDS` sets the rounds (default 4).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@a2a-js/sdk/client';
import { round, together } from './scale';
import { loadNote } from './util';
import type { Child } from './scale/procs';
import { bundleTree, clientAt, cpuMsOf, percentile, startChild, startScript, stopChildren } from './scale/procs';

const TASKS = 200;

interface Side {
  readonly name: string;
  readonly gw: Child;
  readonly client: Client;
  /** Per round: CPU per relayed event (all threads). */
  readonly perEvent: number[];
  cpuMs: number;
  mainMs: number;
  events: number;
  /** Streams that failed, or lost, duplicated or reordered an event. */
  errors: number;
  readonly latencies: number[];
  /** The latencies of the tasks' first and last events (the bursts of creations and of patches; see `round`). */
  readonly start: number[];
  readonly end: number[];
}

/** The base commit's tree, bundled as the gateway ships it, under out/bench-ab/. */
async function baseScript(root: string, rev: string): Promise<{ script: string; label: string }> {
  const label = execFileSync('git', ['rev-parse', '--short', rev], { cwd: root, encoding: 'utf8' }).trim();
  const dir = join(root, 'out', 'bench-ab', label);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(join(dir, 'tree'), { recursive: true });
  const tar = execFileSync('git', ['archive', '--format=tar', rev, 'src', 'bench'], {
    cwd: root,
    maxBuffer: 256 * 1024 * 1024,
  });
  execFileSync('tar', ['-x', '-C', join(dir, 'tree')], { input: tar });
  const tree = join(dir, 'tree');
  const script = await bundleTree(tree, 'scale-child', join(tree, 'bench', 'scale', 'child.ts'), join(dir, 'bundle'));
  return { script, label };
}

export async function run(): Promise<void> {
  const root = join(__dirname, '..');
  const rev = process.env.BENCH_AB_BASE ?? 'HEAD~1';
  const rounds = Number(process.env.BENCH_AB_ROUNDS ?? 4);
  let base: { script: string; label: string };
  try {
    base = await baseScript(root, rev);
  } catch (e) {
    console.log(`BENCH ab skipped: cannot build ${rev} (${(e as Error).message.split('\n')[0]})`);
    return;
  }
  const entry = join(__dirname, 'scale', 'child.ts');
  const remote = await startChild('scale-child', entry, 'remote');
  const children: Child[] = [];
  try {
    const sides: Side[] = [];
    for (const [name, start] of [
      [base.label, () => startScript(base.script, 'gateway', remote.info.url)],
      ['working tree', () => startChild('scale-child', entry, 'gateway', remote.info.url)],
    ] as const) {
      const gw = await start();
      children.push(gw);
      const client = await clientAt(`${gw.info.url}/a2a/remote`, gw.info.token);
      sides.push({
        name,
        gw,
        client,
        perEvent: [],
        cpuMs: 0,
        mainMs: 0,
        events: 0,
        errors: 0,
        latencies: [],
        start: [],
        end: [],
      });
    }
    // Warm up both (connections, JIT, the store's first pages).
    for (const s of sides) await round(s.client, s.name, together(20));
    const cpu = (c: Child, main = false): number => cpuMsOf(c.proc, main) ?? Number.NaN;
    for (let r = 0; r < rounds; r++) {
      for (const s of r % 2 === 0 ? sides : [...sides].reverse()) {
        const [g0, m0] = [cpu(s.gw), cpu(s.gw, true)];
        const res = await round(s.client, s.name, together(TASKS));
        const [g, m] = [cpu(s.gw) - g0, cpu(s.gw, true) - m0];
        s.perEvent.push(g / res.events);
        s.cpuMs += g;
        s.mainMs += m;
        s.events += res.events;
        s.errors += res.errors;
        s.latencies.push(...res.latencies);
        s.start.push(...res.start);
        s.end.push(...res.end);
      }
    }
    const [a, b] = sides;
    const perRound = b.perEvent.map((x, i) => x / a.perEvent[i]);
    const us = (s: Side, ms: number): string => ((ms * 1000) / s.events).toFixed(1);
    console.log(
      [
        `BENCH ab ratio=${(b.cpuMs / b.events / (a.cpuMs / a.events)).toFixed(3)}`,
        `main_ratio=${(b.mainMs / b.events / (a.mainMs / a.events)).toFixed(3)}`,
        `round_ratios=${Math.min(...perRound).toFixed(3)}-${Math.max(...perRound).toFixed(3)}`,
        `base=${a.name} base_us=${us(a, a.cpuMs)} new_us=${us(b, b.cpuMs)}`,
        `base_main_us=${us(a, a.mainMs)} new_main_us=${us(b, b.mainMs)}`,
        `base_p95_ms=${percentile(a.latencies, 95).toFixed(2)} new_p95_ms=${percentile(b.latencies, 95).toFixed(2)}`,
        `base_start_p95_ms=${percentile(a.start, 95).toFixed(2)} new_start_p95_ms=${percentile(b.start, 95).toFixed(2)}`,
        `base_end_p95_ms=${percentile(a.end, 95).toFixed(2)} new_end_p95_ms=${percentile(b.end, 95).toFixed(2)}`,
        `base_errors=${a.errors} new_errors=${b.errors} tasks=${TASKS} rounds=${rounds} ${loadNote()}`,
      ].join(' '),
    );
  } finally {
    await stopChildren([...children, remote]);
  }
}
