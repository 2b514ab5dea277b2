/**
 * Origins as the unit a token is bound to (scheme, host and port), and the one decision of which
 * token, if any, goes with a request.
 *
 * A token is issued for one origin. `https://host` and `http://host` are different origins: a token
 * stored for the first must never travel in cleartext to the second just because the host matches.
 * Everything that stores, looks up or compares a token's origin goes through `normalizeOrigin`, so
 * `HTTPS://Agents.Example.com:443/`, `https://agents.example.com.` and `agents.example.com` are one key.
 */

export class OriginError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'OriginError';
  }
}

const SCHEME = /^[a-z][a-z0-9+.-]*:\/\//i;

/**
 * `scheme://host[:port]`, normalised: scheme and host lower-cased (IDN as punycode), IPv4 spellings
 * as dotted quads, IPv6 compressed in brackets, trailing dots dropped, the scheme's default port
 * left out. A bare `host[:port]` means https. A path is ignored (a pasted URL names its origin);
 * credentials in the URL and schemes other than http(s) are refused.
 */
export function normalizeOrigin(input: string): string {
  const text = input.trim();
  const shown = JSON.stringify(input);
  let url: URL;
  try {
    url = new URL(SCHEME.test(text) ? text : `https://${text}`);
  } catch {
    throw new OriginError(`${shown} is not an origin: give scheme://host[:port], e.g. https://agents.example.com`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw new OriginError(
      `${shown} is not an http(s) origin: tokens are only sent over https, or http when stored for that http origin.`,
    );
  if (url.username || url.password)
    throw new OriginError(`${shown} carries credentials: give the origin only, e.g. ${url.protocol}//${url.host}`);
  const bracketed = url.hostname.startsWith('[');
  const host = bracketed ? url.hostname : url.hostname.replace(/\.+$/, '');
  if (!host)
    throw new OriginError(`${shown} names no host: give scheme://host[:port], e.g. https://agents.example.com`);
  // Parse again so that a host that was only valid with its trailing dot is still checked, and the
  // default port of the scheme is dropped by the URL parser itself.
  const again = new URL(`${url.protocol}//${host}${url.port ? `:${url.port}` : ''}`);
  return `${again.protocol}//${again.host}`;
}

/** The normalised origin, or undefined when `input` is not an http(s) origin. */
export function tryNormalizeOrigin(input: string): string | undefined {
  try {
    return normalizeOrigin(input);
  } catch {
    return undefined;
  }
}

/** True for a plain-http URL or origin, however the scheme is spelled (`HTTP://…` too). */
export function isPlainHttp(url: string): boolean {
  return /^http:/i.test(url.trim());
}

/** True when both name the same http(s) origin after normalisation; false when either is not one. */
export function sameOrigin(a: string, b: string): boolean {
  const x = tryNormalizeOrigin(a);
  return x !== undefined && x === tryNormalizeOrigin(b);
}

/** Where the token for a request comes from. */
export type TokenSource =
  /** The gateway's own token: the request goes to the origin the gateway was started at. */
  | { readonly kind: 'gateway' }
  /** The token the user stored for exactly this (normalised) origin. */
  | { readonly kind: 'stored'; readonly origin: string }
  | { readonly kind: 'none' };

export interface TokenScope {
  /** The origin of the gateway whose token the caller holds (the local gateway, or the CLI's gateway). */
  readonly gatewayOrigin?: string;
  /** The origin the user approved the agent at, where a token the user stored may go. */
  readonly approvedOrigin?: string;
  /**
   * The origin the agent's card was served from, when known. The gateway's token then goes only to
   * agents whose card the gateway served: a card elsewhere that names the gateway as its interface
   * does not get requests to the gateway made with the user's gateway token.
   */
  readonly cardOrigin?: string;
}

/**
 * Which token a request to `requestOrigin` carries. The gateway's token only to the gateway's origin;
 * a stored token only to the approved origin, looked up under that exact origin (so a token stored
 * for https is never sent to http on the same host and port); anything else carries none.
 */
export function tokenSource(requestOrigin: string, scope: TokenScope): TokenSource {
  const origin = tryNormalizeOrigin(requestOrigin);
  if (!origin) return { kind: 'none' };
  if (scope.gatewayOrigin !== undefined && origin === tryNormalizeOrigin(scope.gatewayOrigin)) {
    if (scope.cardOrigin === undefined || origin === tryNormalizeOrigin(scope.cardOrigin)) return { kind: 'gateway' };
  }
  if (scope.approvedOrigin !== undefined && origin === tryNormalizeOrigin(scope.approvedOrigin))
    return { kind: 'stored', origin };
  return { kind: 'none' };
}

/**
 * The host key tokens were stored under before they were keyed by origin (`host[:port]`, lower-cased),
 * for the one origin such a token was meant for: the https origin of that host. A plain-http origin
 * has none, so an old host token never goes out in cleartext.
 */
export function legacyTokenHost(origin: string): string | undefined {
  const o = tryNormalizeOrigin(origin);
  if (!o || !o.startsWith('https://')) return undefined;
  return new URL(o).host;
}
