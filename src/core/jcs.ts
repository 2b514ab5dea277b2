/**
 * JSON for signatures and digests: RFC 8785 canonicalisation (JCS), a strict parse that refuses
 * duplicate object keys, and a pure SHA-256 so digests need no Node built-in.
 *
 * Why our own JCS: the npm `canonicalize@5` needs Node 22, and the A2A SDK's `canonicalizeAgentCard`
 * drops empty fields before canonicalising (a2a-js#663, A2A#2249), which is not the spec's form. This
 * one keeps every field: `{"a": "", "b": []}` stays as it is.
 */

/** Thrown for values JCS cannot represent (RFC 8785 §3.1: I-JSON only). */
export class JcsError extends Error {
  constructor(
    message: string,
    /** Where in the value, e.g. `skills[0].name`. */
    readonly path: string,
  ) {
    super(path ? `${message} at ${path}` : message);
    this.name = 'JcsError';
  }
}

/**
 * The RFC 8785 form of a JSON value. Object members are sorted by their names' UTF-16 code units;
 * numbers are written as ECMAScript writes them (RFC 8785 §3.2.2.3 is exactly `Number.prototype.toString`);
 * strings are escaped as `JSON.stringify` escapes them (§3.2.2.2 matches it for well-formed strings).
 * Refused: non-finite numbers, lone surrogates, bigint, functions, symbols, `undefined` in arrays and
 * objects that are not plain (a `Date`, a `Map`). An `undefined` member is left out, as JSON does.
 */
export function canonicalize(value: unknown): string {
  const out: string[] = [];
  write(value, '', out);
  return out.join('');
}

function write(value: unknown, path: string, out: string[]): void {
  if (value === null) {
    out.push('null');
    return;
  }
  switch (typeof value) {
    case 'boolean':
      out.push(value ? 'true' : 'false');
      return;
    case 'number':
      if (!Number.isFinite(value)) throw new JcsError(`JCS cannot represent the number ${String(value)}`, path);
      // JSON.stringify writes -0 as "0", which §3.2.2.3 requires; otherwise it is Number#toString.
      out.push(JSON.stringify(value));
      return;
    case 'string':
      out.push(quote(value, path));
      return;
    case 'object':
      break;
    default:
      throw new JcsError(`JCS cannot represent a value of type ${typeof value}`, path);
  }
  if (Array.isArray(value)) {
    out.push('[');
    value.forEach((item: unknown, i) => {
      if (i > 0) out.push(',');
      if (item === undefined) throw new JcsError('JCS cannot represent undefined', `${path}[${i}]`);
      write(item, `${path}[${i}]`, out);
    });
    out.push(']');
    return;
  }
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) throw new JcsError('JCS can only represent plain objects', path);
  const record = value as Record<string, unknown>;
  // Default sort compares UTF-16 code units, which is the order RFC 8785 §3.2.3 asks for.
  const keys = Object.keys(record)
    .filter((k) => record[k] !== undefined)
    .sort();
  out.push('{');
  keys.forEach((key, i) => {
    if (i > 0) out.push(',');
    const childPath = memberPath(path, key);
    out.push(quote(key, childPath), ':');
    write(record[key], childPath, out);
  });
  out.push('}');
}

function quote(s: string, path: string): string {
  const lone = loneSurrogateAt(s);
  if (lone >= 0) throw new JcsError(`JCS cannot represent a lone surrogate (index ${lone})`, path);
  return JSON.stringify(s);
}

const ANY_SURROGATE = /[\ud800-\udfff]/;

/** Index of the first unpaired UTF-16 surrogate in `s`, or -1. */
export function loneSurrogateAt(s: string): number {
  // Most strings (a whole patch, say) have no surrogate at all: one native scan answers for them.
  if (!ANY_SURROGATE.test(s)) return -1;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const next = i + 1 < s.length ? s.charCodeAt(i + 1) : 0;
      if (next >= 0xdc00 && next <= 0xdfff) i++;
      else return i;
    } else if (c >= 0xdc00 && c <= 0xdfff) return i;
  }
  return -1;
}

/** `a.b`, `a["odd key"]`, `[0]` — the path notation every error in Baton's card handling uses. */
export function memberPath(parent: string, key: string): string {
  if (/^[A-Za-z_$][A-Za-z0-9_$-]*$/.test(key)) return parent ? `${parent}.${key}` : key;
  return `${parent}[${JSON.stringify(key)}]`;
}

// ---------------------------------------------------------------------------------------------------
// Strict parse

export type StrictJsonErrorCode = 'syntax' | 'duplicate-key' | 'too-deep';

export class StrictJsonError extends Error {
  constructor(
    readonly code: StrictJsonErrorCode,
    message: string,
    /** Where in the document, e.g. `capabilities.streaming`. Empty for the top level. */
    readonly path: string,
    /** Character offset in the text. */
    readonly offset: number,
  ) {
    super(message);
    this.name = 'StrictJsonError';
  }
}

export interface StrictJsonOptions {
  /** Deepest nesting of objects and arrays accepted (default 64). */
  readonly maxDepth?: number;
}

interface Frame {
  readonly kind: 'object' | 'array';
  readonly path: string;
  readonly keys: Set<string>;
  index: number;
}

/**
 * `JSON.parse`, but refusing what `JSON.parse` silently accepts: a duplicate member name (two parsers
 * can disagree on which value wins, so a signature or a review could cover a different card than the
 * one used) and nesting deeper than `maxDepth`. Names are compared after unescaping (`"a"` and
 * `"\u0061"` are the same name). A leading byte-order mark is refused, as RFC 8259 allows.
 */
export function parseStrictJson(text: string, options: StrictJsonOptions = {}): unknown {
  const maxDepth = options.maxDepth ?? 64;
  const stack: Frame[] = [];
  let i = 0;
  const n = text.length;
  const fail = (code: StrictJsonErrorCode, message: string, path: string): never => {
    throw new StrictJsonError(code, message, path, i);
  };
  const currentPath = (): string => {
    const top = stack[stack.length - 1];
    return top ? top.path : '';
  };
  const skipWs = (): void => {
    while (i < n) {
      const c = text.charCodeAt(i);
      if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) i++;
      else break;
    }
  };
  const readString = (): string => {
    const start = i;
    i++; // opening quote
    while (i < n) {
      const c = text.charCodeAt(i);
      if (c === 0x22) {
        i++;
        // The slice is a valid JSON string token here, so JSON.parse decodes it exactly.
        return JSON.parse(text.slice(start, i)) as string;
      }
      if (c === 0x5c) {
        const e = text[i + 1];
        if (e === 'u') {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6)))
            fail('syntax', 'Invalid \\u escape in a string', currentPath());
          i += 6;
        } else if (e !== undefined && '"\\/bfnrt'.includes(e)) i += 2;
        else fail('syntax', 'Invalid escape in a string', currentPath());
      } else if (c < 0x20) fail('syntax', 'Unescaped control character in a string', currentPath());
      else i++;
    }
    return fail('syntax', 'Unterminated string', currentPath());
  };
  const numberRe = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
  // Reads one scalar, or opens a container (pushing a frame). Returns nothing: the value is
  // produced by JSON.parse at the end, once the text is known to be valid and free of duplicates.
  const readValue = (path: string): void => {
    skipWs();
    if (i >= n) fail('syntax', 'Unexpected end of JSON', path);
    const ch = text[i];
    if (ch === '{' || ch === '[') {
      if (stack.length >= maxDepth) fail('too-deep', `JSON nested deeper than ${maxDepth} levels`, path);
      stack.push({ kind: ch === '{' ? 'object' : 'array', path, keys: new Set(), index: 0 });
      i++;
      return;
    }
    if (ch === '"') {
      readString();
      return;
    }
    for (const lit of ['true', 'false', 'null']) {
      if (text.startsWith(lit, i)) {
        i += lit.length;
        return;
      }
    }
    numberRe.lastIndex = i;
    const m = numberRe.exec(text);
    if (!m) fail('syntax', `Unexpected character ${JSON.stringify(ch)}`, path);
    else i += m[0].length;
  };

  readValue('');
  while (stack.length > 0) {
    const top = stack[stack.length - 1];
    skipWs();
    const closer = top.kind === 'object' ? '}' : ']';
    if (text[i] === closer && top.index === 0) {
      i++;
      stack.pop();
      continue;
    }
    if (top.index > 0) {
      if (text[i] === closer) {
        i++;
        stack.pop();
        continue;
      }
      if (text[i] !== ',') fail('syntax', `Expected ',' or '${closer}'`, top.path);
      i++;
      skipWs();
    }
    const index = top.index++;
    if (top.kind === 'array') {
      readValue(`${top.path}[${index}]`);
      continue;
    }
    if (text[i] !== '"') fail('syntax', 'Expected a member name', top.path);
    const key = readString();
    const path = memberPath(top.path, key);
    if (top.keys.has(key)) fail('duplicate-key', `Duplicate member name ${JSON.stringify(key)}`, path);
    top.keys.add(key);
    skipWs();
    if (text[i] !== ':') fail('syntax', "Expected ':'", path);
    i++;
    readValue(path);
  }
  skipWs();
  if (i < n) fail('syntax', 'Unexpected text after the JSON value', '');
  return JSON.parse(text) as unknown;
}

// ---------------------------------------------------------------------------------------------------
// SHA-256 (FIPS 180-4), pure so that src/core stays free of Node built-ins. Cards are capped at
// 256 KiB, so speed is not a concern here.

const K = new Uint32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98,
  0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
  0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8,
  0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
  0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
  0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
  0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
  0xc67178f2,
]);

/** SHA-256 of bytes, or of a string's UTF-8 encoding. */
export function sha256(input: Uint8Array | string): Uint8Array {
  const data = typeof input === 'string' ? new TextEncoder().encode(input) : input;
  const bitLen = data.length * 8;
  const padded = new Uint8Array(Math.ceil((data.length + 9) / 64) * 64);
  padded.set(data);
  padded[data.length] = 0x80;
  const view = new DataView(padded.buffer);
  view.setUint32(padded.length - 8, Math.floor(bitLen / 0x100000000));
  view.setUint32(padded.length - 4, bitLen >>> 0);
  const h = new Uint32Array([
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
  ]);
  const w = new Uint32Array(64);
  for (let off = 0; off < padded.length; off += 64) {
    for (let t = 0; t < 16; t++) w[t] = view.getUint32(off + t * 4);
    for (let t = 16; t < 64; t++) {
      const x = w[t - 15];
      const y = w[t - 2];
      const s0 = ((x >>> 7) | (x << 25)) ^ ((x >>> 18) | (x << 14)) ^ (x >>> 3);
      const s1 = ((y >>> 17) | (y << 15)) ^ ((y >>> 19) | (y << 13)) ^ (y >>> 10);
      w[t] = (w[t - 16] + s0 + w[t - 7] + s1) >>> 0;
    }
    let [a, b, c, d, e, f, g, hh] = h;
    for (let t = 0; t < 64; t++) {
      const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
      const ch = (e & f) ^ (~e & g);
      const t1 = (hh + S1 + ch + K[t] + w[t]) >>> 0;
      const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
      const maj = (a & b) ^ (a & c) ^ (b & c);
      const t2 = (S0 + maj) >>> 0;
      hh = g;
      g = f;
      f = e;
      e = (d + t1) >>> 0;
      d = c;
      c = b;
      b = a;
      a = (t1 + t2) >>> 0;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
    h[5] += f;
    h[6] += g;
    h[7] += hh;
  }
  const out = new Uint8Array(32);
  const outView = new DataView(out.buffer);
  for (let t = 0; t < 8; t++) outView.setUint32(t * 4, h[t]);
  return out;
}

export function toHex(bytes: Uint8Array): string {
  let s = '';
  for (const b of bytes) s += b.toString(16).padStart(2, '0');
  return s;
}

/** `sha256:<hex>` of the RFC 8785 form of a JSON value: the digest format used across Baton. */
export function jcsDigest(value: unknown): string {
  return `sha256:${toHex(sha256(canonicalize(value)))}`;
}
