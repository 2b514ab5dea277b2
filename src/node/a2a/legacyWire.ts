/**
 * What 0.3-era agents written elsewhere put on the wire that the SDK's 0.3 client cannot read, made
 * readable before it reads it. Both are off the spec; the content is the spec's, and nothing is guessed:
 *
 * - a U+001E (record separator, as in RFC 7464 JSON text sequences) before each SSE event's JSON:
 *   VoltAgent's server (`@voltagent/server-hono` 2.0.x) writes `data: \u001e{…}`. No JSON text starts
 *   with it, so it is dropped;
 * - a result without its `kind` (VoltAgent's `@voltagent/a2a-server` 2.0.x answers `message/send` and
 *   every `message/stream` event with a bare task). The kind is named from the fields only that kind
 *   has: a task `id` and `status`; a message's `messageId`, `role` and `parts`; a status update's
 *   `taskId` and `status`; an artifact update's `taskId` and `artifact`. A result with any `kind`,
 *   or one that fits none of them, passes as it came (the SDK then says what it cannot read).
 *
 * Only 0.3 responses go through here: in 1.0 a result is told by its field name, not a `kind`.
 */
import { isRecord } from '../../core/isRecord';

const RECORD_SEPARATOR = '\u001e';

/** The 0.3 kind of a result that has none, by the fields only that kind has; undefined when it has one or fits none. */
export function missingKind(result: Record<string, unknown>): string | undefined {
  if (result.kind !== undefined) return undefined;
  if (typeof result.messageId === 'string' && typeof result.role === 'string' && Array.isArray(result.parts))
    return 'message';
  if (typeof result.taskId === 'string') {
    if (isRecord(result.artifact)) return 'artifact-update';
    if (isRecord(result.status)) return 'status-update';
    return undefined;
  }
  if (typeof result.id === 'string' && isRecord(result.status)) return 'task';
  return undefined;
}

/**
 * One JSON-RPC response's text (a plain answer or one SSE event's data) made readable, or undefined
 * when it is left as it came.
 */
export function legacyResponseText(text: string): string | undefined {
  const separated = text.startsWith(RECORD_SEPARATOR);
  const json = separated ? text.slice(1) : text;
  let env: unknown;
  try {
    env = JSON.parse(json);
  } catch {
    return separated ? json : undefined;
  }
  if (isRecord(env) && isRecord(env.result)) {
    const kind = missingKind(env.result);
    if (kind) return JSON.stringify({ ...env, result: { kind, ...env.result } });
  }
  return separated ? json : undefined;
}

/**
 * The most of one event this holds while it waits for the event's end: the SDK client's own limit for
 * an event (4 MiB), with room for its field names. An event that goes on past it fails the stream with
 * the SDK's words for an event too large (which readers of it act on), instead of growing a buffer for
 * as long as the agent sends.
 */
export const MAX_HELD_EVENT_CHARS = 4 * 1024 * 1024 + 1024;

/**
 * An SSE body with each event's data passed through `map` (undefined: the event's bytes as they came).
 * A rewritten event has one `data:` line; its other fields (`id:`, `event:`) are kept.
 */
export function mapSseData(
  body: ReadableStream<Uint8Array>,
  map: (data: string) => string | undefined,
  maxHeldChars = MAX_HELD_EVENT_CHARS,
): ReadableStream<Uint8Array> {
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  let buf = '';
  const flushEvent = (block: string): string => {
    const lines = block.split(/\r?\n/);
    const data = lines.filter((l) => l.startsWith('data:')).map((l) => l.slice(l.charCodeAt(5) === 32 ? 6 : 5));
    if (!data.length) return block;
    const rewritten = map(data.join('\n'));
    if (rewritten === undefined) return block;
    return [...lines.filter((l) => !l.startsWith('data:')), `data: ${rewritten}`].join('\n');
  };
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        buf += decoder.decode(chunk, { stream: true });
        let out = '';
        for (;;) {
          const m = /\r?\n\r?\n/.exec(buf);
          if (!m) break;
          out += flushEvent(buf.slice(0, m.index)) + m[0];
          buf = buf.slice(m.index + m[0].length);
        }
        if (out) controller.enqueue(encoder.encode(out));
        if (buf.length > maxHeldChars) {
          buf = '';
          controller.error(
            new Error(
              `An SSE event from the agent exceeded the maximum allowed size of ${maxHeldChars} characters before it ended; ask for the task with GetTask instead.`,
            ),
          );
        }
      },
      flush(controller) {
        buf += decoder.decode();
        if (buf) controller.enqueue(encoder.encode(flushEvent(buf)));
      },
    }),
  );
}

/**
 * A fetch for a 0.3 endpoint whose responses are made readable (see the module comment): SSE events
 * one by one, a JSON answer whole. Anything else (an error page, a card) passes as it came.
 */
export function legacyWireFetch(base: typeof fetch): typeof fetch {
  return async (input, init) => {
    const res = await base(input, init);
    const type = (res.headers.get('content-type') ?? '').toLowerCase();
    if (!res.body) return res;
    if (type.includes('text/event-stream'))
      return new Response(mapSseData(res.body, legacyResponseText), {
        status: res.status,
        statusText: res.statusText,
        headers: res.headers,
      });
    if (!type.includes('json')) return res;
    const text = await res.text();
    const fixed = legacyResponseText(text);
    const headers = new Headers(res.headers);
    headers.delete('content-length');
    headers.delete('content-encoding');
    return new Response(fixed ?? text, { status: res.status, statusText: res.statusText, headers });
  };
}
