/**
 * How far the gateway's heap may grow past what is live before V8 collects it in full.
 *
 * V8 lets a busy process's old generation grow to as much as four times its live size between full
 * collections. A relay turns every 64 KiB patch into a few short-lived copies (read, parsed, digested,
 * framed), and in a burst of task ends at 500 streams they outlive the young generation: heap
 * snapshots in the burst found 28–48 MiB live, yet the heap grew to 230–310 MiB between full
 * collections and the RSS to 383–458 MiB (`npm run bench -- scale`, load500, `BENCH_MEM=1`). A fixed
 * growth factor of 2 kept the same rounds at 246–350 MiB RSS (most runs 250–330), with the relay's
 * CPU per event unchanged (`npm run bench -- ab`: 0.97) and a few more full collections, whose
 * marking runs mostly on V8's helper threads. A factor of 1.5 kept about 10–30 MiB less, and in two
 * A/B runs the 200-task rounds' p95 was 12–17 ms worse with it (6 ms with 2, within their noise).
 *
 * `BATON_GATEWAY_HEAP_GROWING_PERCENT` sets another percent (0 leaves V8's own heuristics), and a
 * `--heap-growing-percent` the process was started with (node flags or NODE_OPTIONS) is left alone.
 */
import { setFlagsFromString } from 'node:v8';

export const DEFAULT_HEAP_GROWING_PERCENT = 100;

/** The percent to set, or undefined when the gateway should leave V8's setting as it is. */
export function heapGrowingPercent(
  env: NodeJS.ProcessEnv,
  execArgv: readonly string[],
): { percent: number } | { error: string } | undefined {
  const flag = /^--heap[-_]growing[-_]percent(=|$)/;
  if (execArgv.some((a) => flag.test(a)) || (env.NODE_OPTIONS ?? '').split(/\s+/).some((a) => flag.test(a)))
    return undefined;
  const raw = env.BATON_GATEWAY_HEAP_GROWING_PERCENT;
  if (raw === undefined || raw.trim() === '') return { percent: DEFAULT_HEAP_GROWING_PERCENT };
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0 || n > 300)
    return {
      error: `BATON_GATEWAY_HEAP_GROWING_PERCENT=${raw} is not a whole number from 0 to 300; using ${DEFAULT_HEAP_GROWING_PERCENT} (0 leaves V8's own heap growth)`,
    };
  return n === 0 ? undefined : { percent: n };
}

/** The percent this process applied (undefined: V8's own heuristics, or a flag it was started with). */
let applied: number | undefined;

/** Applies `heapGrowingPercent` to this process (its threads share the setting); returns what to log, if anything. */
export function applyHeapGrowth(env: NodeJS.ProcessEnv = process.env, execArgv = process.execArgv): string | undefined {
  const want = heapGrowingPercent(env, execArgv);
  if (!want) return undefined;
  applied = 'error' in want ? DEFAULT_HEAP_GROWING_PERCENT : want.percent;
  setFlagsFromString(`--heap-growing-percent=${applied}`);
  return 'error' in want ? want.error : undefined;
}

/** The process's memory as `GET /baton/instance` reports it. */
export interface MemoryInfo {
  readonly rssBytes: number;
  readonly heapUsedBytes: number;
  readonly heapTotalBytes: number;
  /** What `applyHeapGrowth` set; null when it set nothing. */
  readonly heapGrowingPercent: number | null;
}

export function memoryInfo(): MemoryInfo {
  const m = process.memoryUsage();
  return {
    rssBytes: m.rss,
    heapUsedBytes: m.heapUsed,
    heapTotalBytes: m.heapTotal,
    heapGrowingPercent: applied ?? null,
  };
}
