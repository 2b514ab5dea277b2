/** The coding CLIs Baton can drive, and which of them are installed here. */
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, isAbsolute, join } from 'node:path';
import { claudeHarness } from './claude';
import { codexHarness } from './codex';
import { copilotHarness } from './copilot';
import { geminiHarness } from './gemini';
import type { HarnessId, HarnessSpec } from './harness';
import { opencodeHarness } from './opencode';

export const HARNESSES: readonly HarnessSpec[] = [
  claudeHarness,
  codexHarness,
  geminiHarness,
  copilotHarness,
  opencodeHarness,
];

export function harnessById(id: string): HarnessSpec | undefined {
  return HARNESSES.find((h) => h.id === id);
}

export interface DetectOptions {
  /** Configured executables (machine-scoped settings), by harness id; these win over PATH. */
  readonly paths?: Partial<Record<HarnessId, string>>;
  /** PATH to search (default process.env.PATH). */
  readonly pathVar?: string;
}

export interface DetectedHarness {
  readonly spec: HarnessSpec;
  /** Absolute path of the executable. */
  readonly binary: string;
  readonly source: 'configured' | 'path';
}

/** Which CLIs are installed: a configured path, or the first of its binaries found on PATH. */
export function detectHarnesses(opts: DetectOptions = {}): DetectedHarness[] {
  const found: DetectedHarness[] = [];
  const dirs = (opts.pathVar ?? process.env.PATH ?? '').split(delimiter).filter((d) => isAbsolute(d));
  for (const spec of HARNESSES) {
    const configured = opts.paths?.[spec.id];
    if (configured !== undefined) {
      if (isAbsolute(configured) && isExecutable(configured))
        found.push({ spec, binary: configured, source: 'configured' });
      continue;
    }
    outer: for (const name of spec.binaries) {
      for (const dir of dirs) {
        const p = join(dir, name);
        if (isExecutable(p)) {
          found.push({ spec, binary: p, source: 'path' });
          break outer;
        }
      }
    }
  }
  return found;
}

function isExecutable(p: string): boolean {
  try {
    if (!statSync(p).isFile()) return false;
    accessSync(p, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
