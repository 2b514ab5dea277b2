/**
 * The agent the A2A conformance kit (a2a-tck) is run against, directly and behind baton-gateway
 * (scripts/tck.sh): the `@a2a-js/sdk` server, A2A 1.0, with JSON-RPC at `<origin>/rpc`, HTTP+JSON at the
 * origin itself and its card at `<origin>/.well-known/agent-card.json`, where the kit's client looks.
 *
 * Each message makes a task (or continues the one it names): submitted, working, an artifact
 * "echo: <text>", completed with the same text as the agent's message. A task whose first messageId
 * starts with `test-subscribe` or `test-resubscribe` stays working for `--hold-ms` first (the kit
 * subscribes to it meanwhile; its docs/SUT_REQUIREMENTS.md asks for 2 × TCK_STREAMING_TIMEOUT). A
 * cancel is honoured while a task runs.
 *
 * `--stay-working` makes it the agent the kit is written for (a2a-java's TCK SUT): a message makes
 * a task and leaves it working (after `--hold-ms` for the messageIds above), a further message keeps
 * it working, and only a cancel ends it.
 *
 *   node --import tsx scripts/tck/echoAgent.ts [--port 0] [--public-url URL] [--hold-ms 5000] [--stay-working]
 *
 * `--public-url` is the origin its card names (default its own), e.g. that of scripts/tck/proxy.ts in
 * front of it. Prints one JSON line, `{"origin": "http://127.0.0.1:<port>"}`, once it listens; stops on
 * SIGINT/SIGTERM.
 */
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import express from 'express';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import type { AgentExecutor, ExecutionEventBus, RequestContext } from '@a2a-js/sdk/server';
import { agentCardHandler, restHandler } from '@a2a-js/sdk/server/express';
import { Role, TaskState } from '@a2a-js/sdk';
import type { AgentCard, Part } from '@a2a-js/sdk';
import { listenOnLoopback, sdkAgentCard, sdkJsonRpc, statusEvent, taskEvent } from '../../test/unit/gateway/sdkServer';

const STEP_MS = 100;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function textPart(value: string): Part {
  return { content: { $case: 'text', value }, metadata: undefined, filename: '', mediaType: 'text/plain' };
}

class EchoExecutor implements AgentExecutor {
  private readonly cancels = new Set<string>();
  constructor(
    private readonly holdMs: number,
    private readonly stayWorking: boolean,
  ) {}

  async execute(ctx: RequestContext, bus: ExecutionEventBus): Promise<void> {
    const { taskId, contextId } = ctx;
    if (this.stayWorking) {
      // What the kit's own agent (a2a-java's TCK SUT) does: the task is made and left working, and each
      // further message keeps it so; only a cancel ends it (the SDK cancels a task with no execution running).
      bus.publish(ctx.task ? AgentEvent.task(ctx.task) : taskEvent(ctx, TaskState.TASK_STATE_SUBMITTED));
      if (/^test-(re)?subscribe/.test(ctx.userMessage.messageId)) await sleep(this.holdMs);
      bus.publish(
        statusEvent(taskId, contextId, TaskState.TASK_STATE_WORKING, { timestamp: new Date().toISOString() }),
      );
      bus.finished();
      return;
    }
    const first = ctx.userMessage.parts.find((p) => p.content?.$case === 'text');
    const input = first?.content?.$case === 'text' ? first.content.value : '(no text)';
    bus.publish(ctx.task ? AgentEvent.task(ctx.task) : taskEvent(ctx, TaskState.TASK_STATE_SUBMITTED));
    bus.publish(statusEvent(taskId, contextId, TaskState.TASK_STATE_WORKING, { timestamp: new Date().toISOString() }));
    const hold = /^test-(re)?subscribe/.test(ctx.userMessage.messageId);
    const until = Date.now() + (hold ? this.holdMs : STEP_MS);
    while (Date.now() < until) {
      if (this.cancels.delete(taskId)) {
        bus.publish(
          statusEvent(taskId, contextId, TaskState.TASK_STATE_CANCELED, { timestamp: new Date().toISOString() }),
        );
        bus.finished();
        return;
      }
      await sleep(20);
    }
    const answer = `echo: ${input}`;
    bus.publish(
      AgentEvent.artifactUpdate({
        taskId,
        contextId,
        artifact: {
          artifactId: 'echo',
          name: 'echo',
          description: '',
          parts: [textPart(answer)],
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
        status: {
          state: TaskState.TASK_STATE_COMPLETED,
          message: {
            messageId: randomUUID(),
            contextId,
            taskId,
            role: Role.ROLE_AGENT,
            parts: [textPart(answer)],
            metadata: undefined,
            extensions: [],
            referenceTaskIds: [],
          },
          timestamp: new Date().toISOString(),
        },
        metadata: undefined,
      }),
    );
    bus.finished();
  }

  cancelTask(taskId: string): Promise<void> {
    this.cancels.add(taskId);
    return Promise.resolve();
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      port: { type: 'string', default: '0' },
      'public-url': { type: 'string' },
      'hold-ms': { type: 'string', default: '5000' },
      'stay-working': { type: 'boolean', default: false },
    },
  });
  const holdMs = Number(values['hold-ms']);
  if (!Number.isFinite(holdMs) || holdMs < 0) throw new Error(`--hold-ms: not a number of milliseconds`);
  let origin = values['public-url']?.replace(/\/+$/, '') ?? '';
  const card = (): AgentCard =>
    sdkAgentCard({
      name: 'sdk-echo',
      description: 'Echoes the text it gets (@a2a-js/sdk server)',
      supportedInterfaces: [
        { url: `${origin}/rpc`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' },
        { url: origin, protocolBinding: 'HTTP+JSON', tenant: '', protocolVersion: '1.0' },
      ],
      skills: [
        {
          id: 'echo',
          name: 'Echo',
          description: 'Answers with the text it gets',
          tags: ['echo'],
          examples: [],
          inputModes: [],
          outputModes: [],
          securityRequirements: [],
        },
      ],
    });
  const handler = new DefaultRequestHandler(
    card(),
    new InMemoryTaskStore(),
    new EchoExecutor(holdMs, values['stay-working']),
  );
  // The card is complete (its URLs known) only once the server listens.
  Object.defineProperty(handler, 'getAgentCard', { value: () => Promise.resolve(card()) });
  const app = express();
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: () => Promise.resolve(card()) }));
  app.use('/rpc', sdkJsonRpc(handler));
  app.use(
    '/',
    restHandler({
      requestHandler: handler,
      userBuilder: () => Promise.resolve({ isAuthenticated: true, userName: 'tck' }),
    }),
  );
  const server = await listenOnLoopback(app, Number(values.port));
  origin ||= server.origin;
  console.log(JSON.stringify({ origin: server.origin }));
  const stop = () => void server.close().then(() => process.exit(0));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((e: unknown) => {
  console.error(`echoAgent: ${e instanceof Error ? e.message : String(e)}`);
  process.exit(1);
});
