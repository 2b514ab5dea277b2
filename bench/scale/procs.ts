/**
 * What the gateway benchmarks share: the SDK agent server, the gateway, and the SDK client, each in
 * its own process as they are in use (in one process the three would take turns on one event loop),
 * and the figures read about those processes from /proc.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { constants, PerformanceObserver } from 'node:perf_hooks';
import type { PerformanceEntry } from 'node:perf_hooks';
import { join } from 'node:path';
import express from 'express';
import { Role } from '@a2a-js/sdk';
import type { AgentCard, SendMessageRequest } from '@a2a-js/sdk';
import { ClientFactory, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import type { Client } from '@a2a-js/sdk/client';
import { DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import type { AgentExecutor } from '@a2a-js/sdk/server';
import { jsonRpcHandler } from '@a2a-js/sdk/server/express';
import type { LocalAgent } from '../../src/gateway/agents/localAgent';
import { applyHeapGrowth } from '../../src/gateway/heapGrowth';
import { startGateway } from '../../src/gateway/server';

/** A clock the processes on one machine read alike (ms since the epoch, sub-ms resolution). */
export function clockMs(): number {
  return performance.timeOrigin + performance.now();
}

export function percentile(xs: readonly number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}

function cardFor(url: string, name: string): AgentCard {
  return {
    name,
    description: name,
    supportedInterfaces: [{ url, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' }],
    provider: undefined,
    version: '1',
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [],
    signatures: [],
  };
}

/** An SDK agent server (JSON-RPC at /rpc, in-memory task store) running `executor`. */
export async function sdkServer(executor: AgentExecutor): Promise<{ url: string; close(): Promise<void> }> {
  let url = '';
  const handler = new DefaultRequestHandler(cardFor(url, 'bench'), new InMemoryTaskStore(), executor);
  Object.defineProperty(handler, 'getAgentCard', { value: () => Promise.resolve(cardFor(url, 'bench')) });
  const app = express();
  app.use(
    '/rpc',
    jsonRpcHandler({
      requestHandler: handler,
      userBuilder: () => Promise.resolve({ isAuthenticated: true, userName: 'bench' }),
    }),
  );
  const server: Server = await new Promise((r) => {
    const s = app.listen(0, '127.0.0.1', () => r(s));
  });
  // Connections wait idle through the other way's round (longer than Node's 5 s default); a reuse that
  // races the server closing one reads as ECONNRESET, which says nothing about what is measured.
  server.keepAliveTimeout = 120_000;
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/rpc`;
  return {
    url,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** An SDK client of the JSON-RPC endpoint `url` (with the gateway's bearer token when given). */
export function clientAt(url: string, token?: string): Promise<Client> {
  const fetchImpl: typeof fetch = (input, init) => {
    const headers = new Headers(init?.headers);
    if (token) headers.set('Authorization', `Bearer ${token}`);
    return fetch(input, { ...init, headers });
  };
  return new ClientFactory({ transports: [new JsonRpcTransportFactory({ fetchImpl })] }).createFromAgentCard(
    cardFor(url, 'x'),
  );
}

/** A send of one text message with a fresh messageId. */
export function request(text: string): SendMessageRequest {
  return {
    tenant: '',
    message: {
      messageId: randomUUID(),
      contextId: '',
      taskId: '',
      role: Role.ROLE_USER,
      parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: '' }],
      metadata: undefined,
      extensions: [],
      referenceTaskIds: [],
    },
    configuration: undefined,
    metadata: undefined,
  };
}

/**
 * `BENCH_MEM=1`: the gateway child samples its memory every 20 ms and prints the peaks when it stops,
 * with the largest heap read just after a full collection (what the heap's growth is measured against;
 * an upper bound of what was live, as the event loop may have allocated again before it is read).
 */
function watchMemory(): () => string {
  const peak = { rss: 0, heapTotal: 0, heapUsed: 0, external: 0 };
  let liveAfterFull = 0;
  let fullGcs = 0;
  setInterval(() => {
    const m = process.memoryUsage();
    for (const k of Object.keys(peak) as (keyof typeof peak)[]) peak[k] = Math.max(peak[k], m[k]);
  }, 20).unref();
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      if ((e as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind !== constants.NODE_PERFORMANCE_GC_MAJOR)
        continue;
      fullGcs++;
      liveAfterFull = Math.max(liveAfterFull, process.memoryUsage().heapUsed);
    }
  }).observe({ entryTypes: ['gc'] });
  const mb = (n: number): string => (n / 2 ** 20).toFixed(0);
  return () =>
    `BENCH-MEM gateway peak_rss_mb=${mb(peak.rss)} peak_heap_total_mb=${mb(peak.heapTotal)} peak_heap_used_mb=${mb(peak.heapUsed)} peak_external_mb=${mb(peak.external)} live_after_full_gc_max_mb=${mb(liveAfterFull)} full_gcs=${fullGcs}`;
}

/**
 * Starts a gateway (its own state directory, removed on SIGTERM) that proxies the SDK agent at
 * `remoteUrl` as `/a2a/remote` and runs `localAgents`; prints `{"url","token"}` on one line when ready.
 */
export async function benchGateway(remoteUrl: string, localAgents: LocalAgent[]): Promise<void> {
  // As `baton-gateway` does at start (src/gateway/cli.ts).
  applyHeapGrowth();
  const state = mkdtempSync(join(tmpdir(), 'baton-bench-gw-'));
  const gw = await startGateway({
    stateDir: state,
    localAgents,
    remoteAgents: [
      {
        id: 'remote',
        name: 'remote',
        description: '',
        url: remoteUrl,
        protocolBinding: 'JSONRPC',
        protocolVersion: '1.0',
        auth: { kind: 'none' },
        skills: [],
      },
    ],
    log: () => undefined,
  });
  process.stdout.write(`${JSON.stringify({ url: gw.url, token: gw.token })}\n`);
  const mem = process.env.BENCH_MEM === '1' ? watchMemory() : undefined;
  process.on(
    'SIGTERM',
    () =>
      void gw.close().finally(() => {
        if (mem) process.stderr.write(`${mem()}\n`);
        rmSync(state, { recursive: true, force: true });
        process.exit(0);
      }),
  );
}

/**
 * The children run a benchmark's child entry bundled the way the gateway ships (esbuild, minified, the
 * SQLite thread beside it as in dist/), not through tsx's on-the-fly loader: the figure is the shipped
 * code's. `BENCH_NODE_ARGS` adds node flags to them (e.g. `--cpu-prof`); `BENCH_MINIFY=0` keeps names
 * readable in a profile.
 */
const bundles = new Map<string, Promise<string>>();
function bundled(name: string, entry: string): Promise<string> {
  let b = bundles.get(name);
  if (!b) {
    const root = join(__dirname, '..', '..');
    b = bundleTree(root, name, entry, join(root, 'out', 'bench'));
    bundles.set(name, b);
  }
  return b;
}

/**
 * Bundles `entry` as `<outdir>/<name>.js`, with the SQLite thread of the same source tree (`root`)
 * beside it, as the gateway ships. Packages resolve from this checkout's node_modules, so another
 * tree (a checkout of an earlier commit) needs none of its own.
 */
export async function bundleTree(root: string, name: string, entry: string, outdir: string): Promise<string> {
  const esbuild = await import('esbuild');
  await esbuild.build({
    absWorkingDir: root,
    entryPoints: { [name]: entry, 'gateway-sqlite': join(root, 'src/gateway/store/sqliteWorker.ts') },
    outdir,
    bundle: true,
    minify: process.env.BENCH_MINIFY !== '0',
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    logLevel: 'warning',
    nodePaths: [join(__dirname, '..', '..', 'node_modules')],
    // As the gateway's own bundle (scripts/build.mjs): native and optional drivers stay outside.
    external: ['better-sqlite3', 'pg-native', '@grpc/grpc-js', '@bufbuild/protobuf', 'mysql2', 'esbuild'],
  });
  return join(outdir, `${name}.js`);
}

export interface Child {
  readonly proc: ChildProcess;
  readonly info: Record<string, string>;
}

/**
 * Starts `entry` (bundled as `name`) as a child with `--bench-child <mode> <args>`; resolves with the
 * JSON object it prints on its first line when ready.
 */
export async function startChild(name: string, entry: string, mode: string, ...args: string[]): Promise<Child> {
  return startScript(await bundled(name, entry), mode, ...args);
}

/** `startChild` for a script already bundled (e.g. by `bundleTree`). */
export async function startScript(script: string, mode: string, ...args: string[]): Promise<Child> {
  const proc = spawn(
    process.execPath,
    [...(process.env.BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? []), script, '--bench-child', mode, ...args],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const line = await new Promise<string>((resolve, reject) => {
    let out = '';
    const t = setTimeout(() => reject(new Error(`${mode} child did not start`)), 60_000);
    proc.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('\n')) {
        clearTimeout(t);
        resolve(out.slice(0, out.indexOf('\n')));
      }
    });
    proc.once('exit', (c) => reject(new Error(`${mode} child exited ${c}`)));
  });
  return { proc, info: JSON.parse(line) as Record<string, string> };
}

/** Stops the children (SIGTERM, then SIGKILL after 5 s), in order. */
export async function stopChildren(children: readonly Child[]): Promise<void> {
  for (const c of children) {
    if (c.proc.exitCode !== null) continue;
    const exited = new Promise((r) => c.proc.once('exit', r));
    c.proc.kill('SIGTERM');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
    if (c.proc.exitCode === null) c.proc.kill('SIGKILL');
  }
}

/** USER_HZ: /proc reports CPU time in these ticks per second on Linux. */
const CLOCK_TICKS = 100;

/**
 * CPU time (ms) a child process has used so far, from /proc: all its threads, or with `mainThread`
 * its main thread's alone (the event loop, without the store's thread, GC helpers and the thread
 * pool); undefined where there is none.
 */
export function cpuMsOf(proc: ChildProcess, mainThread = false): number | undefined {
  try {
    const pid = String(proc.pid);
    const stat = readFileSync(mainThread ? `/proc/${pid}/task/${pid}/stat` : `/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime and stime are fields 14 and 15 of stat(5); f starts at field 3.
    return ((Number(f[11]) + Number(f[12])) * 1000) / CLOCK_TICKS;
  } catch {
    return undefined;
  }
}

/** A child's resident set (MiB) now, from /proc; undefined where there is none. */
export function rssMbOf(proc: ChildProcess): number | undefined {
  try {
    const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${String(proc.pid)}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : undefined;
  } catch {
    return undefined;
  }
}
