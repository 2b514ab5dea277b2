/**
 * The proxy's streaming calls to an A2A 1.0 remote (JSON-RPC or HTTP+JSON), read as wire JSON.
 *
 * The SDK's client turns every event into SDK objects (and the gateway would turn them back into wire
 * JSON to store and send them): for a relay that is most of its work. Here the SSE stream is read from
 * a plain Node response and each event's JSON is handed on as parsed, checked by `toWireEvent`. Errors
 * come back as the SDK's own error classes (`fromJsonRpcErrorResponse`, `fromRestErrorBody`), so
 * callers see the same errors as through the SDK's client. 0.3 remotes keep going through the SDK's
 * client (it translates 0.3 to 1.0).
 */
import { request as httpRequest } from 'node:http';
import type { Agent as HttpAgent, IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { A2A_VERSION_HEADER, HTTP_EXTENSION_HEADER, SendMessageRequest } from '@a2a-js/sdk';
import { fromJsonRpcErrorResponse, fromRestErrorBody } from '@a2a-js/sdk/errors';
import { isRecord } from '../core/isRecord';
import { sleep } from '../core/sleep';
import { TRANSIENT_STATUSES, TransientHttpError, transientMessage, transientStep } from '../node/a2a/transientAnswers';
import type { TransientPolicy, TransientReport } from '../node/a2a/transientAnswers';
import type { WireEvent } from './eventLog';
import { toWireEvent } from './eventLog';
import { BYTES_FROM_CHARS } from './store/gatewayStore';
import { noteUnavailable } from './unavailableAnswers';

/** The SDK client's default limit for one SSE event. */
const MAX_EVENT_BYTES = 4 * 1024 * 1024;
const MAX_ERROR_BODY = 64 * 1024;

export interface RemoteEndpoint {
  readonly url: string;
  readonly binding: 'JSONRPC' | 'HTTP+JSON';
  /** The remote's credentials (and nothing from the caller). */
  readonly headers: () => Record<string, string>;
  /** The remote's tenant ('' or unset: none): the path prefix over HTTP+JSON, `tenant` over JSON-RPC. */
  readonly tenant?: () => string;
  readonly agents?: { readonly http?: HttpAgent; readonly https?: HttpAgent };
  /**
   * How a call the remote (or a balancer in front of it) answers 429/502/503/504 is opened again, as
   * the client's `transientRetryFetch` does it (src/node/a2a/transientAnswers.ts); none: not at all.
   */
  readonly transient?: {
    readonly policy: TransientPolicy;
    /** The remote honours `messageId` idempotency: a send may be repeated after a 502/504 too. */
    readonly idempotentSend: () => boolean;
    readonly report: (r: TransientReport) => void;
  };
}

/**
 * One event from the remote: its wire JSON, and its JSON text as received when that text is exactly
 * it, on one line: as text, or as UTF-8 bytes from `BYTES_FROM_CHARS` on (see `EventRow.body`).
 */
export interface RemoteEvent {
  readonly ev: WireEvent;
  readonly raw: string | Uint8Array | undefined;
}

export type RemoteCall =
  | {
      readonly kind: 'send';
      readonly params: SendMessageRequest;
      /** The caller's extensions to activate on the remote (its A2A-Extensions header). */
      readonly extensions?: readonly string[];
    }
  | { readonly kind: 'subscribe'; readonly taskId: string };

let rpcIds = 1;

/**
 * How the message of a `RemoteUnavailableError` begins. The HTTP layer answers it with 503 and
 * Retry-After, as it does an unavailable store: the SDK's error mapping keeps the message only, so
 * each one's message is noted (src/gateway/unavailableAnswers.ts).
 */
const REMOTE_UNAVAILABLE = 'the remote agent is temporarily unavailable';

/**
 * A remote agent (or the balancer in front of it) kept answering "not now" (429/502/503/504) until
 * the tries were used up, and no task exists for the request: the caller may send it again later.
 */
export class RemoteUnavailableError extends Error {
  override readonly name = 'RemoteUnavailableError';
  constructor(agent: string, why: string, options?: { readonly cause?: unknown }) {
    super(`${REMOTE_UNAVAILABLE}: ${agent} ${why}; send the request again in a few seconds`, options);
    noteUnavailable(this.message);
  }
}

/** Reads at most `limit` characters of a response body. */
async function readSome(res: IncomingMessage, limit: number): Promise<string> {
  res.setEncoding('utf8');
  let out = '';
  for await (const chunk of res as AsyncIterable<string>) {
    out += chunk;
    if (out.length >= limit) {
      res.destroy();
      break;
    }
  }
  return out.slice(0, limit);
}

function errorFromBody(
  binding: RemoteEndpoint['binding'],
  status: number,
  headers: IncomingMessage['headers'],
  text: string,
  what: string,
): Error {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (isRecord(parsed) && isRecord(parsed.error)) {
    if (binding === 'JSONRPC')
      return fromJsonRpcErrorResponse(parsed as unknown as Parameters<typeof fromJsonRpcErrorResponse>[0]);
    const h: Record<string, string> = {};
    for (const [k, v] of Object.entries(headers)) if (typeof v === 'string') h[k] = v;
    return fromRestErrorBody(parsed.error as Parameters<typeof fromRestErrorBody>[0], {
      statusCode: status,
      headers: h,
    });
  }
  return new Error(`${what}: HTTP ${status}${text ? `: ${text.slice(0, 200)}` : ''}`);
}

/**
 * Opens the call and yields each event as wire JSON. Throws before the first event when the remote
 * refuses (its A2A error), and mid-stream when the stream breaks or carries an error event.
 */
export async function* remoteStream(
  ep: RemoteEndpoint,
  call: RemoteCall,
  signal: AbortSignal,
): AsyncGenerator<WireEvent, void, undefined> {
  for await (const batch of remoteStreamBatches(ep, call, signal)) for (const e of batch) yield e.ev;
}

/** `remoteStream` in batches: the events of each chunk read from the socket (the relay's form). */
export async function* remoteStreamBatches(
  ep: RemoteEndpoint,
  call: RemoteCall,
  signal: AbortSignal,
): AsyncGenerator<readonly RemoteEvent[], void, undefined> {
  const tenant = ep.tenant?.() ?? '';
  // A2A 1.0 over HTTP+JSON: every route also exists under /{tenant}/ (the SDK's client builds it so).
  const base = ep.url.replace(/\/+$/, '') + (tenant ? `/${encodeURIComponent(tenant)}` : '');
  let url: string;
  let body: string | undefined;
  let rpcId: number | undefined;
  if (ep.binding === 'JSONRPC') {
    rpcId = rpcIds++;
    url = ep.url;
    const params =
      call.kind === 'send'
        ? SendMessageRequest.toJSON({ ...call.params, tenant })
        : { id: call.taskId, ...(tenant ? { tenant } : {}) };
    body = JSON.stringify({
      jsonrpc: '2.0',
      id: rpcId,
      method: call.kind === 'send' ? 'SendStreamingMessage' : 'SubscribeToTask',
      params,
    });
  } else if (call.kind === 'send') {
    url = `${base}/message:stream`;
    body = JSON.stringify(SendMessageRequest.toJSON({ ...call.params, tenant }));
  } else {
    url = `${base}/tasks/${encodeURIComponent(call.taskId)}:subscribe`;
  }
  const target = new URL(url);
  const https = target.protocol === 'https:';
  const what = `${call.kind === 'send' ? 'streaming send' : 'subscribe'} to ${target.origin}`;
  const open = (): Promise<IncomingMessage> =>
    new Promise<IncomingMessage>((resolve, reject) => {
      const req = (https ? httpsRequest : httpRequest)(
        target,
        {
          method: 'POST',
          agent: https ? ep.agents?.https : ep.agents?.http,
          signal,
          headers: {
            ...ep.headers(),
            [A2A_VERSION_HEADER]: '1.0',
            ...(call.kind === 'send' && call.extensions?.length
              ? { [HTTP_EXTENSION_HEADER]: call.extensions.join(',') }
              : {}),
            Accept: 'text/event-stream',
            ...(body !== undefined
              ? { 'Content-Type': 'application/json', 'Content-Length': String(Buffer.byteLength(body)) }
              : { 'Content-Length': '0' }),
          },
        },
        resolve,
      );
      req.on('error', reject);
      req.end(body);
    });
  let res = await open();
  let waited = 0;
  for (let attempt = 1; ep.transient && TRANSIENT_STATUSES.has(res.statusCode ?? 0); attempt++) {
    const status = res.statusCode ?? 0;
    const message = transientMessage(await readSome(res, MAX_ERROR_BODY), res.statusMessage ?? '', status);
    const retryAfter = res.headers['retry-after'];
    const step = transientStep(ep.transient.policy, {
      status,
      retryAfter: typeof retryAfter === 'string' ? retryAfter : null,
      attempt,
      waited,
      send: call.kind === 'send',
      idempotentSend: ep.transient.idempotentSend(),
    });
    ep.transient.report({
      kind: 'unavailable',
      answer: {
        status,
        origin: target.origin,
        message,
        attempt,
        ...(step.last ? {} : { retryInMs: step.wait }),
      },
    });
    if (step.last) throw new TransientHttpError(status, message, attempt, step.notRetried);
    await sleep(step.wait, signal);
    signal.throwIfAborted();
    waited += step.wait;
    res = await open();
    if (!TRANSIENT_STATUSES.has(res.statusCode ?? 0)) ep.transient.report({ kind: 'available' });
  }
  const status = res.statusCode ?? 0;
  if (status >= 300 && status < 400) {
    res.resume();
    // Following it would carry the remote's credentials to a URL the operator never pinned.
    throw new Error(
      `${what}: the remote answered with a redirect (HTTP ${status}) to ${String(res.headers.location ?? '?')}; pin the agent's final URL in the gateway config`,
    );
  }
  if (status !== 200 || !String(res.headers['content-type'] ?? '').startsWith('text/event-stream')) {
    throw errorFromBody(
      ep.binding,
      status,
      res.headers,
      await readSome(res, MAX_ERROR_BODY),
      status === 200
        ? `${what}: expected an event stream, got ${String(res.headers['content-type'] ?? 'no content type')}`
        : what,
    );
  }
  yield* readEvents(res, ep.binding, rpcId);
}

/** True when JSON text has no line break in it (it can be stored and sent as one SSE data line). */
function oneLine(text: string): boolean {
  return text.indexOf('\n') < 0 && text.indexOf('\r') < 0;
}

/** An event the remote sent that is JSON but no A2A stream response; `value` is what it sent. */
export class UnreadableEventError extends Error {
  constructor(
    message: string,
    readonly value: unknown,
  ) {
    super(message);
  }
}

/** Batches of events a response has completed that the relay has not taken yet, before the socket is paused. */
const MAX_QUEUED_BATCHES = 16;

/**
 * Parses the SSE stream (one wire event per `data` event), yielding what each chunk completed. An event
 * keeps its text as received when it is a well-formed A2A event on one line: a JSON-RPC result in the
 * SDK's own framing (`{"jsonrpc":"2.0","id":N,"result":…}`) is cut at the known prefix and that text
 * parsed alone, so what is stored and relayed is exactly what was read and checked. Anything else is
 * parsed whole and serialised again.
 *
 * The response is read from its `data` events into a short queue (paused while the relay is behind),
 * not through the stream's async iterator: per event that is one promise where the iterator and a
 * delegating generator made several.
 */
async function* readEvents(
  res: IncomingMessage,
  binding: RemoteEndpoint['binding'],
  rpcId: number | undefined,
): AsyncGenerator<readonly RemoteEvent[], void, undefined> {
  const parser = sseParser(binding, rpcId);
  const queue: RemoteEvent[][] = [];
  let failure: { readonly error: unknown } | undefined;
  let ended = false;
  let wake: (() => void) | undefined;
  const fail = (error: unknown): void => {
    failure ??= { error };
    wake?.();
  };
  res.setEncoding('utf8');
  res.on('data', (chunk: string) => {
    if (failure) return;
    const { events, error } = parser.feed(chunk);
    if (events.length) queue.push(events);
    if (error !== undefined) {
      fail(error);
      res.destroy();
      return;
    }
    if (queue.length >= MAX_QUEUED_BATCHES) res.pause();
    wake?.();
  });
  res.once('end', () => {
    ended = true;
    wake?.();
  });
  res.once('error', fail);
  // A connection cut before the response ended closes it without `end` (and not always with `error`).
  res.once('close', () => {
    ended = true;
    wake?.();
  });
  try {
    for (;;) {
      const batch = queue.shift();
      if (batch) {
        if (queue.length < MAX_QUEUED_BATCHES && res.isPaused()) res.resume();
        yield batch;
        continue;
      }
      // The events before a failure are delivered first, then the failure.
      if (failure) throw failure.error;
      if (ended) break;
      await new Promise<void>((resolve) => (wake = resolve));
      wake = undefined;
    }
    const last = parser.finish();
    if (last.length) yield last;
    if (!res.complete) throw new Error('the remote closed the stream before it ended');
  } finally {
    if (!res.complete || !ended) res.destroy();
  }
}

/** The SSE reading state of one response: `feed` each chunk, `finish` at its end. */
function sseParser(
  binding: RemoteEndpoint['binding'],
  rpcId: number | undefined,
): {
  /** The events `chunk` completed, and the error that stops the stream after them (if any). */
  feed(chunk: string): { events: RemoteEvent[]; error: unknown };
  /** What the stream's end completes (a last event without its blank line); throws if it cannot be read. */
  finish(): RemoteEvent[];
} {
  let buf = '';
  let data = '';
  let event = '';
  const framing = `{"jsonrpc":"2.0","id":${JSON.stringify(rpcId ?? null)},"result":`;
  const asEvent = (result: unknown, text: string | undefined, raw: string): RemoteEvent => {
    const ev = toWireEvent(result);
    if (!ev)
      throw new UnreadableEventError(
        `the remote sent an event that is not an A2A stream response: ${raw.slice(0, 100)}`,
        result,
      );
    if (text === undefined || ev !== result || !oneLine(text)) return { ev, raw: undefined };
    // A patch's text would stay in the heap (with the chunks it was read from) until its commit and
    // every client's write; as bytes it is out of the heap and written as it is.
    return { ev, raw: text.length < BYTES_FROM_CHARS ? text : Buffer.from(text, 'utf8') };
  };
  const toEvent = (raw: string, type: string): RemoteEvent => {
    if (binding === 'JSONRPC' && raw.startsWith(framing) && raw.endsWith('}')) {
      const text = raw.slice(framing.length, -1);
      let result: unknown;
      let parsedAlone = true;
      try {
        result = JSON.parse(text);
      } catch {
        parsedAlone = false; // e.g. more members after "result": read the whole response below
      }
      if (parsedAlone) return asEvent(result, text, raw);
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw);
    } catch {
      throw new Error(`the remote sent an event that is not JSON: ${raw.slice(0, 100)}`);
    }
    if (binding === 'JSONRPC') {
      if (!isRecord(parsed) || parsed.jsonrpc !== '2.0')
        throw new Error(`the remote sent an event that is not a JSON-RPC 2.0 response: ${raw.slice(0, 100)}`);
      if (isRecord(parsed.error))
        throw fromJsonRpcErrorResponse(parsed as unknown as Parameters<typeof fromJsonRpcErrorResponse>[0]);
      if (parsed.id !== rpcId)
        throw new Error(
          `the remote sent an event for JSON-RPC id ${JSON.stringify(parsed.id)}, expected ${String(rpcId)}`,
        );
      return asEvent(parsed.result, undefined, raw);
    }
    if (type === 'error') {
      if (isRecord(parsed) && isRecord(parsed.error))
        throw fromRestErrorBody(parsed.error as Parameters<typeof fromRestErrorBody>[0], {
          statusCode: 200,
          headers: {},
        });
      throw new Error(`the remote sent an error event: ${raw.slice(0, 200)}`);
    }
    return asEvent(parsed, raw, raw);
  };
  // Chunks without a line end wait in `pending` (a 1 MiB event arrives in many chunks; joining and
  // rescanning the buffer on each one would be quadratic).
  let pending: string[] = [];
  let pendingLength = 0;
  const tooBig = (): Error => new Error(`the remote sent an event over ${MAX_EVENT_BYTES} bytes`);
  const none: RemoteEvent[] = [];
  const feed = (chunk: string): { events: RemoteEvent[]; error: unknown } => {
    if (chunk.indexOf('\n') < 0) {
      pending.push(chunk);
      pendingLength += chunk.length;
      return { events: none, error: buf.length + pendingLength > MAX_EVENT_BYTES ? tooBig() : undefined };
    }
    if (pending.length) {
      buf += pending.join('');
      pending = [];
      pendingLength = 0;
    }
    buf = buf ? buf + chunk : chunk;
    let start = 0;
    const out: RemoteEvent[] = [];
    for (;;) {
      const nl = buf.indexOf('\n', start);
      if (nl < 0) break;
      const end = nl > start && buf.charCodeAt(nl - 1) === 13 ? nl - 1 : nl;
      const line = buf.slice(start, end);
      start = nl + 1;
      if (line === '') {
        if (data) {
          try {
            out.push(toEvent(data, event));
          } catch (e) {
            // The events before it in this chunk are delivered first, then the error.
            return { events: out, error: e };
          }
        }
        data = '';
        event = '';
      } else if (line.startsWith('data:')) {
        const v = line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5);
        data = data ? `${data}\n${v}` : v;
        if (data.length > MAX_EVENT_BYTES) return { events: out, error: tooBig() };
      } else if (line.startsWith('event:')) {
        event = line.slice(line.charCodeAt(6) === 32 ? 7 : 6);
      }
      // Comments (":") and other fields (id, retry) carry nothing the relay needs.
    }
    buf = start ? buf.slice(start) : buf;
    return { events: out, error: buf.length > MAX_EVENT_BYTES ? tooBig() : undefined };
  };
  const finish = (): RemoteEvent[] => {
    if (pending.length) buf += pending.join('');
    if (buf) {
      // A last line without its line end still counts (as in the SDK's reader).
      const line = buf.endsWith('\r') ? buf.slice(0, -1) : buf;
      if (line.startsWith('data:'))
        data = data
          ? `${data}\n${line.slice(line.charCodeAt(5) === 32 ? 6 : 5)}`
          : line.slice(line.charCodeAt(5) === 32 ? 6 : 5);
    }
    return data ? [toEvent(data, event)] : [];
  };
  return { feed, finish };
}
