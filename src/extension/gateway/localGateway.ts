/**
 * The local gateway as the editor's windows share it, without `vscode`: find the one running in a state
 * folder by asking it who it is, start one when none answers, register and release a window's folders,
 * and ask it to stop. A process id is never proof of anything: `gateway.json` may be stale and its pid
 * reused by another program of the user, so no process is ever signalled (docs/security.md).
 */
import { spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync, rmSync, statSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { isRecord } from '../../core/isRecord';
import { sleep } from '../../core/sleep';
import { newNonce, provesInstance } from '../../node/instanceProof';

/** What a running local gateway wrote into its state folder when it started listening. */
export interface LocalGatewayInfo {
  readonly url: string;
  readonly pid: number;
  readonly tokenFile: string;
  /** The random id the gateway answers `GET /baton/instance` with: what proves it is this gateway. */
  readonly instanceId: string;
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

/** What the gateway says about itself at `GET /baton/instance`. */
export interface GatewayInstance {
  readonly instanceId: string;
  readonly version: string;
  readonly pid: number;
  readonly roots: readonly string[];
}

/** Why a gateway could not be started: the supervisor turns it into the user's words. */
export class GatewayStartError extends Error {
  constructor(
    readonly kind: 'exited' | 'timeout',
    readonly logFile: string,
    readonly exitCode: number | null,
  ) {
    super(
      kind === 'exited'
        ? `baton-gateway exited with code ${exitCode}. See ${logFile}.`
        : `baton-gateway did not start within 20 seconds. See ${logFile}.`,
    );
  }
}

export interface LocalGatewayOptions {
  readonly stateDir: string;
  /** The program and its first arguments, e.g. [process.execPath, '/ext/dist/gateway.js']. */
  readonly command: readonly string[];
  /** The started gateway stops after this long with no folders and no running task (0: never). */
  readonly idleStopMs: number;
  readonly log: (line: string) => void;
  readonly env?: NodeJS.ProcessEnv;
  readonly startTimeoutMs?: number;
  /** How long `stop()` waits for the gateway to finish its tasks and go. */
  readonly stopTimeoutMs?: number;
}

export interface Attached {
  readonly info: LocalGatewayInfo;
  readonly reused: boolean;
}

function codingClisOf(v: unknown): CodingCliInfo[] | undefined {
  if (!Array.isArray(v)) return undefined;
  return v
    .filter(isRecord)
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

/** `--cli` arguments for the configured coding CLI paths, in a stable order. */
export function cliArgs(cliPaths: Readonly<Record<string, string>>): string[] {
  return Object.entries(cliPaths)
    .filter(([, p]) => p.trim() !== '')
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([id, p]) => `${id}=${p.trim()}`);
}

/** What `gateway.json` says, unproven: only `LocalGateway.verify` tells whether that gateway still runs. */
export function readGatewayInfo(stateDir: string): LocalGatewayInfo | undefined {
  const file = join(stateDir, 'gateway.json');
  if (!existsSync(file)) return undefined;
  try {
    const v: unknown = JSON.parse(readFileSync(file, 'utf8'));
    if (!isRecord(v)) return undefined;
    if (typeof v.url !== 'string' || typeof v.pid !== 'number' || typeof v.tokenFile !== 'string') return undefined;
    if (typeof v.instanceId !== 'string') return undefined;
    const codingClis = codingClisOf(v.codingClis);
    return {
      url: v.url,
      pid: v.pid,
      tokenFile: v.tokenFile,
      instanceId: v.instanceId,
      clis: Array.isArray(v.clis) ? v.clis.filter((c): c is string => typeof c === 'string') : [],
      ...(codingClis ? { codingClis } : {}),
    };
  } catch {
    return undefined;
  }
}

function lockAge(file: string): number | undefined {
  try {
    return Date.now() - statSync(file).mtimeMs;
  } catch {
    return undefined;
  }
}

function sameSet(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x) => b.includes(x));
}

export class LocalGateway {
  private readonly stateDir: string;

  constructor(private readonly opts: LocalGatewayOptions) {
    this.stateDir = opts.stateDir;
  }

  /** The token of a gateway (read from its 0600 file; never logged). */
  token(info: LocalGatewayInfo): string {
    return readFileSync(info.tokenFile, 'utf8').trim();
  }

  /** Asks the gateway `gateway.json` names who it is: its answer if it is that gateway, else undefined. */
  async verify(info: LocalGatewayInfo): Promise<GatewayInstance | undefined> {
    try {
      // The token goes only to a listener that first proves it holds it: a stale gateway.json's port
      // may belong to another process by now.
      if (!(await this.proves(info))) return undefined;
      const res = await this.call(info, 'GET', '/baton/instance');
      if (!res.ok) return undefined;
      const v: unknown = await res.json();
      if (!isRecord(v) || v.instanceId !== info.instanceId) return undefined;
      return {
        instanceId: info.instanceId,
        version: typeof v.version === 'string' ? v.version : '',
        pid: typeof v.pid === 'number' ? v.pid : info.pid,
        roots: Array.isArray(v.roots) ? v.roots.filter((r): r is string => typeof r === 'string') : [],
      };
    } catch {
      return undefined;
    }
  }

  /** The gateway of this state folder that answers as itself, if any. */
  async findRunning(): Promise<LocalGatewayInfo | undefined> {
    const info = readGatewayInfo(this.stateDir);
    return info && (await this.verify(info)) ? info : undefined;
  }

  /**
   * Uses the running gateway (adding these folders to the ones it serves) or starts one. A gateway
   * started with other coding CLI paths is asked to stop and started again with the folders it served.
   */
  async attach(roots: readonly string[], clis: readonly string[]): Promise<Attached> {
    const unlock = await this.lockStart();
    try {
      return await this.attachLocked(roots, clis);
    } finally {
      unlock();
    }
  }

  private async attachLocked(roots: readonly string[], clis: readonly string[]): Promise<Attached> {
    const existing = readGatewayInfo(this.stateDir);
    const instance = existing ? await this.verify(existing) : undefined;
    let served: readonly string[] = [];
    if (existing && instance) {
      if (sameSet(existing.clis, clis)) {
        await this.changeRoots(existing, { add: roots });
        this.opts.log(`gateway: reusing ${existing.url} (instance ${existing.instanceId})`);
        return { info: existing, reused: true };
      }
      this.opts.log('gateway: the coding CLI paths changed; restarting it');
      served = instance.roots;
      await this.stopVerified(existing);
    } else if (existing) {
      this.forgetStale(existing);
    }
    const info = await this.start([...new Set([...served, ...roots])], clis);
    return { info, reused: false };
  }

  /**
   * Two windows opening at once would each start a gateway, and the second would overwrite the first's
   * `gateway.json`: one window at a time looks for the gateway and starts it (`start.lock`, created
   * exclusively). A lock older than a start may take is left over from a window that died; it is taken over.
   */
  private async lockStart(): Promise<() => void> {
    await mkdir(this.stateDir, { recursive: true, mode: 0o700 });
    const file = join(this.stateDir, 'start.lock');
    const staleMs = (this.opts.startTimeoutMs ?? 20_000) + 10_000;
    for (;;) {
      try {
        closeSync(openSync(file, 'wx', 0o600));
        return () => rmSync(file, { force: true });
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      }
      const age = lockAge(file);
      if (age !== undefined && age > staleMs) rmSync(file, { force: true });
      else await sleep(100);
    }
  }

  /** Lets go of a window's folders; the gateway keeps serving the others (and stops when idle). */
  async detach(roots: readonly string[]): Promise<void> {
    if (roots.length === 0) return;
    const info = await this.findRunning();
    if (info) await this.changeRoots(info, { remove: roots });
  }

  /** Asks the running gateway to stop and waits until it has; a gateway that does not answer as itself is left alone. */
  async stop(): Promise<void> {
    const info = readGatewayInfo(this.stateDir);
    if (!info) return;
    if (await this.verify(info)) await this.stopVerified(info);
    else this.forgetStale(info);
  }

  private async stopVerified(info: LocalGatewayInfo): Promise<void> {
    const res = await this.call(info, 'POST', '/baton/shutdown');
    if (!res.ok) throw new Error(`the local gateway refused to stop (HTTP ${res.status})`);
    const deadline = Date.now() + (this.opts.stopTimeoutMs ?? 30_000);
    // It removes gateway.json once its tasks have stopped and it no longer listens.
    while (readGatewayInfo(this.stateDir)?.instanceId === info.instanceId && Date.now() < deadline) await sleep(100);
    this.opts.log(`gateway: stopped instance ${info.instanceId}`);
  }

  /** A `gateway.json` nothing answers for (as that gateway): removed, and its pid never touched. */
  private forgetStale(info: LocalGatewayInfo): void {
    if (readGatewayInfo(this.stateDir)?.instanceId !== info.instanceId) return;
    rmSync(join(this.stateDir, 'gateway.json'), { force: true });
    this.opts.log(`gateway: ${info.url} does not answer as the gateway gateway.json names; starting a new one`);
  }

  private async changeRoots(info: LocalGatewayInfo, change: { add?: readonly string[]; remove?: readonly string[] }) {
    const res = await this.call(info, 'POST', '/baton/roots', change);
    if (!res.ok) {
      const body: unknown = await res.json().catch(() => undefined);
      const message = isRecord(body) && isRecord(body.error) ? String(body.error.message) : `HTTP ${res.status}`;
      throw new Error(`the local gateway did not take the folders: ${message}`);
    }
  }

  /**
   * Answers a consent question the gateway asked on a parent task's stream (`POST /baton/consent/<id>`).
   * Resolves to undefined once the gateway took the answer, else to why it did not.
   */
  async answerConsent(info: LocalGatewayInfo, id: string, decision: 'allow' | 'deny'): Promise<string | undefined> {
    const res = await this.call(info, 'POST', `/baton/consent/${encodeURIComponent(id)}`, { decision });
    if (res.ok) return undefined;
    const body: unknown = await res.json().catch(() => undefined);
    return isRecord(body) && isRecord(body.error) ? String(body.error.message) : `HTTP ${res.status}`;
  }

  /** Whether the listener at `info.url` is the instance `gateway.json` names and holds its token. */
  private async proves(info: LocalGatewayInfo): Promise<boolean> {
    const nonce = newNonce();
    const url = new URL('/baton/hello', info.url);
    url.searchParams.set('nonce', nonce);
    const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
    if (!res.ok) return false;
    const v: unknown = await res.json();
    if (!isRecord(v) || v.instanceId !== info.instanceId || typeof v.proof !== 'string') return false;
    return provesInstance(v.proof, this.token(info), info.instanceId, nonce);
  }

  private call(info: LocalGatewayInfo, method: 'GET' | 'POST', path: string, body?: unknown): Promise<Response> {
    return fetch(new URL(path, info.url), {
      method,
      headers: {
        authorization: `Bearer ${this.token(info)}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(2000),
    });
  }

  private async start(roots: readonly string[], clis: readonly string[]): Promise<LocalGatewayInfo> {
    const [program, ...first] = this.opts.command;
    const args = [
      ...first,
      '--state',
      this.stateDir,
      '--host',
      '127.0.0.1',
      '--port',
      '0',
      '--idle-stop-seconds',
      String(Math.ceil(this.opts.idleStopMs / 1000)),
      ...roots.flatMap((r) => ['--root', r]),
      ...clis.flatMap((c) => ['--cli', c]),
    ];
    const logFile = join(this.stateDir, 'gateway.log');
    const logFd = openSync(logFile, 'a', 0o600);
    const child = spawn(program, args, {
      detached: true,
      stdio: ['ignore', 'ignore', logFd],
      env: { ...(this.opts.env ?? process.env), ELECTRON_RUN_AS_NODE: '1' },
    });
    child.unref();
    closeSync(logFd);
    const deadline = Date.now() + (this.opts.startTimeoutMs ?? 20_000);
    for (;;) {
      const info = readGatewayInfo(this.stateDir);
      if (info && info.pid === child.pid && (await this.verify(info))) {
        this.opts.log(`gateway: listening at ${info.url} (instance ${info.instanceId})`);
        return info;
      }
      if (child.exitCode !== null) throw new GatewayStartError('exited', logFile, child.exitCode);
      if (Date.now() > deadline) throw new GatewayStartError('timeout', logFile, null);
      await sleep(150);
    }
  }
}
