/** Shared helpers for benchmarks: timing, medians and the load the figures were taken under. */
import { loadavg } from 'node:os';

/** `load1=<1-minute load average>`, printed on every BENCH line: these machines are noisy. */
export function loadNote(): string {
  return `load1=${loadavg()[0].toFixed(1)}`;
}

export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

export async function timeMs(fn: () => Promise<unknown> | unknown): Promise<number> {
  const t = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - t) / 1e6;
}

/** Runs baseline and candidate alternately `rounds` times and returns both medians and their ratio. */
export async function compare(
  rounds: number,
  baseline: () => Promise<unknown> | unknown,
  candidate: () => Promise<unknown> | unknown,
): Promise<{ baselineMs: number; candidateMs: number; ratio: number }> {
  const b: number[] = [];
  const c: number[] = [];
  for (let i = 0; i < rounds; i++) {
    if (i % 2 === 0) {
      b.push(await timeMs(baseline));
      c.push(await timeMs(candidate));
    } else {
      c.push(await timeMs(candidate));
      b.push(await timeMs(baseline));
    }
  }
  const baselineMs = median(b);
  const candidateMs = median(c);
  return { baselineMs, candidateMs, ratio: candidateMs / baselineMs };
}
