/**
 * What the PostgreSQL tests share: a remote SDK agent that steps until told to finish, a streaming
 * client as a person would write one (resuming with Last-Event-ID), schemas and servers of their own,
 * a store's failure to open, a proxied task to store, and waits.
 */
import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import pg from 'pg';
import { Role, StreamResponse, Task, TaskState } from '@a2a-js/sdk';
import type { GatewayStore, NewTask } from '../../../src/gateway/store/gatewayStore';
import { PostgresGatewayStore } from '../../../src/gateway/store/postgresStore';
import type { AgentExecutor, ExecutionEventBus, RequestContext } from '@a2a-js/sdk/server';
import type { RemoteAgentConfig } from '../../../src/gateway/config';
import { userMessage } from './helpers';
import { patchEvent, statusEvent, taskEvent } from './sdkServer';

/** The PostgreSQL server the tests use (`bash scripts/postgres.sh start` prints it; `.ci/run` sets it). */
export const PG = process.env.BATON_TEST_PG;
/** `skip` for a test that needs it: false when it is set, else why and how to set it. */
export const pgSkip: string | false = PG
  ? false
  : 'BATON_TEST_PG is not set: start one with eval "$(bash scripts/postgres.sh start)"';

/** Resolves once `check` is true (polled every 20 ms); rejects after `ms` saying what it waited for. */
export async function until(check: () => boolean | Promise<boolean>, what: string, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A connection of the test's own (the admin side of each fault). */
export async function sql(url: string): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  return c;
}

const PG_SCRIPT = join(__dirname, '../../../scripts/postgres.sh');

/** Runs scripts/postgres.sh `cmd` for a server of the test's own in `dir`; resolves with its stdout. */
export function pgScript(cmd: 'start' | 'stop' | 'pause' | 'resume', dir: string): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile('bash', [PG_SCRIPT, cmd], { env: { ...process.env, BATON_PG_DIR: dir } }, (e, out, err) =>
      e ? reject(new Error(`postgres.sh ${cmd} failed: ${err}`)) : resolve(out),
    ),
  );
}

/** What opening the store at `url` fails with (the test fails if it opens). */
export async function openFails(url: string): Promise<string> {
  try {
    const s = await PostgresGatewayStore.open(url);
    await s.close();
  } catch (e) {
    return (e as Error).message;
  }
  throw new Error(`the store at ${url} opened`);
}

/** A working proxied task of agent `echo`, owned by nobody, as a store's createTask takes it. */
export function proxyTask(id: string, snapshot = '{}'): NewTask {
  return {
    agent: 'echo',
    id,
    contextId: 'ctx',
    principal: 'alice',
    kind: 'proxy',
    state: TaskState.TASK_STATE_WORKING,
    snapshot,
    owner: null,
  };
}

/**
 * A fresh schema on the test server `base`, dropped when `t` ends, with the server's admin connection
 * and a URL whose search_path is that schema (plus `options`, more `-c` settings for its sessions).
 */
export async function testSchema(
  t: { after(fn: () => Promise<void>): void },
  base: string,
  prefix: string,
  options = '',
): Promise<{ admin: pg.Client; schema: string; url: string }> {
  const schema = `${prefix}_${randomBytes(5).toString('hex')}`;
  const url = `${base}${base.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${schema}${options}`)}`;
  const admin = await sql(base);
  await admin.query(`CREATE SCHEMA ${schema}`);
  t.after(async () => {
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.end();
  });
  return { admin, schema, url };
}

/** `url` with its search_path set to `schema` and the connections named `app` in pg_stat_activity. */
export function inSchema(url: string, schema: string, app: string): string {
  return `${url}?application_name=${app}&options=${encodeURIComponent(`-c search_path=${schema}`)}`;
}

/**
 * The remote: an SDK agent whose task reports a numbered step every 40 ms until the test lets it
 * finish, then a patch and completed. The steps are the events that must all arrive, once, in order.
 */
export class SteppingExecutor implements AgentExecutor {
  finish = false;
  steps = 0;
  async execute(ctx: RequestContext, bus: ExecutionEventBus): Promise<void> {
    bus.publish(taskEvent(ctx, TaskState.TASK_STATE_WORKING));
    while (!this.finish) {
      await new Promise((r) => setTimeout(r, 40));
      bus.publish(
        statusEvent(ctx.taskId, ctx.contextId, TaskState.TASK_STATE_WORKING, { metadata: { step: ++this.steps } }),
      );
    }
    bus.publish(patchEvent(ctx.taskId, ctx.contextId, 'diff --git a/f b/f\n', 'patch'));
    bus.publish(statusEvent(ctx.taskId, ctx.contextId, TaskState.TASK_STATE_COMPLETED));
    bus.finished();
  }
  cancelTask(): Promise<void> {
    return Promise.resolve();
  }
}

export interface SseEvent {
  readonly id: number;
  readonly data: string;
}

/**
 * A streaming client as a person would write one: SendStreamingMessage, then (should the stream end
 * before the task does) SubscribeToTask with Last-Event-ID, until a terminal state (or, with `resume`,
 * SubscribeToTask from the start). `events` fills as they come.
 */
export function streamTask(
  url: string,
  token: string,
  /** Subscribe to this task from the event after `lastId` instead of sending a message. */
  resume?: { readonly taskId: string; readonly lastId: number },
): { readonly events: SseEvent[]; readonly done: Promise<string>; taskId: () => string } {
  const events: SseEvent[] = [];
  let taskId = resume?.taskId ?? '';
  const headers = (last?: number): Record<string, string> => ({
    'Content-Type': 'application/json',
    'A2A-Version': '1.0',
    Authorization: `Bearer ${token}`,
    ...(last !== undefined ? { 'Last-Event-ID': String(last) } : {}),
  });
  const done = (async (): Promise<string> => {
    for (let round = 0; round < 20; round++) {
      const body = taskId
        ? { jsonrpc: '2.0', id: 1, method: 'SubscribeToTask', params: { id: taskId } }
        : {
            jsonrpc: '2.0',
            id: 1,
            method: 'SendStreamingMessage',
            params: { message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'step on' }] } },
          };
      const res = await fetch(url, {
        method: 'POST',
        headers: headers(taskId ? (events.at(-1)?.id ?? resume?.lastId ?? 0) : undefined),
        body: JSON.stringify(body),
      });
      if (!res.headers.get('content-type')?.includes('text/event-stream')) {
        await res.text();
        await new Promise((r) => setTimeout(r, 500));
        continue;
      }
      const reader = (res.body as ReadableStream<Uint8Array>).getReader();
      const decoder = new TextDecoder();
      let buf = '';
      for (;;) {
        const { done: ended, value } = await reader.read();
        if (ended) break;
        buf += decoder.decode(value, { stream: true });
        let cut: number;
        while ((cut = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, cut);
          buf = buf.slice(cut + 2);
          const id = /^id: (\d+)$/m.exec(block)?.[1];
          const data = /^data: (.*)$/m.exec(block)?.[1];
          if (id === undefined || data === undefined) continue;
          const result = (JSON.parse(data) as { result?: Record<string, { id?: string; status?: { state?: string } }> })
            .result;
          taskId ||= result?.task?.id ?? '';
          events.push({ id: Number(id), data });
          const state = result?.statusUpdate?.status?.state ?? '';
          if (/COMPLETED|FAILED|CANCELED|REJECTED/.test(state)) {
            void reader.cancel();
            return state;
          }
        }
      }
    }
    throw new Error('the task did not end within 20 streams');
  })();
  return { events, done, taskId: () => taskId };
}

/** The `step` numbers of the remote's step events among `bodies`, in order. */
export function stepsOf(bodies: readonly string[]): number[] {
  return bodies.flatMap((b) => {
    const step = /"step":(\d+)/.exec(b)?.[1];
    return step === undefined ? [] : [Number(step)];
  });
}

/** The gateway's config of the remote SDK agent at `url` (JSON-RPC, A2A 1.0, no credentials), as agent `remote`. */
export function remoteSdkAgent(url: string): RemoteAgentConfig {
  return {
    id: 'remote',
    name: 'Remote',
    description: 'a remote SDK agent',
    url,
    protocolBinding: 'JSONRPC',
    protocolVersion: '1.0',
    auth: { kind: 'none' },
    skills: [],
  };
}

/** A working local task recorded as run by `owner` (an instance that is not one of the test's gateways). */
export async function ghostTask(store: GatewayStore, agent: string, principal: string, owner: string): Promise<string> {
  const id = randomUUID();
  const contextId = randomUUID();
  const task: Task = {
    id,
    contextId,
    status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: new Date().toISOString() },
    artifacts: [],
    history: [{ ...userMessage('ghost'), taskId: id, contextId, role: Role.ROLE_USER }],
    metadata: { 'baton/executor': { id: agent, kind: 'builtin' } },
  };
  const first: StreamResponse = { payload: { $case: 'task', value: structuredClone(task) } };
  await store.createTask(
    {
      agent,
      id,
      contextId,
      principal,
      kind: 'local',
      state: TaskState.TASK_STATE_WORKING,
      snapshot: JSON.stringify(Task.toJSON(task)),
      owner,
    },
    { seq: 1, body: JSON.stringify(StreamResponse.toJSON(first)) },
  );
  return id;
}
