/**
 * A remote A2A agent behind the gateway, forwarded transparently: the caller addresses /a2a/<name>;
 * the gateway talks to the remote's pinned endpoint (from the config, never from a card the remote
 * serves) with credentials only the gateway holds, keeps the remote's task ids, and relays every event
 * through its own event log, so callers get seq numbers, replay and a signed envelope as with local
 * agents. A relay that breaks reconnects (GetTask, then SubscribeToTask); after a restart it re-attaches.
 */
import { createHash, randomUUID } from 'node:crypto';
import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import {
  Artifact,
  HTTP_EXTENSION_HEADER,
  StreamResponse,
  Task,
  TaskState,
  TaskStatus,
  taskStateToJSON,
} from '@a2a-js/sdk';
import type { AgentCard, Message, SendMessageRequest } from '@a2a-js/sdk';
import { ClientFactory, JsonRpcTransportFactory, RestTransportFactory } from '@a2a-js/sdk/client';
import type { Client } from '@a2a-js/sdk/client';
import { RequestMalformedError, TaskNotCancelableError, UnsupportedOperationError } from '@a2a-js/sdk/errors';
import { META, REPLAY_EXTENSION_URI, SIGNED_RESULT_EXTENSION_URI } from '../core/batonProfile';
import { KeyedSerial } from '../core/keyedSerial';
import { sleep } from '../core/sleep';
import { followTask, PROXY_FOLLOW, startAfterLostStream, startReconciling, startStreaming } from '../core/taskFollow';
import type { FollowIO } from '../core/taskFollow';
import { checkDelegationChain, readChain } from '../core/delegation/guards';
import type { ChainLimits } from '../core/delegation/guards';
import { isRecord } from '../core/isRecord';
import { remoteAgentError } from '../node/a2a/agentErrors';
import { legacyWireFetch } from '../node/a2a/legacyWire';
import { TRANSIENT_POLICY, TransientHttpError, transientRetryFetch } from '../node/a2a/transientAnswers';
import type { TransientReport } from '../node/a2a/transientAnswers';
import { baseAgentCard } from './cards';
import { agentMessage, statusEvent } from './a2aBuild';
import type { RemoteAgentConfig } from './config';
import { TaskWriter, wireEventState, wireKind, wireTaskId } from './eventLog';
import type { Json, WireEvent, WireKind } from './eventLog';
import { HeldConnections } from './heldConnections';
import { resolveInterim, rewriteInterimEvents } from './legacyEvents';
import { remoteAuthHeaders } from './remoteCard';
import type { RemoteCardFacts } from './remoteCard';
import { RemoteUnavailableError, remoteStreamBatches, UnreadableEventError } from './remoteStream';
import type { RemoteCall, RemoteEndpoint, RemoteEvent } from './remoteStream';
import type { GatewayContext } from './gatewayContext';
import { CLAIM_WAIT_MS, requestDigest, requestKey, waitForTask } from './localTaskRunner';
import { claimantGone } from './instanceLiveness';
import { envelopeBody, recordedRequestDigest, sentRequestDigest, signStatusEvent } from './resultEnvelope';
import { bodyText } from './store/gatewayStore';
import type { TaskRow, UnboundClaim } from './store/gatewayStore';
import type { DirectReply, OrphanFound, RunCall, StartedTask, TaskRunner } from './taskRunner';
import { endsTurn, isTerminal } from '../core/taskStates';

/**
 * The delegation chains a proxy forwards: at most 16 entries (each gateway hop adds one); a proxy
 * starts one child per message, so breadth is not its to limit.
 */
export const PROXY_CHAIN_LIMITS: ChainLimits = { maxDepth: 16, maxBreadth: Number.POSITIVE_INFINITY };
type RemoteVersion = '1.0' | '0.3';
const REMOTE_CALL_MS = 15_000;

/** Events from the remote, in the batches they arrived in. */
type WireStream = AsyncGenerator<readonly RemoteEvent[], void, undefined>;

async function* asWire(stream: AsyncGenerator<StreamResponse, void, undefined>): WireStream {
  for await (const r of stream) yield [{ ev: StreamResponse.toJSON(r) as Json, raw: undefined }];
}

/** A subscription to a remote whose card says it does not stream: not tried; the task is polled. */
class RemoteDoesNotStreamError extends Error {
  static readonly SAYS = 'does not stream (its card says capabilities.streaming: false)';
  override readonly name = 'RemoteDoesNotStreamError';
  constructor(agent: string) {
    super(`the remote agent ${agent} ${RemoteDoesNotStreamError.SAYS}`);
  }
}

/** A stream whose first read fails with `error` (as a remote's stream that opens on its first read). */
async function* failing(error: Error): WireStream {
  yield* [];
  throw error;
}

/** The messageId of a JSON-RPC (or HTTP+JSON) send's body, if it is one. */
function sentMessageId(body: unknown): string | undefined {
  if (typeof body !== 'string' || !body.includes('messageId')) return undefined;
  try {
    const b = JSON.parse(body) as unknown;
    const params = isRecord(b) && isRecord(b.params) ? b.params : b;
    const id = isRecord(params) && isRecord(params.message) ? params.message.messageId : undefined;
    return typeof id === 'string' && id ? id : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The status message of the notice recorded where a proxied task's log may lack events (`META.gap`):
 * the gateway restarted, or another of its instances took the task over from one that stopped (or lost
 * its database) while relaying it.
 */
export const GAP_NOTICE = 'Some progress from the agent was not received while the gateway restarted.';
export const GAP_NOTICE_TAKEOVER =
  'Some progress from the agent was not received while another gateway instance took the task over.';

/** How many pages (of 100) of a remote's task list are searched for a task whose claim was never bound. */
const LIST_PAGES = 10;

/**
 * The id of the task recording an unknown outcome for an unbound claim: derived from the claim, so a
 * resolution cut short and done again records the same task once.
 */
function unknownOutcomeTaskId(principal: string, agent: string, key: string): string {
  const h = createHash('sha256').update(`${principal}\n${agent}\n${key}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** The first `data:` of an SSE body (at most 64 KiB of it), then the body is let go. */
async function firstSseData(body: ReadableStream<Uint8Array>): Promise<string | undefined> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let text = '';
  try {
    while (text.length < 65_536) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
      const end = text.indexOf('\n\n');
      if (end >= 0) {
        text = text.slice(0, end);
        break;
      }
    }
  } catch {
    return undefined;
  } finally {
    void reader.cancel().catch(() => undefined);
  }
  const data = text
    .split('\n')
    .filter((l) => l.startsWith('data:'))
    .map((l) => l.slice(5).trimStart());
  return data.length ? data.join('\n') : undefined;
}

/** A task id in an event the gateway could not read: its `taskId`, `task.id`, or (a task) `id`. */
function taskIdIn(v: unknown): string | undefined {
  if (!isRecord(v)) return undefined;
  for (const c of [
    v.taskId,
    isRecord(v.task) ? v.task.id : undefined,
    isRecord(v.statusUpdate) ? v.statusUpdate.taskId : undefined,
    v.id,
  ]) {
    if (typeof c === 'string' && c) return c;
  }
  return undefined;
}

/** A URL as compared with another: parsed, without trailing slashes (the text itself when it does not parse). */
function sameUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.origin}${u.pathname.replace(/\/+$/, '')}${u.search}`;
  } catch {
    return url;
  }
}

/**
 * The caller's requested extensions that go on to the remote: all but the gateway's own (replay and
 * signed results are the gateway's to give, whatever the remote does). A remote ignores the ones it
 * does not speak (A2A "Extensions").
 */
function forwardedExtensions(call: RunCall | undefined): string[] {
  return (call?.extensions ?? []).filter((u) => u !== REPLAY_EXTENSION_URI && u !== SIGNED_RESULT_EXTENSION_URI);
}

interface Relay {
  readonly abort: AbortController;
  readonly done: Promise<void>;
  readonly writer: TaskWriter;
  /** Resolved when the remote's stream of this turn ended cleanly with the task still running. */
  readonly answered: Promise<void>;
}

export class ProxyTaskRunner implements TaskRunner {
  readonly kind = 'proxy' as const;
  private client:
    { readonly version: RemoteVersion; readonly tenant: string; readonly client: Promise<Client> } | undefined;
  private readonly relays = new Map<string, Relay>();
  /** One writer at a time outside a relay: the re-attach of an orphan, and the outcome a cancel records. */
  private readonly writers = new KeyedSerial();
  /**
   * Envelope request digests of the tasks this process started; a relay re-attached after a restart
   * signs the one recorded on the task (`META.requestDigest`), which the remote's events could overwrite.
   */
  private readonly sentDigests = new Map<string, string>();
  private closed = false;
  /** 1.0 remotes are read as wire JSON (remoteStream.ts); 0.3 ones through the SDK's client. */
  private readonly endpoint: RemoteEndpoint;
  /** The config/card disagreement last logged (logged again only when it changes). */
  private saidMismatch = '';
  /** The HTTP connections to a 0.3 remote, held while a task waits for a tool approval (heldConnections.ts). */
  private readonly conns: HeldConnections;
  /** The tool calls each task reported, by callId, with their last status (see `pendingToolCall`). */
  private readonly toolCalls = new Map<string, Map<string, string>>();
  /** `remoteFetch`, trying a request again after a transient answer (what the SDK's client is given). */
  private readonly retryingFetch: typeof fetch;
  /** The outage at the remote in progress (transient answers since the last normal one), for the log. */
  private outage:
    { readonly since: number; answers: number; status: number; message: string; gaveUp: boolean } | undefined;

  constructor(
    private readonly ctx: GatewayContext,
    private cfg: RemoteAgentConfig,
    /** What the remote's own card says, once it has been read. */
    private readonly cardFacts: () => RemoteCardFacts | undefined = () => undefined,
  ) {
    const transient = {
      policy: { ...TRANSIENT_POLICY, ...ctx.limits.remoteRetry },
      idempotentSend: () => this.idempotentSend(),
      report: (r: TransientReport) => this.noteTransient(r),
    };
    this.endpoint = {
      url: cfg.url,
      binding: cfg.protocolBinding,
      headers: () => this.remoteHeaders(),
      tenant: () => this.tenant(),
      agents: { http: new HttpAgent({ keepAlive: true }), https: new HttpsAgent({ keepAlive: true }) },
      transient,
    };
    this.retryingFetch = transientRetryFetch((input, init) => this.remoteFetch(input, init), transient);
    this.conns = new HeldConnections({
      url: cfg.url,
      binding: cfg.protocolBinding,
      headers: () => this.remoteHeaders(),
      needed: (taskId) => this.relays.has(taskId) || this.pendingToolCall(taskId),
      log: (line) => this.ctx.log(`remote agent ${cfg.id}: ${line}`),
    });
  }

  /**
   * True when the task reported a tool call that waits for the user's approval and has not moved on
   * since (a status message's data part `{request: {callId}, status: 'awaiting_approval'}`, as Gemini
   * CLI's A2A server sends them).
   */
  private pendingToolCall(taskId: string): boolean {
    for (const status of this.toolCalls.get(taskId)?.values() ?? []) if (status === 'awaiting_approval') return true;
    return false;
  }

  /** Notes the tool calls a status update reports (their data parts are relayed as they came). */
  private noteToolCalls(taskId: string, ev: WireEvent): void {
    const status = isRecord(ev.statusUpdate) && isRecord(ev.statusUpdate.status) ? ev.statusUpdate.status : undefined;
    const parts = isRecord(status?.message) ? status.message.parts : undefined;
    if (!Array.isArray(parts)) return;
    for (const part of parts as unknown[]) {
      const data = isRecord(part) && isRecord(part.data) ? part.data : undefined;
      const call = isRecord(data?.request) ? data.request.callId : undefined;
      if (typeof call !== 'string' || typeof data?.status !== 'string') continue;
      let calls = this.toolCalls.get(taskId);
      if (!calls) this.toolCalls.set(taskId, (calls = new Map()));
      calls.set(call, data.status);
    }
  }

  /**
   * The remote honours `messageId` idempotency (its card declares the replay extension, as a Baton
   * gateway's does): a send may be repeated after a 502/504 without making a second task.
   */
  private idempotentSend(): boolean {
    return (this.cardFacts()?.extensions ?? []).some((e) => e.uri === REPLAY_EXTENSION_URI);
  }

  /**
   * Notes a transient answer from the remote (429/502/503/504) or the first normal one after some. The
   * log gets one line when the outage is over (what it answered, how long, that the calls went
   * through), and one when a call gave up during it.
   */
  private noteTransient(r: TransientReport): void {
    const secs = (since: number): string => `${((Date.now() - since) / 1000).toFixed(1)} s`;
    if (r.kind === 'available') {
      const o = this.outage;
      this.outage = undefined;
      if (o)
        this.ctx.log(
          `remote agent ${this.cfg.id}: was unavailable for ${secs(o.since)} (HTTP ${o.status}: ${o.message}; ${o.answers} such answer(s)); the calls were sent again after the wait it asked for and it answers again`,
        );
      return;
    }
    const a = r.answer;
    const o = (this.outage ??= { since: Date.now(), answers: 0, status: a.status, message: a.message, gaveUp: false });
    o.answers++;
    o.status = a.status;
    o.message = a.message;
    if (a.retryInMs === undefined && !o.gaveUp) {
      o.gaveUp = true;
      this.ctx.log(
        `remote agent ${this.cfg.id}: unavailable for ${secs(o.since)} (HTTP ${a.status}: ${a.message}); a call gave up after ${a.attempt} tries (or was a message send it may have received, which is not sent again); still trying the others`,
      );
    }
  }

  /** The versions the remote's card offers for the configured binding (empty: not read, or none). */
  private cardVersions(): string[] {
    return [
      ...new Set(
        (this.cardFacts()?.interfaces ?? [])
          .filter((i) => i.binding === this.cfg.protocolBinding)
          .map((i) => i.version),
      ),
    ];
  }

  /**
   * The A2A version spoken to the remote: the config's when it names one, else what the remote's card
   * offers (1.0 when it offers it or has not been read yet).
   */
  private version(): RemoteVersion {
    const hint = this.configHint();
    if (hint && hint !== this.saidMismatch) this.ctx.log(`remote agent ${this.cfg.id}: ${hint}`);
    this.saidMismatch = hint;
    if (this.cfg.protocolVersion) return this.cfg.protocolVersion;
    const offered = this.cardVersions();
    return offered.length && !offered.includes('1.0') && offered.includes('0.3') ? '0.3' : '1.0';
  }

  /**
   * The tenant named in requests to the remote (A2A 1.0; '' for none): the config's when it names one,
   * else the one the remote's card names for the pinned URL and binding. The URL stays the config's:
   * the card only says which of the remote's tenants that URL serves.
   */
  private tenant(): string {
    if (this.version() !== '1.0') return '';
    if (this.cfg.tenant !== undefined) return this.cfg.tenant;
    const pinned = sameUrl(this.cfg.url);
    const named = (this.cardFacts()?.interfaces ?? []).find(
      (i) => i.binding === this.cfg.protocolBinding && i.version === '1.0' && sameUrl(i.url) === pinned,
    );
    return named?.tenant ?? '';
  }

  /**
   * Says so when the config asks for what the remote's card does not offer ('' when they agree, or the
   * card has not been read): a binding it offers no interface for, or a version it does not speak.
   */
  private configHint(): string {
    const offered = this.cardVersions();
    const interfaces = this.cardFacts()?.interfaces ?? [];
    if (interfaces.length && !offered.length) {
      const spoken = interfaces.filter((i) => i.binding === 'JSONRPC' || i.binding === 'HTTP+JSON');
      const other = spoken[0];
      if (!other)
        return `the config says protocolBinding ${this.cfg.protocolBinding}, but its card offers ${[...new Set(interfaces.map((i) => i.binding))].join(', ')} only, which the gateway does not speak (it speaks JSONRPC and HTTP+JSON)`;
      return `the config says protocolBinding ${this.cfg.protocolBinding}, but its card offers ${[...new Set(spoken.map((i) => i.binding))].join(', ')} only; set "protocolBinding": "${other.binding}" and "url": "${other.url}"`;
    }
    const want = this.cfg.protocolVersion;
    if (!want || !offered.length || offered.includes(want)) return '';
    return `the config says protocolVersion ${want}, but its card offers A2A ${offered.join(', ')} over ${this.cfg.protocolBinding}; set "protocolVersion": "${offered.includes('0.3') ? '0.3' : offered[0]}" (or leave it out to follow the card)`;
  }

  /** An error from the remote, with the config mismatch that likely caused it when there is one. */
  private withHint(e: unknown): unknown {
    const hint = this.configHint();
    if (!hint || !(e instanceof Error) || e.message.includes(hint)) return e;
    e.message = `${e.message} (${hint})`;
    return e;
  }

  private remoteHeaders(): Record<string, string> {
    return remoteAuthHeaders(this.cfg.auth);
  }

  /**
   * Whether the remote streams: its card says so (A2A `capabilities.streaming`), or has not been read
   * yet. One that does not (the SDK's server then refuses every streaming call) is sent each message
   * once (`sendOnce`) and its task followed by GetTask.
   */
  private remoteStreams(): boolean {
    return this.cardFacts()?.streaming !== false;
  }

  /**
   * A send to a remote that does not stream, as a stream of its one answer: SendMessage returning at
   * once (`returnImmediately`), the task as created (or the agent's Message reply), which the relay then
   * follows by GetTask. A remote that ignores `returnImmediately` answers when the task has settled.
   */
  private async *sendOnce(call: Extract<RemoteCall, { kind: 'send' }>, signal: AbortSignal): WireStream {
    const client = await this.getClient();
    const params = call.params;
    const answer = await client.sendMessage(
      {
        ...params,
        configuration: {
          acceptedOutputModes: [],
          taskPushNotificationConfig: undefined,
          ...(params.configuration ?? {}),
          returnImmediately: true,
        },
      },
      {
        signal,
        ...(call.extensions?.length
          ? { serviceParameters: { [HTTP_EXTENSION_HEADER]: call.extensions.join(',') } }
          : {}),
      },
    );
    const resp: StreamResponse =
      'messageId' in answer
        ? { payload: { $case: 'message', value: answer } }
        : { payload: { $case: 'task', value: answer } };
    yield [{ ev: StreamResponse.toJSON(resp) as Json, raw: undefined }];
  }

  /** A streaming call to the remote, as wire events. */
  private async openStream(call: RemoteCall, signal: AbortSignal): Promise<WireStream> {
    if (!this.remoteStreams()) {
      if (call.kind === 'send') return this.sendOnce(call, signal);
      // Read as a refusal (see `relay`): the task is followed by GetTask from then on.
      return failing(new RemoteDoesNotStreamError(this.cfg.id));
    }
    if (this.version() === '1.0') return remoteStreamBatches(this.endpoint, call, signal);
    const client = await this.getClient();
    const wire = asWire(
      call.kind === 'send'
        ? // `call.params` is already what is forwarded (`forwardParams`): adding the hop again would
          // put this gateway in the chain twice.
          client.sendMessageStream(call.params, {
            signal,
            ...(call.extensions?.length
              ? { serviceParameters: { [HTTP_EXTENSION_HEADER]: call.extensions.join(',') } }
              : {}),
          })
        : client.resubscribeTask({ tenant: '', id: call.taskId }, { signal }),
    );
    return resolveInterim(wire);
  }

  baseCard(): AgentCard {
    return baseAgentCard(this.cfg.name, this.cfg.description, this.cfg.skills);
  }

  /** The remote's config as in effect (its credentials may have been replaced since the start). */
  get config(): RemoteAgentConfig {
    return this.cfg;
  }

  /**
   * New credentials for the remote (the operator rotated them and had the config read again): every
   * request from now on carries them (`remoteHeaders` reads them per request); streams already open go on.
   */
  setAuth(auth: RemoteAgentConfig['auth']): void {
    this.cfg = { ...this.cfg, auth };
  }

  /** The remote's credentials are added here and only here; nothing from the caller's request is. */
  private remoteFetch: typeof fetch = async (input, init) => {
    const headers = new Headers(init?.headers);
    for (const [k, v] of Object.entries(this.remoteHeaders())) headers.set(k, v);
    // No redirect is followed: it would carry the credentials to a URL the operator never pinned.
    const legacy = this.version() === '0.3';
    // 0.3 remotes written elsewhere answer in shapes the SDK's 0.3 client cannot read (src/node/a2a/legacyWire.ts).
    let res = await (legacy ? this.legacyFetch : this.conns.fetch)(input, { ...init, headers });
    const sse = (res.headers.get('content-type') ?? '').includes('text/event-stream');
    if (sse && res.body && legacy)
      res = new Response(rewriteInterimEvents(res.body), {
        status: res.status,
        statusText: res.statusText,
        headers: res.headers,
      });
    const messageId = sentMessageId(init?.body);
    if (!messageId || !res.body || !sse) return res;
    // The first event's text, kept aside: when the SDK cannot read it, it still names the remote's task.
    const [forClient, aside] = res.body.tee();
    this.firstEvents.set(messageId, firstSseData(aside));
    return new Response(forClient, { status: res.status, statusText: res.statusText, headers: res.headers });
  };

  private readonly legacyFetch: typeof fetch = legacyWireFetch((input, init) => this.conns.fetch(input, init));

  /** The first SSE data of each streaming send in progress, by messageId (0.3 remotes, see remoteFetch). */
  private readonly firstEvents = new Map<string, Promise<string | undefined>>();

  /**
   * The remote's first event could not be read, but the remote may have started a task: when what it
   * sent names one, it is canceled there (nobody could follow it); the error says which happened.
   */
  private async unreadableFirst(e: unknown, params: SendMessageRequest): Promise<unknown> {
    // An A2A error is the remote's answer, relayed as it is; no event at all (a refused connection) is no task.
    if (!(e instanceof Error) || typeof (e as { code?: unknown }).code === 'number') return this.withHint(e);
    const sent = params.message?.messageId ?? '';
    const aside = this.firstEvents.get(sent);
    let value: unknown = e instanceof UnreadableEventError ? e.value : undefined;
    if (value === undefined && aside) {
      try {
        const env = JSON.parse((await aside) ?? 'null') as unknown;
        value = isRecord(env) && 'result' in env ? env.result : env;
      } catch {
        value = undefined;
      }
    }
    if (value === undefined) return this.withHint(e);
    const why = `the remote agent ${this.cfg.id} answered with a first event the gateway cannot read (${(e as Error).message})`;
    const taskId = taskIdIn(value);
    if (!taskId) return new Error(`${why}; it named no task, so if it started one, check the remote agent`);
    try {
      const client = await this.getClient();
      await client.cancelTask(
        { tenant: '', id: taskId, metadata: undefined },
        { signal: AbortSignal.timeout(this.ctx.limits.cancelGraceMs) },
      );
      return new Error(
        `${why}; its task ${taskId} there was canceled, since nobody could follow it: send the request again`,
      );
    } catch (c) {
      return new Error(
        `${why}; canceling its task ${taskId} there failed (${(c as Error).message}): check it on the remote agent`,
      );
    }
  }

  private getClient(): Promise<Client> {
    const version = this.version();
    const tenant = this.tenant();
    if (this.client?.version === version && this.client.tenant === tenant) return this.client.client;
    const client = (async () => {
      const legacyCompat = { enabled: version === '0.3' };
      const factory = new ClientFactory({
        transports: [
          new JsonRpcTransportFactory({ fetchImpl: this.retryingFetch, legacyCompat }),
          new RestTransportFactory({ fetchImpl: this.retryingFetch, legacyCompat }),
        ],
      });
      // A card made from the pinned endpoint: the client goes nowhere else. Its tenant is the one each
      // call names when the call names none (the SDK's TenantTransportDecorator).
      const card: AgentCard = {
        ...this.baseCard(),
        supportedInterfaces: [
          { url: this.cfg.url, protocolBinding: this.cfg.protocolBinding, tenant, protocolVersion: version },
        ],
      };
      return factory.createFromAgentCard(card);
    })();
    this.client = { version, tenant, client };
    client.catch(() => {
      if (this.client?.client === client) this.client = undefined;
    });
    return client;
  }

  /** This hop in a delegation chain: which gateway forwarded it, through which of its agents. */
  private get hop(): string {
    return `${this.ctx.identity}/${this.cfg.id}`;
  }

  /**
   * Refuses what would loop: a message this gateway already forwarded through this agent (two
   * gateways that proxy each other, or a remote that points back here), or a chain past
   * `PROXY_CHAIN_LIMITS`. Checked before anything is claimed, started or stopped.
   */
  private refuseLoop(params: SendMessageRequest): void {
    const chain = readChain(params.message?.metadata);
    const check = checkDelegationChain(chain, this.hop, 0, PROXY_CHAIN_LIMITS);
    if (check.ok) return;
    if (check.code === 'cycle')
      throw new RequestMalformedError(
        `delegation cycle: this message already went through ${this.cfg.id} on this gateway (chain: ${chain.join(' → ')}); check that the remote agent ${this.cfg.url} does not lead back here`,
      );
    throw new RequestMalformedError(
      `the delegation chain is ${chain.length} hops long, the limit is ${PROXY_CHAIN_LIMITS.maxDepth}: ${chain.join(' → ')}`,
    );
  }

  /**
   * What is forwarded: the caller's message as sent, minus the tenant of the gateway's own route and
   * the caller's push notification config (the gateway notifies the caller itself; the remote never
   * learns the caller's webhook or its credentials), with this hop added to its `baton/chain` (so a
   * loop back here is refused, see `refuseLoop`).
   */
  private forwardParams(params: SendMessageRequest): SendMessageRequest {
    const msg = params.message;
    const configuration = params.configuration && { ...params.configuration, taskPushNotificationConfig: undefined };
    if (!msg) return { ...params, tenant: '', configuration };
    return {
      ...params,
      tenant: '',
      configuration,
      message: {
        ...msg,
        metadata: { ...(msg.metadata ?? {}), [META.chain]: [...readChain(msg.metadata), this.hop] },
      },
    };
  }

  async start(params: SendMessageRequest, principal: string, call?: RunCall): Promise<StartedTask | DirectReply> {
    const msg = params.message;
    if (!msg?.messageId) throw new RequestMalformedError('message.messageId is required (it is the idempotency key)');
    this.refuseLoop(params);
    const digest = requestDigest(params);
    const key = requestKey(params, digest);
    // What the envelope will sign as the request: the params as forwarded (worked out once per send).
    const sent = sentRequestDigest(params);
    const earlier = await this.claimFirst(principal, params, msg, key, digest, sent);
    if (earlier) return { taskId: earlier };
    // The claim is bound by the commit that creates the task (`NewTask.request`).
    const claim = { key, sent, bound: false };
    try {
      const opened = await this.open(params, principal, forwardedExtensions(call), claim);
      if ('reply' in opened) {
        // No task was made, so there is nothing a retry could find again: it is forwarded again.
        await this.ctx.claims.release(principal, this.cfg.id, key);
      }
      return opened;
    } catch (e) {
      let error = e;
      if (e instanceof TransientHttpError && !claim.bound) {
        try {
          return { taskId: await this.afterTransientSend(e, params, principal, key, sent) };
        } catch (u) {
          error = u;
        }
      }
      // Once the task is stored its claim stays: a retry finds that task instead of starting another.
      if (!claim.bound) await this.ctx.claims.release(principal, this.cfg.id, key);
      throw this.withHint(error);
    }
  }

  /**
   * A first message the remote (or a balancer in front of it) kept answering "not now". After 429 or
   * 503 (or a 502/504 to a remote that honours `messageId` idempotency) no task exists for it, so the
   * caller is told to send it again later (`RemoteUnavailableError`: 503 with Retry-After). A 502 or
   * 504 from a balancer may come after the remote took the message, which is then not sent again: the
   * task it made is looked for (ListTasks) and relayed when found; the caller is told to try again only
   * when the remote does not list one. Resolves to the task found, else throws.
   */
  private async afterTransientSend(
    e: TransientHttpError,
    params: SendMessageRequest,
    principal: string,
    key: string,
    sent: string,
  ): Promise<string> {
    const messageId = params.message?.messageId ?? '';
    const answered = `answered HTTP ${e.status} (${e.answer})`;
    if (!e.notRetried)
      throw new RemoteUnavailableError(this.cfg.id, `${answered} still after ${e.tries} tries; no task was started`, {
        cause: e,
      });
    let remote: Task | undefined;
    try {
      remote = await this.findAtRemote(messageId);
    } catch (l) {
      throw new Error(
        `the remote agent ${this.cfg.id} ${answered} after the message (messageId ${messageId}) was sent, so it may have started a task, and it could not be asked for its tasks (${(l as Error).message}); check the remote agent before sending it again (to run it again, send it with a new messageId)`,
        { cause: e },
      );
    }
    if (!remote)
      throw new RemoteUnavailableError(
        this.cfg.id,
        `${answered} to the message, and does not list a task for it (messageId ${messageId}): no task was started`,
        { cause: e },
      );
    await this.adoptRemoteTask(remote, principal, sent);
    await this.ctx.store.bindRequest(principal, this.cfg.id, key, remote.id);
    this.ctx.log(
      `remote agent ${this.cfg.id}: the message with messageId ${messageId} got HTTP ${e.status} and was not sent again; the remote lists its task ${remote.id}, which is relayed`,
    );
    return remote.id;
  }

  /**
   * Claims a first message's idempotency key (see `claimFirstMessage`): undefined when the claim is
   * this request's to forward, else the task the same message made before. A claim still waiting for
   * its task is waited for while the instance that made it lives; one whose instance died (killed
   * between the send and the binding) is resolved here (`resolveClaim`) instead of refused forever.
   */
  private async claimFirst(
    principal: string,
    params: SendMessageRequest,
    msg: Message,
    key: string,
    digest: string,
    sent: string,
  ): Promise<string | undefined> {
    await this.ctx.claims.settle(principal, this.cfg.id, key);
    const until = Date.now() + CLAIM_WAIT_MS;
    for (;;) {
      const found = await this.ctx.store.claimRequest(
        principal,
        this.cfg.id,
        key,
        digest,
        null,
        this.ctx.instanceId,
        sent,
      );
      if (found.kind === 'conflict')
        throw new RequestMalformedError(
          `messageId ${msg.messageId} was already used for a different request; send a new messageId`,
        );
      if (found.kind === 'new') return undefined;
      const claim = found.taskId ? undefined : await this.ctx.store.findRequest(principal, this.cfg.id, key);
      const taskId = found.taskId ?? claim?.taskId;
      if (taskId) return waitForTask(this.ctx, this.cfg.id, taskId);
      let failed = '';
      if (claim) {
        try {
          const resolved = await this.resolveClaim({ ...claim, principal, agent: this.cfg.id, messageId: key }, params);
          if (resolved !== 'pending') return waitForTask(this.ctx, this.cfg.id, resolved);
        } catch (e) {
          // Handed back (see resolveClaim): the next round tries again.
          failed = (e as Error).message;
        }
      }
      if (Date.now() > until)
        throw new UnsupportedOperationError(
          failed
            ? `the request with messageId ${msg.messageId} was left unfinished by a gateway instance that stopped, and looking for its task failed (${failed}); send it again shortly`
            : `the request with messageId ${msg.messageId} is still being forwarded to the remote agent ${this.cfg.id} by an earlier send, which has not heard back yet; send it again shortly to get its task`,
        );
      await sleep(50);
    }
  }

  /** Unbound claims this process is resolving, by idempotency key. */
  private readonly resolving = new Map<string, Promise<string>>();

  /**
   * An unbound claim: 'pending' while the instance that made it lives (it is still forwarding the
   * request), else resolved by this process, which takes the claim over first (so one instance
   * resolves it): the task found again (in the store or at the remote) or an unknown outcome recorded.
   * Resolves to the task's id either way.
   */
  async resolveClaim(claim: UnboundClaim, request?: SendMessageRequest): Promise<string | 'pending'> {
    const running = this.resolving.get(claim.messageId);
    if (running) return running;
    if (claim.agent !== this.cfg.id || claim.messageId.startsWith('task:')) return 'pending'; // follow-ups are bound at once
    if (claim.instance === this.ctx.instanceId) return 'pending';
    if (!(await claimantGone(this.ctx, claim))) return 'pending';
    const { principal, agent, messageId: key } = claim;
    if (!(await this.ctx.store.takeOverRequest(principal, agent, key, claim.instance, this.ctx.instanceId)))
      return 'pending';
    const run = this.resolveTaken(claim, request)
      .catch(async (e: unknown) => {
        // Handed back to the dead instance, so that the next resend (or start) tries again.
        await this.ctx.store
          .takeOverRequest(principal, agent, key, this.ctx.instanceId, claim.instance)
          .catch(() => undefined);
        throw e;
      })
      .finally(() => this.resolving.delete(key));
    this.resolving.set(key, run);
    return run;
  }

  private async resolveTaken(claim: UnboundClaim, request: SendMessageRequest | undefined): Promise<string> {
    const { principal, agent, messageId: key } = claim;
    const message = request?.message;
    // What the envelope signs as the request: the one sent, as its claim recorded it (a claim recorded
    // before claims kept it: the same message as sent again now, when that is what finds the claim).
    const sent = claim.sentDigest ?? (request ? sentRequestDigest(request) : null);
    const messageId = key.replace(/#[^#]*$/, '');
    const said = (what: string): void =>
      this.ctx.log(`remote agent ${this.cfg.id}: the request with messageId ${messageId} ${what}`);
    // Recorded by a gateway that stored the task and bound its claim in two steps, and died between them.
    const stored = await this.storedTaskOf(principal, messageId, claim.createdAt);
    if (stored) {
      await this.ctx.store.bindRequest(principal, agent, key, stored);
      said(`was found again in the store as task ${stored}`);
      return stored;
    }
    let why: string;
    try {
      const remote = await this.findAtRemote(messageId);
      if (remote) {
        await this.adoptRemoteTask(remote, principal, sent);
        await this.ctx.store.bindRequest(principal, agent, key, remote.id);
        said(`was found again at the remote as task ${remote.id}; relaying it`);
        return remote.id;
      }
      why = `the remote agent does not list a task for it, so it most likely did not run there`;
    } catch (e) {
      why = `the remote agent could not be asked for its tasks (${(e as Error).message}), so it may have run there`;
    }
    const id = unknownOutcomeTaskId(principal, agent, key);
    const contextId = message?.contextId || randomUUID();
    const text = `unknown outcome: the gateway stopped while it was forwarding this request (messageId ${messageId}) to the remote agent ${this.cfg.id}, before the remote named its task; ${why}. Check the remote agent's tasks before sending it again; to run it again, send it with a new messageId.`;
    const executor = { id: this.cfg.id, kind: 'remote', url: this.cfg.url };
    const task: Task = {
      id,
      contextId,
      status: {
        state: TaskState.TASK_STATE_FAILED,
        message: agentMessage(id, contextId, text),
        timestamp: new Date().toISOString(),
      },
      artifacts: [],
      history: message ? [{ ...message, taskId: id, contextId }] : [],
      metadata: {
        [META.executor]: executor,
        [META.outcome]: 'unknown',
        ...(sent ? { [META.requestDigest]: sent } : {}),
      },
    };
    // Signed like every final task: the client tells the gateway's "unknown" from a stripped signature.
    if (this.ctx.signEnvelope && task.status) {
      try {
        const envelope = await this.ctx.signEnvelope(await envelopeBody(task, task.status, sent, executor, null));
        task.metadata = { ...(task.metadata ?? {}), [META.envelope]: envelope };
      } catch (e) {
        this.ctx.log(`task ${id}: signing the result failed: ${(e as Error).message}`);
      }
    }
    if (!(await this.ctx.store.getTask(agent, id))) {
      const writer = new TaskWriter(this.ctx.store, this.ctx.hub, agent, id, structuredClone(task), 1);
      await this.ctx.store.createTask(
        {
          agent,
          id,
          contextId,
          principal,
          kind: 'proxy',
          state: TaskState.TASK_STATE_FAILED,
          snapshot: writer.snapshotJson(),
          owner: null,
        },
        { seq: 1, body: JSON.stringify(StreamResponse.toJSON({ payload: { $case: 'task', value: task } })) },
      );
    }
    await this.ctx.store.bindRequest(principal, agent, key, id);
    said(
      `had no task recorded when its gateway instance stopped; recorded task ${id} with an unknown outcome (${why})`,
    );
    return id;
  }

  /** A proxied task of the principal made since the claim whose history holds the message (newest first). */
  private async storedTaskOf(principal: string, messageId: string, since: number): Promise<string | undefined> {
    const rows = await this.ctx.store.listTasks({ agent: this.cfg.id, principal, limit: 100 });
    for (const row of rows) {
      if (row.createdAt < since - 1000) continue;
      const history: unknown = (JSON.parse(row.snapshot) as Json).history;
      if (Array.isArray(history) && history.some((m) => isRecord(m) && m.messageId === messageId)) return row.id;
    }
    return undefined;
  }

  /**
   * The remote's task that the message started, from its task list (A2A ListTasks), matched by the
   * messageId in the task's history (the forwarded message keeps the caller's messageId). Undefined
   * when the list does not hold one; throws when the remote cannot list its tasks.
   */
  private async findAtRemote(messageId: string): Promise<Task | undefined> {
    const client = await this.getClient();
    let pageToken = '';
    for (let page = 0; page < LIST_PAGES; page++) {
      const r = await client.listTasks(
        {
          tenant: '',
          contextId: '',
          status: TaskState.TASK_STATE_UNSPECIFIED,
          pageSize: 100,
          pageToken,
          statusTimestampAfter: undefined,
          includeArtifacts: false,
        },
        { signal: AbortSignal.timeout(REMOTE_CALL_MS) },
      );
      const found = r.tasks.find((t) => t.history.some((m) => m.messageId === messageId));
      if (found) return found;
      if (!r.nextPageToken) return undefined;
      pageToken = r.nextPageToken;
    }
    throw new Error(`its newest ${LIST_PAGES * 100} tasks do not include one for it`);
  }

  /**
   * Records a task found at the remote as it began (its history, no artifacts yet) and relays it:
   * the relay asks the remote where the task is (GetTask), records what it did meanwhile (artifacts,
   * then the status, signed when final), and follows it on when it still runs.
   */
  private async adoptRemoteTask(remote: Task, principal: string, sent: string | null): Promise<void> {
    const task: Task = {
      id: remote.id,
      contextId: remote.contextId,
      status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: undefined },
      artifacts: [],
      history: remote.history,
      metadata: {
        ...(remote.metadata ?? {}),
        [META.executor]: { id: this.cfg.id, kind: 'remote', url: this.cfg.url },
        ...(sent ? { [META.requestDigest]: sent } : {}),
      },
    };
    const writer = new TaskWriter(this.ctx.store, this.ctx.hub, this.cfg.id, task.id, structuredClone(task), 1);
    await this.ctx.store.createTask(
      {
        agent: this.cfg.id,
        id: task.id,
        contextId: task.contextId,
        principal,
        kind: 'proxy',
        state: TaskState.TASK_STATE_SUBMITTED,
        snapshot: writer.snapshotJson(),
        owner: this.ctx.instanceId,
      },
      { seq: 1, body: JSON.stringify(StreamResponse.toJSON({ payload: { $case: 'task', value: task } })) },
    );
    this.startRelay(writer, undefined, new AbortController());
  }

  /**
   * Sends the first message; records the task from the remote's first event and relays the rest, or
   * (the remote answered with a Message) hands that answer back as it came.
   */
  private async open(
    params: SendMessageRequest,
    principal: string,
    extensions: readonly string[],
    claim: { readonly key: string; readonly sent: string; bound: boolean },
  ): Promise<StartedTask | DirectReply> {
    const abort = new AbortController();
    const stream = await this.openStream(
      { kind: 'send', params: this.forwardParams(params), extensions },
      abort.signal,
    );
    let firstBatch: IteratorResult<readonly RemoteEvent[], void>;
    try {
      firstBatch = await stream.next();
    } catch (e) {
      abort.abort();
      this.conns.forget(params.message?.messageId ?? '');
      throw await this.unreadableFirst(e, params);
    } finally {
      this.firstEvents.delete(params.message?.messageId ?? '');
    }
    const first = firstBatch.done ? undefined : firstBatch.value[0];
    const firstWire = first?.ev;
    const rest = firstBatch.done ? [] : firstBatch.value.slice(1);
    const p = firstWire ? StreamResponse.fromJSON(firstWire).payload : undefined;
    if (!firstWire || !p || p.$case === 'message') this.conns.forget(params.message?.messageId ?? '');
    if (!firstWire || !p)
      throw new RequestMalformedError(`the remote agent ${this.cfg.id} answered with an empty stream`);
    if (p.$case === 'message') {
      // A2A: a Message answer ends the exchange; the stream has nothing after it.
      void stream.return(undefined);
      return { reply: p.value, body: first?.raw !== undefined ? bodyText(first.raw) : JSON.stringify(firstWire) };
    }
    let task: Task;
    if (p.$case === 'task') task = p.value;
    else {
      const v = p.value;
      task = {
        id: v.taskId,
        contextId: v.contextId,
        status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: undefined },
        artifacts: [],
        history: params.message ? [params.message] : [],
        metadata: undefined,
      };
    }
    if (!task.id) {
      this.conns.forget(params.message?.messageId ?? '');
      throw new RequestMalformedError(`the remote agent ${this.cfg.id} sent a task without an id`);
    }
    this.conns.adopt(params.message?.messageId ?? '', task.id);
    const sent = claim.sent;
    this.sentDigests.set(task.id, sent);
    task.metadata = {
      ...(task.metadata ?? {}),
      [META.executor]: { id: this.cfg.id, kind: 'remote', url: this.cfg.url },
      // Kept with the task: a relay re-attached after a restart, or an outcome recorded then, signs it too.
      [META.requestDigest]: sent,
    };
    const writer = new TaskWriter(this.ctx.store, this.ctx.hub, this.cfg.id, task.id, structuredClone(task), 1);
    const firstResp: StreamResponse = { payload: { $case: 'task', value: structuredClone(task) } };
    const firstRow = { seq: 1, body: JSON.stringify(StreamResponse.toJSON(firstResp)) };
    const terminalAlready = endsTurn(task.status?.state);
    await this.ctx.store.createTask(
      {
        agent: this.cfg.id,
        id: task.id,
        contextId: task.contextId,
        principal,
        kind: 'proxy',
        state: task.status?.state ?? TaskState.TASK_STATE_SUBMITTED,
        snapshot: writer.snapshotJson(),
        owner: terminalAlready ? null : this.ctx.instanceId,
        request: claim.key,
      },
      firstRow,
    );
    claim.bound = true;
    const created = writer.createdWith([firstRow]);
    if (p.$case === 'statusUpdate' || p.$case === 'artifactUpdate') await this.ingest(writer, firstWire);
    if (!terminalAlready || p.$case !== 'task') this.startRelay(writer, stream, abort, rest);
    else void stream.return(undefined);
    return { taskId: task.id, created };
  }

  async continueTask(
    row: TaskRow,
    params: SendMessageRequest,
    principal: string,
    call?: RunCall,
  ): Promise<StartedTask> {
    const msg = params.message;
    if (!msg?.messageId) throw new RequestMalformedError('message.messageId is required (it is the idempotency key)');
    this.refuseLoop(params);
    const digest = requestDigest(params);
    const key = requestKey(params, digest);
    await this.ctx.claims.settle(principal, this.cfg.id, key);
    // A follow-up sent again finds the task it continued, even when that turn has ended the task since.
    if ((await this.ctx.store.findRequest(principal, this.cfg.id, key))?.taskId === row.id) return { taskId: row.id };
    if (isTerminal(row.state)) throw new UnsupportedOperationError(`task ${row.id} has ended; start a new task`);
    const claim = await this.ctx.store.claimRequest(principal, this.cfg.id, key, digest, row.id);
    if (claim.kind === 'conflict')
      throw new RequestMalformedError(
        `messageId ${msg.messageId} was already used for a different request; send a new messageId`,
      );
    if (claim.kind === 'existing') return { taskId: row.id };
    const current = this.relays.get(row.id);
    if (current) {
      current.abort.abort();
      await current.done;
    }
    const fresh = (await this.ctx.store.getTask(row.agent, row.id)) ?? row;
    const writer = TaskWriter.forRow(this.ctx.store, this.ctx.hub, fresh);
    const abort = new AbortController();
    let stream: WireStream;
    try {
      stream = await this.openStream(
        { kind: 'send', params: this.forwardParams(params), extensions: forwardedExtensions(call) },
        abort.signal,
      );
    } catch (e) {
      this.conns.forget(msg.messageId);
      throw await this.followUpFailed(e, writer, principal, key);
    }
    this.conns.adopt(msg.messageId, row.id);
    writer.setOwner(this.ctx.instanceId);
    // The new turn's first event is recorded before this returns: a stream of the follow-up starts
    // after the previous turn's last event, and would otherwise find that turn's end and close empty.
    // (A first event that changes nothing, the task as it was, does not count.)
    const before = writer.lastSeq;
    let pending: readonly RemoteEvent[] = [];
    this.firstEvents.delete(msg.messageId);
    while (writer.lastSeq === before) {
      let batch: IteratorResult<readonly RemoteEvent[], void>;
      try {
        batch = await stream.next();
      } catch (e) {
        // Nothing of the new turn was recorded: the send did not go through (a 1.0 remote's stream
        // opens on its first read).
        abort.abort();
        throw await this.followUpFailed(e, writer, principal, key);
      }
      if (batch.done) break;
      let i = 0;
      while (i < batch.value.length && writer.lastSeq === before) {
        const { ev, raw } = batch.value[i++];
        await (this.ingest(writer, ev, raw) ?? writer.committed());
      }
      pending = batch.value.slice(i);
    }
    this.startRelay(writer, stream, abort, pending);
    return { taskId: row.id };
  }

  /**
   * A follow-up whose send failed before the remote answered it: the task's relay (stopped for the
   * new turn) is started again, and the follow-up's claim is released when the remote surely did not
   * take it, so that sending it again forwards it (the claim would otherwise answer the task as if it
   * had been). A remote that kept answering "not now" is reported as unavailable (503 with Retry-After).
   */
  private async followUpFailed(e: unknown, writer: TaskWriter, principal: string, key: string): Promise<unknown> {
    const inDoubt = e instanceof TransientHttpError && e.notRetried;
    if (e instanceof TransientHttpError && !inDoubt) await this.ctx.claims.release(principal, this.cfg.id, key);
    if (!endsTurn(writer.state) && !this.closed && !this.relays.has(writer.taskId)) {
      writer.setOwner(this.ctx.instanceId);
      this.startRelay(writer, undefined, new AbortController());
    }
    if (!(e instanceof TransientHttpError)) return this.withHint(e);
    if (inDoubt)
      return new Error(
        `the remote agent ${this.cfg.id} answered HTTP ${e.status} (${e.answer}) after the follow-up was sent, so it may have received it; the task ${writer.taskId} is followed on: look at it (GetTask) before sending the follow-up again`,
        { cause: e },
      );
    return new RemoteUnavailableError(
      this.cfg.id,
      `answered HTTP ${e.status} (${e.answer}) still after ${e.tries} tries; the follow-up was not delivered`,
      { cause: e },
    );
  }

  private startRelay(
    writer: TaskWriter,
    stream: WireStream | undefined,
    abort: AbortController,
    pending: readonly RemoteEvent[] = [],
  ): void {
    let answer!: () => void;
    const answered = new Promise<void>((r) => (answer = r));
    const done = this.relay(writer, stream, abort, pending, answer).catch((e: unknown) =>
      this.ctx.log(`relay of ${this.cfg.id} task ${writer.taskId} failed: ${(e as Error).message}`),
    );
    this.relays.set(writer.taskId, { abort, done, writer, answered });
    void done.finally(() => {
      if (isTerminal(writer.state)) {
        this.sentDigests.delete(writer.taskId);
        this.toolCalls.delete(writer.taskId);
        this.conns.release(writer.taskId);
      }
      if (this.relays.get(writer.taskId)?.writer === writer) this.relays.delete(writer.taskId);
    });
  }

  /**
   * Records one remote event (`raw`: its text as received, stored as it came; see remoteStream.ts);
   * returns a promise only when the caller must wait (signing, end of turn, backlog).
   */
  private ingest(writer: TaskWriter, ev: WireEvent, raw?: string | Uint8Array): Promise<void> | undefined {
    const kind = wireKind(ev);
    if (!kind) return undefined;
    const tid = wireTaskId(ev, kind);
    if (tid && tid !== writer.taskId) return undefined;
    this.conns.touch(writer.taskId);
    if (kind === 'task') return this.ingestSnapshot(writer, ev);
    if (kind === 'statusUpdate') this.noteToolCalls(writer.taskId, ev);
    const state = wireEventState(ev, kind);
    if (kind === 'statusUpdate' && isTerminal(state) && this.ctx.signEnvelope)
      return this.ingestSigned(writer, ev, state, this.ctx.signEnvelope);
    return this.commit(writer, ev, state, kind, raw);
  }

  private async ingestSigned(
    writer: TaskWriter,
    ev: WireEvent,
    state: TaskState | undefined,
    sign: NonNullable<GatewayContext['signEnvelope']>,
  ): Promise<void> {
    const v = ev.statusUpdate as Json;
    const outcome = taskStateToJSON(state ?? TaskState.TASK_STATE_UNSPECIFIED)
      .replace('TASK_STATE_', '')
      .toLowerCase();
    // What is queued (typically the last artifact) goes to the store with this final status.
    writer.hold();
    try {
      const envelope = await sign(
        await envelopeBody(
          writer.task,
          TaskStatus.fromJSON(v.status),
          this.requestDigestOf(writer),
          { id: this.cfg.id, kind: 'remote', url: this.cfg.url },
          null,
        ),
      );
      v.metadata = { ...((v.metadata as Json | undefined) ?? {}), [META.envelope]: envelope, [META.outcome]: outcome };
    } catch (e) {
      this.ctx.log(`task ${writer.taskId}: signing the result failed: ${(e as Error).message}`);
    } finally {
      writer.release();
    }
    await this.commit(writer, ev, state, 'statusUpdate');
  }

  private commit(
    writer: TaskWriter,
    ev: WireEvent,
    state: TaskState | undefined,
    kind: WireKind,
    raw?: string | Uint8Array,
  ): Promise<void> | undefined {
    const turnEnds = endsTurn(state);
    if (turnEnds) writer.setOwner(null);
    // Commits are grouped: wait for them only at the end of a turn or when the store falls behind, so
    // relaying is not one fsync per event.
    writer.add(ev, kind, raw);
    return turnEnds || writer.backlog > 2000 ? writer.committed() : undefined;
  }

  private statusWire(taskId: string, contextId: string, status: Task['status']): WireEvent {
    return StreamResponse.toJSON({
      payload: { $case: 'statusUpdate', value: { taskId, contextId, status, metadata: undefined } },
    }) as Json;
  }

  /**
   * Relays the remote's events until the turn ends, following the task with the shared state machine
   * (src/core/taskFollow.ts, `PROXY_FOLLOW`): a stream that ends or breaks is followed by GetTask, then
   * a new subscription, with backoff; after `PROXY_FOLLOW.maxAttempts` rounds without an event from the
   * remote the outcome is unknown.
   */
  private async relay(
    writer: TaskWriter,
    initial: WireStream | undefined,
    abort: AbortController,
    pending: readonly RemoteEvent[],
    answered: () => void,
  ): Promise<void> {
    const client = await this.getClient();
    const relayLog = (what: string): void => this.ctx.log(`relay of ${this.cfg.id} task ${writer.taskId}: ${what}`);
    // A writer whose commit failed for good stores nothing more: another gateway instance took the task
    // over while this one could not reach the database (its events are refused), or the store refused a
    // batch. Following the remote further would only reconnect to it, each event refused again: the
    // relay ends, saying so once. The task's new owner, if any, relays it.
    let saidStopped = false;
    const writerFailed = (): boolean => {
      const failure = writer.failure;
      if (failure === undefined) return false;
      if (!saidStopped) {
        saidStopped = true;
        relayLog(`stopped relaying: its events can no longer be stored by this instance (${failure.message})`);
      }
      return true;
    };
    const stopped = (): boolean => abort.signal.aborted || this.closed || writerFailed();
    /** False when the relay is over (the turn ended or it was stopped). */
    const take = async (batch: readonly RemoteEvent[]): Promise<boolean> => {
      for (const { ev, raw } of batch) {
        const wait = this.ingest(writer, ev, raw);
        if (wait) await wait;
        if (endsTurn(writer.state) || abort.signal.aborted) return false;
      }
      return true;
    };
    if (!(await take(pending)) || stopped() || (!initial && endsTurn(writer.state))) return;
    /**
     * Following by GetTask alone, each answer's changes recorded: the remote does not stream, or (set
     * by the follow below) refuses to stream this task again.
     */
    let polled = !this.remoteStreams();
    /** The stream the send opened (the remote's answer to it), until it has been read. */
    let answer = initial;
    const io: FollowIO<WireStream> = {
      consume: async (stream) => {
        const isAnswer = stream === answer;
        answer = undefined;
        let progressed = false;
        let refused = false;
        let error: string | undefined;
        try {
          for await (const batch of stream) {
            progressed = true;
            if (!(await take(batch))) break;
          }
        } catch (e) {
          if (stopped()) return { kind: 'aborted' };
          error = (e as Error).message;
          // A subscription the remote answers with an error of its own (VoltAgent's server: -32601
          // "Unknown method 'tasks/resubscribe'") will be refused again: the task is followed by GetTask.
          refused =
            !isAnswer && !progressed && (remoteAgentError(e) !== undefined || e instanceof RemoteDoesNotStreamError);
        }
        if (stopped()) return { kind: 'aborted' };
        if (endsTurn(writer.state)) {
          if (error !== undefined) relayLog(`stream broke (${error}); reconnecting`);
          return { kind: 'settled' };
        }
        // The remote closed its answer with the task still running (it goes on out of sight, as a
        // fire-and-forget agent's does): a blocking send is answered now, and the task followed. (The
        // one answer of a remote that does not stream is not such an end: the task is followed on.)
        if (isAnswer && error === undefined && !polled) answered();
        return { kind: 'ended', progressed, taskKnown: true, tooBig: false, refused, error };
      },
      // A2A §3.7: a stream is not reliable delivery. Ask where the task is, then subscribe again.
      reconcile: async () => {
        try {
          const t = await client.getTask(
            { tenant: '', id: writer.taskId },
            { signal: AbortSignal.timeout(REMOTE_CALL_MS) },
          );
          if (!endsTurn(t.status?.state)) {
            // Nothing else brings its progress: each answer's changes are recorded (and an answer
            // without any lets the next poll wait longer).
            return { kind: 'running', changed: polled ? await this.catchUp(writer, t, true) : true };
          }
          await this.catchUp(writer, t);
          return { kind: 'settled', missedEvents: false };
        } catch (e) {
          return { kind: 'unanswered', gone: false, error: (e as Error).message };
        }
      },
      subscribe: async (signal) => {
        try {
          return {
            kind: 'opened',
            stream: await this.openStream({ kind: 'subscribe', taskId: writer.taskId }, signal),
          };
        } catch (e) {
          return { kind: 'unanswered', gone: false, error: (e as Error).message };
        }
      },
      effect: (effect) => {
        if (effect.kind === 'pollingInstead') polled = true;
        if (effect.kind === 'pollingInstead' && effect.why === 'refused')
          relayLog(
            effect.error?.includes(RemoteDoesNotStreamError.SAYS)
              ? `${effect.error}; following it by GetTask`
              : `the remote refuses to stream the task again (${effect.error ?? ''}); following it by GetTask`,
          );
        else if (effect.kind === 'streamLost' && effect.error !== undefined)
          relayLog(`stream broke (${effect.error}); reconnecting`);
        if (effect.kind === 'unanswered') relayLog(`reconnect failed (${effect.error})`);
        return Promise.resolve();
      },
    };
    const end = await followTask({
      io,
      limits: PROXY_FOLLOW,
      start: initial
        ? startStreaming(initial, polled)
        : polled
          ? startReconciling<WireStream>(true)
          : startAfterLostStream<WireStream>(PROXY_FOLLOW, false),
      signal: abort.signal,
      stopped,
    });
    if (end.state.kind !== 'lost') return;
    await this.recordUnknown(
      writer,
      `unknown outcome: lost contact with the remote agent ${this.cfg.id}; check the task there before retrying`,
    );
  }

  /** The request digest a task's envelope signs: the send's, else the one recorded on the task. */
  private requestDigestOf(writer: TaskWriter): string | null {
    return this.sentDigests.get(writer.taskId) ?? recordedRequestDigest(writer.task);
  }

  /**
   * Ends a task whose outcome the gateway cannot know (it lost the remote, or a cancel went
   * unconfirmed): failed, `baton/outcome` unknown, and signed like any other final status.
   */
  private async recordUnknown(writer: TaskWriter, text: string): Promise<void> {
    writer.setOwner(null);
    const event = await signStatusEvent(
      this.ctx,
      statusEvent(writer.taskId, writer.contextId, TaskState.TASK_STATE_FAILED, text, { [META.outcome]: 'unknown' }),
      writer.task,
      this.requestDigestOf(writer),
      { id: this.cfg.id, kind: 'remote', url: this.cfg.url },
      null,
    );
    await writer.push(event);
  }

  answerEnded(taskId: string): Promise<void> | undefined {
    return this.relays.get(taskId)?.answered;
  }

  async fetchTask(row: TaskRow, historyLength: number | undefined): Promise<Task | undefined> {
    if (isTerminal(row.state)) return undefined; // the store holds the final task, with its envelope
    try {
      const client = await this.getClient();
      return await client.getTask(
        { tenant: '', id: row.id, ...(historyLength !== undefined ? { historyLength } : {}) },
        { signal: AbortSignal.timeout(REMOTE_CALL_MS) },
      );
    } catch (e) {
      this.ctx.log(`GetTask ${row.id} on ${this.cfg.id} failed (${(e as Error).message}); answering from the store`);
      return undefined;
    }
  }

  /**
   * Records what the remote did while nobody relayed it, from its task as GetTask gives it: each
   * artifact that is new or changed (an artifact update), then its status (when that ends the task,
   * with the signed envelope over those artifacts). A status alone would leave the store without the
   * artifacts made meanwhile; the status comes last so a follower's stream ends on it. Resolves to
   * whether anything was recorded.
   */
  private async catchUp(writer: TaskWriter, t: Task, onlyChanges = false): Promise<boolean> {
    const current = writer.task;
    const known = new Map<string, string>();
    for (const a of current.artifacts) known.set(a.artifactId, JSON.stringify(Artifact.toJSON(a)));
    let recorded = false;
    for (const a of t.artifacts) {
      if (known.get(a.artifactId) === JSON.stringify(Artifact.toJSON(a))) continue;
      recorded = true;
      const update = StreamResponse.toJSON({
        payload: {
          $case: 'artifactUpdate',
          value: {
            taskId: writer.taskId,
            contextId: writer.contextId,
            artifact: a,
            append: false,
            lastChunk: true,
            metadata: undefined,
          },
        },
      }) as Json;
      await this.ingest(writer, update);
    }
    const same = (x: Task['status']): string => JSON.stringify(x ? TaskStatus.toJSON(x) : null);
    if (onlyChanges && same(current.status) === same(t.status)) {
      await writer.committed();
      return recorded;
    }
    await (this.ingest(writer, this.statusWire(t.id, t.contextId, t.status)) ?? writer.committed());
    return true;
  }

  /**
   * A full task after the first event: some agents report progress, and their end, as snapshots. It is
   * recorded as the updates it implies (each new or changed artifact, then the status when it changed),
   * so a client sees progress as A2A 1.0 update events and a final status is signed like any other.
   */
  private async ingestSnapshot(writer: TaskWriter, ev: WireEvent): Promise<void> {
    const t = Task.fromJSON(ev.task);
    writer.adoptHistory((ev.task as Json).history);
    await this.catchUp(writer, { ...t, id: writer.taskId, contextId: t.contextId || writer.contextId }, true);
  }

  ensureLive(row: TaskRow): Promise<void> | undefined {
    if (
      this.relays.has(row.id) ||
      this.closed ||
      isTerminal(row.state) ||
      row.state === TaskState.TASK_STATE_INPUT_REQUIRED
    )
      return undefined;
    if (row.owner !== null && row.owner !== this.ctx.instanceId) return undefined; // another live instance relays it
    const writer = TaskWriter.forRow(this.ctx.store, this.ctx.hub, row);
    writer.setOwner(this.ctx.instanceId);
    if (row.state === TaskState.TASK_STATE_AUTH_REQUIRED) return this.resumeAfterAuth(writer);
    this.startRelay(writer, undefined, new AbortController());
    return undefined;
  }

  /** Looks at auth-required tasks in progress (one look per task at a time). */
  private readonly resumes = new Map<string, Promise<void>>();

  /**
   * An auth-required task: A2A leaves the authorization out of band, and the remote goes on by itself
   * once it has it. Asked for (a client subscribes again), the gateway looks: still waiting, nothing
   * changes; moved on, what it did meanwhile is recorded and the relay follows it again.
   */
  private resumeAfterAuth(writer: TaskWriter): Promise<void> {
    const running = this.resumes.get(writer.taskId);
    if (running) return running;
    const run = (async () => {
      let t: Task;
      try {
        const client = await this.getClient();
        t = await client.getTask({ tenant: '', id: writer.taskId }, { signal: AbortSignal.timeout(REMOTE_CALL_MS) });
      } catch (e) {
        this.ctx.log(
          `task ${writer.taskId} on ${this.cfg.id} waits for authorization; asking the remote where it is failed (${(e as Error).message})`,
        );
        return;
      }
      const state = t.status?.state;
      if (
        state === undefined ||
        state === TaskState.TASK_STATE_AUTH_REQUIRED ||
        this.relays.has(writer.taskId) ||
        this.closed
      )
        return;
      await this.catchUp(writer, t);
      if (endsTurn(writer.state)) return;
      const abort = new AbortController();
      let stream: WireStream | undefined;
      try {
        if (this.remoteStreams())
          stream = await this.openStream({ kind: 'subscribe', taskId: writer.taskId }, abort.signal);
      } catch (e) {
        this.ctx.log(
          `relay of ${this.cfg.id} task ${writer.taskId}: subscribe after authorization failed (${(e as Error).message}); reconnecting`,
        );
      }
      this.startRelay(writer, stream, abort);
    })().finally(() => this.resumes.delete(writer.taskId));
    this.resumes.set(writer.taskId, run);
    return run;
  }

  async cancel(row: TaskRow): Promise<void> {
    try {
      await this.cancelOnce(row);
    } finally {
      if (isTerminal((await this.ctx.store.getTask(row.agent, row.id))?.state)) {
        this.toolCalls.delete(row.id);
        this.conns.release(row.id);
      }
    }
  }

  private async cancelOnce(row: TaskRow): Promise<void> {
    if (isTerminal(row.state)) throw new TaskNotCancelableError(`task ${row.id} has already ended`);
    const grace = this.ctx.limits.cancelGraceMs;
    const client = await this.getClient();
    let remote: Task | undefined;
    try {
      remote = await client.cancelTask(
        { tenant: '', id: row.id, metadata: undefined },
        { signal: AbortSignal.timeout(grace) },
      );
    } catch (e) {
      if (e instanceof TaskNotCancelableError) throw e;
      this.ctx.log(`cancel of ${row.id} on ${this.cfg.id}: ${(e as Error).message}`);
    }
    const relay = this.relays.get(row.id);
    if (relay) {
      // The relay records the remote's CANCELED event; give it the same bounded time.
      await Promise.race([relay.done, sleep(grace)]);
      if (!this.relays.has(row.id)) return;
    }
    // One writer: another cancel of the same task, or its re-attach after a restart, may be here too.
    await this.writers.run(row.id, () => this.recordCanceled(row, remote, grace));
  }

  private async recordCanceled(row: TaskRow, remote: Task | undefined, grace: number): Promise<void> {
    const relay = this.relays.get(row.id);
    if (relay) {
      relay.abort.abort();
      await relay.done;
    }
    const fresh = (await this.ctx.store.getTask(row.agent, row.id)) ?? row;
    if (isTerminal(fresh.state)) return;
    const writer = TaskWriter.forRow(this.ctx.store, this.ctx.hub, fresh);
    writer.setOwner(null);
    if (remote && isTerminal(remote.status?.state)) {
      await this.ingest(writer, this.statusWire(row.id, row.contextId, remote.status));
    } else {
      await this.recordUnknown(
        writer,
        `cancel requested; the remote agent ${this.cfg.id} did not confirm within ${grace} ms, so its outcome is unknown`,
      );
    }
  }

  readonly orphanAction = 'this instance took it over and relays it from the remote';

  /**
   * The remote kept running while we were down: re-attach and relay what it did meanwhile. Whoever
   * comes second (a cancel, another look for orphans) reads the task again and finds it relayed or ended.
   */
  recoverOrphan(row: TaskRow, why: OrphanFound = 'restart'): Promise<void> {
    return this.writers.run(row.id, async () => {
      const fresh = await this.ctx.store.getTask(row.agent, row.id);
      if (!fresh || isTerminal(fresh.state) || fresh.owner !== row.owner || this.relays.has(row.id)) return;
      await this.reattach(fresh, why);
    });
  }

  private async reattach(row: TaskRow, why: OrphanFound): Promise<void> {
    const writer = TaskWriter.forRow(this.ctx.store, this.ctx.hub, row);
    writer.setOwner(this.ctx.instanceId);
    // What the remote sent while nobody relayed it is gone (the gateway does not ask a remote to
    // replay): the log says so at the gap, so no client takes what it holds for the whole history.
    await writer.push(
      statusEvent(
        row.id,
        row.contextId,
        TaskState.TASK_STATE_WORKING,
        why === 'takeover' ? GAP_NOTICE_TAKEOVER : GAP_NOTICE,
        {
          [META.gap]: {
            reason: why,
            lastSeq: row.lastSeq,
            lastEventAt: new Date(row.updatedAt).toISOString(),
            resumedAt: new Date().toISOString(),
          },
        },
      ),
    );
    this.startRelay(writer, undefined, new AbortController());
  }

  async close(): Promise<void> {
    this.closed = true;
    const all = [...this.relays.values()];
    for (const r of all) r.abort.abort();
    await Promise.race([Promise.all(all.map((r) => r.done)), sleep(this.ctx.limits.cancelGraceMs)]);
    this.conns.close();
  }
}
