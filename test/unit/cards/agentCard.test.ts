import * as assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { AgentCard } from '@a2a-js/sdk';
import {
  agentCardDigest,
  AgentCardError,
  cardSigningPayload,
  normalizeAgentCard,
  offOriginInterfaces,
  parseAgentCard,
  readAgentIndex,
} from '../../../src/core/agentCard';
import { AGENT_INDEX_EXTENSION_URI } from '../../../src/core/batonProfile';
import { v03Card, v1Card } from './fixtures';

function refusedAt(fn: () => unknown, code: string, path: string): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof AgentCardError, String(e));
    assert.equal(e.code, code, e.message);
    assert.equal(e.path, path, e.message);
    assert.ok(e.message.includes(path), `message names the field: ${e.message}`);
    return true;
  });
}

describe('agent card normalisation', () => {
  it('reads an A2A 1.0 card: interfaces in order, capabilities, auth, skills, unknown fields kept', () => {
    const card = normalizeAgentCard(v1Card());
    assert.equal(card.format, '1.0');
    assert.equal(card.name, 'Formatter');
    assert.deepEqual(card.provider, { organization: 'Example Corp', url: 'https://example.com' });
    assert.deepEqual(
      card.interfaces.map((i) => [i.url, i.binding, i.protocolVersion, i.tenant, i.origin]),
      [
        ['https://agents.example.com/a2a/formatter', 'JSONRPC', '1.0', '', 'https://agents.example.com'],
        ['https://agents.example.com/a2a/formatter/rest', 'HTTP+JSON', '1.0', 't1', 'https://agents.example.com'],
      ],
    );
    assert.equal(card.preferredInterface, card.interfaces[0]);
    assert.equal(card.capabilities.streaming, true);
    assert.deepEqual(
      card.capabilities.extensions.map((e) => e.uri),
      ['urn:baton:a2a:replay:v1'],
    );
    assert.deepEqual(card.securitySchemes, [
      { kind: 'http', name: 'bearer', scheme: 'Bearer', bearerFormat: 'opaque', description: '' },
      { kind: 'apiKey', name: 'key', location: 'header', parameter: 'X-API-Key', description: '' },
    ]);
    assert.deepEqual(card.securityRequirements, [{ bearer: [] }]);
    assert.deepEqual(card.skills[0].tags, ['prettier']);
    assert.deepEqual(card.raw['x-unknown-field'], { tolerated: true });
  });

  it('reads an A2A 0.3 card into the same shape (url first, additional interfaces deduplicated)', () => {
    const card = normalizeAgentCard(v03Card());
    assert.equal(card.format, '0.3');
    assert.deepEqual(
      card.interfaces.map((i) => [i.url, i.binding, i.protocolVersion]),
      [
        ['https://legacy.example.com/a2a', 'JSONRPC', '0.3.0'],
        ['https://legacy.example.com/a2a/rest', 'HTTP+JSON', '0.3.0'],
      ],
    );
    assert.equal(card.capabilities.streaming, false);
    assert.equal(card.capabilities.extendedAgentCard, true);
    assert.deepEqual(
      card.securitySchemes.map((s) => s.kind),
      ['apiKey', 'http'],
    );
    assert.deepEqual(card.securitySchemes[0], {
      kind: 'apiKey',
      name: 'apikey',
      location: 'header',
      parameter: 'X-Key',
      description: '',
    });
    assert.deepEqual(card.securityRequirements, [{ apikey: [] }]);
  });

  it('a 0.3 card without preferredTransport defaults to JSON-RPC', () => {
    const raw = v03Card();
    delete raw.preferredTransport;
    delete raw.additionalInterfaces;
    assert.equal(normalizeAgentCard(raw).preferredInterface?.binding, 'JSONRPC');
  });

  it('agrees with the SDK on the interfaces of a card the SDK wrote', () => {
    const sdkJson = AgentCard.toJSON(AgentCard.fromJSON(v1Card())) as Record<string, unknown>;
    const ours = normalizeAgentCard(sdkJson);
    assert.deepEqual(
      ours.interfaces.map((i) => i.url),
      AgentCard.fromJSON(v1Card()).supportedInterfaces.map((i) => i.url),
    );
  });

  it('refuses invalid cards with an error naming the field', () => {
    const cases: [string, (c: Record<string, unknown>) => void, string][] = [
      ['no name', (c) => delete c.name, 'name'],
      ['empty name', (c) => (c.name = '  '), 'name'],
      ['name not a string', (c) => (c.name = 42), 'name'],
      ['no interfaces at all', (c) => delete c.supportedInterfaces, 'supportedInterfaces'],
      ['empty interfaces', (c) => (c.supportedInterfaces = []), 'supportedInterfaces'],
      ['interfaces not an array', (c) => (c.supportedInterfaces = {}), 'supportedInterfaces'],
      [
        'relative interface URL',
        (c) => ((c.supportedInterfaces as Record<string, unknown>[])[1].url = '/a2a'),
        'supportedInterfaces[1].url',
      ],
      [
        'ftp JSON-RPC URL',
        (c) => ((c.supportedInterfaces as Record<string, unknown>[])[0].url = 'ftp://x/a2a'),
        'supportedInterfaces[0].url',
      ],
      [
        'credentials in URL',
        (c) => ((c.supportedInterfaces as Record<string, unknown>[])[0].url = 'https://u:p@x/a2a'),
        'supportedInterfaces[0].url',
      ],
      [
        'no binding',
        (c) => delete (c.supportedInterfaces as Record<string, unknown>[])[0].protocolBinding,
        'supportedInterfaces[0].protocolBinding',
      ],
      ['skill without id', (c) => delete (c.skills as Record<string, unknown>[])[0].id, 'skills[0].id'],
      ['tag not a string', (c) => ((c.skills as Record<string, unknown>[])[0].tags = ['a', 3]), 'skills[0].tags[1]'],
      [
        'streaming not a boolean',
        (c) => ((c.capabilities as Record<string, unknown>).streaming = 'yes'),
        'capabilities.streaming',
      ],
      [
        'extension without uri',
        (c) => ((c.capabilities as Record<string, unknown>).extensions = [{}]),
        'capabilities.extensions[0].uri',
      ],
      [
        'http scheme without scheme',
        (c) => ((c.securitySchemes as Record<string, unknown>).bearer = { httpAuthSecurityScheme: {} }),
        'securitySchemes.bearer.httpAuthSecurityScheme.scheme',
      ],
      ['signature without signature', (c) => (c.signatures = [{ protected: 'x' }]), 'signatures[0].signature'],
    ];
    for (const [, mutate, path] of cases) {
      const c = v1Card();
      mutate(c);
      refusedAt(() => normalizeAgentCard(c), 'invalid-card', path);
    }
    refusedAt(() => normalizeAgentCard([]), 'invalid-card', '');
    const legacy = v03Card();
    legacy.url = 'not a url';
    refusedAt(() => normalizeAgentCard(legacy), 'invalid-card', 'url');
  });

  it('parses served text: duplicate keys, non-JSON and HTML are refused with their code', () => {
    refusedAt(() => parseAgentCard('{"name":"A","name":"B","url":"https://x/a2a"}'), 'duplicate-key', 'name');
    refusedAt(() => parseAgentCard('<!doctype html><html><body>Not Found</body></html>'), 'not-json', '');
    refusedAt(
      () =>
        parseAgentCard(
          JSON.stringify({ ...v1Card(), skills: [{ id: 'a', name: 'b', id2: 1 }] }).replace('"id2"', '"id"'),
        ),
      'duplicate-key',
      'skills[0].id',
    );
  });

  it('never throws anything but AgentCardError on arbitrary JSON (property)', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        try {
          parseAgentCard(JSON.stringify(v));
        } catch (e) {
          assert.ok(e instanceof AgentCardError, String(e));
        }
      }),
    );
  });
});

describe('agent card digest', () => {
  it('is sha256 over the RFC 8785 form without signatures, independent of key order and whitespace', () => {
    const raw = v1Card();
    const digest = agentCardDigest(raw);
    assert.match(digest, /^sha256:[0-9a-f]{64}$/);
    assert.equal(digest, `sha256:${createHash('sha256').update(cardSigningPayload(raw)).digest('hex')}`);
    const reordered = Object.fromEntries(Object.entries(raw).reverse());
    assert.equal(agentCardDigest(reordered), digest);
    assert.equal(parseAgentCard(JSON.stringify(raw, null, 4)).digest, digest);
    assert.equal(agentCardDigest({ ...raw, signatures: [{ protected: 'a', signature: 'b' }] }), digest);
    assert.ok(!cardSigningPayload({ ...raw, signatures: [] }).includes('signatures'));
  });

  it('changes when any field changes, including unknown and empty ones', () => {
    const base = agentCardDigest(v1Card());
    assert.notEqual(agentCardDigest({ ...v1Card(), 'x-unknown-field': { tolerated: false } }), base);
    assert.notEqual(agentCardDigest({ ...v1Card(), description: 'Formats code with prettier!' }), base);
    // Empty fields are part of the form (the SDK's canonicalizeAgentCard would drop them).
    assert.notEqual(agentCardDigest({ ...v1Card(), iconUrl: '' }), base);
  });
});

describe('origins and the gateway index', () => {
  it('accepts an index card with no interface of its own, and no other card without one', () => {
    const index = {
      name: 'Baton gateway',
      supportedInterfaces: [],
      capabilities: { extensions: [{ uri: AGENT_INDEX_EXTENSION_URI, params: { agents: [] } }] },
    };
    const card = normalizeAgentCard(index);
    assert.deepEqual(card.interfaces, []);
    assert.equal(card.preferredInterface, undefined);
    refusedAt(() => normalizeAgentCard({ ...index, capabilities: {} }), 'invalid-card', 'supportedInterfaces');
  });

  it("reads security schemes in the SDK's in-memory form (what its card handler serves for an in-memory card)", () => {
    const raw = {
      ...v1Card(),
      securitySchemes: {
        bearer: {
          scheme: {
            $case: 'httpAuthSecurityScheme',
            value: { scheme: 'Bearer', bearerFormat: 'opaque', description: 'd' },
          },
        },
      },
    };
    assert.deepEqual(normalizeAgentCard(raw).securitySchemes, [
      { kind: 'http', name: 'bearer', scheme: 'Bearer', bearerFormat: 'opaque', description: 'd' },
    ]);
    refusedAt(
      () =>
        normalizeAgentCard({
          ...v1Card(),
          securitySchemes: { k: { scheme: { $case: 'apiKeySecurityScheme', value: { location: 'header' } } } },
        }),
      'invalid-card',
      'securitySchemes.k.scheme.value.name',
    );
  });

  it('flags interfaces on another origin than the card URL', () => {
    const raw = v1Card();
    (raw.supportedInterfaces as Record<string, unknown>[]).push({
      url: 'https://evil.example.net/a2a',
      protocolBinding: 'JSONRPC',
    });
    const card = normalizeAgentCard(raw);
    assert.deepEqual(
      offOriginInterfaces(card, 'https://agents.example.com/.well-known/agent-card.json').map((i) => i.url),
      ['https://evil.example.net/a2a'],
    );
    assert.equal(
      offOriginInterfaces(card, 'https://agents.example.com:8443/.well-known/agent-card.json').length,
      3,
      'a different port is a different origin',
    );
  });

  it('reads the agent index of a gateway root card, resolving relative card URLs', () => {
    const raw = v1Card('http://127.0.0.1:4000');
    (raw.capabilities as Record<string, unknown>).extensions = [
      {
        uri: AGENT_INDEX_EXTENSION_URI,
        params: {
          agents: [
            { id: 'formatter', name: 'Formatter', cardUrl: '/a2a/formatter/.well-known/agent-card.json' },
            { id: 'remote', cardUrl: 'https://elsewhere.example/a2a/x/.well-known/agent-card.json' },
          ],
        },
      },
    ];
    const card = normalizeAgentCard(raw);
    assert.deepEqual(readAgentIndex(card, 'http://127.0.0.1:4000/.well-known/agent-card.json'), [
      {
        id: 'formatter',
        name: 'Formatter',
        description: '',
        cardUrl: 'http://127.0.0.1:4000/a2a/formatter/.well-known/agent-card.json',
        offOrigin: false,
      },
      {
        id: 'remote',
        name: 'remote',
        description: '',
        cardUrl: 'https://elsewhere.example/a2a/x/.well-known/agent-card.json',
        offOrigin: true,
      },
    ]);
    assert.deepEqual(readAgentIndex(normalizeAgentCard(v1Card()), 'https://agents.example.com/'), []);
    (raw.capabilities as { extensions: { params: { agents: unknown[] } }[] }).extensions[0].params.agents.push({
      name: 'no id',
    });
    refusedAt(
      () => readAgentIndex(normalizeAgentCard(raw), 'http://127.0.0.1:4000/'),
      'invalid-card',
      'capabilities.extensions[0].params.agents[2].cardUrl',
    );
  });
});
