import * as assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  canonicalize,
  jcsDigest,
  JcsError,
  parseStrictJson,
  sha256,
  StrictJsonError,
  toHex,
} from '../../../src/core/jcs';

function fromBits(hex: string): number {
  const view = new DataView(new ArrayBuffer(8));
  view.setBigUint64(0, BigInt(`0x${hex}`));
  return view.getFloat64(0);
}

describe('RFC 8785 canonicalisation', () => {
  it('serialises numbers as RFC 8785 Appendix B lists them', () => {
    const cases: [string, string][] = [
      ['0000000000000000', '0'],
      ['8000000000000000', '0'],
      ['0000000000000001', '5e-324'],
      ['8000000000000001', '-5e-324'],
      ['7fefffffffffffff', '1.7976931348623157e+308'],
      ['ffefffffffffffff', '-1.7976931348623157e+308'],
      ['4340000000000000', '9007199254740992'],
      ['c340000000000000', '-9007199254740992'],
      ['4430000000000000', '295147905179352830000'],
      ['44b52d02c7e14af5', '9.999999999999997e+22'],
      ['44b52d02c7e14af6', '1e+23'],
      ['44b52d02c7e14af7', '1.0000000000000001e+23'],
      ['444b1ae4d6e2ef4e', '999999999999999700000'],
      ['444b1ae4d6e2ef4f', '999999999999999900000'],
      ['444b1ae4d6e2ef50', '1e+21'],
      ['3eb0c6f7a0b5ed8c', '9.999999999999997e-7'],
      ['3eb0c6f7a0b5ed8d', '0.000001'],
      ['41b3de4355555553', '333333333.3333332'],
      ['41b3de4355555554', '333333333.33333325'],
      ['41b3de4355555555', '333333333.3333333'],
      ['41b3de4355555556', '333333333.3333334'],
      ['41b3de4355555557', '333333333.33333343'],
      ['becbf647612f3696', '-0.0000033333333333333333'],
      ['43143ff3c1cb0959', '1424953923781206.2'],
    ];
    for (const [bits, expected] of cases) assert.equal(canonicalize(fromBits(bits)), expected, bits);
    for (const bits of ['7fffffffffffffff', '7ff0000000000000', 'fff0000000000000']) {
      assert.throws(() => canonicalize(fromBits(bits)), JcsError, bits);
    }
  });

  it('reproduces the RFC 8785 §3.2.2 example (numbers, string escaping, literals)', () => {
    const input = String.raw`{
      "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
      "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
      "literals": [null, true, false]
    }`;
    assert.equal(
      canonicalize(JSON.parse(input)),
      String.raw`{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`,
    );
  });

  it('sorts member names by UTF-16 code units (RFC 8785 §3.2.3 example)', () => {
    const input = String.raw`{
      "\u20ac": "Euro Sign", "\r": "Carriage Return", "\ufb33": "Hebrew Letter Dalet With Dagesh",
      "1": "One", "\ud83d\ude00": "Emoji: Grinning Face", "\u0080": "Control",
      "\u00f6": "Latin Small Letter O With Diaeresis"
    }`;
    // Read the order from the text: Object.keys would list the integer-like "1" first.
    const out = canonicalize(JSON.parse(input));
    const order = ['Carriage Return', 'One', 'Control', 'Latin Small', 'Euro Sign', 'Emoji', 'Hebrew'].map((v) =>
      out.indexOf(v),
    );
    assert.deepEqual(
      [...order].sort((a, b) => a - b),
      order,
    );
    assert.ok(!order.includes(-1));
    // U+1F600 sorts by its high surrogate (0xD83D), before U+FB33; code-point order would put it last.
    assert.ok(out.startsWith('{"\\r":"Carriage Return","1":"One","\u0080":"Control"'));
  });

  it('keeps empty fields (unlike the SDK canonicalizeAgentCard) and nests sorting', () => {
    assert.equal(
      canonicalize({ b: [], a: '', c: {}, d: { z: 1, y: [{ b: 2, a: 1 }] } }),
      '{"a":"","b":[],"c":{},"d":{"y":[{"a":1,"b":2}],"z":1}}',
    );
    assert.equal(canonicalize({ a: undefined, b: 1 }), '{"b":1}');
  });

  it('refuses what I-JSON cannot carry, naming where', () => {
    assert.throws(
      () => canonicalize({ a: ['x', '\ud800'] }),
      (e: unknown) => e instanceof JcsError && e.path === 'a[1]',
    );
    assert.throws(() => canonicalize({ a: 1n }), JcsError);
    assert.throws(() => canonicalize({ a: new Date(0) }), JcsError);
    assert.throws(() => canonicalize([undefined]), JcsError);
  });

  it('is a fixed point and agrees with JSON for any JSON value (property)', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        const c = canonicalize(v);
        assert.deepEqual(JSON.parse(c), JSON.parse(JSON.stringify(v)));
        assert.equal(canonicalize(JSON.parse(c)), c);
      }),
    );
  });
});

describe('strict JSON parse', () => {
  it('parses what JSON.parse parses', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.boolean(), (v, pretty) => {
        const text = JSON.stringify(v, null, pretty ? 2 : undefined);
        assert.deepEqual(parseStrictJson(text, { maxDepth: 1000 }), JSON.parse(text));
      }),
    );
  });

  it('refuses duplicate member names, after unescaping, naming the path', () => {
    const cases: [string, string][] = [
      ['{"name":"a","name":"b"}', 'name'],
      ['{"a":{"x":1,"y":2,"x":3}}', 'a.x'],
      ['{"skills":[{"id":"1"},{"id":"2","\\u0069d":"3"}]}', 'skills[1].id'],
      ['{"a b":1,"a b":2}', '["a b"]'],
    ];
    for (const [text, path] of cases) {
      assert.throws(
        () => parseStrictJson(text),
        (e: unknown) => e instanceof StrictJsonError && e.code === 'duplicate-key' && e.path === path,
        text,
      );
    }
    // The same name in sibling objects is fine.
    assert.deepEqual(parseStrictJson('[{"a":1},{"a":2}]'), [{ a: 1 }, { a: 2 }]);
  });

  it('refuses malformed JSON with a syntax error and deep nesting with too-deep', () => {
    for (const text of [
      '',
      '{',
      '{"a":1,}',
      '[1,]',
      '01',
      '{"a" 1}',
      '"\u0001"',
      '\ufeff{}',
      '{} x',
      'NaN',
      '[-]',
      '"\\x"',
    ]) {
      assert.throws(
        () => parseStrictJson(text),
        (e: unknown) => e instanceof StrictJsonError && e.code === 'syntax',
        JSON.stringify(text),
      );
    }
    assert.throws(
      () => parseStrictJson('['.repeat(65) + ']'.repeat(65)),
      (e: unknown) => e instanceof StrictJsonError && e.code === 'too-deep',
    );
    assert.deepEqual(parseStrictJson('['.repeat(64) + ']'.repeat(64)) !== undefined, true);
  });

  it('never throws anything but StrictJsonError on arbitrary text (property)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (text) => {
        try {
          parseStrictJson(text);
        } catch (e) {
          assert.ok(e instanceof StrictJsonError, String(e));
        }
      }),
    );
  });
});

describe('pure SHA-256', () => {
  it('matches the FIPS 180-4 vectors and node:crypto on any input', () => {
    assert.equal(toHex(sha256('')), 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    assert.equal(toHex(sha256('abc')), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    assert.equal(
      toHex(sha256('abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq')),
      '248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1',
    );
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => {
        assert.equal(toHex(sha256(bytes)), createHash('sha256').update(bytes).digest('hex'));
      }),
    );
    assert.equal(jcsDigest({ b: 1, a: 'é' }), `sha256:${createHash('sha256').update('{"a":"é","b":1}').digest('hex')}`);
  });
});
