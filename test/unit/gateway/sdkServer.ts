/**
 * Remote A2A agents for the tests: the `@a2a-js/sdk` server over express on a free loopback port,
 * optionally behind a bearer check, and the events their executors publish.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import type { Express, RequestHandler } from 'express';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import type { AgentExecutionEvent, AgentExecutor, ExecutionEventBus, RequestContext } from '@a2a-js/sdk/server';
import { jsonRpcHandler, restHandler } from '@a2a-js/sdk/server/express';
import { Role, TaskState } from '@a2a-js/sdk';
import type { AgentCard } from '@a2a-js/sdk';

export interface Listening {
  /** `http://127.0.0.1:<port>` */
  readonly origin: string;
  /** Drops open connections (SSE streams included) and stops listening. */
  close(): Promise<void>;
}

/** Serves `app` on `port` (default: a free one) of 127.0.0.1. */
export async function listenOnLoopback(app: Express, port = 0): Promise<Listening> {
  const server: Server = await new Promise((r) => {
    const s = app.listen(port, '127.0.0.1', () => r(s));
  });
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** Answers 401 unless the request carries `Authorization: Bearer <token>`; `seen` gets every header value first. */
export function bearerCheck(token: string, seen?: string[]): RequestHandler {
  return (req, res, next) => {
    seen?.push(req.header('authorization') ?? '');
    if (req.header('authorization') !== `Bearer ${token}`) return void res.status(401).json({ error: 'no' });
    next();
  };
}

/** A streaming, unsigned card with no security schemes and text/plain modes; `fields` replace any of it. */
export function sdkAgentCard(fields: Partial<AgentCard> & Pick<AgentCard, 'supportedInterfaces'>): AgentCard {
  return {
    name: 'remote',
    description: 'SDK agent',
    provider: undefined,
    version: '1',
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [],
    signatures: [],
    ...fields,
  };
}

/** The SDK's JSON-RPC route, every caller authenticated as `userName`. */
export function sdkJsonRpc(
  handler: DefaultRequestHandler,
  opts: { userName?: string; legacy?: boolean } = {},
): RequestHandler {
  return jsonRpcHandler({
    requestHandler: handler,
    userBuilder: () => Promise.resolve({ isAuthenticated: true, userName: opts.userName ?? 'gw' }),
    ...(opts.legacy ? { legacyCompat: { enabled: true } } : {}),
  });
}

/** The SDK's HTTP+JSON routes (and the same under /{tenant}/), every caller authenticated as `gw`. */
export function sdkRest(handler: DefaultRequestHandler): RequestHandler {
  return restHandler({
    requestHandler: handler,
    userBuilder: () => Promise.resolve({ isAuthenticated: true, userName: 'gw' }),
  });
}

export interface SdkAgentOptions {
  /** Every request must carry this bearer token (401 otherwise); none when unset. */
  readonly token?: string;
  readonly name?: string;
  readonly description?: string;
  /** Who the SDK's handler sees as the caller (default `gw`). */
  readonly userName?: string;
  /** The handler answers GetExtendedAgentCard with the card as it is now (its URL known), not as it was built. */
  readonly liveCard?: boolean;
  /** Changes the handler before it serves (e.g. takes a method away). */
  readonly adjust?: (handler: DefaultRequestHandler) => void;
}

/** An SDK agent running `executor` over JSON-RPC 1.0 at `<origin>/rpc`; `url` is that endpoint. */
export async function serveSdkAgent(
  executor: AgentExecutor,
  opts: SdkAgentOptions = {},
): Promise<{ url: string; close(): Promise<void> }> {
  let url = '';
  const card = (): AgentCard =>
    sdkAgentCard({
      supportedInterfaces: [{ url, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' }],
      ...(opts.name !== undefined ? { name: opts.name } : {}),
      ...(opts.description !== undefined ? { description: opts.description } : {}),
    });
  const handler = new DefaultRequestHandler(card(), new InMemoryTaskStore(), executor);
  if (opts.liveCard) Object.defineProperty(handler, 'getAgentCard', { value: () => Promise.resolve(card()) });
  opts.adjust?.(handler);
  const app = express();
  if (opts.token !== undefined) app.use(bearerCheck(opts.token));
  app.use('/rpc', sdkJsonRpc(handler, { userName: opts.userName }));
  const l = await listenOnLoopback(app);
  url = `${l.origin}/rpc`;
  return { url, close: l.close };
}

/** The task the executor of `ctx` starts with: in `state`, its history the user's message, no artifacts. */
export function taskEvent(ctx: RequestContext, state: TaskState, timestamp?: string): AgentExecutionEvent {
  return AgentEvent.task({
    id: ctx.taskId,
    contextId: ctx.contextId,
    status: { state, message: undefined, timestamp },
    artifacts: [],
    history: [ctx.userMessage],
    metadata: undefined,
  });
}

/** A status update without a message. */
export function statusEvent(
  taskId: string,
  contextId: string,
  state: TaskState,
  opts: { timestamp?: string; metadata?: Record<string, unknown> } = {},
): AgentExecutionEvent {
  return AgentEvent.statusUpdate({
    taskId,
    contextId,
    status: { state, message: undefined, timestamp: opts.timestamp },
    metadata: opts.metadata,
  });
}

/** The whole `changes.patch` artifact (text/x-diff) in one chunk. */
export function patchEvent(
  taskId: string,
  contextId: string,
  diff = 'diff --git a/a b/a\n',
  artifactId = 'p',
): AgentExecutionEvent {
  return AgentEvent.artifactUpdate({
    taskId,
    contextId,
    artifact: {
      artifactId,
      name: 'changes.patch',
      description: '',
      parts: [
        {
          content: { $case: 'text', value: diff },
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
  });
}

/**
 * An agent as the text of each message says: "ask me" asks a question (input-required), "wait" leaves
 * its task working until it is canceled, anything else works for `workMs` (saying "halfway" halfway),
 * then sends a patch and completes. A reply continues the task it names.
 */
export class ScriptedSdkExecutor implements AgentExecutor {
  private readonly waiting = new Map<string, ExecutionEventBus>();
  constructor(private readonly workMs = 0) {}
  async execute(ctx: RequestContext, bus: ExecutionEventBus): Promise<void> {
    const text = ctx.userMessage.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');
    if (!ctx.task) bus.publish(taskEvent(ctx, TaskState.TASK_STATE_SUBMITTED));
    bus.publish(statusEvent(ctx.taskId, ctx.contextId, TaskState.TASK_STATE_WORKING));
    if (text.includes('ask me')) {
      bus.publish(statusEvent(ctx.taskId, ctx.contextId, TaskState.TASK_STATE_INPUT_REQUIRED));
      bus.finished();
      return;
    }
    if (text.includes('wait')) {
      this.waiting.set(ctx.taskId, bus);
      return;
    }
    if (this.workMs > 0) {
      // Halfway, a word of progress.
      await new Promise((r) => setTimeout(r, this.workMs / 2));
      bus.publish(
        AgentEvent.statusUpdate({
          taskId: ctx.taskId,
          contextId: ctx.contextId,
          status: {
            state: TaskState.TASK_STATE_WORKING,
            message: {
              messageId: `${ctx.taskId}-halfway`,
              contextId: ctx.contextId,
              taskId: ctx.taskId,
              role: Role.ROLE_AGENT,
              parts: [
                { content: { $case: 'text', value: 'halfway' }, metadata: undefined, filename: '', mediaType: '' },
              ],
              metadata: undefined,
              extensions: [],
              referenceTaskIds: [],
            },
            timestamp: undefined,
          },
          metadata: undefined,
        }),
      );
      await new Promise((r) => setTimeout(r, this.workMs / 2));
    }
    bus.publish(patchEvent(ctx.taskId, ctx.contextId));
    bus.publish(statusEvent(ctx.taskId, ctx.contextId, TaskState.TASK_STATE_COMPLETED));
    bus.finished();
  }
  cancelTask(taskId: string, bus: ExecutionEventBus): Promise<void> {
    const waiting = this.waiting.get(taskId) ?? bus;
    this.waiting.delete(taskId);
    waiting.publish(statusEvent(taskId, '', TaskState.TASK_STATE_CANCELED));
    waiting.finished();
    return Promise.resolve();
  }
}
