import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import express from 'express';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import type { AgentExecutor, ExecutionEventBus, RequestContext } from '@a2a-js/sdk/server';
import { jsonRpcHandler } from '@a2a-js/sdk/server/express';
import { UnsupportedOperationError } from '@a2a-js/sdk/errors';
import { TaskState } from '@a2a-js/sdk';
import type { AgentCard } from '@a2a-js/sdk';
import { SqliteGatewayStore } from '../../../src/gateway/store/sqliteStore';
import { tempDir } from './helpers';

const REMOTE_TOKEN = 'proxy-crash-remote-token-0123456789';

interface Child {
  readonly proc: ChildProcess;
  readonly url: string;
  readonly token: string;
  readonly log: () => string;
}

async function startChild(stateDir: string, remoteUrl: string): Promise<Child> {
  const proc = spawn(
    process.execPath,
    ['--import', 'tsx', join(__dirname, 'fixtures/proxyGatewayChild.ts'), stateDir, remoteUrl, REMOTE_TOKEN],
    { stdio: ['ignore', 'pipe', 'pipe'], cwd: join(__dirname, '../../..') },
  );
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
  return { proc, log: () => err, ...(JSON.parse(line) as { url: string; token: string }) };
}

function kill9(c: Child): Promise<void> {
  return new Promise((r) => {
    if (c.proc.exitCode !== null || c.proc.signalCode !== null) return r();
    c.proc.once('exit', () => r());
    c.proc.kill('SIGKILL');
  });
}

/**
 * A remote SDK agent. Each task tells the test when its executor starts (`started`), waits for
 * `release()`, then sends `steps` working updates `paceMs` apart, a patch artifact and completed.
 */
class GatedExecutor implements AgentExecutor {
  runs = 0;
  private onStart: (() => void) | undefined;
  private gate: Promise<void> = Promise.resolve();
  private open: () => void = () => undefined;
  /** Every status update the remote sent, by task. */
  readonly sent = new Map<string, number>();
  constructor(
    private readonly steps: number,
    private readonly paceMs: number,
  ) {}
  /** The next task's executor starts: resolves then, and holds it until `release`. */
  nextStart(): Promise<void> {
    this.gate = new Promise((r) => (this.open = r));
    return new Promise((r) => (this.onStart = r));
  }
  release(): void {
    this.open();
  }
  async execute(ctx: RequestContext, bus: ExecutionEventBus): Promise<void> {
    const { taskId, contextId } = ctx;
    this.runs++;
    this.onStart?.();
    this.onStart = undefined;
    await this.gate;
    bus.publish(
      AgentEvent.task({
        id: taskId,
        contextId,
        status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: new Date().toISOString() },
        artifacts: [],
        history: [ctx.userMessage],
        metadata: undefined,
      }),
    );
    for (let i = 1; i <= this.steps; i++) {
      bus.publish(
        AgentEvent.statusUpdate({
          taskId,
          contextId,
          status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: new Date().toISOString() },
          metadata: { i },
        }),
      );
      this.sent.set(taskId, i);
      if (this.paceMs) await new Promise((r) => setTimeout(r, this.paceMs));
    }
    bus.publish(
      AgentEvent.artifactUpdate({
        taskId,
        contextId,
        artifact: {
          artifactId: 'p',
          name: 'changes.patch',
          description: '',
          parts: [
            {
              content: { $case: 'text', value: 'diff --git a/a b/a\n' },
              metadata: undefined,
              filename: 'changes.patch',
              mediaType: 'text/x-diff',
            },
          ],
          metadata: undefined,
          extensions: [],
        },
        append: false,
        lastChunk: true,
        metadata: undefined,
      }),
    );
    bus.publish(
      AgentEvent.statusUpdate({
        taskId,
        contextId,
        status: { state: TaskState.TASK_STATE_COMPLETED, message: undefined, timestamp: new Date().toISOString() },
        metadata: undefined,
      }),
    );
    bus.finished();
  }
  cancelTask(): Promise<void> {
    return Promise.resolve();
  }
}

async function startRemote(
  executor: GatedExecutor,
  opts: { listTasks: boolean },
): Promise<{ url: string; close(): Promise<void> }> {
  let url = '';
  const card = (): AgentCard => ({
    name: 'remote',
    description: 'SDK agent',
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
  });
  const handler = new DefaultRequestHandler(card(), new InMemoryTaskStore(), executor);
  if (!opts.listTasks)
    // A remote that cannot list its tasks (A2A 0.3 has no ListTasks).
    Object.defineProperty(handler, 'listTasks', {
      value: () => Promise.reject(new UnsupportedOperationError('ListTasks is not supported')),
    });
  const app = express();
  app.use((req, res, next) => {
    if (req.header('authorization') !== `Bearer ${REMOTE_TOKEN}`) return void res.status(401).json({ error: 'no' });
    next();
  });
  app.use(
    '/rpc',
    jsonRpcHandler({
      requestHandler: handler,
      userBuilder: () => Promise.resolve({ isAuthenticated: true, userName: 'gw' }),
    }),
  );
  const server: Server = await new Promise((r) => {
    const s = app.listen(0, '127.0.0.1', () => r(s));
  });
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

function rpc(child: Child, method: string, params: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${child.url}/a2a/remote`, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      'A2A-Version': '1.0',
      Authorization: `Bearer ${child.token}`,
      ...headers,
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
}

/** The `result` of each SSE event of a response, until the stream ends or `stop` says so. */
async function sseResults(
  res: Response,
  stop: (seen: readonly Record<string, unknown>[]) => boolean = () => false,
  timeoutMs = 30_000,
): Promise<Array<Record<string, unknown>>> {
  return (await sseEvents(res, stop, timeoutMs)).map((e) => e.result);
}

/** Each SSE event of a response: its id (the gateway's seq) and its `result`. */
async function sseEvents(
  res: Response,
  stop: (seen: readonly Record<string, unknown>[]) => boolean = () => false,
  timeoutMs = 30_000,
): Promise<Array<{ seq: number; result: Record<string, unknown> }>> {
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  const dec = new TextDecoder();
  const out: Array<{ seq: number; result: Record<string, unknown> }> = [];
  let buf = '';
  const timer = setTimeout(() => void reader.cancel().catch(() => undefined), timeoutMs);
  try {
    for (;;) {
      const r = await reader.read().catch(() => ({ done: true as const, value: undefined }));
      if (r.done) break;
      buf += dec.decode(r.value, { stream: true });
      let i: number;
      while ((i = buf.indexOf('\n\n')) >= 0) {
        const block = buf.slice(0, i);
        const data = /^data: (.*)$/m.exec(block)?.[1];
        const id = Number(/^id: (\d+)$/m.exec(block)?.[1] ?? NaN);
        buf = buf.slice(i + 2);
        if (data) {
          const env = JSON.parse(data) as { result?: Record<string, unknown>; error?: unknown };
          out.push({ seq: id, result: env.result ?? { error: env.error } });
        }
      }
      if (stop(out.map((e) => e.result))) break;
    }
  } finally {
    clearTimeout(timer);
    await reader.cancel().catch(() => undefined);
  }
  return out;
}

function stateOf(ev: Record<string, unknown>): string | undefined {
  const s = ev.statusUpdate as { status?: { state?: string } } | undefined;
  const t = ev.task as { status?: { state?: string } } | undefined;
  return s?.status?.state ?? t?.status?.state;
}

function sendParams(messageId: string): unknown {
  return { message: { messageId, role: 'ROLE_USER', parts: [{ text: 'go' }] } };
}

for (const listTasks of [true, false]) {
  describe(`gateway: kill -9 after a proxied send reached the remote, before it named its task (remote ${listTasks ? 'lists' : 'cannot list'} its tasks)`, () => {
    it(
      listTasks
        ? 'the retry after a restart gets the task the remote ran, relayed to its end, and the remote ran it once'
        : 'the retry after a restart gets a task with an unknown outcome that says what to do, and the remote ran it once',
      async () => {
        using dir = tempDir();
        const executor = new GatedExecutor(3, 0);
        const remote = await startRemote(executor, { listTasks });
        let child = await startChild(dir.path, remote.url);
        try {
          const started = executor.nextStart();
          void rpc(child, 'SendStreamingMessage', sendParams('kill-after-send')).catch(() => undefined);
          await started; // the send reached the remote, which has not answered yet
          await kill9(child);
          executor.release(); // the remote runs the task to its end, with nobody relaying it

          child = await startChild(dir.path, remote.url);
          const retry = await rpc(child, 'SendStreamingMessage', sendParams('kill-after-send'));
          assert.equal(retry.status, 200);
          const events = await sseResults(retry);
          assert.ok(events.length > 0, 'the retry got events');
          const text = JSON.stringify(events);
          assert.doesNotMatch(text, /could not be created/);
          assert.ok(!events.some((e) => 'error' in e), `no error: ${text}`);
          const last = events[events.length - 1];
          if (listTasks) {
            assert.equal(stateOf(last), 'TASK_STATE_COMPLETED', text);
            assert.match(text, /changes\.patch/, 'the artifact made while nobody relayed is recorded');
            const meta = (last.statusUpdate as { metadata?: Record<string, unknown> }).metadata ?? {};
            assert.equal(typeof meta['baton/resultEnvelope'], 'string', 'the final status is signed');
          } else {
            assert.equal(stateOf(last), 'TASK_STATE_FAILED', text);
            assert.match(text, /unknown outcome/);
            assert.match(text, /may have run there/);
            assert.match(text, /new messageId/);
            const task = last.task as { metadata?: Record<string, unknown> };
            assert.equal(task.metadata?.['baton/outcome'], 'unknown');
          }
          assert.equal(executor.runs, 1, 'the remote ran the request once');

          // Sent once more, the same answer: the claim stays bound to that task.
          const again = await sseResults(await rpc(child, 'SendStreamingMessage', sendParams('kill-after-send')));
          const idOf = (ev: Record<string, unknown> | undefined): string | undefined =>
            (ev?.task as { id?: string } | undefined)?.id ??
            (ev?.statusUpdate as { taskId?: string } | undefined)?.taskId;
          assert.equal(idOf(again[0]), idOf(events[0]));
          assert.equal(executor.runs, 1);
        } finally {
          await kill9(child);
          await remote.close();
        }
        const store = new SqliteGatewayStore({ file: join(dir.path, 'gateway.db'), driver: 'better-sqlite3' });
        try {
          assert.deepEqual(await store.listUnboundRequests(), [], 'no claim is left unbound');
        } finally {
          await store.close();
        }
      },
    );
  });
}

describe('gateway: kill -9 after a proxied send reached the remote, then a clean restart and no retry', () => {
  it('resolves the unbound claim on start: found at the remote and relayed to its end', async () => {
    using dir = tempDir();
    const executor = new GatedExecutor(2, 0);
    const remote = await startRemote(executor, { listTasks: true });
    let child = await startChild(dir.path, remote.url);
    try {
      const started = executor.nextStart();
      void rpc(child, 'SendStreamingMessage', sendParams('kill-no-retry')).catch(() => undefined);
      await started;
      await kill9(child);
      executor.release();
      child = await startChild(dir.path, remote.url);
      const until = Date.now() + 20_000;
      while (!/found again at the remote/.test(child.log()) && Date.now() < until)
        await new Promise((r) => setTimeout(r, 50));
      assert.match(child.log(), /messageId kill-no-retry was found again at the remote as task/);
    } finally {
      await kill9(child);
      await remote.close();
    }
    const store = new SqliteGatewayStore({ file: join(dir.path, 'gateway.db'), driver: 'better-sqlite3' });
    try {
      assert.deepEqual(await store.listUnboundRequests(), []);
    } finally {
      await store.close();
    }
  });
});

describe('gateway: kill -9 and restart while relaying a remote that cannot replay', () => {
  it("records a gap notice in the task's log where events may be missing, then the remote's final state and artifacts", async () => {
    using dir = tempDir();
    const executor = new GatedExecutor(60, 120);
    const remote = await startRemote(executor, { listTasks: true });
    let child = await startChild(dir.path, remote.url);
    try {
      const first = await rpc(child, 'SendStreamingMessage', sendParams('gap-1'));
      const before = await sseEvents(first, (seen) => seen.length >= 15);
      const taskId = (before[0].result.task as { id: string }).id;
      await kill9(child);
      const lastBefore = before[before.length - 1].seq;
      // The remote goes on meanwhile; what it sends now reaches nobody.
      await new Promise((r) => setTimeout(r, 300));
      child = await startChild(dir.path, remote.url);
      const log = await sseEvents(
        await rpc(child, 'SubscribeToTask', { id: taskId }, { 'Last-Event-ID': '0' }),
        undefined,
        30_000,
      );
      const seqs = log.map((e) => e.seq);
      assert.deepEqual(
        seqs,
        seqs.map((_, i) => seqs[0] + i),
        'contiguous',
      );
      type Status = {
        status?: { state?: string; message?: { parts?: Array<{ text?: string }> } };
        metadata?: Record<string, unknown>;
      };
      const gaps = log.filter(
        (e) => (e.result.statusUpdate as Status | undefined)?.metadata?.['baton/gap'] !== undefined,
      );
      assert.equal(gaps.length, 1, 'one notice, for the one restart');
      const gap = gaps[0];
      const notice = gap.result.statusUpdate as Status;
      assert.equal(notice.status?.state, 'TASK_STATE_WORKING');
      assert.equal(
        notice.status?.message?.parts?.[0]?.text,
        'Some progress from the agent was not received while the gateway restarted.',
      );
      const meta = notice.metadata?.['baton/gap'] as { reason: string; lastSeq: number };
      assert.equal(meta.reason, 'restart');
      assert.ok(gap.seq > lastBefore, 'the notice comes after every event a client saw before the kill');
      assert.equal(meta.lastSeq, gap.seq - 1, 'the notice follows the last event stored before the restart');
      // Before the notice, the remote's steps as they came; after it, the ones relayed since.
      const stepsOf = (events: typeof log): number[] =>
        events
          .map((e) => (e.result.statusUpdate as Status | undefined)?.metadata?.i)
          .filter((i): i is number => typeof i === 'number');
      const beforeGap = stepsOf(log.filter((e) => e.seq < gap.seq));
      const afterGap = stepsOf(log.filter((e) => e.seq > gap.seq));
      assert.ok(
        beforeGap.length > 0 && afterGap.length > 0,
        `steps on both sides (${beforeGap.length}, ${afterGap.length})`,
      );
      assert.ok(Math.max(...beforeGap) < Math.min(...afterGap));
      const last = log[log.length - 1].result.statusUpdate as Status;
      assert.equal(last.status?.state, 'TASK_STATE_COMPLETED');
      assert.equal(typeof last.metadata?.['baton/resultEnvelope'], 'string');
      assert.match(JSON.stringify(log), /changes\.patch/);
      assert.equal(executor.sent.get(taskId), 60);
    } finally {
      await kill9(child);
      await remote.close();
    }
  });
});
