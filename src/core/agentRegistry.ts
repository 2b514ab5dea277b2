/**
 * Governed agents: which agents the user has reviewed and approved, pinned to exactly what they saw.
 *
 * A pure state machine (no I/O): every operation takes a state and returns a new one, so the
 * extension can persist each result and tests can drive every transition without a network.
 *
 *   add ─▶ pending ──approve(digest seen)──▶ approved ──served card changes──▶ pending (with a diff)
 *             │                                  │
 *             └─reject─▶ rejected                └─fetch fails─▶ unavailable ─fetch ok─▶ back
 *
 * What approval pins (docs/security.md "Fetching agent cards (SSRF)"): the card's digest, the card itself, the one
 * endpoint Baton will call (an interface the card lists), and — first approval per origin — the keys
 * that verified the card's signature. Tokens are bound to the origin the user approved: an endpoint on
 * another origin than the card's must be acknowledged explicitly at approval, and `tokenOrigin` says
 * where a token may go.
 */
import type { AgentInterfaceInfo, NormalizedAgentCard } from './agentCard';
import { AgentCardError, agentCardDigest, normalizeAgentCard, originOf } from './agentCard';
import { approvalRefusalText, type ApprovalMessage } from './approvalText';
import { english } from './protocol/l10n';
import { isPlainHttp } from './origin';
import { canonicalize, memberPath } from './jcs';
import { isRecord } from './isRecord';

export type AgentStatus = 'pending' | 'approved' | 'rejected' | 'unavailable';

/** Where an entry came from (shown in the view; settings entries are re-added on start). */
export type AgentSource = 'user' | 'settings' | 'gateway-index' | 'local-gateway';

/** A public key that verified a card signature. `jwk` is a public JWK (never a private member). */
export interface VerifiedKey {
  readonly kid: string;
  /** RFC 7638 SHA-256 thumbprint, base64url. */
  readonly thumbprint: string;
  readonly jwk: Readonly<Record<string, unknown>>;
}

/** The outcome of checking a card's signatures (computed in src/node/signing.ts). */
export type CardSignatureCheck =
  | { readonly status: 'unsigned' }
  /** `firstUse`: verified with a key the card carries, no key pinned for the origin yet. */
  | { readonly status: 'verified'; readonly keys: readonly VerifiedKey[]; readonly firstUse: boolean }
  | { readonly status: 'invalid'; readonly reason: string };

/** The card as last served. */
export interface ServedCard {
  readonly card: NormalizedAgentCard;
  readonly digest: string;
  readonly signature: CardSignatureCheck;
  readonly etag: string | undefined;
  readonly fetchedAt: string;
}

export interface PinnedEndpoint {
  readonly url: string;
  readonly binding: string;
  readonly protocolVersion: string;
  readonly tenant: string;
  readonly origin: string;
}

export interface Approval {
  readonly digest: string;
  /** The approved card itself, so Baton calls what was approved even while a changed card is pending. */
  readonly card: NormalizedAgentCard;
  readonly endpoint: PinnedEndpoint;
  /** True when the user approved an endpoint on another origin than the card's. */
  readonly offOriginAcknowledged: boolean;
  readonly approvedAt: string;
}

/** One difference between the approved card and the served one. `undefined` = absent on that side. */
export interface CardChange {
  readonly path: string;
  readonly kind: 'added' | 'removed' | 'changed';
  readonly before?: unknown;
  readonly after?: unknown;
}

export interface AgentError {
  /** The error code of the fetch or card check (e.g. `timeout`, `duplicate-key`). */
  readonly code: string;
  readonly message: string;
  readonly at: string;
}

export interface AgentEntry {
  /** The card URL, normalised (`URL#href`): the entry's identity. */
  readonly cardUrl: string;
  /** The card URL's origin: the origin the user approves and binds tokens to. */
  readonly origin: string;
  readonly source: AgentSource;
  readonly status: AgentStatus;
  /** Why it is pending: never reviewed, or its card changed after approval. */
  readonly pendingReason: 'new' | 'card-changed' | undefined;
  /** For `unavailable`: the status to return to when the card can be fetched again. */
  readonly statusBeforeUnavailable: Exclude<AgentStatus, 'unavailable'> | undefined;
  readonly served: ServedCard | undefined;
  readonly approval: Approval | undefined;
  /** Changes from the approved card to the served one (when pending for `card-changed`). */
  readonly changes: readonly CardChange[];
  readonly rejectedDigest: string | undefined;
  readonly lastError: AgentError | undefined;
  readonly lastSeen: string | undefined;
  readonly addedAt: string;
  /**
   * The gateway index (its card URL) that listed this agent when it was added; _Refresh Agents_ reads
   * the indexes Baton's agents came from again, for agents added there since. Undefined for an agent
   * added by its own card URL, or stored before entries kept it.
   */
  readonly listedBy?: string;
  /**
   * When the index that listed it (`listedBy`) was first read without it: its gateway's operator
   * removed it. It is unavailable until that index lists it again (`recordListing`), whatever its card
   * says: a gateway goes on serving a removed agent's card for the tasks it still has.
   */
  readonly unlistedAt?: string;
}

export interface PinnedOriginKeys {
  readonly keys: readonly VerifiedKey[];
  readonly pinnedAt: string;
}

export interface RegistryState {
  /** Sorted by card URL. */
  readonly agents: readonly AgentEntry[];
  /** Signing keys pinned per origin on first approval of a signed card from it. */
  readonly originKeys: Readonly<Record<string, PinnedOriginKeys>>;
}

export const EMPTY_REGISTRY: RegistryState = { agents: [], originKeys: {} };

export class RegistryError extends Error {
  constructor(
    readonly code: 'invalid-url' | 'unknown-agent' | 'corrupt-state' | 'unsupported-version',
    message: string,
  ) {
    super(message);
    this.name = 'RegistryError';
  }
}

/**
 * Normalise a card URL the way the registry keys entries (and Add Agent counts the cards it visits), so
 * spellings of one URL are one entry: the URL parser's normal form (case, default port, dot segments,
 * IP spellings), without the fragment, a trailing dot on the host, an empty query, or percent-escapes
 * of characters that need none (RFC 3986 §6.2.2). Throws `RegistryError('invalid-url')`.
 */
export function normalizeCardUrl(cardUrl: string): string {
  let url: URL;
  try {
    url = new URL(cardUrl);
  } catch {
    throw new RegistryError('invalid-url', `"${cardUrl}" is not an absolute URL.`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw new RegistryError('invalid-url', `"${cardUrl}" is not an http(s) URL.`);
  if (url.username || url.password)
    throw new RegistryError('invalid-url', 'A card URL must not carry credentials; set a token for the host instead.');
  url.hash = '';
  const host = url.hostname.replace(/\.+$/, '');
  if (host && host !== url.hostname) url.hostname = host;
  url.pathname = normalizeEscapes(url.pathname);
  url.search = normalizeEscapes(url.search);
  return url.href;
}

/** `%61` → `a` for unreserved characters; every other escape kept, in upper case. */
function normalizeEscapes(s: string): string {
  return s.replace(/%([0-9a-fA-F]{2})/g, (_m, hex: string) => {
    const c = String.fromCharCode(parseInt(hex, 16));
    return /^[A-Za-z0-9\-._~]$/.test(c) ? c : `%${hex.toUpperCase()}`;
  });
}

/** An agent's name as Baton shows it: its approved card's, else the card last served, else its card URL. */
export function agentName(entry: AgentEntry): string {
  return (entry.approval?.card ?? entry.served?.card)?.name ?? entry.cardUrl;
}

export function findAgent(state: RegistryState, cardUrl: string): AgentEntry | undefined {
  let key: string;
  try {
    key = normalizeCardUrl(cardUrl);
  } catch {
    return undefined;
  }
  return state.agents.find((a) => a.cardUrl === key);
}

function requireAgent(state: RegistryState, cardUrl: string): AgentEntry {
  const entry = findAgent(state, cardUrl);
  if (!entry) throw new RegistryError('unknown-agent', `No agent with card URL ${cardUrl}.`);
  return entry;
}

function put(state: RegistryState, entry: AgentEntry): RegistryState {
  const agents = state.agents.filter((a) => a.cardUrl !== entry.cardUrl);
  agents.push(entry);
  agents.sort((a, b) => (a.cardUrl < b.cardUrl ? -1 : a.cardUrl > b.cardUrl ? 1 : 0));
  return { ...state, agents };
}

/** Adds a pending entry (no card yet: fetch it and call `recordFetch`). Adding an existing URL changes nothing. */
export function addAgent(
  state: RegistryState,
  input: { cardUrl: string; source: AgentSource; now: string; listedBy?: string },
): RegistryState {
  const cardUrl = normalizeCardUrl(input.cardUrl);
  const known = state.agents.find((a) => a.cardUrl === cardUrl);
  // Known already: it stays as it is, except that an index now seen listing it is remembered.
  if (known) return known.listedBy || !input.listedBy ? state : put(state, { ...known, listedBy: input.listedBy });
  return put(state, {
    cardUrl,
    origin: originOf(cardUrl),
    source: input.source,
    status: 'pending',
    pendingReason: 'new',
    statusBeforeUnavailable: undefined,
    served: undefined,
    approval: undefined,
    changes: [],
    rejectedDigest: undefined,
    lastError: undefined,
    lastSeen: undefined,
    addedAt: input.now,
    ...(input.listedBy ? { listedBy: input.listedBy } : {}),
  });
}

/**
 * The cards one Add Agent fetched, applied together: each is added (if new) and its card recorded in
 * one new state, so the caller saves them at once and an Add Agent that fails or is cancelled part
 * way leaves nothing behind, nor an entry without its card.
 */
export function addFetchedAgents(
  state: RegistryState,
  items: readonly {
    readonly cardUrl: string;
    readonly source: AgentSource;
    readonly served: ServedCard;
    readonly listedBy?: string;
  }[],
  now: string,
): RegistryState {
  let next = state;
  for (const item of items) {
    next = addAgent(next, { cardUrl: item.cardUrl, source: item.source, now, listedBy: item.listedBy });
    next = recordFetch(next, item.cardUrl, item.served);
  }
  return next;
}

/**
 * The gateway indexes Baton's agents were listed by (`AgentEntry.listedBy`), each with the source to
 * give what it lists now: an index none of whose agents is left is forgotten with them.
 */
export function listingIndexes(state: RegistryState): { readonly cardUrl: string; readonly source: AgentSource }[] {
  const out = new Map<string, AgentSource>();
  for (const a of state.agents)
    if (a.listedBy && !out.has(a.listedBy))
      out.set(a.listedBy, a.source === 'local-gateway' ? 'local-gateway' : 'user');
  return [...out].map(([cardUrl, source]) => ({ cardUrl, source }));
}

/**
 * What the index at `indexUrl` lists now (`listed`, card URLs): every agent it had listed and lists no
 * longer is unavailable from `now` (`unlistedAt`); one it lists again is back as it was, unless its card
 * could not be fetched meanwhile. Agents listed by another index, or added by their own URL, are left.
 */
export function recordListing(
  state: RegistryState,
  indexUrl: string,
  listed: readonly string[],
  now: string,
): RegistryState {
  const keys = new Set(
    listed.flatMap((u) => {
      try {
        return [normalizeCardUrl(u)];
      } catch {
        return [];
      }
    }),
  );
  let next = state;
  for (const e of state.agents) {
    if (e.listedBy !== indexUrl) continue;
    if (!keys.has(e.cardUrl) && !e.unlistedAt) {
      const before = e.status === 'unavailable' ? e.statusBeforeUnavailable : e.status;
      next = put(next, { ...e, status: 'unavailable', statusBeforeUnavailable: before, unlistedAt: now });
    } else if (keys.has(e.cardUrl) && e.unlistedAt) {
      const { unlistedAt: _gone, ...rest } = e;
      next = put(
        next,
        e.lastError
          ? rest
          : { ...rest, status: e.statusBeforeUnavailable ?? 'pending', statusBeforeUnavailable: undefined },
      );
    }
  }
  return next;
}

/** An entry its gateway no longer lists stays unavailable whatever its card fetch recorded (`next`). */
function keepUnlisted(entry: AgentEntry, next: AgentEntry): AgentEntry {
  if (!entry.unlistedAt || next.status === 'unavailable') return next;
  return { ...next, status: 'unavailable', statusBeforeUnavailable: next.status };
}

export function removeAgent(state: RegistryState, cardUrl: string): RegistryState {
  const entry = requireAgent(state, cardUrl);
  return { ...state, agents: state.agents.filter((a) => a.cardUrl !== entry.cardUrl) };
}

/**
 * A fetched card. An approved entry whose served digest differs from the approved one goes back to
 * pending with the list of changes. Its approval record stays (so the diff has a base, and a card
 * that changes back is approved again), but `callableEndpoint` answers undefined while pending.
 */
export function recordFetch(state: RegistryState, cardUrl: string, served: ServedCard): RegistryState {
  const entry = requireAgent(state, cardUrl);
  const base = {
    ...entry,
    served,
    lastError: undefined,
    lastSeen: served.fetchedAt,
    statusBeforeUnavailable: undefined,
  };
  const status = entry.status === 'unavailable' ? (entry.statusBeforeUnavailable ?? 'pending') : entry.status;
  if (status === 'approved' || (status === 'pending' && entry.approval)) {
    const approval = entry.approval;
    if (approval && approval.digest === served.digest) {
      return put(state, keepUnlisted(entry, { ...base, status: 'approved', pendingReason: undefined, changes: [] }));
    }
    return put(
      state,
      keepUnlisted(entry, {
        ...base,
        status: 'pending',
        pendingReason: 'card-changed',
        changes: approval ? diffCards(approval.card.raw, served.card.raw) : [],
      }),
    );
  }
  if (status === 'rejected') return put(state, keepUnlisted(entry, { ...base, status: 'rejected' }));
  return put(state, keepUnlisted(entry, { ...base, status: 'pending', pendingReason: entry.pendingReason ?? 'new' }));
}

/** A 304 Not Modified: the served card is the one recorded. */
export function recordNotModified(state: RegistryState, cardUrl: string, now: string): RegistryState {
  const entry = requireAgent(state, cardUrl);
  const status = entry.status === 'unavailable' ? (entry.statusBeforeUnavailable ?? 'pending') : entry.status;
  return put(
    state,
    keepUnlisted(entry, { ...entry, status, statusBeforeUnavailable: undefined, lastError: undefined, lastSeen: now }),
  );
}

/** The card could not be fetched or was refused: the entry is unavailable until a fetch succeeds. */
export function recordFetchFailure(state: RegistryState, cardUrl: string, error: AgentError): RegistryState {
  const entry = requireAgent(state, cardUrl);
  const before = entry.status === 'unavailable' ? entry.statusBeforeUnavailable : entry.status;
  return put(state, { ...entry, status: 'unavailable', statusBeforeUnavailable: before, lastError: error });
}

export type ApprovalRefusal =
  | 'unknown-agent'
  | 'no-card'
  | 'unavailable'
  | 'card-changed'
  | 'invalid-signature'
  | 'signature-required'
  | 'endpoint-not-in-card'
  | 'endpoint-off-origin';

export type ApproveResult =
  | { readonly ok: true; readonly state: RegistryState }
  /** `why` is the refusal as data (said in the user's language by the extension), `message` in English. */
  | { readonly ok: false; readonly reason: ApprovalRefusal; readonly why: ApprovalMessage; readonly message: string };

function refused(reason: ApprovalRefusal, why: ApprovalMessage): ApproveResult {
  return { ok: false, reason, why, message: approvalRefusalText(why, english) };
}

export interface ApproveInput {
  /** The digest shown to the reviewer. Approval is refused when the served card differs. */
  readonly reviewedDigest: string;
  /** The interface to pin; default the card's preferred interface. */
  readonly endpointUrl?: string;
  /** Required to approve an endpoint on another origin than the card's. */
  readonly acknowledgeOffOrigin?: boolean;
  readonly now: string;
}

/**
 * Approve what the reviewer saw. Refused when the served card changed since the review (the user
 * re-reviews), when its signature is invalid, when the origin has pinned keys and the card is
 * unsigned, or when the endpoint is not one of the card's interfaces or is off-origin without
 * acknowledgement. First approval of a signed card pins its keys for the origin.
 */
export function approveAgent(state: RegistryState, cardUrl: string, input: ApproveInput): ApproveResult {
  const entry = findAgent(state, cardUrl);
  if (!entry) return refused('unknown-agent', { code: 'unknown-agent', cardUrl });
  if (entry.status === 'unavailable') return refused('unavailable', { code: 'unavailable' });
  const served = entry.served;
  if (!served) return refused('no-card', { code: 'no-card' });
  if (served.digest !== input.reviewedDigest) return refused('card-changed', { code: 'card-changed' });
  const sig = served.signature;
  if (sig.status === 'invalid') return refused('invalid-signature', { code: 'invalid-signature', detail: sig.reason });
  const pinned = state.originKeys[entry.origin];
  if (pinned && pinned.keys.length > 0 && sig.status !== 'verified') {
    return refused('signature-required', { code: 'signature-required', origin: entry.origin });
  }
  const card = served.card;
  const chosen: AgentInterfaceInfo | undefined =
    input.endpointUrl === undefined
      ? card.preferredInterface
      : card.interfaces.find((i) => i.url === input.endpointUrl);
  if (!chosen) {
    return refused(
      'endpoint-not-in-card',
      input.endpointUrl === undefined
        ? { code: 'no-interface' }
        : { code: 'endpoint-not-in-card', url: input.endpointUrl },
    );
  }
  const offOrigin = chosen.origin !== entry.origin;
  if (offOrigin && !input.acknowledgeOffOrigin) {
    return refused('endpoint-off-origin', { code: 'endpoint-off-origin', origin: entry.origin, target: chosen.origin });
  }
  const approval: Approval = {
    digest: served.digest,
    card,
    endpoint: {
      url: chosen.url,
      binding: chosen.binding,
      protocolVersion: chosen.protocolVersion,
      tenant: chosen.tenant,
      origin: chosen.origin,
    },
    offOriginAcknowledged: offOrigin,
    approvedAt: input.now,
  };
  let originKeys = state.originKeys;
  if (sig.status === 'verified' && !(pinned && pinned.keys.length > 0)) {
    originKeys = { ...originKeys, [entry.origin]: { keys: sig.keys, pinnedAt: input.now } };
  }
  const next = put(
    { ...state, originKeys },
    { ...entry, status: 'approved', pendingReason: undefined, approval, changes: [], rejectedDigest: undefined },
  );
  return { ok: true, state: next };
}

export function rejectAgent(state: RegistryState, cardUrl: string): RegistryState {
  const entry = requireAgent(state, cardUrl);
  return put(state, {
    ...entry,
    status: 'rejected',
    pendingReason: undefined,
    approval: undefined,
    changes: [],
    rejectedDigest: entry.served?.digest,
  });
}

/** A rejected (or approved) agent goes back to pending for a fresh review. */
export function reopenAgent(state: RegistryState, cardUrl: string): RegistryState {
  const entry = requireAgent(state, cardUrl);
  if (entry.status === 'pending') return state;
  return put(state, {
    ...entry,
    status: 'pending',
    pendingReason: entry.approval ? 'card-changed' : 'new',
    rejectedDigest: undefined,
  });
}

/** Keys pinned for an origin (pass them to the card verifier). */
export function pinnedKeysFor(state: RegistryState, origin: string): readonly VerifiedKey[] {
  return state.originKeys[origin]?.keys ?? [];
}

/** Forget an origin's pinned keys (the user accepts a key rotation); its next signed card is first-use again. */
export function unpinOriginKeys(state: RegistryState, origin: string): RegistryState {
  const { [origin]: _drop, ...rest } = state.originKeys;
  return { ...state, originKeys: rest };
}

/** The one endpoint Baton may call for this agent: the pinned one, only while approved. */
export function callableEndpoint(entry: AgentEntry): PinnedEndpoint | undefined {
  return entry.status === 'approved' ? entry.approval?.endpoint : undefined;
}

/**
 * The origin a user's token for this agent may be sent to, or undefined: the approved endpoint's
 * origin when it is the card's origin or the user acknowledged it. Never an origin a card merely names.
 */
export function tokenOrigin(entry: AgentEntry): string | undefined {
  const endpoint = callableEndpoint(entry);
  if (!endpoint) return undefined;
  if (endpoint.origin === entry.origin || entry.approval?.offOriginAcknowledged) return endpoint.origin;
  return undefined;
}

export type CardWarning =
  | { readonly kind: 'off-origin-interface'; readonly url: string; readonly origin: string }
  | { readonly kind: 'insecure-interface'; readonly url: string }
  | { readonly kind: 'invalid-signature'; readonly reason: string }
  | { readonly kind: 'unsigned-after-signed' };

/** What the review page should warn about for the served card. */
export function cardWarnings(state: RegistryState, entry: AgentEntry): CardWarning[] {
  const served = entry.served;
  if (!served) return [];
  const out: CardWarning[] = [];
  for (const i of served.card.interfaces) {
    if (i.origin !== entry.origin) out.push({ kind: 'off-origin-interface', url: i.url, origin: i.origin });
    if (isPlainHttp(i.url)) out.push({ kind: 'insecure-interface', url: i.url });
  }
  if (served.signature.status === 'invalid') out.push({ kind: 'invalid-signature', reason: served.signature.reason });
  if (served.signature.status === 'unsigned' && pinnedKeysFor(state, entry.origin).length > 0)
    out.push({ kind: 'unsigned-after-signed' });
  return out;
}

// ---------------------------------------------------------------------------------------------------
// Diff

const MAX_CHANGES = 200;

/**
 * Structural differences between two cards (as served), by field path; `signatures` is left out
 * because the digest does not cover it. At most 200 changes; a last `{path: '…'}` entry says more were cut.
 */
export function diffCards(
  before: Readonly<Record<string, unknown>>,
  after: Readonly<Record<string, unknown>>,
): CardChange[] {
  const out: CardChange[] = [];
  const { signatures: _b, ...b } = before;
  const { signatures: _a, ...a } = after;
  walk(b, a, '', out);
  if (out.length > MAX_CHANGES)
    return [
      ...out.slice(0, MAX_CHANGES),
      { path: '…', kind: 'changed', before: `${out.length - MAX_CHANGES} more changes` },
    ];
  return out;
}

function same(x: unknown, y: unknown): boolean {
  try {
    return canonicalize(x) === canonicalize(y);
  } catch {
    return false;
  }
}

function walk(x: unknown, y: unknown, path: string, out: CardChange[]): void {
  if (out.length > MAX_CHANGES) return;
  if (isRecord(x) && isRecord(y)) {
    const keys = [...new Set([...Object.keys(x), ...Object.keys(y)])].sort();
    for (const k of keys) {
      const p = memberPath(path, k);
      const hasX = Object.prototype.hasOwnProperty.call(x, k);
      const hasY = Object.prototype.hasOwnProperty.call(y, k);
      if (hasX && !hasY) out.push({ path: p, kind: 'removed', before: x[k] });
      else if (!hasX && hasY) out.push({ path: p, kind: 'added', after: y[k] });
      else walk(x[k], y[k], p, out);
    }
    return;
  }
  if (Array.isArray(x) && Array.isArray(y)) {
    const n = Math.max(x.length, y.length);
    for (let i = 0; i < n; i++) {
      const p = `${path}[${i}]`;
      if (i >= y.length) out.push({ path: p, kind: 'removed', before: x[i] });
      else if (i >= x.length) out.push({ path: p, kind: 'added', after: y[i] });
      else walk(x[i], y[i], p, out);
    }
    return;
  }
  if (!same(x, y)) out.push({ path, kind: 'changed', before: x, after: y });
}

// ---------------------------------------------------------------------------------------------------
// Storage

export const REGISTRY_STORAGE_VERSION = 1;

interface StoredServed {
  readonly raw: Record<string, unknown>;
  readonly digest: string;
  readonly signature: CardSignatureCheck;
  readonly etag?: string;
  readonly fetchedAt: string;
}

/** JSON for storage (globalState / a file). Holds no secret: tokens live in SecretStorage. */
export function serializeRegistry(state: RegistryState): string {
  const served = (s: ServedCard | undefined): StoredServed | undefined =>
    s && {
      raw: s.card.raw as Record<string, unknown>,
      digest: s.digest,
      signature: s.signature,
      ...(s.etag !== undefined ? { etag: s.etag } : {}),
      fetchedAt: s.fetchedAt,
    };
  return JSON.stringify({
    version: REGISTRY_STORAGE_VERSION,
    originKeys: state.originKeys,
    agents: state.agents.map((a) => ({
      ...a,
      served: served(a.served),
      approval: a.approval && { ...a.approval, card: undefined, raw: a.approval.card.raw },
    })),
  });
}

/**
 * Reads what `serializeRegistry` wrote. Cards are normalised again and their digests re-checked, so a
 * stored card edited by hand is refused rather than trusted. Throws `RegistryError`.
 */
export function deserializeRegistry(text: string): RegistryState {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    throw new RegistryError('corrupt-state', 'The stored agent list is not valid JSON.');
  }
  if (!isRecord(doc)) throw new RegistryError('corrupt-state', 'The stored agent list is not an object.');
  if (doc.version !== REGISTRY_STORAGE_VERSION)
    throw new RegistryError(
      'unsupported-version',
      `Stored agent list version ${String(doc.version)} is not supported (expected ${REGISTRY_STORAGE_VERSION}).`,
    );
  if (!Array.isArray(doc.agents) || !isRecord(doc.originKeys))
    throw new RegistryError('corrupt-state', 'The stored agent list is missing agents or originKeys.');
  const cardFrom = (raw: unknown, digest: unknown, where: string): NormalizedAgentCard => {
    try {
      const card = normalizeAgentCard(raw);
      if (agentCardDigest(card.raw) !== digest)
        throw new RegistryError('corrupt-state', `Stored card for ${where} does not match its digest.`);
      return card;
    } catch (e) {
      if (e instanceof AgentCardError)
        throw new RegistryError('corrupt-state', `Stored card for ${where} is invalid: ${e.message}`);
      throw e;
    }
  };
  const agents = doc.agents.map((a: unknown): AgentEntry => {
    if (!isRecord(a) || typeof a.cardUrl !== 'string')
      throw new RegistryError('corrupt-state', 'A stored agent has no card URL.');
    const s = a.served;
    const ap = a.approval;
    const served: ServedCard | undefined = isRecord(s)
      ? {
          card: cardFrom(s.raw, s.digest, a.cardUrl),
          digest: String(s.digest),
          signature: s.signature as CardSignatureCheck,
          etag: typeof s.etag === 'string' ? s.etag : undefined,
          fetchedAt: String(s.fetchedAt),
        }
      : undefined;
    const approval: Approval | undefined = isRecord(ap)
      ? {
          digest: String(ap.digest),
          card: cardFrom(ap.raw, ap.digest, a.cardUrl),
          endpoint: ap.endpoint as PinnedEndpoint,
          offOriginAcknowledged: ap.offOriginAcknowledged === true,
          approvedAt: String(ap.approvedAt),
        }
      : undefined;
    const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
    const status = a.status as AgentStatus;
    if (!['pending', 'approved', 'rejected', 'unavailable'].includes(status))
      throw new RegistryError('corrupt-state', `Stored agent ${a.cardUrl} has an unknown status.`);
    const cardUrl = normalizeCardUrl(a.cardUrl);
    return {
      cardUrl,
      origin: originOf(cardUrl),
      source: a.source as AgentSource,
      status,
      pendingReason: a.pendingReason === 'new' || a.pendingReason === 'card-changed' ? a.pendingReason : undefined,
      statusBeforeUnavailable: a.statusBeforeUnavailable as AgentEntry['statusBeforeUnavailable'],
      served,
      approval,
      changes: Array.isArray(a.changes) ? (a.changes as CardChange[]) : [],
      rejectedDigest: str(a.rejectedDigest),
      lastError: isRecord(a.lastError) ? (a.lastError as unknown as AgentError) : undefined,
      lastSeen: str(a.lastSeen),
      addedAt: str(a.addedAt) ?? '',
      ...(str(a.listedBy) ? { listedBy: str(a.listedBy) } : {}),
      ...(str(a.unlistedAt) ? { unlistedAt: str(a.unlistedAt) } : {}),
    };
  });
  return { agents, originKeys: doc.originKeys as Record<string, PinnedOriginKeys> };
}
