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
 * The audit log (`audit.jsonl`) gets one line per delegation outcome: who, agent and endpoint, context
 * digests, capabilities, task id, outcome, artifact digests.
 */
import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
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

interface OpenFile {
  readonly ready: Promise<fs.FileHandle>;
  /** The last write queued; writes to one file run strictly in order. */
  chain: Promise<void>;
}

export class JournalStore {
  private readonly open = new Map<string, OpenFile>();
  private auditChain: Promise<void> = Promise.resolve();

  /** `folder` is created if missing. */
  constructor(readonly folder: string) {}

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

  /** Appends one entry; `sync` entries are on disk (fsync) when this resolves. Order is preserved per delegation. */
  append(requestId: string, entry: JournalEntry, options: { sync: boolean } = { sync: false }): Promise<void> {
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

  /** Reads one journal, cutting off a torn last line. */
  async load(requestId: string): Promise<LoadedJournal> {
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
      await fs.truncate(path, Buffer.byteLength(complete, 'utf8'));
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
