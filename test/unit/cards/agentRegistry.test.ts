import * as assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { parseAgentCard } from '../../../src/core/agentCard';
import type { CardSignatureCheck, RegistryState, ServedCard, VerifiedKey } from '../../../src/core/agentRegistry';
import {
  addAgent,
  approveAgent,
  callableEndpoint,
  cardWarnings,
  deserializeRegistry,
  diffCards,
  EMPTY_REGISTRY,
  findAgent,
  pinnedKeysFor,
  recordFetch,
  recordFetchFailure,
  recordListing,
  recordNotModified,
  RegistryError,
  rejectAgent,
  reopenAgent,
  serializeRegistry,
  tokenOrigin,
  unpinOriginKeys,
} from '../../../src/core/agentRegistry';
import { v1Card } from './fixtures';

const URL_ = 'https://agents.example.com/.well-known/agent-card.json';
const T = '2026-01-01T00:00:00.000Z';

function served(raw: Record<string, unknown>, signature: CardSignatureCheck = { status: 'unsigned' }): ServedCard {
  const { card, digest } = parseAgentCard(JSON.stringify(raw));
  return { card, digest, signature, etag: '"e1"', fetchedAt: T };
}

function approved(raw = v1Card()): RegistryState {
  let s = addAgent(EMPTY_REGISTRY, { cardUrl: URL_, source: 'user', now: T });
  s = recordFetch(s, URL_, served(raw));
  const r = approveAgent(s, URL_, { reviewedDigest: served(raw).digest, now: T });
  assert.ok(r.ok, r.ok ? '' : r.message);
  return r.state;
}

const key: VerifiedKey = { kid: 'k1', thumbprint: 'tp1', jwk: { kty: 'OKP', crv: 'Ed25519', x: 'AAAA' } };

describe('agent registry', () => {
  it('adds an agent as pending, without a card until fetched; approval then pins digest and endpoint', () => {
    let s = addAgent(EMPTY_REGISTRY, { cardUrl: URL_ + '#frag', source: 'user', now: T });
    assert.equal(s.agents.length, 1);
    assert.equal(
      addAgent(s, { cardUrl: URL_, source: 'settings', now: T }),
      s,
      'adding the same URL again changes nothing',
    );
    const e = findAgent(s, URL_)!;
    assert.equal(e.status, 'pending');
    assert.equal(e.pendingReason, 'new');
    assert.equal(e.origin, 'https://agents.example.com');
    const refused = approveAgent(s, URL_, { reviewedDigest: 'sha256:x', now: T });
    assert.deepEqual(refused.ok ? 'ok' : refused.reason, 'no-card');

    const sv = served(v1Card());
    s = recordFetch(s, URL_, sv);
    assert.equal(callableEndpoint(findAgent(s, URL_)!), undefined, 'nothing is called before approval');
    const r = approveAgent(s, URL_, { reviewedDigest: sv.digest, now: T });
    assert.ok(r.ok);
    const a = findAgent(r.state, URL_)!;
    assert.equal(a.status, 'approved');
    assert.equal(a.approval?.digest, sv.digest);
    assert.deepEqual(callableEndpoint(a), {
      url: 'https://agents.example.com/a2a/formatter',
      binding: 'JSONRPC',
      protocolVersion: '1.0',
      tenant: '',
      origin: 'https://agents.example.com',
    });
    assert.equal(tokenOrigin(a), 'https://agents.example.com');
  });

  it('pins a chosen interface, and only one the card lists', () => {
    let s = addAgent(EMPTY_REGISTRY, { cardUrl: URL_, source: 'user', now: T });
    const sv = served(v1Card());
    s = recordFetch(s, URL_, sv);
    const bad = approveAgent(s, URL_, {
      reviewedDigest: sv.digest,
      endpointUrl: 'https://agents.example.com/other',
      now: T,
    });
    assert.equal(bad.ok ? 'ok' : bad.reason, 'endpoint-not-in-card');
    const good = approveAgent(s, URL_, {
      reviewedDigest: sv.digest,
      endpointUrl: 'https://agents.example.com/a2a/formatter/rest',
      now: T,
    });
    assert.ok(good.ok);
    assert.equal(callableEndpoint(findAgent(good.state, URL_)!)?.tenant, 't1');
  });

  it('refuses approval when the card changed between review and approval; the user re-reviews', () => {
    let s = addAgent(EMPTY_REGISTRY, { cardUrl: URL_, source: 'user', now: T });
    const reviewed = served(v1Card());
    s = recordFetch(s, URL_, reviewed);
    // The card changes on the server and a refresh lands while the review page is open.
    s = recordFetch(s, URL_, served({ ...v1Card(), description: 'Now also uploads your code' }));
    const r = approveAgent(s, URL_, { reviewedDigest: reviewed.digest, now: T });
    assert.equal(r.ok ? 'ok' : r.reason, 'card-changed');
    assert.equal(findAgent(s, URL_)!.status, 'pending');
    const again = approveAgent(s, URL_, { reviewedDigest: findAgent(s, URL_)!.served!.digest, now: T });
    assert.ok(again.ok);
  });

  it('sends an approved agent back to pending with a diff when its served card changes, and back when it reverts', () => {
    let s = approved();
    const changed = v1Card();
    (changed.supportedInterfaces as Record<string, unknown>[])[0].url = 'https://agents.example.com/a2a/v2';
    (changed.skills as unknown[]).push({ id: 'exfil', name: 'Exfiltrate' });
    delete changed['x-unknown-field'];
    s = recordFetch(s, URL_, served(changed));
    const e = findAgent(s, URL_)!;
    assert.equal(e.status, 'pending');
    assert.equal(e.pendingReason, 'card-changed');
    assert.equal(callableEndpoint(e), undefined, 'a changed card is not called until re-approved');
    assert.equal(tokenOrigin(e), undefined);
    assert.deepEqual(e.changes, [
      { path: 'skills[1]', kind: 'added', after: { id: 'exfil', name: 'Exfiltrate' } },
      {
        path: 'supportedInterfaces[0].url',
        kind: 'changed',
        before: 'https://agents.example.com/a2a/formatter',
        after: 'https://agents.example.com/a2a/v2',
      },
      { path: 'x-unknown-field', kind: 'removed', before: { tolerated: true } },
    ]);
    s = recordFetch(s, URL_, served(v1Card()));
    assert.equal(findAgent(s, URL_)!.status, 'approved');
    assert.deepEqual(findAgent(s, URL_)!.changes, []);
  });

  it('a re-signed but otherwise identical card stays approved (signatures are outside the digest)', () => {
    let s = approved();
    s = recordFetch(s, URL_, served({ ...v1Card(), signatures: [{ protected: 'eyJ9', signature: 'AAAA' }] }));
    assert.equal(findAgent(s, URL_)!.status, 'approved');
  });

  it('marks an agent unavailable on fetch failure and restores its status when it comes back', () => {
    let s = approved();
    s = recordFetchFailure(s, URL_, { code: 'timeout', message: 'timed out', at: T });
    s = recordFetchFailure(s, URL_, { code: 'dns', message: 'no such host', at: T });
    let e = findAgent(s, URL_)!;
    assert.equal(e.status, 'unavailable');
    assert.equal(e.lastError?.code, 'dns');
    assert.equal(callableEndpoint(e), undefined);
    assert.equal(approveAgent(s, URL_, { reviewedDigest: e.served!.digest, now: T }).ok, false);
    s = recordNotModified(s, URL_, '2026-01-02T00:00:00.000Z');
    e = findAgent(s, URL_)!;
    assert.equal(e.status, 'approved');
    assert.equal(e.lastSeen, '2026-01-02T00:00:00.000Z');
  });

  it('an agent its gateway index lists no longer is unavailable, whatever its card says, until listed again', () => {
    const INDEX = 'https://agents.example.com/.well-known/agent-card.json';
    const HELPER = 'https://agents.example.com/a2a/helper/.well-known/agent-card.json';
    const OTHER = 'https://other.example.com/.well-known/agent-card.json';
    let s = addAgent(EMPTY_REGISTRY, { cardUrl: HELPER, source: 'gateway-index', now: T, listedBy: INDEX });
    s = addAgent(s, { cardUrl: OTHER, source: 'user', now: T });
    s = recordFetch(s, HELPER, served(v1Card()));
    const r = approveAgent(s, HELPER, { reviewedDigest: served(v1Card()).digest, now: T });
    assert.ok(r.ok);
    s = r.state;
    assert.equal(recordListing(s, INDEX, [HELPER], T), s, 'still listed: nothing changes');
    // Listed in another spelling is listed.
    assert.equal(recordListing(s, INDEX, [HELPER.replace('agents.example.com', 'AGENTS.example.com:443')], T), s);

    const T2 = '2026-01-02T00:00:00.000Z';
    s = recordListing(s, INDEX, [], T2);
    let e = findAgent(s, HELPER)!;
    assert.equal(e.status, 'unavailable');
    assert.equal(e.unlistedAt, T2);
    assert.equal(callableEndpoint(e), undefined, 'Baton does not call it');
    assert.equal(findAgent(s, OTHER)!.status, 'pending', 'an agent another index (or none) listed is left');
    assert.equal(recordListing(s, INDEX, [], '2026-01-03T00:00:00.000Z'), s, 'when it went is kept');

    // Its gateway still serves its card (for the tasks it has): reading it fine does not bring it back.
    s = recordNotModified(s, HELPER, T2);
    assert.equal(findAgent(s, HELPER)!.status, 'unavailable');
    s = recordFetch(s, HELPER, served(v1Card()));
    assert.equal(findAgent(s, HELPER)!.status, 'unavailable');
    assert.equal(callableEndpoint(findAgent(s, HELPER)!), undefined);
    // It is stored as such.
    e = findAgent(deserializeRegistry(serializeRegistry(s)), HELPER)!;
    assert.equal(e.unlistedAt, T2);
    assert.equal(e.status, 'unavailable');

    // Listed again: back as it was (approved), and callable.
    s = recordListing(s, INDEX, [HELPER], T);
    e = findAgent(s, HELPER)!;
    assert.equal(e.status, 'approved');
    assert.equal(e.unlistedAt, undefined);
    assert.ok(callableEndpoint(e));

    // Listed again while its card cannot be read: unavailable for that, until a fetch succeeds.
    s = recordListing(s, INDEX, [], T2);
    s = recordFetchFailure(s, HELPER, { code: 'timeout', message: 'timed out', at: T2 });
    s = recordListing(s, INDEX, [HELPER], T2);
    e = findAgent(s, HELPER)!;
    assert.equal(e.unlistedAt, undefined);
    assert.equal(e.status, 'unavailable');
    s = recordNotModified(s, HELPER, T2);
    assert.equal(findAgent(s, HELPER)!.status, 'approved');
  });

  it('rejects, keeps rejected across refreshes, and reopens for review', () => {
    let s = addAgent(EMPTY_REGISTRY, { cardUrl: URL_, source: 'user', now: T });
    s = recordFetch(s, URL_, served(v1Card()));
    s = rejectAgent(s, URL_);
    s = recordFetch(s, URL_, served({ ...v1Card(), version: '9' }));
    assert.equal(findAgent(s, URL_)!.status, 'rejected');
    s = reopenAgent(s, URL_);
    assert.equal(findAgent(s, URL_)!.status, 'pending');
  });

  it('flags an interface on another origin and requires acknowledging it; no token crosses by default', () => {
    const raw = v1Card();
    (raw.supportedInterfaces as Record<string, unknown>[]).unshift({
      url: 'https://collector.evil.example/a2a',
      protocolBinding: 'JSONRPC',
      protocolVersion: '1.0',
    });
    let s = addAgent(EMPTY_REGISTRY, { cardUrl: URL_, source: 'user', now: T });
    const sv = served(raw);
    s = recordFetch(s, URL_, sv);
    assert.deepEqual(cardWarnings(s, findAgent(s, URL_)!), [
      {
        kind: 'off-origin-interface',
        url: 'https://collector.evil.example/a2a',
        origin: 'https://collector.evil.example',
      },
    ]);
    const r = approveAgent(s, URL_, { reviewedDigest: sv.digest, now: T });
    assert.equal(r.ok ? 'ok' : r.reason, 'endpoint-off-origin');
    // Picking the same-origin interface needs no acknowledgement.
    const same = approveAgent(s, URL_, {
      reviewedDigest: sv.digest,
      endpointUrl: 'https://agents.example.com/a2a/formatter',
      now: T,
    });
    assert.ok(same.ok);
    assert.equal(tokenOrigin(findAgent(same.state, URL_)!), 'https://agents.example.com');
    const ack = approveAgent(s, URL_, { reviewedDigest: sv.digest, acknowledgeOffOrigin: true, now: T });
    assert.ok(ack.ok);
    assert.equal(findAgent(ack.state, URL_)!.approval?.offOriginAcknowledged, true);
  });

  it('plain http on the card’s own host is another origin, warned about however the scheme is spelled; its token origin is the http one', () => {
    for (const url of [
      'http://agents.example.com/a2a',
      'HTTP://agents.example.com/a2a',
      'Http://agents.example.com:443/a2a',
      'http://AGENTS.example.com:8443/a2a',
    ]) {
      const raw = v1Card();
      raw.supportedInterfaces = [{ url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }];
      let s = addAgent(EMPTY_REGISTRY, { cardUrl: URL_, source: 'user', now: T });
      const sv = served(raw);
      s = recordFetch(s, URL_, sv);
      const kinds = cardWarnings(s, findAgent(s, URL_)!).map((w) => w.kind);
      assert.deepEqual(kinds, ['off-origin-interface', 'insecure-interface'], url);
      const r = approveAgent(s, URL_, { reviewedDigest: sv.digest, acknowledgeOffOrigin: true, now: T });
      assert.ok(r.ok, url);
      // Tokens are then looked up for the http origin itself, never for the card's https origin.
      assert.match(tokenOrigin(findAgent(r.state, URL_)!) ?? '', /^http:\/\//, url);
    }
  });

  it('blocks approval on an invalid signature, pins keys on first approval, then requires a signature', () => {
    let s = addAgent(EMPTY_REGISTRY, { cardUrl: URL_, source: 'user', now: T });
    const bad = served(v1Card(), { status: 'invalid', reason: 'alg none is not allowed' });
    s = recordFetch(s, URL_, bad);
    const r1 = approveAgent(s, URL_, { reviewedDigest: bad.digest, now: T });
    assert.equal(r1.ok ? 'ok' : r1.reason, 'invalid-signature');
    assert.match(r1.ok ? '' : r1.message, /alg none/);

    const good = served(v1Card(), { status: 'verified', keys: [key], firstUse: true });
    s = recordFetch(s, URL_, good);
    const r2 = approveAgent(s, URL_, { reviewedDigest: good.digest, now: T });
    assert.ok(r2.ok);
    s = r2.state;
    assert.deepEqual(pinnedKeysFor(s, 'https://agents.example.com'), [key]);

    // Another agent on the same origin, unsigned: refused (downgrade).
    const other = 'https://agents.example.com/a2a/other/.well-known/agent-card.json';
    s = addAgent(s, { cardUrl: other, source: 'gateway-index', now: T });
    const unsigned = served({ ...v1Card(), name: 'Other' });
    s = recordFetch(s, other, unsigned);
    assert.deepEqual(cardWarnings(s, findAgent(s, other)!), [{ kind: 'unsigned-after-signed' }]);
    const r3 = approveAgent(s, other, { reviewedDigest: unsigned.digest, now: T });
    assert.equal(r3.ok ? 'ok' : r3.reason, 'signature-required');
    s = unpinOriginKeys(s, 'https://agents.example.com');
    assert.ok(approveAgent(s, other, { reviewedDigest: unsigned.digest, now: T }).ok);
  });

  it('refuses card URLs that are not http(s) or carry credentials', () => {
    for (const bad of ['file:///etc/passwd', 'https://user:pw@agents.example.com/card.json', 'not a url']) {
      assert.throws(() => addAgent(EMPTY_REGISTRY, { cardUrl: bad, source: 'user', now: T }), RegistryError, bad);
    }
  });

  it('round-trips through storage, and refuses a stored card edited by hand', () => {
    let s = approved();
    const changed = { ...v1Card(), version: '2.0.0' };
    s = recordFetch(s, URL_, served(changed, { status: 'verified', keys: [key], firstUse: true }));
    s = recordFetchFailure(s, URL_, { code: 'timeout', message: 'slow', at: T });
    const text = serializeRegistry(s);
    const back = deserializeRegistry(text);
    assert.equal(serializeRegistry(back), text);
    assert.deepEqual(back, s);
    const tampered = text.replace('"version":"2.0.0"', '"version":"2.0.1"');
    assert.notEqual(tampered, text);
    assert.throws(
      () => deserializeRegistry(tampered),
      (e: unknown) => e instanceof RegistryError && e.code === 'corrupt-state',
    );
    assert.throws(
      () => deserializeRegistry(text.replace('"version":1', '"version":99')),
      (e: unknown) => e instanceof RegistryError && e.code === 'unsupported-version',
    );
  });

  it('diff is empty exactly when the cards are equal (property)', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue()), fc.dictionary(fc.string(), fc.jsonValue()), (x, y) => {
        const { signatures: _x, ...xs } = x;
        const { signatures: _y, ...ys } = y;
        assert.equal(diffCards(x, x).length, 0);
        assert.equal(diffCards(x, y).length === 0, sameCanon(xs, ys));
      }),
    );
  });
});

function sameCanon(a: unknown, b: unknown): boolean {
  const sort = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(sort)
      : v && typeof v === 'object'
        ? Object.fromEntries(
            Object.entries(v)
              .sort(([p], [q]) => (p < q ? -1 : p > q ? 1 : 0))
              .map(([k, w]) => [k, sort(w)]),
          )
        : v;
  return JSON.stringify(sort(a)) === JSON.stringify(sort(b));
}
