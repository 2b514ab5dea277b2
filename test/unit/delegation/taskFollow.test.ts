// The state machine that follows a task (src/core/taskFollow.ts): every transition of `nextFollow`,
// with both presets, and `followTask` driving it over a scripted fake I/O. The real-server proofs are
// runner.test.ts, streamFaults.test.ts, silentStream.test.ts and the gateway's proxy tests.
import * as assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type {
  FollowContext,
  FollowEffect,
  FollowEvent,
  FollowIO,
  FollowLimits,
  FollowState,
  FollowStep,
} from '../../../src/core/taskFollow';
import {
  backoffMs,
  CLIENT_FOLLOW,
  followTask,
  initialContext,
  nextFollow,
  pollDelayMs,
  POLL_GROWTH,
  PROXY_FOLLOW,
  startAfterLostStream,
  startReconciling,
  startSending,
  startStreaming,
} from '../../../src/core/taskFollow';

type S = string;
/** Mid-range jitter: a jittered wait is three quarters of its base. */
const half = (): number => 0.5;
const ctx = (over: Partial<FollowContext> = {}): FollowContext => ({ ...initialContext(false), ...over });

function next(
  state: FollowState<S>,
  event: FollowEvent<S>,
  context: FollowContext = ctx(),
  limits: FollowLimits = CLIENT_FOLLOW,
): FollowStep<S> {
  return nextFollow<S>(limits, context, state, event, half);
}

const sending = (attempt = 1): FollowState<S> => ({ kind: 'sending', attempt, delayMs: 0 });
const streaming: FollowState<S> = { kind: 'streaming', stream: 's1' };
const reconciling: FollowState<S> = { kind: 'reconciling', delayMs: 0 };
const ended = (over: Partial<Extract<FollowEvent<S>, { kind: 'ended' }>> = {}): FollowEvent<S> => ({
  kind: 'ended',
  progressed: false,
  taskKnown: true,
  tooBig: false,
  ...over,
});

describe('follow limits', () => {
  it('the presets carry the limits the runner and the proxy had', () => {
    assert.deepEqual(
      [CLIENT_FOLLOW.maxAttempts, CLIENT_FOLLOW.initialDelayMs, CLIENT_FOLLOW.maxDelayMs, CLIENT_FOLLOW.startAttempts],
      [8, 250, 10_000, 3],
    );
    assert.deepEqual(
      [PROXY_FOLLOW.maxAttempts, PROXY_FOLLOW.pollAfterFailedStreams, PROXY_FOLLOW.jitter],
      [6, 0, false],
    );
  });

  it('backoff doubles from the first wait up to the cap; jitter draws from its upper half', () => {
    assert.deepEqual(
      [1, 2, 3, 4, 5, 6, 7].map((a) => backoffMs(PROXY_FOLLOW, a)),
      [400, 800, 1600, 3200, 5000, 5000, 5000],
    );
    assert.equal(
      backoffMs(CLIENT_FOLLOW, 1, () => 0),
      125,
    );
    assert.equal(
      backoffMs(CLIENT_FOLLOW, 1, () => 1),
      250,
    );
    assert.equal(
      backoffMs(CLIENT_FOLLOW, 20, () => 1),
      10_000,
    );
  });
});

describe('follow machine: sending', () => {
  it('opened → streaming on that stream', () => {
    assert.deepEqual(next(sending(), { kind: 'opened', stream: 'x' }).state, { kind: 'streaming', stream: 'x' });
  });

  it('answered without streaming → done when it settled the task, else reconciling at once', () => {
    assert.deepEqual(next(sending(), { kind: 'answered', settled: true }).state, { kind: 'done' });
    assert.deepEqual(next(sending(), { kind: 'answered', settled: false }).state, { kind: 'reconciling', delayMs: 0 });
  });

  it('refused by the agent → done, with nothing to record', () => {
    const s = next(sending(), { kind: 'refused' });
    assert.deepEqual([s.state, s.effects], [{ kind: 'done' }, []]);
  });

  it('not delivered and retryable → sending again after a backoff, while attempts are left', () => {
    const s = next(sending(1), { kind: 'notDelivered', error: 'ECONNREFUSED', retryable: true });
    assert.deepEqual(s.state, { kind: 'sending', attempt: 2, delayMs: backoffMs(CLIENT_FOLLOW, 1, half) });
    assert.deepEqual(s.effects, [{ kind: 'retryingSend', attempt: 1, error: 'ECONNREFUSED' }]);
  });

  it('not delivered at the last start attempt, or not retryable (a 4xx) → done, recorded as failed', () => {
    for (const s of [
      next(sending(CLIENT_FOLLOW.startAttempts), { kind: 'notDelivered', error: 'e', retryable: true }),
      next(sending(1), { kind: 'notDelivered', error: 'e', retryable: false }),
    ]) {
      assert.deepEqual(s.state, { kind: 'done' });
      assert.deepEqual(s.effects, [{ kind: 'sendFailed', error: 'e' }]);
    }
  });

  it('in doubt → reconciling at once; too big to stream → reconciling by polling', () => {
    assert.deepEqual(next(sending(), { kind: 'inDoubt' }).state, reconciling);
    const s = next(sending(), { kind: 'tooBig' });
    assert.deepEqual(
      [s.state, s.context.polling, s.effects],
      [reconciling, true, [{ kind: 'pollingInstead', why: 'tooBig' }]],
    );
  });
});

describe('follow machine: streaming', () => {
  it('settled → done; silent while running → subscribing again', () => {
    assert.deepEqual(next(streaming, { kind: 'settled' }).state, { kind: 'done' });
    assert.deepEqual(next(streaming, { kind: 'silent' }).state, { kind: 'subscribing' });
  });

  it('ended (answer mode) → reconciling after a backoff by failed streams; a stream that brought something resets them', () => {
    const failed = next(streaming, ended({ error: 'socket hang up' }), ctx({ failedStreams: 1 }));
    assert.deepEqual(failed.state, { kind: 'reconciling', delayMs: backoffMs(CLIENT_FOLLOW, 2, half) });
    assert.deepEqual(failed.context, ctx({ failedStreams: 2 }));
    assert.deepEqual(failed.effects, [{ kind: 'streamLost', error: 'socket hang up' }]);
    const fruitful = next(streaming, ended({ progressed: true }), ctx({ failedStreams: 2, attempt: 3 }));
    assert.deepEqual(fruitful.state, { kind: 'reconciling', delayMs: backoffMs(CLIENT_FOLLOW, 1, half) });
    assert.deepEqual(fruitful.context, ctx({ failedStreams: 0, attempt: 3 }), 'a stream end is no GetTask round');
  });

  it('ended for the third time in a row with a known task → polling instead; not without a task', () => {
    const s = next(streaming, ended(), ctx({ failedStreams: 2 }));
    assert.equal(s.context.polling, true);
    assert.deepEqual(s.effects, [
      { kind: 'pollingInstead', why: 'streamsFail' },
      { kind: 'streamLost', error: undefined },
    ]);
    const noTask = next(streaming, ended({ taskKnown: false }), ctx({ failedStreams: 2 }));
    assert.equal(noTask.context.polling, false);
  });

  it('ended on an event too big to stream → polling instead, saying why', () => {
    const s = next(streaming, ended({ tooBig: true, error: 'exceeded the maximum allowed size' }));
    assert.equal(s.context.polling, true);
    assert.deepEqual(s.effects[0], {
      kind: 'pollingInstead',
      why: 'tooBig',
      error: 'exceeded the maximum allowed size',
    });
  });

  it('a subscription the agent refuses → polling instead at once, saying why; the polls then keep following it', () => {
    const error = "Unknown method 'tasks/resubscribe'";
    const s = next(streaming, ended({ refused: true, error }), ctx({ attempt: 2 }), PROXY_FOLLOW);
    assert.equal(s.context.polling, true);
    assert.deepEqual(s.effects, [
      { kind: 'pollingInstead', why: 'refused', error },
      { kind: 'streamLost', error },
    ]);
    assert.equal(s.state.kind, 'reconciling');
    // A GetTask that finds it running then polls again, and no answer of it counts against the attempts.
    const polled = next(reconciling, { kind: 'running' }, s.context, PROXY_FOLLOW);
    assert.deepEqual(polled.state, { kind: 'polling', delayMs: PROXY_FOLLOW.pollIntervalMs });
    assert.equal(polled.context.attempt, s.context.attempt);
    // Already polling, or no task known: nothing new to say.
    assert.equal(next(streaming, ended({ refused: true }), ctx({ polling: true }), PROXY_FOLLOW).effects.length, 1);
    assert.equal(
      next(streaming, ended({ refused: true, taskKnown: false }), ctx(), PROXY_FOLLOW).context.polling,
      false,
    );
  });

  it('ended (event mode) → a round without contact: backoff by rounds, reset by a stream that brought events, lost past the limit', () => {
    const first = next(streaming, ended({ error: 'cut' }), ctx(), PROXY_FOLLOW);
    assert.deepEqual([first.state, first.context.attempt], [{ kind: 'reconciling', delayMs: 400 }, 1]);
    const third = next(streaming, ended(), ctx({ attempt: 2 }), PROXY_FOLLOW);
    assert.deepEqual([third.state, third.context.attempt], [{ kind: 'reconciling', delayMs: 1600 }, 3]);
    const fruitful = next(streaming, ended({ progressed: true }), ctx({ attempt: 5 }), PROXY_FOLLOW);
    assert.deepEqual([fruitful.state, fruitful.context.attempt], [{ kind: 'reconciling', delayMs: 400 }, 1]);
    const last = next(streaming, ended({ error: 'cut' }), ctx({ attempt: 6 }), PROXY_FOLLOW);
    assert.deepEqual(last.state, { kind: 'lost', attempts: 6, error: 'cut' });
    assert.deepEqual(last.effects, [{ kind: 'streamLost', error: 'cut' }]);
  });
});

describe('follow machine: reconciling and subscribing', () => {
  it('settled with missed events (replay) → draining, unless polling; else done', () => {
    assert.deepEqual(next(reconciling, { kind: 'settled', missedEvents: true }).state, { kind: 'draining' });
    assert.deepEqual(next(reconciling, { kind: 'settled', missedEvents: true }, ctx({ polling: true })).state, {
      kind: 'done',
    });
    assert.deepEqual(next(reconciling, { kind: 'settled', missedEvents: false }).state, { kind: 'done' });
  });

  it('running → subscribing, or polling after the poll interval; an answer resets the attempts in answer mode only', () => {
    const s = next(reconciling, { kind: 'running' }, ctx({ attempt: 4 }));
    assert.deepEqual([s.state, s.context.attempt], [{ kind: 'subscribing' }, 0]);
    const p = next(reconciling, { kind: 'running' }, ctx({ polling: true }));
    assert.deepEqual(p.state, { kind: 'polling', delayMs: CLIENT_FOLLOW.pollIntervalMs });
    const proxy = next(reconciling, { kind: 'running' }, ctx({ attempt: 4 }), PROXY_FOLLOW);
    assert.equal(proxy.context.attempt, 4);
  });

  it('polling: each answer with nothing new makes the next wait longer, up to the ceiling; news brings it back', () => {
    for (const limits of [CLIENT_FOLLOW, PROXY_FOLLOW]) {
      let c = ctx({ polling: true });
      const waits: number[] = [];
      for (let i = 0; i < 7; i++) {
        const p = next(reconciling, { kind: 'running', changed: false }, c, limits);
        assert.equal(p.state.kind, 'polling');
        waits.push(p.state.kind === 'polling' ? p.state.delayMs : -1);
        c = p.context;
      }
      // 1 s, then half again each time, never past 5 s.
      assert.deepEqual(waits, [1500, 2250, 3375, 5000, 5000, 5000, 5000]);
      assert.equal(c.quietPolls, 7);
      const news = next(reconciling, { kind: 'running', changed: true }, c, limits);
      assert.deepEqual([news.state, news.context.quietPolls], [{ kind: 'polling', delayMs: 1000 }, 0]);
      // An answer that does not say whether it brought news counts as news.
      assert.equal(next(reconciling, { kind: 'running' }, c, limits).context.quietPolls, 0);
    }
    // Not polling (streaming again): the count plays no part.
    const s = next(reconciling, { kind: 'running', changed: false }, ctx({ quietPolls: 3 }));
    assert.deepEqual(s.state, { kind: 'subscribing' });
  });

  it('pollDelayMs: the interval times POLL_GROWTH per quiet answer, between the interval and the ceiling', () => {
    const limits = { ...CLIENT_FOLLOW, pollIntervalMs: 20, pollMaxIntervalMs: 100 };
    assert.deepEqual(
      [0, 1, 2, 3, 4, 5, 50].map((q) => pollDelayMs(limits, q)),
      [20, 30, 45, 68, 100, 100, 100],
    );
    assert.equal(POLL_GROWTH, 1.5);
    // A ceiling below the interval (a caller that set only the interval high) never shortens it.
    assert.equal(pollDelayMs({ ...limits, pollIntervalMs: 500 }, 3), 500);
  });

  it('unanswered → reconciling again after a backoff, recorded as a retry', () => {
    const s = next(reconciling, { kind: 'unanswered', error: 'timeout', gone: false }, ctx({ attempt: 2 }));
    assert.deepEqual(s.state, { kind: 'reconciling', delayMs: backoffMs(CLIENT_FOLLOW, 3, half) });
    assert.deepEqual(s.effects, [{ kind: 'unanswered', attempt: 3, error: 'timeout', willRetry: true }]);
  });

  it('unanswered past the limit → lost after the attempts made; gone → lost at once', () => {
    const s = next(reconciling, { kind: 'unanswered', error: 'timeout', gone: false }, ctx({ attempt: 8 }));
    assert.deepEqual(s.state, { kind: 'lost', attempts: 8, error: 'timeout' });
    assert.deepEqual(s.effects, [{ kind: 'unanswered', attempt: 9, error: 'timeout', willRetry: false }]);
    const g = next(reconciling, { kind: 'unanswered', error: 'no such task', gone: true }, ctx({ attempt: 1 }));
    assert.deepEqual(g.state, { kind: 'lost', attempts: 2, error: 'no such task' });
  });

  it('resend → resending at once the first time, after a backoff later, lost past the limit', () => {
    assert.deepEqual(next(reconciling, { kind: 'resend' }).state, { kind: 'resending', delayMs: 0 });
    assert.deepEqual(next(reconciling, { kind: 'resend' }, ctx({ attempt: 1 })).state, {
      kind: 'resending',
      delayMs: backoffMs(CLIENT_FOLLOW, 2, half),
    });
    assert.deepEqual(next(reconciling, { kind: 'resend' }, ctx({ attempt: 8 })).state, {
      kind: 'lost',
      attempts: 8,
      error: 'no answer to the first message',
    });
  });

  it('missing → done (the outcome is recorded by the I/O)', () => {
    assert.deepEqual(next(reconciling, { kind: 'missing' }).state, { kind: 'done' });
  });

  it('resending or subscribing opened → streaming; subscribing unanswered → a round without contact', () => {
    const opened: FollowEvent<S> = { kind: 'opened', stream: 'r' };
    assert.deepEqual(next({ kind: 'resending', delayMs: 0 }, opened).state, { kind: 'streaming', stream: 'r' });
    assert.deepEqual(next({ kind: 'subscribing' }, opened).state, { kind: 'streaming', stream: 'r' });
    const s = next({ kind: 'subscribing' }, { kind: 'unanswered', error: 'refused', gone: false }, ctx(), PROXY_FOLLOW);
    assert.deepEqual([s.state, s.context.attempt], [{ kind: 'reconciling', delayMs: 400 }, 1]);
  });
});

describe('follow machine: polling, draining, abort, and what cannot happen', () => {
  it('polling tick → reconciling at once; draining drained → done', () => {
    assert.deepEqual(next({ kind: 'polling', delayMs: 1000 }, { kind: 'tick' }).state, reconciling);
    assert.deepEqual(next({ kind: 'draining' }, { kind: 'drained' }).state, { kind: 'done' });
  });

  it('aborted → stopped from every state that runs', () => {
    const states: FollowState<S>[] = [
      sending(),
      { kind: 'resending', delayMs: 0 },
      streaming,
      { kind: 'subscribing' },
      reconciling,
      { kind: 'polling', delayMs: 1 },
      { kind: 'draining' },
    ];
    for (const s of states) assert.deepEqual(next(s, { kind: 'aborted' }).state, { kind: 'stopped' }, s.kind);
  });

  it('an event a state cannot see is a bug, said as such; final states take no events', () => {
    assert.throws(() => next(streaming, { kind: 'tick' }), /"tick" cannot happen while streaming/);
    assert.throws(() => next(reconciling, { kind: 'settled' }), /"settled" cannot happen while reconciling/);
    assert.throws(() => next(sending(), { kind: 'running' }), /"running" cannot happen while sending/);
    assert.throws(() => next({ kind: 'done' }, { kind: 'tick' }), /cannot happen while done/);
  });

  it('a relay without a stream starts as after a lost stream: one round, a backoff, nothing recorded', () => {
    const s = startAfterLostStream<S>(PROXY_FOLLOW, false);
    assert.deepEqual([s.state, s.context.attempt, s.effects], [{ kind: 'reconciling', delayMs: 400 }, 1, []]);
  });
});

/** A fake I/O that answers each operation from a script and records what was asked of it. */
function scripted(
  script: FollowEvent<S>[],
  onSleep?: (ms: number) => void,
): {
  io: FollowIO<S>;
  calls: string[];
  sleeps: number[];
  effects: FollowEffect[];
} {
  const calls: string[] = [];
  const sleeps: number[] = [];
  const effects: FollowEffect[] = [];
  const take = <E extends FollowEvent<S>>(op: string): Promise<E> => {
    calls.push(op);
    const e = script.shift();
    if (!e) throw new Error(`the script has no answer for ${op}`);
    return Promise.resolve(e as E);
  };
  return {
    calls,
    sleeps,
    effects,
    io: {
      send: (attempt) => take(`send ${attempt}`),
      resend: () => take('resend'),
      consume: (stream) => take(`consume ${stream}`),
      reconcile: () => take('reconcile'),
      subscribe: () => take('subscribe'),
      drain: () => {
        calls.push('drain');
        return Promise.resolve();
      },
      effect: (e) => {
        effects.push(e);
        return Promise.resolve();
      },
      sleep: (ms) => {
        sleeps.push(ms);
        onSleep?.(ms);
        return Promise.resolve();
      },
    },
  };
}

describe('followTask over a scripted I/O', () => {
  it('send, a cut, GetTask, a new subscription, then the task settles: done, with the waits and records in order', async () => {
    const f = scripted([
      { kind: 'opened', stream: 'first' },
      ended({ error: 'cut' }),
      { kind: 'running' },
      { kind: 'opened', stream: 'second' },
      { kind: 'settled' },
    ]);
    const end = await followTask({
      io: f.io,
      limits: CLIENT_FOLLOW,
      start: startSending<S>(false),
      signal: new AbortController().signal,
      random: half,
    });
    assert.deepEqual(end.state, { kind: 'done' });
    assert.deepEqual(f.calls, ['send 1', 'consume first', 'reconcile', 'subscribe', 'consume second']);
    assert.deepEqual(f.sleeps, [backoffMs(CLIENT_FOLLOW, 1, half)]);
    assert.deepEqual(f.effects, [{ kind: 'streamLost', error: 'cut' }]);
  });

  it('a task that cannot stream is polled at the poll interval until it settles, then drained when it replays', async () => {
    const f = scripted([{ kind: 'running' }, { kind: 'running' }, { kind: 'settled', missedEvents: true }]);
    const limits = { ...CLIENT_FOLLOW, pollIntervalMs: 7 };
    const end = await followTask({
      io: f.io,
      limits,
      start: startReconciling<S>(true),
      signal: new AbortController().signal,
    });
    assert.deepEqual(end.state, { kind: 'done' });
    assert.deepEqual(f.calls, ['reconcile', 'reconcile', 'reconcile'], 'polling never drains');
    assert.deepEqual(f.sleeps, [7, 7]);
    const d = scripted([{ kind: 'settled', missedEvents: true }]);
    await followTask({ io: d.io, limits, start: startReconciling<S>(false), signal: new AbortController().signal });
    assert.deepEqual(d.calls, ['reconcile', 'drain']);
  });

  it('the proxy preset gives up after six rounds in which no stream brought an event', async () => {
    const rounds: FollowEvent<S>[] = [];
    for (let i = 0; i < 6; i++) rounds.push({ kind: 'running' }, { kind: 'opened', stream: `s${i}` }, ended());
    const f = scripted(rounds);
    const end = await followTask({
      io: f.io,
      limits: PROXY_FOLLOW,
      start: startAfterLostStream<S>(PROXY_FOLLOW, false),
      signal: new AbortController().signal,
    });
    assert.equal(end.state.kind, 'lost');
    assert.deepEqual(f.sleeps, [400, 800, 1600, 3200, 5000, 5000]);
    assert.equal(f.calls.filter((c) => c === 'reconcile').length, 6);
  });

  it('the client preset gives up after eight GetTask rounds without an answer', async () => {
    const f = scripted(Array.from({ length: 9 }, () => ({ kind: 'unanswered', error: 'down', gone: false }) as const));
    const end = await followTask({
      io: f.io,
      limits: CLIENT_FOLLOW,
      start: startReconciling<S>(false),
      signal: new AbortController().signal,
      random: half,
    });
    assert.deepEqual(end.state, { kind: 'lost', attempts: 8, error: 'down' });
    assert.equal(f.calls.length, 9);
    assert.equal(f.effects.filter((e) => e.kind === 'unanswered' && e.willRetry).length, 8);
  });

  it('an abort during a wait stops following before the next call; so does the stopped check', async () => {
    const ac = new AbortController();
    const f = scripted([ended(), { kind: 'running' }], () => ac.abort());
    const end = await followTask({
      io: f.io,
      limits: CLIENT_FOLLOW,
      start: startStreaming<S>('s', false),
      signal: ac.signal,
    });
    assert.deepEqual(end.state, { kind: 'stopped' });
    assert.deepEqual(f.calls, ['consume s']);
    let closed = false;
    const g = scripted([{ kind: 'running' }, { kind: 'opened', stream: 'x' }]);
    const wrapped: FollowIO<S> = {
      ...g.io,
      reconcile: (c, s) => {
        closed = true;
        return g.io.reconcile(c, s);
      },
    };
    const end2 = await followTask({
      io: wrapped,
      limits: PROXY_FOLLOW,
      start: startReconciling<S>(false),
      signal: new AbortController().signal,
      stopped: () => closed,
    });
    assert.deepEqual(end2.state, { kind: 'stopped' });
    assert.deepEqual(g.calls, ['reconcile'], 'nothing is subscribed once stopped');
  });

  it('a follower without a send cannot start by sending (a programming error, said plainly)', async () => {
    const f = scripted([]);
    const { send: _send, ...io } = f.io;
    await assert.rejects(
      followTask({ io, limits: PROXY_FOLLOW, start: startSending<S>(false), signal: new AbortController().signal }),
      /cannot send a first message/,
    );
  });
});
