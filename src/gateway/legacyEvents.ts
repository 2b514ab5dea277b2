/**
 * What a 0.3 remote's event stream says that A2A 1.0 cannot: a status update's `final` flag. A 0.3
 * agent may report `input-required` with `final: false` and go on (Gemini CLI's
 * A2A server reports a tool's scheduling, execution and success after an approval that way, before the
 * model's next turn). In 1.0 an interrupted state ends the turn and the stream, so the proxy would stop
 * relaying there. Yet `final: false` alone does not say more is coming: 0.3 servers made with the 1.0
 * SDK's compatibility layer send every interrupted state with `final: false` and then end the stream.
 *
 * So such an update is marked (`baton/remoteState` in its metadata, before the SDK's client reads it)
 * and held back for a moment: when the stream goes on (another event, or still open after
 * `INTERIM_GRACE_MS`), it is relayed as `working`, its message and metadata kept and the state it came
 * with in `baton/remoteState`; when the stream ends, it is relayed as it came and ends the turn.
 */
import { META } from '../core/batonProfile';
import { isRecord } from '../core/isRecord';
import { mapSseData } from '../node/a2a/legacyWire';
import type { Json } from './eventLog';
import type { RemoteEvent } from './remoteStream';

/** How long a marked interruption waits for the stream to go on before it is relayed as working. */
export const INTERIM_GRACE_MS = 1_000;

// Not auth-required: a task waiting for an out-of-band authorization goes on by itself, and servers
// keep its stream open; the proxy ends the turn there as for any interrupted state.
const INTERRUPTED = new Set(['input-required']);

/** One event's JSON (a JSON-RPC response, or a bare HTTP+JSON event) with an interim interruption marked, or undefined when unchanged. */
export function rewriteInterim(text: string): string | undefined {
  if (!text.includes('"final"') || !text.includes('input-required')) return undefined;
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
  ev.metadata = { ...(isRecord(ev.metadata) ? ev.metadata : {}), [META.remoteState]: state };
  return JSON.stringify(env);
}

/** An SSE body with each interim interruption marked (see the module comment); other bytes pass as they came. */
export function rewriteInterimEvents(body: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
  return mapSseData(body, rewriteInterim);
}

const INTERRUPTED_WIRE = new Set(['TASK_STATE_INPUT_REQUIRED']);

/** The status update of a (1.0 wire JSON) event when it is a marked interruption. */
function marked(e: RemoteEvent): Json | undefined {
  const su = e.ev.statusUpdate;
  if (!isRecord(su) || !isRecord(su.metadata) || typeof su.metadata[META.remoteState] !== 'string') return undefined;
  return isRecord(su.status) && typeof su.status.state === 'string' && INTERRUPTED_WIRE.has(su.status.state)
    ? (su as Json)
    : undefined;
}

/** The held interruption, the stream having gone on: working, with the state it came with noted. */
function asWorking(e: RemoteEvent): RemoteEvent {
  const su = marked(e) as Json;
  return {
    ev: { ...e.ev, statusUpdate: { ...su, status: { ...(su.status as Json), state: 'TASK_STATE_WORKING' } } },
    raw: undefined,
  };
}

/** The held interruption, the stream having ended: as it came (the mark taken off). */
function asFinal(e: RemoteEvent): RemoteEvent {
  const su = marked(e) as Json;
  const metadata = { ...(su.metadata as Json) };
  delete metadata[META.remoteState];
  return { ev: { ...e.ev, statusUpdate: { ...su, metadata } }, raw: undefined };
}

/** A 0.3 remote's events with each marked interruption resolved (see the module comment). */
export async function* resolveInterim(
  stream: AsyncGenerator<readonly RemoteEvent[], void, undefined>,
  graceMs = INTERIM_GRACE_MS,
): AsyncGenerator<readonly RemoteEvent[], void, undefined> {
  let held: RemoteEvent | undefined;
  let next: Promise<IteratorResult<readonly RemoteEvent[], void>> | undefined;
  let finished = false;
  try {
    for (;;) {
      next ??= stream.next();
      let r: IteratorResult<readonly RemoteEvent[], void> | 'waited';
      if (held) {
        let timer: NodeJS.Timeout | undefined;
        r = await Promise.race([
          next,
          new Promise<'waited'>((ok) => (timer = setTimeout(() => ok('waited'), graceMs))),
        ]).finally(() => clearTimeout(timer));
      } else r = await next;
      if (r === 'waited') {
        const h = held as RemoteEvent;
        held = undefined;
        yield [asWorking(h)];
        continue;
      }
      next = undefined;
      if (r.done) break;
      const out: RemoteEvent[] = [];
      for (const e of r.value) {
        if (held) out.push(asWorking(held));
        held = marked(e) ? e : undefined;
        if (!held) out.push(e);
      }
      if (out.length) yield out;
    }
    finished = true;
    if (held) yield [asFinal(held)];
  } finally {
    // Stopped early: the remote's stream is let go (not awaited: a read in flight may never end).
    if (!finished) void stream.return(undefined).catch(() => undefined);
  }
}
