// The delegation runner against real SDK servers on 127.0.0.1: streaming progress, input-required then
// reply, cancel (prompt, slow, never answered), deadline → expired, rejection, a big artifact in
// appended chunks, an event over 4 MiB, a 0.3 agent, the HTTP+JSON binding, auth bound to the pinned
// origin, an unreachable agent, and an agent lost mid-task ("unknown", then "check again").
import * as assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { TaskState } from '@a2a-js/sdk';
import { ServerCallContext } from '@a2a-js/sdk/server';
import { connectAgent, pinnedFetch } from '../../../src/node/a2a/clientFactory';
import { JournalStore } from '../../../src/node/journalStore';
import type { AgentServer, Script, ScriptedExecutorOptions } from './agentServers';
import { sleep, startAgentServer } from './agentServers';
import type { Run } from './harness';
import { newRun, tempDir, within } from './harness';

let tmp: ReturnType<typeof tempDir>;
let store: JournalStore;
before(() => {
  tmp = tempDir();
  store = new JournalStore(tmp.dir);
});
after(async () => {
  await store.close();
  tmp.cleanup();
});

async function withServer(
  o: {
    script: Script;
    executorOptions?: ScriptedExecutorOptions;
    replay?: boolean;
    legacy?: boolean;
    bearer?: string;
    apiKey?: string;
    streaming?: boolean;
  },
  fn: (s: AgentServer) => Promise<void>,
): Promise<void> {
  const s = await startAgentServer(o);
  try {
    await fn(s);
  } finally {
    await s.close();
  }
}

const progress: Script = async (t) => {
  t.task();
  t.status(TaskState.TASK_STATE_WORKING, 'Reading');
  await t.sleep(5);
  t.status(TaskState.TASK_STATE_WORKING, 'Editing');
  t.artifact('p', 'changes.patch', '+x\n', { lastChunk: true, mediaType: 'text/x-diff' });
  t.status(TaskState.TASK_STATE_COMPLETED, 'All done');
};

/** Works until canceled. */
const longRunning: Script = async (t) => {
  t.task();
  t.status(TaskState.TASK_STATE_WORKING, 'Working');
  await Promise.race([t.canceled, t.sleep(3_000)]);
};

describe('delegation runner', () => {
  for (const replay of [false, true]) {
    it(`streams progress into the timeline and completes (${replay ? 'replay' : 'plain'})`, async () => {
      await withServer({ script: progress, replay }, async (s) => {
        const run = await newRun(s, store, 'Do it');
        const seen: string[] = [];
        run.runner.onDidChange((j) => seen.push(j.state()));
        await within(run.runner.start(), 10_000, 'start');
        const v = run.journal.view(Date.now());
        assert.equal(v.state, 'completed');
        assert.equal(v.outcomeReason, 'All done');
        assert.ok(seen.includes('working'), `states seen: ${seen.join(',')}`);
        assert.deepEqual(
          v.timeline
            .filter((e) => e.kind === 'step' || e.kind === 'status')
            .map((e) => ('text' in e ? e.text : undefined)),
          [undefined, 'Reading', 'Editing', 'All done'],
        );
        assert.equal(v.actions.reviewChanges, true);
        assert.equal(run.journal.patch()?.text, '+x\n');
      });
    });
  }

  it('input-required, then a reply continues the same task to completion', async () => {
    let finishTurn!: () => void;
    const turnMayFinish = new Promise<void>((r) => (finishTurn = r));
    await withServer(
      {
        script: async (t) => {
          if (!t.continuing) {
            t.task();
            t.status(TaskState.TASK_STATE_INPUT_REQUIRED, 'Which branch?');
            return;
          }
          t.task(TaskState.TASK_STATE_WORKING);
          await Promise.race([turnMayFinish, t.sleep(8_000)]);
          t.status(TaskState.TASK_STATE_COMPLETED, `Used ${t.text}`);
        },
      },
      async (s) => {
        const run = await newRun(s, store, 'Merge');
        await within(run.runner.start(), 10_000, 'start');
        let v = run.journal.view(Date.now());
        assert.equal(v.state, 'input-required');
        assert.equal(v.prompt, 'Which branch?');
        assert.equal(v.actions.reply, true);
        const taskId = run.journal.taskId;
        // The reply resolves once it is on its way, while the turn it starts is still running (the
        // panel stays usable, Cancel included, during that turn).
        await within(run.runner.reply('main'), 10_000, 'reply');
        assert.equal(run.journal.decide(), undefined, 'reply() waited for the whole turn');
        finishTurn();
        await within(run.runner.idle(), 10_000, 'the turn after the reply');
        v = run.journal.view(Date.now());
        assert.equal(v.state, 'completed');
        assert.equal(v.outcomeReason, 'Used main');
        assert.equal(run.journal.taskId, taskId, 'same task');
        assert.equal(s.executor.executions.filter((id) => id === taskId).length, 2);
        assert.ok(v.timeline.some((e) => e.kind === 'message' && e.role === 'user' && e.text === 'main'));
        await assert.rejects(run.runner.reply('again'), /not waiting for input/);
      },
    );
  });

  it('cancel: the agent confirms', async () => {
    await withServer({ script: longRunning }, async (s) => {
      const run = await newRun(s, store, 'Long');
      void run.runner.start();
      await within(
        waitFor(() => run.journal.state() === 'working'),
        5000,
        'working',
      );
      const d = await within(run.runner.cancel(), 10_000, 'cancel');
      assert.equal(d.outcome, 'canceled');
      assert.equal(d.cancelConfirmed, true);
      const task = await s.taskStore.load(run.journal.taskId ?? '', new ServerCallContext());
      assert.equal(task?.status?.state, TaskState.TASK_STATE_CANCELED);
    });
  });

  it('cancel: a slow agent still confirms within the bounded wait', async () => {
    await withServer({ script: longRunning, executorOptions: { cancel: { delayMs: 300 } } }, async (s) => {
      const run = await newRun(s, store, 'Long');
      void run.runner.start();
      await within(
        waitFor(() => run.journal.state() === 'working'),
        5000,
        'working',
      );
      const d = await within(run.runner.cancel(), 10_000, 'cancel');
      assert.equal(d.outcome, 'canceled');
      assert.equal(d.cancelConfirmed, true);
    });
  });

  it('cancel: an agent that never answers → canceled, unconfirmed, after the bounded wait', async () => {
    await withServer({ script: longRunning, executorOptions: { cancel: 'never' } }, async (s) => {
      const run = await newRun(s, store, 'Long', { runner: { cancelWaitMs: 300 } });
      void run.runner.start();
      await within(
        waitFor(() => run.journal.state() === 'working'),
        5000,
        'working',
      );
      const d = await within(run.runner.cancel(), 10_000, 'cancel');
      assert.equal(d.outcome, 'canceled');
      assert.equal(d.cancelConfirmed, false);
      assert.match(d.reason, /did not confirm/);
    });
  });

  it('deadline passes → canceled at the agent → expired', async () => {
    await withServer({ script: longRunning }, async (s) => {
      const run = await newRun(s, store, 'Long', { request: { deadline: Date.now() + 400 } });
      const settled = run.runner.whenSettled();
      void run.runner.start();
      const d = await within(settled, 10_000, 'expire');
      assert.equal(d.outcome, 'expired');
      assert.equal(d.cancelConfirmed, true);
      const task = await s.taskStore.load(run.journal.taskId ?? '', new ServerCallContext());
      assert.equal(task?.status?.state, TaskState.TASK_STATE_CANCELED, 'the agent canceled it');
    });
  });

  it('the agent rejects the task → rejected with its reason', async () => {
    await withServer(
      {
        script: async (t) => {
          t.task();
          t.status(TaskState.TASK_STATE_REJECTED, 'I only format code.');
        },
      },
      async (s) => {
        const run = await newRun(s, store, 'Write a novel');
        await within(run.runner.start(), 10_000, 'start');
        const v = run.journal.view(Date.now());
        assert.equal(v.outcome, 'rejected');
        assert.equal(v.outcomeReason, 'I only format code.');
      },
    );
  });

  it('the agent fails → failed with its reason', async () => {
    await withServer(
      {
        script: async (t) => {
          t.task();
          t.status(TaskState.TASK_STATE_FAILED, 'Tests did not pass.');
        },
      },
      async (s) => {
        const run = await newRun(s, store, 'Fix');
        await within(run.runner.start(), 10_000, 'start');
        assert.equal(run.journal.decide()?.outcome, 'failed');
        assert.equal(run.journal.decide()?.reason, 'Tests did not pass.');
      },
    );
  });

  it('a big artifact in appended chunks is concatenated, and the final copy comes from GetTask', async () => {
    const chunks = Array.from({ length: 40 }, (_, i) => `${String(i).padStart(3, '0')}:${'x'.repeat(64 * 1024)}\n`);
    await withServer(
      {
        script: async (t) => {
          t.task();
          for (let i = 0; i < chunks.length; i++)
            t.artifact('big', 'changes.patch', chunks[i], { append: i > 0, lastChunk: i === chunks.length - 1 });
          t.status(TaskState.TASK_STATE_COMPLETED);
        },
      },
      async (s) => {
        const run = await newRun(s, store, 'Big');
        await within(run.runner.start(), 20_000, 'start');
        const p = run.journal.patch();
        assert.equal(p?.final, true);
        assert.equal(p?.text, chunks.join(''));
        const v = run.journal.view(Date.now());
        const entry = v.timeline.find((e) => e.kind === 'artifact');
        assert.equal(entry?.kind === 'artifact' ? entry.chunks : 0, chunks.length);
      },
    );
  });

  it('an event over 4 MiB: the stream refuses it, the runner follows by polling and GetTask delivers it', async () => {
    const huge = 'y'.repeat(5 * 1024 * 1024);
    await withServer(
      {
        script: async (t) => {
          t.task();
          t.artifact('huge', 'report.txt', huge, { lastChunk: true });
          await t.sleep(20);
          t.status(TaskState.TASK_STATE_COMPLETED, 'ok');
        },
      },
      async (s) => {
        const run = await newRun(s, store, 'Huge');
        await within(run.runner.start(), 20_000, 'start');
        assert.equal(run.journal.decide()?.outcome, 'completed');
        const a = run.journal.artifacts().find((x) => x.artifactId === 'huge');
        assert.equal(a?.final, true);
        assert.equal(a?.text.length, huge.length);
        assert.ok(run.journal.view(Date.now()).timeline.some((e) => e.kind === 'notice' && /4 MiB/.test(e.text)));
      },
    );
  });

  it('an agent that cannot stream: quiet answers make the polls wait longer, up to five times the interval; news brings the interval back', async () => {
    // GetTask on the HTTP+JSON binding is `GET …/tasks/{id}`: the server's request log counts the polls.
    let server!: AgentServer;
    const polls = (): number =>
      server.requests.filter((r) => r.method === 'GET' && r.path.startsWith('/a2a/rest/tasks/')).length;
    const phases: number[] = [];
    const script: Script = async (t) => {
      t.task();
      t.status(TaskState.TASK_STATE_WORKING, 'Thinking');
      await t.sleep(300);
      phases.push(polls());
      await t.sleep(1_500); // quiet: the same status at every poll
      phases.push(polls());
      for (let i = 0; i < 40; i++) {
        t.status(TaskState.TASK_STATE_WORKING, `Writing part ${i}`); // news at nearly every poll
        await t.sleep(25);
      }
      phases.push(polls());
      t.status(TaskState.TASK_STATE_COMPLETED, 'Done');
    };
    await withServer({ script, streaming: false }, async (s) => {
      server = s;
      const run = await newRun(s, store, 'Poll me', { endpoint: s.rest, runner: { pollIntervalMs: 20 } });
      await within(run.runner.start(), 20_000, 'start');
      await within(run.runner.idle(), 20_000, 'the task to settle');
      assert.equal(run.journal.decide()?.outcome, 'completed');
      // The timeline says once why progress comes in steps.
      const said = (await run.entries()).filter((e) => e.kind === 'notice' && e.code === 'stream.notOffered');
      assert.equal(said.length, 1);
      assert.match(
        run.journal.view(Date.now()).timeline.find((e) => e.kind === 'notice')?.text ?? '',
        /^The agent does not stream its progress: Baton asks it how the task is going, every second/,
      );
      const [before, quietEnd, newsEnd] = phases;
      // Waits of 20, 30, 45, 68, then 100 ms (the ceiling: five times the interval) at the most fit
      // 18 polls in 1.5 s; at a steady 20 ms it would be about 75.
      const quiet = quietEnd - before;
      assert.ok(quiet >= 5 && quiet <= 19, `polls in 1.5 quiet seconds: ${quiet}`);
      // With news at every answer the interval stays near 20 ms: stuck at 100 ms it would be 11 at the most.
      const news = newsEnd - quietEnd;
      assert.ok(news >= 14, `polls in 1 s of progress: ${news}`);
    });
  });

  for (const binding of ['jsonRpc', 'rest'] as const) {
    it(`a 0.3 agent works the same way through legacyCompat (${binding})`, async () => {
      await withServer({ script: progress, legacy: true }, async (s) => {
        const run = await newRun(s, store, 'Old agent', { endpoint: s[binding] });
        assert.equal(run.connection.client.protocolVersion, '0.3');
        await within(run.runner.start(), 10_000, 'start');
        assert.equal(run.journal.decide()?.outcome, 'completed');
        assert.equal(run.journal.patch()?.text, '+x\n');
      });
    });
  }

  it('the HTTP+JSON binding (1.0) completes too', async () => {
    await withServer({ script: progress }, async (s) => {
      const run = await newRun(s, store, 'Rest', { endpoint: s.rest });
      await within(run.runner.start(), 10_000, 'start');
      assert.equal(run.journal.decide()?.outcome, 'completed');
    });
  });

  it('bearer and API-key tokens are sent to the pinned origin, as the card asks', async () => {
    await withServer({ script: progress, bearer: 's3cret' }, async (s) => {
      const asked: string[] = [];
      const connection = await connectAgent({
        card: s.card,
        endpoint: s.jsonRpc,
        getToken: async (o) => (asked.push(o), 's3cret'),
      });
      const run = await newRun(s, store, 'Auth', { connection });
      await within(run.runner.start(), 10_000, 'start');
      assert.equal(run.journal.decide()?.outcome, 'completed');
      assert.deepEqual([...new Set(asked)], [s.base]);
      assert.ok(s.seenAuth.every((h) => h === 'Bearer s3cret'));
    });
    await withServer({ script: progress, apiKey: 'k-123' }, async (s) => {
      const connection = await connectAgent({ card: s.card, endpoint: s.jsonRpc, getToken: async () => 'k-123' });
      assert.deepEqual(connection.auth, { kind: 'header', name: 'X-Api-Key' });
      const run = await newRun(s, store, 'Auth', { connection });
      await within(run.runner.start(), 10_000, 'start');
      assert.equal(run.journal.decide()?.outcome, 'completed');
    });
  });

  it('a token is never sent to another origin, and redirects are refused', async () => {
    const calls: string[] = [];
    const base: typeof fetch = async (input) => {
      calls.push(String(input));
      return new Response('{}');
    };
    const f = pinnedFetch('http://127.0.0.1:1', { kind: 'bearer' }, async () => 'tok', base);
    await assert.rejects(f('http://127.0.0.1:2/a2a'), /approved at http:\/\/127\.0\.0\.1:1/);
    await assert.rejects(f('http://evil.example/a2a'), /Refused/);
    assert.deepEqual(calls, []);
    let init: RequestInit | undefined;
    const g = pinnedFetch(
      'http://127.0.0.1:1',
      { kind: 'bearer' },
      async () => 'tok',
      async (_i, i2) => ((init = i2), new Response('{}')),
    );
    await g('http://127.0.0.1:1/a2a', { method: 'POST' });
    assert.equal(new Headers(init?.headers).get('authorization'), 'Bearer tok');
    assert.equal(init?.redirect, 'error');
  });

  it('the agent unreachable at start → failed with a clear reason, nothing sent', async () => {
    const s = await startAgentServer({ script: progress });
    await s.close();
    const run = await newRun(s, store, 'Nobody home', { runner: { startAttempts: 2 } });
    await within(run.runner.start(), 10_000, 'start');
    const d = run.journal.decide();
    assert.equal(d?.outcome, 'failed');
    assert.match(
      d?.reason ?? '',
      /Could not reach the agent at http:\/\/127\.0\.0\.1:\d+\/a2a\/jsonrpc.*ECONNREFUSED.*Nothing was sent/,
    );
  });

  it('contact lost mid-task → unknown; "check again" reconciles once the agent is back', async () => {
    const s = await startAgentServer({ script: longRunning, replay: true });
    const run = await newRun(s, store, 'Fragile', {
      runner: { reconnect: { initialDelayMs: 5, maxDelayMs: 20, maxAttempts: 3 } },
    });
    void run.runner.start();
    await within(
      waitFor(() => run.journal.state() === 'working'),
      5000,
      'working',
    );
    const taskId = run.journal.taskId ?? '';
    const settled = run.runner.whenSettled();
    await s.close();
    const d = await within(settled, 10_000, 'unknown');
    assert.equal(d.outcome, 'unknown');
    assert.match(d.reason, /Check Again/);
    assert.equal(run.journal.view(Date.now()).actions.checkAgain, true);
    // Still unreachable: check again stays unknown, and never resends.
    await within(run.runner.checkAgain(), 10_000, 'check again (down)');
    await within(run.runner.idle(), 10_000, 'check again (down) settled');
    assert.equal(run.journal.decide()?.outcome, 'unknown');
    // Back (a new process on the same port that finished the task): check again reconciles.
    const back = await startAgentServer({ script: progress, port: s.port });
    try {
      await back.taskStore.save(
        {
          id: taskId,
          contextId: run.journal.contextId ?? '',
          status: { state: TaskState.TASK_STATE_COMPLETED, message: undefined, timestamp: undefined },
          artifacts: [],
          history: [],
          metadata: undefined,
        },
        new ServerCallContext(),
      );
      await within(run.runner.checkAgain(), 10_000, 'check again (up)');
      await within(run.runner.idle(), 10_000, 'check again (up) settled');
      assert.equal(run.journal.decide()?.outcome, 'completed');
      assert.equal(back.executor.executions.length, 0, 'check again never re-sent the task');
    } finally {
      await back.close();
    }
  });
});

/** An agent that asks for a sign-in (done out of band: `authorize()`), then goes on and returns `patch`. */
function signInAgent(patch: string): { script: Script; authorize: () => void } {
  let authorize!: () => void;
  const authorized = new Promise<void>((r) => (authorize = r));
  const script: Script = async (t) => {
    t.task();
    t.status(TaskState.TASK_STATE_AUTH_REQUIRED, 'Sign in at https://agents.example.com/authorize');
    await Promise.race([authorized, t.sleep(8_000)]);
    t.status(TaskState.TASK_STATE_WORKING, 'Signed in; editing');
    await t.sleep(50);
    t.artifact('p', 'changes.patch', patch, { lastChunk: true, mediaType: 'text/x-diff' });
    t.status(TaskState.TASK_STATE_COMPLETED, 'Done');
  };
  return { script, authorize };
}

/** Waits until the agent has gone on after the sign-in (asked directly, not through the runner). */
async function signedIn(run: Run): Promise<void> {
  const taskId = run.journal.taskId ?? '';
  await within(
    (async () => {
      while (
        (await run.connection.client.getTask({ tenant: '', id: taskId, historyLength: 0 })).status?.state ===
        TaskState.TASK_STATE_AUTH_REQUIRED
      )
        await sleep(10);
    })(),
    10_000,
    'the agent goes on after sign-in',
  );
}

describe('delegation runner: auth-required', () => {
  for (const replay of [false, true]) {
    it(`waits for the user, and "check again" follows the task once it was authorized out of band (${replay ? 'replay' : 'plain'})`, async () => {
      const { script, authorize } = signInAgent('+authorized\n');
      await withServer({ script, replay }, async (s) => {
        const run = await newRun(s, store, 'Needs a login');
        await within(run.runner.start(), 10_000, 'start');
        const d = run.journal.decide();
        assert.equal(d?.outcome, 'auth-required');
        assert.match(d?.reason ?? '', /Sign in at/);
        assert.equal(run.journal.view(Date.now()).actions.checkAgain, true);
        // Checked before the user signed in: still waiting, nothing resent.
        await within(run.runner.checkAgain(), 10_000, 'check again (not yet)');
        await within(run.runner.idle(), 10_000, 'check again (not yet) settled');
        assert.equal(run.journal.decide()?.outcome, 'auth-required');
        authorize();
        await signedIn(run);
        await within(run.runner.checkAgain(), 10_000, 'check again (authorized)');
        await within(run.runner.idle(), 10_000, 'check again (authorized) settled');
        assert.equal(run.journal.decide()?.outcome, 'completed');
        assert.equal(run.journal.patch()?.text, '+authorized\n');
        assert.equal(s.executor.executions.length, 1, 'the task was followed, never sent again');
      });
    });
  }

  it('a look nobody asked for (the window regained focus) records nothing while the task waits, and follows it once it went on', async () => {
    const { script, authorize } = signInAgent('+looked\n');
    await withServer({ script, replay: false }, async (s) => {
      const run = await newRun(s, store, 'Needs a login, looked at');
      await within(run.runner.start(), 10_000, 'start');
      assert.equal(run.journal.decide()?.outcome, 'auth-required');
      const before = (await run.entries()).length;
      for (let i = 0; i < 3; i++)
        assert.equal(await within(run.runner.checkIfAuthorized(), 10_000, 'a look while it waits'), false);
      assert.equal((await run.entries()).length, before, 'looking while the task waits adds nothing to the journal');
      assert.equal(run.journal.decide()?.outcome, 'auth-required');
      authorize();
      await signedIn(run);
      assert.equal(await within(run.runner.checkIfAuthorized(), 10_000, 'a look after sign-in'), true);
      await within(run.runner.idle(), 10_000, 'followed');
      assert.equal(run.journal.decide()?.outcome, 'completed');
      assert.equal(run.journal.patch()?.text, '+looked\n');
      assert.equal(s.executor.executions.length, 1, 'never sent again');
    });
  });
});

async function waitFor(cond: () => boolean): Promise<void> {
  while (!cond()) await sleep(5);
}
