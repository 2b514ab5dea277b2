/** The coding CLIs Baton can drive, and which of them are installed here. */
import { claudeHarness } from './claude';
import { codexHarness } from './codex';
import { copilotHarness } from './copilot';
import { geminiHarness } from './gemini';
import type { HarnessId, HarnessSpec } from './harness';
import type { Host } from './host';
import { nodeHost } from './host';
import { opencodeHarness } from './opencode';
import { findExecutable, resolveConfigured } from './resolveExecutable';

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
  /** Platform, environment and file checks (default: this machine). */
  readonly host?: Host;
}

export interface DetectedHarness {
  readonly spec: HarnessSpec;
  /** Absolute path of the executable. */
  readonly binary: string;
  readonly source: 'configured' | 'path';
}

/** Which CLIs are installed: a configured path, or the first of its binaries found on PATH. */
export function detectHarnesses(opts: DetectOptions = {}): DetectedHarness[] {
  const host = opts.host ?? nodeHost();
  const found: DetectedHarness[] = [];
  for (const spec of HARNESSES) {
    const configured = opts.paths?.[spec.id];
    if (configured !== undefined) {
      const binary = resolveConfigured(configured, host);
      if (binary !== undefined) found.push({ spec, binary, source: 'configured' });
      continue;
    }
    for (const name of spec.binaries) {
      const binary = findExecutable(name, host, opts.pathVar);
      if (binary !== undefined) {
        found.push({ spec, binary, source: 'path' });
        break;
      }
    }
  }
  return found;
}
