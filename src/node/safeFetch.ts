/**
 * The one fetch Baton uses for every URL it fetches: agent cards now, push-notification URLs in the
 * gateway. docs/security.md "Fetching agent cards (SSRF)" is the contract:
 *
 * - https only; http only for hosts the user listed as private (`baton.privateHosts`);
 * - no credentials in the URL; redirects refused (never followed);
 * - 256 KiB cap, enforced while the body streams; one overall deadline (a slow drip cannot hold it);
 * - the address is checked where it is dialled: inside the connection's `lookup` (so a name that
 *   rebinds between a check and the connect cannot win) and, for literal IPs — for which Node calls
 *   no lookup — in the connector itself; only public unicast passes unless the host is allowed.
 *
 * Node's global `fetch` ignores an `agent`, so this is undici's `fetch` with its own dispatcher, one per
 * call (nothing pooled outlives the call). With a proxy the proxy resolves names, so pinning is
 * impossible: results say so (`pinning: 'proxy'`) and `pinningStatus` lets the UI say it up front.
 * The name is still resolved here first and refused unless every address is public (or the host is
 * allowed), so a proxy cannot be used to reach what a direct fetch would refuse; `proxied` says what
 * was checked. The proxy itself may be on a private address: it is the user's own.
 */
import type { LookupAddress, LookupOptions } from 'node:dns';
import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { Agent, buildConnector, fetch, ProxyAgent } from 'undici';
import type { Dispatcher } from 'undici';
import type { NormalizedAgentCard } from '../core/agentCard';
import { AgentCardError, parseAgentCard } from '../core/agentCard';
import type { ProxyCheck } from '../core/proxyCheck';

export const DEFAULT_MAX_BYTES = 256 * 1024;
export const DEFAULT_TIMEOUT_MS = 10_000;

export type SafeFetchErrorCode =
  | 'invalid-url'
  | 'insecure-scheme'
  | 'credentials-in-url'
  | 'blocked-address'
  | 'dns'
  | 'connect'
  | 'tls'
  | 'redirect'
  | 'too-large'
  | 'timeout'
  | 'aborted'
  | 'http-status'
  | 'not-json'
  | 'duplicate-key'
  | 'invalid-card';

export class SafeFetchError extends Error {
  constructor(
    readonly code: SafeFetchErrorCode,
    message: string,
    readonly url: string,
    readonly details: {
      /** HTTP status, for `http-status` and `redirect`. */
      readonly status?: number;
      /** The refused address and the range it is in, for `blocked-address`. */
      readonly address?: string;
      readonly range?: string;
      /** The offending card field, for card errors. */
      readonly path?: string;
      readonly cause?: unknown;
    } = {},
  ) {
    super(message);
    this.name = 'SafeFetchError';
  }
}

/** Resolves a host name to every address it has (like `dns.lookup(name, {all: true})`). */
export type Resolver = (hostname: string) => Promise<readonly { address: string; family: number }[]>;

export interface SafeFetchOptions {
  /** Hosts the user allowed as private (`baton.privateHosts`): http allowed, any address allowed. */
  readonly allowPrivateHosts?: readonly string[];
  /** Proxy URL (VS Code's `http.proxy`). With a proxy the dialled address cannot be pinned. */
  readonly proxy?: string;
  /** Hosts that bypass the proxy (VS Code's `http.noProxy`; exact names, or `.suffix`). */
  readonly noProxy?: readonly string[];
  readonly maxBytes?: number;
  /** Overall deadline for connect + headers + body. */
  readonly timeoutMs?: number;
  readonly method?: 'GET' | 'POST';
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string;
  readonly signal?: AbortSignal;
  /** Name resolution; default the system resolver. Tests inject one to simulate rebinding. */
  readonly resolve?: Resolver;
  /**
   * Tests only. `ca`: trust this CA (PEM) for TLS. `dialOverride`: after every check has passed, dial
   * this address instead of the checked one — so a test of a refused public/private address can never
   * reach a real host, and a canary listener on the override counts anything that slipped through.
   */
  readonly testHooks?: { readonly ca?: string; readonly dialOverride?: string };
}

export type Pinning = 'pinned' | 'allowed-host' | 'proxy';

export interface SafeFetchResult {
  readonly url: string;
  readonly status: number;
  readonly headers: Headers;
  readonly body: Uint8Array;
  /** How the dialled address was controlled: checked and pinned, an allowed private host, or a proxy's choice. */
  readonly pinning: Pinning;
  /** Addresses the connection was allowed to dial (empty through a proxy). */
  readonly dialled: readonly string[];
  /** Through a proxy: which proxy, and what was checked before the request was handed to it. */
  readonly proxied: ProxyCheck | undefined;
}

// ---------------------------------------------------------------------------------------------------
// Address rules

export interface AddressVerdict {
  readonly allowed: boolean;
  /** ipaddr.js range name (`unicast`, `loopback`, `private`, `linkLocal`, `ipv4Mapped`, …) or a reason. */
  readonly range: string;
}

/** Which public addresses Baton may dial: only public unicast (ipaddr.js `range() === 'unicast'`). */
export function checkAddress(ip: string): AddressVerdict {
  if (!isIP(ip) || !ipaddr.isValid(ip)) return { allowed: false, range: 'invalid' };
  const addr = ipaddr.parse(ip);
  if (addr.kind() === 'ipv6') {
    const v6 = addr as ipaddr.IPv6;
    // Refused outright, not unwrapped: ::ffff:10.0.0.1 must not be judged as 10.0.0.1 on one path and
    // dialled as something else on another.
    if (v6.isIPv4MappedAddress()) return { allowed: false, range: 'ipv4Mapped' };
    const range = v6.range();
    if (range !== 'unicast') return { allowed: false, range };
    // Global unicast is 2000::/3; anything else that ipaddr.js calls unicast (the deprecated
    // IPv4-compatible ::a.b.c.d, unassigned space) is not a public address.
    if ((v6.parts[0] & 0xe000) !== 0x2000) return { allowed: false, range: 'reserved' };
    return { allowed: true, range };
  }
  const range = (addr as ipaddr.IPv4).range();
  return { allowed: range === 'unicast', range };
}

/** Ranges refused even for allowed private hosts: no service lives there. */
const NEVER = new Set(['unspecified', 'broadcast', 'multicast', 'invalid']);

function verdictFor(ip: string, allowedHost: boolean): AddressVerdict {
  const v = checkAddress(ip);
  if (v.allowed || !allowedHost) return v;
  return { allowed: !NEVER.has(v.range), range: v.range };
}

function normalizeHost(host: string): string {
  let h = host.toLowerCase();
  if (h.startsWith('[') && h.endsWith(']')) h = h.slice(1, -1);
  if (h.endsWith('.')) h = h.slice(0, -1);
  return h;
}

/** `entry` is a host name, `.domain` for a domain and its subdomains, or `host:port` for one port only. */
export function hostMatches(host: string, list: readonly string[] | undefined, port?: string): boolean {
  if (!list) return false;
  const h = normalizeHost(host);
  return list.some((raw) => {
    let entry = raw.trim();
    const withPort = /^(\[[^\]]+\]|[^:[\]]+):(\d{1,5})$/.exec(entry);
    if (withPort) {
      if (port === undefined || withPort[2] !== port) return false;
      entry = withPort[1];
    }
    const e = normalizeHost(entry);
    if (!e) return false;
    if (e.startsWith('.')) return h.endsWith(e) || h === e.slice(1);
    return h === e;
  });
}

function blockedMessage(host: string, address: string, range: string, proxy?: string): string {
  const what = address === host ? address : `${host} (${address})`;
  const verb = proxy ? `fetch ${what} through the proxy ${proxy}` : `connect to ${what}`;
  const where =
    range === 'loopback' ? 'If this agent runs on this machine' : 'If this agent runs on a network you trust';
  return `Refused to ${verb}: it is a ${range} address, not a public one. ${where}, add "${host}" to the baton.privateHosts setting.`;
}

/** Ports fetch refuses by specification (they belong to other protocols): say so rather than "fetch failed". */
function badPortError(e: unknown, url: string): SafeFetchError | undefined {
  if (!causes(e).some((c) => c instanceof Error && c.message === 'bad port')) return undefined;
  const port = new URL(url).port;
  return new SafeFetchError(
    'connect',
    `Port ${port} is reserved for another protocol, and fetch refuses to use it (a "bad port" in the Fetch standard). Run the agent on another port, e.g. 8443.`,
    url,
    { cause: e },
  );
}

/** Carried through undici's connect error so the result names the refused address. */
class BlockedAddressError extends Error {
  readonly code = 'BATON_BLOCKED_ADDRESS';
  constructor(
    readonly host: string,
    readonly address: string,
    readonly range: string,
    proxy?: string,
  ) {
    super(blockedMessage(host, address, range, proxy));
  }
}

// ---------------------------------------------------------------------------------------------------
// Pinning status for the UI

export interface PinningStatus {
  readonly pinned: boolean;
  /** Why not, in words for the user. */
  readonly reason?: string;
}

/** Whether fetches of `url` under these options can pin the dialled address (a proxy makes it impossible). */
export function pinningStatus(url: string, options: Pick<SafeFetchOptions, 'proxy' | 'noProxy'>): PinningStatus {
  let host = '';
  try {
    host = new URL(url).hostname;
  } catch {
    return { pinned: true };
  }
  if (options.proxy && !hostMatches(host, options.noProxy)) {
    return {
      pinned: false,
      reason:
        `A proxy (${redact(options.proxy)}) is configured, so the proxy resolves ${host} again: Baton checks that ${host} resolves to public addresses ` +
        'before handing it over, but cannot check or pin the address the proxy connects to.',
    };
  }
  return { pinned: true };
}

function redact(u: string): string {
  try {
    const p = new URL(u);
    p.username = '';
    p.password = '';
    return p.href;
  } catch {
    return 'the configured proxy';
  }
}

// ---------------------------------------------------------------------------------------------------
// The fetch

const defaultResolver: Resolver = (hostname) => dnsLookup(hostname, { all: true, verbatim: true });

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

export async function safeFetch(url: string, options: SafeFetchOptions = {}): Promise<SafeFetchResult> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new SafeFetchError('invalid-url', `"${url.slice(0, 200)}" is not an absolute URL.`, url);
  }
  const shown = parsed.href;
  if (parsed.username || parsed.password) {
    throw new SafeFetchError(
      'credentials-in-url',
      'The URL carries a user name or password. Remove them; set a token for the host instead.',
      redact(shown),
    );
  }
  const host = normalizeHost(parsed.hostname);
  const allowedHost = hostMatches(
    host,
    options.allowPrivateHosts,
    parsed.port || (parsed.protocol === 'https:' ? '443' : '80'),
  );
  if (parsed.protocol !== 'https:' && !(parsed.protocol === 'http:' && allowedHost)) {
    const who =
      (isIP(host) && verdictFor(host, false).range === 'loopback') || host === 'localhost'
        ? `${host} is this machine`
        : `${host} is a host you trust`;
    const hint =
      parsed.protocol === 'http:'
        ? ` If ${who}, add "${parsed.port ? `${host}:${parsed.port}` : host}" to the baton.privateHosts setting to allow http.`
        : '';
    throw new SafeFetchError(
      'insecure-scheme',
      `Baton fetches only https URLs; ${parsed.protocol.replace(':', '')} is refused.${hint}`,
      shown,
    );
  }
  if (isIP(host)) {
    const v = verdictFor(host, allowedHost);
    if (!v.allowed)
      throw new SafeFetchError('blocked-address', blockedMessage(host, host, v.range), shown, {
        address: host,
        range: v.range,
      });
  }

  const maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES;
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const resolve = options.resolve ?? defaultResolver;
  const override = options.testHooks?.dialOverride;
  const dialled: string[] = [];
  const useProxy = options.proxy !== undefined && options.proxy !== '' && !hostMatches(host, options.noProxy);

  // Resolution inside the connection: the addresses checked are the addresses handed to connect().
  const pinnedLookup = (hostname: string, lookupOptions: LookupOptions, callback: LookupCallback): void => {
    resolve(hostname).then(
      (answers) => {
        if (answers.length === 0) {
          callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), []);
          return;
        }
        // Any refused answer refuses the name: a name that resolves to a private address at all is
        // not one Baton dials, whichever address a happy-eyeballs race would pick.
        for (const a of answers) {
          const v = verdictFor(a.address, allowedHost);
          if (!v.allowed) {
            callback(new BlockedAddressError(hostname, a.address, v.range), []);
            return;
          }
        }
        const list: LookupAddress[] = answers.map((a) => {
          dialled.push(a.address);
          const address = override ?? a.address;
          return { address, family: isIP(address) };
        });
        if (lookupOptions.all) callback(null, list);
        else callback(null, list[0].address, list[0].family);
      },
      (err: unknown) => callback(err as NodeJS.ErrnoException, []),
    );
  };

  const tls = options.testHooks?.ca ? { ca: options.testHooks.ca } : {};
  const direct = (): Dispatcher => {
    const base = buildConnector({ ...tls, lookup: pinnedLookup as never });
    return new Agent({
      connect: (opts, callback) => {
        // Literal IPs never reach `lookup` (net.connect skips it), so they are checked here too.
        const h = normalizeHost(opts.hostname);
        if (isIP(h)) {
          const v = verdictFor(h, allowedHost);
          if (!v.allowed) {
            callback(new BlockedAddressError(h, h, v.range), null);
            return;
          }
          dialled.push(h);
          if (override) {
            base({ ...opts, hostname: override, servername: opts.servername ?? '' }, callback);
            return;
          }
        }
        base(opts, callback);
      },
    });
  };

  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, timeoutMs);
  const onAbort = (): void => controller.abort();
  options.signal?.addEventListener('abort', onAbort, { once: true });
  if (options.signal?.aborted) controller.abort();

  const fail = (e: unknown): SafeFetchError => {
    if (e instanceof SafeFetchError) return e;
    if (timedOut)
      return new SafeFetchError(
        'timeout',
        `${host} did not answer within ${Math.round(timeoutMs / 1000)} s. Check that the agent is running, then refresh.`,
        shown,
      );
    if (options.signal?.aborted) return new SafeFetchError('aborted', 'The fetch was cancelled.', shown);
    return classify(e, host, shown);
  };

  let dispatcher: Dispatcher | undefined;
  try {
    let proxied: ProxyCheck | undefined;
    if (useProxy) {
      // Inside the deadline: a resolver that hangs ends like a server that does.
      proxied = await checkBeforeProxy(
        shown,
        host,
        allowedHost,
        resolve,
        redact(options.proxy as string),
        controller.signal,
      ).catch((e: unknown) => {
        throw fail(e);
      });
      dispatcher = new ProxyAgent({ uri: options.proxy as string, requestTls: tls, proxyTls: tls });
    } else {
      dispatcher = direct();
    }
    const res = await fetch(shown, {
      method: options.method ?? 'GET',
      headers: { 'user-agent': 'Baton', ...options.headers },
      body: options.body,
      redirect: 'manual',
      signal: controller.signal,
      dispatcher,
    }).catch((e: unknown) => {
      throw fail(e);
    });
    if (res.status >= 300 && res.status < 400 && res.status !== 304) {
      const location = res.headers.get('location') ?? '';
      await res.body?.cancel().catch(() => undefined);
      throw new SafeFetchError(
        'redirect',
        `${host} answered with a redirect (${res.status})${location ? ` to ${location.slice(0, 300)}` : ''}. Baton does not follow redirects: use the final URL directly if you trust it.`,
        shown,
        { status: res.status },
      );
    }
    const declared = Number(res.headers.get('content-length') ?? NaN);
    if (Number.isFinite(declared) && declared > maxBytes) {
      await res.body?.cancel().catch(() => undefined);
      throw tooLarge(shown, maxBytes);
    }
    const chunks: Uint8Array[] = [];
    let total = 0;
    if (res.body) {
      const reader = res.body.getReader();
      for (;;) {
        const { done, value } = await reader.read().catch((e: unknown) => {
          throw fail(e);
        });
        if (done) break;
        total += value.byteLength;
        if (total > maxBytes) {
          await reader.cancel().catch(() => undefined);
          throw tooLarge(shown, maxBytes);
        }
        chunks.push(value);
      }
    }
    const body = new Uint8Array(total);
    let off = 0;
    for (const c of chunks) {
      body.set(c, off);
      off += c.byteLength;
    }
    return {
      url: shown,
      status: res.status,
      headers: res.headers,
      body,
      pinning: useProxy ? 'proxy' : allowedHost ? 'allowed-host' : 'pinned',
      dialled,
      proxied,
    };
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener('abort', onAbort);
    await dispatcher?.destroy().catch(() => undefined);
  }
}

/**
 * Before a fetch is handed to the proxy: the proxy resolves the name and dials whatever it gets, so
 * Baton resolves the name itself first and refuses it unless every answer is public, exactly as a
 * direct fetch would. The proxy's own answer can still differ (a name that rebinds, split DNS); the
 * fetch is then still https to that name, so a host that cannot present the name's certificate fails.
 * Allowed hosts are not checked (any address is allowed for them); literal IPs were checked already.
 */
async function checkBeforeProxy(
  url: string,
  host: string,
  allowedHost: boolean,
  resolve: Resolver,
  proxy: string,
  signal: AbortSignal,
): Promise<ProxyCheck> {
  if (allowedHost) return { proxy, host, checked: 'allowed-host', addresses: [] };
  if (isIP(host)) return { proxy, host, checked: 'public', addresses: [host] };
  const unresolved = (cause?: unknown): SafeFetchError =>
    new SafeFetchError(
      'dns',
      `The host name ${host} could not be resolved. Baton resolves every name itself before handing a fetch to your proxy (${proxy}), to check that it is a public address. ` +
        `If only the proxy can resolve ${host} and you trust that host, add "${host}" to the baton.privateHosts setting.`,
      url,
      { cause },
    );
  let answers: Awaited<ReturnType<Resolver>>;
  try {
    answers = await untilAborted(resolve(host), signal);
  } catch (e) {
    if (signal.aborted) throw e;
    throw unresolved(e);
  }
  if (answers.length === 0) throw unresolved();
  // As in the pinned lookup: one refused answer refuses the name.
  for (const a of answers) {
    const v = verdictFor(a.address, false);
    if (!v.allowed)
      throw new SafeFetchError('blocked-address', blockedMessage(host, a.address, v.range, proxy), url, {
        address: a.address,
        range: v.range,
      });
  }
  return { proxy, host, checked: 'public', addresses: answers.map((a) => a.address) };
}

/** `p`, or a rejection as soon as `signal` aborts (a resolver cannot be cancelled, only left behind). */
function untilAborted<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(new Error('aborted'));
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(new Error('aborted'));
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e instanceof Error ? e : new Error(String(e)));
      },
    );
  });
}

function tooLarge(url: string, maxBytes: number): SafeFetchError {
  return new SafeFetchError(
    'too-large',
    `The response is larger than ${Math.round(maxBytes / 1024)} KiB, the most Baton reads from an agent. Check the URL points to an agent card.`,
    url,
  );
}

function causes(e: unknown): unknown[] {
  const out: unknown[] = [];
  let cur: unknown = e;
  for (let i = 0; i < 6 && cur; i++) {
    out.push(cur);
    cur = (cur as { cause?: unknown }).cause;
  }
  // happy-eyeballs failures come as an AggregateError of per-address errors
  for (const c of [...out]) if (c instanceof AggregateError) out.push(...c.errors);
  return out;
}

function classify(e: unknown, host: string, url: string): SafeFetchError {
  const badPort = badPortError(e, url);
  if (badPort) return badPort;
  const chain = causes(e);
  const blocked = chain.find((c): c is BlockedAddressError => c instanceof BlockedAddressError);
  if (blocked)
    return new SafeFetchError('blocked-address', blocked.message, url, {
      address: blocked.address,
      range: blocked.range,
      cause: e,
    });
  const code = chain.map((c) => (c as { code?: unknown }).code).find((c): c is string => typeof c === 'string') ?? '';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EAI_NONAME' || code === 'ENODATA') {
    return new SafeFetchError(
      'dns',
      `The host name ${host} could not be resolved. Check the URL and your network.`,
      url,
      { cause: e },
    );
  }
  if (code === 'UND_ERR_CONNECT_TIMEOUT')
    return new SafeFetchError('timeout', `Connecting to ${host} timed out. Check that the agent is running.`, url, {
      cause: e,
    });
  if (/CERT|SSL|TLS|SELF_SIGNED|UNABLE_TO_VERIFY|ERR_TLS/.test(code)) {
    return new SafeFetchError(
      'tls',
      `The TLS certificate of ${host} was not accepted (${code}). Baton only talks to hosts with a valid certificate.`,
      url,
      { cause: e },
    );
  }
  if (
    code === 'ECONNREFUSED' ||
    code === 'ECONNRESET' ||
    code === 'EHOSTUNREACH' ||
    code === 'ENETUNREACH' ||
    code === 'UND_ERR_SOCKET' ||
    code === 'EPIPE'
  ) {
    return new SafeFetchError(
      'connect',
      `Could not connect to ${host} (${code}). Check that the agent is running and the URL is right.`,
      url,
      { cause: e },
    );
  }
  const message = e instanceof Error ? e.message : String(e);
  return new SafeFetchError('connect', `Could not fetch ${url}: ${message}${code ? ` (${code})` : ''}.`, url, {
    cause: e,
  });
}

// ---------------------------------------------------------------------------------------------------
// Agent cards

export const WELL_KNOWN_CARD_PATH = '.well-known/agent-card.json';

/** The card URL for what the user typed: a `.json` URL as is, anything else + `/.well-known/agent-card.json`. */
export function cardUrlFor(input: string): string {
  let u: URL;
  try {
    u = new URL(input.trim());
  } catch {
    throw new SafeFetchError(
      'invalid-url',
      `"${input.slice(0, 200)}" is not an absolute URL (it must start with https://).`,
      input,
    );
  }
  u.hash = '';
  if (u.pathname.endsWith('.json')) return u.href;
  if (!u.pathname.endsWith('/')) u.pathname += '/';
  u.search = '';
  return new URL(WELL_KNOWN_CARD_PATH, u).href;
}

export interface FetchAgentCardOptions extends Omit<SafeFetchOptions, 'method' | 'body'> {
  /** The ETag of the card already held; a 304 answer yields `notModified`. */
  readonly etag?: string;
}

export type FetchedAgentCard =
  | {
      readonly notModified: false;
      readonly cardUrl: string;
      readonly card: NormalizedAgentCard;
      readonly digest: string;
      readonly etag: string | undefined;
      /** The card text as served. */
      readonly raw: string;
      readonly pinning: Pinning;
      readonly proxied: ProxyCheck | undefined;
    }
  | {
      readonly notModified: true;
      readonly cardUrl: string;
      readonly etag: string | undefined;
      readonly pinning: Pinning;
      readonly proxied: ProxyCheck | undefined;
    };

/**
 * Fetch, parse and normalise an Agent Card from a card URL or a base URL. Errors are `SafeFetchError`s
 * whose message tells the user what to do; card content errors carry the field's `path`.
 */
export async function fetchAgentCard(input: string, options: FetchAgentCardOptions = {}): Promise<FetchedAgentCard> {
  const cardUrl = cardUrlFor(input);
  // A2A-Version 1.0: without it an SDK server in legacy mode serves its 0.3 rendering, which no
  // signature over the 1.0 card covers.
  const headers: Record<string, string> = { accept: 'application/json', 'a2a-version': '1.0', ...options.headers };
  if (options.etag) headers['if-none-match'] = options.etag;
  const res = await safeFetch(cardUrl, { ...options, method: 'GET', headers });
  const etag = res.headers.get('etag') ?? undefined;
  if (res.status === 304)
    return { notModified: true, cardUrl, etag: etag ?? options.etag, pinning: res.pinning, proxied: res.proxied };
  if (res.status < 200 || res.status > 299) {
    const hint =
      res.status === 404
        ? ' Check the URL: Baton looks for the card at the URL you gave, or at /.well-known/agent-card.json under it.'
        : res.status === 401 || res.status === 403
          ? ' The card is not public; set a token for the host if the agent requires one.'
          : '';
    throw new SafeFetchError(
      'http-status',
      `${new URL(cardUrl).host} answered ${res.status} for the agent card.${hint}`,
      cardUrl,
      { status: res.status },
    );
  }
  const contentType = (res.headers.get('content-type') ?? '').toLowerCase();
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(res.body);
  } catch {
    throw new SafeFetchError('not-json', 'The agent card is not valid UTF-8 text.', cardUrl);
  }
  if (contentType.includes('html') || /^\s*</.test(text)) {
    throw new SafeFetchError(
      'not-json',
      `The URL returned a web page (${contentType || 'HTML'}), not an agent card. Use the card's URL (…/.well-known/agent-card.json).`,
      cardUrl,
    );
  }
  try {
    const { card, digest } = parseAgentCard(text);
    return { notModified: false, cardUrl, card, digest, etag, raw: text, pinning: res.pinning, proxied: res.proxied };
  } catch (e) {
    if (e instanceof AgentCardError) {
      const code: SafeFetchErrorCode =
        e.code === 'duplicate-key' ? 'duplicate-key' : e.code === 'invalid-card' ? 'invalid-card' : 'not-json';
      return Promise.reject(new SafeFetchError(code, e.message, cardUrl, { path: e.path }));
    }
    throw e;
  }
}
