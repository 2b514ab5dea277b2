import { spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import * as vscode from 'vscode';
import { Disposable } from '../lifecycle';
import { sleep } from '../../core/sleep';

/** What a running local gateway wrote into its state folder when it started listening. */
export interface LocalGatewayInfo {
  readonly url: string;
  readonly pid: number;
  readonly tokenFile: string;
  readonly roots: readonly string[];
  /** `--cli ID=PATH` the gateway was started with. */
  readonly clis: readonly string[];
  /** The coding CLIs the gateway looked for, and whether it found each (absent from older gateways). */
  readonly codingClis?: readonly CodingCliInfo[];
}

export interface CodingCliInfo {
  readonly id: string;
  readonly name: string;
  readonly binaries: readonly string[];
  readonly found: boolean;
}

function codingClisOf(v: unknown): CodingCliInfo[] | undefined {
  if (!Array.isArray(v)) return undefined;
  return v
    .filter((x): x is Record<string, unknown> => typeof x === 'object' && x !== null)
    .filter(
      (x) =>
        typeof x.id === 'string' &&
        typeof x.name === 'string' &&
        typeof x.found === 'boolean' &&
        Array.isArray(x.binaries),
    )
    .map((x) => ({
      id: String(x.id),
      name: String(x.name),
      found: x.found === true,
      binaries: (x.binaries as unknown[]).filter((b): b is string => typeof b === 'string'),
    }));
}

export type GatewayStatus =
  | { readonly kind: 'stopped' }
  | { readonly kind: 'starting' }
  | { readonly kind: 'running'; readonly info: LocalGatewayInfo; readonly reused: boolean }
  | { readonly kind: 'failed'; readonly error: string };

function commandLine(pid: number): string[] | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  } catch {
    return undefined;
  }
}

/** A recorded pid may have been reused by another process: only a process whose command line names this state folder is ours. */
function isOurGateway(pid: number, stateDir: string): boolean {
  const cmdline = commandLine(pid);
  if (!cmdline) return process.platform !== 'linux' && isAlive(pid);
  const i = cmdline.indexOf('--state');
  return i >= 0 && cmdline[i + 1] === stateDir && cmdline.some((a) => a.endsWith('gateway.js'));
}

/** The values of a repeatable flag a running gateway was started with (from its command line). */
function flagValues(pid: number, flag: string): string[] {
  const cmdline = commandLine(pid) ?? [];
  return cmdline.flatMap((a, i) => (a === flag && cmdline[i + 1] ? [cmdline[i + 1]] : []));
}

/** `--cli` arguments for the configured coding CLI paths, in a stable order. */
export function cliArgs(cliPaths: Readonly<Record<string, string>>): string[] {
  return Object.entries(cliPaths)
    .filter(([, p]) => p.trim() !== '')
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([id, p]) => `${id}=${p.trim()}`);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export function readGatewayInfo(stateDir: string): LocalGatewayInfo | undefined {
  const file = join(stateDir, 'gateway.json');
  if (!existsSync(file)) return undefined;
  try {
    const v = JSON.parse(readFileSync(file, 'utf8')) as Partial<Record<keyof LocalGatewayInfo, unknown>>;
    if (typeof v.url !== 'string' || typeof v.pid !== 'number' || typeof v.tokenFile !== 'string') return undefined;
    const codingClis = codingClisOf(v.codingClis);
    return {
      url: v.url,
      pid: v.pid,
      tokenFile: v.tokenFile,
      roots: flagValues(v.pid, '--root'),
      clis: flagValues(v.pid, '--cli'),
      ...(codingClis ? { codingClis } : {}),
    };
  } catch {
    return undefined;
  }
}

/**
 * Starts `baton-gateway` on demand as a detached process bound to 127.0.0.1 (random port, bearer token in
 * a 0600 file in its state folder), or reuses one that is already running, so local delegations survive
 * a window reload. The gateway runs on VS Code's own Node (`process.execPath` with
 * ELECTRON_RUN_AS_NODE=1), where it stores tasks with node:sqlite.
 */
export class GatewaySupervisor extends Disposable {
  private _status: GatewayStatus = { kind: 'stopped' };
  private readonly _onDidChange = this._register(new vscode.EventEmitter<GatewayStatus>());
  readonly onDidChange = this._onDidChange.event;
  private starting: Promise<LocalGatewayInfo> | undefined;

  constructor(
    private readonly extensionUri: vscode.Uri,
    readonly stateDir: string,
    private readonly log: vscode.LogOutputChannel,
  ) {
    super();
  }

  get status(): GatewayStatus {
    return this._status;
  }

  private set(status: GatewayStatus): void {
    this._status = status;
    this._onDidChange.fire(status);
  }

  /** The token of the running gateway (read from its 0600 file; never logged). */
  token(info: LocalGatewayInfo): string {
    return readFileSync(info.tokenFile, 'utf8').trim();
  }

  private async answers(info: LocalGatewayInfo): Promise<boolean> {
    try {
      const res = await fetch(new URL('/.well-known/agent-card.json', info.url), {
        headers: { 'A2A-Version': '1.0' },
        signal: AbortSignal.timeout(2000),
      });
      return res.ok;
    } catch {
      return false;
    }
  }

  /** A gateway of this state folder that is already running (its process checked), if any. */
  findRunning(): LocalGatewayInfo | undefined {
    const info = readGatewayInfo(this.stateDir);
    return info && isOurGateway(info.pid, this.stateDir) ? info : undefined;
  }

  /** Reuses a running gateway for these roots and CLI paths, or (re)starts one. */
  ensureRunning(roots: readonly string[], cliPaths: Readonly<Record<string, string>> = {}): Promise<LocalGatewayInfo> {
    this.starting ??= this.start(roots, cliArgs(cliPaths)).finally(() => (this.starting = undefined));
    return this.starting;
  }

  private async start(roots: readonly string[], clis: readonly string[]): Promise<LocalGatewayInfo> {
    const existing = readGatewayInfo(this.stateDir);
    const sameClis =
      existing !== undefined && existing.clis.length === clis.length && clis.every((c) => existing.clis.includes(c));
    if (
      existing &&
      isOurGateway(existing.pid, this.stateDir) &&
      roots.every((r) => existing.roots.includes(r)) &&
      sameClis &&
      (await this.answers(existing))
    ) {
      this.log.info(`gateway: reusing ${existing.url} (pid ${existing.pid})`);
      this.set({ kind: 'running', info: existing, reused: true });
      return existing;
    }
    if (existing && isOurGateway(existing.pid, this.stateDir)) await this.stop();
    this.set({ kind: 'starting' });
    await mkdir(this.stateDir, { recursive: true, mode: 0o700 });
    const script = vscode.Uri.joinPath(this.extensionUri, 'dist', 'gateway.js').fsPath;
    const args = [
      script,
      '--state',
      this.stateDir,
      '--host',
      '127.0.0.1',
      '--port',
      '0',
      ...roots.flatMap((r) => ['--root', r]),
      ...clis.flatMap((c) => ['--cli', c]),
    ];
    this.log.info(
      `gateway: starting on ${process.versions.node ? `Node ${process.versions.node}` : 'VS Code’s runtime'}`,
    );
    const logFd = openSync(join(this.stateDir, 'gateway.log'), 'a', 0o600);
    const child = spawn(process.execPath, args, {
      detached: true,
      stdio: ['ignore', 'ignore', logFd],
      env: { ...process.env, ELECTRON_RUN_AS_NODE: '1' },
    });
    child.unref();
    closeSync(logFd);
    const deadline = Date.now() + 20_000;
    for (;;) {
      const info = readGatewayInfo(this.stateDir);
      if (info && info.pid === child.pid && (await this.answers(info))) {
        this.log.info(`gateway: listening at ${info.url} (pid ${info.pid})`);
        this.set({ kind: 'running', info, reused: false });
        return info;
      }
      if (child.exitCode !== null || Date.now() > deadline) {
        const error =
          child.exitCode !== null
            ? vscode.l10n.t(
                'baton-gateway exited with code {0}. See {1}.',
                child.exitCode,
                join(this.stateDir, 'gateway.log'),
              )
            : vscode.l10n.t(
                'baton-gateway did not start within 20 seconds. See {0}.',
                join(this.stateDir, 'gateway.log'),
              );
        this.set({ kind: 'failed', error });
        throw new Error(error);
      }
      await sleep(150);
    }
  }

  async stop(): Promise<void> {
    const info = readGatewayInfo(this.stateDir);
    if (info && isOurGateway(info.pid, this.stateDir)) {
      process.kill(info.pid, 'SIGTERM');
      const deadline = Date.now() + 5000;
      while (isAlive(info.pid) && Date.now() < deadline) await sleep(100);
      if (isOurGateway(info.pid, this.stateDir)) process.kill(info.pid, 'SIGKILL');
      this.log.info(`gateway: stopped pid ${info.pid}`);
    }
    this.set({ kind: 'stopped' });
  }
}
