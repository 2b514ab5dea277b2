/**
 * Event pages on both sides of `TRANSFER_BYTES` (smaller ones cross to the store's thread as strings,
 * larger ones as moved UTF-8 bytes), with non-ASCII text of 2, 3 and 4 UTF-8 bytes and escaped
 * newlines: what the SQLite store must give back exactly, on either driver.
 */
import { TaskState } from '@a2a-js/sdk';
import type { EventRow, GatewayStore, NewTask } from '../../../src/gateway/store/gatewayStore';
import { TRANSFER_BYTES } from '../../../src/gateway/store/sqliteWorkerStore';

export const LARGE_AGENT = 'echo';
export const LARGE_TASK = 'p';

/** A patch-like event of exactly `chars` UTF-16 units, single-line JSON. */
function patch(seq: number, chars: number): EventRow {
  const head = JSON.stringify({ artifactUpdate: { taskId: LARGE_TASK, seq, text: 'é ✓ 😀 a\nb ' } }).slice(0, -3);
  return { seq, body: `${head}${'x'.repeat(chars - head.length - 3)}"}}` };
}

const first: EventRow = { seq: 1, body: JSON.stringify({ task: { id: LARGE_TASK, contextId: 'ctx' } }) };

/** The appends after the task's first event: one page each, the last a page of two events. */
export const LARGE_BATCHES: readonly (readonly EventRow[])[] = [
  [patch(2, TRANSFER_BYTES - 1)],
  [patch(3, TRANSFER_BYTES)],
  [patch(4, 64 * 1024)],
  [patch(5, 20_000), patch(6, 30_000)],
];

/** Every event, in order, as readEvents must give them back. */
export const LARGE_EVENTS: readonly EventRow[] = [first, ...LARGE_BATCHES.flat()];

/** Each stored page's text, as the column must hold it (events joined by newlines). */
export const LARGE_PAGES: readonly string[] = [[first], ...LARGE_BATCHES].map((p) => p.map((e) => e.body).join('\n'));

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
  for (const events of LARGE_BATCHES)
    await store.append({ agent: LARGE_AGENT, taskId: LARGE_TASK, events, state: TaskState.TASK_STATE_WORKING });
}

/** What the page rows hold, read with plain SQL. */
export const STORED_PAGES_SQL =
  'SELECT typeof(bodies) AS type, octet_length(bodies) AS bytes, bodies FROM baton_event_pages ORDER BY last_seq';
export interface StoredPage {
  readonly type: string;
  readonly bytes: number;
  readonly bodies: string;
}
