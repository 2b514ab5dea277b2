/**
 * `npm run bench -- <name>…` runs the named benchmarks (all when none is named). Each lives in
 * bench/<name>.ts, exports `run(): Promise<void>`, and prints `BENCH <name> ratio=<x> …` lines: a ratio
 * against a baseline measured in the same run, because these machines are noisy.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

async function main(): Promise<void> {
  const available = readdirSync(__dirname)
    .filter((f) => f.endsWith('.ts') && !['index.ts', 'util.ts'].includes(f))
    .map((f) => f.slice(0, -3))
    .sort();
  const wanted = process.argv.slice(2).filter((a) => !a.startsWith('-'));
  const unknown = wanted.filter((w) => !available.includes(w));
  if (unknown.length) {
    console.error(`unknown benchmark(s): ${unknown.join(', ')}; available: ${available.join(', ') || 'none'}`);
    process.exit(2);
  }
  for (const name of wanted.length ? wanted : available) {
    console.log(`# bench ${name}`);
    const mod = (await import(join(__dirname, `${name}.ts`))) as { run: () => Promise<void> };
    await mod.run();
  }
}

void main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
