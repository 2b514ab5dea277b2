/**
 * Runs one delegation against its agent and journals everything it sees before anything
 * is shown (docs/architecture.md, "One task model"). Streams are not reliable delivery (A2A §3.7), so:
 *
 * - a stream that ends or breaks before the task settles → `GetTask` → `SubscribeToTask` with backoff,
 *   sending `Last-Event-ID` when the agent declares the replay profile; events are de-duplicated by
 *   (taskId, seq) in the journal;
 * - the final artifacts are always taken from `GetTask` after the task settles;
 * - the first message's `messageId` is the `requestId`: it is re-sent only to agents that honour
 *   `messageId` idempotency, or when the send provably never left this machine; otherwise a lost
 *   answer ends as `unknown` and "check again" reconciles (ListTasks/GetTask), never a blind resend;
 * - cancel waits a bounded time and records whether the agent confirmed; a passed deadline cancels at
 *   the agent and ends as `expired`.
 *
 * Every decision about the outcome is `decideOutcome` in src/core/delegation.ts; the runner only
 * records what happened.
 */
import { randomUUID } from 'node:crypto';
import type { Message, SendMessageRequest, StreamResponse, Task } from '@a2a-js/sdk';
import { TaskState, taskStateToJSON } from '@a2a-js/sdk';
import type { RequestOptions } from '@a2a-js/sdk/client';
import type { A2AError } from '@a2a-js/sdk/errors';
import type { DelegationJournal, JournalEntry, OutcomeDecision } from '../../core/delegation';
import { isFinalOutcome, isInterruptedTaskState, isTerminalTaskState, partsText, seqOf } from '../../core/delegation';
import { buildReplyMessage } from '../../core/delegation/context';
import { sleep } from '../../core/sleep';
import {
  backoffMs,
  CLIENT_FOLLOW,
  followTask,
  startReconciling,
  startSending,
  startStreaming,
} from '../../core/taskFollow';
import type {
  FollowEffect,
  FollowIO,
  FollowLimits,
  FollowStep,
  ReconcileEvent,
  SendEvent,
  StreamEvent,
} from '../../core/taskFollow';
import type { AgentConnection } from './clientFactory';
import { agentError, agentErrorText, remoteAgentError } from './agentErrors';
import type { TransientReport } from './transientAnswers';
import { TransientHttpError } from './transientAnswers';
import { outcomeReasonText } from '../../core/protocol/outcomeText';
import { DEV_TOOL_EXTENSION_URI, pendingToolCalls, slimDevToolEvent, toolAnswerParts } from '../../core/devTool';
import { readableHttpError } from '../../core/httpErrorText';
import type { Part } from '@a2a-js/sdk';
import { Role } from '@a2a-js/sdk';

/** Where journal entries are persisted (src/node/journalStore.ts implements it). */
export interface JournalSink {
  /** Appends one entry; `sync` entries are flushed to disk (fsync) before the promise resolves. */
  append(requestId: string, entry: JournalEntry, options: { sync: boolean }): Promise<void>;
}

/** The reconnect limits a runner may change (`maxAttempts`: GetTask rounds without an answer before `unknown`). */
export type ReconnectPolicy = Pick<FollowLimits, 'initialDelayMs' | 'maxDelayMs' | 'maxAttempts'>;

export interface DelegationRunnerOptions {
  readonly connection: AgentConnection;
  /** The delegation's journal: fresh (just its request) or rebuilt from disk after a reload. */
  readonly journal: DelegationJournal;
  readonly sink: JournalSink;
  readonly now?: () => number;
  readonly newId?: () => string;
  readonly reconnect?: Partial<ReconnectPolicy>;
  /** How many times a first message that provably never left is retried. Default 3. */
  readonly startAttempts?: number;
  /** Bounded wait for the agent to confirm a cancel. Default 10 s. */
  readonly cancelWaitMs?: number;
  /** After learning from GetTask that a replay-profile task settled, how long to drain the missed events. Default 5 s. */
  readonly drainTimeoutMs?: number;
  /**
   * GetTask interval when following without a stream (agent without streaming, or an event too big to
   * stream). Default 1 s. While the answers bring nothing new it grows, up to `pollMaxIntervalMs`
   * (default: five times the interval, as `CLIENT_FOLLOW` has it).
   */
  readonly pollIntervalMs?: number;
  readonly pollMaxIntervalMs?: number;
  /**
   * A stream that brings no event for this long is checked with GetTask: when the task has settled at
   * the agent (its last events never came: a half-open connection after sleep or a network change), or
   * the agent does not answer, the stream is dropped and the task reconciled. Default 60 s; 0 never checks.
   */
  readonly silenceCheckMs?: number;
  /**
   * While a stream has brought nothing yet and the agent has reported no task (the first send, a resend),
   * the user is told after this long that the agent has not answered yet; following goes on (an agent
   * may think a while before its first event) until the deadline, a cancel or the stream's end.
   * Default 20 s; 0 never tells.
   */
  readonly firstEventNoticeMs?: number;
  /** Called once per recorded outcome, after it is persisted. */
  readonly onOutcome?: (journal: DelegationJournal, decision: OutcomeDecision) => void;
  /**
   * Approve every tool call the agent asks about (development-tool extension) without asking: only when
   * the user turned it on for this agent. Each approval is journaled as automatic.
   */
  readonly autoApproveToolCalls?: boolean;
  /**
   * While a tool call waits for the user, the connection its task runs on is kept busy with a GetTask this
   * often: Gemini CLI's server aborts a task whose first request's connection closes, and an idle
   * keep-alive connection is closed after a few seconds. Default 2 s.
   */
  readonly keepAliveMs?: number;
}

const NOT_DELIVERED_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ERR_INVALID_URL',
]);

/** A stream of events from the agent (a send, a reply or a subscription). */
type RemoteStream = AsyncGenerator<StreamResponse, void, undefined>;

/** A non-streamed send's answer as the event a stream would have brought. */
function asStreamResponse(r: Message | Task): StreamResponse {
  return 'messageId' in r ? { payload: { $case: 'message', value: r } } : { payload: { $case: 'task', value: r } };
}

type Drive =
  { readonly kind: 'send' } | { readonly kind: 'reply'; readonly message: Message } | { readonly kind: 'reconcile' };

/**
 * The request the runner sends for a message: streaming, or with `returnImmediately` when it follows
 * by polling. A signed result binds the digest of one of these (src/node/resultCheck.ts).
 */
export function sendMessageParams(message: Message, returnImmediately = false): SendMessageRequest {
  return {
    tenant: '',
    message,
    configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately },
    metadata: undefined,
  };
}

function errorText(e: unknown): string {
  if (e instanceof Error) {
    const cause = (e as Error & { cause?: unknown }).cause;
    const code =
      typeof cause === 'object' && cause !== null && 'code' in cause
        ? String((cause as { code: unknown }).code)
        : undefined;
    // An HTTP answer that is no A2A answer (a proxy's HTML page, say) is said in words, not as its page.
    const said = readableHttpError(e.message);
    const msg = said.length > 400 ? said.slice(0, 400) + '…' : said;
    return code ? `${msg} (${code})` : msg;
  }
  return String(e);
}

function causeCode(e: unknown): string | undefined {
  for (let c: unknown = e, i = 0; c && i < 5; i++) {
    if (typeof c === 'object' && c !== null && 'code' in c && typeof (c as { code: unknown }).code === 'string')
      return (c as { code: string }).code;
    c = typeof c === 'object' && c !== null && 'cause' in c ? (c as { cause: unknown }).cause : undefined;
  }
  return undefined;
}

function isSizeError(e: unknown): boolean {
  return e instanceof Error && /exceeded the maximum allowed size/.test(e.message);
}

/** How long a request the runner makes to find or check its task may take before it counts as unanswered. */
const LOOKUP_TIMEOUT_MS = 30_000;

/** Why a silent stream was dropped (see `silenceCheckMs`). */
class SilentStreamError extends Error {
  override readonly name = 'SilentStreamError';
  /** The task is still running at the agent: only this stream is in doubt (follow again from the cursor). */
  readonly stillRunning: boolean;
  constructor(message: string, stillRunning = false) {
    super(message);
    this.stillRunning = stillRunning;
  }
}

function isAbort(e: unknown): boolean {
  return e instanceof Error && (e.name === 'AbortError' || e.name === 'TimeoutError');
}

/** Drives one delegation. Create one per delegation; `start()` or `resume()` it once. */
export class DelegationRunner {
  readonly journal: DelegationJournal;
  private readonly conn: AgentConnection;
  private readonly sink: JournalSink;
  private readonly now: () => number;
  private readonly newId: () => string;
  /** How the task is followed (src/core/taskFollow.ts): the client's preset with this runner's options. */
  private readonly limits: FollowLimits;
  private readonly cancelWaitMs: number;
  private readonly silenceCheckMs: number;
  private readonly firstEventNoticeMs: number;
  /** Unsubscribes from the connection's transient answers. */
  private readonly offTransient?: () => void;
  /** A transient answer was journaled and no normal answer has come since. */
  private unavailableNoted = false;
  /** Stops the stream being followed (and only it) when it has gone silent. */
  private streamStop?: AbortController;
  private readonly onOutcome?: (journal: DelegationJournal, decision: OutcomeDecision) => void;
  private readonly listeners = new Set<(journal: DelegationJournal) => void>();
  private abort?: AbortController;
  private chain: Promise<void> = Promise.resolve();
  private deadlineTimer?: NodeJS.Timeout;
  private pollOnly = false;
  /** The timeline said the agent does not stream (`stream.notOffered`, once). */
  private saidNotStreamed = false;
  /** What the last GetTask answer said of the task's status and artifacts (to tell a quiet answer from news). */
  private lastAnswer: string | undefined;
  private disposed = false;
  private storeError?: string;
  private settleWaiters: Array<(d: OutcomeDecision) => void> = [];
  private readonly autoApprove: boolean;
  private readonly keepAliveMs: number;
  private keepAliveTimer?: NodeJS.Timeout;
  /** Why the first send is in doubt, when that is more than a broken connection (an answer that could not be read). */
  private sendDoubt?: string;
  /** Send streams whose first event was read by `sendFirst` (an error after it is the agent's, after its task). */
  private readonly openedWithEvent = new WeakSet<RemoteStream>();

  constructor(options: DelegationRunnerOptions) {
    this.conn = options.connection;
    this.journal = options.journal;
    this.sink = options.sink;
    this.now = options.now ?? Date.now;
    this.newId = options.newId ?? randomUUID;
    this.limits = {
      ...CLIENT_FOLLOW,
      ...options.reconnect,
      startAttempts: options.startAttempts ?? CLIENT_FOLLOW.startAttempts,
      drainTimeoutMs: options.drainTimeoutMs ?? CLIENT_FOLLOW.drainTimeoutMs,
      pollIntervalMs: options.pollIntervalMs ?? CLIENT_FOLLOW.pollIntervalMs,
      // Given only an interval, the ceiling keeps the preset's proportion to it.
      pollMaxIntervalMs:
        options.pollMaxIntervalMs ??
        ((options.pollIntervalMs ?? CLIENT_FOLLOW.pollIntervalMs) * CLIENT_FOLLOW.pollMaxIntervalMs) /
          CLIENT_FOLLOW.pollIntervalMs,
    };
    this.cancelWaitMs = options.cancelWaitMs ?? 10_000;
    this.silenceCheckMs = options.silenceCheckMs ?? 60_000;
    this.firstEventNoticeMs = options.firstEventNoticeMs ?? 20_000;
    this.offTransient = this.conn.onTransient?.((r) => this.noteTransient(r));
    this.onOutcome = options.onOutcome;
    this.pollOnly = !this.conn.streaming;
    this.autoApprove = options.autoApproveToolCalls === true;
    this.keepAliveMs = options.keepAliveMs ?? 2_000;
  }

  get requestId(): string {
    return this.journal.requestId;
  }

  /** Called after every entry the journal accepts. Returns an unsubscribe function. */
  onDidChange(listener: (journal: DelegationJournal) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Resolves with the next outcome recorded (input-required, unknown and final ones alike). */
  whenSettled(): Promise<OutcomeDecision> {
    return new Promise((resolve) => this.settleWaiters.push(resolve));
  }

  /** Resolves when nothing is running (the current send/reconnect/cancel has finished). */
  async idle(): Promise<void> {
    let seen: Promise<void>;
    do {
      seen = this.chain;
      await seen;
    } while (seen !== this.chain);
  }

  /** Sends the first message (the journal must hold only its request and not have been sent). */
  start(): Promise<void> {
    if (this.journal.started) return this.resume();
    this.armDeadline();
    return this.run({ kind: 'send' });
  }

  /**
   * Re-attaches after a reload: a delegation still in flight reconciles (GetTask, then subscribe
   * from the journal's cursor); a settled one only fetches the final artifacts if they are missing;
   * input-required, auth-required and unknown wait for the user.
   */
  resume(): Promise<void> {
    if (!this.journal.started) return this.start();
    // The process that sent it stopped following before any task was reported: what comes of it is not known yet.
    if (!this.journal.taskId)
      this.sendDoubt = 'following stopped (a reload or an exit) before the agent reported a task';
    const d = this.journal.decide();
    if (d) {
      if (
        isFinalOutcome(d.outcome) &&
        this.journal.taskId &&
        !this.journal.hasFinalSnapshot &&
        isTerminalTaskState(this.journal.taskState)
      ) {
        return this.exclusive(async () => {
          await this.fetchFinal(true);
        });
      }
      return Promise.resolve();
    }
    this.armDeadline();
    return this.run({ kind: 'reconcile' });
  }

  /**
   * Answers `input-required`: a new message on the same task, which then continues. Resolves once the
   * reply is recorded and on its way, not when the task next settles (`idle()` or `whenSettled()` wait
   * for that): a caller such as the panel must not stay busy, with Cancel disabled, for the whole turn.
   */
  async reply(text: string): Promise<void> {
    const d = this.journal.decide();
    const taskId = this.journal.taskId;
    if (d?.outcome !== 'input-required' || !taskId) throw new Error('This delegation is not waiting for input.');
    await this.idle();
    const message = buildReplyMessage(this.newId(), taskId, this.journal.contextId ?? '', text);
    await this.record({ kind: 'reply', at: this.now(), message }, true);
    this.followInBackground({ kind: 'reply', message });
  }

  /**
   * Answers a tool call awaiting approval (development-tool extension): a new message on the same task
   * whose one part is the data part `{callId, outcome}`. Without `callId`, the only one awaiting approval.
   * Resolves once the answer is recorded and on its way (as `reply`).
   */
  async answerToolCall(callId: string | undefined, outcome: string, auto = false): Promise<void> {
    const pending = pendingToolCalls(this.journal.toolCalls());
    if (this.journal.decide()?.outcome !== 'input-required' || pending.length === 0)
      throw new Error('No tool call of this delegation is waiting for approval.');
    let id = callId;
    if (id === undefined) {
      if (pending.length > 1)
        throw new Error(
          `${pending.length} tool calls are waiting for approval; name one of them: ${pending.map((c) => c.callId).join(', ')}`,
        );
      id = pending[0].callId;
    }
    if (!pending.some((c) => c.callId === id))
      throw new Error(
        `Tool call ${id} is not waiting for approval; the ones waiting are: ${pending.map((c) => c.callId).join(', ')}`,
      );
    await this.replyWith(toolAnswerParts(id, outcome), auto);
  }

  /**
   * Done: the user accepts what the agent did while it waits for them. The delegation ends as completed
   * by the user (journaled), and the task is then canceled at the agent so it does not linger there;
   * that cancel is not journaled (its answer changes nothing about the outcome).
   */
  async finish(): Promise<OutcomeDecision> {
    const d = this.journal.decide();
    if (d?.outcome !== 'input-required')
      throw new Error('Only a delegation whose agent is waiting for you can be finished with Done.');
    await this.idle();
    this.stopKeepAlive();
    await this.exclusive(async () => {
      await this.record({ kind: 'finished', at: this.now(), by: 'user' }, true);
      await this.settle();
      const taskId = this.journal.taskId;
      if (taskId)
        await this.conn.client
          .cancelTask(
            { tenant: '', id: taskId, metadata: undefined },
            this.options(AbortSignal.timeout(this.cancelWaitMs)),
          )
          .catch(() => undefined);
    });
    return this.journal.decide() ?? d;
  }

  /** A message with these parts on the task, as `reply` sends text. */
  private async replyWith(parts: Part[], autoApproved: boolean): Promise<void> {
    const taskId = this.journal.taskId;
    if (!taskId) throw new Error('This delegation is not waiting for input.');
    await this.idle();
    this.stopKeepAlive();
    const message = {
      ...buildReplyMessage(this.newId(), taskId, this.journal.contextId ?? '', ''),
      role: Role.ROLE_USER,
      parts,
    };
    await this.record({ kind: 'reply', at: this.now(), message, ...(autoApproved ? { autoApproved } : {}) }, true);
    this.followInBackground({ kind: 'reply', message });
  }

  /**
   * After the task settled: approves waiting tool calls when the user turned that on for this agent, and
   * keeps the connection busy while one waits for the user (see `keepAliveMs`).
   */
  private afterSettle(): void {
    const waiting =
      this.devTool &&
      this.journal.decide()?.outcome === 'input-required' &&
      pendingToolCalls(this.journal.toolCalls()).length > 0;
    if (!waiting || this.disposed) {
      this.stopKeepAlive();
      return;
    }
    if (this.autoApprove) {
      const [first] = pendingToolCalls(this.journal.toolCalls());
      // One at a time: the answer's stream brings the next question, if any.
      void this.answerToolCall(first.callId, 'proceed_once', true).catch(() => undefined);
      return;
    }
    if (this.keepAliveTimer || this.keepAliveMs <= 0) return;
    this.keepAliveTimer = setInterval(() => {
      if (this.disposed) return this.stopKeepAlive();
      void this.taskAtAgent(AbortSignal.timeout(Math.max(1_000, this.keepAliveMs * 2))).catch(() => undefined);
    }, this.keepAliveMs);
    this.keepAliveTimer.unref?.();
  }

  private stopKeepAlive(): void {
    if (this.keepAliveTimer) clearInterval(this.keepAliveTimer);
    this.keepAliveTimer = undefined;
  }

  /** The agent speaks the development-tool extension: its card declares it, or its events show it. */
  private get devTool(): boolean {
    return this.journal.devTool || this.conn.extensions.includes(DEV_TOOL_EXTENSION_URI);
  }

  /** Starts following (errors are recorded in the journal by `run`; a failed record is only logged there). */
  private followInBackground(drive: Drive): void {
    this.run(drive).catch(() => undefined);
  }

  /**
   * Reconciles an `unknown` delegation with the agent (never resends to an agent that is not
   * idempotent), or follows an `auth-required` one again once the user has authorized (a token set,
   * or the agent's own sign-in done elsewhere): A2A leaves authorization out of band, and the task
   * goes on at the agent, so Baton asks where it is and follows it from there. Resolves once the check
   * has started (as `reply`).
   */
  async checkAgain(): Promise<void> {
    const d = this.journal.decide();
    if (d?.outcome !== 'unknown' && d?.outcome !== 'auth-required')
      throw new Error('Only a delegation whose state is unknown or that waits for authorization can be checked again.');
    await this.idle();
    await this.record({ kind: 'connection', at: this.now(), status: 'checking' }, true);
    this.followInBackground({ kind: 'reconcile' });
  }

  /**
   * For a look nobody asked for (the user came back to the window): asks the agent whether a task
   * waiting for authorization has gone on, and only then checks again as `checkAgain` does. While it
   * still waits (or the agent does not answer) nothing is recorded, so repeated looks leave no trace in
   * the timeline. Resolves true when the task had gone on.
   */
  async checkIfAuthorized(): Promise<boolean> {
    const taskId = this.journal.taskId;
    if (this.journal.decide()?.outcome !== 'auth-required' || !taskId) return false;
    let state: TaskState | undefined;
    try {
      state = (await this.taskAtAgent(AbortSignal.timeout(10_000))).status?.state;
    } catch {
      return false;
    }
    if (
      state === undefined ||
      state === TaskState.TASK_STATE_AUTH_REQUIRED ||
      this.journal.decide()?.outcome !== 'auth-required'
    )
      return false;
    await this.checkAgain();
    return true;
  }

  /**
   * Cancels at the agent, waiting at most `cancelWaitMs` for it to confirm. Resolves with the
   * outcome (canceled, or whatever the task reached first).
   */
  async cancel(): Promise<OutcomeDecision> {
    const d = this.journal.decide();
    if (d && isFinalOutcome(d.outcome)) return d;
    this.stopKeepAlive();
    return this.stopAndCancel('user');
  }

  /** Stops following (streams, timers); does not cancel at the agent. The journal stays as it is. */
  dispose(): void {
    this.disposed = true;
    this.offTransient?.();
    this.stopKeepAlive();
    this.abort?.abort();
    if (this.deadlineTimer) clearTimeout(this.deadlineTimer);
    this.listeners.clear();
  }

  // ---------------------------------------------------------------------------------------------

  private armDeadline(): void {
    const deadline = this.journal.request.deadline;
    if (deadline === undefined || this.deadlineTimer) return;
    const wait = Math.max(0, deadline - this.now());
    this.deadlineTimer = setTimeout(
      () => {
        this.deadlineTimer = undefined;
        const d = this.journal.decide();
        if (this.disposed || (d && isFinalOutcome(d.outcome))) return;
        void this.stopAndCancel('deadline').catch(() => undefined);
      },
      Math.min(wait, 2 ** 31 - 1),
    );
    this.deadlineTimer.unref?.();
  }

  private async stopAndCancel(by: 'user' | 'deadline'): Promise<OutcomeDecision> {
    this.abort?.abort();
    await this.idle();
    const d = this.journal.decide();
    if (d && isFinalOutcome(d.outcome)) return d;
    await this.exclusive(async () => {
      await this.record({ kind: 'cancel', at: this.now(), by }, true);
      await this.cancelAtAgent();
      await this.settle();
    });
    return (
      this.journal.decide() ?? {
        outcome: 'unknown',
        reason: outcomeReasonText({ code: 'unknown.afterCancel' }, ''),
        because: { code: 'unknown.afterCancel' },
      }
    );
  }

  private async cancelAtAgent(): Promise<void> {
    const taskId = this.journal.taskId;
    if (!this.journal.started) {
      await this.record({ kind: 'cancelResult', at: this.now(), confirmed: true, code: 'cancel.beforeSend' }, true);
      return;
    }
    if (!taskId) {
      await this.record(
        {
          kind: 'cancelResult',
          at: this.now(),
          confirmed: false,
          code: 'cancel.noTask',
        },
        true,
      );
      return;
    }
    const seconds = Math.round(this.cancelWaitMs / 100) / 10;
    try {
      const task = await this.conn.client.cancelTask(
        { tenant: '', id: taskId, metadata: undefined },
        this.options(AbortSignal.timeout(this.cancelWaitMs)),
      );
      await this.record({ kind: 'snapshot', at: this.now(), source: 'cancel', task }, true);
      const state = task.status?.state;
      const confirmed = state === TaskState.TASK_STATE_CANCELED;
      const answer = confirmed
        ? ({ code: 'cancel.confirmed' } as const)
        : task.status
          ? ({ code: 'cancel.otherState', params: [TaskState[task.status.state]] } as const)
          : ({ code: 'cancel.noState' } as const);
      await this.record({ kind: 'cancelResult', at: this.now(), confirmed, ...answer }, true);
    } catch (e) {
      // Already finished, unknown to the agent, or no answer in time: ask once what state it is in.
      let confirmed = false;
      try {
        const task = await this.taskAtAgent(AbortSignal.timeout(Math.min(this.cancelWaitMs, 5_000)));
        await this.record({ kind: 'snapshot', at: this.now(), source: 'getTask', task }, true);
        confirmed = task.status?.state === TaskState.TASK_STATE_CANCELED;
      } catch {
        // No answer either: the cancel stays unconfirmed.
      }
      const answer = confirmed
        ? ({ code: 'cancel.confirmed' } as const)
        : isAbort(e)
          ? ({ code: 'cancel.timeout', params: [seconds] } as const)
          : e instanceof TransientHttpError
            ? ({ code: 'cancel.unavailable', params: [errorText(e)] } as const)
            : ({ code: 'cancel.refused', params: [errorText(e)] } as const);
      await this.record({ kind: 'cancelResult', at: this.now(), confirmed, ...answer }, true);
    }
  }

  /** Runs `fn` after everything queued before it; one operation at a time. */
  private exclusive(fn: () => Promise<void>): Promise<void> {
    const run = this.chain.then(fn);
    this.chain = run.catch(() => undefined);
    return run;
  }

  private run(drive: Drive): Promise<void> {
    return this.exclusive(async () => {
      const abort = new AbortController();
      this.abort = abort;
      try {
        await this.drive(drive, abort.signal);
      } catch (e) {
        if (!abort.signal.aborted) {
          await this.record(
            {
              kind: 'notice',
              at: this.now(),
              level: 'error',
              code: 'follow.failed',
              params: [errorText(e)],
            },
            true,
          );
          await this.record(
            { kind: 'connection', at: this.now(), status: 'gaveUp', attempt: 0, error: errorText(e) },
            true,
          );
          await this.settle();
        }
      } finally {
        if (this.abort === abort) this.abort = undefined;
      }
    });
  }

  /** The delegation's task as the agent has it now (GetTask, no history). */
  private taskAtAgent(signal: AbortSignal): Promise<Task> {
    return this.conn.client.getTask(
      { tenant: '', id: this.journal.taskId ?? '', historyLength: 0 },
      this.options(signal),
    );
  }

  private options(signal?: AbortSignal, extra?: Record<string, string>): RequestOptions {
    const serviceParameters: Record<string, string> = { ...extra };
    // The development-tool extension is activated once the agent is seen to speak it (its card may not say so).
    const extensions =
      this.journal.devTool && !this.conn.extensions.includes(DEV_TOOL_EXTENSION_URI)
        ? [...this.conn.extensions, DEV_TOOL_EXTENSION_URI]
        : this.conn.extensions;
    if (extensions.length > 0) {
      serviceParameters['A2A-Extensions'] = extensions.join(',');
      // A2A 0.3 named the header X-A2A-Extensions.
      if (this.conn.endpoint.protocolVersion.startsWith('0.'))
        serviceParameters['X-A2A-Extensions'] = extensions.join(',');
    }
    return { signal, serviceParameters };
  }

  private async drive(drive: Drive, signal: AbortSignal): Promise<void> {
    const start = await this.startOf(drive, signal);
    if (!start) return;
    const end = await followTask({ io: this.followIO(), limits: this.limits, start, signal });
    if (end.state.kind === 'done') return this.settle();
    if (end.state.kind === 'lost') return this.giveUp(end.state.attempts, end.state.error);
  }

  /** Where following starts: sending the first message, on the stream of a reply, or asking where the task is. */
  private async startOf(drive: Drive, signal: AbortSignal): Promise<FollowStep<RemoteStream> | undefined> {
    if (drive.kind === 'send') return startSending(this.pollOnly);
    if (drive.kind === 'reconcile') return startReconciling(this.pollOnly);
    if (!this.pollOnly)
      return startStreaming(
        this.conn.client.sendMessageStream(this.sendParams(drive.message), this.options(this.streamSignal(signal))),
        false,
      );
    try {
      const r = await this.conn.client.sendMessage(this.sendParams(drive.message, true), this.options(signal));
      await this.handle(asStreamResponse(r));
    } catch (e) {
      if (signal.aborted) return undefined;
      await this.record(
        { kind: 'notice', at: this.now(), level: 'warning', code: 'reply.failed', params: [errorText(e)] },
        false,
      );
    }
    return startReconciling(true);
  }

  /** The follow machine's I/O: the agent's client, with everything it sees journaled. */
  private followIO(): FollowIO<RemoteStream> {
    return {
      send: (_attempt, context, signal) => this.sendFirst(context.polling, signal),
      resend: async (signal) => {
        await this.record({ kind: 'send', at: this.now(), attempt: this.journal.sendAttempts + 1 }, true);
        return { kind: 'opened', stream: this.openSend(signal) };
      },
      consume: (stream, signal) => this.consumeToEnd(stream, signal),
      reconcile: (_context, signal) => this.reconcile(signal),
      subscribe: (signal) => Promise.resolve({ kind: 'opened', stream: this.subscribe(signal) }),
      drain: (signal) => this.drain(signal),
      effect: (effect) => this.recordEffect(effect),
    };
  }

  /** Reads a stream into the journal and says how it ended. */
  private async consumeToEnd(stream: RemoteStream, signal: AbortSignal): Promise<StreamEvent | { kind: 'aborted' }> {
    const before = this.journal.eventCount;
    const read = { events: this.openedWithEvent.has(stream) ? 1 : 0 };
    const error = await this.consume(stream, signal, read);
    if (signal.aborted) return { kind: 'aborted' };
    if (this.journal.decide()) return { kind: 'settled' };
    const ae = remoteAgentError(error);
    if (ae && read.events > 0 && this.journal.taskId) return this.failedAtAgent(ae, signal);
    // A running task on a stream that may be half-open: subscribe again (from the last event with the
    // replay profile; from the task as it is without); this is not a lost connection.
    if (error instanceof SilentStreamError && error.stillRunning) return { kind: 'silent' };
    return {
      kind: 'ended',
      progressed: this.journal.eventCount > before,
      taskKnown: this.journal.taskId !== undefined && this.journal.taskId !== '',
      tooBig: error !== undefined && isSizeError(error),
      error: error === undefined ? undefined : errorText(error),
    };
  }

  /**
   * The agent's stream brought its task, then an error (a JSON-RPC error event such as -32603): the
   * task failed at the agent — unless GetTask shows it settled (or waiting) after all.
   */
  private async failedAtAgent(ae: A2AError, signal: AbortSignal): Promise<StreamEvent | { kind: 'aborted' }> {
    try {
      const task = await this.taskAtAgent(AbortSignal.any([signal, AbortSignal.timeout(10_000)]));
      await this.record({ kind: 'snapshot', at: this.now(), source: 'getTask', task }, true);
    } catch {
      // The agent does not say more than its error.
    }
    if (signal.aborted) return { kind: 'aborted' };
    if (!this.journal.decide()) await this.record({ kind: 'agentError', at: this.now(), error: ae.message }, true);
    return { kind: 'settled' };
  }

  /** Which task, and what state is it in? */
  private async reconcile(signal: AbortSignal): Promise<ReconcileEvent<RemoteStream> | { kind: 'aborted' }> {
    if (!this.journal.taskId) {
      const found = await this.findTask(signal);
      if (signal.aborted) return { kind: 'aborted' };
      if (found === 'resend') return { kind: 'resend' };
      if (found === undefined) {
        await this.record(
          {
            kind: 'sendFailed',
            at: this.now(),
            delivered: 'maybe',
            error: `${this.sendDoubt ?? 'the connection broke before the agent reported a task'}, and the agent cannot say whether it received it`,
          },
          true,
        );
        return { kind: 'missing' };
      }
    }
    let task: Task;
    try {
      task = await this.taskAtAgent(AbortSignal.any([signal, AbortSignal.timeout(LOOKUP_TIMEOUT_MS)]));
    } catch (e) {
      if (signal.aborted) return { kind: 'aborted' };
      const ae = agentError(e);
      if (ae && /not ?found/i.test(`${ae.name} ${ae.message}`))
        return { kind: 'unanswered', gone: true, error: `the agent no longer knows task ${this.journal.taskId}` };
      return { kind: 'unanswered', gone: false, error: errorText(e) };
    }
    const wasReconnecting = this.journal.state() === 'reconnecting';
    await this.record({ kind: 'snapshot', at: this.now(), source: 'getTask', task }, true);
    if (wasReconnecting && !this.journal.decide())
      await this.record({ kind: 'connection', at: this.now(), status: 'restored' }, true);
    if (this.journal.decide()) return { kind: 'settled', missedEvents: this.conn.replay };
    const answer = JSON.stringify([task.status, task.artifacts]);
    const changed = answer !== this.lastAnswer;
    this.lastAnswer = answer;
    return { kind: 'running', changed };
  }

  /** Journals what a transition of the follow machine calls for. */
  private async recordEffect(effect: FollowEffect): Promise<void> {
    switch (effect.kind) {
      case 'retryingSend':
        await this.record(
          { kind: 'connection', at: this.now(), status: 'retrying', attempt: effect.attempt, error: effect.error },
          false,
        );
        return;
      case 'sendFailed':
        await this.record({ kind: 'sendFailed', at: this.now(), delivered: 'no', error: effect.error }, true);
        return;
      case 'pollingInstead':
        this.pollOnly = true;
        await this.record(
          {
            kind: 'notice',
            at: this.now(),
            level: 'warning',
            ...(effect.why !== 'tooBig'
              ? { code: 'stream.keepsFailing' }
              : effect.error === undefined
                ? { code: 'stream.tooLarge' }
                : { code: 'stream.tooLargeBecause', params: [effect.error] }),
          },
          true,
        );
        return;
      case 'streamLost':
        if (this.journal.state() !== 'reconnecting')
          await this.record(
            {
              kind: 'connection',
              at: this.now(),
              status: 'lost',
              error: effect.error ?? 'the stream ended before the task settled',
            },
            true,
          );
        return;
      case 'unanswered':
        if (effect.willRetry)
          await this.record(
            { kind: 'connection', at: this.now(), status: 'retrying', attempt: effect.attempt, error: effect.error },
            false,
          );
        return;
    }
  }

  private sendParams(message: Message, returnImmediately = false): SendMessageRequest {
    return sendMessageParams(message, returnImmediately);
  }

  /** The signal of a stream to follow: the run's, plus a stop of its own for when it goes silent. */
  private streamSignal(signal: AbortSignal): AbortSignal {
    const stop = new AbortController();
    this.streamStop = stop;
    return AbortSignal.any([signal, stop.signal]);
  }

  private openSend(signal: AbortSignal): AsyncGenerator<StreamResponse, void, undefined> {
    return this.conn.client.sendMessageStream(
      this.sendParams(this.journal.request.message),
      this.options(this.streamSignal(signal)),
    );
  }

  private subscribe(signal: AbortSignal): AsyncGenerator<StreamResponse, void, undefined> {
    const extra: Record<string, string> = {};
    if (this.conn.replay) extra['Last-Event-ID'] = String(this.journal.cursor);
    return this.conn.client.resubscribeTask(
      { tenant: '', id: this.journal.taskId ?? '' },
      this.options(this.streamSignal(signal), extra),
    );
  }

  /**
   * Sends the first message, streaming or (`polling`) with `returnImmediately`, and says what came of
   * it. A streamed send pulls its first event here, so a refused connection is told apart from a broken
   * stream; either way a failure is classified once, by `sendFailure`.
   */
  private async sendFirst(
    polling: boolean,
    signal: AbortSignal,
  ): Promise<SendEvent<RemoteStream> | { kind: 'aborted' }> {
    await this.record({ kind: 'send', at: this.now(), attempt: this.journal.sendAttempts + 1 }, true);
    let answer: { stream: RemoteStream; first: IteratorResult<StreamResponse, void> } | { reply: Message | Task };
    try {
      if (polling)
        answer = {
          reply: await this.conn.client.sendMessage(
            this.sendParams(this.journal.request.message, true),
            this.options(signal),
          ),
        };
      else {
        const stream = this.openSend(signal);
        answer = { stream, first: await this.firstEvent(stream.next()) };
      }
    } catch (e) {
      if (signal.aborted) return { kind: 'aborted' };
      return this.sendFailure(e);
    }
    if ('reply' in answer) {
      await this.handle(asStreamResponse(answer.reply));
      const settled = this.journal.decide() !== undefined;
      if (!settled && !this.conn.streaming && !this.saidNotStreamed) {
        // Progress will come as often as it is asked for: the timeline says why it comes in steps.
        this.saidNotStreamed = true;
        await this.record({ kind: 'notice', at: this.now(), level: 'info', code: 'stream.notOffered' }, true);
      }
      return { kind: 'answered', settled };
    }
    if (answer.first.done) {
      await this.record(
        { kind: 'connection', at: this.now(), status: 'lost', error: 'the stream closed before the first event' },
        true,
      );
      return { kind: 'inDoubt' };
    }
    await this.handle(answer.first.value);
    this.openedWithEvent.add(answer.stream);
    return { kind: 'opened', stream: answer.stream };
  }

  /**
   * Classifies a failed first send: refused (the agent answered the send with an error, before any
   * task), provably not delivered, too big to stream, or in doubt — sent, but the answer was lost or
   * could not be read (the SDK's own validation refused it), so the task is looked for, never assumed.
   */
  private async sendFailure(e: unknown): Promise<SendEvent<RemoteStream>> {
    if (e instanceof TransientHttpError) {
      // The server said it did not take it (429, 503), after the tries the connection made: not delivered.
      if (e.notTaken) return { kind: 'notDelivered', error: errorText(e), retryable: false };
      // A balancer's 502/504 may come after the agent got the message: look for the task.
      this.sendDoubt = errorText(e);
      await this.record({ kind: 'connection', at: this.now(), status: 'lost', error: this.sendDoubt }, true);
      return { kind: 'inDoubt' };
    }
    const ae = remoteAgentError(e);
    if (ae) {
      await this.record({ kind: 'sendFailed', at: this.now(), delivered: 'refused', error: agentErrorText(ae) }, true);
      return { kind: 'refused' };
    }
    if (agentError(e)) {
      this.sendDoubt = `the agent's answer could not be read (${errorText(e)})`;
      await this.record({ kind: 'connection', at: this.now(), status: 'lost', error: this.sendDoubt }, true);
      return { kind: 'inDoubt' };
    }
    const code = causeCode(e);
    const httpStatus = e instanceof Error ? /\b(4\d\d)\b/.exec(e.message)?.[1] : undefined;
    if ((code && NOT_DELIVERED_CODES.has(code)) || httpStatus)
      return { kind: 'notDelivered', error: errorText(e), retryable: code !== undefined };
    if (isSizeError(e)) return { kind: 'tooBig' };
    await this.record({ kind: 'connection', at: this.now(), status: 'lost', error: errorText(e) }, true);
    return { kind: 'inDoubt' };
  }

  /**
   * The first message may or may not have reached the agent and no task id is known. 'resend' when
   * the agent honours messageId idempotency; otherwise look for the task by its first message
   * (ListTasks); undefined when it cannot be found.
   */
  private async findTask(signal: AbortSignal): Promise<'resend' | 'found' | undefined> {
    if (this.conn.idempotentSend) return 'resend';
    try {
      const since = new Date(this.journal.request.createdAt - 60_000).toISOString();
      const list = await this.conn.client.listTasks(
        {
          tenant: '',
          contextId: '',
          status: TaskState.TASK_STATE_UNSPECIFIED,
          pageSize: 100,
          pageToken: '',
          historyLength: 100,
          statusTimestampAfter: since,
          includeArtifacts: false,
        },
        this.options(AbortSignal.any([signal, AbortSignal.timeout(LOOKUP_TIMEOUT_MS)])),
      );
      const mine = list.tasks.find((t) => t.history.some((m) => m.messageId === this.journal.requestId));
      if (!mine) return undefined;
      await this.record({ kind: 'task', at: this.now(), taskId: mine.id, contextId: mine.contextId }, true);
      return 'found';
    } catch {
      return undefined;
    }
  }

  /**
   * After `firstEventNoticeMs` without a task or an event, tells the user once that the agent has not
   * answered yet: a server that sends its headers and then nothing would otherwise leave the delegation
   * starting with no word. Nothing is ended here: an agent may take a while before its first event, and
   * the deadline or Cancel end the wait.
   */
  private firstEventTimer(): NodeJS.Timeout | undefined {
    if (this.firstEventNoticeMs <= 0) return undefined;
    const seconds = Math.round(this.firstEventNoticeMs / 100) / 10;
    const timer = setTimeout(() => {
      if (this.journal.taskId || this.journal.decide()) return;
      void this.record(
        { kind: 'notice', at: this.now(), level: 'warning', code: 'stream.noFirstEvent', params: [seconds] },
        true,
      );
    }, this.firstEventNoticeMs);
    timer.unref();
    return timer;
  }

  /** `next`, the first event of a send's stream, with the user told if it is long in coming. */
  private async firstEvent(
    next: Promise<IteratorResult<StreamResponse, void>>,
  ): Promise<IteratorResult<StreamResponse, void>> {
    const timer = this.firstEventTimer();
    try {
      return await next;
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Journals that the gateway (or a balancer in front of the agent) answered "not now" and the request
   * is being tried again: once when that starts, once when a normal answer comes again.
   */
  private noteTransient(r: TransientReport): void {
    if (r.kind === 'available') {
      if (!this.unavailableNoted) return;
      this.unavailableNoted = false;
      void this.record({ kind: 'notice', at: this.now(), level: 'info', code: 'gateway.available' }, false);
      return;
    }
    const a = r.answer;
    if (this.unavailableNoted || a.retryInMs === undefined) return;
    this.unavailableNoted = true;
    const seconds = Math.max(1, Math.round(a.retryInMs / 1000));
    void this.record(
      {
        kind: 'notice',
        at: this.now(),
        level: 'warning',
        code: 'gateway.unavailable',
        params: [a.status, a.origin, a.message, seconds],
      },
      false,
    );
  }

  /**
   * Reads a stream into the journal. Returns the error that ended it, or undefined when it closed. A
   * stream silent for `silenceCheckMs` is checked with GetTask (see the option) and dropped with a
   * `SilentStreamError` when the task settled meanwhile or the agent does not answer.
   */
  private async consume(
    stream: AsyncGenerator<StreamResponse, void, undefined>,
    signal: AbortSignal,
    read: { events: number } = { events: 0 },
  ): Promise<unknown> {
    const stop = this.streamStop;
    let lastEventAt = Date.now();
    let checking = false;
    let dropped: SilentStreamError | undefined;
    const watch =
      this.silenceCheckMs > 0 && stop
        ? setInterval(
            () => {
              if (checking || dropped || Date.now() - lastEventAt < this.silenceCheckMs || !this.journal.taskId) return;
              checking = true;
              void this.checkSilence(signal).then((verdict) => {
                checking = false;
                lastEventAt = Date.now(); // the next check is a whole period later
                if (verdict === undefined || signal.aborted) return;
                dropped = new SilentStreamError(verdict.why, verdict.stillRunning);
                stop.abort();
              });
            },
            Math.max(25, Math.floor(this.silenceCheckMs / 4)),
          )
        : undefined;
    watch?.unref();
    const untilFirst = !this.journal.taskId && read.events === 0 ? this.firstEventTimer() : undefined;
    try {
      for await (const ev of stream) {
        clearTimeout(untilFirst);
        lastEventAt = Date.now();
        if (signal.aborted) return undefined;
        read.events++;
        await this.handle(ev);
        if (this.journal.decide()) {
          // Gemini CLI's server ends the stream itself after its last event, and cutting the response
          // short closes the connection its task runs on, which aborts the task there: read to the end.
          if (this.devTool) continue;
          // The stream closes after a terminal or interrupted state; don't wait on a server that doesn't.
          await stream.return(undefined);
          return undefined;
        }
      }
      return undefined;
    } catch (e) {
      return dropped ?? e;
    } finally {
      clearInterval(watch);
      clearTimeout(untilFirst);
    }
  }

  /**
   * Why a silent stream should be dropped, or undefined when it should be kept: the task settled at
   * the agent, or the agent does not answer; or the task is still running (`stillRunning`: the stream
   * is replaced by a new subscription, which brings back live progress if this one was half-open).
   * With the replay profile that is always done (it resumes from the cursor, so it costs nothing);
   * without it, only when the agent reports a status this stream never brought (so it is half-open),
   * since a plain re-subscription starts from the task as it is: a quiet stream is kept.
   */
  private async checkSilence(signal: AbortSignal): Promise<{ why: string; stillRunning: boolean } | undefined> {
    const silentFor =
      this.silenceCheckMs < 1_000 ? `${this.silenceCheckMs} ms` : `${Math.round(this.silenceCheckMs / 1000)} s`;
    try {
      const task = await this.taskAtAgent(
        AbortSignal.any([signal, AbortSignal.timeout(Math.min(10_000, Math.max(1_000, this.silenceCheckMs)))]),
      );
      const state = task.status?.state;
      if (isTerminalTaskState(state) || isInterruptedTaskState(state)) {
        return {
          why: `no event for ${silentFor} while the agent reports the task ${taskStateToJSON(
            state ?? TaskState.TASK_STATE_UNSPECIFIED,
          )
            .replace('TASK_STATE_', '')
            .toLowerCase()
            .replace(/_/g, ' ')}`,
          stillRunning: false,
        };
      }
      if (this.conn.replay)
        return { why: `no event for ${silentFor}; following the task again from its last event`, stillRunning: true };
      const missed =
        state !== this.journal.taskState ||
        (partsText(task.status?.message?.parts) || undefined) !== this.journal.stateText;
      return missed
        ? {
            why: `no event for ${silentFor} while the agent reports progress this stream did not bring; following the task again`,
            stillRunning: true,
          }
        : undefined;
    } catch (e) {
      if (signal.aborted) return undefined;
      return {
        why: `no event for ${silentFor} and the agent does not answer GetTask (${errorText(e)})`,
        stillRunning: false,
      };
    }
  }

  /** A replay-profile task settled while we were away: fetch the events we missed (bounded). */
  private async drain(signal: AbortSignal): Promise<void> {
    if (!this.journal.taskId) return;
    const ac = new AbortController();
    const onAbort = (): void => ac.abort();
    signal.addEventListener('abort', onAbort, { once: true });
    const timer = setTimeout(() => ac.abort(), this.limits.drainTimeoutMs);
    try {
      for await (const ev of this.subscribe(ac.signal)) {
        await this.handle(ev);
      }
    } catch (e) {
      if (!ac.signal.aborted && !agentError(e)) {
        await this.record(
          {
            kind: 'notice',
            at: this.now(),
            level: 'warning',
            code: 'replay.failed',
            params: [errorText(e)],
          },
          false,
        );
      }
    } finally {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
    }
  }

  /** Journals one streamed event (de-duplicated by seq when the agent numbers them). */
  private async handle(raw: StreamResponse): Promise<void> {
    // A development-tool agent's tool-call parts carry the tool's schema (several KB each): not journaled.
    const ev = slimDevToolEvent(raw);
    const p = ev.payload;
    if (!p) return;
    const at = this.now();
    if (p.$case === 'task') {
      if (!this.journal.taskId)
        await this.record({ kind: 'task', at, taskId: p.value.id, contextId: p.value.contextId }, true);
      const settles = isTerminalTaskState(p.value.status?.state) || isInterruptedTaskState(p.value.status?.state);
      // A replay-profile stream numbers its Task events too: journal them as events so the cursor advances.
      const taskSeq = this.conn.replay ? seqOf(p.value.metadata) : undefined;
      if (taskSeq !== undefined) {
        if (this.journal.isDuplicate(p.value.id, taskSeq)) return;
        await this.record({ kind: 'event', at, taskId: p.value.id, seq: taskSeq, sequenced: true, event: ev }, true);
        return;
      }
      await this.record({ kind: 'snapshot', at, source: 'stream', task: p.value }, settles);
      return;
    }
    let taskId = this.journal.taskId ?? '';
    let metadata: Record<string, unknown> | undefined;
    let stateChange = false;
    if (p.$case === 'statusUpdate') {
      taskId = p.value.taskId || taskId;
      metadata = p.value.metadata;
      stateChange = p.value.status?.state !== this.journal.taskState;
    } else if (p.$case === 'artifactUpdate') {
      taskId = p.value.taskId || taskId;
      metadata = p.value.metadata;
    } else {
      taskId = p.value.taskId || taskId;
      metadata = p.value.metadata;
      stateChange = true;
    }
    if (!this.journal.taskId && taskId) {
      const contextId = p.value.contextId;
      await this.record({ kind: 'task', at, taskId, contextId }, true);
    }
    const serverSeq = this.conn.replay ? seqOf(metadata) : undefined;
    if (serverSeq !== undefined && this.journal.isDuplicate(taskId, serverSeq)) return;
    const seq = serverSeq ?? this.journal.nextLocalSeq();
    await this.record({ kind: 'event', at, taskId, seq, sequenced: serverSeq !== undefined, event: ev }, stateChange);
  }

  private async giveUp(attempts: number, error: string): Promise<void> {
    await this.record({ kind: 'connection', at: this.now(), status: 'gaveUp', attempt: attempts, error }, true);
    await this.settle();
  }

  /** Records the decided outcome (with final artifacts from GetTask when the task is terminal). */
  private async settle(): Promise<void> {
    const decision = this.journal.decide();
    if (!decision) return;
    if (isTerminalTaskState(this.journal.taskState) && !this.journal.hasFinalSnapshot) await this.fetchFinal(false);
    const recorded = this.journal.recordedOutcome;
    if (recorded && recorded.outcome === decision.outcome && recorded.reason === decision.reason) return;
    await this.record(
      {
        kind: 'outcome',
        at: this.now(),
        outcome: decision.outcome,
        reason: decision.reason,
        ...(decision.because ? { because: decision.because } : {}),
        ...(decision.cancelConfirmed !== undefined ? { cancelConfirmed: decision.cancelConfirmed } : {}),
      },
      true,
    );
    if (isFinalOutcome(decision.outcome) && this.deadlineTimer) {
      clearTimeout(this.deadlineTimer);
      this.deadlineTimer = undefined;
    }
    this.onOutcome?.(this.journal, decision);
    this.afterSettle();
    const waiters = this.settleWaiters;
    this.settleWaiters = [];
    for (const w of waiters) w(decision);
  }

  /** The final artifacts always come from GetTask (a few tries; the outcome stands either way). */
  private async fetchFinal(announce: boolean): Promise<void> {
    const id = this.journal.taskId;
    if (!id) return;
    let lastError = '';
    for (let attempt = 1; attempt <= 3; attempt++) {
      try {
        const task = await this.taskAtAgent(AbortSignal.timeout(30_000));
        await this.record({ kind: 'snapshot', at: this.now(), source: 'final', task }, true);
        return;
      } catch (e) {
        lastError = errorText(e);
        if (this.disposed) return;
        await sleep(backoffMs(this.limits, attempt));
      }
    }
    await this.record(
      {
        kind: 'notice',
        at: this.now(),
        level: 'warning',
        code: announce ? 'final.failed' : 'final.failedRetry',
        params: [lastError],
      },
      true,
    );
  }

  private async record(entry: JournalEntry, sync: boolean): Promise<boolean> {
    // A disposed runner writes nothing more: the journal may already belong to another process.
    if (this.disposed) return false;
    if (!this.journal.apply(entry)) return false;
    const write = this.sink.append(this.journal.requestId, entry, { sync });
    if (sync) {
      try {
        await write;
      } catch (e) {
        this.noteStoreError(e);
      }
    } else {
      write.catch((e: unknown) => this.noteStoreError(e));
    }
    for (const l of this.listeners) l(this.journal);
    return true;
  }

  private noteStoreError(e: unknown): void {
    if (this.storeError) return;
    this.storeError = errorText(e);
    this.journal.apply({
      kind: 'notice',
      at: this.now(),
      level: 'error',
      code: 'journal.writeFailed',
      params: [this.storeError],
    });
  }
}
