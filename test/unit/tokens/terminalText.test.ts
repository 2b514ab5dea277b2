import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { CONTINUATION_INDENT, terminalBlock, terminalJson, terminalLine } from '../../../src/core/terminalText';

/** Anything a terminal acts on, other than a plain newline. */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const ACTIVE = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

const CASES: readonly (readonly [string, string, string])[] = [
  ['screen clear and cursor home (CSI)', '\x1b[2J\x1b[H', '\\x1b[2J\\x1b[H'],
  ['window title (OSC 0, BEL)', '\x1b]0;pwned\x07', '\\x1b]0;pwned\\x07'],
  [
    'hyperlink (OSC 8, ST)',
    '\x1b]8;;https://evil.example/\x1b\\here\x1b]8;;\x1b\\',
    '\\x1b]8;;https://evil.example/\\x1b\\here\\x1b]8;;\\x1b\\',
  ],
  ['clipboard write (OSC 52)', '\x1b]52;c;cm0gLXJmIH4=\x07', '\\x1b]52;c;cm0gLXJmIH4=\\x07'],
  ['device control (DCS)', '\x1bP+q544e\x1b\\', '\\x1bP+q544e\\x1b\\'],
  ['8-bit C1 CSI, OSC and ST', '\u009b2J\u009d0;t\u009c', '\\x9b2J\\x9d0;t\\x9c'],
  ['carriage-return redraw', 'failed\rcompleted', 'failed\\x0dcompleted'],
  ['backspaces', 'failed\b\b\b\b\b\bcompleted', 'failed\\x08\\x08\\x08\\x08\\x08\\x08completed'],
  ['DEL and NUL', 'a\x7fb\x00c', 'a\\x7fb\\x00c'],
  [
    'bidi override and isolates',
    'report\u202eexe.txt\u2066x\u2069\u2067\u2068\u200f\u061c',
    'report\\u202eexe.txt\\u2066x\\u2069\\u2067\\u2068\\u200f\\u061c',
  ],
  ['Unicode line separators', 'a\u2028b\u2029c\u0085d', 'a\\u2028b\\u2029c\\x85d'],
  ['tab', 'a\tb', 'a b'],
];

describe('terminalLine: one line, nothing a terminal acts on', () => {
  for (const [label, input, want] of CASES) {
    it(label, () => {
      assert.equal(terminalLine(input), want);
      assert.doesNotMatch(terminalLine(input), ACTIVE);
    });
  }

  it('newlines are escaped too: a single-line field stays one line', () => {
    assert.equal(terminalLine('ok\ncompleted\r\n'), 'ok\\x0acompleted\\x0d\\x0a');
  });

  it('leaves ordinary text, including non-ASCII, alone', () => {
    for (const s of ['Formatter (Prettier) — formats code', 'naïve 日本語 emoji 🎉', 'C:\\path\\x1b is just text', ''])
      assert.equal(terminalLine(s), s);
  });
});

describe('terminalBlock: multi-line agent text under a CLI line', () => {
  it('keeps newlines and indents every later line, so none can pass for a line of the CLI', () => {
    assert.equal(
      terminalBlock('first\ncompleted\n  [completed] done\nbaton: ok'),
      `first\n${CONTINUATION_INDENT}completed\n${CONTINUATION_INDENT}  [completed] done\n${CONTINUATION_INDENT}baton: ok`,
    );
    assert.equal(terminalBlock('a\r\nb', '> '), 'a\n> b');
  });

  it('a lone CR is escaped, trailing newlines are dropped', () => {
    assert.equal(terminalBlock('failed\rcompleted\n\n'), 'failed\\x0dcompleted');
  });

  for (const [label, input, want] of CASES) {
    it(`escapes ${label} on every line`, () => {
      const out = terminalBlock(`x${input}\ny${input}`);
      assert.equal(out, `x${want}\n${CONTINUATION_INDENT}y${want}`);
      assert.doesNotMatch(out, ACTIVE);
    });
  }
});

describe('terminalJson: exact JSON a terminal cannot act on', () => {
  for (const [label, input] of CASES) {
    it(`${label}: parses back to the same value`, () => {
      const value = { name: input, nested: [input, { deeper: `${input}\n` }], n: 1 };
      const text = terminalJson(value);
      assert.doesNotMatch(text, ACTIVE);
      assert.doesNotMatch(text, /\n/);
      assert.deepEqual(JSON.parse(text), value);
    });
  }

  it('is JSON.stringify where there is nothing to escape', () => {
    const v = { a: 'plain', b: [1, true, null], c: 'naïve 日本語' };
    assert.equal(terminalJson(v), JSON.stringify(v));
  });
});
