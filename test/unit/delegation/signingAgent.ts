/**
 * A signing A2A agent on 127.0.0.1 (the SDK's express JSON-RPC handler around a handler of our own)
 * that can tamper with what it sends. It plays an honest task — a `changes.patch` streamed in two
 * `append` chunks, then COMPLETED with a status message — and signs it exactly as Baton's gateway
 * does (`envelopeBody` over the task, `signResultEnvelope` with its key, the request digest of what it
 * received). A scenario, chosen by a `«name»` in the task text, may then change the streamed events,
 * the signed claims, the key, or the task GetTask returns, independently of each other.
 */
import { randomUUID } from 'node:crypto';
import express from 'express';
import { Role, TaskState } from '@a2a-js/sdk';
import type { AgentCard, Artifact, Message, SendMessageRequest, StreamResponse, Task, TaskStatus } from '@a2a-js/sdk';
import type { A2ARequestHandler } from '@a2a-js/sdk/server';
import { UserBuilder, agentCardHandler, jsonRpcHandler } from '@a2a-js/sdk/server/express';
import { META, PATCH_ARTIFACT, SIGNED_RESULT_EXTENSION_URI } from '../../../src/core/batonProfile';
import { envelopeBody, sentRequestDigest } from '../../../src/gateway/resultEnvelope';
import type { EnvelopeBody } from '../../../src/gateway/resultEnvelope';
import { normalizeCard } from '../../../src/node/a2a/clientFactory';
import type { PinnedEndpoint } from '../../../src/node/a2a/clientFactory';
import { generateSigningKey, signResultEnvelope } from '../../../src/node/signing';
import type { SigningKey } from '../../../src/node/signing';
import { listenOnLoopback } from './agentServers';

export const PATCH_CHUNKS = ['diff --git a/x b/x\n--- a/x\n+++ b/x\n', '@@ -1 +1 @@\n-a\n+b\n'] as const;
export const SIGNED_PATCH = PATCH_CHUNKS.join('');
export const PATCH_ID = 'patch-1';

/** The honest task as played: the events after the first Task event, and the task it folds to. */
export interface Played {
  readonly taskId: string;
  readonly contextId: string;
  readonly params: SendMessageRequest;
  readonly events: StreamResponse[];
  /** The task the agent signs (and GetTask returns, with the envelope, unless a scenario changes it). */
  readonly task: Task;
}

export interface Tamper {
  /** The events the stream sends instead of the honest ones. */
  readonly events?: (p: Played) => StreamResponse[];
  /** The task the signature covers instead of the honest one (the claims are built from it). */
  readonly signedTask?: (p: Played) => Task;
  /** Changes to the signed claims. */
  readonly claims?: (body: EnvelopeBody, p: Played) => Record<string, unknown>;
  /** Sign with a key of the agent's that its card does not name. */
  readonly otherKey?: boolean;
  /** What GetTask returns instead of the honest task with its envelope. */
  readonly final?: (signedTask: Task, p: Played) => Task;
}

export function textPart(text: string, filename: string = PATCH_ARTIFACT.name): Artifact['parts'][number] {
  return {
    content: { $case: 'text', value: text },
    filename,
    mediaType: PATCH_ARTIFACT.mediaType,
    metadata: undefined,
  };
}

export function artifactOf(
  artifactId: string,
  name: string,
  texts: readonly string[],
  extra: Partial<Artifact> = {},
): Artifact {
  return {
    artifactId,
    name,
    description: '',
    parts: texts.map((t) => textPart(t, name)),
    metadata: undefined,
    extensions: [],
    ...extra,
  };
}

export function artifactEvent(p: Played, artifact: Artifact, append: boolean, lastChunk: boolean): StreamResponse {
  return {
    payload: {
      $case: 'artifactUpdate',
      value: { taskId: p.taskId, contextId: p.contextId, artifact, append, lastChunk, metadata: undefined },
    },
  };
}

export function agentMessage(
  p: Pick<Played, 'taskId' | 'contextId'>,
  text: string,
  messageId = `m-${p.taskId}`,
): Message {
  return {
    messageId,
    contextId: p.contextId,
    taskId: p.taskId,
    role: Role.ROLE_AGENT,
    parts: [textPart(text, '')],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

export function statusEvent(p: Played, status: TaskStatus): StreamResponse {
  return {
    payload: {
      $case: 'statusUpdate',
      value: { taskId: p.taskId, contextId: p.contextId, status, metadata: undefined },
    },
  };
}

function play(params: SendMessageRequest): Played {
  const taskId = randomUUID();
  const contextId = params.message?.contextId || randomUUID();
  const ids = { taskId, contextId };
  const done: TaskStatus = {
    state: TaskState.TASK_STATE_COMPLETED,
    message: agentMessage(ids, 'done: one file changed'),
    timestamp: new Date().toISOString(),
  };
  const partial: Played = { ...ids, params, events: [], task: undefined as unknown as Task };
  const events = [
    statusEvent(partial, {
      state: TaskState.TASK_STATE_WORKING,
      message: undefined,
      timestamp: new Date().toISOString(),
    }),
    artifactEvent(partial, artifactOf(PATCH_ID, PATCH_ARTIFACT.name, [PATCH_CHUNKS[0]]), false, false),
    artifactEvent(partial, artifactOf(PATCH_ID, '', [PATCH_CHUNKS[1]]), true, true),
    statusEvent(partial, done),
  ];
  const task: Task = {
    id: taskId,
    contextId,
    status: done,
    artifacts: [artifactOf(PATCH_ID, PATCH_ARTIFACT.name, PATCH_CHUNKS)],
    history: params.message ? [params.message] : [],
    metadata: {},
  };
  return { ...ids, params, events, task };
}

class TamperingHandler implements A2ARequestHandler {
  private readonly finals = new Map<string, Task>();

  constructor(
    private readonly card: AgentCard,
    private readonly key: () => SigningKey,
    private readonly otherKey: SigningKey,
    private readonly scenarios: ReadonlyMap<string, Tamper>,
  ) {}

  private scenario(params: SendMessageRequest): Tamper {
    const text = (params.message?.parts ?? [])
      .map((p) => (p.content?.$case === 'text' ? p.content.value : ''))
      .join('\n');
    const name = /«([^»]+)»/.exec(text)?.[1];
    return (name !== undefined && this.scenarios.get(name)) || {};
  }

  private async settle(p: Played, t: Tamper): Promise<void> {
    const signedTask = t.signedTask ? t.signedTask(p) : p.task;
    const body = await envelopeBody(
      signedTask,
      signedTask.status ??
        p.task.status ?? { state: TaskState.TASK_STATE_COMPLETED, message: undefined, timestamp: undefined },
      sentRequestDigest(p.params),
      { id: 'tamper', kind: 'test' },
      null,
    );
    const claims = t.claims ? t.claims(body, p) : body;
    const jws = await signResultEnvelope(
      { v: 1, ...claims, issuedAt: new Date().toISOString() },
      t.otherKey ? this.otherKey : this.key(),
    );
    const honest: Task = { ...structuredClone(p.task), metadata: { ...(p.task.metadata ?? {}), [META.envelope]: jws } };
    this.finals.set(p.taskId, t.final ? t.final(honest, p) : honest);
  }

  async *sendMessageStream(params: SendMessageRequest): AsyncGenerator<StreamResponse, void, undefined> {
    const t = this.scenario(params);
    const p = play(params);
    await this.settle(p, t);
    yield {
      payload: {
        $case: 'task',
        value: {
          id: p.taskId,
          contextId: p.contextId,
          status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: new Date().toISOString() },
          artifacts: [],
          history: p.task.history,
          metadata: undefined,
        },
      },
    };
    for (const ev of t.events ? t.events(p) : p.events) yield ev;
  }

  async getTask(params: { id: string }): Promise<Task> {
    const t = this.finals.get(params.id);
    if (!t) throw new Error(`no task ${params.id}`);
    return structuredClone(t);
  }

  async *resubscribe(params: { id: string }): AsyncGenerator<StreamResponse, void, undefined> {
    yield { payload: { $case: 'task', value: await this.getTask(params) } };
  }

  getAgentCard(): Promise<AgentCard> {
    return Promise.resolve(this.card);
  }
  getAuthenticatedExtendedAgentCard(): Promise<AgentCard> {
    return Promise.resolve(this.card);
  }
  sendMessage(): Promise<Message | Task> {
    return Promise.reject(new Error('this test agent only streams'));
  }
  cancelTask(): Promise<Task> {
    return Promise.reject(new Error('not supported'));
  }
  listTasks(): Promise<never> {
    return Promise.reject(new Error('not supported'));
  }
  createTaskPushNotificationConfig(): Promise<never> {
    return Promise.reject(new Error('not supported'));
  }
  getTaskPushNotificationConfig(): Promise<never> {
    return Promise.reject(new Error('not supported'));
  }
  listTaskPushNotificationConfigs(): Promise<never> {
    return Promise.reject(new Error('not supported'));
  }
  deleteTaskPushNotificationConfig(): Promise<void> {
    return Promise.reject(new Error('not supported'));
  }
}

export interface SigningAgent {
  readonly base: string;
  readonly cardUrl: string;
  readonly card: AgentCard;
  readonly jsonRpc: PinnedEndpoint;
  /** The key the card names. */
  readonly key: SigningKey;
  close(): Promise<void>;
}

/** Starts the agent; `promise: false` serves a card that does not declare signed results. */
export async function startSigningAgent(
  scenarios: ReadonlyMap<string, Tamper>,
  opts: { key?: SigningKey; promise?: boolean; port?: number } = {},
): Promise<SigningAgent> {
  const key = opts.key ?? (await generateSigningKey());
  const app = express();
  const { port, close } = await listenOnLoopback(app, opts.port);
  const base = `http://127.0.0.1:${port}`;
  const card = normalizeCard({
    name: 'Signing test agent',
    description: 'Signs its results, and tampers with them on request',
    version: '1.0.0',
    supportedInterfaces: [{ url: `${base}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
    capabilities: {
      streaming: true,
      extensions:
        opts.promise === false
          ? []
          : [
              {
                uri: SIGNED_RESULT_EXTENSION_URI,
                required: false,
                params: { metadataKey: META.envelope, alg: 'EdDSA', publicKeyJwk: key.publicJwk },
              },
            ],
    },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/x-diff'],
    skills: [{ id: 'patch', name: 'Patch', description: 'returns a patch', tags: ['test'] }],
  });
  const requestHandler = new TamperingHandler(card, () => key, await generateSigningKey(), scenarios);
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: requestHandler }));
  app.use('/a2a/jsonrpc/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: requestHandler }));
  app.use('/a2a/jsonrpc', jsonRpcHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication }));
  return {
    base,
    cardUrl: `${base}/.well-known/agent-card.json`,
    card,
    jsonRpc: { url: `${base}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
    key,
    close,
  };
}
