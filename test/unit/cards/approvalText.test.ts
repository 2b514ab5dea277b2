// Why an agent cannot be approved is data (a code and what it names): the refusal's `message` is it
// in English, the extension says it in the user's language.
import * as assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseAgentCard } from '../../../src/core/agentCard';
import { addAgent, approveAgent, EMPTY_REGISTRY, recordFetch } from '../../../src/core/agentRegistry';
import { approvalRefusalText } from '../../../src/core/approvalText';
import { english, type Translate } from '../../../src/core/protocol/l10n';
import { v1Card } from './fixtures';

const URL_ = 'https://agents.example.com/.well-known/agent-card.json';
const T = '2026-01-01T00:00:00.000Z';

describe('approval refusals', () => {
  it('carry the refusal as data, and its English message is what approving always said', () => {
    const none = approveAgent(EMPTY_REGISTRY, URL_, { reviewedDigest: 'x', now: T });
    assert.ok(!none.ok);
    assert.deepEqual(none.why, { code: 'unknown-agent', cardUrl: URL_ });
    assert.equal(none.message, `No agent with card URL ${URL_}.`);

    let s = addAgent(EMPTY_REGISTRY, { cardUrl: URL_, source: 'user', now: T });
    const notYet = approveAgent(s, URL_, { reviewedDigest: 'x', now: T });
    assert.ok(!notYet.ok);
    assert.equal(notYet.message, 'The agent card has not been fetched yet; refresh it before approving.');

    const { card, digest } = parseAgentCard(JSON.stringify(v1Card()));
    s = recordFetch(s, URL_, {
      card,
      digest,
      signature: { status: 'invalid', reason: 'alg none' },
      etag: '"e1"',
      fetchedAt: T,
    });
    const bad = approveAgent(s, URL_, { reviewedDigest: digest, now: T });
    assert.ok(!bad.ok);
    assert.equal(bad.reason, 'invalid-signature');
    assert.deepEqual(bad.why, { code: 'invalid-signature', detail: 'alg none' });
    assert.equal(bad.message, "The card's signature is invalid (alg none); it cannot be approved.");
  });

  it('are said through the translate function they are given, with what they name as arguments', () => {
    const calls: unknown[][] = [];
    const t: Translate = (message, ...args) => {
      calls.push([message, ...args]);
      return 'übersetzt';
    };
    const m = { code: 'endpoint-off-origin', origin: 'https://a.example', target: 'https://b.example' } as const;
    assert.equal(approvalRefusalText(m, t), 'übersetzt');
    assert.deepEqual(calls, [
      [
        'The card at {0} sends requests to {1}. Approve only if you trust that origin; no token stored for {0} is sent there.',
        'https://a.example',
        'https://b.example',
      ],
    ]);
    assert.equal(
      approvalRefusalText(m, english),
      'The card at https://a.example sends requests to https://b.example. Approve only if you trust that origin; no token stored for https://a.example is sent there.',
    );
  });
});
