/**
 * `BENCH soak`: a gateway under steady load for a long while, with a retention policy whose size cap
 * bites. 20 clients each send a task to an SDK agent through the gateway's proxy route and, once it
 * has ended, the next: every task is 100 status events 50 ms apart and a 64 KiB patch. The gateway
 * (SQLite store) keeps at most `cap_mb`: finished tasks' events are compacted after a short replay
 * window, and the oldest finished tasks are deleted while the store is above the cap.
 *
 * Prints `BENCH soak store_mb=<store size at the end> cap_mb=<cap> rss_growth_mb=<gateway RSS, median
 * of the last minute minus median of the first> …` with the largest store size seen, tasks done,
 * errors, and the load average. `BATON_SOAK_SECONDS` sets the length (default 600).
 *
 * The SDK agent, the gateway and the clients each run in their own process, as in use; the children
 * run this file bundled as the gateway ships (esbuild, the SQLite thread beside it).
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TaskState } from '@a2a-js/sdk';
import { AgentEvent } from '@a2a-js/sdk/server';
import type { AgentExecutor, ExecutionEventBus, RequestContext } from '@a2a-js/sdk/server';
import { startGateway } from '../../src/gateway/server';
import { loadNote, median } from '../util';
import { clientAt, request, rssMbOf, sdkServer } from './procs';

const CONCURRENT = 20;
const STATUS_EVENTS = 100;
const PACE_MS = 50;
const PATCH_BYTES = 64 * 1024;
const MIB = 1024 * 1024;
/** The soak's retention: a cap the store reaches within a minute or two, and short windows. */
const CAP_MB = 64;
const REPLAY_WINDOW_MS = 60_000;
const RETENTION_INTERVAL_MS = 2_000;
const SAMPLE_MS = 5_000;

class PacedExecutor implements AgentExecutor {
  async execute(ctx: RequestContext, bus: ExecutionEventBus): Promise<void> {
    const { taskId, contextId } = ctx;
    const status = (state: TaskState, i?: number): void =>
      bus.publish(
        AgentEvent.statusUpdate({
          taskId,
          contextId,
          status: { state, message: undefined, timestamp: new Date().toISOString() },
          metadata: i === undefined ? undefined : { i },
        }),
      );
    bus.publish(
      AgentEvent.task({
        id: taskId,
        contextId,
        status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: undefined },
        artifacts: [],
        history: [ctx.userMessage],
        metadata: undefined,
      }),
    );
    for (let i = 0; i < STATUS_EVENTS; i++) {
      await new Promise((r) => setTimeout(r, PACE_MS));
      status(TaskState.TASK_STATE_WORKING, i);
    }
    // Random text, so the patch takes its full size wherever it is stored.
    const patch = `diff --git a/f b/f\n${randomBytes(PATCH_BYTES)
      .toString('base64')
      .slice(0, PATCH_BYTES - 20)}\n`;
    bus.publish(
      AgentEvent.artifactUpdate({
        taskId,
        contextId,
        artifact: {
          artifactId: 'patch',
          name: 'changes.patch',
          description: '',
          parts: [
            { content: { $case: 'text', value: patch }, metadata: undefined, filename: '', mediaType: 'text/x-diff' },
          ],
          metadata: undefined,
          extensions: [],
        },
        append: false,
        lastChunk: true,
        metadata: undefined,
      }),
    );
    status(TaskState.TASK_STATE_COMPLETED);
    bus.finished();
  }
  cancelTask(): Promise<void> {
    return Promise.resolve();
  }
}

let bundled: Promise<string> | undefined;
function childScript(): Promise<string> {
  bundled ??= (async () => {
    const esbuild = await import('esbuild');
    const root = join(__dirname, '..', '..');
    const outdir = join(root, 'out', 'bench-soak');
    await esbuild.build({
      absWorkingDir: root,
      entryPoints: { 'soak-child': __filename, 'gateway-sqlite': join(root, 'src/gateway/store/sqliteWorker.ts') },
      outdir,
      bundle: true,
      minify: true,
      platform: 'node',
      format: 'cjs',
      target: 'node20',
      logLevel: 'warning',
      external: ['better-sqlite3', 'pg-native', '@grpc/grpc-js', '@bufbuild/protobuf', 'mysql2', 'esbuild'],
    });
    return join(outdir, 'soak-child.js');
  })();
  return bundled;
}

async function child(mode: 'remote' | 'gateway', ...args: string[]): Promise<{ proc: ChildProcess; info: Info }> {
  const proc = spawn(process.execPath, [await childScript(), '--soak-child', mode, ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const line = await new Promise<string>((resolve, reject) => {
    let out = '';
    const t = setTimeout(() => reject(new Error(`the soak's ${mode} process did not start within 60 s`)), 60_000);
    proc.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('\n')) {
        clearTimeout(t);
        resolve(out.slice(0, out.indexOf('\n')));
      }
    });
    proc.once('exit', (c) => reject(new Error(`the soak's ${mode} process exited (${c})`)));
  });
  return { proc, info: JSON.parse(line) as Info };
}

interface Info {
  readonly url: string;
  readonly token?: string;
}

async function childMain(mode: string, args: string[]): Promise<void> {
  if (mode === 'remote') {
    process.stdout.write(`${JSON.stringify({ url: (await sdkServer(new PacedExecutor())).url })}\n`);
    return;
  }
  const state = mkdtempSync(join(tmpdir(), 'baton-soak-gw-'));
  const gw = await startGateway({
    stateDir: state,
    localAgents: [],
    remoteAgents: [
      {
        id: 'remote',
        name: 'remote',
        description: '',
        url: args[0],
        protocolBinding: 'JSONRPC',
        protocolVersion: '1.0',
        auth: { kind: 'none' },
        skills: [],
      },
    ],
    retention: {
      keepFinishedMs: 0,
      maxStoreBytes: CAP_MB * MIB,
      replayWindowMs: REPLAY_WINDOW_MS,
      intervalMs: RETENTION_INTERVAL_MS,
    },
    log: (l) => {
      if (process.env.BATON_SOAK_LOG === '1') process.stderr.write(`gateway: ${l}\n`);
    },
  });
  process.stdout.write(`${JSON.stringify({ url: gw.url, token: gw.token })}\n`);
  process.on(
    'SIGTERM',
    () =>
      void gw.close().finally(() => {
        rmSync(state, { recursive: true, force: true });
        process.exit(0);
      }),
  );
}

async function storeMb(url: string, token: string): Promise<number> {
  const res = await fetch(`${url}/baton/instance`, { headers: { Authorization: `Bearer ${token}` } });
  const info = (await res.json()) as { store?: { sizeBytes?: number } };
  if (typeof info.store?.sizeBytes !== 'number') throw new Error('GET /baton/instance reported no store size');
  return info.store.sizeBytes / MIB;
}

export async function soak(): Promise<void> {
  const seconds = Number(process.env.BATON_SOAK_SECONDS ?? 600);
  if (!Number.isFinite(seconds) || seconds < 10)
    throw new Error('BATON_SOAK_SECONDS must be a number of seconds, at least 10');
  const remote = await child('remote');
  const gw = await child('gateway', remote.info.url);
  const token = gw.info.token ?? '';
  const started = Date.now();
  const endAt = started + seconds * 1000;
  let tasks = 0;
  let errors = 0;
  let lastError = '';
  const rss: Array<{ at: number; mb: number }> = [];
  let storeMax = 0;
  const sampler = setInterval(() => {
    const mb = rssMbOf(gw.proc);
    if (mb !== undefined) rss.push({ at: Date.now() - started, mb });
    storeMb(gw.info.url, token).then(
      (s) => (storeMax = Math.max(storeMax, s)),
      () => undefined,
    );
  }, SAMPLE_MS);
  try {
    const client = await clientAt(`${gw.info.url}/a2a/remote`, token);
    const worker = async (): Promise<void> => {
      while (Date.now() < endAt) {
        try {
          let n = 0;
          let completed = false;
          for await (const ev of client.sendMessageStream(request('soak'))) {
            n++;
            if (
              ev.payload?.$case === 'statusUpdate' &&
              ev.payload.value.status?.state === TaskState.TASK_STATE_COMPLETED
            )
              completed = true;
          }
          if (!completed || n < STATUS_EVENTS + 2) throw new Error(`the stream ended after ${n} events, not completed`);
          tasks++;
        } catch (e) {
          errors++;
          lastError = (e as Error).message ?? String(e);
          await new Promise((r) => setTimeout(r, 1000));
        }
      }
    };
    await Promise.all(Array.from({ length: CONCURRENT }, worker));
    clearInterval(sampler);
    const finalMb = await storeMb(gw.info.url, token);
    storeMax = Math.max(storeMax, finalMb);
    const elapsed = Date.now() - started;
    const first = rss.filter((s) => s.at <= 60_000).map((s) => s.mb);
    const last = rss.filter((s) => s.at >= elapsed - 60_000).map((s) => s.mb);
    const growth = first.length && last.length ? median(last) - median(first) : NaN;
    console.log(
      `BENCH soak store_mb=${finalMb.toFixed(1)} cap_mb=${CAP_MB} rss_growth_mb=${growth.toFixed(1)} store_max_mb=${storeMax.toFixed(1)} rss_last_mb=${(last.length ? median(last) : NaN).toFixed(1)} tasks=${tasks} errors=${errors} seconds=${Math.round(elapsed / 1000)} concurrent=${CONCURRENT} ${loadNote()}`,
    );
    if (errors) console.log(`# soak: last error: ${lastError}`);
  } finally {
    clearInterval(sampler);
    for (const c of [gw, remote]) {
      const exited = new Promise((r) => c.proc.once('exit', r));
      c.proc.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
      if (c.proc.exitCode === null) c.proc.kill('SIGKILL');
    }
  }
}

if (process.argv[2] === '--soak-child') {
  void childMain(process.argv[3] ?? '', process.argv.slice(4)).catch((e: unknown) => {
    process.stderr.write(`${String(e)}\n`);
    process.exit(1);
  });
}
