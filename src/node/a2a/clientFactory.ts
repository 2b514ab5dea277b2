/**
 * Builds an A2A client for one approved agent on @a2a-js/sdk's `ClientFactory`, JSON-RPC and HTTP+JSON,
 * A2A 1.0 and 0.3 (through the SDK's `legacyCompat`).
 *
 * docs/security.md "Fetching agent cards (SSRF)": the card names where requests go, so the client only ever talks to the
 * endpoint the user approved (`PinnedEndpoint`), never to one a freshly fetched card names, and the
 * token is bound to that endpoint's origin: the fetch used by the transports refuses any other origin
 * and any redirect, and adds the credential the card's security scheme asks for (HTTP bearer or an
 * API-key header) only there.
 */
import type { AgentCard, AgentInterface } from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import {
  ClientFactory,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  RestTransportFactory,
} from '@a2a-js/sdk/client';
import { REPLAY_EXTENSION_URI } from '../../core/batonProfile';
import { DEV_TOOL_EXTENSION_URI } from '../../core/devTool';
import { tokenSource, type TokenScope } from '../../core/origin';
import { legacyWireFetch } from './legacyWire';
import type { TransientPolicy, TransientReport } from './transientAnswers';
import { transientRetryFetch } from './transientAnswers';

/** The interface the user approved. */
export interface PinnedEndpoint {
  readonly url: string;
  /** `JSONRPC` or `HTTP+JSON`. */
  readonly protocolBinding: string;
  /** `1.0` or `0.3`. */
  readonly protocolVersion: string;
  readonly tenant?: string;
}

/** Returns the token for exactly this origin (`https://host:port`), or undefined when none is stored. */
export type GetToken = (origin: string) => Promise<string | undefined>;

export interface ConnectOptions {
  /** The approved card, in the SDK's in-memory shape (`normalizeCard` turns wire JSON into it). */
  readonly card: AgentCard;
  readonly endpoint: PinnedEndpoint;
  readonly getToken?: GetToken;
  /** Defaults to the global fetch. Requests still only go to the pinned origin, without redirects. */
  readonly fetchImpl?: typeof fetch;
  /** How long a request that gets 429/502/503/504 is tried again (src/node/a2a/transientAnswers.ts). */
  readonly transient?: Partial<TransientPolicy>;
}

/** Where the tokens a `scopedGetToken` hands out come from. */
export interface TokenProviders {
  /** The gateway's own token, for requests to `TokenScope.gatewayOrigin`. */
  readonly gateway?: () => string | undefined | PromiseLike<string | undefined>;
  /** The token the user stored for exactly this normalised origin. */
  readonly stored?: (origin: string) => PromiseLike<string | undefined>;
}

/**
 * The `GetToken` for a connection: each request's origin is matched against the scope (`tokenSource`),
 * so the gateway's token only reaches the gateway and a stored token only the origin it was stored for.
 */
export function scopedGetToken(scope: TokenScope, providers: TokenProviders): GetToken {
  return async (origin) => {
    const source = tokenSource(origin, scope);
    if (source.kind === 'gateway') return providers.gateway?.();
    if (source.kind === 'stored') return providers.stored?.(source.origin);
    return undefined;
  };
}

/** How credentials are attached, as read from the card's security requirements. */
export type AuthPlacement =
  { readonly kind: 'none' } | { readonly kind: 'bearer' } | { readonly kind: 'header'; readonly name: string };

export interface AgentConnection {
  readonly client: Client;
  readonly endpoint: PinnedEndpoint;
  readonly origin: string;
  readonly streaming: boolean;
  /** The agent declares Baton's replay profile: events carry `baton/seq`, `Last-Event-ID` replays. */
  readonly replay: boolean;
  /**
   * Re-sending the same `messageId` returns the same task. Baton's gateway guarantees it (docs/security.md
   * "The gateway") and declares the replay profile; for other agents a resend could create a second task,
   * so the runner never resends to them.
   */
  readonly idempotentSend: boolean;
  /** Extensions to request with `A2A-Extensions` on every call. */
  readonly extensions: readonly string[];
  readonly auth: AuthPlacement;
  /**
   * Tells `listener` of each transient answer (429/502/503/504) while its request is tried again, and
   * of the first normal answer after them, so the user is told the gateway is unavailable, not that the
   * agent refused. Returns the unsubscribe function.
   */
  readonly onTransient?: (listener: (report: TransientReport) => void) => () => void;
}

const BINDINGS = new Set(['JSONRPC', 'HTTP+JSON']);

/** Turns a card as served (1.0 or 0.3 wire JSON) into the SDK's in-memory card. */
export function normalizeCard(raw: unknown): AgentCard {
  return new DefaultAgentCardResolver({ legacyCompat: { enabled: true } }).normalizeAgentCard(raw);
}

/** Reads how the card asks for credentials. Only bearer-style schemes and API keys in a header are supported. */
export function authPlacement(card: AgentCard): AuthPlacement {
  const names = card.securityRequirements.flatMap((r) => Object.keys(r.schemes ?? {}));
  for (const name of names) {
    const scheme = card.securitySchemes[name]?.scheme;
    if (!scheme) continue;
    switch (scheme.$case) {
      case 'httpAuthSecurityScheme':
        if (scheme.value.scheme.toLowerCase() === 'bearer') return { kind: 'bearer' };
        break;
      case 'apiKeySecurityScheme':
        if (scheme.value.location.toLowerCase() === 'header' && scheme.value.name)
          return { kind: 'header', name: scheme.value.name };
        break;
      case 'oauth2SecurityScheme':
      case 'openIdConnectSecurityScheme':
        // The caller obtains the access token; on the wire it is a bearer token.
        return { kind: 'bearer' };
      default:
        break;
    }
  }
  if (names.length > 0) {
    throw new Error(
      `The agent asks for authentication Baton cannot provide (schemes: ${names.join(', ')}); only HTTP bearer, OAuth/OIDC bearer tokens and API keys in a header are supported.`,
    );
  }
  return { kind: 'none' };
}

function requestUrl(input: Parameters<typeof fetch>[0]): URL {
  if (typeof input === 'string') return new URL(input);
  if (input instanceof URL) return input;
  return new URL(input.url);
}

/**
 * The fetch the transports use: only the pinned origin, no redirects, and the credential added there.
 * The credential is looked up per request so a token the user changes applies at once.
 */
export function pinnedFetch(
  origin: string,
  auth: AuthPlacement,
  getToken: GetToken | undefined,
  base: typeof fetch = fetch,
): typeof fetch {
  return async (input, init) => {
    const url = requestUrl(input);
    if (url.origin !== origin) {
      throw new Error(`Refused to send a request to ${url.origin}: this agent was approved at ${origin}.`);
    }
    const headers = new Headers(init?.headers);
    if (auth.kind !== 'none') {
      const token = await getToken?.(origin);
      if (token) {
        if (auth.kind === 'bearer') headers.set('Authorization', `Bearer ${token}`);
        else headers.set(auth.name, token);
      }
    }
    return base(url, { ...init, headers, redirect: 'error' });
  };
}

/** A client bound to the pinned endpoint of an approved card. */
export async function connectAgent(options: ConnectOptions): Promise<AgentConnection> {
  const { card, endpoint } = options;
  const binding = endpoint.protocolBinding.toUpperCase();
  if (!BINDINGS.has(binding))
    throw new Error(`Unsupported protocol binding ${endpoint.protocolBinding}; Baton speaks JSONRPC and HTTP+JSON.`);
  const origin = new URL(endpoint.url).origin;
  const auth = authPlacement(card);
  const declared = (card.capabilities?.extensions ?? []).map((e) => e.uri);
  const replay = declared.includes(REPLAY_EXTENSION_URI);
  const listeners = new Set<(report: TransientReport) => void>();
  // Each retry goes through the pinned fetch again, so it gets the token as it is then.
  const pinned = transientRetryFetch(pinnedFetch(origin, auth, options.getToken, options.fetchImpl), {
    policy: options.transient,
    idempotentSend: replay,
    report: (r) => {
      for (const l of listeners) l(r);
    },
  });
  const iface: AgentInterface = {
    url: endpoint.url,
    protocolBinding: binding,
    protocolVersion: endpoint.protocolVersion || '1.0',
    tenant: endpoint.tenant ?? '',
  };
  // 0.3 agents written elsewhere answer in shapes the SDK's 0.3 client cannot read (src/node/a2a/legacyWire.ts).
  const fetchImpl = iface.protocolVersion === '0.3' ? legacyWireFetch(pinned) : pinned;
  // The only interface the factory can pick is the approved one.
  const pinnedCard: AgentCard = { ...card, supportedInterfaces: [iface] };
  const factory = new ClientFactory({
    transports: [
      new JsonRpcTransportFactory({ fetchImpl, legacyCompat: { enabled: true } }),
      new RestTransportFactory({ fetchImpl, legacyCompat: { enabled: true } }),
    ],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl, legacyCompat: { enabled: true } }),
  });
  const client = await factory.createFromAgentCard(pinnedCard);
  return {
    client,
    endpoint: { ...endpoint, protocolBinding: binding },
    origin,
    streaming: card.capabilities?.streaming === true,
    replay,
    idempotentSend: replay,
    // The development-tool extension is requested when the card declares it (Gemini CLI's server does
    // not: the runner then recognises it from the events' metadata and requests it from there on).
    extensions: [
      ...(replay ? [REPLAY_EXTENSION_URI] : []),
      ...(declared.includes(DEV_TOOL_EXTENSION_URI) ? [DEV_TOOL_EXTENSION_URI] : []),
    ],
    auth,
    onTransient: (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}
