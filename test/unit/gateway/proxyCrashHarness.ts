/**
 * For the proxy's crash tests: a gateway proxying one remote agent in a child process (killed with
 * SIGKILL, started again on the same state folder), a remote SDK agent whose executor the test can
 * hold and watch, and readers of the gateway's SSE answers.
 */
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import type { AgentExecutor, ExecutionEventBus, RequestContext } from '@a2a-js/sdk/server';
import { UnsupportedOperationError } from '@a2a-js/sdk/errors';
import { TaskState } from '@a2a-js/sdk';
import { SqliteGatewayStore } from '../../../src/gateway/store/sqliteStore';
import { endProcess, startGatewayProcess } from './gatewayProcess';
import { patchEvent, serveSdkAgent, statusEvent, taskEvent } from './sdkServer';

export const REMOTE_TOKEN = 'proxy-crash-remote-token-0123456789';

export interface Child {
  readonly proc: ChildProcess;
  readonly url: string;
  readonly token: string;
  readonly log: () => string;
}

export async function startChild(stateDir: string, remoteUrl: string): Promise<Child> {
  const g = await startGatewayProcess<{ url: string; token: string }>('proxyGatewayChild.ts', [
    stateDir,
    remoteUrl,
    REMOTE_TOKEN,
  ]);
  return { proc: g.proc, log: g.stderr, ...g.ready };
}

export function kill9(c: Child): Promise<void> {
  return endProcess(c.proc);
}

/** Opens the store the child kept in `stateDir` (after it has ended), runs `use` on it, closes it. */
export async function withChildStore(
  stateDir: string,
  use: (store: SqliteGatewayStore) => Promise<void>,
): Promise<void> {
  const store = new SqliteGatewayStore({ file: join(stateDir, 'gateway.db'), driver: 'better-sqlite3' });
  try {
    await use(store);
  } finally {
    await store.close();
  }
}

/**
 * A remote SDK agent. Each task tells the test when its executor starts (`started`), waits for
 * `release()`, then sends `steps` working updates `paceMs` apart, a patch artifact and completed.
 */
export class GatedExecutor implements AgentExecutor {
  runs = 0;
  private onStart: (() => void) | undefined;
  private gate: Promise<void> = Promise.resolve();
  private open: () => void = () => undefined;
  /** Every status update the remote sent, by task. */
  readonly sent = new Map<string, number>();
  /** How many times the remote ran each messageId. */
  readonly runsOf = new Map<string, number>();
  constructor(
    private readonly steps: number,
    private readonly paceMs: number,
    /** Up to this long (at random) before the first event: kills land at different points of the send. */
    private readonly firstDelayMs = 0,
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
    const m = ctx.userMessage.messageId;
    this.runsOf.set(m, (this.runsOf.get(m) ?? 0) + 1);
    this.onStart?.();
    this.onStart = undefined;
    await this.gate;
    if (this.firstDelayMs) await new Promise((r) => setTimeout(r, Math.random() * this.firstDelayMs));
    bus.publish(taskEvent(ctx, TaskState.TASK_STATE_SUBMITTED, new Date().toISOString()));
    for (let i = 1; i <= this.steps; i++) {
      bus.publish(
        statusEvent(taskId, contextId, TaskState.TASK_STATE_WORKING, {
          timestamp: new Date().toISOString(),
          metadata: { i },
        }),
      );
      this.sent.set(taskId, i);
      if (this.paceMs) await new Promise((r) => setTimeout(r, this.paceMs));
    }
    bus.publish(patchEvent(taskId, contextId));
    bus.publish(
      statusEvent(taskId, contextId, TaskState.TASK_STATE_COMPLETED, { timestamp: new Date().toISOString() }),
    );
    bus.finished();
  }
  cancelTask(): Promise<void> {
    return Promise.resolve();
  }
}

export function startRemote(
  executor: GatedExecutor,
  opts: { listTasks: boolean },
): Promise<{ url: string; close(): Promise<void> }> {
  return serveSdkAgent(executor, {
    token: REMOTE_TOKEN,
    adjust: (handler) => {
      if (!opts.listTasks)
        // A remote that cannot list its tasks (A2A 0.3 has no ListTasks).
        Object.defineProperty(handler, 'listTasks', {
          value: () => Promise.reject(new UnsupportedOperationError('ListTasks is not supported')),
        });
    },
  });
}

export function rpc(
  child: Child,
  method: string,
  params: unknown,
  headers: Record<string, string> = {},
): Promise<Response> {
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
export async function sseResults(
  res: Response,
  stop: (seen: readonly Record<string, unknown>[]) => boolean = () => false,
  timeoutMs = 30_000,
): Promise<Array<Record<string, unknown>>> {
  return (await sseEvents(res, stop, timeoutMs)).map((e) => e.result);
}

/** Each SSE event of a response: its id (the gateway's seq) and its `result`. */
export async function sseEvents(
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

export function stateOf(ev: Record<string, unknown>): string | undefined {
  const s = ev.statusUpdate as { status?: { state?: string } } | undefined;
  const t = ev.task as { status?: { state?: string } } | undefined;
  return s?.status?.state ?? t?.status?.state;
}

export function sendParams(messageId: string): unknown {
  return { message: { messageId, role: 'ROLE_USER', parts: [{ text: 'go' }] } };
}
