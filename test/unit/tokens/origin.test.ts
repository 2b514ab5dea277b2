import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  legacyTokenHost,
  normalizeOrigin,
  OriginError,
  sameOrigin,
  tokenSource,
  tryNormalizeOrigin,
} from '../../../src/core/origin';

describe('normalizeOrigin: one key per origin', () => {
  for (const [input, want] of [
    ['https://agents.example.com', 'https://agents.example.com'],
    ['HTTPS://Agents.EXAMPLE.com:443/', 'https://agents.example.com'],
    ['https://agents.example.com./a2a/x?y#z', 'https://agents.example.com'],
    ['agents.example.com', 'https://agents.example.com'],
    ['  agents.example.com:8443  ', 'https://agents.example.com:8443'],
    ['http://agents.example.com:80', 'http://agents.example.com'],
    ['http://agents.example.com:443', 'http://agents.example.com:443'],
    ['https://agents.example.com:80', 'https://agents.example.com:80'],
    ['https://[0:0:0:0:0:0:0:1]:8443', 'https://[::1]:8443'],
    ['[::1]:8443', 'https://[::1]:8443'],
    ['https://[::FFFF:7F00:1]', 'https://[::ffff:7f00:1]'],
    ['http://2130706433:4000', 'http://127.0.0.1:4000'],
    ['http://0x7f.1:4000', 'http://127.0.0.1:4000'],
    ['http://127.0.0.1.:4000', 'http://127.0.0.1:4000'],
    ['https://bücher.example', 'https://xn--bcher-kva.example'],
    ['127.0.0.1:4000', 'https://127.0.0.1:4000'],
  ] as const) {
    it(`${JSON.stringify(input)} → ${want}`, () => assert.equal(normalizeOrigin(input), want));
  }

  for (const bad of [
    '',
    '   ',
    'ftp://agents.example.com',
    'file:///etc/passwd',
    'https://user:pw@agents.example.com',
    'https://user@agents.example.com',
    'javascript:alert(1)',
    'https://',
    'https://exa mple.com',
    'https://.',
  ]) {
    it(`refuses ${JSON.stringify(bad)} with a message that says what to give`, () => {
      assert.throws(
        () => normalizeOrigin(bad),
        (e: unknown) => e instanceof OriginError && /origin|host/.test(e.message),
      );
      assert.equal(tryNormalizeOrigin(bad), undefined);
    });
  }

  it('sameOrigin: scheme, host and port all count; spellings of one origin are equal', () => {
    assert.equal(sameOrigin('https://a.example', 'HTTPS://A.example:443/x'), true);
    assert.equal(sameOrigin('https://a.example.', 'https://a.example'), true);
    assert.equal(sameOrigin('https://a.example', 'http://a.example'), false);
    assert.equal(sameOrigin('https://a.example:8443', 'http://a.example:8443'), false);
    assert.equal(sameOrigin('https://a.example', 'https://a.example:8443'), false);
    assert.equal(sameOrigin('https://a.example', 'https://b.a.example'), false);
    assert.equal(sameOrigin('not a url', 'not a url'), false);
  });
});

describe('tokenSource: which token goes with a request', () => {
  const gatewayOrigin = 'http://127.0.0.1:4000';
  const approvedOrigin = 'https://agents.example.com:8443';

  it('the gateway origin, however spelled, gets the gateway token', () => {
    for (const o of [
      'http://127.0.0.1:4000',
      'HTTP://127.0.0.1:4000',
      'http://2130706433:4000',
      'http://127.0.0.1.:4000',
    ]) {
      assert.deepEqual(tokenSource(o, { gatewayOrigin, approvedOrigin }), { kind: 'gateway' }, o);
    }
  });

  it('the approved origin gets the token stored for exactly that origin', () => {
    for (const o of ['https://agents.example.com:8443', 'https://AGENTS.example.com.:8443']) {
      assert.deepEqual(
        tokenSource(o, { gatewayOrigin, approvedOrigin }),
        { kind: 'stored', origin: 'https://agents.example.com:8443' },
        o,
      );
    }
  });

  it('any other origin gets none: other scheme, port, host, or an IP spelling of another port', () => {
    for (const o of [
      'http://agents.example.com:8443',
      'https://agents.example.com',
      'https://agents.example.com:8444',
      'https://evil.example.net:8443',
      'https://agents.example.com.evil.net:8443',
      'http://127.0.0.1:4001',
      'https://127.0.0.1:4000',
      'http://[::ffff:127.0.0.1]:4000',
      'http://localhost:4000',
      'ftp://agents.example.com:8443',
      'garbage',
    ]) {
      assert.deepEqual(tokenSource(o, { gatewayOrigin, approvedOrigin }), { kind: 'none' }, o);
    }
  });

  it('with the card origin known, the gateway token goes only to agents whose card the gateway served', () => {
    assert.deepEqual(tokenSource('http://127.0.0.1:4000', { gatewayOrigin, cardOrigin: 'http://127.0.0.1:4000' }), {
      kind: 'gateway',
    });
    assert.deepEqual(tokenSource('http://127.0.0.1:4000', { gatewayOrigin, cardOrigin: 'HTTP://127.0.0.1:4000/' }), {
      kind: 'gateway',
    });
    for (const cardOrigin of ['https://evil.example.net', 'http://127.0.0.1:4001', 'https://127.0.0.1:4000']) {
      assert.deepEqual(
        tokenSource('http://127.0.0.1:4000', { gatewayOrigin, cardOrigin }),
        { kind: 'none' },
        cardOrigin,
      );
      // A token the user stored for the gateway origin, and approved there, is still theirs to send.
      assert.deepEqual(
        tokenSource('http://127.0.0.1:4000', { gatewayOrigin, cardOrigin, approvedOrigin: gatewayOrigin }),
        { kind: 'stored', origin: gatewayOrigin },
        cardOrigin,
      );
    }
  });

  it('with no scope nothing gets a token', () => {
    assert.deepEqual(tokenSource('https://agents.example.com:8443', {}), { kind: 'none' });
  });

  it('a scope that is not an origin matches nothing', () => {
    assert.deepEqual(tokenSource('https://agents.example.com', { approvedOrigin: 'ftp://agents.example.com' }), {
      kind: 'none',
    });
  });
});

describe('legacyTokenHost: old host-keyed tokens belong to the https origin only', () => {
  it('maps https origins to the host key the token was stored under', () => {
    assert.equal(legacyTokenHost('https://agents.example.com'), 'agents.example.com');
    assert.equal(legacyTokenHost('https://Agents.example.com:443'), 'agents.example.com');
    assert.equal(legacyTokenHost('https://agents.example.com:8443'), 'agents.example.com:8443');
    assert.equal(legacyTokenHost('https://[::1]:8443'), '[::1]:8443');
  });

  it('gives plain http origins none, so an old token never goes out in cleartext', () => {
    for (const o of [
      'http://agents.example.com',
      'http://agents.example.com:443',
      'http://127.0.0.1:4000',
      'ftp://agents.example.com',
    ])
      assert.equal(legacyTokenHost(o), undefined, o);
  });
});
