/**
 * Structured content an agent sends (an A2A data part: a tool call, its arguments, a form) as the
 * timeline keeps and shows it: as data, never as JSON text cut at some length. A value is kept whole
 * while its JSON fits the limit it is given; beyond it only a summary is kept — its type, how many keys
 * or items it has, its size and its first top-level keys — so nothing is ever cut in the middle of a
 * string or an object. The panel renders a kept value as a collapsed tree, the CLI prints one line.
 */

/** A parsed JSON value; its members are read as `unknown` (the panel gets it from a postMessage). */
export type JsonValue = null | boolean | number | string | readonly unknown[] | { readonly [key: string]: unknown };

/** A data part as the timeline holds it: the value whole, or a summary when it was too large to keep. */
export type DataPartView =
  { readonly value: JsonValue; readonly bytes: number } | { readonly summary: DataSummary; readonly bytes: number };

export interface DataSummary {
  readonly type: 'object' | 'array' | 'string' | 'number' | 'boolean' | 'null';
  /** Keys of an object, or items of an array. */
  readonly count: number;
  /** An object's first top-level keys (each bounded), in order. */
  readonly keys: readonly string[];
}

/** Top-level keys a summary names, and the characters of each. */
export const DATA_SUMMARY_KEYS = 50;
const KEY_CHARS = 200;

const utf8 = new TextEncoder();

function typeOf(v: unknown): DataSummary['type'] {
  if (v === null || v === undefined) return 'null';
  if (Array.isArray(v)) return 'array';
  switch (typeof v) {
    case 'string':
      return 'string';
    case 'number':
    case 'bigint':
      return 'number';
    case 'boolean':
      return 'boolean';
    default:
      return 'object';
  }
}

function keyName(k: string): string {
  return k.length <= KEY_CHARS ? k : `${k.slice(0, KEY_CHARS - 1)}…`;
}

/** The summary of a value: its type, size in keys or items, and its first top-level keys. */
export function summarizeData(value: unknown): DataSummary {
  const type = typeOf(value);
  if (type === 'array') return { type, count: (value as unknown[]).length, keys: [] };
  if (type === 'object') {
    const keys = Object.keys(value as object);
    return { type, count: keys.length, keys: keys.slice(0, DATA_SUMMARY_KEYS).map(keyName) };
  }
  return { type, count: 0, keys: [] };
}

/** UTF-8 bytes of a value's JSON. */
export function jsonBytes(json: string): number {
  return utf8.encode(json).length;
}

/**
 * A data part's value as the timeline keeps it: whole when its JSON is at most `maxBytes`, else its
 * summary. A value that is not JSON (a cycle, a BigInt) is summarised too.
 */
export function boundData(value: unknown, maxBytes: number): DataPartView {
  let json: string | undefined;
  try {
    json = JSON.stringify(value ?? null);
  } catch {
    json = undefined;
  }
  if (json === undefined) return { summary: summarizeData(value), bytes: 0 };
  const bytes = jsonBytes(json);
  if (bytes <= maxBytes) return { value: JSON.parse(json) as JsonValue, bytes };
  return { summary: summarizeData(value), bytes };
}

/** A kept value, or undefined when only the summary was kept. */
export function dataValue(d: DataPartView): JsonValue | undefined {
  return 'value' in d ? d.value : undefined;
}

/** A data part reduced to its summary (when a snapshot has no room for its value). */
export function summaryOnly(d: DataPartView): DataPartView {
  return 'summary' in d ? d : { summary: summarizeData(d.value), bytes: d.bytes };
}

/** `812 bytes`, `6.1 KB`, `3.2 MB`. */
export function formatBytes(n: number): string {
  if (n < 1024) return `${n} bytes`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / (1024 * 1024)).toFixed(1)} MB`;
}

/** The summary of a data part, kept whole or not. */
export function dataSummaryOf(d: DataPartView): DataSummary {
  return 'summary' in d ? d.summary : summarizeData(d.value);
}

/**
 * One line for a data part: `{request, status, confirmationDetails, tool} (4 keys, 6.1 KB)`, `[12 items]
 * (1.2 KB)`, or the scalar's type. Keys are the agent's words: callers that print it make it safe for
 * their output.
 */
export function dataSummaryLine(d: DataPartView): string {
  const s = dataSummaryOf(d);
  const size = formatBytes(d.bytes);
  switch (s.type) {
    case 'object': {
      const more = s.count > s.keys.length ? ', …' : '';
      return `{${s.keys.join(', ')}${more}} (${s.count} ${s.count === 1 ? 'key' : 'keys'}, ${size})`;
    }
    case 'array':
      return `[${s.count} ${s.count === 1 ? 'item' : 'items'}] (${size})`;
    default:
      return `${s.type} (${size})`;
  }
}

/** A data part as something the panel can be sent: anything malformed becomes a summary of nothing. */
export function isDataPartView(v: unknown): v is DataPartView {
  if (typeof v !== 'object' || v === null) return false;
  const r = v as { value?: unknown; summary?: unknown; bytes?: unknown };
  if (typeof r.bytes !== 'number') return false;
  if ('value' in r) return true;
  const s = r.summary as { type?: unknown; count?: unknown; keys?: unknown } | undefined;
  return (
    typeof s === 'object' &&
    s !== null &&
    typeof s.type === 'string' &&
    typeof s.count === 'number' &&
    Array.isArray(s.keys) &&
    s.keys.every((k) => typeof k === 'string')
  );
}
