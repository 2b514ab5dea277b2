/**
 * PostgreSQL store, for teams running several gateway instances on one database: tasks and events are
 * shared, and an append on one instance reaches subscribers on the others through LISTEN/NOTIFY (the
 * notification is sent inside the appending transaction, so it is delivered only once the events are
 * committed and readable). A cancel sent to one instance for a task another runs is stored for the
 * owner (table `baton_cancel_requests`) and announced the same way (channel `baton_cancel`), so the
 * task keeps a single writer and a cancel is not lost when the owner is not listening at that moment.
 *
 * Why not the SDK's DatabaseTaskStore: its table holds one snapshot per task, keyed by the SDK's
 * (tenant, owner) scope; the gateway's source of truth is the per-task event log (replay needs every
 * event by seq), tasks are keyed per agent route, and idempotency needs its own table. One schema for
 * both SQLite and PostgreSQL keeps the two paths the same code above this interface.
 */
import { createHash, randomBytes } from 'node:crypto';
import pg from 'pg';
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
  TurnRow,
  UnboundClaim,
} from './gatewayStore';
import { TERMINAL_STATES } from '../../core/taskStates';
import {
  bodyText,
  busyParents,
  CHILD_PRINCIPAL_PREFIX,
  StoreUnavailableError,
  toRequestClaim,
  toTaskRow,
  toUnboundClaim,
  turnKey,
} from './gatewayStore';

const CHANNEL = 'baton_events';
/** Cancel requests forwarded to the instance that runs a task: payload {instance, agent, taskId}. */
const CANCEL_CHANNEL = 'baton_cancel';
/** A principal's line for turns moved (a task left it): payload its `turnKey`. */
const TURNS_CHANNEL = 'baton_turns';

/**
 * The channels of the store in `schema`. NOTIFY reaches every listener of the database, so the stores
 * of other schemas (another team's gateways, or tests) would wake each other for nothing: each
 * schema has its own channels. The `public` schema keeps the plain names.
 */
export function channelsOf(schema: string): {
  readonly events: string;
  readonly cancels: string;
  readonly turns: string;
} {
  if (schema === 'public') return { events: CHANNEL, cancels: CANCEL_CHANNEL, turns: TURNS_CHANNEL };
  const tag = createHash('sha256').update(schema, 'utf8').digest('hex').slice(0, 16);
  return { events: `${CHANNEL}_${tag}`, cancels: `${CANCEL_CHANNEL}_${tag}`, turns: `${TURNS_CHANNEL}_${tag}` };
}
/** A cancel request nobody took within this long was for an instance that is gone: it is dropped. */
const CANCEL_REQUEST_TTL_MS = 24 * 60 * 60 * 1000;
/** Held (for one transaction) by the instance running a retention step: one at a time across instances. */
const RETENTION_LOCK = 4242002;
/** With a principal's hash, held while a task joins that principal's line for turns: joins one at a time. */
const TURNS_LOCK = 4242003;

/** The terminal states as an SQL list (the partial indexes and the queries that use them spell it the same). */
const TERMINAL = [...TERMINAL_STATES].sort((a, b) => a - b).join(',');

const SCHEMA = `
CREATE TABLE IF NOT EXISTS baton_tasks (
  agent TEXT NOT NULL, id TEXT NOT NULL, context_id TEXT NOT NULL, principal TEXT NOT NULL,
  kind TEXT NOT NULL, state INTEGER NOT NULL, last_seq BIGINT NOT NULL, snapshot TEXT NOT NULL,
  owner TEXT, created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL, compacted BOOLEAN NOT NULL DEFAULT false,
  PRIMARY KEY (agent, id));
CREATE INDEX IF NOT EXISTS baton_tasks_by_principal ON baton_tasks (agent, principal, updated_at DESC, id DESC);
CREATE TABLE IF NOT EXISTS baton_events (
  agent TEXT NOT NULL, task_id TEXT NOT NULL, seq BIGINT NOT NULL, body TEXT NOT NULL,
  PRIMARY KEY (agent, task_id, seq));
CREATE TABLE IF NOT EXISTS baton_requests (
  principal TEXT NOT NULL, agent TEXT NOT NULL, message_id TEXT NOT NULL, digest TEXT NOT NULL,
  task_id TEXT, created_at BIGINT NOT NULL,
  PRIMARY KEY (principal, agent, message_id));
ALTER TABLE baton_requests ADD COLUMN IF NOT EXISTS instance TEXT;
ALTER TABLE baton_requests ADD COLUMN IF NOT EXISTS sent_digest TEXT;
CREATE INDEX IF NOT EXISTS baton_requests_unbound ON baton_requests (agent) WHERE task_id IS NULL;
CREATE TABLE IF NOT EXISTS baton_instances (
  id TEXT PRIMARY KEY, host TEXT NOT NULL, pid INTEGER NOT NULL, heartbeat_at BIGINT NOT NULL);
CREATE TABLE IF NOT EXISTS baton_cancel_requests (
  agent TEXT NOT NULL, task_id TEXT NOT NULL, instance TEXT NOT NULL, requested_at BIGINT NOT NULL,
  PRIMARY KEY (agent, task_id));
CREATE INDEX IF NOT EXISTS baton_cancel_requests_by_instance ON baton_cancel_requests (instance);
CREATE TABLE IF NOT EXISTS baton_push_configs (
  agent TEXT NOT NULL, task_id TEXT NOT NULL, id TEXT NOT NULL, config TEXT NOT NULL, created_at BIGINT NOT NULL,
  PRIMARY KEY (agent, task_id, id));
DO $$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM information_schema.columns
                 WHERE table_schema = current_schema() AND table_name = 'baton_tasks' AND column_name = 'compacted') THEN
    ALTER TABLE baton_tasks ADD COLUMN compacted BOOLEAN NOT NULL DEFAULT false;
  END IF;
END $$;
CREATE INDEX IF NOT EXISTS baton_tasks_finished ON baton_tasks (updated_at) WHERE state IN (${TERMINAL});
CREATE INDEX IF NOT EXISTS baton_tasks_uncompacted ON baton_tasks (updated_at) WHERE state IN (${TERMINAL}) AND NOT compacted;
CREATE INDEX IF NOT EXISTS baton_requests_by_task ON baton_requests (agent, task_id);
CREATE TABLE IF NOT EXISTS baton_turns (
  principal TEXT NOT NULL, seq BIGINT NOT NULL, agent TEXT NOT NULL, task_id TEXT NOT NULL,
  instance TEXT NOT NULL, queued_at BIGINT NOT NULL,
  PRIMARY KEY (principal, seq));
CREATE INDEX IF NOT EXISTS baton_turns_by_task ON baton_turns (agent, task_id);
`;

type Row = Record<string, unknown>;

/** One statement of `SCHEMA`, with what it makes (`table`, `table.column` or `index`). */
interface SchemaStatement {
  readonly sql: string;
  readonly makes: string;
}

/** The statements of `sql` (split at semicolons outside `$$` quotes), each with what it makes. */
function schemaStatements(sql: string): SchemaStatement[] {
  const parts: string[] = [];
  let start = 0;
  let quoted = false;
  for (let i = 0; i < sql.length; i++) {
    if (sql.startsWith('$$', i)) {
      quoted = !quoted;
      i++;
    } else if (sql[i] === ';' && !quoted) {
      parts.push(sql.slice(start, i + 1).trim());
      start = i + 1;
    }
  }
  return parts
    .filter((p) => p.length > 1)
    .map((p) => {
      const table = /^CREATE TABLE IF NOT EXISTS (\w+)/.exec(p);
      const index = /^CREATE INDEX IF NOT EXISTS (\w+)/.exec(p);
      const column = /ALTER TABLE (\w+) ADD COLUMN (?:IF NOT EXISTS )?(\w+)/.exec(p);
      const makes = table?.[1] ?? index?.[1] ?? (column ? `${column[1]}.${column[2]}` : undefined);
      if (!makes) throw new Error(`the store's schema has a statement that makes nothing known: ${p.slice(0, 60)}`);
      return { sql: p, makes };
    });
}

/** `SCHEMA`, statement by statement (read once: the text is a constant). */
const SCHEMA_STATEMENTS = schemaStatements(SCHEMA);

/** What `SCHEMA` makes: each table with its columns, and each index. */
export function schemaObjects(): {
  readonly tables: ReadonlyMap<string, readonly string[]>;
  readonly indexes: readonly string[];
} {
  const tables = new Map<string, string[]>();
  const indexes: string[] = [];
  for (const st of SCHEMA_STATEMENTS) {
    const table = /^CREATE TABLE IF NOT EXISTS (\w+) \(([^;]*)\);$/.exec(st.sql);
    if (table) {
      const cols = table[2]
        .replace(/,\s*(?:PRIMARY KEY|UNIQUE)\s*\([^)]*\)/g, '')
        .split(',')
        .map((c) => c.trim().split(/\s+/)[0])
        .filter((c) => /^[a-z_]+$/.test(c));
      tables.set(table[1], cols);
    } else if (st.makes.includes('.')) {
      const [t, c] = st.makes.split('.');
      const cols = tables.get(t);
      if (cols && !cols.includes(c)) cols.push(c);
    } else indexes.push(st.makes);
  }
  return { tables, indexes };
}

const SCHEMA_OBJECTS = schemaObjects();

/**
 * What of `SCHEMA` the current schema lacks (`table`, `table.column`, `index`); empty when complete.
 * Read from the catalog, which shows every table whatever the role may do with it.
 */
async function missingSchemaObjects(c: pg.PoolClient): Promise<string[]> {
  const want = SCHEMA_OBJECTS;
  const cols = await c.query<{ t: string; c: string }>(
    `SELECT r.relname AS t, a.attname AS c FROM pg_class r
       JOIN pg_namespace n ON n.oid = r.relnamespace JOIN pg_attribute a ON a.attrelid = r.oid
      WHERE n.nspname = current_schema() AND r.relkind IN ('r', 'p') AND r.relname LIKE 'baton\\_%'
        AND a.attnum > 0 AND NOT a.attisdropped`,
  );
  const have = new Map<string, Set<string>>();
  for (const r of cols.rows) {
    const set = have.get(r.t) ?? new Set<string>();
    set.add(r.c);
    have.set(r.t, set);
  }
  const idx = await c.query<{ i: string }>(
    `SELECT r.relname AS i FROM pg_class r JOIN pg_namespace n ON n.oid = r.relnamespace
      WHERE n.nspname = current_schema() AND r.relkind = 'i' AND r.relname LIKE 'baton\\_%'`,
  );
  const indexes = new Set(idx.rows.map((r) => r.i));
  const missing: string[] = [];
  for (const [table, columns] of want.tables) {
    const got = have.get(table);
    // A missing table is made with the columns its CREATE names, and then those added since.
    if (!got) missing.push(table, ...columns.map((col) => `${table}.${col}`));
    else for (const col of columns) if (!got.has(col)) missing.push(`${table}.${col}`);
  }
  for (const index of want.indexes) if (!indexes.has(index)) missing.push(index);
  return missing;
}

/** Every privilege the gateway uses on its tables (it creates no sequences, functions or types). */
const TABLE_PRIVILEGES = ['SELECT', 'INSERT', 'UPDATE', 'DELETE'] as const;

/** The tables of `SCHEMA` on which the connected role lacks a privilege the gateway uses, as `table: PRIV, …`. */
async function missingPrivileges(c: pg.PoolClient): Promise<string[]> {
  const r = await c.query<Record<string, string | boolean>>(
    `SELECT t, ${TABLE_PRIVILEGES.map((p, i) => `has_table_privilege(format('%I.%I', current_schema(), t), '${p}') AS p${i}`).join(', ')}
       FROM unnest($1::text[]) AS t`,
    [[...SCHEMA_OBJECTS.tables.keys()]],
  );
  return r.rows.flatMap((row) => {
    const lacking = TABLE_PRIVILEGES.filter((_, i) => row[`p${i}`] !== true);
    return lacking.length ? [`${String(row.t)}: ${lacking.join(', ')}`] : [];
  });
}

/**
 * The SQL that makes the gateway's tables, for a database administrator who creates them once as
 * their owner (`baton-gateway --print-postgres-schema`), when the role the gateway connects as may
 * not create tables. That role then needs only SELECT, INSERT, UPDATE and DELETE on them.
 */
export function postgresSchemaSql(): string {
  return `${SCHEMA.trim()}\n`;
}

/**
 * Thrown when the database answers but the gateway may not use it as it is: its role may not create
 * the tables, or lacks a privilege on them. The message says what to run.
 */
export class PostgresSetupError extends Error {
  override readonly name = 'PostgresSetupError';
}

/** Node's codes for a server certificate it could not trust (a CA it does not know, or none). */
const UNTRUSTED_CERT = new Set([
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
]);

/**
 * What to do about a TLS failure at connect, or undefined for any other error. node-postgres checks
 * the server's certificate for every `sslmode` but `disable` and `no-verify`: `require`, which libpq
 * (psql) takes as "encrypt, do not check", is `verify-full` here, so the URL a cloud provider gives
 * fails against its own CA, which Node does not know.
 */
function tlsAdvice(e: unknown): string | undefined {
  const code = (e as { code?: unknown }).code;
  const said = (e as Error).message;
  if (typeof code === 'string' && UNTRUSTED_CERT.has(code))
    return `the database's TLS certificate is not trusted (${said}). The gateway checks it for every sslmode but disable and no-verify (sslmode=require too, unlike psql): add sslrootcert=<file> to the URL with the certificate of the CA that signed it (your provider publishes it), or sslmode=no-verify to encrypt without checking who answers`;
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID')
    return `the database's TLS certificate is for another host name (${said}): connect with a host name it names`;
  if (code === 'CERT_HAS_EXPIRED' || code === 'CERT_NOT_YET_VALID')
    return `the database's TLS certificate is not valid now (${said}): the database's administrator must renew it`;
  if (/server does not support SSL/i.test(said))
    return `the database does not accept TLS (${said}): turn ssl on at the server, or leave sslmode out of the URL (or set sslmode=disable) for a network you trust`;
  return undefined;
}

/** SQLSTATE 42501: insufficient_privilege (also "must be owner of table …"). */
const INSUFFICIENT_PRIVILEGE = '42501';

/**
 * Makes sure the current schema holds the gateway's tables and that the role may use them. When they
 * are all there (an administrator made them, or an earlier start did), no DDL runs, so the role needs
 * no CREATE right on the schema and need not own the tables. What is missing is created; when the role
 * may not, the error names what is missing and the two ways out.
 */
async function ensureSchema(c: pg.PoolClient): Promise<void> {
  const missing = await missingSchemaObjects(c);
  // Said of what is missing: a table, or a column or index of a table that is there.
  const said = missing.filter((m) => !m.includes('.') || !missing.includes(m.split('.')[0]));
  const who = (await c.query<{ u: string; s: string | null }>('SELECT current_user AS u, current_schema() AS s'))
    .rows[0];
  const role = who?.u ?? '?';
  const schema = who?.s ?? '?';
  const ident = (x: string): string => (/^[a-z_][a-z0-9_]*$/.test(x) ? x : `"${x.replace(/"/g, '""')}"`);
  const grant = `GRANT ${TABLE_PRIVILEGES.join(', ')} ON ALL TABLES IN SCHEMA ${ident(schema)} TO ${ident(role)};`;
  if (missing.length) {
    const wanted = new Set(missing);
    try {
      // Only what is missing: a table, column or index that exists needs no right to create it (a
      // CREATE INDEX IF NOT EXISTS on an existing index still wants to own its table).
      for (const st of SCHEMA_STATEMENTS) if (wanted.has(st.makes)) await c.query(st.sql);
    } catch (e) {
      if ((e as { code?: unknown }).code !== INSUFFICIENT_PRIVILEGE) throw e;
      const what = `schema ${schema} lacks ${said.slice(0, 6).join(', ')}${said.length > 6 ? ', …' : ''}`;
      const print = 'the SQL that `baton-gateway --print-postgres-schema` prints (it adds only what is missing)';
      throw new PostgresSetupError(
        /must be owner/.test((e as Error).message)
          ? `cannot use the PostgreSQL store: ${what}, and the role ${role} may not add it (${(e as Error).message}): have the tables' owner run ${print}, or start one gateway as that role once`
          : `cannot use the PostgreSQL store: ${what}, and the role ${role} may not create it (${(e as Error).message}). Either let it (GRANT CREATE ON SCHEMA ${ident(schema)} TO ${ident(role)};) or have the schema's owner run ${print} and then: ${grant}`,
        { cause: e },
      );
    }
  }
  const lacking = await missingPrivileges(c);
  if (lacking.length)
    throw new PostgresSetupError(
      `cannot use the PostgreSQL store: the role ${role} lacks privileges the gateway needs on its tables in schema ${schema} (${lacking.join('; ')}); have their owner run: ${grant}`,
    );
}

/** The LISTEN connection's name in pg_stat_activity (operators can tell it from the pool's). */
export const LISTEN_APPLICATION_NAME = 'baton-gateway-listen';
const RELISTEN_FIRST_MS = 250;
/** How long the start waits for its own test notification on the LISTEN connection. */
const LISTEN_CHECK_MS = 5_000;
const RELISTEN_MAX_MS = 5_000;
/** A write that carries events is tried again this long after the database could not be reached, doubling. */
const RESTORE_FIRST_MS = 250;
const RESTORE_MAX_MS = 5_000;

/**
 * How long the store waits on the network. A network that drops packets without a word (a firewall's
 * state lost, a link gone, a VM paused) answers nothing, not an error: without these a connect or a
 * statement waited until the operating system gave up, many minutes. Each ends as an unavailable
 * database, so a write that carries events is tried again (and checked for a COMMIT that went through).
 */
export interface PostgresTimeouts {
  /** A new connection, or a turn for one when all are busy. */
  readonly connectMs: number;
  /** One statement's answer (client side: the server is not asked to cancel, nothing else is refused). */
  readonly statementMs: number;
  /** TCP keepalive probes start after this long without traffic (an idle connection found dead). */
  readonly keepAliveMs: number;
  /**
   * The server ends a session left inside a transaction this long (`idle_in_transaction_session_timeout`):
   * one whose client is cut off would hold its task's row locks, and so every try to store it, for
   * as long as the server takes to notice (hours, without server keepalive settings).
   */
  readonly idleInTransactionMs: number;
}

/**
 * A statement may wait a minute: a lock held by a migration or a manual fix is waited for, one try
 * after another, and what a try carries is never dropped. No `statement_timeout` is set: a statement
 * the server cancels is refused (SQLSTATE 57014) like a bad one, not tried again.
 */
export const DEFAULT_POSTGRES_TIMEOUTS: PostgresTimeouts = {
  connectMs: 10_000,
  statementMs: 60_000,
  keepAliveMs: 10_000,
  idleInTransactionMs: 60_000,
};

/** The driver's words for the timeouts above. */
const TIMED_OUT =
  /^(Query read timeout|timeout exceeded when trying to connect|Connection terminated due to connection timeout)/;

/** Socket errors that mean the database cannot be reached (nothing about the request itself). */
const UNREACHABLE: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  ETIMEDOUT: 'connection timed out',
  EPIPE: 'connection lost',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  EAI_AGAIN: 'host name lookup failed',
};

/** SQLSTATEs that mean the server cannot serve this connection now (PostgreSQL's appendix A). */
const NOT_SERVING: Readonly<Record<string, string>> = {
  '57P01': 'the server ended the connection: an administrator, or a shutdown',
  '57P02': 'the server ended the connection: it is recovering from a crash',
  '57P03': 'the database is starting up or shutting down',
  '53300': 'the database has no free connection',
  // A standby, or a primary being demoted in a failover: writes come back once the address reaches
  // the new primary (or an administrator turns default_transaction_read_only off again).
  '25006': 'the database is read-only (a standby, or a failover in progress)',
};

/**
 * Why `e` means the database is unavailable (restarting, stopped, refusing new connections, or the
 * connection lost mid-statement), in plain words; undefined for any other error (a constraint, a bug).
 */
export function unavailableReason(e: unknown): string | undefined {
  if (e instanceof StoreUnavailableError) return e.reason;
  if (!(e instanceof Error)) return undefined;
  const code = (e as { code?: unknown }).code;
  if (typeof code === 'string') {
    const known = UNREACHABLE[code] ?? NOT_SERVING[code];
    if (known) return known;
    if (code.startsWith('08')) return 'the connection to the database failed';
    // ALTER DATABASE … ALLOW_CONNECTIONS false
    if (code === '55000' && /not currently accepting connections/.test(e.message))
      return 'the database does not accept connections';
  }
  if (TIMED_OUT.test(e.message)) return 'the database did not answer in time';
  // The driver's own words when the socket closes under it, or for a client whose connection died.
  if (/^Connection terminated|not queryable/.test(e.message)) return 'the connection to the database was lost';
  return undefined;
}

/**
 * What every connection of the store sets first, whatever the database's or role's defaults say
 * (`ALTER DATABASE … SET`, `ALTER ROLE … SET`, or the URL's `options`): the store's writes are made for
 * READ COMMITTED (row locks and conditional updates; under SERIALIZABLE or REPEATABLE READ two
 * instances appending at once failed with "could not serialize access"), and a statement is never
 * cancelled by the server (`statement_timeout`, `lock_timeout`: a cancelled append would be refused,
 * not tried again); the store's own client-side timeouts (`PostgresTimeouts`) bound every wait instead.
 * Sent as statements, not as startup parameters: a connection pooler (PgBouncer) refuses a connection
 * that names parameters it does not know ("unsupported startup parameter").
 */
function sessionSettings(t: PostgresTimeouts): string {
  return `SET default_transaction_isolation = 'read committed'; SET statement_timeout = 0; SET lock_timeout = 0; SET idle_in_transaction_session_timeout = ${Math.max(0, Math.round(t.idleInTransactionMs))}; ${NO_IDLE_SESSION_TIMEOUT}`;
}

/**
 * `idle_session_timeout = 0` where the server has it (PostgreSQL 14 on; before, the name is unknown
 * and a plain SET would fail the statements sent with it). A role or database default would end the
 * LISTEN connection, which is idle by design, every few seconds (seen: "terminating connection due
 * to idle-session timeout" each second with 1 s), and a pooled connection between two writes.
 */
const NO_IDLE_SESSION_TIMEOUT =
  "SELECT set_config('idle_session_timeout', '0', false) WHERE current_setting('idle_session_timeout', true) IS NOT NULL";

/**
 * How the store's transactions begin: the settings above again, for the transaction alone, in the same
 * round trip. A pooler in transaction mode (PgBouncer's `pool_mode = transaction`) hands each
 * transaction a server connection whose session settings need not be this client's.
 */
function beginWith(t: PostgresTimeouts): string {
  return `BEGIN ISOLATION LEVEL READ COMMITTED; SET LOCAL statement_timeout = 0; SET LOCAL lock_timeout = 0; SET LOCAL idle_in_transaction_session_timeout = ${Math.max(0, Math.round(t.idleInTransactionMs))}`;
}

/**
 * SQLSTATEs of a transaction the server rolled back only so that it may be tried again as it was
 * (a deadlock can happen under READ COMMITTED too): `tx` runs it again, up to `TX_TRIES` times.
 */
const TRY_AGAIN = new Set(['40001', '40P01']);
const TX_TRIES = 5;

/** Binds a claim to its task: ($1 task id, $2 principal, $3 agent, $4 messageId). */
const BIND_REQUEST = 'UPDATE baton_requests SET task_id = $1 WHERE principal = $2 AND agent = $3 AND message_id = $4';

export class PostgresGatewayStore implements GatewayStore {
  readonly kind = 'postgres' as const;
  private readonly listeners: AppendListener[] = [];
  private readonly missedListeners: Array<() => void> = [];
  private readonly cancelListeners: Array<{ readonly instance: string; readonly listener: CancelRequestListener }> = [];
  private readonly turnListeners: Array<(key: string) => void> = [];
  private readonly origin = randomBytes(8).toString('hex');
  private listener: pg.Client | undefined;
  private closing = false;
  /** This store's NOTIFY channels (`channelsOf` its schema; set when it opens). */
  private channels = channelsOf('public');
  private relistenTimer: NodeJS.Timeout | undefined;
  /** Since when the database has been unavailable (the first failure of this outage), with why. */
  private outage: { readonly since: number; readonly reason: string } | undefined;
  /** Wakes the writes waiting to be tried again, so that `close` does not wait for their next round. */
  private readonly waiting = new Set<() => void>();

  /** How this store's transactions begin (`beginWith` its timeouts). */
  private readonly begin: string;

  private constructor(
    private readonly pool: pg.Pool,
    /** Where the LISTEN connection goes (the store's `listenUrl`, else its `url`). */
    private readonly listenUrl: string,
    private readonly log: (line: string) => void,
    private readonly timeouts: PostgresTimeouts,
  ) {
    this.begin = beginWith(timeouts);
  }

  static async open(
    url: string,
    log: (line: string) => void = () => undefined,
    timeouts: PostgresTimeouts = DEFAULT_POSTGRES_TIMEOUTS,
    listenUrl?: string,
  ): Promise<PostgresGatewayStore> {
    const pool = new pg.Pool({
      connectionString: url,
      max: 10,
      connectionTimeoutMillis: timeouts.connectMs,
      keepAlive: true,
      keepAliveInitialDelayMillis: timeouts.keepAliveMs,
      query_timeout: timeouts.statementMs,
    });
    pool.on('error', () => undefined); // an idle client's error surfaces on the next query
    // The pool listens for errors only on idle clients. A client checked out for a transaction whose
    // connection ends (the server restarts, an admin ends the backend) emits 'error' outside any query
    // (after a FATAL between statements, or once the socket closes under the ROLLBACK): without a
    // listener that would end the process. The statement in progress fails with the error anyway.
    pool.on('connect', (client) => {
      client.on('error', () => undefined);
      // Queued before any caller's statement on this connection. A failure shows on that statement.
      void client.query(sessionSettings(timeouts)).catch(() => undefined);
    });
    const store = new PostgresGatewayStore(pool, listenUrl ?? url, log, timeouts);
    try {
      // Several instances may start at once; the advisory lock serialises their schema checks and DDL.
      const c = await pool.connect();
      try {
        const schema: unknown = (await c.query<{ s: string | null }>('SELECT current_schema() AS s')).rows[0]?.s;
        if (typeof schema !== 'string')
          throw new PostgresSetupError(
            'cannot use the PostgreSQL store: no schema of its search_path exists or may be used by the role (it needs USAGE on it); create one (CREATE SCHEMA baton AUTHORIZATION <role>) or name one in the URL (?options=-c%20search_path%3Dbaton)',
          );
        const ro = (
          await c.query<{ ro: string; standby: boolean }>(
            "SELECT current_setting('transaction_read_only') AS ro, pg_is_in_recovery() AS standby",
          )
        ).rows[0];
        if (ro?.standby)
          throw new PostgresSetupError(
            "cannot use the PostgreSQL store: store.url reaches a standby, which is read-only; give the primary's address (or one that follows it through a failover)",
          );
        if (ro?.ro === 'on')
          throw new PostgresSetupError(
            "cannot use the PostgreSQL store: its sessions are read-only (default_transaction_read_only is on for the database or the role); turn it off for the gateway's role: ALTER ROLE <role> SET default_transaction_read_only = off",
          );
        // In one transaction, under a transaction-level lock: through a pooler in transaction mode
        // a session's lock and its unlock could run on two server connections, and the lock be held
        // for good by the first.
        await c.query('BEGIN');
        try {
          await c.query('SELECT pg_advisory_xact_lock(4242001)');
          await ensureSchema(c);
          await c.query('COMMIT');
        } catch (e) {
          await c.query('ROLLBACK').catch(() => undefined);
          throw e;
        }
        store.channels = channelsOf(schema);
      } finally {
        c.release();
      }
      await store.listen(listenUrl === undefined ? 'url' : 'listenUrl');
    } catch (e) {
      await pool.end().catch(() => undefined);
      if (e instanceof PostgresSetupError) throw e;
      const tls = tlsAdvice(e);
      if (tls) throw new PostgresSetupError(`cannot use the PostgreSQL store: ${tls}`, { cause: e });
      throw new Error(
        `cannot use the PostgreSQL store (${(e as Error).message}); check store.url and that the database accepts connections`,
      );
    }
    return store;
  }

  /**
   * One connection holds LISTEN for the three channels (events, turns, cancels). When it is lost (the server restarted, an admin
   * ended it, the network dropped) it is opened again with backoff, and everyone following a task is
   * told to read the store: notifications sent while nobody listened are gone, the events are not.
   * With `check` (at start, naming the setting the connection came from), it first makes sure a notification sent through the pool reaches it: a pooler in transaction mode
   * (PgBouncer's `pool_mode = transaction`) accepts LISTEN and then passes nothing on, and instances
   * would silently stop seeing each other's events.
   */
  private async listen(check?: 'url' | 'listenUrl'): Promise<void> {
    // No statement timeout: the connection waits for notifications, not answers. Keepalive finds it dead.
    const client = new pg.Client({
      connectionString: this.listenUrl,
      application_name: LISTEN_APPLICATION_NAME,
      connectionTimeoutMillis: this.timeouts.connectMs,
      keepAlive: true,
      keepAliveInitialDelayMillis: this.timeouts.keepAliveMs,
    });
    let lost = false;
    const onLost = (why: string): void => {
      if (lost) return;
      lost = true;
      if (this.listener === client) this.listener = undefined;
      void client.end().catch(() => undefined);
      if (this.closing) return;
      this.log(`PostgreSQL LISTEN connection lost (${why}); listening again`);
      this.relisten(RELISTEN_FIRST_MS);
    };
    client.on('error', (e) => onLost(e.message));
    client.on('end', () => onLost('connection closed'));
    const probe = `baton_probe_${this.origin}`;
    let heard: (() => void) | undefined;
    client.on('notification', (n) => {
      if (n.channel === probe) {
        heard?.();
        return;
      }
      if (n.channel === this.channels.cancels && n.payload) {
        this.deliverCancel(n.payload);
        return;
      }
      if (n.channel === this.channels.turns && n.payload) {
        for (const l of this.turnListeners) l(n.payload);
        return;
      }
      if (n.channel !== this.channels.events || !n.payload) return;
      try {
        const m = JSON.parse(n.payload) as { o: string; a: string; t: string; s: number };
        if (m.o === this.origin) return;
        for (const l of this.listeners) l(m.a, m.t, m.s);
      } catch {
        // Not ours.
      }
    });
    try {
      await client.connect();
      await client.query(NO_IDLE_SESSION_TIMEOUT);
      if (check) {
        await client.query(`LISTEN ${probe}`);
        const arrived = new Promise<boolean>((resolve) => {
          const timer = setTimeout(() => resolve(false), LISTEN_CHECK_MS);
          heard = () => {
            clearTimeout(timer);
            resolve(true);
          };
        });
        await this.pool.query('SELECT pg_notify($1, $2)', [probe, 'probe']);
        const ok = await arrived;
        await client.query(`UNLISTEN ${probe}`);
        if (!ok)
          throw new PostgresSetupError(
            `cannot use the PostgreSQL store: its LISTEN connection (store.${check}) received no notification within ${LISTEN_CHECK_MS / 1000} s, so instances would not see each other's events. A connection pooler in transaction mode (PgBouncer's pool_mode = transaction) does not pass notifications on: ${check === 'url' ? 'set store.listenUrl (or listenUrlEnv) to a direct or session-pooled connection to the same database' : 'make store.listenUrl a direct or session-pooled connection to the same database'}`,
          );
      }
      // The channels last (an operator finds the listener by its last statement, the LISTEN on cancels).
      await client.query(`LISTEN ${this.channels.events}`);
      await client.query(`LISTEN ${this.channels.turns}`);
      await client.query(`LISTEN ${this.channels.cancels}`);
    } catch (e) {
      lost = true;
      await client.end().catch(() => undefined);
      throw e;
    }
    if (this.closing) {
      await client.end().catch(() => undefined);
      return;
    }
    this.listener = client;
  }

  private relisten(delayMs: number): void {
    clearTimeout(this.relistenTimer);
    this.relistenTimer = setTimeout(() => {
      this.relistenTimer = undefined;
      if (this.closing) return;
      this.listen().then(
        () => {
          if (this.closing) return;
          this.log('PostgreSQL LISTEN connection restored');
          for (const l of this.missedListeners) l();
          // Cancels asked for while nobody listened wait in their table.
          for (const instance of new Set(this.cancelListeners.map((c) => c.instance)))
            this.takeCancelRequests(instance);
        },
        (e: unknown) => {
          const next = Math.min(delayMs * 2, RELISTEN_MAX_MS);
          this.log(`PostgreSQL LISTEN: cannot listen again (${(e as Error).message}); retrying in ${next} ms`);
          this.relisten(next);
        },
      );
    }, delayMs);
    this.relistenTimer.unref();
  }

  private deliverCancel(payload: string): void {
    let m: { instance?: unknown; agent?: unknown; taskId?: unknown };
    try {
      m = JSON.parse(payload) as typeof m;
    } catch {
      return; // not ours
    }
    if (typeof m.instance !== 'string' || !this.cancelListeners.some((c) => c.instance === m.instance)) return;
    // The stored request is the message: taking it from the table makes each one carried out once.
    this.takeCancelRequests(m.instance);
  }

  /** Takes (deletes) the stored cancel requests addressed to `instance` and hands them to its listeners. */
  private takeCancelRequests(instance: string): void {
    if (this.closing) return;
    this.query(
      'DELETE FROM baton_cancel_requests WHERE instance = $1 OR requested_at < $2 RETURNING agent, task_id, instance',
      [instance, Date.now() - CANCEL_REQUEST_TTL_MS],
    ).then(
      (r) => {
        for (const x of r.rows as Row[]) {
          if (String(x.instance) !== instance) continue; // expired, for an instance long gone
          for (const c of this.cancelListeners)
            if (c.instance === instance) c.listener(String(x.agent), String(x.task_id));
        }
      },
      (e: unknown) => {
        if (!this.closing)
          this.log(
            `PostgreSQL: cannot read the cancel requests for this instance (${(e as Error).message}); they are taken when it listens again`,
          );
      },
    );
  }

  /** One statement on a pooled connection; an unavailable database is a `StoreUnavailableError`. */
  private async query(text: string, values?: unknown[]): Promise<pg.QueryResult> {
    let r: pg.QueryResult;
    try {
      r = await this.pool.query(text, values);
    } catch (e) {
      throw this.fault(e);
    }
    this.available();
    return r;
  }

  /**
   * Runs `fn` in one transaction; one the server rolls back to be tried again (a deadlock, a
   * serialization failure) is run again, after a short random wait, up to `TX_TRIES` times in all.
   */
  private async tx<T>(fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.txOnce(fn);
      } catch (e) {
        const code = (e as { code?: unknown }).code;
        if (attempt >= TX_TRIES || typeof code !== 'string' || !TRY_AGAIN.has(code) || this.closing) throw e;
        await new Promise((r) => setTimeout(r, attempt * (5 + Math.random() * 20)));
      }
    }
  }

  private async txOnce<T>(fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
    let c: pg.PoolClient;
    try {
      c = await this.pool.connect();
    } catch (e) {
      throw this.fault(e);
    }
    let broken: Error | undefined;
    try {
      await c.query(this.begin);
      const out = await fn(c);
      await c.query('COMMIT');
      this.available();
      return out;
    } catch (e) {
      // A connection that cannot even roll back is dropped from the pool, not handed to the next caller;
      // so is one whose statement got no answer in time (a ROLLBACK would wait behind it, then time out).
      if (e instanceof Error && TIMED_OUT.test(e.message)) broken = e;
      else await c.query('ROLLBACK').catch((r: unknown) => (broken = r instanceof Error ? r : new Error(String(r))));
      throw this.fault(e);
    } finally {
      c.release(broken);
    }
  }

  /**
   * The error a caller gets for `e`: a `StoreUnavailableError` when the database is unavailable (the
   * first of an outage is logged, with the driver's words), else `e` as it is.
   */
  private fault(e: unknown): unknown {
    const reason = unavailableReason(e);
    if (reason === undefined) return e;
    if (!this.outage && !this.closing) {
      this.outage = { since: Date.now(), reason };
      this.log(
        `PostgreSQL is unavailable (${reason}: ${(e as Error).message}); requests are answered 503 (retry later) until it is back, and the events of running tasks wait here to be stored then`,
      );
    }
    return e instanceof StoreUnavailableError ? e : new StoreUnavailableError(reason, { cause: e });
  }

  /** A statement went through: an outage, if there was one, is over. */
  private available(): void {
    if (!this.outage) return;
    const s = ((Date.now() - this.outage.since) / 1000).toFixed(1);
    this.outage = undefined;
    this.log(`PostgreSQL is available again (it was unavailable for ${s} s)`);
  }

  /**
   * Runs a write that carries a task's events until it is done. Those events are numbered and their
   * task goes on (a relayed remote does not wait for us), so while the database is unavailable the
   * write is tried again (0.25 s, doubling up to 5 s) for as long as the store is open, and the writer
   * holds what comes meanwhile. `again` is true from the second try on: the previous one may have
   * committed before its answer was lost, which `write` must check.
   */
  private async untilStored(write: (again: boolean) => Promise<void>): Promise<void> {
    let delay = RESTORE_FIRST_MS;
    for (let again = false; ; again = true) {
      try {
        await write(again);
        return;
      } catch (e) {
        if (!(e instanceof StoreUnavailableError) || this.closing) throw e;
        await new Promise<void>((resolve) => {
          const wake = (): void => {
            clearTimeout(timer);
            this.waiting.delete(wake);
            resolve();
          };
          const timer = setTimeout(wake, delay);
          this.waiting.add(wake);
        });
        if (this.closing) throw e;
        delay = Math.min(delay * 2, RESTORE_MAX_MS);
      }
    }
  }

  async claimRequest(
    principal: string,
    agent: string,
    messageId: string,
    digest: string,
    taskId: string | null,
    instance?: string,
    sentDigest?: string,
  ): Promise<ClaimResult> {
    const ins = await this.query(
      'INSERT INTO baton_requests (principal, agent, message_id, digest, task_id, created_at, instance, sent_digest) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING RETURNING 1',
      [principal, agent, messageId, digest, taskId, Date.now(), instance ?? null, sentDigest ?? null],
    );
    if (ins.rowCount === 1) return { kind: 'new' };
    const found = await this.findRequest(principal, agent, messageId);
    if (!found) return this.claimRequest(principal, agent, messageId, digest, taskId, instance, sentDigest); // released meanwhile
    if (found.digest !== digest) return { kind: 'conflict' };
    return { kind: 'existing', taskId: found.taskId };
  }

  async findRequest(principal: string, agent: string, messageId: string): Promise<RequestClaim | undefined> {
    const r = await this.query(
      'SELECT digest, task_id, instance, created_at, sent_digest FROM baton_requests WHERE principal = $1 AND agent = $2 AND message_id = $3',
      [principal, agent, messageId],
    );
    const row = r.rows[0] as Row | undefined;
    return row ? toRequestClaim(row) : undefined;
  }

  async listUnboundRequests(): Promise<UnboundClaim[]> {
    const r = await this.query(
      'SELECT principal, agent, message_id, digest, task_id, instance, created_at, sent_digest FROM baton_requests WHERE task_id IS NULL',
    );
    return (r.rows as Row[]).map(toUnboundClaim);
  }

  async takeOverRequest(
    principal: string,
    agent: string,
    messageId: string,
    from: string | null,
    to: string | null,
  ): Promise<boolean> {
    const r = await this.query(
      'UPDATE baton_requests SET instance = $5 WHERE principal = $1 AND agent = $2 AND message_id = $3 AND task_id IS NULL AND instance IS NOT DISTINCT FROM $4',
      [principal, agent, messageId, from, to],
    );
    return r.rowCount === 1;
  }

  async bindRequest(principal: string, agent: string, messageId: string, taskId: string): Promise<void> {
    await this.query(BIND_REQUEST, [taskId, principal, agent, messageId]);
  }

  async releaseStaleClaim(
    principal: string,
    agent: string,
    messageId: string,
    taskId: string,
    instance: string | null,
  ): Promise<boolean> {
    const r = await this.query(
      'DELETE FROM baton_requests WHERE principal = $1 AND agent = $2 AND message_id = $3 AND task_id = $4 AND instance IS NOT DISTINCT FROM $5',
      [principal, agent, messageId, taskId, instance],
    );
    return r.rowCount === 1;
  }

  async releaseRequest(principal: string, agent: string, messageId: string): Promise<void> {
    await this.query('DELETE FROM baton_requests WHERE principal = $1 AND agent = $2 AND message_id = $3', [
      principal,
      agent,
      messageId,
    ]);
  }

  async createTask(task: NewTask, first: EventRow): Promise<void> {
    const now = Date.now();
    await this.untilStored((again) =>
      this.tx(async (c) => {
        // From the second try on, the task may be there already: the try whose answer was lost may have
        // committed (the insert waits for it, if its connection's transaction is still open).
        const made = await c.query(
          `INSERT INTO baton_tasks (agent, id, context_id, principal, kind, state, last_seq, snapshot, owner, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)${again ? ' ON CONFLICT DO NOTHING' : ''}`,
          [
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
          ],
        );
        if (made.rowCount === 0) {
          const had = await c.query('SELECT body FROM baton_events WHERE agent = $1 AND task_id = $2 AND seq = $3', [
            task.agent,
            task.id,
            first.seq,
          ]);
          const row = had.rows[0] as Row | undefined;
          if (row && String(row.body) === bodyText(first.body)) return;
          throw new Error(`task ${task.id} of ${task.agent} exists already`);
        }
        await c.query('INSERT INTO baton_events (agent, task_id, seq, body) VALUES ($1, $2, $3, $4)', [
          task.agent,
          task.id,
          first.seq,
          bodyText(first.body),
        ]);
        if (task.request !== undefined)
          await c.query(BIND_REQUEST, [task.id, task.principal, task.agent, task.request]);
        await c.query('SELECT pg_notify($1, $2)', [
          this.channels.events,
          JSON.stringify({ o: this.origin, a: task.agent, t: task.id, s: first.seq }),
        ]);
      }),
    );
  }

  async append(batch: AppendBatch): Promise<void> {
    if (batch.events.length === 0) return;
    // This store does not fold snapshots on read (`foldsSnapshots` unset): every batch carries one.
    if (batch.snapshot === undefined) throw new Error(`the batch for task ${batch.taskId} carries no snapshot`);
    const first = batch.events[0].seq;
    const last = batch.events[batch.events.length - 1].seq;
    await this.untilStored((again) =>
      this.tx(async (c) => {
        if (again) {
          // The try whose answer was lost may have committed (the connection died during COMMIT): then
          // these very events are stored. Other events at these seqs were written by another instance
          // (one that took the task over while this one could not reach the database). The task's row
          // is locked first: a try whose transaction is still open holds it, and is waited for.
          await c.query('SELECT 1 FROM baton_tasks WHERE agent = $1 AND id = $2 FOR UPDATE', [
            batch.agent,
            batch.taskId,
          ]);
          const had = (
            await c.query(
              'SELECT seq, body FROM baton_events WHERE agent = $1 AND task_id = $2 AND seq >= $3 AND seq <= $4 ORDER BY seq',
              [batch.agent, batch.taskId, first, last],
            )
          ).rows as Row[];
          if (had.length > 0) {
            if (
              had.length === batch.events.length &&
              had.every((r, i) => String(r.body) === bodyText(batch.events[i].body))
            )
              return;
            throw new Error(
              `events ${first} to ${last} of task ${batch.taskId} were stored by another gateway instance while this one could not reach the database; this instance stops writing the task`,
            );
          }
        }
        const values: unknown[] = [];
        const tuples = batch.events.map((e, i) => {
          values.push(batch.agent, batch.taskId, e.seq, bodyText(e.body));
          return `($${i * 4 + 1}, $${i * 4 + 2}, $${i * 4 + 3}, $${i * 4 + 4})`;
        });
        await c.query(`INSERT INTO baton_events (agent, task_id, seq, body) VALUES ${tuples.join(', ')}`, values);
        if (batch.owner !== undefined) {
          await c.query(
            'UPDATE baton_tasks SET state = $1, last_seq = $2, snapshot = $3, owner = $4, updated_at = $5 WHERE agent = $6 AND id = $7',
            [batch.state, last, batch.snapshot, batch.owner, Date.now(), batch.agent, batch.taskId],
          );
        } else {
          await c.query(
            'UPDATE baton_tasks SET state = $1, last_seq = $2, snapshot = $3, updated_at = $4 WHERE agent = $5 AND id = $6',
            [batch.state, last, batch.snapshot, Date.now(), batch.agent, batch.taskId],
          );
        }
        await c.query('SELECT pg_notify($1, $2)', [
          this.channels.events,
          JSON.stringify({ o: this.origin, a: batch.agent, t: batch.taskId, s: last }),
        ]);
      }),
    );
  }

  async getTask(agent: string, taskId: string): Promise<TaskRow | undefined> {
    const r = await this.query('SELECT * FROM baton_tasks WHERE agent = $1 AND id = $2', [agent, taskId]);
    return r.rows[0] ? toTaskRow(r.rows[0] as Row) : undefined;
  }

  /** The WHERE terms of a filter, with their parameters (every term is ANDed). */
  private static filterTerms(f: TaskFilter): { where: string[]; params: unknown[] } {
    const where = ['agent = $1', 'principal = $2'];
    const params: unknown[] = [f.agent, f.principal];
    if (f.contextId) {
      params.push(f.contextId);
      where.push(`context_id = $${params.length}`);
    }
    if (f.state !== undefined) {
      params.push(f.state);
      where.push(`state = $${params.length}`);
    }
    if (f.updatedFrom !== undefined) {
      params.push(f.updatedFrom);
      where.push(`updated_at >= $${params.length}`);
    }
    return { where, params };
  }

  async listTasks(f: ListFilter): Promise<TaskRow[]> {
    const { where, params } = PostgresGatewayStore.filterTerms(f);
    if (f.before) {
      params.push(f.before.updatedAt, f.before.id);
      where.push(
        `(updated_at < $${params.length - 1} OR (updated_at = $${params.length - 1} AND id < $${params.length}))`,
      );
    }
    params.push(f.limit);
    const r = await this.query(
      `SELECT * FROM baton_tasks WHERE ${where.join(' AND ')} ORDER BY updated_at DESC, id DESC LIMIT $${params.length}`,
      params,
    );
    return r.rows.map((x) => toTaskRow(x as Row));
  }

  async countTasks(f: TaskFilter): Promise<number> {
    const { where, params } = PostgresGatewayStore.filterTerms(f);
    const r = await this.query(`SELECT count(*) AS n FROM baton_tasks WHERE ${where.join(' AND ')}`, params);
    return Number((r.rows[0] as Row | undefined)?.n ?? 0);
  }

  async readEvents(agent: string, taskId: string, afterSeq: number, limit: number): Promise<StoredEventRow[]> {
    const r = await this.query(
      'SELECT seq, body FROM baton_events WHERE agent = $1 AND task_id = $2 AND seq > $3 ORDER BY seq LIMIT $4',
      [agent, taskId, afterSeq, limit],
    );
    return r.rows.map((x) => ({ seq: Number((x as Row).seq), body: String((x as Row).body) }));
  }

  async listOwnedUnfinished(): Promise<TaskRow[]> {
    const r = await this.query(
      `SELECT * FROM baton_tasks WHERE owner IS NOT NULL AND state NOT IN (${[...TERMINAL_STATES].join(',')})`,
    );
    return r.rows.map((x) => toTaskRow(x as Row));
  }

  async takeOver(agent: string, taskId: string, from: string, to: string): Promise<TaskRow | undefined> {
    const r = await this.query(
      `UPDATE baton_tasks SET owner = $1 WHERE agent = $2 AND id = $3 AND owner = $4 AND state NOT IN (${[...TERMINAL_STATES].join(',')}) RETURNING *`,
      [to, agent, taskId, from],
    );
    return r.rows[0] ? toTaskRow(r.rows[0] as Row) : undefined;
  }

  async heartbeat(instance: string, host: string, pid: number): Promise<void> {
    await this.query(
      'INSERT INTO baton_instances (id, host, pid, heartbeat_at) VALUES ($1, $2, $3, $4) ON CONFLICT (id) DO UPDATE SET heartbeat_at = EXCLUDED.heartbeat_at',
      [instance, host, pid, Date.now()],
    );
  }

  async instances(): Promise<Map<string, { host: string; pid: number; heartbeatAt: number }>> {
    const r = await this.query('SELECT * FROM baton_instances');
    const out = new Map<string, { host: string; pid: number; heartbeatAt: number }>();
    for (const x of r.rows as Row[])
      out.set(String(x.id), { host: String(x.host), pid: Number(x.pid), heartbeatAt: Number(x.heartbeat_at) });
    return out;
  }

  onRemoteAppend(listener: AppendListener): void {
    this.listeners.push(listener);
  }

  onMissedAppends(listener: () => void): void {
    this.missedListeners.push(listener);
  }

  async requestCancel(agent: string, taskId: string, ownerInstance: string): Promise<void> {
    // One statement, so one transaction: the notification goes out once the request is stored, and an
    // owner that is not listening right now finds it when it listens again.
    await this.query(
      `WITH r AS (
         INSERT INTO baton_cancel_requests (agent, task_id, instance, requested_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (agent, task_id) DO UPDATE SET instance = EXCLUDED.instance, requested_at = EXCLUDED.requested_at
         RETURNING 1)
       SELECT pg_notify($5, $6) FROM r`,
      [
        agent,
        taskId,
        ownerInstance,
        Date.now(),
        this.channels.cancels,
        JSON.stringify({ instance: ownerInstance, agent, taskId }),
      ],
    );
  }

  onCancelRequest(instance: string, listener: CancelRequestListener): void {
    this.cancelListeners.push({ instance, listener });
    // Requests stored for this instance before it listened (none for a fresh instance id, but cheap).
    this.takeCancelRequests(instance);
  }

  async queueTurn(principal: string, agent: string, taskId: string, instance: string): Promise<number> {
    return this.tx(async (c) => {
      await c.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [TURNS_LOCK, principal]);
      const r = await c.query(
        `INSERT INTO baton_turns (principal, seq, agent, task_id, instance, queued_at)
           SELECT $1, COALESCE(MAX(seq), 0) + 1, $2, $3, $4, $5 FROM baton_turns WHERE principal = $1
         RETURNING seq`,
        [principal, agent, taskId, instance, Date.now()],
      );
      return Number((r.rows[0] as Row).seq);
    });
  }

  async turnsOf(principal: string): Promise<TurnRow[]> {
    const r = await this.query(
      `SELECT r.seq, r.instance, i.host, i.pid, i.heartbeat_at FROM baton_turns r
         JOIN baton_tasks t ON t.agent = r.agent AND t.id = r.task_id
         LEFT JOIN baton_instances i ON i.id = r.instance
        WHERE r.principal = $1 AND t.state NOT IN (${TERMINAL}) ORDER BY r.seq`,
      [principal],
    );
    return (r.rows as Row[]).map((x) => ({
      seq: Number(x.seq),
      instance: String(x.instance),
      beat:
        x.heartbeat_at === null
          ? undefined
          : { host: String(x.host), pid: Number(x.pid), heartbeatAt: Number(x.heartbeat_at) },
    }));
  }

  async dropTurn(principal: string, seq: number, agent: string, taskId: string): Promise<void> {
    // One statement: the task's row goes, with any of the line whose task has ended or is gone (one
    // whose own drop never arrived), and the line's listeners are told once something went.
    await this.query(
      `WITH d AS (
         DELETE FROM baton_turns r WHERE r.principal = $1
            AND ((r.seq = $2 AND r.agent = $3 AND r.task_id = $4)
                 OR NOT EXISTS (SELECT 1 FROM baton_tasks t
                                 WHERE t.agent = r.agent AND t.id = r.task_id AND t.state NOT IN (${TERMINAL})))
         RETURNING 1)
       SELECT pg_notify($5, $6) FROM (SELECT 1 FROM d LIMIT 1) moved`,
      [principal, seq, agent, taskId, this.channels.turns, turnKey(principal)],
    );
  }

  onTurnsMoved(listener: (key: string) => void): void {
    this.turnListeners.push(listener);
  }

  async putPushConfig(agent: string, taskId: string, id: string, config: string): Promise<void> {
    await this.query(
      'INSERT INTO baton_push_configs (agent, task_id, id, config, created_at) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (agent, task_id, id) DO UPDATE SET config = EXCLUDED.config',
      [agent, taskId, id, config, Date.now()],
    );
  }

  async listPushConfigs(agent: string, taskId: string): Promise<PushConfigRow[]> {
    const r = await this.query(
      'SELECT * FROM baton_push_configs WHERE agent = $1 AND task_id = $2 ORDER BY created_at, id',
      [agent, taskId],
    );
    return (r.rows as Row[]).map((x) => ({
      agent: String(x.agent),
      taskId: String(x.task_id),
      id: String(x.id),
      config: String(x.config),
      createdAt: Number(x.created_at),
    }));
  }

  async deletePushConfig(agent: string, taskId: string, id: string): Promise<boolean> {
    const r = await this.query('DELETE FROM baton_push_configs WHERE agent = $1 AND task_id = $2 AND id = $3', [
      agent,
      taskId,
      id,
    ]);
    return (r.rowCount ?? 0) > 0;
  }

  async size(): Promise<number> {
    const r = await this.query(
      `SELECT COALESCE(sum(pg_total_relation_size(c.oid)), 0)::bigint AS b FROM pg_class c
         JOIN pg_namespace n ON n.oid = c.relnamespace
       WHERE c.relkind = 'r' AND n.nspname = current_schema() AND c.relname LIKE 'baton\\_%'`,
    );
    return Number((r.rows[0] as Row | undefined)?.b ?? 0);
  }

  /**
   * One step, in one transaction under a transaction-level advisory lock: a second instance finds the
   * lock taken and skips its turn. The size cap counts what the rows hold (snapshots and event bodies),
   * not the tables' files: deleted rows' space is reused by autovacuum, not handed back, so the files
   * stay near their largest size. That count is a scan, made only once the files exceed the cap.
   */
  async retain(step: RetentionStep): Promise<RetentionOutcome> {
    const limit = Math.max(1, Math.floor(step.limit));
    return this.tx(async (c) => {
      const lock = await c.query('SELECT pg_try_advisory_xact_lock($1) AS ok', [RETENTION_LOCK]);
      if ((lock.rows[0] as Row | undefined)?.ok !== true)
        return { compacted: 0, deleted: 0, deletedForSpace: 0, more: false, busy: true };
      const busy = busyParents(
        (
          await c.query(
            `SELECT principal FROM baton_tasks WHERE state NOT IN (${TERMINAL}) AND principal LIKE '${CHILD_PRINCIPAL_PREFIX}%'`,
          )
        ).rows.map((r) => String((r as Row).principal)),
      );
      const free = (rows: readonly Row[]): Array<{ agent: string; id: string }> =>
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
          (
            await c.query(
              `SELECT agent, id FROM baton_tasks WHERE state IN (${TERMINAL}) AND NOT compacted AND updated_at < $1 ORDER BY updated_at LIMIT $2`,
              [step.compactBefore, limit + busy.size],
            )
          ).rows as Row[],
        );
        for (const t of due) {
          await c.query('DELETE FROM baton_events WHERE agent = $1 AND task_id = $2', [t.agent, t.id]);
          await c.query('UPDATE baton_tasks SET compacted = true WHERE agent = $1 AND id = $2', [t.agent, t.id]);
        }
        compacted = due.length;
        more ||= due.length === limit;
      }
      if (step.deleteBefore !== undefined) {
        const due = free(
          (
            await c.query(
              `SELECT agent, id FROM baton_tasks WHERE state IN (${TERMINAL}) AND updated_at < $1 ORDER BY updated_at LIMIT $2`,
              [step.deleteBefore, limit + busy.size],
            )
          ).rows as Row[],
        );
        await this.deleteTasks(c, due);
        deleted = due.length;
        more ||= due.length === limit;
      }
      if (step.maxBytes !== undefined && deleted < limit && (await this.size()) > step.maxBytes) {
        const held = await c.query(
          `SELECT (SELECT COALESCE(sum(octet_length(snapshot)), 0) FROM baton_tasks)
                + (SELECT COALESCE(sum(octet_length(body)), 0) FROM baton_events) AS b`,
        );
        const data = Number((held.rows[0] as Row | undefined)?.b ?? 0);
        let need = data - (step.downToBytes ?? step.maxBytes);
        if (data > step.maxBytes) {
          const rows = (
            await c.query(
              `SELECT t.agent, t.id, octet_length(t.snapshot) + COALESCE((SELECT sum(octet_length(e.body)) FROM baton_events e WHERE e.agent = t.agent AND e.task_id = t.id), 0) AS bytes
                 FROM baton_tasks t WHERE t.state IN (${TERMINAL}) ORDER BY t.updated_at LIMIT $1`,
              [limit - deleted + busy.size],
            )
          ).rows as Row[];
          const bytes = new Map(rows.map((r) => [`${String(r.agent)}/${String(r.id)}`, Number(r.bytes)]));
          const due: Array<{ agent: string; id: string }> = [];
          for (const t of free(rows)) {
            if (need <= 0 || due.length >= limit - deleted) break;
            due.push(t);
            need -= bytes.get(`${t.agent}/${t.id}`) ?? 0;
          }
          await this.deleteTasks(c, due);
          deleted += due.length;
          deletedForSpace = due.length;
          more ||= need > 0 && due.length > 0;
        }
      }
      return { compacted, deleted, deletedForSpace, more };
    });
  }

  /** Deletes finished tasks with everything that is theirs: events, push configs, idempotency claims. */
  private async deleteTasks(c: pg.PoolClient, tasks: ReadonlyArray<{ agent: string; id: string }>): Promise<void> {
    for (const t of tasks) {
      await c.query('DELETE FROM baton_events WHERE agent = $1 AND task_id = $2', [t.agent, t.id]);
      await c.query('DELETE FROM baton_push_configs WHERE agent = $1 AND task_id = $2', [t.agent, t.id]);
      await c.query('DELETE FROM baton_requests WHERE agent = $1 AND task_id = $2', [t.agent, t.id]);
      await c.query('DELETE FROM baton_cancel_requests WHERE agent = $1 AND task_id = $2', [t.agent, t.id]);
      await c.query('DELETE FROM baton_turns WHERE agent = $1 AND task_id = $2', [t.agent, t.id]);
      await c.query('DELETE FROM baton_tasks WHERE agent = $1 AND id = $2', [t.agent, t.id]);
    }
  }

  async pruneInstances(heartbeatBefore: number, self?: string): Promise<number> {
    const r = await this.query(
      `DELETE FROM baton_instances i WHERE (i.heartbeat_at < $1 OR i.id = $2)
         AND NOT EXISTS (SELECT 1 FROM baton_tasks t WHERE t.owner = i.id AND t.state NOT IN (${TERMINAL}))`,
      [heartbeatBefore, self ?? null],
    );
    return r.rowCount ?? 0;
  }

  async integrityCheck(): Promise<string> {
    // Every task's events are contiguous 1..last_seq (the invariant replay depends on), but for a
    // compacted task, which keeps none.
    const r = await this.query(`
      SELECT t.agent, t.id FROM baton_tasks t
      LEFT JOIN (SELECT agent, task_id, count(*) AS n, max(seq) AS m FROM baton_events GROUP BY agent, task_id) e
        ON e.agent = t.agent AND e.task_id = t.id
      WHERE NOT t.compacted AND (e.n IS NULL OR e.n <> t.last_seq OR e.m <> t.last_seq)`);
    return r.rowCount === 0
      ? 'ok'
      : `tasks with gaps in their events: ${r.rows.map((x) => `${String((x as Row).agent)}/${String((x as Row).id)}`).join(', ')}`;
  }

  async close(): Promise<void> {
    this.closing = true;
    for (const wake of [...this.waiting]) wake();
    clearTimeout(this.relistenTimer);
    await this.listener?.end().catch(() => undefined);
    await this.pool.end();
  }
}
