/**
 * All of a user's delegations: starts them (at most `maxConcurrent` at once, the rest queued visibly),
 * persists every journal through `JournalStore`, writes the audit line when one settles, and on
 * construction reloads every journal and re-attaches the ones still in flight. The VS Code extension
 * and the `baton` CLI both drive delegations through this.
 */
import type {
  DelegationJournalOptions,
  DelegationRecord,
  DelegationRequest,
  OutcomeDecision,
} from '../../core/delegation';
import { DelegationJournal, isFinalOutcome } from '../../core/delegation';
import type { JournalStore } from '../journalStore';
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
      'reconnect' | 'startAttempts' | 'cancelWaitMs' | 'drainTimeoutMs' | 'pollIntervalMs' | 'newId'
    >
  >;
  /** Called when a delegation records an outcome (for notifications). */
  readonly onOutcome?: (requestId: string, decision: OutcomeDecision) => void;
  /** Whether the user turned on automatic approval of tool calls for this delegation's agent. Default never. */
  readonly autoApproveToolCalls?: (request: DelegationRequest) => boolean;
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
  readonly journal: DelegationJournal;
  runner?: DelegationRunner;
  /** Error from building the connection, if that failed. */
  connectError?: string;
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

  /** Loads every journal in the store and re-attaches the delegations still in flight. */
  static async open(options: DelegationManagerOptions): Promise<DelegationManager> {
    const m = new DelegationManager(options);
    for (const loaded of await options.store.loadAll()) {
      const journal = DelegationJournal.fromEntries(loaded.entries, options.journalOptions);
      m.slots.set(journal.requestId, { journal });
      if (loaded.tornTail || loaded.skipped) {
        const words =
          loaded.tornTail && loaded.skipped
            ? ({ code: 'journal.tornTailSkipped', params: [loaded.skipped] } as const)
            : loaded.tornTail
              ? ({ code: 'journal.tornTail' } as const)
              : ({ code: 'journal.skipped', params: [loaded.skipped] } as const);
        journal.apply({ kind: 'notice', at: m.now(), level: 'warning', ...words });
      }
      if (!journal.started) m.queue.push(journal.requestId);
      else if (!journal.decide()) void m.attach(journal.requestId, (r) => r.resume());
      else if (
        journal.decide()?.outcome &&
        isFinalOutcome(journal.decide()?.outcome) &&
        !journal.hasFinalSnapshot &&
        journal.taskId
      ) {
        void m.attach(journal.requestId, (r) => r.resume(), false);
      }
    }
    m.pump();
    return m;
  }

  /** Persists the request (fsync'd) and starts it, or queues it when `maxConcurrent` are running. */
  async start(request: DelegationRequest): Promise<DelegationJournal> {
    if (this.slots.has(request.requestId)) throw new Error(`Delegation ${request.requestId} already exists.`);
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

  /** Cancels (a queued delegation is canceled locally; a running one at the agent, bounded wait). */
  async cancel(requestId: string): Promise<OutcomeDecision | undefined> {
    const slot = this.slots.get(requestId);
    if (!slot) throw new Error(`No delegation ${requestId}.`);
    const qi = this.queue.indexOf(requestId);
    if (qi >= 0) this.queue.splice(qi, 1);
    const runner = await this.runnerFor(requestId);
    return runner.cancel();
  }

  /** Resolves when the delegation's current activity (send, reconnect, cancel) has finished. */
  async idle(requestId: string): Promise<void> {
    await this.slots.get(requestId)?.runner?.idle();
  }

  dispose(): void {
    this.disposed = true;
    for (const s of this.slots.values()) s.runner?.dispose();
    this.listeners.clear();
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
    const connection = await this.options.connect(slot.journal.request);
    if (slot.runner) return slot.runner;
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
      if (slot && !slot.runner) {
        // No client could be built (agent no longer approved, bad card, unsupported auth): nothing was sent.
        const error = e instanceof Error ? e.message : String(e);
        slot.connectError = error;
        const failed = { kind: 'sendFailed', at: this.now(), delivered: 'no', error } as const;
        slot.journal.apply(failed);
        await this.options.store.append(requestId, failed, { sync: true }).catch(() => undefined);
        const d = slot.journal.decide();
        if (d) {
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
      this.fire(requestId);
      this.pump();
    }
  }
}
