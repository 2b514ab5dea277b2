/**
 * Serving a public Agent Card: the card as it goes on the wire, its ETag, and the route that answers
 * 1.0 and 0.3 clients each in their own form.
 */
import { createHash } from 'node:crypto';
import express from 'express';
import type { NextFunction, Request, Response } from 'express';
import { AgentCard } from '@a2a-js/sdk';
import { legacyAgentCardRouter } from '@a2a-js/sdk/compat/v0_3/server/express';

/** A card as served: the card, its 1.0 wire JSON (the exact form the card signature covers) and its ETag. */
export interface PublishedCard {
  readonly card: AgentCard;
  readonly json: string;
  readonly etag: string;
}

export function publishCard(card: AgentCard): PublishedCard {
  const json = JSON.stringify(AgentCard.toJSON(card));
  // A2A §8.6: an ETag lets a client revalidate the card instead of fetching it again.
  const etag = `"${createHash('sha256').update(json).digest('base64url').slice(0, 27)}"`;
  return { card, json, etag };
}

/**
 * A card built on first use and kept until `invalidate`; a build that fails is not kept, so the next
 * request tries again. `current` is the card once a build has finished, undefined while none has or
 * after an invalidation; `latest` is the newest card any build produced, kept across invalidations
 * (what a request handler that needs a card synchronously uses while the next one is being built).
 */
export class CardSlot {
  private pending: Promise<PublishedCard> | undefined;
  private ready: PublishedCard | undefined;
  private newest: PublishedCard | undefined;

  constructor(private readonly build: () => Promise<AgentCard>) {}

  get current(): PublishedCard | undefined {
    return this.ready;
  }

  /** The current card, else the one built last (undefined only before any build has finished). */
  get latest(): PublishedCard | undefined {
    return this.ready ?? this.newest;
  }

  get(): Promise<PublishedCard> {
    if (this.pending) return this.pending;
    const building = this.build().then(publishCard);
    this.pending = building;
    // A build that an invalidation overtook is neither kept nor forgotten in place of the newer one.
    building.then(
      (c) => {
        // An overtaken build is still a card the agent had a moment ago: usable until the next is ready.
        this.newest = c;
        if (this.pending === building) this.ready = c;
      },
      () => {
        if (this.pending === building) this.pending = undefined;
      },
    );
    return building;
  }

  invalidate(): void {
    this.pending = undefined;
    this.ready = undefined;
  }
}

/**
 * Which form of the card a request gets. A2A-Version (header, or the query parameter A2A allows
 * instead) decides: 0.3 gets the 0.3 form, anything else 1.0. Without it, A2A says a *request* is
 * 0.3, but the card is fetched before any version is chosen and the well-known URI must return an
 * A2A 1.0 AgentCard (§14.3), which 1.0 clients and conformance suites fetch bare. The 0.3 SDK clients
 * fetch it with `Accept: application/json` and no version: that, and only that, gets the 0.3 form.
 */
export function wantsLegacyCard(version: string | undefined, accept: string | undefined): boolean {
  if (version) return version.trim().startsWith('0.');
  return (accept ?? '')
    .split(',')
    .map((t) => t.split(';')[0]?.trim().toLowerCase())
    .includes('application/json');
}

/**
 * A public card: the SDK's 0.3 form for 0.3 clients (see `wantsLegacyCard`); everyone else the 1.0
 * wire JSON — the exact form the card signature covers. (The SDK's own agentCardHandler serialises the
 * in-memory object, whose security schemes are not wire JSON.)
 */
export function cardRoute(slot: CardSlot): express.Router {
  const router = express.Router();
  const legacy = legacyAgentCardRouter({
    agentCardProvider: () => slot.get().then((p) => p.card),
    cache: { maxAge: 60 },
  });
  router.use((req: Request, res: Response, next: NextFunction) => {
    const q = req.query['A2A-Version'];
    res.append('Vary', 'Accept');
    if (wantsLegacyCard(req.header('A2A-Version') ?? (typeof q === 'string' ? q : undefined), req.header('accept')))
      return legacy(req, res, next);
    next();
  });
  router.get('/', (req: Request, res: Response, next: NextFunction) => {
    slot.get().then(({ json, etag }) => {
      res.setHeader('Cache-Control', 'public, max-age=60');
      res.append('Vary', 'A2A-Version');
      res.setHeader('ETag', etag);
      const known = (req.header('if-none-match') ?? '').split(',').map((t) => t.trim().replace(/^W\//, ''));
      if (known.includes(etag) || known.includes('*')) return void res.status(304).end();
      res.type('application/json').send(json);
    }, next);
  });
  return router;
}
