/**
 * Runs one agent process with a deadline, a cancel signal and an output cap. Whatever ends the run
 * (deadline, cancel, flood) kills the whole process tree, so a CLI's children die with it: on POSIX
 * the process runs in its own group, which gets TERM, then KILL after a grace period; Windows has no
 * process groups (`process.kill(-pid)` does nothing there), so `taskkill /T /F` ends the tree.
 */
import { spawn as nodeSpawn } from 'node:child_process';
import type { ChildProcess, SpawnOptions } from 'node:child_process';
import { win32 } from 'node:path';

/** The part of child_process.spawn a run uses (tests record calls with their own). */
export type SpawnFn = (command: string, args: readonly string[], options: SpawnOptions) => ChildProcess;

export interface ProcessRunOptions {
  readonly command: string;
  readonly args: readonly string[];
  readonly cwd: string;
  readonly env: NodeJS.ProcessEnv;
  /** Written to stdin, which is then closed (many CLIs read their prompt there). */
  readonly stdin?: string;
  /** Absolute epoch ms. */
  readonly deadline: number;
  readonly signal: AbortSignal;
  /** stdout + stderr bytes after which the run is stopped as a flood. */
  readonly maxOutputBytes?: number;
  /** Longest stdout line kept; longer lines are cut (the rest is dropped). */
  readonly maxLineBytes?: number;
  readonly killGraceMs?: number;
  /** The arguments are already quoted for cmd.exe (see launch.ts); Windows only. */
  readonly windowsVerbatimArguments?: boolean;
  /** Default process.platform. */
  readonly platform?: NodeJS.Platform;
  /** Default child_process.spawn. */
  readonly spawn?: SpawnFn;
  onSpawn?(pid: number): void;
  onStdoutLine?(line: string): void;
  onStderr?(text: string): void;
}

export type ProcessEnd = 'exited' | 'expired' | 'canceled' | 'flooded' | 'spawn-failed';

export interface ProcessRunResult {
  readonly end: ProcessEnd;
  readonly exitCode: number | null;
  readonly signal: NodeJS.Signals | null;
  /** The last few KiB of stderr, for a failure report. */
  readonly stderrTail: string;
  readonly outputBytes: number;
  readonly error?: string;
}

const TAIL = 4096;

export function runProcess(opts: ProcessRunOptions): Promise<ProcessRunResult> {
  const maxOutput = opts.maxOutputBytes ?? 32 * 1024 * 1024;
  const maxLine = opts.maxLineBytes ?? 8 * 1024 * 1024;
  return new Promise((resolve) => {
    let end: ProcessEnd = 'exited';
    let outputBytes = 0;
    let stderrTail = '';
    let lineBuf = '';
    let lineOverflow = false;
    let settled = false;
    let killTimer: NodeJS.Timeout | undefined;

    if (opts.signal.aborted) {
      resolve({ end: 'canceled', exitCode: null, signal: null, stderrTail: '', outputBytes: 0 });
      return;
    }
    let child: ChildProcess;
    const running = () => child.exitCode === null && child.signalCode === null;
    const tree = processTree(opts.platform ?? process.platform, opts.spawn ?? nodeSpawn, opts.env, running);
    try {
      child = (opts.spawn ?? nodeSpawn)(opts.command, opts.args, {
        cwd: opts.cwd,
        env: opts.env,
        // A process group of its own on POSIX; on Windows this would only open a console of its own.
        detached: tree.detached,
        windowsHide: true,
        windowsVerbatimArguments: opts.windowsVerbatimArguments,
        stdio: ['pipe', 'pipe', 'pipe'],
      });
    } catch (e) {
      resolve({
        end: 'spawn-failed',
        exitCode: null,
        signal: null,
        stderrTail: '',
        outputBytes: 0,
        error: (e as Error).message,
      });
      return;
    }

    const killGroup = (why: ProcessEnd) => {
      if (end === 'exited') end = why;
      const pid = child.pid;
      if (pid === undefined) return;
      tree.terminate(pid);
      killTimer ??= setTimeout(() => tree.kill(pid), opts.killGraceMs ?? 2000);
    };
    const onAbort = () => killGroup('canceled');
    opts.signal.addEventListener('abort', onAbort, { once: true });
    const deadlineTimer = setTimeout(() => killGroup('expired'), Math.max(0, opts.deadline - Date.now()));

    const count = (n: number) => {
      outputBytes += n;
      if (outputBytes > maxOutput) killGroup('flooded');
    };
    child.stdout?.setEncoding('utf8');
    child.stderr?.setEncoding('utf8');
    child.stdout?.on('data', (chunk: string) => {
      count(Buffer.byteLength(chunk));
      if (end !== 'exited') return;
      let start = 0;
      for (let i = chunk.indexOf('\n'); i !== -1; i = chunk.indexOf('\n', start)) {
        const piece = chunk.slice(start, i);
        const line = lineOverflow ? lineBuf : lineBuf + piece;
        lineBuf = '';
        lineOverflow = false;
        start = i + 1;
        opts.onStdoutLine?.(line.endsWith('\r') ? line.slice(0, -1) : line);
      }
      if (!lineOverflow) {
        lineBuf += chunk.slice(start);
        if (lineBuf.length > maxLine) {
          lineBuf = lineBuf.slice(0, maxLine);
          lineOverflow = true;
        }
      }
    });
    child.stderr?.on('data', (chunk: string) => {
      count(Buffer.byteLength(chunk));
      stderrTail = (stderrTail + chunk).slice(-TAIL);
      opts.onStderr?.(chunk);
    });
    child.stdin?.on('error', () => {
      // The CLI may exit without reading its stdin.
    });
    child.stdin?.end(opts.stdin ?? '');

    const finish = (exitCode: number | null, signal: NodeJS.Signals | null, error?: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(deadlineTimer);
      if (killTimer) clearTimeout(killTimer);
      opts.signal.removeEventListener('abort', onAbort);
      if (lineBuf && end === 'exited') opts.onStdoutLine?.(lineBuf);
      // Anything left in the group (a child that outlived the CLI) goes with it.
      if (child.pid !== undefined) tree.afterExit(child.pid);
      resolve({ end: error ? 'spawn-failed' : end, exitCode, signal, stderrTail, outputBytes, error });
    };
    child.on('error', (e) => finish(null, null, e.message));
    child.on('spawn', () => {
      if (child.pid !== undefined) opts.onSpawn?.(child.pid);
    });
    child.on('exit', (code, sig) => {
      // Wait for the pipes to drain, but not for grandchildren that keep them open.
      const t = setTimeout(() => {
        child.stdout?.destroy();
        child.stderr?.destroy();
        finish(code, sig);
      }, 2000);
      child.on('close', () => {
        clearTimeout(t);
        finish(code, sig);
      });
    });
  });
}

interface ProcessTree {
  readonly detached: boolean;
  /** Asks the tree to stop. */
  terminate(pid: number): void;
  /** Stops it for good. */
  kill(pid: number): void;
  /** The CLI has exited: what is left of its tree. */
  afterExit(pid: number): void;
}

/** How a run's process tree is stopped on this platform; `running`: the CLI itself has not exited yet. */
export function processTree(
  platform: NodeJS.Platform,
  spawn: SpawnFn,
  env: NodeJS.ProcessEnv,
  running: () => boolean = () => true,
): ProcessTree {
  if (platform !== 'win32')
    return {
      detached: true,
      terminate: (pid) => signalGroup(pid, 'SIGTERM'),
      kill: (pid) => signalGroup(pid, 'SIGKILL'),
      afterExit: (pid) => signalGroup(pid, 'SIGKILL'),
    };
  const taskkill = (pid: number) => {
    // Windows cannot ask a console program to stop without a console: /F ends the tree at once.
    try {
      const root = env.SystemRoot ?? env.SYSTEMROOT ?? process.env.SystemRoot;
      const exe = root ? win32.join(root, 'System32', 'taskkill.exe') : 'taskkill.exe';
      const k = spawn(exe, ['/pid', String(pid), '/T', '/F'], { stdio: 'ignore', windowsHide: true });
      k.on('error', () => undefined);
    } catch {
      // Nothing more can be done from here; the deadline report still says the run was stopped.
    }
  };
  // The tree is found through the CLI's pid; once the CLI has exited that pid may already name
  // another process, so taskkill runs only while the CLI is still there.
  const whileRunning = (pid: number) => {
    if (running()) taskkill(pid);
  };
  return { detached: false, terminate: whileRunning, kill: whileRunning, afterExit: () => undefined };
}

function signalGroup(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(-pid, sig);
  } catch {
    // The group is gone already.
  }
}
