/**
 * The built-in agents' threads: the work runs off the gateway's event loop (a card is answered while
 * Prettier formats a long file), the pool runs at most its size at once (the next job waits and says
 * so), and cancel ends a running job mid-file and frees its thread for the next.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { TaskState } from '@a2a-js/sdk';
import type { StreamResponse } from '@a2a-js/sdk';
import { META } from '../../../src/core/batonProfile';
import { BuiltinThreadPool, defaultThreadCount } from '../../../src/gateway/agents/builtinThreads';
import { discoverLocalAgents } from '../../../src/gateway/agents/discover';
import { createFormatterAgent } from '../../../src/gateway/agents/formatterAgent';
import type { LocalAgent, LocalRunEvent, LocalRunResult } from '../../../src/gateway/agents/localAgent';
import { startGateway } from '../../../src/gateway/server';
import { WorkspaceManager } from '../../../src/gateway/workspace/workspaceManager';
import { clientFor, sendRequest, tempDir, userMessage } from '../gateway/helpers';
import { makeRepo, tempSpace } from '../workspace/repoFixtures';
import type { TempSpace } from '../workspace/repoFixtures';

/** Unformatted JavaScript that takes Prettier a while to format (600 lines: about half a second here). */
function longFile(seed: number, count = 600): string {
  const lines: string[] = [];
  for (let i = 0; i < count; i++)
    lines.push(
      `const  a${seed}_${i} = {x:${i},  y: [1,2,3], z: "s${i}"}; function f${seed}_${i}(a,b){ if(a){return a+b} else {return [a,b].map(x=>x*${i})} }`,
    );
  return lines.join('\n') + '\n';
}

/**
 * Card requests asked one after another while one file is formatted: each takes several turns of the
 * event loop, and Prettier on the gateway's own thread gives it only a few while it works on a file.
 */
const CARDS = 20;
const WAITING = /^Waiting for a free built-in agent thread: all (\d+) are busy/;

describe('built-in agents on their threads', () => {
  let space: TempSpace;
  let manager: WorkspaceManager;
  let repo: string;
  let n = 0;

  before(() => {
    space = tempSpace('baton-threads-');
    manager = new WorkspaceManager({ root: space.root, userHome: space.home });
    repo = makeRepo(space.base, 'long', { 'a-long.js': longFile(1), 'b-long.js': longFile(2), 'c.js': 'let  c = 1\n' });
  });
  after(() => space.dispose());

  const formatterWith = (threads: number): { agent: LocalAgent; pool: BuiltinThreadPool } => {
    const pool = new BuiltinThreadPool(threads);
    return { agent: createFormatterAgent({ manager, threads: pool }), pool };
  };

  interface Run {
    readonly events: LocalRunEvent[];
    readonly done: Promise<LocalRunResult>;
    readonly abort: () => void;
  }
  const start = (agent: LocalAgent, log: string[], name: string, onEvent?: (e: LocalRunEvent) => void): Run => {
    const ctl = new AbortController();
    const events: LocalRunEvent[] = [];
    const done = agent.run(
      {
        taskId: `t-${++n}`,
        repoPath: repo,
        prompt: 'format',
        files: [],
        capabilities: { write: true, shell: false, network: false },
        deadline: Date.now() + 600_000,
        signal: ctl.signal,
      },
      (e) => {
        events.push(e);
        if (e.kind === 'step') log.push(`${name}: ${e.text}`);
        onEvent?.(e);
      },
    );
    void done.then((r) => log.push(`${name}: ${r.outcome}`));
    return { events, done, abort: () => ctl.abort() };
  };
  const steps = (r: Run): string[] => r.events.flatMap((e) => (e.kind === 'step' ? [e.text] : []));

  it('sizes the pool from the cores: one less, at least 1, at most 2', () => {
    assert.deepEqual([1, 2, 3, 8].map(defaultThreadCount), [1, 1, 2, 2]);
    assert.throws(() => new BuiltinThreadPool(0), /at least one thread/);
  });

  it('the gateway answers card requests while Prettier formats a long file', async () => {
    using state = tempDir();
    // A second or more of formatting: the cards' time to answer, even on a busy machine, stays well inside it.
    const longer = makeRepo(space.base, 'longer', { 'd-longer.js': longFile(4, 3_000) });
    const agents = await discoverLocalAgents({ manager, clis: false, builtinThreads: 1 });
    const gw = await startGateway({
      stateDir: state.path,
      roots: [space.base],
      localAgents: agents.filter((a) => a.id === 'formatter'),
      log: () => undefined,
    });
    try {
      const client = await clientFor(`${gw.url}/a2a/formatter/.well-known/agent-card.json`, gw.token);
      const order: string[] = [];
      let cards: Promise<void> | undefined;
      for await (const ev of client.sendMessageStream(
        sendRequest(userMessage('format d-longer.js', { [META.repository]: longer })),
      )) {
        const text = statusText(ev);
        if (text === undefined) continue;
        order.push(text);
        // Prettier starts on d-longer.js right after the scope step: ask for the card CARDS times in a row meanwhile.
        if (text.startsWith('Scope:') && !cards)
          cards = (async () => {
            for (let i = 1; i <= CARDS; i++) {
              const res = await fetch(`${gw.url}/a2a/formatter/.well-known/agent-card.json`);
              assert.equal(res.status, 200);
              assert.equal(((await res.json()) as { name: string }).name, 'Formatter (Prettier)');
              order.push(`card ${i}`);
            }
          })();
      }
      await cards;
      const formatted = order.indexOf('Formatted d-longer.js');
      assert.ok(formatted > 0, order.join('\n'));
      for (let i = 1; i <= CARDS; i++)
        assert.ok(order.indexOf(`card ${i}`) < formatted, `card ${i} answered while formatting:\n${order.join('\n')}`);
      assert.match(order[order.length - 1], /^Prettier formatted 1 of 1 file/);
    } finally {
      await gw.close();
    }
  });

  it('runs at most its size at once: the next job waits, says so, and starts when one ends; the patches are the same', async () => {
    const { agent, pool } = formatterWith(2);
    const log: string[] = [];
    let most = 0;
    const watch = (): void => {
      most = Math.max(most, pool.running);
    };
    const [a, b, c] = ['a', 'b', 'c'].map((name) => start(agent, log, name, watch));
    const results = await Promise.all([a.done, b.done, c.done]);
    for (const r of results) assert.equal(r.outcome, 'completed', r.reason);
    assert.equal(most, 2, 'two ran at once, never three');
    // Whichever asked third (their workspaces are set up concurrently) waited; the other two did not.
    const names = ['a', 'b', 'c'];
    const runs = [a, b, c];
    const waiters = runs.flatMap((r, i) => (steps(r).some((s) => WAITING.test(s)) ? [names[i]] : []));
    assert.equal(waiters.length, 1, `one job waited:\n${log.join('\n')}`);
    const w = waiters[0];
    assert.equal(WAITING.exec(steps(runs[names.indexOf(w)]).find((s) => WAITING.test(s)) ?? '')?.[1], '2');
    const firstEnded = Math.min(...names.filter((x) => x !== w).map((x) => log.indexOf(`${x}: completed`)));
    assert.ok(log.indexOf(`${w}: Formatted a-long.js`) > firstEnded, log.join('\n'));
    assert.equal(results[1].patch, results[0].patch);
    assert.equal(results[2].patch, results[0].patch);
    assert.match(results[0].patch, /diff --git a\/a-long\.js/);
    assert.equal(pool.running, 0);
    assert.equal(pool.waiting, 0);
  });

  it('cancel ends a running job mid-file and frees its thread; a job canceled while it waits never starts', async () => {
    const { agent, pool } = formatterWith(1);
    const log: string[] = [];
    const until = async (cond: () => boolean): Promise<void> => {
      while (!cond()) await new Promise((r) => setTimeout(r, 10));
    };
    const first = start(agent, log, 'first');
    // Prettier starts on a-long.js right after the scope step.
    await until(() => steps(first).some((s) => s.startsWith('Scope:')));
    const queued = start(agent, log, 'queued');
    await until(() => steps(queued).some((s) => WAITING.test(s)));
    const next = start(agent, log, 'next');
    await until(() => steps(next).some((s) => WAITING.test(s)));
    queued.abort();
    assert.equal((await queued.done).outcome, 'canceled');
    first.abort();
    const [r1, r2, r3] = await Promise.all([first.done, queued.done, next.done]);
    assert.equal(r1.outcome, 'canceled');
    assert.equal(r1.patch, '');
    assert.ok(!steps(first).includes('Formatted a-long.js'), 'the file being formatted was not finished');
    assert.equal(r2.outcome, 'canceled');
    assert.ok(!steps(queued).some((s) => s.startsWith('Scope:')), 'the job canceled while waiting never started');
    assert.equal(r3.outcome, 'completed', r3.reason);
    assert.ok(steps(next).some((s) => WAITING.test(s)));
    assert.ok(log.indexOf('first: canceled') < log.indexOf('next: Formatted a-long.js'), log.join('\n'));
    assert.equal(pool.running, 0);
  });
});

function statusText(ev: StreamResponse): string | undefined {
  if (ev.payload?.$case !== 'statusUpdate') return undefined;
  if (ev.payload.value.status?.state === TaskState.TASK_STATE_SUBMITTED) return undefined;
  const c = ev.payload.value.status?.message?.parts[0]?.content;
  return c?.$case === 'text' ? c.value : undefined;
}
