/**
 * Following an A2A task until it settles, as one state machine shared by the delegation runner (the
 * extension and the `baton` CLI) and the gateway's proxy relay. Streams are not reliable delivery
 * (A2A §3.7): a stream that ends or breaks before the task settles is followed by `GetTask`, then a new
 * subscription, with backoff; when streaming is not possible the task is followed by polling.
 *
 *   sending      opened → streaming · answered → done | reconciling · refused → done ·
 *                not delivered → sending (wait) | done · in doubt, too big → reconciling
 *   streaming    settled → done · silent → subscribing · ended → reconciling (wait) | lost;
 *                a subscription the agent refuses → following by polling
 *   reconciling  settled → draining | done · running → subscribing | polling · unanswered →
 *                reconciling (wait) | lost · resend → resending | lost · missing → done
 *   subscribing, resending  opened → streaming · (subscribing) unanswered → as reconciling
 *   polling      tick → reconciling         draining  drained → done
 *   any state    aborted → stopped
 *
 * `nextFollow` is pure: it decides the next state, the counters and what the caller should record
 * (`FollowEffect`). `followTask` runs it with the I/O the caller injects (send, stream, get task,
 * subscribe, sleep, an abort signal), so every transition is tested without a network.
 */
import { sleep as abortableSleep } from './sleep';

/** The limits of following one task: how long to keep trying, how fast, and when to poll instead. */
export interface FollowLimits {
  /** Rounds without contact before the task is given up as lost. */
  readonly maxAttempts: number;
  /** The wait before the first retry; each further retry doubles it, up to `maxDelayMs`. */
  readonly initialDelayMs: number;
  readonly maxDelayMs: number;
  /** Each wait is drawn from its upper half, so followers that lost contact together do not retry together. */
  readonly jitter: boolean;
  /**
   * What counts as contact, starting the attempts again: an answer to `GetTask` ('answer'), or an event
   * from a stream ('event'; then a stream that ends without settling the task is a round without contact).
   */
  readonly contact: 'answer' | 'event';
  /** Sends of the first message that provably never left this machine, before the send has failed. */
  readonly startAttempts: number;
  /** Streams in a row that end without bringing anything new, before following by polling (0: never). */
  readonly pollAfterFailedStreams: number;
  /**
   * The `GetTask` interval when following by polling. While the answers bring nothing new, each wait
   * is `POLL_GROWTH` times the one before, up to `pollMaxIntervalMs`; an answer with news brings the
   * interval back to this. A quiet task is then asked a few times a minute instead of every second,
   * and one that reports progress as often as before.
   */
  readonly pollIntervalMs: number;
  readonly pollMaxIntervalMs: number;
  /** How long fetching the events missed while away may take, once the task has settled. */
  readonly drainTimeoutMs: number;
}

/** The delegation runner's limits (the extension and the `baton` CLI). */
export const CLIENT_FOLLOW: FollowLimits = {
  maxAttempts: 8,
  initialDelayMs: 250,
  maxDelayMs: 10_000,
  jitter: true,
  contact: 'answer',
  startAttempts: 3,
  pollAfterFailedStreams: 3,
  pollIntervalMs: 1_000,
  pollMaxIntervalMs: 5_000,
  drainTimeoutMs: 5_000,
};

/** The gateway's proxy relay to a remote agent: it gives up sooner, and a caller is waiting on its events. */
export const PROXY_FOLLOW: FollowLimits = {
  maxAttempts: 6,
  initialDelayMs: 400,
  maxDelayMs: 5_000,
  jitter: false,
  contact: 'event',
  startAttempts: 1,
  pollAfterFailedStreams: 0,
  pollIntervalMs: 1_000,
  pollMaxIntervalMs: 5_000,
  drainTimeoutMs: 0,
};

/** How much longer each wait between polls gets while the answers bring nothing new. */
export const POLL_GROWTH = 1.5;

/** The wait before the next `GetTask` when following by polling, after `quietPolls` answers in a row with nothing new. */
export function pollDelayMs(limits: FollowLimits, quietPolls: number): number {
  const grown = Math.round(limits.pollIntervalMs * POLL_GROWTH ** Math.max(0, quietPolls));
  return Math.max(limits.pollIntervalMs, Math.min(limits.pollMaxIntervalMs, grown));
}

/** The counters carried from state to state. */
export interface FollowContext {
  /** Rounds without contact so far. */
  readonly attempt: number;
  /** Streams in a row that ended without bringing anything new. */
  readonly failedStreams: number;
  /** Following by `GetTask` alone (the agent cannot stream, or streaming keeps failing). */
  readonly polling: boolean;
  /** Polls in a row whose answer brought nothing new (the wait before the next grows with them). */
  readonly quietPolls: number;
}

export type FollowState<S> =
  /** Sending the first message (`attempt` counts the sends that provably never left). */
  | { readonly kind: 'sending'; readonly attempt: number; readonly delayMs: number }
  /** Sending the first message again, to an agent that honours `messageId` idempotency. */
  | { readonly kind: 'resending'; readonly delayMs: number }
  | { readonly kind: 'streaming'; readonly stream: S }
  | { readonly kind: 'subscribing' }
  /** After a cut: which task, and in what state is it (`GetTask`)? */
  | { readonly kind: 'reconciling'; readonly delayMs: number }
  /** Waiting for the next `GetTask` when the task cannot be streamed. */
  | { readonly kind: 'polling'; readonly delayMs: number }
  /** The task settled while nobody was streaming it: fetching the events missed meanwhile. */
  | { readonly kind: 'draining' }
  /** The task reached a state that ends following (or the send's outcome is already decided). */
  | { readonly kind: 'done' }
  | { readonly kind: 'lost'; readonly attempts: number; readonly error: string }
  /** The caller stopped following (abort). */
  | { readonly kind: 'stopped' };

export type FinalFollowState = Extract<FollowState<never>, { kind: 'done' | 'lost' | 'stopped' }>;

/** What sending a message led to. */
export type SendEvent<S> =
  | { readonly kind: 'opened'; readonly stream: S }
  /** Sent without streaming; `settled` when its answer already settles the task. */
  | { readonly kind: 'answered'; readonly settled: boolean }
  /** The agent answered with an error: it received the request and made nothing. */
  | { readonly kind: 'refused' }
  /** Provably never reached the agent; `retryable` when trying again may help (no connection, not a 4xx). */
  | { readonly kind: 'notDelivered'; readonly error: string; readonly retryable: boolean }
  /** It may have reached the agent. */
  | { readonly kind: 'inDoubt' }
  /** The agent sent an event too big to stream. */
  | { readonly kind: 'tooBig' };

/** How a stream ended. */
export type StreamEvent =
  | { readonly kind: 'settled' }
  /** The stream went silent while the task still runs: only this stream is in doubt. */
  | { readonly kind: 'silent' }
  | {
      readonly kind: 'ended';
      /** It brought something new before it ended. */
      readonly progressed: boolean;
      readonly taskKnown: boolean;
      /** It broke on an event too big to stream. */
      readonly tooBig: boolean;
      /**
       * The agent answered the subscription with an error before any event: it does not stream this
       * task again (a 0.3 server without `tasks/resubscribe`), so subscribing again is no use.
       */
      readonly refused?: boolean;
      /** Why it broke; undefined when it closed before the task settled. */
      readonly error?: string;
    };

/** What reconciling (or subscribing again) found. */
export type ReconcileEvent<S> =
  /** `missedEvents`: the agent replays events, so the ones missed while away can still be fetched. */
  | { readonly kind: 'settled'; readonly missedEvents: boolean }
  /**
   * `changed`: whether the answer brought something new (a status, an artifact) since the last one;
   * left out, it counts as new.
   */
  | { readonly kind: 'running'; readonly changed?: boolean }
  /** No answer; `gone` when the agent answered that it no longer knows the task. */
  | { readonly kind: 'unanswered'; readonly error: string; readonly gone: boolean }
  /** No task is known yet and the agent honours `messageId` idempotency: send the first message again. */
  | { readonly kind: 'resend' }
  /** No task is known and none can be found: the outcome is already recorded. */
  | { readonly kind: 'missing' }
  | { readonly kind: 'opened'; readonly stream: S };

export type FollowEvent<S> =
  | SendEvent<S>
  | StreamEvent
  | ReconcileEvent<S>
  | { readonly kind: 'tick' }
  | { readonly kind: 'drained' }
  /** The I/O saw the abort signal; valid in every state. */
  | { readonly kind: 'aborted' };

/** What the caller records for a transition (its journal, its log). */
export type FollowEffect =
  | { readonly kind: 'retryingSend'; readonly attempt: number; readonly error: string }
  | { readonly kind: 'sendFailed'; readonly error: string }
  | { readonly kind: 'pollingInstead'; readonly why: 'tooBig' | 'streamsFail' | 'refused'; readonly error?: string }
  | { readonly kind: 'streamLost'; readonly error?: string }
  | { readonly kind: 'unanswered'; readonly attempt: number; readonly error: string; readonly willRetry: boolean };

export interface FollowStep<S> {
  readonly state: FollowState<S>;
  readonly context: FollowContext;
  readonly effects: readonly FollowEffect[];
}

/** The wait before retry `attempt` (1-based). */
export function backoffMs(limits: FollowLimits, attempt: number, random: () => number = Math.random): number {
  const base = Math.min(limits.maxDelayMs, limits.initialDelayMs * 2 ** Math.max(0, attempt - 1));
  return limits.jitter ? base / 2 + random() * (base / 2) : base;
}

export function initialContext(polling: boolean): FollowContext {
  return { attempt: 0, failedStreams: 0, polling, quietPolls: 0 };
}

/** Starts by sending the first message. */
export function startSending<S>(polling: boolean): FollowStep<S> {
  return { state: { kind: 'sending', attempt: 1, delayMs: 0 }, context: initialContext(polling), effects: [] };
}

/** Starts on a stream already open (a reply, or a relay's first stream). */
export function startStreaming<S>(stream: S, polling: boolean): FollowStep<S> {
  return { state: { kind: 'streaming', stream }, context: initialContext(polling), effects: [] };
}

/** Starts by asking where the task is (after a reload, or to check again). */
export function startReconciling<S>(polling: boolean): FollowStep<S> {
  return { state: { kind: 'reconciling', delayMs: 0 }, context: initialContext(polling), effects: [] };
}

/** Starts as after a stream that was lost before anything was read (a relay re-attached without a stream). */
export function startAfterLostStream<S>(
  limits: FollowLimits,
  polling: boolean,
  random: () => number = Math.random,
): FollowStep<S> {
  const step = afterStream<S>(
    limits,
    initialContext(polling),
    { kind: 'ended', progressed: false, taskKnown: true, tooBig: false },
    random,
  );
  return { ...step, effects: step.effects.filter((e) => e.kind !== 'streamLost') };
}

function unexpected(state: FollowState<unknown>, event: FollowEvent<unknown>): Error {
  return new Error(`following a task: "${event.kind}" cannot happen while ${state.kind}`);
}

function step<S>(state: FollowState<S>, context: FollowContext, ...effects: FollowEffect[]): FollowStep<S> {
  return { state, context, effects };
}

/** A round without contact: retried after a wait, or the task is lost. */
function noContact<S>(
  limits: FollowLimits,
  context: FollowContext,
  error: string,
  gone: boolean,
  random: () => number,
): FollowStep<S> {
  const attempt = context.attempt + 1;
  const next = { ...context, attempt };
  const willRetry = !gone && attempt <= limits.maxAttempts;
  const effect: FollowEffect = { kind: 'unanswered', attempt, error, willRetry };
  if (gone) return step({ kind: 'lost', attempts: attempt, error }, next, effect);
  if (!willRetry) return step({ kind: 'lost', attempts: attempt - 1, error }, next, effect);
  return step({ kind: 'reconciling', delayMs: backoffMs(limits, attempt, random) }, next, effect);
}

function afterSend<S>(
  limits: FollowLimits,
  context: FollowContext,
  attempt: number,
  event: SendEvent<S>,
  random: () => number,
): FollowStep<S> {
  switch (event.kind) {
    case 'opened':
      return step({ kind: 'streaming', stream: event.stream }, context);
    case 'answered':
      return step(event.settled ? { kind: 'done' } : { kind: 'reconciling', delayMs: 0 }, context);
    case 'refused':
      return step({ kind: 'done' }, context);
    case 'notDelivered':
      if (event.retryable && attempt < limits.startAttempts)
        return step({ kind: 'sending', attempt: attempt + 1, delayMs: backoffMs(limits, attempt, random) }, context, {
          kind: 'retryingSend',
          attempt,
          error: event.error,
        });
      return step({ kind: 'done' }, context, { kind: 'sendFailed', error: event.error });
    case 'inDoubt':
      return step({ kind: 'reconciling', delayMs: 0 }, context);
    case 'tooBig':
      return step(
        { kind: 'reconciling', delayMs: 0 },
        { ...context, polling: true },
        {
          kind: 'pollingInstead',
          why: 'tooBig',
        },
      );
  }
}

function afterStream<S>(
  limits: FollowLimits,
  context: FollowContext,
  event: StreamEvent,
  random: () => number,
): FollowStep<S> {
  if (event.kind === 'settled') return step({ kind: 'done' }, context);
  if (event.kind === 'silent') return step({ kind: 'subscribing' }, context);
  const failedStreams = event.progressed ? 0 : context.failedStreams + 1;
  const effects: FollowEffect[] = [];
  let polling = context.polling;
  if (event.tooBig) {
    polling = true;
    effects.push({ kind: 'pollingInstead', why: 'tooBig', error: event.error });
  } else if (event.refused && event.taskKnown && !polling) {
    polling = true;
    effects.push({ kind: 'pollingInstead', why: 'refused', error: event.error });
  } else if (limits.pollAfterFailedStreams > 0 && failedStreams >= limits.pollAfterFailedStreams && event.taskKnown) {
    polling = true;
    effects.push({ kind: 'pollingInstead', why: 'streamsFail' });
  }
  effects.push({ kind: 'streamLost', error: event.error });
  if (limits.contact === 'answer') {
    const delayMs = backoffMs(limits, Math.max(1, failedStreams), random);
    return step({ kind: 'reconciling', delayMs }, { ...context, failedStreams, polling }, ...effects);
  }
  // Contact is an event: a stream that brought one starts the count again, and this round is one without.
  const attempt = (event.progressed ? 0 : context.attempt) + 1;
  const next = { ...context, attempt, failedStreams, polling };
  if (attempt > limits.maxAttempts)
    return step(
      { kind: 'lost', attempts: attempt - 1, error: event.error ?? 'the stream ended before the task settled' },
      next,
      ...effects,
    );
  return step({ kind: 'reconciling', delayMs: backoffMs(limits, attempt, random) }, next, ...effects);
}

function afterReconcile<S>(
  limits: FollowLimits,
  context: FollowContext,
  event: ReconcileEvent<S>,
  random: () => number,
): FollowStep<S> {
  const answered = limits.contact === 'answer' ? { ...context, attempt: 0 } : context;
  switch (event.kind) {
    case 'settled':
      return step(event.missedEvents && !context.polling ? { kind: 'draining' } : { kind: 'done' }, answered);
    case 'running': {
      if (!answered.polling) return step({ kind: 'subscribing' }, answered);
      const quietPolls = event.changed === false ? answered.quietPolls + 1 : 0;
      return step({ kind: 'polling', delayMs: pollDelayMs(limits, quietPolls) }, { ...answered, quietPolls });
    }
    case 'unanswered':
      return noContact(limits, context, event.error, event.gone, random);
    case 'resend': {
      const attempt = context.attempt + 1;
      const next = { ...context, attempt };
      if (attempt > limits.maxAttempts)
        return step({ kind: 'lost', attempts: attempt - 1, error: 'no answer to the first message' }, next);
      return step({ kind: 'resending', delayMs: attempt > 1 ? backoffMs(limits, attempt, random) : 0 }, next);
    }
    case 'missing':
      return step({ kind: 'done' }, context);
    case 'opened':
      return step({ kind: 'streaming', stream: event.stream }, context);
  }
}

/** The next state of following a task, from its state and what just happened. Pure. */
export function nextFollow<S>(
  limits: FollowLimits,
  context: FollowContext,
  state: FollowState<S>,
  event: FollowEvent<S>,
  random: () => number = Math.random,
): FollowStep<S> {
  if (event.kind === 'aborted') return step({ kind: 'stopped' }, context);
  const k = event.kind;
  switch (state.kind) {
    case 'sending':
      if (
        k === 'opened' ||
        k === 'answered' ||
        k === 'refused' ||
        k === 'notDelivered' ||
        k === 'inDoubt' ||
        k === 'tooBig'
      )
        return afterSend(limits, context, state.attempt, event, random);
      break;
    case 'resending':
      if (event.kind === 'opened') return step({ kind: 'streaming', stream: event.stream }, context);
      break;
    case 'streaming':
      if (event.kind === 'settled' || event.kind === 'silent' || event.kind === 'ended')
        return afterStream(limits, context, event, random);
      break;
    case 'subscribing':
      if (event.kind === 'opened' || event.kind === 'unanswered') return afterReconcile(limits, context, event, random);
      break;
    case 'reconciling':
      if (
        (k === 'settled' && 'missedEvents' in event) ||
        k === 'running' ||
        k === 'unanswered' ||
        k === 'resend' ||
        k === 'missing'
      )
        return afterReconcile(limits, context, event, random);
      break;
    case 'polling':
      if (event.kind === 'tick') return step({ kind: 'reconciling', delayMs: 0 }, context);
      break;
    case 'draining':
      if (event.kind === 'drained') return step({ kind: 'done' }, context);
      break;
    case 'done':
    case 'lost':
    case 'stopped':
      break;
  }
  throw unexpected(state, event);
}

/** The I/O of following a task; each operation sees the abort signal and may answer `aborted`. */
export interface FollowIO<S> {
  /** Sends the first message (`attempt` counts from 1), streaming unless `context.polling`. */
  send?(attempt: number, context: FollowContext, signal: AbortSignal): Promise<SendEvent<S> | { kind: 'aborted' }>;
  /** Sends the first message again (an agent that honours `messageId` idempotency). */
  resend?(signal: AbortSignal): Promise<SendEvent<S> | { kind: 'aborted' }>;
  /** Reads a stream until it ends or the task settles. */
  consume(stream: S, signal: AbortSignal): Promise<StreamEvent | { kind: 'aborted' }>;
  /** Finds the task and asks where it is (`GetTask`). */
  reconcile(context: FollowContext, signal: AbortSignal): Promise<ReconcileEvent<S> | { kind: 'aborted' }>;
  /** Subscribes to the task again. */
  subscribe(signal: AbortSignal): Promise<ReconcileEvent<S> | { kind: 'aborted' }>;
  /** Fetches the events missed while away (bounded by `drainTimeoutMs`). */
  drain?(signal: AbortSignal): Promise<void>;
  /** Records what a transition calls for. */
  effect(effect: FollowEffect, context: FollowContext): Promise<void>;
  sleep?(ms: number, signal: AbortSignal): Promise<void>;
}

export interface FollowRun<S> {
  readonly io: FollowIO<S>;
  readonly limits: FollowLimits;
  readonly start: FollowStep<S>;
  readonly signal: AbortSignal;
  /** Stopped for another reason than the signal (a closing gateway); checked with it. */
  readonly stopped?: () => boolean;
  readonly random?: () => number;
}

async function perform<S>(
  io: FollowIO<S>,
  state: FollowState<S>,
  context: FollowContext,
  signal: AbortSignal,
): Promise<FollowEvent<S>> {
  switch (state.kind) {
    case 'sending':
      if (!io.send) throw new Error('following a task: this follower cannot send a first message');
      return io.send(state.attempt, context, signal);
    case 'resending':
      if (!io.resend) throw new Error('following a task: this follower cannot send a first message again');
      return io.resend(signal);
    case 'streaming':
      return io.consume(state.stream, signal);
    case 'subscribing':
      return io.subscribe(signal);
    case 'reconciling':
      return io.reconcile(context, signal);
    case 'polling':
      return { kind: 'tick' };
    case 'draining':
      await io.drain?.(signal);
      return { kind: 'drained' };
    case 'done':
    case 'lost':
    case 'stopped':
      throw new Error(`following a task: nothing to do once ${state.kind}`);
  }
}

function isFinal<S>(state: FollowState<S>): state is FinalFollowState {
  return state.kind === 'done' || state.kind === 'lost' || state.kind === 'stopped';
}

/** Follows the task from `start` until it is done, lost or stopped; resolves with that final step. */
export async function followTask<S>(
  run: FollowRun<S>,
): Promise<{ readonly state: FinalFollowState; readonly context: FollowContext }> {
  const { io, limits, signal } = run;
  const stopped = (): boolean => signal.aborted || (run.stopped?.() ?? false);
  const wait = io.sleep ?? abortableSleep;
  let current = run.start;
  for (;;) {
    const { state, context } = current;
    if (isFinal(state)) return { state, context };
    if (stopped()) return { state: { kind: 'stopped' }, context };
    const delayMs = 'delayMs' in state ? state.delayMs : 0;
    if (delayMs > 0) {
      await wait(delayMs, signal);
      if (stopped()) return { state: { kind: 'stopped' }, context };
    }
    const event = await perform(io, state, context, signal);
    current = stopped()
      ? { state: { kind: 'stopped' }, context, effects: [] }
      : nextFollow(limits, context, state, event, run.random);
    for (const effect of current.effects) await io.effect(effect, current.context);
  }
}
