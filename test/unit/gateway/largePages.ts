/**
 * Event pages on both sides of `TRANSFER_BYTES` (smaller ones cross to the store's thread as strings,
 * larger ones as moved UTF-8 bytes), with non-ASCII text of 2, 3 and 4 UTF-8 bytes and escaped
 * newlines, and events given as bytes (as a relay keeps a large one) alone and between text ones: what
 * the SQLite store must give back exactly, as text, on either driver.
 */
import { TaskState } from '@a2a-js/sdk';
import { bodyText } from '../../../src/gateway/store/gatewayStore';
import type { EventRow, GatewayStore, NewTask, StoredEventRow } from '../../../src/gateway/store/gatewayStore';
import { TRANSFER_BYTES } from '../../../src/gateway/store/sqliteWorkerStore';

export const LARGE_AGENT = 'echo';
export const LARGE_TASK = 'p';

/** A patch-like event of exactly `chars` UTF-16 units, single-line JSON. */
function patch(seq: number, chars: number): StoredEventRow {
  const head = JSON.stringify({ artifactUpdate: { taskId: LARGE_TASK, seq, text: 'é ✓ 😀 a\nb ' } }).slice(0, -3);
  return { seq, body: `${head}${'x'.repeat(chars - head.length - 3)}"}}` };
}

/** The same as its UTF-8 bytes, as the relay hands a large event on (see `BYTES_FROM_CHARS`). */
function asBytes(e: EventRow): EventRow {
  return { seq: e.seq, body: Buffer.from(bodyText(e.body), 'utf8') };
}

const first: EventRow = { seq: 1, body: JSON.stringify({ task: { id: LARGE_TASK, contextId: 'ctx' } }) };

/** The appends after the task's first event: one page each, the last a page of two events. */
export const LARGE_BATCHES: readonly (readonly EventRow[])[] = [
  [patch(2, TRANSFER_BYTES - 1)],
  [patch(3, TRANSFER_BYTES)],
  [patch(4, 64 * 1024)],
  [patch(5, 20_000), patch(6, 30_000)],
  [asBytes(patch(7, 64 * 1024))],
  [patch(8, 300), asBytes(patch(9, 20_000)), patch(10, 500)],
];

/** Every event, in order, as readEvents must give them back (as text). */
export const LARGE_EVENTS: readonly StoredEventRow[] = [first, ...LARGE_BATCHES.flat()].map((e) => ({
  seq: e.seq,
  body: bodyText(e.body),
}));

/** Each stored page's text, as the column must hold it (events joined by newlines). */
export const LARGE_PAGES: readonly string[] = [[first], ...LARGE_BATCHES].map((p) =>
  p.map((e) => bodyText(e.body)).join('\n'),
);

/** Creates the task and appends `LARGE_BATCHES`. */
export async function writeLargePages(store: GatewayStore): Promise<void> {
  const task: NewTask = {
    agent: LARGE_AGENT,
    id: LARGE_TASK,
    contextId: 'ctx',
    principal: 'alice',
    kind: 'local',
    state: TaskState.TASK_STATE_WORKING,
    snapshot: JSON.stringify({ id: LARGE_TASK, contextId: 'ctx' }),
    owner: 'inst-1',
  };
  await store.createTask(task, first);
  for (const events of LARGE_BATCHES) {
    const sizes = events.map((e) => (typeof e.body === 'string' ? -1 : e.body.byteLength));
    await store.append({ agent: LARGE_AGENT, taskId: LARGE_TASK, events, state: TaskState.TASK_STATE_WORKING });
    // What crossed to the store's thread was a copy: the rows' own bytes are still to be sent to clients.
    events.forEach((e, i) => {
      if (typeof e.body !== 'string' && e.body.byteLength !== sizes[i])
        throw new Error(`the bytes of event ${e.seq} were moved to the store's thread`);
    });
  }
}

/** What the page rows hold, read with plain SQL. */
export const STORED_PAGES_SQL =
  'SELECT typeof(bodies) AS type, octet_length(bodies) AS bytes, bodies FROM baton_event_pages ORDER BY last_seq';
export interface StoredPage {
  readonly type: string;
  readonly bytes: number;
  readonly bodies: string;
}
