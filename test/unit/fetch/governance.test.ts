// The flow the Agents view drives, end to end on a real SDK card server (express + agentCardHandler
// in legacy mode, as the gateway serves): fetch → verify → review → the card changes → approval
// refused → re-review → approve (keys pinned) → 304 refresh → a card signed by another key.
import * as assert from 'node:assert/strict';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import express from 'express';
import { AgentCard } from '@a2a-js/sdk';
import { agentCardHandler } from '@a2a-js/sdk/server/express';
import type { RegistryState, ServedCard } from '../../../src/core/agentRegistry';
import {
  addAgent,
  approveAgent,
  callableEndpoint,
  EMPTY_REGISTRY,
  findAgent,
  pinnedKeysFor,
  recordFetch,
  recordNotModified,
} from '../../../src/core/agentRegistry';
import { fetchAgentCard } from '../../../src/node/safeFetch';
import type { FetchAgentCardOptions } from '../../../src/node/safeFetch';
import type { SigningKey } from '../../../src/node/signing';
import { createCardSignature, generateSigningKey, verifyAgentCard } from '../../../src/node/signing';
import { v1Card } from '../cards/fixtures';

let server: Server;
let base: string;
let current: AgentCard;
let gatewayKey: SigningKey;
let otherKey: SigningKey;

async function publish(description: string, key: SigningKey, legacyInterface = false): Promise<void> {
  // Built and signed the way src/gateway/cards.ts does: an in-memory SDK card, signed as served.
  const raw: Record<string, unknown> = { ...v1Card(base), description };
  if (legacyInterface)
    (raw.supportedInterfaces as unknown[]).push({
      url: `${base}/a2a/formatter`,
      protocolBinding: 'JSONRPC',
      protocolVersion: '0.3',
    });
  const card = AgentCard.fromJSON(raw);
  card.signatures = [];
  card.signatures = [
    (await createCardSignature(card as unknown as Record<string, unknown>, key)) as AgentCard['signatures'][number],
  ];
  current = card;
}

before(async () => {
  gatewayKey = await generateSigningKey();
  otherKey = await generateSigningKey();
  const app = express();
  app.use(
    '/.well-known/agent-card.json',
    agentCardHandler({ agentCardProvider: async () => current, legacyCompat: { enabled: true } }),
  );
  server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  await publish('Formats code with prettier.', gatewayKey);
});

after(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

const opts: FetchAgentCardOptions = { allowPrivateHosts: ['127.0.0.1'], timeoutMs: 5000 };

async function refresh(state: RegistryState, cardUrl: string): Promise<RegistryState> {
  const entry = findAgent(state, cardUrl);
  const r = await fetchAgentCard(cardUrl, { ...opts, ...(entry?.served?.etag ? { etag: entry.served.etag } : {}) });
  if (r.notModified) return recordNotModified(state, cardUrl, new Date().toISOString());
  const signature = await verifyAgentCard(r.card.raw, { pinnedKeys: pinnedKeysFor(state, entry?.origin ?? '') });
  const served: ServedCard = {
    card: r.card,
    digest: r.digest,
    signature,
    etag: r.etag,
    fetchedAt: new Date().toISOString(),
  };
  return recordFetch(state, cardUrl, served);
}

describe('governance flow against a real SDK card server', () => {
  it('review, change, refused approval, re-review, approval with pinned key, 304, and a foreign signature', async () => {
    const cardUrl = `${base}/.well-known/agent-card.json`;
    let s = addAgent(EMPTY_REGISTRY, {
      cardUrl: base.replace(/\/?$/, '/.well-known/agent-card.json'),
      source: 'user',
      now: new Date().toISOString(),
    });
    s = await refresh(s, cardUrl);
    const reviewed = findAgent(s, cardUrl)!;
    assert.equal(reviewed.served?.card.format, '1.0', 'A2A-Version 1.0 gets the 1.0 card, not the legacy rendering');
    assert.equal(reviewed.served?.signature.status, 'verified');
    const reviewedDigest = reviewed.served!.digest;

    // The card changes while the review page is open; a refresh lands.
    await publish('Formats code with prettier, and uploads it.', gatewayKey);
    s = await refresh(s, cardUrl);
    const refusedApproval = approveAgent(s, cardUrl, { reviewedDigest, now: new Date().toISOString() });
    assert.equal(refusedApproval.ok ? 'approved' : refusedApproval.reason, 'card-changed');

    // The user re-reviews and approves what is served now: the gateway's key is pinned for the origin.
    const r = approveAgent(s, cardUrl, {
      reviewedDigest: findAgent(s, cardUrl)!.served!.digest,
      now: new Date().toISOString(),
    });
    assert.ok(r.ok, r.ok ? '' : r.message);
    s = r.state;
    assert.deepEqual(
      pinnedKeysFor(s, base).map((k) => k.thumbprint),
      [gatewayKey.kid],
    );
    assert.equal(callableEndpoint(findAgent(s, cardUrl)!)?.url, `${base}/a2a/formatter`);

    // An unchanged card: 304 via the ETag, still approved.
    s = await refresh(s, cardUrl);
    assert.equal(findAgent(s, cardUrl)!.status, 'approved');

    // The card changes and is signed by another key: pending, signature invalid, approval blocked.
    await publish('Same agent, new key.', otherKey);
    s = await refresh(s, cardUrl);
    const e = findAgent(s, cardUrl)!;
    assert.equal(e.status, 'pending');
    assert.deepEqual(
      e.changes.map((c) => c.path),
      ['description'],
    );
    assert.equal(e.served?.signature.status, 'invalid');
    const blocked = approveAgent(s, cardUrl, { reviewedDigest: e.served!.digest, now: new Date().toISOString() });
    assert.equal(blocked.ok ? 'approved' : blocked.reason, 'invalid-signature');
  });

  it('the legacy (0.3) rendering a client gets without A2A-Version is not what was signed', async () => {
    await publish('Formats code with prettier.', gatewayKey, true);
    assert.equal(
      (await verifyAgentCard(AgentCard.toJSON(current) as Record<string, unknown>)).status,
      'invalid',
      'AgentCard.toJSON re-shapes the card (drops empty fields): sign the served object',
    );
    const v1 = await fetchAgentCard(base, opts);
    assert.ok(!v1.notModified && (await verifyAgentCard(v1.card.raw)).status === 'verified');
    const r = await fetchAgentCard(base, { ...opts, headers: { 'a2a-version': '0.3' } });
    assert.ok(!r.notModified);
    if (r.notModified) return;
    assert.equal(typeof r.card.raw.url, 'string', 'the 0.3 rendering names url');
    assert.equal((await verifyAgentCard(r.card.raw)).status, 'invalid');
  });
});
