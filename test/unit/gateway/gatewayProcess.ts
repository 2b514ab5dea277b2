/**
 * A `baton-gateway` in a child process, started from source (tsx) by one of the fixtures: the fixture
 * prints one JSON line (where it listens, its token, …) once it serves.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';

export interface GatewayProcess<T> {
  readonly proc: ChildProcess;
  /** The fixture's first stdout line, parsed. */
  readonly ready: T;
  /** Everything the child wrote to stderr so far. */
  readonly stderr: () => string;
}

/**
 * Runs `node --import tsx test/unit/gateway/fixtures/<fixture> ...args` from the repository root and
 * waits (up to 30 s) for its first stdout line; rejects with the child's stderr if it exits first.
 */
export async function startGatewayProcess<T>(
  fixture: string,
  args: readonly string[],
  node: string = process.execPath,
): Promise<GatewayProcess<T>> {
  const proc = spawn(node, ['--import', 'tsx', join(__dirname, 'fixtures', fixture), ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    cwd: join(__dirname, '../../..'),
  });
  let err = '';
  proc.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  const line = await new Promise<string>((resolve, reject) => {
    let out = '';
    const t = setTimeout(() => reject(new Error(`gateway child did not start in 30 s: ${err}`)), 30_000);
    proc.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const nl = out.indexOf('\n');
      if (nl >= 0) {
        clearTimeout(t);
        resolve(out.slice(0, nl));
      }
    });
    proc.once('exit', (code) => {
      clearTimeout(t);
      reject(new Error(`gateway child exited ${code}: ${err}`));
    });
  });
  return { proc, ready: JSON.parse(line) as T, stderr: () => err };
}

/** Sends `signal` to the child (unless it has ended already) and resolves once it has exited. */
export function endProcess(proc: ChildProcess, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
  return new Promise((r) => {
    if (proc.exitCode !== null || proc.signalCode !== null) return r();
    proc.once('exit', () => r());
    proc.kill(signal);
  });
}
