/**
 * Real @a2a-js/sdk servers on 127.0.0.1 for the delegation tests: `DefaultRequestHandler` + the SDK's
 * express handlers + scripted `AgentExecutor`s. `replay: true` wraps the handler in a small stand-in
 * for Baton's gateway profile (per-task `baton/seq` on every event, `Last-Event-ID` replay, messageId
 * idempotency) so the client's replay and retry paths can be tested before/independently of
 * src/gateway. A TCP proxy that cuts streams at chosen points is in cutProxy.ts.
 */
import type { AddressInfo, Socket } from 'node:net';
import type { Server } from 'node:http';
import express from 'express';
import type {
  AgentCard,
  CancelTaskRequest,
  DeleteTaskPushNotificationConfigRequest,
  GetExtendedAgentCardRequest,
  GetTaskPushNotificationConfigRequest,
  GetTaskRequest,
  ListTaskPushNotificationConfigsRequest,
  ListTaskPushNotificationConfigsResponse,
  ListTasksRequest,
  ListTasksResponse,
  Message,
  Part,
  SendMessageRequest,
  StreamResponse,
  SubscribeToTaskRequest,
  Task,
  TaskPushNotificationConfig,
} from '@a2a-js/sdk';
import { Role, TaskState } from '@a2a-js/sdk';
import type {
  A2ARequestHandler,
  AgentExecutor,
  ExecutionEventBus,
  RequestContext,
  ServerCallContext,
} from '@a2a-js/sdk/server';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { UserBuilder, agentCardHandler, jsonRpcHandler, restHandler } from '@a2a-js/sdk/server/express';
import { META, REPLAY_EXTENSION_URI } from '../../../src/core/batonProfile';
import { normalizeCard, type PinnedEndpoint } from '../../../src/node/a2a/clientFactory';

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

function agentMessage(taskId: string, contextId: string, text: string): Message {
  return {
    messageId: `m-${Math.random().toString(36).slice(2)}`,
    contextId,
    taskId,
    role: Role.ROLE_AGENT,
    parts: [{ content: { $case: 'text', value: text }, filename: '', mediaType: 'text/plain', metadata: undefined }],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

/** What a scripted executor can do for one turn. */
export interface Turn {
  readonly taskId: string;
  readonly contextId: string;
  readonly text: string;
  /** True when this turn continues an existing task (a reply). */
  readonly continuing: boolean;
  task(state?: TaskState): void;
  status(state: TaskState, text?: string, metadata?: Record<string, unknown>): void;
  artifact(
    artifactId: string,
    name: string,
    text: string,
    opts?: { append?: boolean; lastChunk?: boolean; mediaType?: string },
  ): void;
  /** An artifact update with any parts (file parts, data parts, several parts). */
  artifactParts(
    artifactId: string,
    name: string,
    parts: Part[],
    opts?: { append?: boolean; lastChunk?: boolean },
  ): void;
  /** A status update whose message has these parts. */
  statusParts(state: TaskState, parts: Part[]): void;
  sleep(ms: number): Promise<void>;
  /** Resolves when a cancel for this task arrives. */
  readonly canceled: Promise<void>;
  isCanceled(): boolean;
}

export type Script = (turn: Turn) => Promise<void>;

export interface ScriptedExecutorOptions {
  /** What cancelTask does: publish CANCELED at once (default), after a delay, or never. */
  readonly cancel?: 'prompt' | { delayMs: number } | 'never';
}

/** An AgentExecutor that runs a script per turn. */
export class ScriptedExecutor implements AgentExecutor {
  private readonly cancels = new Map<string, () => void>();
  private readonly canceledIds = new Set<string>();
  readonly executions: string[] = [];

  constructor(
    private readonly script: Script,
    private readonly options: ScriptedExecutorOptions = {},
  ) {}

  execute = async (ctx: RequestContext, bus: ExecutionEventBus): Promise<void> => {
    const { taskId, contextId } = ctx;
    this.executions.push(taskId);
    let resolveCancel!: () => void;
    const canceled = new Promise<void>((r) => (resolveCancel = r));
    this.cancels.set(taskId, () => {
      this.canceledIds.add(taskId);
      resolveCancel();
    });
    const text = ctx.userMessage.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');
    const turn: Turn = {
      taskId,
      contextId,
      text,
      continuing: Boolean(ctx.task),
      task: (state = TaskState.TASK_STATE_SUBMITTED) =>
        bus.publish(
          AgentEvent.task({
            id: taskId,
            contextId,
            status: { state, message: undefined, timestamp: new Date().toISOString() },
            artifacts: ctx.task?.artifacts ?? [],
            history: [...(ctx.task?.history ?? []), ctx.userMessage],
            metadata: undefined,
          }),
        ),
      status: (state, msg, metadata) =>
        bus.publish(
          AgentEvent.statusUpdate({
            taskId,
            contextId,
            status: {
              state,
              message: msg ? agentMessage(taskId, contextId, msg) : undefined,
              timestamp: new Date().toISOString(),
            },
            metadata,
          }),
        ),
      artifact: (artifactId, name, t, o = {}) =>
        bus.publish(
          AgentEvent.artifactUpdate({
            taskId,
            contextId,
            artifact: {
              artifactId,
              name,
              description: '',
              parts: [
                {
                  content: { $case: 'text', value: t },
                  filename: name,
                  mediaType: o.mediaType ?? 'text/plain',
                  metadata: undefined,
                },
              ],
              metadata: undefined,
              extensions: [],
            },
            append: o.append ?? false,
            lastChunk: o.lastChunk ?? false,
            metadata: undefined,
          }),
        ),
      artifactParts: (artifactId, name, parts, o = {}) =>
        bus.publish(
          AgentEvent.artifactUpdate({
            taskId,
            contextId,
            artifact: { artifactId, name, description: '', parts, metadata: undefined, extensions: [] },
            append: o.append ?? false,
            lastChunk: o.lastChunk ?? true,
            metadata: undefined,
          }),
        ),
      statusParts: (state, parts) =>
        bus.publish(
          AgentEvent.statusUpdate({
            taskId,
            contextId,
            status: {
              state,
              message: { ...agentMessage(taskId, contextId, ''), parts },
              timestamp: new Date().toISOString(),
            },
            metadata: undefined,
          }),
        ),
      sleep,
      canceled,
      isCanceled: () => this.canceledIds.has(taskId),
    };
    await this.script(turn);
  };

  cancelTask = async (taskId: string, bus: ExecutionEventBus): Promise<void> => {
    const mode = this.options.cancel ?? 'prompt';
    // An agent that never answers cancel keeps working as if nothing was asked.
    if (mode === 'never') return;
    if (typeof mode === 'object') await sleep(mode.delayMs);
    bus.publish(
      AgentEvent.statusUpdate({
        taskId,
        contextId: '',
        status: { state: TaskState.TASK_STATE_CANCELED, message: undefined, timestamp: new Date().toISOString() },
        metadata: undefined,
      }),
    );
    // Only now does the running turn learn it was canceled (it must not end before CANCELED is published).
    this.cancels.get(taskId)?.();
  };
}

function headerOf(ctx: ServerCallContext, name: string): string | undefined {
  const headers = ctx.state.get('headers') as Record<string, string | string[] | undefined> | undefined;
  const v = headers?.[name.toLowerCase()];
  return Array.isArray(v) ? v[0] : v;
}

interface TaskLog {
  events: StreamResponse[];
  /** A turn's events are still coming. */
  open: boolean;
  waiters: Array<() => void>;
}

function stamped(ev: StreamResponse, seq: number): StreamResponse {
  const p = ev.payload;
  if (!p) return ev;
  const copy = structuredClone(p.value) as typeof p.value;
  copy.metadata = { ...(copy.metadata ?? {}), [META.seq]: seq };
  return { payload: { ...p, value: copy } as StreamResponse['payload'] };
}

/**
 * Test stand-in for the gateway's replay profile around an SDK handler: every event of a task gets the
 * next `baton/seq` and is logged by a pump that runs whether or not the client is still connected;
 * subscribe with `Last-Event-ID` replays from the log, then follows live; the same first `messageId`
 * joins the existing task instead of creating another (idempotency implemented in this handler).
 */
export class ReplayTestHandler implements A2ARequestHandler {
  readonly logs = new Map<string, TaskLog>();
  private readonly byMessageId = new Map<string, Promise<string>>();
  tasksCreated = 0;

  constructor(private readonly inner: DefaultRequestHandler) {}

  private log(taskId: string): TaskLog {
    let l = this.logs.get(taskId);
    if (!l) {
      l = { events: [], open: true, waiters: [] };
      this.logs.set(taskId, l);
    }
    return l;
  }

  private wake(l: TaskLog): void {
    const w = l.waiters;
    l.waiters = [];
    for (const f of w) f();
  }

  /** Runs a turn to its end in the background, logging every event; resolves with the task id. */
  private pump(params: SendMessageRequest, ctx: ServerCallContext, existingTaskId?: string): Promise<string> {
    const gen = this.inner.sendMessageStream(params, ctx);
    return new Promise<string>((resolve, reject) => {
      let taskId = existingTaskId;
      if (taskId) {
        this.log(taskId).open = true;
        resolve(taskId);
      }
      void (async () => {
        try {
          for await (const ev of gen) {
            const p = ev.payload;
            if (!taskId) {
              taskId =
                p?.$case === 'task'
                  ? p.value.id
                  : p?.$case === 'statusUpdate' || p?.$case === 'artifactUpdate'
                    ? p.value.taskId
                    : undefined;
              if (!taskId) continue;
              this.tasksCreated++;
              resolve(taskId);
            }
            const l = this.log(taskId);
            l.events.push(stamped(ev, l.events.length + 1));
            this.wake(l);
          }
        } catch (e) {
          if (!taskId) reject(e instanceof Error ? e : new Error(String(e)));
        } finally {
          if (taskId) {
            const l = this.log(taskId);
            l.open = false;
            this.wake(l);
          }
        }
      })();
    });
  }

  /** Log events after `after`, then live ones, until the turn's events end. */
  private async *follow(taskId: string, after: number): AsyncGenerator<StreamResponse, void, undefined> {
    const l = this.log(taskId);
    let next = after;
    for (;;) {
      while (next < l.events.length) yield l.events[next++];
      if (!l.open) return;
      await new Promise<void>((r) => l.waiters.push(r));
    }
  }

  async *sendMessageStream(
    params: SendMessageRequest,
    ctx: ServerCallContext,
  ): AsyncGenerator<StreamResponse, void, undefined> {
    const msg = params.message;
    if (msg?.taskId) {
      const from = this.log(msg.taskId).events.length;
      const taskId = await this.pump(params, ctx, msg.taskId);
      yield* this.follow(taskId, from);
      return;
    }
    const key = msg?.messageId ?? '';
    let started = this.byMessageId.get(key);
    if (!started) {
      started = this.pump(params, ctx);
      this.byMessageId.set(key, started);
      started.catch(() => this.byMessageId.delete(key));
    }
    const taskId = await started;
    yield* this.follow(taskId, 0);
  }

  async sendMessage(params: SendMessageRequest, ctx: ServerCallContext): Promise<Message | Task> {
    const msg = params.message;
    const key = msg?.messageId ?? '';
    let started = msg?.taskId ? undefined : this.byMessageId.get(key);
    if (!started) {
      started = this.pump(params, ctx, msg?.taskId || undefined);
      if (!msg?.taskId) this.byMessageId.set(key, started);
    }
    const taskId = await started;
    return this.getTask({ tenant: '', id: taskId, historyLength: undefined }, ctx);
  }

  async *resubscribe(
    params: SubscribeToTaskRequest,
    ctx: ServerCallContext,
  ): AsyncGenerator<StreamResponse, void, undefined> {
    const raw = headerOf(ctx, 'last-event-id');
    if (raw !== undefined && /^\d+$/.test(raw)) {
      yield* this.follow(params.id, Number(raw));
      return;
    }
    yield* this.inner.resubscribe(params, ctx);
  }

  async getTask(params: GetTaskRequest, ctx: ServerCallContext): Promise<Task> {
    const t = await this.inner.getTask(params, ctx);
    const l = this.logs.get(t.id);
    return { ...t, metadata: { ...(t.metadata ?? {}), [META.seq]: l?.events.length ?? 0 } };
  }

  getAgentCard(): Promise<AgentCard> {
    return this.inner.getAgentCard();
  }
  getAuthenticatedExtendedAgentCard(p: GetExtendedAgentCardRequest, c: ServerCallContext): Promise<AgentCard> {
    return this.inner.getAuthenticatedExtendedAgentCard(p, c);
  }
  cancelTask(p: CancelTaskRequest, c: ServerCallContext): Promise<Task> {
    return this.inner.cancelTask(p, c);
  }
  listTasks(p: ListTasksRequest, c: ServerCallContext): Promise<ListTasksResponse> {
    return this.inner.listTasks(p, c);
  }
  createTaskPushNotificationConfig(
    p: TaskPushNotificationConfig,
    c: ServerCallContext,
  ): Promise<TaskPushNotificationConfig> {
    return this.inner.createTaskPushNotificationConfig(p, c);
  }
  getTaskPushNotificationConfig(
    p: GetTaskPushNotificationConfigRequest,
    c: ServerCallContext,
  ): Promise<TaskPushNotificationConfig> {
    return this.inner.getTaskPushNotificationConfig(p, c);
  }
  listTaskPushNotificationConfigs(
    p: ListTaskPushNotificationConfigsRequest,
    c: ServerCallContext,
  ): Promise<ListTaskPushNotificationConfigsResponse> {
    return this.inner.listTaskPushNotificationConfigs(p, c);
  }
  deleteTaskPushNotificationConfig(p: DeleteTaskPushNotificationConfigRequest, c: ServerCallContext): Promise<void> {
    return this.inner.deleteTaskPushNotificationConfig(p, c);
  }
}

export interface AgentServer {
  readonly base: string;
  readonly port: number;
  /** The card as a client would hold it after approval (SDK in-memory shape). */
  readonly card: AgentCard;
  readonly jsonRpc: PinnedEndpoint;
  readonly rest: PinnedEndpoint;
  readonly executor: ScriptedExecutor;
  readonly taskStore: InMemoryTaskStore;
  readonly replay?: ReplayTestHandler;
  /** Authorization / API-key header values the server saw, in order. */
  readonly seenAuth: string[];
  /** Every request the server saw, with its Authorization header (undefined when it had none). */
  readonly requests: { readonly method: string; readonly path: string; readonly authorization: string | undefined }[];
  close(): Promise<void>;
}

export interface AgentServerOptions {
  readonly script: Script;
  readonly executorOptions?: ScriptedExecutorOptions;
  readonly replay?: boolean;
  /** Serve A2A 0.3 only (the SDK's legacyCompat on the server). */
  readonly legacy?: boolean;
  readonly streaming?: boolean;
  /** Require this bearer token. */
  readonly bearer?: string;
  /** Require this API key in `X-Api-Key`. */
  readonly apiKey?: string;
  /** Listen on this port (to restart a server where it was). */
  readonly port?: number;
  /** The card asks for a bearer token without the server requiring one (an origin that wants a token). */
  readonly declareBearer?: boolean;
  /** The base URL the card's interfaces name (another spelling of the server's address). */
  readonly cardBase?: (port: number) => string;
  /** Card fields that replace the defaults (names and descriptions an agent chooses). */
  readonly cardFields?: Readonly<Record<string, unknown>>;
  /**
   * Serve the card as written here (1.0 wire JSON) instead of through the SDK's card handler, which
   * writes its in-memory shape (security schemes as `{ $case, value }`, unreadable to a client).
   */
  readonly wireCard?: boolean;
}

export async function startAgentServer(o: AgentServerOptions): Promise<AgentServer> {
  const app = express();
  const seenAuth: string[] = [];
  const requests: AgentServer['requests'] = [];
  app.use((req, res, next) => {
    requests.push({ method: req.method, path: req.path, authorization: req.header('authorization') });
    const auth = req.header('authorization') ?? req.header('x-api-key');
    if (auth) seenAuth.push(auth);
    if (req.path.startsWith('/a2a/')) {
      if (o.bearer && req.header('authorization') !== `Bearer ${o.bearer}`)
        return void res.status(401).json({ error: 'unauthorized' });
      if (o.apiKey && req.header('x-api-key') !== o.apiKey) return void res.status(401).json({ error: 'unauthorized' });
    }
    next();
  });
  const { port, close } = await listenOnLoopback(app, o.port);
  const base = o.cardBase?.(port) ?? `http://127.0.0.1:${port}`;
  const version = o.legacy ? '0.3' : '1.0';
  const cardJson = {
    name: 'Test agent',
    description: 'A scripted test agent',
    version: '1.0.0',
    supportedInterfaces: [
      { url: `${base}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', protocolVersion: version },
      { url: `${base}/a2a/rest`, protocolBinding: 'HTTP+JSON', protocolVersion: version },
    ],
    capabilities: {
      streaming: o.streaming ?? true,
      extensions: o.replay ? [{ uri: REPLAY_EXTENSION_URI, required: false }] : [],
    },
    securitySchemes:
      o.bearer || o.declareBearer
        ? { bearer: { httpAuthSecurityScheme: { scheme: 'Bearer' } } }
        : o.apiKey
          ? { key: { apiKeySecurityScheme: { location: 'header', name: 'X-Api-Key' } } }
          : {},
    securityRequirements:
      o.bearer || o.declareBearer
        ? [{ schemes: { bearer: { list: [] } } }]
        : o.apiKey
          ? [{ schemes: { key: { list: [] } } }]
          : [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [{ id: 'test', name: 'Test', description: 'test', tags: ['test'] }],
    ...o.cardFields,
  };
  const card = normalizeCard(cardJson);
  const executor = new ScriptedExecutor(o.script, o.executorOptions);
  const taskStore = new InMemoryTaskStore();
  const inner = new DefaultRequestHandler(card, taskStore, executor);
  const replay = o.replay ? new ReplayTestHandler(inner) : undefined;
  const requestHandler: A2ARequestHandler = replay ?? inner;
  const legacyCompat = { enabled: Boolean(o.legacy) };
  // Also under the interface, where `baton status|watch|…` looks for the card of a journal's endpoint.
  for (const path of ['/.well-known/agent-card.json', '/a2a/jsonrpc/.well-known/agent-card.json']) {
    if (o.wireCard) app.get(path, (_req, res) => void res.json(cardJson));
    else app.use(path, agentCardHandler({ agentCardProvider: requestHandler, legacyCompat }));
  }
  app.use('/a2a/jsonrpc', jsonRpcHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication, legacyCompat }));
  app.use('/a2a/rest', restHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication, legacyCompat }));
  return {
    base,
    port,
    card,
    jsonRpc: { url: `${base}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', protocolVersion: version },
    rest: { url: `${base}/a2a/rest`, protocolBinding: 'HTTP+JSON', protocolVersion: version },
    executor,
    taskStore,
    replay,
    seenAuth,
    requests,
    close,
  };
}

/**
 * Serves `app` on 127.0.0.1 (`port`, or a free one). `close` ends the connections still open (a stream
 * a test left running, a keep-alive socket) instead of waiting for them.
 */
export async function listenOnLoopback(
  app: express.Express,
  port = 0,
): Promise<{ readonly port: number; close(): Promise<void> }> {
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(port, '127.0.0.1', () => resolve(s));
  });
  const sockets = new Set<Socket>();
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
