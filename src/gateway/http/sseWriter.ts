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

export interface SseOptions<T> {
  readonly res: Response;
  /** Batches of events; each batch is written to the socket at once. */
  readonly items: AsyncIterator<readonly T[], void, undefined>;
  /** An event's seq, written as `id:`; undefined writes no id line. */
  readonly idOf: (item: T) => number | undefined;
  /** An event's `data`: one line of JSON (no raw newlines: JSON.stringify escapes them). */
  readonly dataOf: (item: T) => string;
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
  /** Writes `chunk`; returns a promise only when the socket is full (wait for it to drain). */
  const write = (chunk: string): Promise<void> | undefined => {
    if (res.write(chunk) || abort.signal.aborted) return undefined;
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
    let chunk = '';
    outer: while (!r.done && !abort.signal.aborted) {
      for (const item of r.value) {
        const id = idOf(item);
        const data = dataOf(item);
        if (data.length > max / 4 && Buffer.byteLength(data) > max) {
          if (chunk) await write(chunk);
          chunk = '';
          await write(
            `event: error\ndata: ${o.errorData(new Error(`event ${id ?? ''} is ${Buffer.byteLength(data)} bytes, over the ${max}-byte limit for one stream event; get the task with GetTask instead`))}\n\n`,
          );
          break outer;
        }
        chunk += id === undefined ? `data: ${data}\n\n` : `id: ${id}\ndata: ${data}\n\n`;
      }
      // Most writes fit in the socket's buffer: no promise for them.
      const full = write(chunk);
      if (full) await full;
      chunk = '';
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
