/**
 * A proxied remote agent's own agent card, read by the gateway so the route card shows what the remote
 * really offers (its skills, modes, streaming/push). Only those fields are taken: the remote's
 * interfaces and URLs are never used (requests keep going to the pinned `url` from the config, so a card
 * cannot redirect the proxy), nor its security schemes (callers authenticate to the gateway) or
 * signatures (the route card is signed by the gateway).
 *
 * Read in the background — once at start, then every `refreshMs` — rather than lazily on a card
 * request: card routes are public, so a caller must not be able to make the gateway call a remote, and
 * a slow or dead remote must never delay a card response or the gateway's start.
 */
import { AgentCard } from '@a2a-js/sdk';
import type { AgentExtension, AgentSkill } from '@a2a-js/sdk';
import { isLegacyAgentCard, parseLegacyAgentCard } from '@a2a-js/sdk/compat/v0_3/client';
import { SafeFetchError, WELL_KNOWN_CARD_PATH, safeFetch } from '../node/safeFetch';
import type { RemoteAgentConfig, RemoteAuth } from './config';
import { sleep } from '../core/sleep';
import { TRANSIENT_POLICY, TRANSIENT_STATUSES, transientStep } from '../node/a2a/transientAnswers';
import type { TransientPolicy } from '../node/a2a/transientAnswers';

export const REMOTE_CARD_TIMEOUT_MS = 10_000;
export const REMOTE_CARD_MAX_BYTES = 1024 * 1024;
export const REMOTE_CARD_REFRESH_MS = 10 * 60_000;

/** What the route card takes from the remote's card. */
export interface RemoteCardFacts {
  readonly skills: readonly AgentSkill[];
  readonly description: string;
  readonly defaultInputModes: readonly string[];
  readonly defaultOutputModes: readonly string[];
  readonly streaming: boolean;
  readonly pushNotifications: boolean;
  /**
   * The binding and A2A version (Major.Minor) of each interface the card offers (a 0.3 card: 0.3), its
   * URL and the tenant it names ('' for none).
   */
  readonly interfaces: ReadonlyArray<{
    readonly binding: string;
    readonly version: string;
    readonly url: string;
    readonly tenant: string;
  }>;
  /** The A2A extensions the card declares (the route card lists them; calls may activate them). */
  readonly extensions: readonly AgentExtension[];
}

/** The gateway-held credentials for a remote (the headers the proxy sends it); never the caller's. */
export function remoteAuthHeaders(auth: RemoteAuth): Record<string, string> {
  switch (auth.kind) {
    case 'bearer':
      return { Authorization: `Bearer ${auth.token}` };
    case 'header':
      return { [auth.header]: auth.value };
    case 'none':
      return {};
    default: {
      const unknown: never = auth;
      throw new Error(`unknown remote auth ${JSON.stringify(unknown)}`);
    }
  }
}

/** Where the card is looked for, in order: `cardUrl`, else the well-known path of url's path, then of its origin. */
export function remoteCardUrls(cfg: Pick<RemoteAgentConfig, 'url' | 'cardUrl'>): string[] {
  if (cfg.cardUrl) return [cfg.cardUrl];
  const u = new URL(cfg.url);
  const path = u.pathname.replace(/\/+$/, '');
  const atPath = `${u.origin}${path}/${WELL_KNOWN_CARD_PATH}`;
  const atOrigin = `${u.origin}/${WELL_KNOWN_CARD_PATH}`;
  return atPath === atOrigin ? [atOrigin] : [atPath, atOrigin];
}

class CardError extends Error {}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Checks the fields we take, on the raw JSON: the SDK's fromJSON coerces rather than rejects. */
function checkRaw(raw: unknown): Obj {
  if (!isObj(raw)) throw new CardError('is not a JSON object');
  if (typeof raw.name !== 'string' || !raw.name) throw new CardError('has no name');
  if (raw.skills !== undefined) {
    if (!Array.isArray(raw.skills)) throw new CardError('skills is not a list');
    raw.skills.forEach((s: unknown, i) => {
      if (!isObj(s) || typeof s.id !== 'string' || !s.id || typeof s.name !== 'string')
        throw new CardError(`skills[${i}] needs a string id and name`);
    });
  }
  if (raw.capabilities !== undefined) {
    if (!isObj(raw.capabilities)) throw new CardError('capabilities is not an object');
    for (const k of ['streaming', 'pushNotifications']) {
      const v = raw.capabilities[k];
      if (v !== undefined && typeof v !== 'boolean') throw new CardError(`capabilities.${k} is not true or false`);
    }
  }
  for (const k of ['defaultInputModes', 'defaultOutputModes']) {
    const v = raw[k];
    if (v !== undefined && !(Array.isArray(v) && v.every((m) => typeof m === 'string')))
      throw new CardError(`${k} is not a list of media types`);
  }
  return raw;
}

/** Parses a card as the SDK's card resolver does: a 0.3 card through the compat converter, else 1.0 JSON. */
export function parseRemoteCard(raw: unknown): RemoteCardFacts {
  const checked = checkRaw(raw);
  let card: AgentCard;
  try {
    card = isLegacyAgentCard(checked) ? parseLegacyAgentCard(checked) : AgentCard.fromJSON(checked);
  } catch (e) {
    throw new CardError(`cannot be read as an A2A card (${(e as Error).message})`);
  }
  return {
    // Per-skill security names the remote's schemes, which the route card does not carry.
    skills: card.skills.map((s) => ({
      ...s,
      tags: [...s.tags],
      examples: [...s.examples],
      inputModes: [...s.inputModes],
      outputModes: [...s.outputModes],
      securityRequirements: [],
    })),
    description: card.description,
    defaultInputModes: [...card.defaultInputModes],
    defaultOutputModes: [...card.defaultOutputModes],
    // Unstated is false: the gateway must not promise what the remote does not declare.
    streaming: card.capabilities?.streaming === true,
    pushNotifications: card.capabilities?.pushNotifications === true,
    extensions: (card.capabilities?.extensions ?? []).filter((e) => e.uri).map((e) => structuredClone(e)),
    interfaces: card.supportedInterfaces.map((i) => ({
      binding: i.protocolBinding,
      version: i.protocolVersion.split('.').slice(0, 2).join('.'),
      url: i.url,
      tenant: i.tenant,
    })),
  };
}

export interface FetchCardOptions {
  readonly timeoutMs?: number;
  readonly maxBytes?: number;
  readonly signal?: AbortSignal;
  /** How long a read answered 429/502/503/504 is tried again (the client's policy for what is left out). */
  readonly transient?: Partial<TransientPolicy>;
}

/** A card read that got "not now" answers (429/502/503/504) before the one it ended with. */
export interface CardRetries {
  readonly status: number;
  readonly answers: number;
  readonly waitedMs: number;
}

/**
 * Reads the remote's card from the first candidate URL that serves one, through the project's one
 * outbound fetch (`safeFetch`: no redirects, bounded time and size, the checked address dialled). The
 * operator named these hosts, so they may be private. Credentials go only to the pinned endpoint's
 * origin (a `cardUrl` elsewhere is read without them).
 */
export async function fetchRemoteCard(
  cfg: RemoteAgentConfig,
  opts: FetchCardOptions = {},
): Promise<{ url: string; facts: RemoteCardFacts; retried?: CardRetries }> {
  const problems: string[] = [];
  const policy = { ...TRANSIENT_POLICY, ...opts.transient };
  let retried: CardRetries | undefined;
  const pinnedOrigin = new URL(cfg.url).origin;
  for (const url of remoteCardUrls(cfg)) {
    const headers: Record<string, string> = {
      Accept: 'application/json',
      'A2A-Version': cfg.protocolVersion ?? '1.0',
      ...(new URL(url).origin === pinnedOrigin ? remoteAuthHeaders(cfg.auth) : {}),
    };
    const maxBytes = opts.maxBytes ?? REMOTE_CARD_MAX_BYTES;
    try {
      let res: Awaited<ReturnType<typeof safeFetch>>;
      // A "not now" (a balancer with no instance up, a gateway whose store is down) is read again
      // after the wait it asks for, bounded as the client's calls are (src/node/a2a/transientAnswers.ts).
      for (let attempt = 1, waited = 0; ; attempt++) {
        try {
          res = await safeFetch(url, {
            headers,
            maxBytes,
            timeoutMs: opts.timeoutMs ?? REMOTE_CARD_TIMEOUT_MS,
            allowPrivateHosts: [new URL(url).host],
            ...(opts.signal ? { signal: opts.signal } : {}),
          });
        } catch (e) {
          if (e instanceof SafeFetchError && e.code === 'too-large')
            throw new CardError(`is larger than ${maxBytes} bytes`);
          throw e;
        }
        if (!TRANSIENT_STATUSES.has(res.status)) break;
        const step = transientStep(policy, {
          status: res.status,
          retryAfter: res.headers.get('retry-after'),
          attempt,
          waited,
          send: false,
          idempotentSend: true,
        });
        if (step.last) throw new CardError(`answered HTTP ${res.status} still after ${attempt} tries`);
        await sleep(step.wait, opts.signal);
        opts.signal?.throwIfAborted();
        waited += step.wait;
        retried = { status: res.status, answers: attempt, waitedMs: waited };
      }
      if (res.status < 200 || res.status > 299) throw new CardError(`answered HTTP ${res.status}`);
      let raw: unknown;
      try {
        raw = JSON.parse(Buffer.from(res.body).toString('utf8'));
      } catch {
        throw new CardError('is not JSON');
      }
      return { url, facts: parseRemoteCard(raw), ...(retried ? { retried } : {}) };
    } catch (e) {
      if (opts.signal?.aborted) throw e;
      const why =
        e instanceof CardError
          ? e.message
          : e instanceof SafeFetchError && e.code === 'timeout'
            ? 'timed out'
            : `could not be fetched (${causeOf(e)})`;
      problems.push(`${url} ${why}`);
    }
  }
  throw new Error(problems.join('; '));
}

const every = (ms: number): string => (ms >= 1000 ? `${Math.round(ms / 1000)} s` : `${ms} ms`);

function causeOf(e: unknown): string {
  const err = e as Error & { cause?: { code?: string; message?: string } };
  return err.cause?.code ?? err.cause?.message ?? err.message;
}

/** The configured card with what the remote's card says (see the module comment for what is taken). */
export function mergeRemoteFacts(
  configured: AgentCard,
  cfg: Pick<RemoteAgentConfig, 'descriptionIsDefault' | 'extensions'>,
  facts: RemoteCardFacts | undefined,
): AgentCard {
  const declared = facts?.extensions ?? [];
  const extensions: AgentExtension[] = [
    ...declared.map((e) => structuredClone(e)),
    ...(cfg.extensions ?? [])
      .filter((uri) => !declared.some((e) => e.uri === uri))
      .map((uri) => ({ uri, description: '', required: false, params: undefined })),
  ];
  const withExtensions: AgentCard = extensions.length
    ? {
        ...configured,
        capabilities: {
          streaming: configured.capabilities?.streaming ?? true,
          pushNotifications: configured.capabilities?.pushNotifications ?? false,
          extendedAgentCard: configured.capabilities?.extendedAgentCard ?? false,
          ...configured.capabilities,
          extensions,
        },
      }
    : configured;
  if (!facts) return withExtensions;
  return {
    ...withExtensions,
    description: cfg.descriptionIsDefault && facts.description ? facts.description : configured.description,
    skills: facts.skills.length > 0 ? facts.skills.map((s) => structuredClone(s)) : configured.skills,
    defaultInputModes: facts.defaultInputModes.length > 0 ? [...facts.defaultInputModes] : configured.defaultInputModes,
    defaultOutputModes:
      facts.defaultOutputModes.length > 0 ? [...facts.defaultOutputModes] : configured.defaultOutputModes,
  };
}

export interface RemoteCardWatcherOptions {
  readonly refreshMs?: number;
  readonly timeoutMs?: number;
  readonly maxBytes?: number;
  /** How long a read answered 429/502/503/504 is tried again (`FetchCardOptions.transient`). */
  readonly transient?: Partial<TransientPolicy>;
  readonly log: (line: string) => void;
  /** Called when what the route card takes from the remote changed (incl. going back to the configured card). */
  readonly onChange: () => void;
}

/**
 * Keeps one remote's card facts fresh in the background. A failure keeps the last good facts (or the
 * configured card when there never were any) and is logged once until the reason changes or it recovers.
 */
export class RemoteCardWatcher {
  private current: RemoteCardFacts | undefined;
  private lastReport = '';
  private timer: NodeJS.Timeout | undefined;
  private readonly abort = new AbortController();
  private running: Promise<void> | undefined;

  constructor(
    private config: RemoteAgentConfig,
    private readonly opts: RemoteCardWatcherOptions,
  ) {}

  get cfg(): RemoteAgentConfig {
    return this.config;
  }

  /**
   * New credentials for the remote: its card is read again with them now (after a read in flight,
   * which may have carried the old ones), when the watcher runs.
   */
  setAuth(auth: RemoteAgentConfig['auth']): void {
    this.config = { ...this.config, auth };
    if (this.timer) void (this.running ?? Promise.resolve()).then(() => this.refresh());
  }

  get facts(): RemoteCardFacts | undefined {
    return this.current;
  }

  /** Starts reading in the background; never throws, never waits. */
  start(): void {
    if (this.abort.signal.aborted) return;
    this.pause();
    this.refresh();
    this.timer = setInterval(() => this.refresh(), this.opts.refreshMs ?? REMOTE_CARD_REFRESH_MS);
    this.timer.unref();
  }

  /**
   * Stops the periodic reads, keeping the last facts (its agent was retired: its card is served as it
   * was for the tasks it still has); `start` again resumes them. A read in flight finishes.
   */
  pause(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** True while it reads the remote's card periodically (between `start` and `pause` or `close`). */
  get watching(): boolean {
    return this.timer !== undefined;
  }

  /** One read (skipped while one is in flight); resolves when it is done. */
  refresh(): Promise<void> {
    if (this.abort.signal.aborted) return Promise.resolve();
    this.running ??= this.readOnce().finally(() => (this.running = undefined));
    return this.running;
  }

  private async readOnce(): Promise<void> {
    try {
      const { url, facts, retried } = await fetchRemoteCard(this.cfg, {
        timeoutMs: this.opts.timeoutMs,
        maxBytes: this.opts.maxBytes,
        signal: this.abort.signal,
        transient: this.opts.transient,
      });
      if (this.abort.signal.aborted) return;
      if (retried)
        this.opts.log(
          `remote agent ${this.cfg.id}: its card was unavailable (HTTP ${retried.status}, ${retried.answers} time(s)); read after waiting ${(retried.waitedMs / 1000).toFixed(1)} s as it asked`,
        );
      const changed = JSON.stringify(facts) !== JSON.stringify(this.current);
      this.current = facts;
      if (this.lastReport !== `ok ${url}`) {
        this.opts.log(`remote agent ${this.cfg.id}: using the card at ${url} (${facts.skills.length} skill(s))`);
        this.lastReport = `ok ${url}`;
      }
      if (changed) this.opts.onChange();
    } catch (e) {
      if (this.abort.signal.aborted) return;
      const why = (e as Error).message;
      if (this.lastReport !== `fail ${why}`) {
        this.opts.log(
          `remote agent ${this.cfg.id}: its card could not be read (${why}); serving ${this.current ? 'the last card read' : 'the configured card'}, retrying every ${every(this.opts.refreshMs ?? REMOTE_CARD_REFRESH_MS)}`,
        );
        this.lastReport = `fail ${why}`;
      }
    }
  }

  async close(): Promise<void> {
    this.pause();
    this.abort.abort();
    await this.running?.catch(() => undefined);
  }
}
