/**
 * A real A2A 0.3-era server: @a2a-js/sdk 0.3.x (`a2a-sdk-v03`), its `DefaultRequestHandler`, its
 * express handlers and an executor that publishes 0.3 wire events — the SDK agents written elsewhere
 * run (VoltAgent, Gemini CLI's A2A server). Like Gemini CLI's server it can serve its card where the
 * client does not expect it and name a `url` with a trailing slash and another spelling of loopback.
 */
import type { Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import express from 'express';
import type { AgentCard, Message, TaskStatusUpdateEvent } from 'a2a-sdk-v03';
import type { AgentExecutor, ExecutionEventBus, RequestContext } from 'a2a-sdk-v03/server';
import { DefaultRequestHandler, InMemoryTaskStore } from 'a2a-sdk-v03/server';
import type { A2ARequestHandler } from 'a2a-sdk-v03/server';
import { UserBuilder, agentCardHandler, jsonRpcHandler } from 'a2a-sdk-v03/server/express';

/** What a 0.3 executor can do for one turn. */
export interface LegacyTurn {
  readonly taskId: string;
  readonly contextId: string;
  readonly text: string;
  readonly continuing: boolean;
  task(): void;
  status(state: TaskStatusUpdateEvent['status']['state'], text?: string, final?: boolean): void;
  artifact(artifactId: string, name: string, text: string): void;
  sleep(ms: number): Promise<void>;
}

export type LegacyScript = (turn: LegacyTurn) => Promise<void>;

function agentText(taskId: string, contextId: string, text: string): Message {
  return {
    kind: 'message',
    role: 'agent',
    messageId: `m-${Math.random().toString(36).slice(2)}`,
    taskId,
    contextId,
    parts: [{ kind: 'text', text }],
  };
}

class LegacyExecutor implements AgentExecutor {
  constructor(private readonly script: LegacyScript) {}

  execute = async (ctx: RequestContext, bus: ExecutionEventBus): Promise<void> => {
    const { taskId, contextId } = ctx;
    const text = ctx.userMessage.parts.map((p) => (p.kind === 'text' ? p.text : '')).join('');
    const turn: LegacyTurn = {
      taskId,
      contextId,
      text,
      continuing: Boolean(ctx.task),
      task: () =>
        bus.publish({
          kind: 'task',
          id: taskId,
          contextId,
          status: { state: 'submitted', timestamp: new Date().toISOString() },
          history: [...(ctx.task?.history ?? []), ctx.userMessage],
          artifacts: ctx.task?.artifacts ?? [],
        }),
      status: (state, t, final = false) =>
        bus.publish({
          kind: 'status-update',
          taskId,
          contextId,
          status: {
            state,
            ...(t ? { message: agentText(taskId, contextId, t) } : {}),
            timestamp: new Date().toISOString(),
          },
          final,
        }),
      artifact: (artifactId, name, t) =>
        bus.publish({
          kind: 'artifact-update',
          taskId,
          contextId,
          artifact: { artifactId, name, parts: [{ kind: 'text', text: t }] },
          lastChunk: true,
        }),
      sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
    };
    await this.script(turn);
    bus.finished();
  };

  cancelTask = async (taskId: string, bus: ExecutionEventBus): Promise<void> => {
    bus.publish({
      kind: 'status-update',
      taskId,
      contextId: '',
      status: { state: 'canceled', timestamp: new Date().toISOString() },
      final: true,
    });
    bus.finished();
  };
}

export interface LegacyServerOptions {
  readonly script: LegacyScript;
  /** Where the card is served (default `/.well-known/agent-card.json`). */
  readonly cardPath?: string;
  /** The card's `url` (default `http://127.0.0.1:<port>/`). */
  readonly cardUrl?: (port: number) => string;
  /** Wraps the SDK's handler (to make its streams fail as a broken agent's do). */
  readonly wrap?: (inner: A2ARequestHandler) => A2ARequestHandler;
}

export interface LegacyServer {
  readonly port: number;
  /** Where the card is, as a user would give it. */
  readonly cardUrl: string;
  readonly taskStore: InMemoryTaskStore;
  /** JSON-RPC methods the server was called with, in order. */
  readonly methods: string[];
  close(): Promise<void>;
}

/** Starts a 0.3 server on 127.0.0.1 whose JSON-RPC endpoint is `/`, like Gemini CLI's. */
export async function startLegacyServer(o: LegacyServerOptions): Promise<LegacyServer> {
  const app = express();
  const methods: string[] = [];
  app.use(express.json());
  app.use((req, _res, next) => {
    const body = req.body as { method?: unknown } | undefined;
    if (req.method === 'POST' && typeof body?.method === 'string') methods.push(body.method);
    next();
  });
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const sockets = new Set<Socket>();
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  const port = (server.address() as AddressInfo).port;
  const card: AgentCard = {
    name: 'Legacy agent',
    description: 'An A2A 0.3 agent',
    protocolVersion: '0.3.0',
    version: '0.0.1',
    url: o.cardUrl?.(port) ?? `http://127.0.0.1:${port}/`,
    preferredTransport: 'JSONRPC',
    capabilities: { streaming: true, pushNotifications: false, stateTransitionHistory: true },
    defaultInputModes: ['text'],
    defaultOutputModes: ['text'],
    skills: [{ id: 'code', name: 'Code', description: 'writes code', tags: ['code'] }],
  };
  const taskStore = new InMemoryTaskStore();
  const inner = new DefaultRequestHandler(card, taskStore, new LegacyExecutor(o.script));
  const requestHandler = o.wrap ? o.wrap(inner) : inner;
  const cardPath = o.cardPath ?? '/.well-known/agent-card.json';
  app.use(cardPath, agentCardHandler({ agentCardProvider: requestHandler }));
  app.use('/', jsonRpcHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication }));
  return {
    port,
    cardUrl: `http://127.0.0.1:${port}${cardPath}`,
    taskStore,
    methods,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
