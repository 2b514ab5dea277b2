/**
 * Server-sent events with the replay profile's `id: <seq>` lines (the SDK's writer has none), the
 * SDK's wire JSON in `data:`, backpressure, a keep-alive comment, a stop when the client goes away, and
 * a clear error event instead of an event no client would accept (the SDK client refuses > 4 MiB).
 */
import type { Response } from 'express';
import { SSE_HEADERS } from '@a2a-js/sdk';

/** The SDK client's default limit for one event's data. */
export const MAX_SSE_EVENT_BYTES = 4 * 1024 * 1024;
const KEEPALIVE_MS = 15_000;

/**
 * An event's `data`: one line of JSON as text, or in parts (a large event's UTF-8 bytes with the text
 * around them), which are written as they are, not joined into one string first.
 */
export type SseData = string | readonly (string | Uint8Array)[];

function byteSize(data: SseData): number {
  if (typeof data === 'string') return Buffer.byteLength(data);
  let n = 0;
  for (const p of data) n += typeof p === 'string' ? Buffer.byteLength(p) : p.byteLength;
  return n;
}

export interface SseOptions<T> {
  readonly res: Response;
  /** Batches of events; each batch is written to the socket at once. */
  readonly items: AsyncIterator<readonly T[], void, undefined>;
  /** An event's seq, written as `id:`; undefined writes no id line. */
  readonly idOf: (item: T) => number | undefined;
  /** An event's `data`: one line of JSON (no raw newlines: JSON.stringify escapes them). */
  readonly dataOf: (item: T) => SseData;
  /** Fires when the client disconnects; the producer must stop on it. */
  readonly abort: AbortController;
  /** The `data` of the error event sent when the stream fails after it started. */
  readonly errorData: (err: unknown) => string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly maxEventBytes?: number;
}

/**
 * Awaits the first item before sending headers, so an error that happens before any event (unknown
 * task, bad request) is thrown to the caller and answered as a normal error response.
 */
export async function writeSse<T>(o: SseOptions<T>): Promise<void> {
  const { res, items, abort, idOf, dataOf } = o;
  const max = o.maxEventBytes ?? MAX_SSE_EVENT_BYTES;
  const onClose = (): void => {
    if (!res.writableFinished) abort.abort();
  };
  res.on('close', onClose);
  let first: IteratorResult<readonly T[], void>;
  try {
    first = await items.next();
  } catch (e) {
    res.off('close', onClose);
    throw e;
  }
  for (const [k, v] of Object.entries(SSE_HEADERS)) res.setHeader(k, v);
  for (const [k, v] of Object.entries(o.headers ?? {})) res.setHeader(k, v);
  res.status(200);
  res.flushHeaders();
  const keepalive = setInterval(() => {
    if (!res.writableEnded) res.write(': keep-alive\n\n');
  }, KEEPALIVE_MS);
  keepalive.unref();
  /**
   * Writes `chunk` and then `parts` (one write when there are none, as for most batches); returns a
   * promise only when the socket is full (wait for it to drain).
   */
  const write = (chunk: string, parts: readonly (string | Uint8Array)[] = []): Promise<void> | undefined => {
    let room: boolean;
    if (!parts.length) room = res.write(chunk);
    else {
      // Corked: the pieces leave in one write to the socket.
      res.cork();
      room = chunk ? res.write(chunk) : true;
      for (const p of parts) room = res.write(p) && room;
      res.uncork();
    }
    if (room || abort.signal.aborted) return undefined;
    // Backpressure: wait for the socket to drain, or for the client to go away.
    return new Promise<void>((resolve) => {
      const done = (): void => {
        res.off('drain', done);
        abort.signal.removeEventListener('abort', done);
        resolve();
      };
      res.on('drain', done);
      abort.signal.addEventListener('abort', done);
    });
  };
  try {
    let r = first;
    /** What the batch writes: text (`chunk`), or text then `parts` once an event in parts came. */
    let chunk = '';
    let parts: (string | Uint8Array)[] = [];
    const text = (s: string): void => {
      const last = parts.length - 1;
      if (last < 0) chunk += s;
      else if (typeof parts[last] === 'string') parts[last] += s;
      else parts.push(s);
    };
    outer: while (!r.done && !abort.signal.aborted) {
      for (const item of r.value) {
        const id = idOf(item);
        const data = dataOf(item);
        const size = typeof data === 'string' && data.length <= max / 4 ? data.length : byteSize(data);
        if (size > max) {
          if (chunk || parts.length) await write(chunk, parts);
          chunk = '';
          parts = [];
          await write(
            `event: error\ndata: ${o.errorData(new Error(`event ${id ?? ''} is ${size} bytes, over the ${max}-byte limit for one stream event; get the task with GetTask instead`))}\n\n`,
          );
          break outer;
        }
        text(id === undefined ? 'data: ' : `id: ${id}\ndata: `);
        if (typeof data === 'string') text(data);
        else {
          for (const p of data) {
            if (typeof p === 'string') text(p);
            else parts.push(p);
          }
        }
        text('\n\n');
      }
      // Most writes fit in the socket's buffer: no promise for them.
      const full = write(chunk, parts);
      if (full) await full;
      chunk = '';
      parts = [];
      r = await items.next();
    }
  } catch (e) {
    if (!res.writableEnded && !abort.signal.aborted) res.write(`event: error\ndata: ${o.errorData(e)}\n\n`);
  } finally {
    clearInterval(keepalive);
    res.off('close', onClose);
    await items.return?.().catch(() => undefined);
    if (!res.writableEnded) res.end();
  }
}
