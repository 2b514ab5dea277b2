/**
 * SQLite store. Two drivers behind one small surface: `node:sqlite` where the runtime has it (Node >=
 * 22.13, e.g. VS Code's Node 24 that the extension starts the gateway on) and better-sqlite3 on Node 20
 * (a native module built for Node 20's ABI, which is why it cannot be the only path). WAL with
 * `synchronous=FULL`: a committed event survives `kill -9` and power loss.
 */
import { statSync } from 'node:fs';
import { createRequire } from 'node:module';
import type {
  AppendBatch,
  AppendListener,
  CancelRequestListener,
  ClaimResult,
  EventRow,
  GatewayStore,
  ListFilter,
  NewTask,
  PushConfigRow,
  RequestClaim,
  RetentionOutcome,
  RetentionStep,
  StoredEventRow,
  TaskFilter,
  TaskRow,
  UnboundClaim,
} from './gatewayStore';
import { TERMINAL_STATES } from '../../core/taskStates';
import {
  bodyText,
  busyParents,
  CHILD_PRINCIPAL_PREFIX,
  toRequestClaim,
  toTaskRow,
  toUnboundClaim,
} from './gatewayStore';
import { foldStoredSnapshot } from '../wireFold';

type SqlValue = string | number | null | Uint8Array;
type Row = Record<string, SqlValue>;

interface Statement {
  run(...params: SqlValue[]): unknown;
  get(...params: SqlValue[]): Row | undefined;
  all(...params: SqlValue[]): Row[];
}

interface SqliteDriver {
  readonly name: 'node:sqlite' | 'better-sqlite3';
  exec(sql: string): void;
  prepare(sql: string): Statement;
  close(): void;
}

const requireHere = createRequire(__filename);

type Require = (id: string) => unknown;

/**
 * Whether this runtime has `node:sqlite`, found by loading it rather than from the version number:
 * Node 22.5–22.12 have it only behind a flag, and an Electron build may ship without it.
 */
export function probeNodeSqlite(load: Require = requireHere): boolean {
  try {
    const mod = load('node:sqlite') as { DatabaseSync?: unknown } | undefined;
    return typeof mod?.DatabaseSync === 'function';
  } catch {
    return false;
  }
}

let nodeSqlite: boolean | undefined;
/** `probeNodeSqlite` for this process, once. */
export function hasNodeSqlite(): boolean {
  return (nodeSqlite ??= probeNodeSqlite());
}

/**
 * What to do when neither driver loads. Inside VS Code (the extension starts the gateway on VS Code's
 * own runtime) the only remedy is a newer VS Code; on a Node of one's own, a newer Node or a rebuild.
 */
export function noSqliteMessage(
  versions: { readonly node: string; readonly electron?: string },
  betterSqliteError: string,
): string {
  if (versions.electron)
    return (
      `This VS Code's runtime (Node ${versions.node}, Electron ${versions.electron}) has no node:sqlite, which ` +
      `Baton's local gateway needs to keep its tasks. Update VS Code to 1.101 or newer, whose runtime has it.`
    );
  return (
    `Node ${versions.node} has no node:sqlite (built in from Node 22.13) and better-sqlite3 cannot be loaded ` +
    `(${betterSqliteError}). Run the gateway on Node 22.13 or newer, or reinstall better-sqlite3 for this ` +
    `Node with "npm rebuild better-sqlite3".`
  );
}

function openDriver(file: string, prefer: 'auto' | 'node:sqlite' | 'better-sqlite3'): SqliteDriver {
  const useNode = prefer === 'node:sqlite' || (prefer === 'auto' && hasNodeSqlite());
  if (useNode) {
    const mod = requireHere('node:sqlite') as {
      DatabaseSync: new (path: string) => { exec(sql: string): void; prepare(sql: string): Statement; close(): void };
    };
    const db = new mod.DatabaseSync(file);
    return {
      name: 'node:sqlite',
      exec: (sql) => db.exec(sql),
      prepare: (sql) => db.prepare(sql),
      close: () => db.close(),
    };
  }
  let Database: new (path: string) => { exec(sql: string): void; prepare(sql: string): Statement; close(): void };
  try {
    Database = requireHere('better-sqlite3') as typeof Database;
  } catch (e) {
    throw new Error(noSqliteMessage(process.versions, (e as Error).message));
  }
  const db = new Database(file);
  return {
    name: 'better-sqlite3',
    exec: (sql) => db.exec(sql),
    prepare: (sql) => db.prepare(sql),
    close: () => db.close(),
  };
}

/** The terminal states as an SQL list (the partial indexes and the queries that use them spell it the same). */
const TERMINAL = [...TERMINAL_STATES].sort((a, b) => a - b).join(',');

const SCHEMA = `
CREATE TABLE IF NOT EXISTS baton_tasks (
  agent TEXT NOT NULL, id TEXT NOT NULL, context_id TEXT NOT NULL, principal TEXT NOT NULL,
  kind TEXT NOT NULL, state INTEGER NOT NULL, last_seq INTEGER NOT NULL, snapshot TEXT NOT NULL,
  owner TEXT, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, compacted INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (agent, id));
CREATE INDEX IF NOT EXISTS baton_tasks_by_principal ON baton_tasks (agent, principal, updated_at DESC, id DESC);
CREATE TABLE IF NOT EXISTS baton_event_pages (
  agent TEXT NOT NULL, task_id TEXT NOT NULL, last_seq INTEGER NOT NULL, first_seq INTEGER NOT NULL, bodies TEXT NOT NULL,
  UNIQUE (agent, task_id, last_seq));
CREATE TABLE IF NOT EXISTS baton_requests (
  principal TEXT NOT NULL, agent TEXT NOT NULL, message_id TEXT NOT NULL, digest TEXT NOT NULL,
  task_id TEXT, created_at INTEGER NOT NULL, instance TEXT, sent_digest TEXT,
  PRIMARY KEY (principal, agent, message_id));
CREATE TABLE IF NOT EXISTS baton_instances (
  id TEXT PRIMARY KEY, host TEXT NOT NULL, pid INTEGER NOT NULL, heartbeat_at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS baton_push_configs (
  agent TEXT NOT NULL, task_id TEXT NOT NULL, id TEXT NOT NULL, config TEXT NOT NULL, created_at INTEGER NOT NULL,
  PRIMARY KEY (agent, task_id, id));
`;

/**
 * Created once the tables have every column (an older baton_tasks gains its compacted column in migrate()).
 * The partial indexes hold finished tasks only, so the appends of running tasks never touch them.
 */
const RETENTION_SCHEMA = `
CREATE INDEX IF NOT EXISTS baton_tasks_finished ON baton_tasks (updated_at) WHERE state IN (${TERMINAL});
CREATE INDEX IF NOT EXISTS baton_tasks_uncompacted ON baton_tasks (updated_at) WHERE state IN (${TERMINAL}) AND compacted = 0;
CREATE INDEX IF NOT EXISTS baton_requests_by_task ON baton_requests (agent, task_id);
`;

/** A WAL larger than this is cut back to it after a checkpoint (a VACUUM or a burst would leave it large). */
const WAL_SIZE_LIMIT = 16 * 1024 * 1024;

/** One stored page: consecutive events from `firstSeq`, their bodies joined by newlines. */
export interface EventPage {
  readonly firstSeq: number;
  readonly bodies: string;
}

/**
 * An append whose events are already one page. `bodies` is their text, or its UTF-8 bytes: a large
 * page (a patch) crosses to the store's thread as bytes moved with the message rather than a string
 * copied into the thread's heap, and is stored as the same text (see `insertChecked`).
 */
export interface PageBatch extends Omit<AppendBatch, 'events'> {
  readonly firstSeq: number;
  readonly lastSeq: number;
  readonly bodies: string | Uint8Array;
  readonly events?: undefined;
}

/**
 * Events are stored in pages: the events of one append in one row, their bodies joined by newlines
 * (wire JSON has none of its own), keyed by the page's last seq. A row per event cost more than
 * everything else the gateway does to relay one; a page is one B-tree insert per append.
 */
export function toPage(
  taskId: string,
  events: readonly EventRow[],
): { firstSeq: number; lastSeq: number; bodies: string | Uint8Array } {
  if (!events.length) throw new Error(`no events to store for task ${taskId}`);
  let bytes = false;
  for (let i = 0; i < events.length; i++) {
    const e = events[i];
    if (i > 0 && e.seq !== events[i - 1].seq + 1)
      throw new Error(`events of task ${taskId} are not contiguous (${events[i - 1].seq} then ${e.seq})`);
    // In UTF-8 no byte of a multi-byte character is 0x0A: a newline byte is a newline.
    if (typeof e.body === 'string' ? e.body.includes('\n') : e.body.includes(NEWLINE))
      throw new Error(`event ${e.seq} of task ${taskId} is not single-line JSON`);
    bytes ||= typeof e.body !== 'string';
  }
  const firstSeq = events[0].seq;
  const lastSeq = events[events.length - 1].seq;
  if (!bytes) {
    const bodies = events.length === 1 ? bodyText(events[0].body) : events.map((e) => bodyText(e.body)).join('\n');
    return { firstSeq, lastSeq, bodies };
  }
  // Always a new buffer, never a row's own bytes: the page's buffer may be moved to the store's thread
  // (see `crossing`), and the rows' bytes are still to be written to clients.
  const parts: Uint8Array[] = [];
  events.forEach((e, i) => {
    if (i > 0) parts.push(NEWLINE_BYTES);
    parts.push(typeof e.body === 'string' ? Buffer.from(e.body, 'utf8') : e.body);
  });
  return { firstSeq, lastSeq, bodies: Buffer.concat(parts) };
}

const NEWLINE = 0x0a;
const NEWLINE_BYTES = Uint8Array.of(NEWLINE);

/** The events after `afterSeq` in `pages`, at most `limit` of them. */
export function eventsOfPages(pages: readonly EventPage[], afterSeq: number, limit: number): StoredEventRow[] {
  const out: StoredEventRow[] = [];
  for (const p of pages) {
    const bodies = p.bodies.split('\n');
    for (let i = Math.max(0, afterSeq + 1 - p.firstSeq); i < bodies.length && out.length < limit; i++)
      out.push({ seq: p.firstSeq + i, body: bodies[i] });
    if (out.length >= limit) break;
  }
  return out;
}

/** A write that `commitGroup` can commit together with others. */
export type GroupWrite =
  | { readonly method: 'appendPage'; readonly args: readonly [PageBatch] }
  | { readonly method: 'createTask'; readonly args: readonly [NewTask, EventRow] }
  | {
      readonly method: 'claimRequest';
      readonly args: readonly [string, string, string, string, string | null, string | undefined, string | undefined];
    }
  | { readonly method: 'bindRequest'; readonly args: readonly [string, string, string, string] };

/** A write's outcome; `value` is what the write returns (a claim's result). */
export type GroupOutcome =
  { readonly ok: true; readonly value?: unknown } | { readonly ok: false; readonly error: Error };

export interface SqliteStoreOptions {
  /** The database file, or ':memory:'. */
  readonly file: string;
  readonly driver?: 'auto' | 'node:sqlite' | 'better-sqlite3';
}

export class SqliteGatewayStore implements GatewayStore {
  readonly kind = 'sqlite' as const;
  /** Every call runs to its end before it returns. */
  readonly ordersAppends = true;
  /** A task is read with the events stored after its snapshot folded in (`current`). */
  readonly foldsSnapshots = true;
  readonly driverName: SqliteDriver['name'];
  private readonly db: SqliteDriver;
  private readonly stmts: Record<string, Statement> = {};
  private readonly file: string;
  /** What opening the store did that its operator should hear of (the gateway logs them). */
  private readonly openNotes: string[] = [];

  constructor(opts: SqliteStoreOptions) {
    this.file = opts.file;
    this.db = openDriver(opts.file, opts.driver ?? 'auto');
    this.driverName = this.db.name;
    // Before any table exists, a new database takes incremental auto-vacuum as it is created.
    const vacuumMode = Number(this.db.prepare('PRAGMA auto_vacuum').get()?.auto_vacuum ?? 0);
    if (vacuumMode !== 2) this.db.exec('PRAGMA auto_vacuum=INCREMENTAL');
    this.db.exec('PRAGMA journal_mode=WAL');
    this.db.exec('PRAGMA synchronous=FULL');
    this.db.exec('PRAGMA busy_timeout=5000');
    this.db.exec('PRAGMA foreign_keys=ON');
    this.db.exec(`PRAGMA journal_size_limit=${WAL_SIZE_LIMIT}`);
    const existing = this.db.prepare("SELECT 1 AS x FROM sqlite_master WHERE type = 'table'").get() !== undefined;
    this.db.exec(SCHEMA);
    this.migrate();
    this.db.exec(RETENTION_SCHEMA);
    if (vacuumMode !== 2 && existing) this.switchToIncrementalVacuum();
  }

  /**
   * A database made before retention has no auto-vacuum: the pages its deletes free stay in the file.
   * Switching mode takes one full VACUUM (a rewrite of the file; it needs as much free disk again).
   */
  private switchToIncrementalVacuum(): void {
    const before = this.size0();
    const t0 = Date.now();
    this.db.exec('VACUUM');
    this.db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
    this.openNotes.push(
      `SQLite store ${this.file}: switched to incremental auto-vacuum so retention gives freed space back (a one-time VACUUM: ${mb(before)} MB before, ${mb(this.size0())} MB after, ${Date.now() - t0} ms)`,
    );
  }

  /** What opening the store did that its operator should hear of. */
  notes(): Promise<string[]> {
    return Promise.resolve([...this.openNotes]);
  }

  /**
   * Earlier state folders, once each: pages kept in a WITHOUT ROWID table (pages can be large, a whole
   * patch, and SQLite keeps those tables for small rows: the same appends cost about a third more CPU),
   * and before that one row per event (one page per event).
   */
  private migrate(): void {
    // Claims record the instance that made them (an unbound claim of a dead instance is resolved).
    const requestCols = this.db.prepare('PRAGMA table_info(baton_requests)').all();
    if (!requestCols.some((c) => c.name === 'instance'))
      this.db.exec('ALTER TABLE baton_requests ADD COLUMN instance TEXT');
    // And the digest of the request as sent (what the envelope of an outcome recorded for it signs).
    if (!requestCols.some((c) => c.name === 'sent_digest'))
      this.db.exec('ALTER TABLE baton_requests ADD COLUMN sent_digest TEXT');
    this.db.exec('CREATE INDEX IF NOT EXISTS baton_requests_unbound ON baton_requests (agent) WHERE task_id IS NULL');
    const cols = this.db.prepare('PRAGMA table_info(baton_tasks)').all();
    if (!cols.some((c) => c.name === 'compacted'))
      this.db.exec('ALTER TABLE baton_tasks ADD COLUMN compacted INTEGER NOT NULL DEFAULT 0');
    const pages = this.db
      .prepare("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'baton_event_pages'")
      .get();
    if (pages && /WITHOUT\s+ROWID/i.test(String(pages.sql))) {
      this.tx(() => {
        this.db.exec('ALTER TABLE baton_event_pages RENAME TO baton_event_pages_old');
        this.db.exec(SCHEMA);
        this.db.exec(
          'INSERT INTO baton_event_pages (agent, task_id, last_seq, first_seq, bodies) SELECT agent, task_id, last_seq, first_seq, bodies FROM baton_event_pages_old ORDER BY agent, task_id, last_seq',
        );
        this.db.exec('DROP TABLE baton_event_pages_old');
      });
    }
    if (!this.db.prepare("SELECT 1 AS x FROM sqlite_master WHERE type = 'table' AND name = 'baton_events'").get())
      return;
    this.tx(() => {
      this.db.exec(
        'INSERT OR IGNORE INTO baton_event_pages (agent, task_id, last_seq, first_seq, bodies) SELECT agent, task_id, seq, seq, body FROM baton_events',
      );
      this.db.exec('DROP TABLE baton_events');
    });
  }

  private stmt(sql: string): Statement {
    let s = this.stmts[sql];
    if (!s) {
      s = this.db.prepare(sql);
      this.stmts[sql] = s;
    }
    return s;
  }

  /** BEGIN IMMEDIATE takes the write lock up front, so a claim cannot race another process's claim. */
  private tx<T>(fn: () => T): T {
    this.db.exec('BEGIN IMMEDIATE');
    try {
      const out = fn();
      this.db.exec('COMMIT');
      return out;
    } catch (e) {
      try {
        this.db.exec('ROLLBACK');
      } catch {
        // SQLite already rolled the transaction back (it does after some errors, e.g. an I/O error):
        // the error that caused it is the one to report.
      }
      throw e;
    }
  }

  claimRequest(
    principal: string,
    agent: string,
    messageId: string,
    digest: string,
    taskId: string | null,
    instance?: string,
    sentDigest?: string,
  ): Promise<ClaimResult> {
    return Promise.resolve(
      this.tx(() => this.claimNow(principal, agent, messageId, digest, taskId, instance, sentDigest)),
    );
  }

  private claimNow(
    principal: string,
    agent: string,
    messageId: string,
    digest: string,
    taskId: string | null,
    instance?: string,
    sentDigest?: string,
  ): ClaimResult {
    const row = this.stmt(
      'SELECT digest, task_id FROM baton_requests WHERE principal = ? AND agent = ? AND message_id = ?',
    ).get(principal, agent, messageId);
    if (row) {
      if (row.digest !== digest) return { kind: 'conflict' };
      return { kind: 'existing', taskId: row.task_id === null ? null : String(row.task_id) };
    }
    this.stmt(
      'INSERT INTO baton_requests (principal, agent, message_id, digest, task_id, created_at, instance, sent_digest) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
    ).run(principal, agent, messageId, digest, taskId, Date.now(), instance ?? null, sentDigest ?? null);
    return { kind: 'new' };
  }

  findRequest(principal: string, agent: string, messageId: string): Promise<RequestClaim | undefined> {
    const r = this.stmt(
      'SELECT digest, task_id, instance, created_at, sent_digest FROM baton_requests WHERE principal = ? AND agent = ? AND message_id = ?',
    ).get(principal, agent, messageId);
    return Promise.resolve(r ? toRequestClaim(r) : undefined);
  }

  listUnboundRequests(): Promise<UnboundClaim[]> {
    return Promise.resolve(
      this.stmt(
        'SELECT principal, agent, message_id, digest, task_id, instance, created_at, sent_digest FROM baton_requests WHERE task_id IS NULL',
      )
        .all()
        .map(toUnboundClaim),
    );
  }

  takeOverRequest(
    principal: string,
    agent: string,
    messageId: string,
    from: string | null,
    to: string | null,
  ): Promise<boolean> {
    return Promise.resolve(
      this.tx(() => {
        const where = 'principal = ? AND agent = ? AND message_id = ? AND task_id IS NULL AND instance IS ?';
        if (!this.stmt(`SELECT 1 AS x FROM baton_requests WHERE ${where}`).get(principal, agent, messageId, from))
          return false;
        this.stmt(`UPDATE baton_requests SET instance = ? WHERE ${where}`).run(to, principal, agent, messageId, from);
        return true;
      }),
    );
  }

  bindRequest(principal: string, agent: string, messageId: string, taskId: string): Promise<void> {
    this.bindNow(principal, agent, messageId, taskId);
    return Promise.resolve();
  }

  private bindNow(principal: string, agent: string, messageId: string, taskId: string): void {
    this.stmt('UPDATE baton_requests SET task_id = ? WHERE principal = ? AND agent = ? AND message_id = ?').run(
      taskId,
      principal,
      agent,
      messageId,
    );
  }

  releaseStaleClaim(
    principal: string,
    agent: string,
    messageId: string,
    taskId: string,
    instance: string | null,
  ): Promise<boolean> {
    return Promise.resolve(
      this.tx(() => {
        const where = 'principal = ? AND agent = ? AND message_id = ? AND task_id = ? AND instance IS ?';
        const args = [principal, agent, messageId, taskId, instance];
        if (!this.stmt(`SELECT 1 AS x FROM baton_requests WHERE ${where}`).get(...args)) return false;
        this.stmt(`DELETE FROM baton_requests WHERE ${where}`).run(...args);
        return true;
      }),
    );
  }

  releaseRequest(principal: string, agent: string, messageId: string): Promise<void> {
    this.stmt('DELETE FROM baton_requests WHERE principal = ? AND agent = ? AND message_id = ?').run(
      principal,
      agent,
      messageId,
    );
    return Promise.resolve();
  }

  createTask(task: NewTask, first: EventRow): Promise<void> {
    this.tx(() => this.insertTask(task, first));
    return Promise.resolve();
  }

  private insertTask(task: NewTask, first: EventRow): void {
    const now = Date.now();
    this.stmt(
      'INSERT INTO baton_tasks (agent, id, context_id, principal, kind, state, last_seq, snapshot, owner, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
    ).run(
      task.agent,
      task.id,
      task.contextId,
      task.principal,
      task.kind,
      task.state,
      first.seq,
      task.snapshot,
      task.owner,
      now,
      now,
    );
    this.insertPage(task.agent, task.id, [first]);
    if (task.request !== undefined) this.bindNow(task.principal, task.agent, task.request, task.id);
  }

  /** Stores `events` as one page (see `toPage`). */
  private insertPage(agent: string, taskId: string, events: readonly EventRow[]): void {
    const page = toPage(taskId, events);
    this.insertJoined(agent, taskId, page.firstSeq, page.lastSeq, page.bodies);
  }

  private insertJoined(
    agent: string,
    taskId: string,
    firstSeq: number,
    lastSeq: number,
    bodies: string | Uint8Array,
  ): void {
    this.checkContinues(agent, taskId, firstSeq);
    this.insertChecked(agent, taskId, firstSeq, lastSeq, bodies);
  }

  /**
   * A seq is stored once: a batch must start right after the task's last stored event (a page's key
   * alone would let an overlapping batch from a stale second writer in). Throws before anything is written.
   */
  private checkContinues(agent: string, taskId: string, firstSeq: number): void {
    const stored = this.stmt(
      'SELECT last_seq FROM baton_event_pages WHERE agent = ? AND task_id = ? ORDER BY last_seq DESC LIMIT 1',
    ).get(agent, taskId);
    const expected = stored ? Number(stored.last_seq) + 1 : 1;
    if (firstSeq !== expected)
      throw new Error(
        `events of task ${taskId} must continue at seq ${expected}, got ${firstSeq} (is another writer appending to it?)`,
      );
  }

  /** `bodies` as bytes are UTF-8 (the database's encoding): the CAST stores them as that text, not as a BLOB. */
  private insertChecked(
    agent: string,
    taskId: string,
    firstSeq: number,
    lastSeq: number,
    bodies: string | Uint8Array,
  ): void {
    this.stmt(
      'INSERT INTO baton_event_pages (agent, task_id, last_seq, first_seq, bodies) VALUES (?, ?, ?, ?, CAST(? AS TEXT))',
    ).run(agent, taskId, lastSeq, firstSeq, bodies);
  }

  append(batch: AppendBatch): Promise<void> {
    if (batch.events.length === 0) return Promise.resolve();
    const page = toPage(batch.taskId, batch.events);
    return this.appendPage({ ...batch, ...page, events: undefined });
  }

  /** `append` with the batch already made into a page (what crosses to the store's thread). */
  appendPage(batch: PageBatch): Promise<void> {
    this.tx(() => this.writePage(batch));
    return Promise.resolve();
  }

  /**
   * A batch without a snapshot is its page alone, with the task's state and owner when they change:
   * the row (its snapshot, and the index on its update time) is otherwise left as it was, so a
   * running task's append touches one B-tree page of the store, not four. `current` folds such pages
   * in when the task is read.
   */
  private writePage(batch: PageBatch): void {
    this.checkContinues(batch.agent, batch.taskId, batch.firstSeq);
    this.writeCheckedPage(batch);
  }

  /** `writePage` once `checkContinues` passed: its page's key is new, so only the database itself can fail it. */
  private writeCheckedPage(batch: PageBatch): void {
    this.insertChecked(batch.agent, batch.taskId, batch.firstSeq, batch.lastSeq, batch.bodies);
    if (batch.snapshot === undefined) {
      if (batch.owner !== undefined)
        this.stmt('UPDATE baton_tasks SET state = ?, owner = ?, updated_at = ? WHERE agent = ? AND id = ?').run(
          batch.state,
          batch.owner,
          Date.now(),
          batch.agent,
          batch.taskId,
        );
      else
        this.stmt('UPDATE baton_tasks SET state = ?, updated_at = ? WHERE agent = ? AND id = ? AND state <> ?').run(
          batch.state,
          Date.now(),
          batch.agent,
          batch.taskId,
          batch.state,
        );
      return;
    }
    if (batch.owner !== undefined) {
      this.stmt(
        'UPDATE baton_tasks SET state = ?, last_seq = ?, snapshot = ?, owner = ?, updated_at = ? WHERE agent = ? AND id = ?',
      ).run(batch.state, batch.lastSeq, batch.snapshot, batch.owner, Date.now(), batch.agent, batch.taskId);
    } else {
      this.stmt(
        'UPDATE baton_tasks SET state = ?, last_seq = ?, snapshot = ?, updated_at = ? WHERE agent = ? AND id = ?',
      ).run(batch.state, batch.lastSeq, batch.snapshot, Date.now(), batch.agent, batch.taskId);
    }
  }

  /**
   * A task row as the store holds it, brought up to date: when pages were stored after its snapshot
   * (appends without one), they are folded into it and `lastSeq` is the last of them. A compacted
   * task has no such pages (compaction folds them in first).
   */
  private current(r: Readonly<Record<string, unknown>>): TaskRow {
    const row = toTaskRow(r);
    if (row.compacted) return row;
    const last = this.stmt(
      'SELECT last_seq FROM baton_event_pages WHERE agent = ? AND task_id = ? ORDER BY last_seq DESC LIMIT 1',
    ).get(row.agent, row.id);
    const lastSeq = last ? Number(last.last_seq) : 0;
    if (lastSeq <= row.lastSeq) return row;
    const events = eventsOfPages(
      this.readPagesNow(row.agent, row.id, row.lastSeq, lastSeq - row.lastSeq),
      row.lastSeq,
      lastSeq - row.lastSeq,
    );
    return {
      ...row,
      lastSeq,
      snapshot: foldStoredSnapshot(
        row.snapshot,
        events.map((e) => e.body),
        lastSeq,
      ),
    };
  }

  /**
   * Several writes in one transaction, so that they share one commit (one fsync). One that is refused
   * (e.g. a batch that does not continue its task's seqs, a task created twice) is undone alone and
   * the others are kept: an append is checked before it writes anything, the other writes run in a
   * savepoint each. Returns each write's outcome, in order, once the COMMIT is done; throws, with none
   * of them stored, when the transaction itself fails (BEGIN, a savepoint, an append's own write, or
   * the COMMIT).
   */
  commitGroup(writes: readonly GroupWrite[]): GroupOutcome[] {
    return this.tx(() =>
      writes.map((w): GroupOutcome => {
        if (w.method === 'appendPage') {
          // Most of a group, and no savepoint needed: an append that does not continue its task's
          // seqs is refused before it writes anything, and past that check only the database can
          // fail it (disk full, I/O), which fails the whole group (the transaction is rolled back).
          try {
            this.checkContinues(w.args[0].agent, w.args[0].taskId, w.args[0].firstSeq);
          } catch (e) {
            return { ok: false, error: e instanceof Error ? e : new Error(String(e)) };
          }
          this.writeCheckedPage(w.args[0]);
          return { ok: true, value: undefined };
        }
        this.stmt('SAVEPOINT baton_write').run();
        let value: unknown;
        try {
          if (w.method === 'createTask') this.insertTask(w.args[0], w.args[1]);
          else if (w.method === 'claimRequest') value = this.claimNow(...w.args);
          else this.bindNow(...w.args);
        } catch (e) {
          this.stmt('ROLLBACK TO baton_write').run();
          this.stmt('RELEASE baton_write').run();
          return { ok: false, error: e instanceof Error ? e : new Error(String(e)) };
        }
        this.stmt('RELEASE baton_write').run();
        return { ok: true, value };
      }),
    );
  }

  getTask(agent: string, taskId: string): Promise<TaskRow | undefined> {
    const r = this.stmt('SELECT * FROM baton_tasks WHERE agent = ? AND id = ?').get(agent, taskId);
    return Promise.resolve(r ? this.current(r) : undefined);
  }

  /** The WHERE terms of a filter, with their parameters (every term is ANDed). */
  private filterTerms(f: TaskFilter): { where: string[]; params: SqlValue[] } {
    const where = ['agent = ?', 'principal = ?'];
    const params: SqlValue[] = [f.agent, f.principal];
    if (f.contextId) {
      where.push('context_id = ?');
      params.push(f.contextId);
    }
    if (f.state !== undefined) {
      where.push('state = ?');
      params.push(f.state);
    }
    if (f.updatedFrom !== undefined) {
      where.push('updated_at >= ?');
      params.push(f.updatedFrom);
    }
    return { where, params };
  }

  listTasks(f: ListFilter): Promise<TaskRow[]> {
    const { where, params } = this.filterTerms(f);
    if (f.before) {
      where.push('(updated_at < ? OR (updated_at = ? AND id < ?))');
      params.push(f.before.updatedAt, f.before.updatedAt, f.before.id);
    }
    params.push(f.limit);
    const rows = this.db
      .prepare(`SELECT * FROM baton_tasks WHERE ${where.join(' AND ')} ORDER BY updated_at DESC, id DESC LIMIT ?`)
      .all(...params);
    return Promise.resolve(rows.map((r) => this.current(r)));
  }

  countTasks(f: TaskFilter): Promise<number> {
    const { where, params } = this.filterTerms(f);
    const r = this.db.prepare(`SELECT count(*) AS n FROM baton_tasks WHERE ${where.join(' AND ')}`).get(...params);
    return Promise.resolve(Number(r?.n ?? 0));
  }

  readEvents(agent: string, taskId: string, afterSeq: number, limit: number): Promise<StoredEventRow[]> {
    return Promise.resolve(eventsOfPages(this.readPagesNow(agent, taskId, afterSeq, limit), afterSeq, limit));
  }

  /** The pages holding the events after `afterSeq` up to `afterSeq + limit`, as stored. */
  readPages(agent: string, taskId: string, afterSeq: number, limit: number): Promise<EventPage[]> {
    return Promise.resolve(this.readPagesNow(agent, taskId, afterSeq, limit));
  }

  private readPagesNow(agent: string, taskId: string, afterSeq: number, limit: number): EventPage[] {
    // Only the pages that overlap (afterSeq, afterSeq + limit]: a page can hold many events.
    const rows = this.stmt(
      'SELECT first_seq, bodies FROM baton_event_pages WHERE agent = ? AND task_id = ? AND last_seq > ? AND first_seq <= ? ORDER BY last_seq',
    ).all(agent, taskId, afterSeq, Math.max(afterSeq, 0) + limit);
    return rows.map((r) => ({ firstSeq: Number(r.first_seq), bodies: String(r.bodies) }));
  }

  listOwnedUnfinished(): Promise<TaskRow[]> {
    const rows = this.stmt(`SELECT * FROM baton_tasks WHERE owner IS NOT NULL AND state NOT IN (${TERMINAL})`).all();
    return Promise.resolve(rows.map((r) => this.current(r)));
  }

  heartbeat(instance: string, host: string, pid: number): Promise<void> {
    this.stmt(
      'INSERT INTO baton_instances (id, host, pid, heartbeat_at) VALUES (?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at',
    ).run(instance, host, pid, Date.now());
    return Promise.resolve();
  }

  instances(): Promise<Map<string, { host: string; pid: number; heartbeatAt: number }>> {
    const out = new Map<string, { host: string; pid: number; heartbeatAt: number }>();
    for (const r of this.stmt('SELECT * FROM baton_instances').all())
      out.set(String(r.id), { host: String(r.host), pid: Number(r.pid), heartbeatAt: Number(r.heartbeat_at) });
    return Promise.resolve(out);
  }

  onRemoteAppend(_listener: AppendListener): void {
    // One process writes a SQLite state folder; its own appends reach subscribers through the EventHub.
  }

  requestCancel(_agent: string, taskId: string, ownerInstance: string): Promise<void> {
    return Promise.reject(
      new Error(
        `cannot forward the cancel of task ${taskId} to gateway instance ${ownerInstance}: the SQLite store is used by one gateway process only; several instances need the PostgreSQL store`,
      ),
    );
  }

  onCancelRequest(_instance: string, _listener: CancelRequestListener): void {
    // One process writes a SQLite state folder: no other instance can ask this one to cancel.
  }

  putPushConfig(agent: string, taskId: string, id: string, config: string): Promise<void> {
    this.stmt(
      'INSERT INTO baton_push_configs (agent, task_id, id, config, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (agent, task_id, id) DO UPDATE SET config = excluded.config',
    ).run(agent, taskId, id, config, Date.now());
    return Promise.resolve();
  }

  listPushConfigs(agent: string, taskId: string): Promise<PushConfigRow[]> {
    const rows = this.stmt(
      'SELECT * FROM baton_push_configs WHERE agent = ? AND task_id = ? ORDER BY created_at, id',
    ).all(agent, taskId);
    return Promise.resolve(
      rows.map((r) => ({
        agent: String(r.agent),
        taskId: String(r.task_id),
        id: String(r.id),
        config: String(r.config),
        createdAt: Number(r.created_at),
      })),
    );
  }

  deletePushConfig(agent: string, taskId: string, id: string): Promise<boolean> {
    const had =
      this.stmt('SELECT 1 AS x FROM baton_push_configs WHERE agent = ? AND task_id = ? AND id = ?').get(
        agent,
        taskId,
        id,
      ) !== undefined;
    this.stmt('DELETE FROM baton_push_configs WHERE agent = ? AND task_id = ? AND id = ?').run(agent, taskId, id);
    return Promise.resolve(had);
  }

  /** Database pages in use plus the WAL, in bytes (pages freed and not yet vacuumed are not counted). */
  private usedBytes(): number {
    const pageSize = Number(this.db.prepare('PRAGMA page_size').get()?.page_size ?? 4096);
    const pages = Number(this.db.prepare('PRAGMA page_count').get()?.page_count ?? 0);
    const free = Number(this.db.prepare('PRAGMA freelist_count').get()?.freelist_count ?? 0);
    return (pages - free) * pageSize + this.walBytes();
  }

  private walBytes(): number {
    if (this.file === ':memory:' || this.file === '') return 0;
    try {
      return statSync(`${this.file}-wal`).size;
    } catch {
      return 0; // no WAL file (yet, or after a clean close)
    }
  }

  /** The file's pages and its WAL, in bytes. */
  private size0(): number {
    const pageSize = Number(this.db.prepare('PRAGMA page_size').get()?.page_size ?? 4096);
    const pages = Number(this.db.prepare('PRAGMA page_count').get()?.page_count ?? 0);
    return pages * pageSize + this.walBytes();
  }

  size(): Promise<number> {
    return Promise.resolve(this.size0());
  }

  retain(step: RetentionStep): Promise<RetentionOutcome> {
    const limit = Math.max(1, Math.floor(step.limit));
    // Parents with an unfinished child are kept whole (unfinished tasks are few: one scan of their principals).
    const busy = busyParents(
      this.stmt(
        `SELECT principal FROM baton_tasks WHERE state NOT IN (${TERMINAL}) AND principal LIKE '${CHILD_PRINCIPAL_PREFIX}%'`,
      )
        .all()
        .map((r) => String(r.principal)),
    );
    const free = (rows: Row[]): Array<{ agent: string; id: string }> =>
      rows
        .map((r) => ({ agent: String(r.agent), id: String(r.id) }))
        .filter((t) => !busy.has(`${t.agent}/${t.id}`))
        .slice(0, limit);
    let compacted = 0;
    let deleted = 0;
    let deletedForSpace = 0;
    let more = false;
    if (step.compactBefore !== undefined) {
      const due = free(
        this.stmt(
          `SELECT agent, id FROM baton_tasks WHERE state IN (${TERMINAL}) AND compacted = 0 AND updated_at < ? ORDER BY updated_at LIMIT ?`,
        ).all(step.compactBefore, limit + busy.size),
      );
      this.tx(() => {
        for (const t of due) {
          // The snapshot is made whole (the events stored after it folded in) before they go.
          const r = this.stmt('SELECT * FROM baton_tasks WHERE agent = ? AND id = ?').get(t.agent, t.id);
          const stored = r ? toTaskRow(r) : undefined;
          const whole = r ? this.current(r) : undefined;
          if (stored && whole && whole.lastSeq !== stored.lastSeq)
            this.stmt('UPDATE baton_tasks SET snapshot = ?, last_seq = ? WHERE agent = ? AND id = ?').run(
              whole.snapshot,
              whole.lastSeq,
              t.agent,
              t.id,
            );
          this.stmt('DELETE FROM baton_event_pages WHERE agent = ? AND task_id = ?').run(t.agent, t.id);
          this.stmt('UPDATE baton_tasks SET compacted = 1 WHERE agent = ? AND id = ?').run(t.agent, t.id);
        }
      });
      compacted = due.length;
      more ||= due.length === limit;
    }
    if (step.deleteBefore !== undefined) {
      const due = free(
        this.stmt(
          `SELECT agent, id FROM baton_tasks WHERE state IN (${TERMINAL}) AND updated_at < ? ORDER BY updated_at LIMIT ?`,
        ).all(step.deleteBefore, limit + busy.size),
      );
      this.deleteTasks(due);
      deleted = due.length;
      more ||= due.length === limit;
    }
    if (compacted || deleted) this.giveBack();
    if (step.maxBytes !== undefined && deleted < limit) {
      const used = this.usedBytes();
      if (used > step.maxBytes) {
        // Oldest finished first, until what they hold covers the excess over downToBytes.
        let need = used - (step.downToBytes ?? step.maxBytes);
        const rows = this.stmt(
          `SELECT t.agent, t.id, octet_length(t.snapshot) + COALESCE((SELECT sum(octet_length(p.bodies)) FROM baton_event_pages p WHERE p.agent = t.agent AND p.task_id = t.id), 0) AS bytes FROM baton_tasks t WHERE t.state IN (${TERMINAL}) ORDER BY t.updated_at LIMIT ?`,
        ).all(limit - deleted + busy.size);
        const bytes = new Map(rows.map((r) => [`${String(r.agent)}/${String(r.id)}`, Number(r.bytes)]));
        const due: Array<{ agent: string; id: string }> = [];
        for (const t of free(rows)) {
          if (need <= 0 || due.length >= limit - deleted) break;
          due.push(t);
          need -= bytes.get(`${t.agent}/${t.id}`) ?? 0;
        }
        this.deleteTasks(due);
        if (due.length) this.giveBack();
        deleted += due.length;
        deletedForSpace = due.length;
        more ||= need > 0 && due.length > 0;
      }
    }
    return Promise.resolve({ compacted, deleted, deletedForSpace, more });
  }

  /**
   * Hands freed pages back to the file system: the incremental vacuum moves them to the end of the
   * database and cuts them off, and a truncating checkpoint writes that into the file and empties the
   * WAL (in WAL mode the file only shrinks at a checkpoint).
   */
  private giveBack(): void {
    this.db.exec('PRAGMA incremental_vacuum');
    this.db.prepare('PRAGMA wal_checkpoint(TRUNCATE)').all();
  }

  /** Deletes finished tasks with everything that is theirs: events, push configs, idempotency claims. */
  private deleteTasks(tasks: ReadonlyArray<{ agent: string; id: string }>): void {
    if (!tasks.length) return;
    this.tx(() => {
      for (const t of tasks) {
        this.stmt('DELETE FROM baton_event_pages WHERE agent = ? AND task_id = ?').run(t.agent, t.id);
        this.stmt('DELETE FROM baton_push_configs WHERE agent = ? AND task_id = ?').run(t.agent, t.id);
        this.stmt('DELETE FROM baton_requests WHERE agent = ? AND task_id = ?').run(t.agent, t.id);
        this.stmt('DELETE FROM baton_tasks WHERE agent = ? AND id = ?').run(t.agent, t.id);
      }
    });
  }

  pruneInstances(heartbeatBefore: number, self?: string): Promise<number> {
    const owners = new Set(
      this.stmt(`SELECT DISTINCT owner FROM baton_tasks WHERE state NOT IN (${TERMINAL}) AND owner IS NOT NULL`)
        .all()
        .map((r) => String(r.owner)),
    );
    const gone = this.stmt('SELECT id FROM baton_instances WHERE heartbeat_at < ? OR id = ?')
      .all(heartbeatBefore, self ?? null)
      .map((r) => String(r.id))
      .filter((id) => !owners.has(id));
    if (gone.length)
      this.tx(() => {
        for (const id of gone) this.stmt('DELETE FROM baton_instances WHERE id = ?').run(id);
      });
    return Promise.resolve(gone.length);
  }

  integrityCheck(): Promise<string> {
    const rows = this.db.prepare('PRAGMA integrity_check').all();
    return Promise.resolve(rows.map((r) => String(Object.values(r)[0])).join('\n'));
  }

  close(): Promise<void> {
    this.db.close();
    return Promise.resolve();
  }
}

function mb(bytes: number): string {
  return (bytes / (1024 * 1024)).toFixed(1);
}
