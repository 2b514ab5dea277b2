/**
 * The local gateway every editor window shares, driven as the extension drives it (`LocalGateway`, the
 * supervisor's part without `vscode`) with the real `baton-gateway` program and real HTTP: it is known
 * by asking it who it is, never by a pid; a stale `gateway.json` never gets a process signalled; a
 * second window (or a reload) uses the running gateway and registers its folders with it; and the
 * gateway stops by itself once no window needs it.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { TaskState } from '@a2a-js/sdk';
import { META } from '../../../src/core/batonProfile';
import { sleep } from '../../../src/core/sleep';
import { LocalGateway, readGatewayInfo } from '../../../src/extension/gateway/localGateway';
import type { LocalGatewayInfo } from '../../../src/extension/gateway/localGateway';
import { bounded, clientFor, sendRequest, tempDir, userMessage } from './helpers';
import { makeRepo } from '../workspace/repoFixtures';

const ROOT = resolve(__dirname, '../../..');
const CLI = join(ROOT, 'src/gateway/cli.ts');

/** A window's supervisor: the gateway program run from source, the refactoring agent paced. */
function window(stateDir: string, idleStopMs = 600_000): LocalGateway {
  return new LocalGateway({
    stateDir,
    command: [process.execPath, '--import', 'tsx', CLI, '--agent-pace-ms', '200'],
    idleStopMs,
    startTimeoutMs: 60_000,
    log: () => undefined,
  });
}

/** Runs one delegation to the refactoring agent; `whileRunning` is awaited once its first step arrives. */
async function delegate(
  lg: LocalGateway,
  info: LocalGatewayInfo,
  repo: string,
  whileRunning?: (state: TaskState) => Promise<void>,
): Promise<TaskState | 'refused'> {
  const client = await clientFor(`${info.url}/a2a/refactor/.well-known/agent-card.json`, lg.token(info));
  let last: TaskState | 'refused' = 'refused';
  try {
    for await (const ev of client.sendMessageStream(
      sendRequest(userMessage('organise imports', { [META.repository]: repo })),
    )) {
      if (ev.payload?.$case === 'statusUpdate') {
        last = ev.payload.value.status?.state ?? last;
        const w = whileRunning;
        whileRunning = undefined;
        if (w) await w(ev.payload.value.status?.state ?? TaskState.TASK_STATE_UNSPECIFIED);
      } else if (ev.payload?.$case === 'task') last = ev.payload.value.status?.state ?? last;
    }
  } catch {
    return 'refused';
  }
  return last;
}

/** No process of the user is signalled while a test runs: every `process.kill` is recorded and refused. */
function forbidSignals(): { readonly calls: unknown[][]; restore(): void } {
  const calls: unknown[][] = [];
  const real = process.kill.bind(process);
  process.kill = (...args: Parameters<typeof process.kill>): true => {
    calls.push(args);
    throw new Error(`process.kill(${args.join(', ')}) called`);
  };
  return { calls, restore: () => (process.kill = real) };
}

function alive(p: ChildProcess): boolean {
  return p.exitCode === null && p.signalCode === null;
}

describe('local gateway: a stale gateway.json', () => {
  it('pointing at an unrelated live process: a new gateway starts, that process is never signalled', async () => {
    using dir = tempDir();
    const state = join(dir.path, 'state');
    const unrelated = spawn('sleep', ['60'], { stdio: 'ignore' });
    // Something else now listens where the old gateway did, and answers as another instance.
    const other = createServer((_req, res) => res.end(JSON.stringify({ instanceId: 'someone-else' })));
    await new Promise<void>((r) => other.listen(0, '127.0.0.1', () => r()));
    const signals = forbidSignals();
    const lg = window(state);
    try {
      writeFileSync(join(dir.path, 'old-token'), 'x'.repeat(43));
      mkdirSync(state, { recursive: true });
      const url = `http://127.0.0.1:${(other.address() as AddressInfo).port}`;
      writeFileSync(
        join(state, 'gateway.json'),
        JSON.stringify({ url, pid: unrelated.pid, tokenFile: join(dir.path, 'old-token'), instanceId: 'old' }),
      );
      const { info, reused } = await bounded(lg.attach([dir.path], []), 'the gateway to start', 60_000);
      assert.equal(reused, false);
      assert.notEqual(info.url, url);
      assert.notEqual(info.instanceId, 'old');
      await sleep(200);
      assert.ok(alive(unrelated), 'the unrelated process is still running');
      assert.deepEqual(signals.calls, [], 'no process was signalled');

      await bounded(lg.stop(), 'the gateway to stop', 30_000);
      assert.equal(existsSync(join(state, 'gateway.json')), false, 'a clean stop removes gateway.json');
      assert.equal(await lg.findRunning(), undefined);
      assert.ok(alive(unrelated), 'still running after the stop');
      assert.deepEqual(signals.calls, []);
    } finally {
      signals.restore();
      await lg.stop().catch(() => undefined);
      unrelated.kill('SIGKILL');
      await new Promise<void>((r) => other.close(() => r()));
    }
  });

  it('pointing at a listener that claims to be it: the token is never sent there, and a new gateway starts', async () => {
    using dir = tempDir();
    const state = join(dir.path, 'state');
    const token = 't'.repeat(43);
    const seen: string[] = [];
    // It answers every request as the recorded instance, and notes every Authorization header it gets.
    const impostor = createServer((req, res) => {
      seen.push(req.headers.authorization ?? '');
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ instanceId: 'old', proof: 'not-a-proof', version: '0.1.0', pid: 1, roots: [] }));
    });
    await new Promise<void>((r) => impostor.listen(0, '127.0.0.1', () => r()));
    const lg = window(state);
    try {
      writeFileSync(join(dir.path, 'old-token'), token);
      mkdirSync(state, { recursive: true });
      const url = `http://127.0.0.1:${(impostor.address() as AddressInfo).port}`;
      writeFileSync(
        join(state, 'gateway.json'),
        JSON.stringify({ url, pid: process.pid, tokenFile: join(dir.path, 'old-token'), instanceId: 'old' }),
      );
      assert.equal(await lg.findRunning(), undefined, 'a listener without the proof is not the gateway');
      const { info, reused } = await bounded(lg.attach([dir.path], []), 'the gateway to start', 60_000);
      assert.equal(reused, false);
      assert.notEqual(info.url, url);
      assert.ok(seen.length > 0, 'the listener was asked who it is');
      assert.ok(
        seen.every((h) => !h.includes(token)),
        `the token reached the listener: ${JSON.stringify(seen)}`,
      );
    } finally {
      await lg.stop().catch(() => undefined);
      await new Promise<void>((r) => impostor.close(() => r()));
    }
  });

  it('pointing at nothing (the gateway died): it is replaced, and the pid in it is not signalled', async () => {
    using dir = tempDir();
    const state = join(dir.path, 'state');
    const unrelated = spawn('sleep', ['60'], { stdio: 'ignore' });
    const signals = forbidSignals();
    const lg = window(state);
    try {
      mkdirSync(state, { recursive: true });
      writeFileSync(join(dir.path, 'old-token'), 'x'.repeat(43));
      writeFileSync(
        join(state, 'gateway.json'),
        JSON.stringify({
          url: 'http://127.0.0.1:9',
          pid: unrelated.pid,
          tokenFile: join(dir.path, 'old-token'),
          instanceId: 'old',
        }),
      );
      const { info } = await bounded(lg.attach([dir.path], []), 'the gateway to start', 60_000);
      assert.notEqual(info.instanceId, 'old');
      assert.equal(readGatewayInfo(state)?.instanceId, info.instanceId);
      assert.ok(alive(unrelated));
      assert.deepEqual(signals.calls, []);
    } finally {
      signals.restore();
      await lg.stop().catch(() => undefined);
      unrelated.kill('SIGKILL');
    }
  });
});

describe('local gateway: a reload and a second window use the running gateway', () => {
  let dir: ReturnType<typeof tempDir>;
  let state: string;
  let repoA: string;
  let repoB: string;
  let signals: ReturnType<typeof forbidSignals>;
  before(() => {
    dir = tempDir();
    state = join(dir.path, 'state');
    repoA = makeRepo(dir.path, 'a/repo', { 'a.ts': 'export const unusedImportUser = 1;\n' });
    repoB = makeRepo(dir.path, 'b/repo', { 'b.ts': 'export const unusedImportUser = 2;\n' });
    signals = forbidSignals();
  });
  after(async () => {
    signals.restore();
    await window(state).stop();
    dir[Symbol.dispose]();
  });

  it('no process table is consulted: the supervisor names neither /proc nor process.kill', () => {
    for (const f of ['localGateway.ts', 'gatewaySupervisor.ts']) {
      const src = readFileSync(join(ROOT, 'src/extension/gateway', f), 'utf8');
      assert.doesNotMatch(src, /\/proc\b|process\.kill\(/, f);
    }
  });

  it('a reload finds the same gateway (same URL, same instance) while a delegation runs, and it completes', async () => {
    const first = window(state);
    const { info } = await bounded(first.attach([join(dir.path, 'a')], []), 'the gateway to start', 60_000);
    let second: { info: LocalGatewayInfo; reused: boolean } | undefined;
    let stateWhenAttached: TaskState | undefined;
    const outcome = await bounded(
      delegate(first, info, repoA, async (taskState) => {
        stateWhenAttached = taskState;
        // The window reloads: a new supervisor on the same state folder, while the task is still running.
        second = await window(state).attach([join(dir.path, 'a')], []);
      }),
      'the delegation',
      60_000,
    );
    assert.equal(outcome, TaskState.TASK_STATE_COMPLETED);
    assert.ok(
      stateWhenAttached === TaskState.TASK_STATE_WORKING || stateWhenAttached === TaskState.TASK_STATE_SUBMITTED,
      `still running when the second supervisor attached (${stateWhenAttached})`,
    );
    assert.ok(second);
    assert.equal(second.reused, true);
    assert.equal(second.info.url, info.url);
    assert.equal(second.info.instanceId, info.instanceId);
    assert.deepEqual(signals.calls, []);
  });

  it('two windows with two folders delegate through one gateway; removing one window’s folder keeps the other working', async () => {
    const wa = window(state);
    const wb = window(state);
    const a = await bounded(wa.attach([join(dir.path, 'a')], []), 'window A', 60_000);
    const b = await bounded(wb.attach([join(dir.path, 'b')], []), 'window B', 60_000);
    assert.equal(b.reused, true, 'window B did not replace window A’s gateway');
    assert.equal(b.info.url, a.info.url);
    const [ra, rb] = await Promise.all([
      bounded(delegate(wa, a.info, repoA), 'A’s delegation', 60_000),
      bounded(delegate(wb, b.info, repoB), 'B’s delegation', 60_000),
    ]);
    assert.equal(ra, TaskState.TASK_STATE_COMPLETED);
    assert.equal(rb, TaskState.TASK_STATE_COMPLETED);

    await wb.detach([join(dir.path, 'b')]);
    assert.equal(await bounded(delegate(wa, a.info, repoA), 'A again', 60_000), TaskState.TASK_STATE_COMPLETED);
    assert.notEqual(
      await bounded(delegate(wb, b.info, repoB), 'B after it let go', 60_000),
      TaskState.TASK_STATE_COMPLETED,
      'a folder no window serves any more is refused',
    );
    assert.equal((await wa.findRunning())?.instanceId, a.info.instanceId, 'the gateway still runs for window A');
  });
});

describe('local gateway: two windows opening at once', () => {
  it('start one gateway between them, serving both folders', async () => {
    using dir = tempDir();
    const state = join(dir.path, 'state');
    mkdirSync(join(dir.path, 'a'));
    mkdirSync(join(dir.path, 'b'));
    const [wa, wb] = [window(state), window(state)];
    try {
      const [a, b] = await bounded(
        Promise.all([wa.attach([join(dir.path, 'a')], []), wb.attach([join(dir.path, 'b')], [])]),
        'both windows',
        60_000,
      );
      assert.equal(a.info.instanceId, b.info.instanceId);
      assert.deepEqual([a.reused, b.reused].sort(), [false, true]);
      const served = (await wa.verify(a.info))?.roots ?? [];
      assert.deepEqual(
        [...served].sort(),
        [join(dir.path, 'a'), join(dir.path, 'b')].map((p) => realpathSync(p)).sort(),
      );
    } finally {
      await wa.stop();
    }
  });
});

describe('local gateway: stops when no window needs it', () => {
  it('once the last window lets go of its folders, it stops after the idle time and removes gateway.json', async () => {
    using dir = tempDir();
    const state = join(dir.path, 'state');
    const lg = window(state, 1000);
    try {
      const { info } = await bounded(lg.attach([dir.path], []), 'the gateway to start', 60_000);
      await sleep(2500);
      assert.equal((await lg.findRunning())?.instanceId, info.instanceId, 'serving a folder: not idle');
      await lg.detach([dir.path]);
      const deadline = Date.now() + 20_000;
      while (existsSync(join(state, 'gateway.json')) && Date.now() < deadline) await sleep(200);
      assert.equal(existsSync(join(state, 'gateway.json')), false, 'stopped by itself');
      assert.equal(await lg.verify(info), undefined);
    } finally {
      await lg.stop().catch(() => undefined);
    }
  });
});
