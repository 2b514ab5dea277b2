/**
 * Add Agent's walk of agent indexes: the card the user gave and, when it is a gateway's index, the
 * cards it lists (and theirs), breadth first. An index is the remote side's to write, so everything a
 * walk does is bounded: an index that lists itself, two that list each other, a chain of indexes each
 * listing the next, or one listing thousands of entries cannot turn one Add Agent into an unbounded
 * number of fetches or fill the registry with pending agents.
 *
 * - each card URL is fetched once per walk, counted by the registry's normal form (`normalizeCardUrl`),
 *   so spellings of one URL count once;
 * - `maxDepth` index hops below the card the user gave; `maxCards` fetches per walk, that card
 *   included; `maxAgents` agents per walk; one time budget for the whole walk;
 * - what was left out is returned with the reason, for a message that says what the user can do.
 *
 * The walk only fetches. The caller adds what it found in one step (`addFetchedAgents`), so a walk
 * that fails or is cancelled adds nothing.
 */
import type { NormalizedAgentCard } from '../core/agentCard';
import { readAgentIndex } from '../core/agentCard';
import { normalizeCardUrl } from '../core/agentRegistry';
import { cardUrlFor, fetchAgentCard, SafeFetchError } from './safeFetch';
import type { FetchAgentCardOptions, FetchedAgentCard } from './safeFetch';

export interface DiscoveryLimits {
  /** Index hops below the card the user gave: 1 = the agents a gateway lists, 2 = a gateway of gateways. */
  readonly maxDepth: number;
  /** Card fetches per Add Agent, the first included. */
  readonly maxCards: number;
  /** Agents one Add Agent may add (or refresh). */
  readonly maxAgents: number;
  /** The whole walk; fetches still running when it ends are abandoned. */
  readonly budgetMs: number;
  /** Cards fetched at once. */
  readonly concurrency: number;
}

export const DISCOVERY_LIMITS: DiscoveryLimits = {
  maxDepth: 2,
  maxCards: 100,
  maxAgents: 50,
  budgetMs: 60_000,
  concurrency: 4,
};

export type FetchedCard = Extract<FetchedAgentCard, { notModified: false }>;

export interface FoundAgent {
  /** Normalised (`normalizeCardUrl`): the registry key. */
  readonly cardUrl: string;
  readonly fetched: FetchedCard;
  /** 0 for the card the user gave. */
  readonly depth: number;
  /** The index (its card URL, normalised) that listed it; undefined for the card the user gave. */
  readonly listedBy?: string;
}

export type LeftOutReason = 'depth' | 'cards' | 'agents' | 'time' | 'failed';

export interface LeftOut {
  readonly url: string;
  /** The index that listed it. */
  readonly listedBy: string;
  readonly reason: LeftOutReason;
  /** For `failed`: why. */
  readonly detail?: string;
}

export interface Discovery {
  /** The card URL of what the user gave. */
  readonly rootUrl: string;
  /** Cards to add as agents, in the order found. */
  readonly agents: readonly FoundAgent[];
  /** Index cards walked. */
  readonly indexes: readonly string[];
  readonly leftOut: readonly LeftOut[];
  /** Listings of a card already seen in this walk (an index listing itself, two listing each other, spellings of one URL). */
  readonly repeats: number;
  readonly fetches: number;
  readonly limits: DiscoveryLimits;
}

export interface DiscoveryOptions {
  /** For every fetch (its own `signal` is replaced by the walk's). */
  readonly fetch?: Omit<FetchAgentCardOptions, 'signal' | 'etag'>;
  readonly limits?: Partial<DiscoveryLimits>;
  /** Cancels the whole walk: it then rejects with `aborted`, and nothing is to be added. */
  readonly signal?: AbortSignal;
}

interface Pending {
  readonly url: string;
  readonly depth: number;
  readonly listedBy: string;
}

/** The registry key of the card a URL names, or undefined when it names none (not http(s), credentials). */
function keyOf(url: string): string | undefined {
  try {
    return normalizeCardUrl(cardUrlFor(url));
  } catch {
    return undefined;
  }
}

function messageOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** An index card serves no interface of its own; a card with interfaces that also lists agents is both. */
function isIndexOnly(card: NormalizedAgentCard, listed: number): boolean {
  return card.interfaces.length === 0 && listed > 0;
}

/**
 * Fetches the card `input` names and walks the index it carries, within `limits`. Rejects with the
 * first card's own error (that card is what the user asked for); any other card that fails is left
 * out with its reason.
 */
export async function discoverAgents(input: string, options: DiscoveryOptions = {}): Promise<Discovery> {
  const limits: DiscoveryLimits = { ...DISCOVERY_LIMITS, ...options.limits };
  const rootUrl = cardUrlFor(input);
  const budget = new AbortController();
  const timer = setTimeout(() => budget.abort(), limits.budgetMs);
  const signal = options.signal ? AbortSignal.any([budget.signal, options.signal]) : budget.signal;
  const cancelled = (): SafeFetchError =>
    new SafeFetchError('aborted', 'Add Agent was cancelled; no agent was added.', rootUrl);

  const visited = new Set<string>();
  const rootKey = keyOf(rootUrl);
  if (rootKey) visited.add(rootKey);
  const agents: FoundAgent[] = [];
  const indexes: string[] = [];
  const leftOut: LeftOut[] = [];
  let repeats = 0;
  let fetches = 0;
  const queue: Pending[] = [{ url: rootUrl, depth: 0, listedBy: '' }];

  // What a fetched card adds to the walk: itself as an agent, and the cards its index lists.
  const take = (item: Pending, fetched: FetchedCard): void => {
    const cardUrl = normalizeCardUrl(fetched.cardUrl);
    const index = readAgentIndex(fetched.card, cardUrl);
    if (!isIndexOnly(fetched.card, index.length))
      agents.push({ cardUrl, fetched, depth: item.depth, ...(item.listedBy ? { listedBy: item.listedBy } : {}) });
    if (index.length > 0) indexes.push(cardUrl);
    for (const listed of index) {
      const key = keyOf(listed.cardUrl);
      if (key === undefined) {
        leftOut.push({
          url: listed.cardUrl,
          listedBy: cardUrl,
          reason: 'failed',
          detail: 'not an https URL Baton can fetch',
        });
        continue;
      }
      if (visited.has(key)) {
        repeats++;
        continue;
      }
      visited.add(key);
      if (item.depth + 1 > limits.maxDepth) leftOut.push({ url: key, listedBy: cardUrl, reason: 'depth' });
      else queue.push({ url: key, depth: item.depth + 1, listedBy: cardUrl });
    }
  };

  try {
    while (queue.length > 0) {
      const stop: LeftOutReason | undefined = budget.signal.aborted
        ? 'time'
        : fetches >= limits.maxCards
          ? 'cards'
          : agents.length >= limits.maxAgents
            ? 'agents'
            : undefined;
      if (stop) {
        for (const item of queue.splice(0)) leftOut.push({ url: item.url, listedBy: item.listedBy, reason: stop });
        break;
      }
      // Never more at once than the agents still allowed: the agent limit cannot be overshot.
      const batch = queue.splice(
        0,
        Math.max(1, Math.min(limits.concurrency, limits.maxCards - fetches, limits.maxAgents - agents.length)),
      );
      fetches += batch.length;
      const settled = await Promise.allSettled(
        batch.map((item) => fetchAgentCard(item.url, { ...options.fetch, signal })),
      );
      if (options.signal?.aborted) throw cancelled();
      for (const [i, result] of settled.entries()) {
        const item = batch[i];
        try {
          if (result.status === 'rejected') throw result.reason;
          if (result.value.notModified)
            throw new Error('the server answered 304 Not Modified to a request without an ETag');
          take(item, result.value);
        } catch (e) {
          if (item.depth === 0) throw e;
          const timedOut = budget.signal.aborted && e instanceof SafeFetchError && e.code === 'aborted';
          leftOut.push({
            url: item.url,
            listedBy: item.listedBy,
            reason: timedOut ? 'time' : 'failed',
            ...(timedOut ? {} : { detail: messageOf(e) }),
          });
        }
      }
    }
  } finally {
    clearTimeout(timer);
  }
  return { rootUrl, agents, indexes, leftOut, repeats, fetches, limits };
}

const REASON_TEXT: Record<LeftOutReason, (n: number, l: DiscoveryLimits) => string> = {
  agents: (n, l) => `${n} because Baton adds at most ${l.maxAgents} agents in one Add Agent`,
  cards: (n, l) => `${n} because Baton fetches at most ${l.maxCards} cards in one Add Agent`,
  depth: (n, l) =>
    `${n} listed by an index nested more than ${l.maxDepth} level${l.maxDepth === 1 ? '' : 's'} below the one you gave`,
  time: (n, l) => `${n} because Add Agent stops after ${Math.round(l.budgetMs / 1000)} s`,
  failed: (n) => `${n} whose card could not be fetched or read`,
};

const REASON_ORDER: readonly LeftOutReason[] = ['agents', 'cards', 'depth', 'time', 'failed'];

/**
 * What the user is told when a walk left something out: how many agents were added from where, what
 * was left out and why, and what to do. Undefined when nothing was left out.
 */
export function discoverySummary(d: Discovery): string | undefined {
  if (d.leftOut.length === 0) return undefined;
  const counts = REASON_ORDER.map((r) => [r, d.leftOut.filter((x) => x.reason === r).length] as const).filter(
    ([, n]) => n > 0,
  );
  const added =
    d.agents.length === 0
      ? 'Added no agent'
      : `Added ${d.agents.length} agent${d.agents.length === 1 ? '' : 's'} for review`;
  const why = counts.map(([r, n]) => REASON_TEXT[r](n, d.limits)).join('; ');
  const again = counts.some(([r]) => r === 'time' || r === 'failed') ? ' (or try again later)' : '';
  return (
    `${added} from ${d.rootUrl} and left out ${d.leftOut.length} listed card${d.leftOut.length === 1 ? '' : 's'}: ${why}. ` +
    `Nothing else was added. To add one that was left out, use Add Agent with its own card URL${again}; the Baton log lists each one.`
  );
}

const MAX_LOGGED = 200;

/** One line per card left out (at most 200, then a count), for the log. */
export function discoveryLog(d: Discovery): string[] {
  const lines = d.leftOut
    .slice(0, MAX_LOGGED)
    .map((x) => `left out ${x.url} (listed by ${x.listedBy}): ${x.reason}${x.detail ? `: ${x.detail}` : ''}`);
  if (d.leftOut.length > MAX_LOGGED) lines.push(`… and ${d.leftOut.length - MAX_LOGGED} more`);
  return lines;
}
