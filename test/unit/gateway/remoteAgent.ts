/**
 * A remote A2A agent for the gateway's proxy tests: the SDK's own server (JSON-RPC and HTTP+JSON, 1.0
 * or 0.3) behind a bearer check, running a scripted executor.
 */
import { randomUUID } from 'node:crypto';
import express from 'express';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import type { AgentExecutor, ExecutionEventBus, RequestContext } from '@a2a-js/sdk/server';
import { agentCardHandler } from '@a2a-js/sdk/server/express';
import { Role, TaskState } from '@a2a-js/sdk';
import type { AgentCard, Message, Part } from '@a2a-js/sdk';
import {
  bearerCheck,
  listenOnLoopback,
  patchEvent,
  sdkAgentCard,
  sdkJsonRpc,
  sdkRest,
  statusEvent,
  taskEvent,
} from './sdkServer';

function textPart(value: string): Part {
  return { content: { $case: 'text', value }, metadata: undefined, filename: '', mediaType: 'text/plain' };
}

function agentMessage(text: string, taskId: string, contextId: string): Message {
  return {
    messageId: randomUUID(),
    contextId,
    taskId,
    role: Role.ROLE_AGENT,
    parts: [textPart(text)],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

/**
 * The patch of a "big" task: about 100 KiB, well past `BYTES_FROM_CHARS` (the relay keeps it as UTF-8
 * bytes), with characters of every UTF-8 length, what JSON escapes (quotes, backslashes, tabs, control
 * characters, newlines) and U+2028, which JSON leaves as it is and an SSE line does not end at.
 */
export const LARGE_PATCH = `diff --git a/big b/big\n${Array.from(
  { length: 1200 },
  (_, i) => `+line ${i}: é ✓ 😀 "quoted" back\\slash\ttab \u0001 \u2028 ${'x'.repeat(i % 40)}\n`,
).join('')}`;

/**
 * A plain SDK agent: N status events, a patch artifact, completed; or waits to be canceled ("wait"); or
 * ("auth") asks for authorization and goes on by itself once `authorize()` is called (out of band).
 */
export class CountingExecutor implements AgentExecutor {
  private readonly cancels = new Set<string>();
  private authorized!: () => void;
  private readonly signedIn = new Promise<void>((r) => (this.authorized = r));
  constructor(private readonly n: number) {}
  authorize(): void {
    this.authorized();
  }
  async execute(ctx: RequestContext, bus: ExecutionEventBus): Promise<void> {
    const { taskId, contextId } = ctx;
    const text = ctx.userMessage.parts[0]?.content?.$case === 'text' ? ctx.userMessage.parts[0].content.value : '';
    if (text === 'reply') {
      // A direct answer: a Message, no task.
      bus.publish(
        AgentEvent.message({
          messageId: `reply-${taskId}`,
          contextId,
          taskId: '',
          role: Role.ROLE_AGENT,
          parts: [textPart('hello back')],
          metadata: undefined,
          extensions: [],
          referenceTaskIds: [],
        }),
      );
      bus.finished();
      return;
    }
    if (ctx.task) {
      // A follow-up to an "ask" task: the answer finishes it.
      // First the task as it stands (still input-required), as SDK agents do.
      bus.publish(AgentEvent.task(ctx.task));
      bus.publish(
        AgentEvent.statusUpdate({
          taskId,
          contextId,
          status: {
            state: TaskState.TASK_STATE_WORKING,
            message: agentMessage(`got ${text}`, taskId, contextId),
            timestamp: undefined,
          },
          metadata: undefined,
        }),
      );
      bus.publish(statusEvent(taskId, contextId, TaskState.TASK_STATE_COMPLETED));
      bus.finished();
      return;
    }
    bus.publish(taskEvent(ctx, TaskState.TASK_STATE_SUBMITTED));
    if (text === 'big') {
      bus.publish(statusEvent(taskId, contextId, TaskState.TASK_STATE_WORKING, { timestamp: '1' }));
      bus.publish(patchEvent(taskId, contextId, LARGE_PATCH));
      bus.publish(statusEvent(taskId, contextId, TaskState.TASK_STATE_COMPLETED));
      bus.finished();
      return;
    }
    if (text === 'patch later') {
      // Works on after the first events; the patch and the end come later (the relay may be gone by then).
      bus.publish(statusEvent(taskId, contextId, TaskState.TASK_STATE_WORKING, { timestamp: '1' }));
      bus.publish(statusEvent(taskId, contextId, TaskState.TASK_STATE_WORKING, { timestamp: '2' }));
      await new Promise((r) => setTimeout(r, 150));
      bus.publish(patchEvent(taskId, contextId, 'diff --git a/later b/later\n'));
      bus.publish(statusEvent(taskId, contextId, TaskState.TASK_STATE_COMPLETED));
      bus.finished();
      return;
    }
    if (text === 'auth') {
      bus.publish(statusEvent(taskId, contextId, TaskState.TASK_STATE_AUTH_REQUIRED));
      await this.signedIn;
      bus.publish(statusEvent(taskId, contextId, TaskState.TASK_STATE_WORKING, { timestamp: 'signed in' }));
      // Work done while nobody follows the task: the gateway must still end up with this artifact.
      bus.publish(patchEvent(taskId, contextId, 'diff --git a/auth b/auth\n'));
      while (!this.cancels.has(taskId) && !this.finishAuthTask) await new Promise((r) => setTimeout(r, 10));
      bus.publish(statusEvent(taskId, contextId, TaskState.TASK_STATE_COMPLETED));
      bus.finished();
      return;
    }
    if (text === 'ask') {
      bus.publish(
        AgentEvent.statusUpdate({
          taskId,
          contextId,
          status: {
            state: TaskState.TASK_STATE_INPUT_REQUIRED,
            message: agentMessage('which file?', taskId, contextId),
            timestamp: undefined,
          },
          metadata: undefined,
        }),
      );
      bus.finished();
      return;
    }
    if (text === 'leave working') {
      // As a fire-and-forget agent does (the conformance kit's own): the answer ends with the task
      // working; the work goes on out of sight, and only a cancel ends it here.
      bus.publish(statusEvent(taskId, contextId, TaskState.TASK_STATE_WORKING));
      bus.finished();
      return;
    }
    if (text === 'ignore cancel') {
      // Takes a cancel and says nothing back: works on until the test lets it finish.
      bus.publish(statusEvent(taskId, contextId, TaskState.TASK_STATE_WORKING));
      while (!this.finishStubborn) await new Promise((r) => setTimeout(r, 10));
      bus.publish(statusEvent(taskId, contextId, TaskState.TASK_STATE_COMPLETED));
      bus.finished();
      return;
    }
    if (text === 'wait') {
      while (!this.cancels.has(taskId)) await new Promise((r) => setTimeout(r, 10));
      bus.publish(statusEvent(taskId, contextId, TaskState.TASK_STATE_CANCELED));
      bus.finished();
      return;
    }
    for (let i = 1; i <= this.n; i++) {
      bus.publish(
        statusEvent(taskId, contextId, TaskState.TASK_STATE_WORKING, { timestamp: String(i), metadata: { i } }),
      );
    }
    bus.publish(patchEvent(taskId, contextId));
    bus.publish(statusEvent(taskId, contextId, TaskState.TASK_STATE_COMPLETED));
    bus.finished();
  }
  /** Lets the "auth" task finish (after the test has seen it go on). */
  finishAuthTask = false;
  /** Lets the "ignore cancel" tasks finish. */
  finishStubborn = false;
  cancelTask(taskId: string): Promise<void> {
    this.cancels.add(taskId);
    return Promise.resolve();
  }
}

export async function startRemote(
  n: number,
  requiredToken: string,
  legacy: boolean,
  opts: { serveCard?: boolean; cardDelayMs?: number } = {},
): Promise<{
  url: string;
  seenAuth: string[];
  executor: CountingExecutor;
  /** How many requests for its card it had (served or not). */
  cardReads(): number;
  close(): Promise<void>;
}> {
  const seenAuth: string[] = [];
  const app = express();
  let cardReads = 0;
  app.use((req, _res, next) => {
    if (req.path.endsWith('/agent-card.json')) cardReads++;
    next();
  });
  let url = '';
  const version = legacy ? '0.3' : '1.0';
  const card = (): AgentCard =>
    sdkAgentCard({
      supportedInterfaces: [
        { url, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: version },
        { url: url.replace(/\/rpc$/, '/rest'), protocolBinding: 'HTTP+JSON', tenant: '', protocolVersion: version },
      ],
    });
  const executor = new CountingExecutor(n);
  const handler = new DefaultRequestHandler(card(), new InMemoryTaskStore(), executor);
  Object.defineProperty(handler, 'getAgentCard', { value: () => Promise.resolve(card()) });
  app.use(bearerCheck(requiredToken, seenAuth));
  // Its card at the origin (behind the same bearer check); a 0.3 caller gets the card's 0.3 form.
  if (opts.serveCard)
    app.use(
      '/.well-known/agent-card.json',
      agentCardHandler({
        agentCardProvider: () => new Promise<AgentCard>((r) => setTimeout(() => r(card()), opts.cardDelayMs ?? 0)),
        legacyCompat: { enabled: legacy },
      }),
    );
  app.use('/rpc', sdkJsonRpc(handler, { legacy }));
  app.use('/rest', sdkRest(handler));
  const l = await listenOnLoopback(app);
  url = `${l.origin}/rpc`;
  return { url, seenAuth, executor, cardReads: () => cardReads, close: l.close };
}
