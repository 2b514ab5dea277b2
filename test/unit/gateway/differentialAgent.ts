/**
 * The two sides of the differential tests (differential.test.ts): one SDK agent (its own
 * DefaultRequestHandler over JSON-RPC and HTTP+JSON, A2A 1.0 and 0.3) running a scripted executor, and a
 * gateway whose proxy routes lead to that same agent, so one request can be sent both ways.
 */
import express from 'express';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import type { AgentExecutor, ExecutionEventBus, RequestContext } from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, restHandler } from '@a2a-js/sdk/server/express';
import { TaskState } from '@a2a-js/sdk';
import type { AgentCard, Message } from '@a2a-js/sdk';
import { agentMessage, textPart } from '../../../src/gateway/a2aBuild';
import { startGateway } from '../../../src/gateway/server';
import type { RunningGateway } from '../../../src/gateway/server';
import { listenOnLoopback, sdkAgentCard } from './sdkServer';
import { tempDir } from './helpers';

/**
 * The executor both sides run. What it does is chosen by the first text part:
 * - `go` (and any text not below): a task, submitted → working (with a message) → an artifact `out` →
 *   completed (with a message);
 * - `reply`: a Message, no task;
 * - `ask`: a task that ends its turn input-required; the follow-up (any text) finishes it;
 * - `hold …`: a task that stays working until `release(text)` is called (then completes as `go` does) or
 *   it is canceled; a cancel of a task waiting for input cancels it at once.
 * - `fail`: a task that ends failed.
 */
export class DiffExecutor implements AgentExecutor {
  private readonly canceled = new Set<string>();
  /** Tasks whose `execute` is running (a cancel tells them), and the contexts of all. */
  private readonly running = new Set<string>();
  private readonly contexts = new Map<string, string>();
  private readonly released = new Set<string>();
  /** Lets the `hold` task whose message's text is `text` (`hold …`) finish. */
  release(text: string): void {
    this.released.add(text);
  }
  async execute(ctx: RequestContext, bus: ExecutionEventBus): Promise<void> {
    const { taskId, contextId } = ctx;
    this.contexts.set(taskId, contextId);
    this.running.add(taskId);
    try {
      await this.run(ctx, bus);
    } finally {
      this.running.delete(taskId);
    }
  }
  private async run(ctx: RequestContext, bus: ExecutionEventBus): Promise<void> {
    const { taskId, contextId } = ctx;
    const first = ctx.userMessage.parts[0]?.content;
    const text = first?.$case === 'text' ? first.value : '';
    const status = (state: TaskState, message?: Message): void =>
      bus.publish(
        AgentEvent.statusUpdate({
          taskId,
          contextId,
          status: { state, message, timestamp: new Date().toISOString() },
          metadata: undefined,
        }),
      );
    const artifact = (value: string): void =>
      bus.publish(
        AgentEvent.artifactUpdate({
          taskId,
          contextId,
          artifact: {
            artifactId: 'out',
            name: 'out.txt',
            description: '',
            parts: [textPart(value, 'text/plain')],
            metadata: undefined,
            extensions: [],
          },
          append: false,
          lastChunk: true,
          metadata: undefined,
        }),
      );
    if (text === 'reply') {
      bus.publish(
        AgentEvent.message({
          ...agentMessage('', contextId, 'hello back'),
          messageId: `reply-${ctx.userMessage.messageId}`,
        }),
      );
      bus.finished();
      return;
    }
    if (ctx.task) {
      // A follow-up: the task as it stands, then the answer finishes it.
      bus.publish(AgentEvent.task(ctx.task));
      status(TaskState.TASK_STATE_WORKING, agentMessage(taskId, contextId, `got ${text}`));
      artifact(`answer: ${text}`);
      status(TaskState.TASK_STATE_COMPLETED);
      bus.finished();
      return;
    }
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
    if (text === 'fail') {
      status(TaskState.TASK_STATE_FAILED, agentMessage(taskId, contextId, 'it failed'));
      bus.finished();
      return;
    }
    if (text === 'ask') {
      status(TaskState.TASK_STATE_INPUT_REQUIRED, agentMessage(taskId, contextId, 'which file?'));
      bus.finished();
      return;
    }
    status(TaskState.TASK_STATE_WORKING, agentMessage(taskId, contextId, 'working'));
    if (text.startsWith('hold')) {
      while (!this.canceled.has(taskId) && !this.released.has(text)) await new Promise((r) => setTimeout(r, 5));
      if (this.canceled.has(taskId)) {
        status(TaskState.TASK_STATE_CANCELED);
        bus.finished();
        return;
      }
    }
    artifact(`echo: ${text}`);
    status(TaskState.TASK_STATE_COMPLETED, agentMessage(taskId, contextId, 'done'));
    bus.finished();
  }
  /** A running task is told to stop; one waiting for input (nothing runs) is canceled here. */
  cancelTask(taskId: string, bus: ExecutionEventBus): Promise<void> {
    this.canceled.add(taskId);
    if (!this.running.has(taskId)) {
      bus.publish(
        AgentEvent.statusUpdate({
          taskId,
          contextId: this.contexts.get(taskId) ?? '',
          status: { state: TaskState.TASK_STATE_CANCELED, message: undefined, timestamp: new Date().toISOString() },
          metadata: undefined,
        }),
      );
      bus.finished();
    }
    return Promise.resolve();
  }
}

export interface SdkAgent {
  readonly origin: string;
  /** JSON-RPC endpoint (1.0 and, with the header, 0.3). */
  readonly rpc: string;
  /** HTTP+JSON root. */
  readonly rest: string;
  readonly executor: DiffExecutor;
  close(): Promise<void>;
}

/** The SDK's server over the executor: JSON-RPC at /rpc, HTTP+JSON at /rest, its card at the origin. */
export async function startSdkAgent(opts: { push?: boolean } = {}): Promise<SdkAgent> {
  const app = express();
  let origin = '';
  const card = (): AgentCard =>
    sdkAgentCard({
      supportedInterfaces: [
        { url: `${origin}/rpc`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' },
        { url: `${origin}/rest`, protocolBinding: 'HTTP+JSON', tenant: '', protocolVersion: '1.0' },
        { url: `${origin}/rpc`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '0.3' },
        { url: `${origin}/rest`, protocolBinding: 'HTTP+JSON', tenant: '', protocolVersion: '0.3' },
      ],
      capabilities: {
        streaming: true,
        pushNotifications: Boolean(opts.push),
        extensions: [],
        extendedAgentCard: false,
      },
    });
  const executor = new DiffExecutor();
  const handler = new DefaultRequestHandler(card(), new InMemoryTaskStore(), executor);
  Object.defineProperty(handler, 'getAgentCard', { value: () => Promise.resolve(card()) });
  const userBuilder = (): Promise<{ isAuthenticated: boolean; userName: string }> =>
    Promise.resolve({ isAuthenticated: true, userName: 'u' });
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: () => Promise.resolve(card()) }));
  app.use('/rpc', jsonRpcHandler({ requestHandler: handler, userBuilder, legacyCompat: { enabled: true } }));
  app.use('/rest', restHandler({ requestHandler: handler, userBuilder, legacyCompat: { enabled: true } }));
  const l = await listenOnLoopback(app);
  origin = l.origin;
  return { origin, rpc: `${origin}/rpc`, rest: `${origin}/rest`, executor, close: l.close };
}

/** Routes of the gateway of `startProxyGateway`: each proxies to the same SDK agent over its binding. */
export const PROXY_ROUTES = { rpc: 'JSONRPC', rest: 'HTTP+JSON' } as const;

/**
 * A gateway with one proxy route per binding (`/a2a/rpc` over JSON-RPC, `/a2a/rest` over HTTP+JSON,
 * both A2A 1.0) to `agent`; webhooks on 127.0.0.1 are allowed so push configs compare with the SDK's.
 */
export async function startProxyGateway(agent: SdkAgent): Promise<RunningGateway & { dispose(): Promise<void> }> {
  const dir = tempDir();
  const gw = await startGateway({
    stateDir: dir.path,
    remoteAgents: Object.entries(PROXY_ROUTES).map(([id, binding]) => ({
      id,
      name: `Remote over ${binding}`,
      description: 'proxied',
      url: binding === 'JSONRPC' ? agent.rpc : agent.rest,
      protocolBinding: binding,
      protocolVersion: '1.0' as const,
      auth: { kind: 'none' as const },
      skills: [],
    })),
    pushAllowPrivateHosts: ['127.0.0.1'],
    limits: { cancelGraceMs: 2000 },
    log: () => undefined,
  });
  // The gateway's fields through its prototype (`agents` is a getter: the agents served now).
  return Object.assign(Object.create(gw) as RunningGateway, {
    dispose: async () => {
      await gw.close();
      dir[Symbol.dispose]();
    },
  });
}
