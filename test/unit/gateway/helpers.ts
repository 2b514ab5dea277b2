/** Shared pieces for the gateway tests: temp folders, tiny local agents, a gateway per describe block, SDK clients with a token, raw JSON-RPC calls. */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before } from 'node:test';
import { Artifact, Role, SendMessageRequest, Task, TaskState, TaskStatus, taskStateToJSON } from '@a2a-js/sdk';
import type { Message, StreamResponse } from '@a2a-js/sdk';
import { ClientFactory, JsonRpcTransportFactory, RestTransportFactory } from '@a2a-js/sdk/client';
import type { Client } from '@a2a-js/sdk/client';
import { META, REPLAY_EXTENSION_URI, SIGNED_RESULT_EXTENSION_URI } from '../../../src/core/batonProfile';
import { requestDigest, toVerifiedKey, verifyResultEnvelope } from '../../../src/node/signing';
import type { EnvelopeVerification, PublicJwk } from '../../../src/node/signing';
import type {
  LocalAgent,
  LocalRunEvent,
  LocalRunRequest,
  LocalRunResult,
} from '../../../src/gateway/agents/localAgent';
import { startGateway } from '../../../src/gateway/server';
import type { GatewayOptions, RunningGateway } from '../../../src/gateway/server';

export function tempDir(prefix = 'baton-gw-'): { path: string; [Symbol.dispose](): void } {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return { path, [Symbol.dispose]: () => rmSync(path, { recursive: true, force: true }) };
}

export interface ScriptedAgentOptions {
  readonly id?: string;
  readonly steps?: number;
  readonly patch?: string;
  /** Never returns and ignores its signal (an uncooperative executor). */
  readonly hang?: boolean;
  /** Waits for its signal, then returns canceled. */
  readonly waitForCancel?: boolean;
  /** Delay between steps, ms. */
  readonly stepDelayMs?: number;
  /** Asks this first (input-required) and puts the answer in its summary. */
  readonly ask?: string;
}

/** A LocalAgent that emits `steps` step events and returns a patch, as the built-in agents do. */
export function scriptedAgent(o: ScriptedAgentOptions = {}): LocalAgent & { readonly requests: LocalRunRequest[] } {
  const requests: LocalRunRequest[] = [];
  return {
    id: o.id ?? 'echo',
    name: 'Echo agent',
    description: 'Emits numbered steps and returns a patch (test agent).',
    kind: 'builtin',
    skills: [{ id: 'echo', name: 'Echo', description: 'Echoes', tags: ['test'] }],
    maxCapabilities: { write: true, shell: false, network: false },
    requests,
    async run(req: LocalRunRequest, emit: (e: LocalRunEvent) => void): Promise<LocalRunResult> {
      requests.push(req);
      emit({ kind: 'started', workspace: '/tmp/ws', confined: false });
      if (o.hang) await new Promise(() => undefined);
      let answer = '';
      if (o.ask) {
        if (!req.ask) return { outcome: 'failed', reason: 'nobody to ask', patch: '' };
        try {
          answer = await req.ask(o.ask);
        } catch (e) {
          return {
            outcome: req.signal.aborted && Date.now() < req.deadline ? 'canceled' : 'expired',
            reason: `not answered: ${(e as Error).message}`,
            patch: '',
          };
        }
      }
      if (o.waitForCancel) {
        await new Promise<void>((r) => (req.signal.aborted ? r() : req.signal.addEventListener('abort', () => r())));
        return { outcome: 'canceled', reason: 'canceled by request', patch: '' };
      }
      for (let i = 1; i <= (o.steps ?? 3); i++) {
        emit({ kind: 'step', text: `step ${i}` });
        if (o.stepDelayMs) await new Promise((r) => setTimeout(r, o.stepDelayMs));
      }
      const patch = o.patch ?? 'diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n';
      return { outcome: 'completed', patch, summary: `did: ${req.prompt}${o.ask ? `; answer: ${answer}` : ''}` };
    },
  };
}

/**
 * A gateway for the tests of the describe block it is called in: started before them (serving the
 * scripted agent unless `opts` says otherwise), closed and its state folder removed after them. Its
 * fields are read inside the tests, once it has started.
 */
export function suiteGateway(
  opts: Partial<Omit<GatewayOptions, 'stateDir'>> = {},
): RunningGateway & { readonly stateDir: string } {
  const dir = tempDir();
  let running: RunningGateway | undefined;
  const started = (): RunningGateway => {
    if (!running)
      throw new Error('The gateway starts before the tests: read it inside a test or hook, not in the describe block.');
    return running;
  };
  before(async () => {
    running = await startGateway({ stateDir: dir.path, localAgents: [scriptedAgent()], log: () => undefined, ...opts });
  });
  after(async () => {
    await running?.close();
    dir[Symbol.dispose]();
  });
  return {
    stateDir: dir.path,
    get url() {
      return started().url;
    },
    get token() {
      return started().token;
    },
    get tokenFile() {
      return started().tokenFile;
    },
    get port() {
      return started().port;
    },
    get store() {
      return started().store;
    },
    get instanceId() {
      return started().instanceId;
    },
    get agents() {
      return started().agents;
    },
    setTokens: (tokens) => started().setTokens(tokens),
    setMaxRunningPerPrincipal: (limit) => started().setMaxRunningPerPrincipal(limit),
    setRetention: (policy) => started().setRetention(policy),
    setRemoteAgents: (remotes) => started().setRemoteAgents(remotes),
    setTaskLimits: (limits) => started().setTaskLimits(limits),
    setDelegationPolicy: (policy) => started().setDelegationPolicy(policy),
    setRequestLimits: (limits) => started().setRequestLimits(limits),
    close: () => started().close(),
  };
}

/**
 * A JSON-RPC POST to a gateway route as A2A 1.0, for what the SDK's client would never send (no token,
 * a wrong one, a hostile body): `body` is sent as written when it is a string.
 */
export function rpcPost(
  url: string,
  body: string | { readonly method: string; readonly params: unknown; readonly id?: number },
  headers: Record<string, string> = {},
): Promise<Response> {
  const text =
    typeof body === 'string'
      ? body
      : JSON.stringify({ jsonrpc: '2.0', id: body.id ?? 1, method: body.method, params: body.params });
  return fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', ...headers },
    body: text,
  });
}

/** A fetch with the bearer token and, when `extensions` are given, the `A2A-Extensions` header on every call. */
export function bearerFetch(token: string, extensions: readonly string[] = []): typeof fetch {
  return (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set('Authorization', `Bearer ${token}`);
    if (extensions.length) headers.set('A2A-Extensions', extensions.join(','));
    return fetch(input, { ...init, headers });
  };
}

/**
 * An SDK client of a gateway route. It activates the replay profile as Baton's own client does (events
 * carry `baton/seq`) unless `replay: false` (a plain A2A client).
 */
export async function clientFor(
  cardUrl: string,
  token: string,
  opts: { legacy?: boolean; preferRest?: boolean; replay?: boolean; extensions?: readonly string[] } = {},
): Promise<Client> {
  const fetchImpl = bearerFetch(token, [
    ...(opts.replay === false ? [] : [REPLAY_EXTENSION_URI]),
    ...(opts.extensions ?? []),
  ]);
  const legacyCompat = { enabled: Boolean(opts.legacy) };
  const factory = new ClientFactory({
    transports: [
      new JsonRpcTransportFactory({ fetchImpl, legacyCompat }),
      new RestTransportFactory({ fetchImpl, legacyCompat }),
    ],
    ...(opts.preferRest ? { preferredTransports: ['HTTP+JSON'] } : {}),
    cardResolver: new (await import('@a2a-js/sdk/client')).DefaultAgentCardResolver({ fetchImpl, legacyCompat }),
  });
  if (opts.legacy) {
    // A 0.3 client: read the card as the 0.3 SDK client does (Accept: application/json, no A2A-Version) and speak 0.3.
    const res = await fetch(cardUrl, { headers: { accept: 'application/json' } });
    const resolver = new (await import('@a2a-js/sdk/client')).DefaultAgentCardResolver({ legacyCompat });
    const card = resolver.normalizeAgentCard(await res.json());
    card.supportedInterfaces = card.supportedInterfaces.filter((i) => i.protocolVersion === '0.3');
    return factory.createFromAgentCard(card);
  }
  return factory.createFromUrl(cardUrl, '');
}

export function userMessage(
  text: string,
  metadata?: Record<string, unknown>,
  messageId: string = randomUUID(),
): Message {
  return {
    messageId,
    contextId: '',
    taskId: '',
    role: Role.ROLE_USER,
    parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' }],
    metadata,
    extensions: [],
    referenceTaskIds: [],
  };
}

export function sendRequest(msg: Message, returnImmediately = false): SendMessageRequest {
  return {
    tenant: '',
    message: msg,
    configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately },
    metadata: undefined,
  };
}

export function seqOf(ev: StreamResponse): number | undefined {
  const v = ev.payload?.value as { metadata?: Record<string, unknown> } | undefined;
  const s = v?.metadata?.['baton/seq'];
  return typeof s === 'number' ? s : undefined;
}

export async function collect<T>(it: AsyncIterable<T>, limit = 100_000): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) {
    out.push(x);
    if (out.length >= limit) break;
  }
  return out;
}

/** Reads an SSE response into (id, data) pairs, bounded by a timeout. */
export async function readSse(
  res: Response,
  timeoutMs = 10_000,
): Promise<Array<{ id?: string; event?: string; data: string }>> {
  const out: Array<{ id?: string; event?: string; data: string }> = [];
  const text = await Promise.race([
    res.text(),
    new Promise<string>((_, rej) => setTimeout(() => rej(new Error('SSE read timed out')), timeoutMs)),
  ]);
  for (const block of text.split('\n\n')) {
    if (!block.trim() || block.startsWith(':')) continue;
    const ev: { id?: string; event?: string; data: string } = { data: '' };
    for (const line of block.split('\n')) {
      if (line.startsWith('id: ')) ev.id = line.slice(4);
      else if (line.startsWith('event: ')) ev.event = line.slice(7);
      else if (line.startsWith('data: ')) ev.data += line.slice(6);
    }
    out.push(ev);
  }
  return out;
}

/** Every bounded wait in the gateway tests ends within this (a failure, never a hang). */
export const BOUND_MS = 15_000;

/** Rejects after `ms` so a stuck wait fails the test instead of hanging it. */
export function bounded<T>(p: Promise<T>, what: string, ms = BOUND_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`bounded wait exceeded: ${what}`)), ms);
  });
  return Promise.race([p, limit]).finally(() => clearTimeout(timer));
}

/**
 * What a client checks of a finished task (src/node/signing.ts `verifyResultEnvelope`): the envelope on
 * the task the gateway's route answers GetTask with, against the key its card names and the request
 * sent as `params` (JSON-RPC wire form).
 */
export async function checkStoredEnvelope(
  baseUrl: string,
  agent: string,
  token: string,
  taskId: string,
  params: unknown,
): Promise<EnvelopeVerification> {
  const card = (await (
    await fetch(`${baseUrl}/a2a/${agent}/.well-known/agent-card.json`, { headers: { 'A2A-Version': '1.0' } })
  ).json()) as { capabilities: { extensions: Array<{ uri: string; params?: { publicKeyJwk?: PublicJwk } }> } };
  const jwk = card.capabilities.extensions.find((e) => e.uri === SIGNED_RESULT_EXTENSION_URI)?.params?.publicKeyJwk;
  if (!jwk) throw new Error(`the card of ${agent} names no result key`);
  const res = await fetch(`${baseUrl}/a2a/${agent}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', Authorization: `Bearer ${token}` },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: taskId } }),
  });
  const task = Task.fromJSON(((await res.json()) as { result: unknown }).result);
  const jws = task.metadata?.[META.envelope];
  if (typeof jws !== 'string') return { ok: false, failure: 'malformed', message: 'the task carries no envelope' };
  const status = task.status ?? { state: TaskState.TASK_STATE_UNSPECIFIED, message: undefined, timestamp: undefined };
  return verifyResultEnvelope(jws, {
    keys: [await toVerifiedKey(jwk)],
    taskId,
    contextId: task.contextId,
    artifacts: task.artifacts.map((a) => Artifact.toJSON(a) as { artifactId: string; name?: string; parts: unknown[] }),
    requestDigest: requestDigest(
      SendMessageRequest.toJSON(SendMessageRequest.fromJSON(params)) as Record<string, unknown>,
    ),
    state: taskStateToJSON(status.state),
    status: TaskStatus.toJSON(status) as Record<string, unknown>,
  });
}
