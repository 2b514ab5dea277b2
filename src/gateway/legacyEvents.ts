/**
 * What a 0.3 remote's event stream says that A2A 1.0 cannot: a status update's `final` flag. A 0.3
 * agent may report `input-required` (or `auth-required`) with `final: false` and go on (Gemini CLI's
 * A2A server reports a tool's scheduling, execution and success after an approval that way, before the
 * model's next turn). In 1.0 an interrupted state ends the turn and the stream, so the proxy would stop
 * relaying there; such an update is rewritten to `working` (its message and metadata kept, the state
 * it came with in `baton/remoteState`) before the SDK's client reads it.
 */
import { META } from '../core/batonProfile';
import { isRecord } from '../core/isRecord';

const INTERRUPTED = new Set(['input-required', 'auth-required']);

/** One event's JSON (a JSON-RPC response, or a bare HTTP+JSON event) with an interim interruption rewritten, or undefined when unchanged. */
export function rewriteInterim(text: string): string | undefined {
  if (!text.includes('"final"') || !/input-required|auth-required/.test(text)) return undefined;
  let env: unknown;
  try {
    env = JSON.parse(text);
  } catch {
    return undefined;
  }
  const ev = isRecord(env) && isRecord(env.result) ? env.result : env;
  if (!isRecord(ev) || ev.kind !== 'status-update' || ev.final !== false || !isRecord(ev.status)) return undefined;
  const state = ev.status.state;
  if (typeof state !== 'string' || !INTERRUPTED.has(state)) return undefined;
  ev.status = { ...ev.status, state: 'working' };
  ev.metadata = { ...(isRecord(ev.metadata) ? ev.metadata : {}), [META.remoteState]: state };
  return JSON.stringify(env);
}

/** An SSE body with each interim interruption rewritten (see the module comment); other bytes pass as they came. */
export function rewriteInterimEvents(body: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  let buf = '';
  const flushEvent = (block: string): string => {
    const lines = block.split(/\r?\n/);
    const data = lines.filter((l) => l.startsWith('data:')).map((l) => l.slice(l.charCodeAt(5) === 32 ? 6 : 5));
    if (!data.length) return block;
    const rewritten = rewriteInterim(data.join('\n'));
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
      },
      flush(controller) {
        buf += decoder.decode();
        if (buf) controller.enqueue(encoder.encode(flushEvent(buf)));
      },
    }),
  );
}
