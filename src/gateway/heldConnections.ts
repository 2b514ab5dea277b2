/**
 * The proxy's HTTP connections to a 0.3 remote, and the ones it keeps open on purpose.
 *
 * Some agents tie a task's execution to the connection of the request that started it: Gemini CLI's
 * A2A server aborts a task's run ("Execution aborted by client.") when the socket of the message that
 * started it ends, even after its stream has ended with a tool call waiting for approval. A pooled
 * keep-alive socket is closed by the client once it has been idle a few seconds, so an approval sent
 * later is accepted but the tool never runs. Here every streaming send gets a connection of its own
 * (an agent with one socket); once the task it belongs to is known, that socket is kept: while the task
 * waits for a tool approval (or a turn of it is being relayed), it is kept busy with a `tasks/get`
 * every `POLL_MS`, so neither side lets it go idle; when the task ends, or a turn ends with no tool call
 * waiting, it is let go. Other calls (GetTask, cancel) go over a shared keep-alive pool.
 */
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import type { IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { isRecord } from '../core/isRecord';

/** How often a held socket carries a `tasks/get` (Node's servers close an idle socket after 5 s). */
export const POLL_MS = 2_000;
/** The longest a task's sockets are held without the task moving on (a user who never answers). */
export const HOLD_MAX_MS = 60 * 60_000;
/** How long a stream the relay stopped reading may take to end by itself before its socket is closed. */
const DRAIN_MS = 10_000;

type AnyAgent = HttpAgent | HttpsAgent;

interface Held {
  readonly agent: AnyAgent;
  /** Requests in flight on it (a poll is sent only when none is). */
  busy: number;
}

interface TaskHold {
  readonly conns: Held[];
  timer: NodeJS.Timeout | undefined;
  since: number;
}

/** What a JSON-RPC (0.3) body says about its call. */
function readCall(body: unknown): { method: string; taskId: string; messageId: string } | undefined {
  if (typeof body !== 'string' || body.length > 4 * 1024 * 1024) return undefined;
  try {
    const b = JSON.parse(body) as unknown;
    if (!isRecord(b)) return undefined;
    const params = isRecord(b.params) ? b.params : b;
    const msg = isRecord(params.message) ? params.message : undefined;
    const str = (v: unknown): string => (typeof v === 'string' ? v : '');
    return {
      method: str(b.method) || (msg ? 'message/stream' : ''),
      taskId: str(msg?.taskId) || str(params.id),
      messageId: str(msg?.messageId),
    };
  } catch {
    return undefined;
  }
}

export interface HeldConnectionsOptions {
  readonly url: string;
  readonly binding: 'JSONRPC' | 'HTTP+JSON';
  /** The remote's credentials, added to the polls. */
  readonly headers: () => Record<string, string>;
  /** Whether the task's sockets are still needed (it waits for a tool approval, or a turn is relayed). */
  readonly needed: (taskId: string) => boolean;
  readonly log: (line: string) => void;
}

export class HeldConnections {
  private readonly shared: AnyAgent;
  private readonly https: boolean;
  /** The connection of each streaming send whose task is not known yet, by messageId. */
  private readonly bySend = new Map<string, Held>();
  private readonly byTask = new Map<string, TaskHold>();
  private closed = false;
  private rpcId = 1;

  constructor(private readonly opts: HeldConnectionsOptions) {
    this.https = new URL(opts.url).protocol === 'https:';
    this.shared = this.newAgent(Infinity);
  }

  private newAgent(maxSockets: number): AnyAgent {
    return this.https
      ? new HttpsAgent({ keepAlive: true, maxSockets })
      : new HttpAgent({ keepAlive: true, maxSockets });
  }

  /** A fetch over these connections (what the SDK's client is given). No redirects are followed. */
  readonly fetch: typeof fetch = async (input, init) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    const call = readCall(init?.body);
    let held: Held | undefined;
    if (call && call.messageId && (call.method === 'message/stream' || call.method === 'message/send')) {
      held = { agent: this.newAgent(1), busy: 0 };
      const earlier = this.bySend.get(call.messageId);
      if (earlier) earlier.agent.destroy();
      this.bySend.set(call.messageId, held);
    }
    const headers: Record<string, string> = {};
    new Headers(init?.headers).forEach((v, k) => (headers[k] = v));
    const body = typeof init?.body === 'string' ? init.body : undefined;
    if (body !== undefined) headers['content-length'] = String(Buffer.byteLength(body));
    return this.send(url, init?.method ?? 'GET', headers, body, init?.signal ?? undefined, held);
  };

  private send(
    url: string,
    method: string,
    headers: Record<string, string>,
    body: string | undefined,
    signal: AbortSignal | undefined,
    held: Held | undefined,
  ): Promise<Response> {
    const target = new URL(url);
    if (held) held.busy++;
    let settled = false;
    const done = (): void => {
      if (held && !settled) held.busy--;
      settled = true;
    };
    return new Promise<Response>((resolve, reject) => {
      const req = (this.https ? httpsRequest : httpRequest)(
        target,
        { method, headers, agent: held?.agent ?? this.shared, ...(signal ? { signal } : {}) },
        (res) => {
          const status = res.statusCode ?? 0;
          if (status >= 300 && status < 400) {
            res.resume();
            done();
            // Following it would carry the remote's credentials to a URL the operator never pinned.
            reject(
              new Error(
                `the remote answered with a redirect (HTTP ${status}) to ${String(res.headers.location ?? '?')}; pin the agent's final URL in the gateway config`,
              ),
            );
            return;
          }
          res.once('close', done);
          const h = new Headers();
          for (const [k, v] of Object.entries(res.headers)) {
            if (typeof v === 'string') h.set(k, v);
            else if (Array.isArray(v)) for (const x of v) h.append(k, x);
          }
          const noBody = status === 204 || status === 304 || method === 'HEAD';
          resolve(
            new Response(noBody ? null : bodyOf(res), { status, statusText: res.statusMessage ?? '', headers: h }),
          );
        },
      );
      req.on('error', (e) => {
        done();
        reject(e);
      });
      req.end(body);
    });
  }

  /** The send with this messageId belongs to this task: its socket is the task's from now on. */
  adopt(messageId: string, taskId: string): void {
    const held = this.bySend.get(messageId);
    if (!held) return;
    this.bySend.delete(messageId);
    if (this.closed) {
      held.agent.destroy();
      return;
    }
    let hold = this.byTask.get(taskId);
    if (!hold) {
      hold = { conns: [], timer: undefined, since: Date.now() };
      this.byTask.set(taskId, hold);
    }
    hold.conns.push(held);
    hold.since = Date.now();
    this.schedule(taskId, hold);
  }

  /** A send that made no task (it failed, or was answered with a Message): its socket is let go. */
  forget(messageId: string): void {
    const held = this.bySend.get(messageId);
    this.bySend.delete(messageId);
    if (held) letGo(held);
  }

  /** The task moved on (an event arrived): its sockets are held for the full time again. */
  touch(taskId: string): void {
    const hold = this.byTask.get(taskId);
    if (hold) hold.since = Date.now();
  }

  /** Lets the task's sockets go (it ended, was canceled, or needs them no more). */
  release(taskId: string): void {
    const hold = this.byTask.get(taskId);
    if (!hold) return;
    this.byTask.delete(taskId);
    if (hold.timer) clearTimeout(hold.timer);
    for (const c of hold.conns) letGo(c);
  }

  /** The tasks whose sockets are held now. */
  heldTasks(): string[] {
    return [...this.byTask.keys()];
  }

  private schedule(taskId: string, hold: TaskHold): void {
    if (hold.timer || this.closed) return;
    hold.timer = setTimeout(() => {
      hold.timer = undefined;
      void this.tick(taskId, hold);
    }, POLL_MS);
    hold.timer.unref();
  }

  private async tick(taskId: string, hold: TaskHold): Promise<void> {
    if (this.byTask.get(taskId) !== hold || this.closed) return;
    if (!this.opts.needed(taskId)) {
      this.release(taskId);
      return;
    }
    if (Date.now() - hold.since > HOLD_MAX_MS) {
      this.opts.log(
        `task ${taskId} has waited over ${HOLD_MAX_MS / 60_000} min for an answer; its connections to the remote are let go`,
      );
      this.release(taskId);
      return;
    }
    await Promise.all(hold.conns.filter((c) => c.busy === 0).map((c) => this.poll(taskId, c)));
    if (this.byTask.get(taskId) === hold) this.schedule(taskId, hold);
  }

  /** One `tasks/get` on a held socket; its answer is not needed (the relay follows the task). */
  private async poll(taskId: string, held: Held): Promise<void> {
    const base = this.opts.url.replace(/\/+$/, '');
    const headers: Record<string, string> = { ...this.opts.headers(), accept: 'application/json' };
    let url = this.opts.url;
    let method = 'POST';
    let body: string | undefined;
    if (this.opts.binding === 'JSONRPC') {
      body = JSON.stringify({
        jsonrpc: '2.0',
        id: `hold-${this.rpcId++}`,
        method: 'tasks/get',
        params: { id: taskId, historyLength: 0 },
      });
      headers['content-type'] = 'application/json';
      headers['content-length'] = String(Buffer.byteLength(body));
    } else {
      url = `${base}/v1/tasks/${encodeURIComponent(taskId)}?historyLength=0`;
      method = 'GET';
    }
    try {
      const res = await this.send(url, method, headers, body, AbortSignal.timeout(POLL_MS * 5), held);
      await res.arrayBuffer();
    } catch (e) {
      this.opts.log(`keeping the connection of task ${taskId} open: tasks/get failed (${(e as Error).message})`);
    }
  }

  close(): void {
    this.closed = true;
    for (const id of [...this.byTask.keys()]) this.release(id);
    for (const h of this.bySend.values()) h.agent.destroy();
    this.bySend.clear();
    this.shared.destroy();
  }
}

/** A held socket let go: closed once no request is on it (a stream still open is drained first). */
function letGo(held: Held): void {
  if (held.busy === 0) {
    held.agent.destroy();
    return;
  }
  const wait = setInterval(() => {
    if (held.busy > 0) return;
    clearInterval(wait);
    held.agent.destroy();
  }, 200);
  wait.unref();
  setTimeout(() => {
    clearInterval(wait);
    held.agent.destroy();
  }, DRAIN_MS).unref();
}

/**
 * The response body as a web stream. When the reader stops early (the relay has what it needs), the
 * rest is drained rather than the socket closed: closing it could end the remote's run of the task.
 */
function bodyOf(res: IncomingMessage): ReadableStream<Uint8Array> {
  let canceled = false;
  return new ReadableStream<Uint8Array>({
    start(controller) {
      res.on('data', (chunk: Buffer) => {
        if (!canceled) controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
      });
      res.once('end', () => {
        if (!canceled) controller.close();
      });
      res.once('error', (e) => {
        if (!canceled) controller.error(e);
      });
      res.once('aborted', () => {
        if (!canceled) controller.error(new Error('the remote closed the connection before the response ended'));
      });
    },
    cancel() {
      canceled = true;
      if (res.complete) return;
      setTimeout(() => {
        if (!res.complete) res.destroy();
      }, DRAIN_MS).unref();
    },
  });
}
