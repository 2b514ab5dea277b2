/**
 * Persists delegation journals and the audit log. Every entry is written before it is shown, so a crash
 * or a reload loses nothing (docs/architecture.md, "One task model").
 *
 * One append-only JSON-lines file per delegation (`<requestId>.jsonl`) in a folder the caller gives
 * (the extension passes its globalStorage). Entries are written in order; entries that change state
 * are fsync'd before `append` resolves. On load, a torn last line (a crash mid-write) is dropped and
 * cut off the file so appending continues cleanly; a corrupt line in the middle is skipped and counted.
 *
 * SDK objects inside entries are stored as A2A wire JSON (`Task.toJSON` etc.) and read back with
 * `fromJSON`, so the files are readable and independent of the SDK's in-memory shapes.
 *
 * Ownership: only one process writes a journal. The one that runs a delegation holds its lease,
 * `<requestId>.lease` (its pid, host and a random owner id, written with O_EXCL), and touches it every
 * `LEASE_HEARTBEAT_MS`; every other process — another `baton` command, another VS Code window — only
 * reads that journal. A lease whose process is gone (pid not alive on this host), or whose heartbeat
 * stopped for `LEASE_STALE_MS`, is taken over: a crash never leaves a delegation without an owner. A
 * reader never repairs a journal (cutting a torn tail): only its owner does.
 *
 * The audit log (`audit.jsonl`) gets one line per delegation outcome: who, agent and endpoint, context
 * digests, capabilities, task id, outcome, artifact digests.
 */
import { createHash, randomUUID } from 'node:crypto';
import {
  closeSync,
  openSync,
  promises as fs,
  readFileSync,
  rmSync,
  statSync,
  unlinkSync,
  utimesSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { Message, StreamResponse, Task } from '@a2a-js/sdk';
import type {
  ContextDigest,
  DelegationJournal,
  DelegationRequest,
  JournalEntry,
  OutcomeDecision,
} from '../core/delegation';
import type { StartedBy } from '../core/delegation/tree';

export const AUDIT_FILE = 'audit.jsonl';
const JOURNAL_SUFFIX = '.jsonl';
const LEASE_SUFFIX = '.lease';
const CANCEL_SUFFIX = '.cancel';
/** How long a cancel request waits for the delegation's owner to take it. */
export const CANCEL_REQUEST_TTL_MS = 30_000;
/** How often an owner touches its leases. */
export const LEASE_HEARTBEAT_MS = 5_000;
/** A lease not touched for this long is stale, whoever wrote it. */
export const LEASE_STALE_MS = 60_000;
const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

export function sha256Hex(text: string | Uint8Array): string {
  return createHash('sha256').update(text).digest('hex');
}

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/** Entry → plain JSON (SDK objects as wire JSON). */
export function encodeEntry(e: JournalEntry): Record<string, unknown> {
  switch (e.kind) {
    case 'request':
      return { ...e, request: { ...e.request, message: Message.toJSON(e.request.message) } };
    case 'event':
      return { ...e, event: StreamResponse.toJSON(e.event) };
    case 'snapshot':
      return { ...e, task: Task.toJSON(e.task) };
    case 'reply':
      return { ...e, message: Message.toJSON(e.message) };
    default:
      return { ...e };
  }
}

/** Plain JSON → entry. Throws on a line that is not an entry. */
export function decodeEntry(raw: unknown): JournalEntry {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new Error('not an object');
  const o = raw as Record<string, unknown> & { kind?: unknown; at?: unknown };
  if (typeof o.kind !== 'string' || typeof o.at !== 'number') throw new Error('missing kind or at');
  switch (o.kind) {
    case 'request': {
      const r = o.request as Record<string, unknown>;
      return {
        kind: 'request',
        at: o.at,
        request: { ...(r as unknown as DelegationRequest), message: Message.fromJSON(r.message) },
      };
    }
    case 'event':
      return { ...(o as unknown as Extract<JournalEntry, { kind: 'event' }>), event: StreamResponse.fromJSON(o.event) };
    case 'snapshot':
      return { ...(o as unknown as Extract<JournalEntry, { kind: 'snapshot' }>), task: Task.fromJSON(o.task) };
    case 'reply':
      return { ...(o as unknown as Extract<JournalEntry, { kind: 'reply' }>), message: Message.fromJSON(o.message) };
    case 'send':
    case 'sendFailed':
    case 'agentError':
    case 'task':
    case 'cancel':
    case 'cancelResult':
    case 'connection':
    case 'notice':
    case 'outcome':
    case 'resultCheck':
    case 'finished':
      return o as unknown as JournalEntry;
    default:
      throw new Error(`unknown entry kind ${JSON.stringify(o.kind).slice(0, 40)}`);
  }
}

export interface LoadedJournal {
  readonly requestId: string;
  readonly entries: JournalEntry[];
  /** A partial last line was found (a crash mid-write) and cut off. */
  readonly tornTail: boolean;
  /** Lines in the middle that could not be read. */
  readonly skipped: number;
}

/** One line of the audit log. */
export interface AuditRecord {
  readonly at: string;
  readonly requestId: string;
  readonly who: string;
  readonly agent: {
    readonly id: string;
    readonly name: string;
    readonly endpoint: string;
    readonly cardDigest?: string;
  };
  readonly parentRequestId?: string;
  readonly contextDigests: readonly ContextDigest[];
  readonly capabilities: DelegationRequest['capabilities'];
  readonly taskId?: string;
  readonly contextId?: string;
  readonly outcome: OutcomeDecision['outcome'];
  readonly reason: string;
  readonly cancelConfirmed?: boolean;
  readonly artifacts: ReadonlyArray<{
    readonly artifactId: string;
    readonly name: string;
    readonly digest: string;
    readonly final: boolean;
  }>;
  /** Present on the lines a review writes: what the user did with the returned patch. */
  readonly review?: ReviewAuditInfo;
  /** Who started the delegation, when it was not the person at the keyboard. */
  readonly startedBy?: StartedBy;
  /**
   * Present on the lines of a delegation that was refused before anything was sent (a chat agent over
   * its burst cap, an agent that is not approved…): why, as a code. `requestId` is then the refused
   * call's own id, with no journal.
   */
  readonly refused?: { readonly code: string };
}

/** What was applied (or undone, rejected) from a delegation's patch: files, hunks, digests before and after. */
export interface ReviewAuditInfo {
  readonly action: 'applied' | 'undone' | 'rejected' | 'merge-aborted';
  readonly files: readonly { readonly path: string; readonly whole: boolean; readonly hunkIds: readonly string[] }[];
  readonly overrides: readonly string[];
  readonly digests: readonly { readonly path: string; readonly before: string | null; readonly after: string | null }[];
}

/** The audit line for a journal's outcome. */
export function auditRecordFor(journal: DelegationJournal, decision: OutcomeDecision, at: number): AuditRecord {
  const r = journal.request;
  return {
    at: new Date(at).toISOString(),
    requestId: r.requestId,
    who: r.who,
    agent: {
      id: r.agent.id,
      name: r.agent.name,
      endpoint: r.agent.endpoint,
      ...(r.agent.cardDigest ? { cardDigest: r.agent.cardDigest } : {}),
    },
    ...(r.parentRequestId ? { parentRequestId: r.parentRequestId } : {}),
    ...(r.startedBy && r.startedBy.kind !== 'user' ? { startedBy: r.startedBy } : {}),
    contextDigests: r.contextDigests,
    capabilities: r.capabilities,
    ...(journal.taskId ? { taskId: journal.taskId } : {}),
    ...(journal.contextId ? { contextId: journal.contextId } : {}),
    outcome: decision.outcome,
    reason: decision.reason,
    ...(decision.cancelConfirmed !== undefined ? { cancelConfirmed: decision.cancelConfirmed } : {}),
    artifacts: journal.artifacts().map((a) => ({
      artifactId: a.artifactId,
      name: a.name,
      digest: `sha256:${sha256Hex(a.text + (a.otherParts.length ? JSON.stringify(a.otherParts.map((p) => (p.content?.$case === 'raw' ? { raw: p.content.value.toString('base64') } : (p.content ?? null)))) : ''))}`,
      final: a.final,
    })),
  };
}

function csvCell(v: unknown): string {
  const s = v === undefined ? '' : typeof v === 'string' ? v : JSON.stringify(v);
  return /[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/** Who holds a journal's lease, as its lease file says. */
export interface LeaseHolder {
  readonly pid: number;
  readonly host: string;
  readonly owner: string;
  /** Epoch ms of the last heartbeat (the file's mtime). */
  readonly heartbeat: number;
}

/** Is `pid` a live process on this machine? (EPERM: alive, someone else's.) */
function pidAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

interface OpenFile {
  readonly ready: Promise<fs.FileHandle>;
  /** The last write queued; writes to one file run strictly in order. */
  chain: Promise<void>;
}

export class JournalStore {
  private readonly open = new Map<string, OpenFile>();
  private auditChain: Promise<void> = Promise.resolve();
  /** This store's identity in the leases it holds (two stores in one process are two owners). */
  readonly owner = randomUUID();
  private readonly leases = new Set<string>();
  private heartbeat?: NodeJS.Timeout;

  /** `folder` is created if missing. */
  constructor(readonly folder: string) {}

  private leasePath(requestId: string): string {
    return this.pathOf(requestId).slice(0, -JOURNAL_SUFFIX.length) + LEASE_SUFFIX;
  }

  /**
   * Who holds the journal's lease, or undefined when nobody does. A lease file that cannot be read
   * (one being written this instant, or damaged) counts as held by an unknown process (pid 0) until
   * its heartbeat is stale.
   */
  leaseHolder(requestId: string): LeaseHolder | undefined {
    const path = this.leasePath(requestId);
    let heartbeat: number;
    try {
      heartbeat = statSync(path).mtimeMs;
    } catch {
      return undefined;
    }
    try {
      const raw = JSON.parse(readFileSync(path, 'utf8')) as Partial<LeaseHolder>;
      if (typeof raw.pid === 'number' && typeof raw.host === 'string' && typeof raw.owner === 'string')
        return { pid: raw.pid, host: raw.host, owner: raw.owner, heartbeat };
    } catch {
      // read below as a lease of an unknown process
    }
    return { pid: 0, host: '', owner: '', heartbeat };
  }

  /** True while another live owner holds the lease (this store's own lease is not "another"). */
  heldElsewhere(requestId: string, now = Date.now()): LeaseHolder | undefined {
    if (this.leases.has(requestId)) return undefined;
    const h = this.leaseHolder(requestId);
    if (!h || h.owner === this.owner) return undefined;
    if (now - h.heartbeat > LEASE_STALE_MS) return undefined;
    if (h.host === hostname() && !pidAlive(h.pid)) return undefined;
    return h;
  }

  /** Does this store hold the journal's lease? */
  owns(requestId: string): boolean {
    return this.leases.has(requestId);
  }

  /**
   * Takes the journal's lease: true when this store now holds it (it was free, stale, or already
   * ours), false when another live process holds it. A stale lease is replaced under a takeover lock
   * (`<lease>.takeover`, made with mkdir) so two processes cannot both take it over.
   */
  async claim(requestId: string): Promise<boolean> {
    if (this.leases.has(requestId)) return true;
    await fs.mkdir(this.folder, { recursive: true, mode: 0o700 });
    const path = this.leasePath(requestId);
    const body = `${JSON.stringify({ pid: process.pid, host: hostname(), owner: this.owner })}\n`;
    const create = (): boolean => {
      try {
        const fd = openSync(path, 'wx', 0o600);
        try {
          writeSync(fd, body);
        } finally {
          closeSync(fd);
        }
        return true;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'EEXIST') return false;
        throw e;
      }
    };
    let mine = create();
    if (!mine) {
      if (this.heldElsewhere(requestId)) return false;
      const lock = `${path}.takeover`;
      try {
        // A takeover lock left by a process that died while taking over is old: removed.
        if (Date.now() - statSync(lock).mtimeMs > 10_000) rmSync(lock, { recursive: true, force: true });
      } catch {
        // no lock
      }
      try {
        await fs.mkdir(lock);
      } catch {
        return false;
      }
      try {
        if (this.heldElsewhere(requestId)) return false;
        rmSync(path, { force: true });
        mine = create();
      } finally {
        rmSync(lock, { recursive: true, force: true });
      }
    }
    if (!mine) return false;
    this.leases.add(requestId);
    if (!this.heartbeat) {
      this.heartbeat = setInterval(() => this.touchLeases(), LEASE_HEARTBEAT_MS);
      this.heartbeat.unref();
    }
    return true;
  }

  private touchLeases(): void {
    const now = new Date();
    for (const id of this.leases) {
      try {
        utimesSync(this.leasePath(id), now, now);
      } catch {
        // The lease file was removed: the next claim by anyone recreates it.
      }
    }
  }

  /** The journal file's size in bytes (-1 when there is none): a reader re-reads it when this changes. */
  sizeOf(requestId: string): number {
    try {
      return statSync(this.pathOf(requestId)).size;
    } catch {
      return -1;
    }
  }

  private cancelPath(requestId: string): string {
    return this.pathOf(requestId).slice(0, -JOURNAL_SUFFIX.length) + CANCEL_SUFFIX;
  }

  /** Asks the journal's owner to cancel the delegation (it looks for this request; only it journals the cancel). */
  requestCancel(requestId: string): void {
    writeFileSync(this.cancelPath(requestId), `${JSON.stringify({ pid: process.pid, at: Date.now() })}\n`, {
      mode: 0o600,
    });
  }

  /**
   * True once per cancel request another process left for a delegation (removed as it is taken). A
   * request older than `CANCEL_REQUEST_TTL_MS` is removed and ignored: it was meant for a run that is over.
   */
  takeCancelRequest(requestId: string, now = Date.now()): boolean {
    const path = this.cancelPath(requestId);
    let at: unknown;
    try {
      at = (JSON.parse(readFileSync(path, 'utf8')) as { at?: unknown }).at;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false;
    }
    try {
      unlinkSync(path);
    } catch {
      return false;
    }
    return typeof at === 'number' && now - at < CANCEL_REQUEST_TTL_MS;
  }

  /** Gives up every lease this store holds (on dispose; a crash leaves them for a takeover). */
  releaseLeases(): void {
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = undefined;
    for (const id of this.leases) {
      try {
        if (this.leaseHolder(id)?.owner === this.owner) unlinkSync(this.leasePath(id));
      } catch {
        // already gone
      }
    }
    this.leases.clear();
  }

  private pathOf(requestId: string): string {
    if (!ID_PATTERN.test(requestId)) throw new Error(`invalid delegation id ${JSON.stringify(requestId).slice(0, 60)}`);
    return join(this.folder, requestId + JOURNAL_SUFFIX);
  }

  private file(requestId: string): OpenFile {
    let f = this.open.get(requestId);
    if (!f) {
      const path = this.pathOf(requestId);
      const ready = (async () => {
        await fs.mkdir(this.folder, { recursive: true, mode: 0o700 });
        return fs.open(path, 'a', 0o600);
      })();
      f = {
        ready,
        chain: ready.then(
          () => undefined,
          () => undefined,
        ),
      };
      this.open.set(requestId, f);
    }
    return f;
  }

  private readonly leaseChecked = new Map<string, number>();

  /**
   * Is a lease this store took still its own? Another process takes a lease over only when it looks
   * dead (a frozen laptop's heartbeat can look so); the first writer to notice it lost its lease stops
   * writing. Looked at most once a second per journal.
   */
  private stillOwned(requestId: string): boolean {
    const now = Date.now();
    if (now - (this.leaseChecked.get(requestId) ?? 0) < 1_000) return true;
    const holder = this.leaseHolder(requestId);
    if (holder && holder.owner !== this.owner) {
      this.leases.delete(requestId);
      return false;
    }
    this.leaseChecked.set(requestId, now);
    return true;
  }

  /**
   * Appends one entry; `sync` entries are on disk (fsync) when this resolves. Order is preserved per
   * delegation. Refused when this store held the journal's lease and another process has taken it over.
   */
  append(requestId: string, entry: JournalEntry, options: { sync: boolean } = { sync: false }): Promise<void> {
    if (this.leases.has(requestId) && !this.stillOwned(requestId))
      return Promise.reject(
        new Error(`another process took over delegation ${requestId}; this one no longer writes its journal`),
      );
    const line = JSON.stringify(encodeEntry(entry)) + '\n';
    const f = this.file(requestId);
    const next = f.chain.then(async () => {
      const handle = await f.ready;
      await handle.write(line);
      if (options.sync) await handle.sync();
    });
    f.chain = next.catch(() => undefined);
    return next;
  }

  /** Creates a journal with its request entry (fsync'd). */
  async create(request: DelegationRequest): Promise<void> {
    await this.append(request.requestId, { kind: 'request', at: request.createdAt, request }, { sync: true });
  }

  /**
   * Reads one journal. A torn last line is left out; it is cut off the file only with `repair` (by
   * the journal's owner, so appending continues cleanly), never by a reader.
   */
  async load(requestId: string, options: { repair?: boolean } = {}): Promise<LoadedJournal> {
    const path = this.pathOf(requestId);
    await this.open.get(requestId)?.chain;
    const buf = await fs.readFile(path);
    const text = buf.toString('utf8');
    const entries: JournalEntry[] = [];
    let skipped = 0;
    let tornTail = false;
    const lastNewline = text.lastIndexOf('\n');
    const complete = text.slice(0, lastNewline + 1);
    const tail = text.slice(lastNewline + 1);
    for (const line of complete.split('\n')) {
      if (!line.trim()) continue;
      try {
        entries.push(decodeEntry(JSON.parse(line) as Json));
      } catch {
        skipped++;
      }
    }
    if (tail.length > 0) {
      // A line without its newline was cut by a crash mid-write, even if it happens to parse.
      tornTail = true;
      if (options.repair) await fs.truncate(path, Buffer.byteLength(complete, 'utf8'));
    }
    return { requestId, entries, tornTail, skipped };
  }

  /** Every delegation's journal in the folder (for reload on activation), oldest request first. */
  async loadAll(): Promise<LoadedJournal[]> {
    let names: string[];
    try {
      names = await fs.readdir(this.folder);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw e;
    }
    const out: LoadedJournal[] = [];
    for (const name of names) {
      if (!name.endsWith(JOURNAL_SUFFIX) || name === AUDIT_FILE) continue;
      const id = name.slice(0, -JOURNAL_SUFFIX.length);
      if (!ID_PATTERN.test(id)) continue;
      const j = await this.load(id);
      if (j.entries[0]?.kind === 'request') out.push(j);
    }
    const created = (j: LoadedJournal): number =>
      j.entries[0]?.kind === 'request' ? j.entries[0].request.createdAt : 0;
    return out.sort((a, b) => created(a) - created(b));
  }

  /** Removes a delegation's journal (the audit log keeps its line). */
  async remove(requestId: string): Promise<void> {
    await this.closeOne(requestId);
    await fs.rm(this.pathOf(requestId), { force: true });
    await fs.rm(this.cancelPath(requestId), { force: true });
    if (this.leases.delete(requestId)) await fs.rm(this.leasePath(requestId), { force: true });
  }

  /** Appends one audit line (fsync'd). */
  appendAudit(record: AuditRecord): Promise<void> {
    const line = JSON.stringify(record) + '\n';
    const next = this.auditChain.then(async () => {
      await fs.mkdir(this.folder, { recursive: true, mode: 0o700 });
      const h = await fs.open(join(this.folder, AUDIT_FILE), 'a', 0o600);
      try {
        await h.write(line);
        await h.sync();
      } finally {
        await h.close();
      }
    });
    this.auditChain = next.catch(() => undefined);
    return next;
  }

  /** The audit log, oldest first (a torn last line is ignored). */
  async readAudit(): Promise<AuditRecord[]> {
    await this.auditChain;
    let text: string;
    try {
      text = await fs.readFile(join(this.folder, AUDIT_FILE), 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw e;
    }
    const out: AuditRecord[] = [];
    for (const line of text.split('\n')) {
      if (!line.trim()) continue;
      try {
        out.push(JSON.parse(line) as AuditRecord);
      } catch {
        // torn or corrupt line: not an audit record
      }
    }
    return out;
  }

  /** Writes the audit log to `target` as JSON lines or CSV. Returns the number of records. */
  async exportAudit(target: string, format: 'jsonl' | 'csv' = 'jsonl'): Promise<number> {
    const records = await this.readAudit();
    let body: string;
    if (format === 'jsonl') body = records.map((r) => JSON.stringify(r)).join('\n') + (records.length ? '\n' : '');
    else {
      const cols = [
        'at',
        'requestId',
        'who',
        'agentId',
        'agentName',
        'endpoint',
        'taskId',
        'outcome',
        'reason',
        'cancelConfirmed',
        'capabilities',
        'contextDigests',
        'artifacts',
      ] as const;
      const rows = records.map((r) =>
        [
          r.at,
          r.requestId,
          r.who,
          r.agent.id,
          r.agent.name,
          r.agent.endpoint,
          r.taskId,
          r.outcome,
          r.reason,
          r.cancelConfirmed,
          r.capabilities,
          r.contextDigests,
          r.artifacts,
        ]
          .map(csvCell)
          .join(','),
      );
      body = [cols.join(','), ...rows].join('\n') + '\n';
    }
    await fs.writeFile(target, body, { mode: 0o600 });
    return records.length;
  }

  private async closeOne(requestId: string): Promise<void> {
    const f = this.open.get(requestId);
    if (!f) return;
    this.open.delete(requestId);
    await f.chain;
    await (await f.ready.catch(() => undefined))?.close();
  }

  /** Flushes pending writes and closes every file. */
  async close(): Promise<void> {
    await Promise.all([...this.open.keys()].map((id) => this.closeOne(id)));
    await this.auditChain;
  }
}
