/**
 * The gateway's durable store, behind one interface so the same request handler runs on SQLite
 * (`node:sqlite` where the runtime has it, better-sqlite3 on Node 20) and on PostgreSQL (several
 * gateway instances sharing tasks). The event log is the source of truth for replay: every event of a
 * task is a row keyed (agent, task, seq), written before it is sent to anyone.
 */
import { createHash } from 'node:crypto';
import type { TaskState } from '@a2a-js/sdk';
import { noteUnavailable } from '../unavailableAnswers';

export type TaskKind = 'local' | 'proxy';

export interface TaskRow {
  readonly agent: string;
  readonly id: string;
  readonly contextId: string;
  /** The principal that created the task; nobody else may see it. */
  readonly principal: string;
  readonly kind: TaskKind;
  readonly state: TaskState;
  readonly lastSeq: number;
  /** The task as A2A wire JSON (`Task.toJSON`), folded from its events. */
  readonly snapshot: string;
  /** The gateway instance currently running (or relaying) the task; null when nobody is. */
  readonly owner: string | null;
  readonly createdAt: number;
  readonly updatedAt: number;
  /**
   * A finished task whose event log was compacted by retention: its events are gone, its snapshot
   * (with the signed result envelope) is kept. A replay from a cursor before `lastSeq` gets the snapshot.
   */
  readonly compacted?: boolean;
}

/** A `baton_tasks` row as SQLite or PostgreSQL returns it (the same columns in both). */
export function toTaskRow(r: Readonly<Record<string, unknown>>): TaskRow {
  return {
    agent: String(r.agent),
    id: String(r.id),
    contextId: String(r.context_id),
    principal: String(r.principal),
    kind: r.kind === 'proxy' ? 'proxy' : 'local',
    state: Number(r.state) as TaskState,
    lastSeq: Number(r.last_seq),
    snapshot: String(r.snapshot),
    owner: r.owner === null || r.owner === undefined ? null : String(r.owner),
    createdAt: Number(r.created_at),
    updatedAt: Number(r.updated_at),
    compacted: r.compacted === true || Number(r.compacted) === 1,
  };
}

/** A `baton_requests` row as SQLite or PostgreSQL returns it. */
export function toRequestClaim(r: Readonly<Record<string, unknown>>): RequestClaim {
  return {
    digest: String(r.digest),
    taskId: r.task_id === null || r.task_id === undefined ? null : String(r.task_id),
    instance: r.instance === null || r.instance === undefined ? null : String(r.instance),
    createdAt: Number(r.created_at),
    sentDigest: typeof r.sent_digest === 'string' ? r.sent_digest : null,
  };
}

export function toUnboundClaim(r: Readonly<Record<string, unknown>>): UnboundClaim {
  return {
    ...toRequestClaim(r),
    principal: String(r.principal),
    agent: String(r.agent),
    messageId: String(r.message_id),
  };
}

export interface EventRow {
  readonly seq: number;
  /**
   * One `StreamResponse` as A2A wire JSON on one line. A large event a relay read (a patch, see
   * `BYTES_FROM_CHARS`) travels as its UTF-8 bytes from the read to the store and the clients'
   * sockets; rows read back from a store are text.
   */
  readonly body: string | Uint8Array;
}

/** A row as a store reads it back: always text. */
export interface StoredEventRow extends EventRow {
  readonly body: string;
}

/**
 * From this many characters a relayed event's text is kept as its UTF-8 bytes (`EventRow.body`):
 * outside the JS heap, written to the store and to every client as they are, where text would be held
 * in the heap until its commit and every client's write, then encoded again for each of them.
 */
export const BYTES_FROM_CHARS = 16 * 1024;

/** A body as text (decoded when it is bytes). */
export function bodyText(body: string | Uint8Array): string {
  return typeof body === 'string' ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8');
}

/** A body's size: UTF-16 code units for text, bytes for bytes (the two agree for ASCII, the usual case). */
export function bodySize(body: string | Uint8Array): number {
  return typeof body === 'string' ? body.length : body.byteLength;
}

export type ClaimResult =
  | { readonly kind: 'new' }
  /** The same messageId with the same body: the task it made (null while it is still being created). */
  | { readonly kind: 'existing'; readonly taskId: string | null }
  /** The same messageId with a different body. */
  | { readonly kind: 'conflict' };

export interface NewTask {
  readonly agent: string;
  readonly id: string;
  readonly contextId: string;
  readonly principal: string;
  readonly kind: TaskKind;
  readonly state: TaskState;
  readonly snapshot: string;
  readonly owner: string | null;
  /**
   * The idempotency key (`claimRequest`'s messageId) of the principal's claim this task answers, bound
   * to the task in the same transaction that creates it: a send is never left with a task and an
   * unbound claim (nor pays a second commit before its first event is sent).
   */
  readonly request?: string;
}

export interface AppendBatch {
  readonly agent: string;
  readonly taskId: string;
  /** Contiguous, starting at the task's lastSeq + 1. */
  readonly events: readonly EventRow[];
  readonly state: TaskState;
  /**
   * The task as of the batch's last event. Only a store that `foldsSnapshots` may be given none: it
   * then stores the events alone and folds them into the last stored snapshot when the task is read.
   * A batch that changes the state or the owner always carries it.
   */
  readonly snapshot?: string;
  /** Set when the batch also hands the task over (null: nobody runs it any more). */
  readonly owner?: string | null;
}

/** Which of an agent's tasks a listing (or its count) takes: one principal's, narrowed by the rest. */
export interface TaskFilter {
  readonly agent: string;
  readonly principal: string;
  readonly contextId?: string;
  readonly state?: TaskState;
  /**
   * Only tasks updated at or after this (epoch ms): A2A ListTasks `statusTimestampAfter`. The update
   * time is the stored row's (`TaskRow.updatedAt`), the same the listing is sorted by, so the tasks it
   * takes are the first ones of the unfiltered listing.
   */
  readonly updatedFrom?: number;
}

export interface ListFilter extends TaskFilter {
  readonly limit: number;
  /** Tasks updated strictly before this (epoch ms, id) pair come after it in the listing. */
  readonly before?: { readonly updatedAt: number; readonly id: string };
}

/** A push-notification config of one task (A2A `TaskPushNotificationConfig`), as the owner created it. */
/** A task in its principal's line for a turn (shared turns, PostgreSQL), with its instance's heartbeat. */
export interface TurnRow {
  /** Its place in the line: rows of one principal are numbered in the order they joined. */
  readonly seq: number;
  readonly instance: string;
  /** The instance's last heartbeat (undefined: it has no row any more, so it is gone). */
  readonly beat: { readonly host: string; readonly pid: number; readonly heartbeatAt: number } | undefined;
}

/**
 * The name a principal's line has in notifications: short and fixed in length, whatever the
 * principal (a NOTIFY payload is bounded, and it need not carry who the member is).
 */
export function turnKey(principal: string): string {
  return createHash('sha256').update(principal, 'utf8').digest('hex').slice(0, 24);
}

export interface PushConfigRow {
  readonly agent: string;
  readonly taskId: string;
  readonly id: string;
  /** The config as A2A wire JSON (`TaskPushNotificationConfig.toJSON`), token and credentials included. */
  readonly config: string;
  readonly createdAt: number;
}

/**
 * One bounded step of the retention policy. Only finished (terminal) tasks are touched, and never one
 * with an unfinished child (a task whose principal is `task:<agent>/<id>` of it).
 */
export interface RetentionStep {
  /** Finished tasks last updated before this (epoch ms) lose their events (snapshot and envelope kept). */
  readonly compactBefore?: number;
  /** Finished tasks last updated before this (epoch ms) are deleted. */
  readonly deleteBefore?: number;
  /** While the store holds more than this many bytes, the oldest finished tasks are deleted… */
  readonly maxBytes?: number;
  /** …until it holds this many (default `maxBytes`). */
  readonly downToBytes?: number;
  /** At most this many tasks compacted, and this many deleted, in the step. */
  readonly limit: number;
}

export interface RetentionOutcome {
  readonly compacted: number;
  /** Tasks deleted, by age or for space. */
  readonly deleted: number;
  /** Of those, deleted because the store was above `maxBytes`. */
  readonly deletedForSpace: number;
  /** Another step would find more to do. */
  readonly more: boolean;
  /** Another instance holds the retention lock (PostgreSQL): this one did nothing. */
  readonly busy?: boolean;
}

/** Principal of the tasks a parent task's agent started (ChildBroker); their parent is `<agent>/<id>`. */
export const CHILD_PRINCIPAL_PREFIX = 'task:';

/** The parents (`<agent>/<id>`) of unfinished children, from the principals of unfinished tasks. */
export function busyParents(unfinishedPrincipals: Iterable<string>): Set<string> {
  const out = new Set<string>();
  for (const p of unfinishedPrincipals)
    if (p.startsWith(CHILD_PRINCIPAL_PREFIX)) out.add(p.slice(CHILD_PRINCIPAL_PREFIX.length));
  return out;
}

/**
 * How the message of a `StoreUnavailableError` begins. The HTTP layer answers a request that failed
 * with one 503 with Retry-After: the SDK's error mapping keeps an error's message, not its class, so
 * each one's message is noted (src/gateway/unavailableAnswers.ts).
 */
const STORE_UNAVAILABLE = "the gateway's task store is unavailable";

/** The Retry-After of an answer refused because the store is unavailable, in seconds. */
export const STORE_RETRY_AFTER_SECONDS = 5;

/**
 * The store cannot be reached right now (PostgreSQL restarting, stopped, refusing new connections, or
 * the connection lost mid-statement): the same call may well succeed in a few seconds. `reason` says
 * why in plain words; the driver's error is the `cause`.
 */
export class StoreUnavailableError extends Error {
  constructor(
    readonly reason: string,
    options?: { readonly cause?: unknown },
  ) {
    super(`${STORE_UNAVAILABLE} (${reason}); try again in a few seconds`, options);
    this.name = 'StoreUnavailableError';
    noteUnavailable(this.message);
  }
}

/** Tells the caller that events were appended to a task, possibly by another gateway instance. */
export type AppendListener = (agent: string, taskId: string, lastSeq: number) => void;

/** Another instance asks this one to cancel a task this one runs (or relays). */
export type CancelRequestListener = (agent: string, taskId: string) => void;

/** An idempotency claim as stored. */
export interface RequestClaim {
  readonly digest: string;
  /** Null while the task is being created (a proxied remote has not named it yet). */
  readonly taskId: string | null;
  /** The gateway instance that made the claim (null for claims recorded before instances were). */
  readonly instance: string | null;
  readonly createdAt: number;
  /**
   * `requestDigest` (src/node/signing.ts) of the request as it was sent, which a result envelope signs:
   * kept with a claim whose task may never be named (a proxied send), so the outcome recorded for it
   * after its instance died is signed for that request. Null when the claim did not record it.
   */
  readonly sentDigest: string | null;
}

/** A claim whose task was never named: its creator may have died between the send and the binding. */
export interface UnboundClaim extends RequestClaim {
  readonly principal: string;
  readonly agent: string;
  readonly messageId: string;
}

export interface GatewayStore {
  readonly kind: 'sqlite' | 'postgres';
  /**
   * True when appends are applied and answered in the order they were called, so a task's writer may
   * send the next batch before the previous one is answered (a batch that does not continue the
   * task's seqs fails, so a failed batch fails every later one too).
   */
  readonly ordersAppends?: boolean;
  /**
   * True when an append may come without a snapshot (see `AppendBatch.snapshot`): the store brings a
   * task read back up to date by folding the events stored after its snapshot, so a task's writer
   * stores the snapshot now and then instead of with every batch.
   */
  readonly foldsSnapshots?: boolean;
  /**
   * Idempotency: claims (principal, agent, messageId) for a request whose canonical digest is given.
   * `taskId` is recorded at once when the caller already knows it (local agents), else later with
   * `bindRequest` (proxied agents learn it from the remote). `instance` is the gateway instance making
   * the claim: when it dies before binding, another instance can tell the claim is nobody's.
   * `sentDigest`: see `RequestClaim.sentDigest`.
   */
  claimRequest(
    principal: string,
    agent: string,
    messageId: string,
    digest: string,
    taskId: string | null,
    instance?: string,
    sentDigest?: string,
  ): Promise<ClaimResult>;
  findRequest(principal: string, agent: string, messageId: string): Promise<RequestClaim | undefined>;
  bindRequest(principal: string, agent: string, messageId: string, taskId: string): Promise<void>;
  /** Claims never bound to a task (of every agent and principal). */
  listUnboundRequests(): Promise<UnboundClaim[]>;
  /**
   * Hands an unbound claim made by `from` (a dead instance) to `to`, only if it still is unbound and
   * `from`'s: true for the one caller that took it.
   */
  takeOverRequest(
    principal: string,
    agent: string,
    messageId: string,
    from: string | null,
    to: string | null,
  ): Promise<boolean>;
  /** Forgets a claim whose request failed before its task was created, so a retry can run. */
  releaseRequest(principal: string, agent: string, messageId: string): Promise<void>;
  /**
   * Forgets a claim only while it still names `taskId` and was made by `instance` (null: recorded before
   * claims named their instance): a local task's claim whose instance stopped before it stored the task.
   * True when it was forgotten (one caller wins when several find it at once).
   */
  releaseStaleClaim(
    principal: string,
    agent: string,
    messageId: string,
    taskId: string,
    instance: string | null,
  ): Promise<boolean>;
  /** Inserts the task and its first event (seq 1) in one transaction. */
  createTask(task: NewTask, first: EventRow): Promise<void>;
  append(batch: AppendBatch): Promise<void>;
  getTask(agent: string, taskId: string): Promise<TaskRow | undefined>;
  /** The filter's tasks, most recently updated first (then by id, descending), at most `limit` of them. */
  listTasks(filter: ListFilter): Promise<TaskRow[]>;
  /** How many tasks the filter takes in all (A2A ListTasks `totalSize`: before pagination). */
  countTasks(filter: TaskFilter): Promise<number>;
  readEvents(agent: string, taskId: string, afterSeq: number, limit: number): Promise<StoredEventRow[]>;
  /** Non-terminal tasks with an owner: candidates for "the worker died" after a restart. */
  listOwnedUnfinished(): Promise<TaskRow[]>;
  /**
   * Hands an unfinished task from `from` (a dead instance) to `to`, only if `from` still owns it: of
   * several live instances that find the same orphan, exactly one gets the row back and recovers it.
   * Stores with one process per state folder (SQLite) leave it out: recovery there runs once, at start.
   */
  takeOver?(agent: string, taskId: string, from: string, to: string): Promise<TaskRow | undefined>;
  /** Records that this instance is alive (for other instances' orphan checks). */
  heartbeat(instance: string, host: string, pid: number): Promise<void>;
  /** Last heartbeat of each instance, epoch ms. */
  instances(): Promise<Map<string, { host: string; pid: number; heartbeatAt: number }>>;
  /** Events appended by other instances (PostgreSQL LISTEN/NOTIFY); SQLite has no other writers to hear. */
  onRemoteAppend(listener: AppendListener): void;
  /**
   * Appends by other instances may have gone unheard (the LISTEN connection was lost and is back):
   * everyone following a task should read the store. Stores with no other writers never call it.
   */
  onMissedAppends?(listener: () => void): void;
  /**
   * Turns shared by the instances of one database (src/gateway/sharedTurns.ts); SQLite leaves them
   * out (one process per state folder keeps its line in memory). `queueTurn` puts the task at the end
   * of its principal's line and answers its number there (joins are one at a time per principal, so
   * the numbers are the order they joined in). `turnsOf` is the line: its unfinished tasks in order.
   * `dropTurn` takes the task out (with any of the line whose task has ended) and tells every
   * instance (`onTurnsMoved`, with the line's `turnKey`).
   */
  queueTurn?(principal: string, agent: string, taskId: string, instance: string): Promise<number>;
  turnsOf?(principal: string): Promise<TurnRow[]>;
  dropTurn?(principal: string, seq: number, agent: string, taskId: string): Promise<void>;
  onTurnsMoved?(listener: (key: string) => void): void;
  /**
   * Asks the instance `ownerInstance` (the task's owner) to cancel the task. Fire and forget: the caller
   * learns the outcome from the task's events. The request is kept until the owner takes it, so an owner
   * that is not listening at that moment carries it out when it listens again. PostgreSQL only; SQLite
   * throws (one process per state folder, so there is no other instance to ask).
   */
  requestCancel(agent: string, taskId: string, ownerInstance: string): Promise<void>;
  /** Cancel requests addressed to `instance` (this process's instance id); SQLite never has any. */
  onCancelRequest(instance: string, listener: CancelRequestListener): void;
  /** Creates or replaces (same agent, task and id) a push-notification config. */
  putPushConfig(agent: string, taskId: string, id: string, config: string): Promise<void>;
  /** A task's push-notification configs, oldest first. */
  listPushConfigs(agent: string, taskId: string): Promise<PushConfigRow[]>;
  /** True when a config was deleted. */
  deletePushConfig(agent: string, taskId: string, id: string): Promise<boolean>;
  /**
   * Retention: compacts and deletes finished tasks as `step` says (their idempotency claims and push
   * configs with them), then gives the freed space back (SQLite: incremental vacuum; PostgreSQL:
   * plain deletes, autovacuum reuses the space). On PostgreSQL one instance runs a step at a time.
   */
  retain(step: RetentionStep): Promise<RetentionOutcome>;
  /** Bytes the store takes: SQLite, the database and its WAL; PostgreSQL, the baton tables with indexes and TOAST. */
  size(): Promise<number>;
  /**
   * Deletes the rows of instances whose last heartbeat is before `heartbeatBefore` (and `self`, an
   * instance stopping cleanly), unless they still own an unfinished task. Returns how many went.
   */
  pruneInstances(heartbeatBefore: number, self?: string): Promise<number>;
  /** `PRAGMA integrity_check` / a PostgreSQL equivalent: 'ok' when sound. */
  integrityCheck(): Promise<string>;
  close(): Promise<void>;
}
