/**
 * All of a user's delegations: starts them (at most `maxConcurrent` at once, the rest queued visibly),
 * persists every journal through `JournalStore`, writes the audit line when one settles, and on
 * construction reloads every journal and re-attaches the ones still in flight. The VS Code extension
 * and the `baton` CLI both drive delegations through this.
 *
 * Several managers share one journal folder (VS Code windows, `baton` commands): a manager writes
 * only the journals whose lease it holds (src/node/journalStore.ts). A delegation another live
 * process runs is only read here — reloaded from disk as it grows — and taken over when that
 * process is gone. A cancel of such a delegation is handed to its owner (a cancel request file), which
 * cancels it and journals the answer. A read-only manager (`readOnly`) holds no lease, starts no
 * runner and writes nothing.
 */
import type {
  DelegationJournalOptions,
  DelegationRecord,
  DelegationRequest,
  JournalEntry,
  OutcomeDecision,
} from '../../core/delegation';
import { DelegationJournal, isFinalOutcome } from '../../core/delegation';
import type { JournalStore, LeaseHolder, LoadedJournal } from '../journalStore';
import { auditRecordFor } from '../journalStore';
import type { AgentConnection } from './clientFactory';
import type { DelegationRunnerOptions } from './delegationRunner';
import { DelegationRunner } from './delegationRunner';

export interface DelegationManagerOptions {
  readonly store: JournalStore;
  /** Builds the client for an approved agent (card, pinned endpoint, token lookup) — the caller's policy. */
  readonly connect: (request: DelegationRequest) => Promise<AgentConnection>;
  /** Default 4. */
  readonly maxConcurrent?: number;
  readonly now?: () => number;
  readonly journalOptions?: DelegationJournalOptions;
  /** Reconnect policy, cancel wait, etc. for every runner. */
  readonly runnerOptions?: Partial<
    Pick<
      DelegationRunnerOptions,
      | 'reconnect'
      | 'startAttempts'
      | 'cancelWaitMs'
      | 'drainTimeoutMs'
      | 'pollIntervalMs'
      | 'pollMaxIntervalMs'
      | 'newId'
      | 'silenceCheckMs'
      | 'firstEventNoticeMs'
    >
  >;
  /** Called when a delegation records an outcome (for notifications). */
  readonly onOutcome?: (requestId: string, decision: OutcomeDecision) => void;
  /** Whether the user turned on automatic approval of tool calls for this delegation's agent. Default never. */
  readonly autoApproveToolCalls?: (request: DelegationRequest) => boolean;
  /** Only look: no lease, no runner, nothing written (`baton status`). */
  readonly readOnly?: boolean;
  /**
   * Which reloaded delegations still in flight are re-attached (and their leases taken): every one
   * (default), or only these (a `baton` command attaches the one it was asked about).
   */
  readonly resume?: 'all' | readonly string[];
  /** How often delegations other processes run are re-read from disk, and cancel requests looked for. Default 1 s. */
  readonly watchMs?: number;
}

/** Another live process runs this delegation: only it writes its journal. */
export class DelegationOwnedElsewhereError extends Error {
  override readonly name = 'DelegationOwnedElsewhereError';
  constructor(
    readonly requestId: string,
    readonly holder: LeaseHolder,
  ) {
    super(
      `Delegation ${requestId} is being run by another process (${holder.pid ? `pid ${holder.pid} on ${holder.host}` : 'one that is just starting'}); ` +
        'only that process writes its journal. Wait until it ends there, or stop that process and try again.',
    );
  }
}

export interface DelegationSummary {
  readonly requestId: string;
  readonly parentRequestId?: string;
  readonly title: string;
  readonly agentName: string;
  readonly state: ReturnType<DelegationJournal['state']>;
  readonly createdAt: number;
}

interface Slot {
  journal: DelegationJournal;
  runner?: DelegationRunner;
  /** Error from building the connection, if that failed. */
  connectError?: string;
  /** Another process may hold the journal's lease: it is not run here until this manager takes the lease. */
  foreign?: boolean;
  /** The journal's size on disk when it was last read. */
  size?: number;
  /** Re-attach it once its lease is ours (it was in flight when loaded). */
  wantsRunner?: boolean;
}

function loadNotice(loaded: LoadedJournal, at: number): JournalEntry | undefined {
  if (!loaded.tornTail && !loaded.skipped) return undefined;
  const words =
    loaded.tornTail && loaded.skipped
      ? ({ code: 'journal.tornTailSkipped', params: [loaded.skipped] } as const)
      : loaded.tornTail
        ? ({ code: 'journal.tornTail' } as const)
        : ({ code: 'journal.skipped', params: [loaded.skipped] } as const);
  return { kind: 'notice', at, level: 'warning', ...words };
}

/** Does a reloaded journal need a runner: not sent yet, in flight, or settled without its final artifacts? */
function needsRunner(journal: DelegationJournal): 'start' | 'resume' | 'final' | undefined {
  if (!journal.started) return 'start';
  const d = journal.decide();
  if (!d) return 'resume';
  if (isFinalOutcome(d.outcome) && !journal.hasFinalSnapshot && journal.taskId) return 'final';
  return undefined;
}

export class DelegationManager {
  private readonly slots = new Map<string, Slot>();
  private readonly queue: string[] = [];
  private readonly listeners = new Set<(requestId: string) => void>();
  private readonly now: () => number;
  private readonly maxConcurrent: number;
  private running = 0;
  private disposed = false;

  private constructor(private readonly options: DelegationManagerOptions) {
    this.now = options.now ?? Date.now;
    this.maxConcurrent = Math.max(1, options.maxConcurrent ?? 4);
  }

  private watchTimer?: NodeJS.Timeout;

  /** Loads every journal in the store and re-attaches the delegations still in flight (those it may own). */
  static async open(options: DelegationManagerOptions): Promise<DelegationManager> {
    const m = new DelegationManager(options);
    const resume = options.resume ?? 'all';
    for (const loaded of await options.store.loadAll()) {
      const journal = DelegationJournal.fromEntries(loaded.entries, options.journalOptions);
      const slot: Slot = { journal, size: options.store.sizeOf(journal.requestId) };
      m.slots.set(journal.requestId, slot);
      const notice = loadNotice(loaded, m.now());
      if (notice) journal.apply(notice);
      const need = needsRunner(journal);
      if (!need) continue;
      if (options.readOnly || (resume !== 'all' && !resume.includes(journal.requestId))) {
        // Whoever runs it (maybe nobody now) is not this manager: it is only read, as it grows.
        slot.foreign = true;
        continue;
      }
      if (!(await options.store.claim(journal.requestId))) {
        slot.foreign = true;
        slot.wantsRunner = true;
        continue;
      }
      // Ours now: a torn tail is cut so that appending continues on a clean line.
      if (loaded.tornTail) await options.store.load(journal.requestId, { repair: true });
      if (need === 'start') m.queue.push(journal.requestId);
      else void m.attach(journal.requestId, (r) => r.resume(), need === 'resume');
    }
    m.pump();
    m.watchTimer = setInterval(() => void m.watch(), Math.max(50, options.watchMs ?? 1_000));
    m.watchTimer.unref();
    return m;
  }

  /**
   * Re-reads the journals this manager does not write (when their file changed), takes over those whose owner
   * is gone and that this manager would run, and hands the cancel requests of the ones it owns to
   * their runners.
   */
  private watching = false;
  private async watch(): Promise<void> {
    if (this.disposed || this.watching) return;
    this.watching = true;
    try {
      const { store } = this.options;
      for (const [id, slot] of this.slots) {
        if (this.disposed) return;
        if (!slot.runner && !store.owns(id)) {
          // Someone else may write it (a reply from another window or terminal): re-read when it grows.
          await this.refresh(id, slot);
          if (slot.wantsRunner && !this.options.readOnly && !store.heldElsewhere(id)) await this.takeOver(id, slot);
        } else if (store.owns(id) && !isFinalOutcome(slot.journal.decide()?.outcome) && store.takeCancelRequest(id)) {
          void this.cancel(id).catch(() => undefined);
        }
      }
    } finally {
      this.watching = false;
    }
  }

  /** Re-reads a journal someone else writes, when its file changed. */
  private async refresh(requestId: string, slot: Slot): Promise<void> {
    const size = this.options.store.sizeOf(requestId);
    if (size === slot.size) return;
    try {
      const loaded = await this.options.store.load(requestId);
      slot.journal = DelegationJournal.fromEntries(loaded.entries, this.options.journalOptions);
      slot.size = size;
      this.fire(requestId);
    } catch {
      // Removed or unreadable for now: the next look tries again.
    }
  }

  /** The owner of an in-flight delegation is gone: this manager runs it from where its journal is. */
  private async takeOver(requestId: string, slot: Slot): Promise<void> {
    if (!(await this.options.store.claim(requestId))) return;
    const loaded = await this.options.store.load(requestId, { repair: true });
    slot.journal = DelegationJournal.fromEntries(loaded.entries, this.options.journalOptions);
    slot.size = this.options.store.sizeOf(requestId);
    slot.foreign = false;
    slot.wantsRunner = false;
    this.fire(requestId);
    const need = needsRunner(slot.journal);
    if (need === 'start') {
      this.queue.push(requestId);
      this.pump();
    } else if (need) void this.attach(requestId, (r) => r.resume(), need === 'resume');
  }

  /** Persists the request (fsync'd) and starts it, or queues it when `maxConcurrent` are running. */
  async start(request: DelegationRequest): Promise<DelegationJournal> {
    if (this.slots.has(request.requestId)) throw new Error(`Delegation ${request.requestId} already exists.`);
    if (this.disposed || this.options.readOnly) throw new Error('This delegation manager cannot start delegations.');
    if (!(await this.options.store.claim(request.requestId)))
      throw new Error(`Delegation ${request.requestId} already exists.`);
    await this.options.store.create(request);
    const journal = new DelegationJournal(request, this.options.journalOptions);
    this.slots.set(request.requestId, { journal });
    this.queue.push(request.requestId);
    this.fire(request.requestId);
    this.pump();
    return journal;
  }

  get(requestId: string): DelegationJournal | undefined {
    return this.slots.get(requestId)?.journal;
  }

  view(requestId: string): DelegationRecord | undefined {
    return this.get(requestId)?.view(this.now());
  }

  list(): DelegationSummary[] {
    return [...this.slots.values()]
      .map(({ journal: j }) => ({
        requestId: j.requestId,
        ...(j.request.parentRequestId ? { parentRequestId: j.request.parentRequestId } : {}),
        title: j.request.title,
        agentName: j.request.agent.name,
        state: j.state(),
        createdAt: j.request.createdAt,
      }))
      .sort((a, b) => b.createdAt - a.createdAt);
  }

  get runningCount(): number {
    return this.running;
  }

  get queuedCount(): number {
    return this.queue.length;
  }

  /** Fired with the delegation's id after any change to it. */
  onDidChange(listener: (requestId: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async reply(requestId: string, text: string): Promise<void> {
    const runner = await this.runnerFor(requestId);
    await runner.reply(text);
  }

  /** Answers a tool call awaiting approval (`DelegationRunner.answerToolCall`). */
  async answerToolCall(requestId: string, callId: string | undefined, outcome: string): Promise<void> {
    const runner = await this.runnerFor(requestId);
    await runner.answerToolCall(callId, outcome);
  }

  /** Done: finishes a delegation whose agent waits for the user as completed (`DelegationRunner.finish`). */
  async finish(requestId: string): Promise<OutcomeDecision> {
    const runner = await this.runnerFor(requestId);
    return runner.finish();
  }

  async checkAgain(requestId: string): Promise<void> {
    const runner = await this.runnerFor(requestId);
    await runner.checkAgain();
  }

  /** See `DelegationRunner.checkIfAuthorized`: a quiet look at a delegation waiting for authorization. */
  async checkIfAuthorized(requestId: string): Promise<boolean> {
    const runner = await this.runnerFor(requestId);
    return runner.checkIfAuthorized();
  }

  /**
   * Journals an entry the caller learned (a result check, what the user did with the patch) when this
   * manager may write the journal: it holds the lease, or takes it because nobody else does. While
   * another live process holds it, the entry is only applied here (that process writes its own).
   * Resolves true when it was persisted.
   */
  async record(requestId: string, entry: JournalEntry): Promise<boolean> {
    const slot = this.slots.get(requestId);
    if (!slot || this.disposed) return false;
    const { store } = this.options;
    if (this.options.readOnly || !(await store.claim(requestId))) {
      slot.journal.apply(entry);
      this.fire(requestId);
      return false;
    }
    if (slot.foreign && store.sizeOf(requestId) !== slot.size) {
      const loaded = await store.load(requestId, { repair: true });
      slot.journal = DelegationJournal.fromEntries(loaded.entries, this.options.journalOptions);
    }
    slot.foreign = false;
    slot.journal.apply(entry);
    await store.append(requestId, entry, { sync: true });
    slot.size = store.sizeOf(requestId);
    this.fire(requestId);
    return true;
  }

  /** Is the delegation run by another live process (so it is only read here)? */
  ownedElsewhere(requestId: string): LeaseHolder | undefined {
    return this.options.store.heldElsewhere(requestId);
  }

  /**
   * Cancels (a queued delegation is canceled locally; a running one at the agent, bounded wait). A
   * delegation another live process runs is canceled by that process: the request is handed to it
   * and this resolves with undefined at once (its journal shows the answer as it comes).
   */
  async cancel(requestId: string): Promise<OutcomeDecision | undefined> {
    const slot = this.slots.get(requestId);
    if (!slot) throw new Error(`No delegation ${requestId}.`);
    const handOver = (): undefined => {
      this.options.store.requestCancel(requestId);
      // From now on it is re-read from disk, where its owner journals the cancel.
      slot.foreign = true;
      return undefined;
    };
    if (!slot.runner && this.options.store.heldElsewhere(requestId)) return handOver();
    const qi = this.queue.indexOf(requestId);
    if (qi >= 0) this.queue.splice(qi, 1);
    let runner: DelegationRunner;
    try {
      runner = await this.runnerFor(requestId);
    } catch (e) {
      // Another process took it (a reply sent from there) since this one read it.
      if (e instanceof DelegationOwnedElsewhereError) return handOver();
      throw e;
    }
    return runner.cancel();
  }

  /** Resolves when the delegation's current activity (send, reconnect, cancel) has finished. */
  async idle(requestId: string): Promise<void> {
    await this.slots.get(requestId)?.runner?.idle();
  }

  /** Stops every runner and anything still pending (no runner is made after this), and gives up the leases. */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    if (this.watchTimer) clearInterval(this.watchTimer);
    this.queue.length = 0;
    for (const s of this.slots.values()) s.runner?.dispose();
    this.listeners.clear();
    this.options.store.releaseLeases();
  }

  private fire(requestId: string): void {
    for (const l of this.listeners) l(requestId);
  }

  private pump(): void {
    while (!this.disposed && this.running < this.maxConcurrent && this.queue.length > 0) {
      const id = this.queue.shift() as string;
      void this.attach(id, (r) => r.start());
    }
  }

  private async runnerFor(requestId: string): Promise<DelegationRunner> {
    const slot = this.slots.get(requestId);
    if (!slot) throw new Error(`No delegation ${requestId}.`);
    if (slot.runner) return slot.runner;
    if (this.disposed) throw new Error('The delegation manager was disposed.');
    if (this.options.readOnly) throw new Error(`Delegation ${requestId} is only being looked at here.`);
    const { store } = this.options;
    if (!store.owns(requestId)) {
      if (!(await store.claim(requestId))) {
        const holder = store.heldElsewhere(requestId);
        if (holder) throw new DelegationOwnedElsewhereError(requestId, holder);
        throw new Error(`Delegation ${requestId} is being taken over by another process; try again in a moment.`);
      }
      // Someone else may have written it since it was read: it is run from what is on disk now.
      if (store.sizeOf(requestId) !== slot.size) {
        const loaded = await store.load(requestId, { repair: true });
        slot.journal = DelegationJournal.fromEntries(loaded.entries, this.options.journalOptions);
        slot.size = store.sizeOf(requestId);
      }
      slot.foreign = false;
      slot.wantsRunner = false;
    }
    const connection = await this.options.connect(slot.journal.request);
    if (slot.runner) return slot.runner;
    if (this.disposed) throw new Error('The delegation manager was disposed.');
    const runner = new DelegationRunner({
      ...this.options.runnerOptions,
      connection,
      journal: slot.journal,
      sink: this.options.store,
      now: this.now,
      autoApproveToolCalls: this.options.autoApproveToolCalls?.(slot.journal.request) === true,
      onOutcome: (journal, decision) => {
        if (isFinalOutcome(decision.outcome) || decision.outcome === 'unknown') {
          void this.options.store.appendAudit(auditRecordFor(journal, decision, this.now())).catch(() => undefined);
        }
        this.options.onOutcome?.(journal.requestId, decision);
      },
    });
    runner.onDidChange(() => this.fire(requestId));
    slot.runner = runner;
    return runner;
  }

  private async attach(
    requestId: string,
    go: (r: DelegationRunner) => Promise<void>,
    countsAsRunning = true,
  ): Promise<void> {
    if (countsAsRunning) this.running++;
    try {
      const runner = await this.runnerFor(requestId);
      await go(runner);
    } catch (e) {
      const slot = this.slots.get(requestId);
      // Only a journal this manager owns is written, and nothing after dispose.
      if (slot && !slot.runner && !this.disposed && this.options.store.owns(requestId)) {
        // No client could be built (agent no longer approved, bad card, unsupported auth). Before the
        // first send nothing was sent; after it, the task may be running there: contact is lost
        // (unknown, "check again"), never "nothing was sent".
        const error = e instanceof Error ? e.message : String(e);
        slot.connectError = error;
        const failed: JournalEntry = slot.journal.started
          ? { kind: 'connection', at: this.now(), status: 'gaveUp', attempt: 0, error }
          : { kind: 'sendFailed', at: this.now(), delivered: 'no', error };
        slot.journal.apply(failed);
        await this.options.store.append(requestId, failed, { sync: true }).catch(() => undefined);
        const d = slot.journal.decide();
        const recorded = slot.journal.recordedOutcome;
        if (d && (recorded?.outcome !== d.outcome || recorded.reason !== d.reason)) {
          const outcome = {
            kind: 'outcome',
            at: this.now(),
            outcome: d.outcome,
            reason: d.reason,
            ...(d.because ? { because: d.because } : {}),
          } as const;
          slot.journal.apply(outcome);
          await this.options.store.append(requestId, outcome, { sync: true }).catch(() => undefined);
          await this.options.store.appendAudit(auditRecordFor(slot.journal, d, this.now())).catch(() => undefined);
          this.options.onOutcome?.(requestId, d);
        }
      }
    } finally {
      if (countsAsRunning) this.running--;
      if (!this.disposed) {
        this.fire(requestId);
        this.pump();
      }
    }
  }
}
