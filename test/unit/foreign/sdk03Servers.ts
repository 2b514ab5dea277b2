/**
 * A2A 0.3 agents built with the 0.3-era SDK (`a2a-sdk-v03` = @a2a-js/sdk 0.3.14: its own
 * DefaultRequestHandler, InMemoryTaskStore and express app), each with a habit real 0.3 agents have:
 *
 * - `snapshot`: progress and the end published as whole `task` objects, never status-update events;
 *   a task whose text says "ask" first asks a question (input-required) and finishes on the answer.
 * - `message`: answers every message with a `Message` and makes no task.
 * - `oddCard`: its card is at a path of its own (not /.well-known/agent-card.json) and its `url` has a
 *   trailing slash (JSON-RPC is served there).
 * - `noResubscribe`: answers `tasks/resubscribe` with an error (unsupported operation), as 0.3 servers
 *   without resubscribe support do; its tasks take a while (steps every `stepMs`).
 * - `noStreaming`: its card says `streaming: false` (the SDK's server then refuses `message/stream`
 *   and `tasks/resubscribe`); its tasks take a while too.
 *
 * Every finished task carries a `changes.patch` artifact naming its first message's text. The
 * odd-card agent asks back (input-required with `final: false`, then the stream ends) when the text
 * says "question".
 */
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import type { AgentCard, Artifact, Message, Task, TaskIdParams, TaskState, TaskStatusUpdateEvent } from 'a2a-sdk-v03';
import { A2AError, DefaultRequestHandler, InMemoryTaskStore } from 'a2a-sdk-v03/server';
import type { AgentExecutor, ExecutionEventBus, RequestContext } from 'a2a-sdk-v03/server';
import { A2AExpressApp } from 'a2a-sdk-v03/server/express';

export type Quirk = 'snapshot' | 'message' | 'oddCard' | 'noResubscribe' | 'noStreaming';

export interface Sdk03Server {
  /** Where its card is. */
  readonly cardUrl: string;
  /** The JSON-RPC endpoint its card names (with the trailing slash where the card has one). */
  readonly url: string;
  /** The texts of the user messages it got, in order. */
  readonly received: string[];
  /** How many times it was asked to resubscribe. */
  readonly resubscribes: () => number;
  /** The JSON-RPC methods of the requests it got, in order. */
  readonly methods: string[];
  /** Makes its card name another URL for its JSON-RPC endpoint (a proxy in front of it). */
  advertise(url: string): void;
  close(): Promise<void>;
}

/** The extension the odd-card agent's card declares. */
export const ODD_EXTENSION = 'https://example.com/a2a/ext/odd/v1';

export const patchFor = (text: string): string =>
  `diff --git a/notes.txt b/notes.txt\n--- a/notes.txt\n+++ b/notes.txt\n@@ -1 +1 @@\n-old\n+${text}\n`;

function textOf(m: Message): string {
  return m.parts.map((p) => (p.kind === 'text' ? p.text : '')).join('');
}

function agentMessage(text: string, taskId: string | undefined, contextId: string): Message {
  return {
    kind: 'message',
    role: 'agent',
    messageId: randomUUID(),
    parts: [{ kind: 'text', text }],
    contextId,
    ...(taskId ? { taskId } : {}),
  };
}

function patchArtifact(text: string): Artifact {
  return {
    artifactId: 'patch',
    name: 'changes.patch',
    parts: [{ kind: 'text', text: patchFor(text) }],
  };
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

class QuirkExecutor implements AgentExecutor {
  private readonly canceled = new Set<string>();

  constructor(
    private readonly quirk: Quirk,
    private readonly received: string[],
    private readonly stepMs: number,
  ) {}

  async execute(ctx: RequestContext, bus: ExecutionEventBus): Promise<void> {
    const text = textOf(ctx.userMessage);
    this.received.push(text);
    const { taskId, contextId } = ctx;
    if (this.quirk === 'message') {
      bus.publish(agentMessage(`hello back: ${text}`, undefined, contextId));
      bus.finished();
      return;
    }
    if (this.quirk === 'snapshot') {
      const history = [...(ctx.task?.history ?? []), ctx.userMessage];
      const snap = (state: TaskState, note: string, artifacts: Artifact[] = []): Task => ({
        kind: 'task',
        id: taskId,
        contextId,
        status: { state, message: agentMessage(note, taskId, contextId), timestamp: new Date().toISOString() },
        artifacts,
        history,
      });
      const first = ctx.task ? textOf(ctx.task.history?.[0] ?? ctx.userMessage) : text;
      bus.publish(snap('working', ctx.task ? `got the answer: ${text}` : 'reading the code'));
      await sleep(this.stepMs);
      if (!ctx.task && text.includes('ask')) {
        bus.publish(snap('input-required', 'which file?'));
        bus.finished();
        return;
      }
      bus.publish(snap('working', 'writing the patch'));
      await sleep(this.stepMs);
      const summary = ctx.task ? `${first} (${text})` : text;
      bus.publish(snap('completed', `done: ${summary}`, [patchArtifact(summary)]));
      bus.finished();
      return;
    }
    // oddCard, noResubscribe and noStreaming: ordinary 0.3 events (a task, status updates, an artifact update).
    if (!ctx.task)
      bus.publish({
        kind: 'task',
        id: taskId,
        contextId,
        status: { state: 'submitted', timestamp: new Date().toISOString() },
        history: [ctx.userMessage],
      });
    const status = (state: TaskState, note: string, final: boolean): TaskStatusUpdateEvent => ({
      kind: 'status-update',
      taskId,
      contextId,
      status: { state, message: agentMessage(note, taskId, contextId), timestamp: new Date().toISOString() },
      final,
    });
    if (!ctx.task && text.includes('question')) {
      // As 0.3 servers made with the 1.0 SDK's compatibility layer do: input-required with final:false,
      // and then the stream ends.
      bus.publish(status('input-required', 'which one?', false));
      bus.finished();
      return;
    }
    const steps = this.quirk === 'noResubscribe' ? 8 : this.quirk === 'noStreaming' ? 3 : 2;
    for (let i = 1; i <= steps; i++) {
      if (this.canceled.has(taskId)) {
        bus.publish(status('canceled', 'canceled on request', true));
        bus.finished();
        return;
      }
      bus.publish(status('working', `step ${i}`, false));
      await sleep(this.stepMs);
    }
    bus.publish({ kind: 'artifact-update', taskId, contextId, artifact: patchArtifact(text), lastChunk: true });
    bus.publish(status('completed', `done: ${text}`, true));
    bus.finished();
  }

  cancelTask(taskId: string): Promise<void> {
    this.canceled.add(taskId);
    return Promise.resolve();
  }
}

/** A 0.3 server that refuses `tasks/resubscribe`, as servers without resubscribe support answer it. */
class NoResubscribeHandler extends DefaultRequestHandler {
  count = 0;
  // eslint-disable-next-line require-yield
  override async *resubscribe(params: TaskIdParams): ReturnType<DefaultRequestHandler['resubscribe']> {
    this.count++;
    throw A2AError.unsupportedOperation(`tasks/resubscribe is not supported (task ${params.id})`);
  }
}

export async function startSdk03Server(quirk: Quirk, opts: { stepMs?: number } = {}): Promise<Sdk03Server> {
  const received: string[] = [];
  const methods: string[] = [];
  const app = express();
  app.use(express.json(), (req, _res, next) => {
    const body = req.body as { method?: unknown } | undefined;
    if (typeof body?.method === 'string') methods.push(body.method);
    next();
  });
  const server: Server = await new Promise((r) => {
    const s = app.listen(0, '127.0.0.1', () => r(s));
  });
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const base = quirk === 'oddCard' ? '/agents/coder' : '';
  const url = quirk === 'oddCard' ? `${origin}${base}/` : origin;
  const cardPath = quirk === 'oddCard' ? 'card/coder.json' : '.well-known/agent-card.json';
  const card: AgentCard = {
    protocolVersion: '0.3.0',
    name: `sdk03-${quirk}`,
    description: `an A2A 0.3 agent (${quirk})`,
    url,
    preferredTransport: 'JSONRPC',
    version: '1.0.0',
    capabilities: {
      streaming: quirk !== 'noStreaming',
      pushNotifications: false,
      ...(quirk === 'oddCard' ? { extensions: [{ uri: ODD_EXTENSION, description: 'an extension it declares' }] } : {}),
    },
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain', 'text/x-diff'],
    skills: [{ id: `${quirk}-skill`, name: `${quirk} skill`, description: 'edits code', tags: ['code'] }],
  };
  const store = new InMemoryTaskStore();
  const executor = new QuirkExecutor(quirk, received, opts.stepMs ?? 30);
  const handler =
    quirk === 'noResubscribe'
      ? new NoResubscribeHandler(card, store, executor)
      : new DefaultRequestHandler(card, store, executor);
  new A2AExpressApp(handler).setupRoutes(app, base, undefined, cardPath);
  return {
    cardUrl: `${origin}${base}/${cardPath}`,
    url,
    received,
    methods,
    resubscribes: () => (handler instanceof NoResubscribeHandler ? handler.count : 0),
    advertise: (to) => {
      card.url = to;
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
