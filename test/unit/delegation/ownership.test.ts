// Several managers share one journal folder (VS Code windows, `baton` commands): only the one that
// holds a journal's lease writes it. Real SDK servers, real leases on disk, real processes for the
// pids (a live one and one that has exited).
import * as assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { TaskState } from '@a2a-js/sdk';
import { connectAgent } from '../../../src/node/a2a/clientFactory';
import type { AgentConnection } from '../../../src/node/a2a/clientFactory';
import { DelegationManager, DelegationOwnedElsewhereError } from '../../../src/node/a2a/delegationManager';
import { JournalStore } from '../../../src/node/journalStore';
import type { AgentServer, Turn } from './agentServers';
import { sleep, startAgentServer } from './agentServers';
import { FAST_RECONNECT, makeRequest, tempDir, within } from './harness';

/** Turns wait until released (or canceled), then complete. */
let released = false;
async function held(t: Turn): Promise<void> {
  t.task();
  t.status(TaskState.TASK_STATE_WORKING, 'started');
  while (!released && !t.isCanceled()) await t.sleep(10);
  if (t.isCanceled()) return;
  t.artifact('notes', 'notes.txt', 'released');
  t.status(TaskState.TASK_STATE_COMPLETED, 'released');
}

async function until(what: string, ok: () => boolean, ms = 10_000): Promise<void> {
  await within(
    (async () => {
      while (!ok()) await sleep(10);
    })(),
    ms,
    what,
  );
}

/** A pid no process has any more. */
function deadPid(): number {
  return Number(
    spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' }).stdout,
  );
}

function writeLease(dir: string, requestId: string, pid: number): void {
  writeFileSync(join(dir, `${requestId}.lease`), JSON.stringify({ pid, host: hostname(), owner: 'someone-else' }));
}

describe('one writer per journal', () => {
  let server: AgentServer;
  const tmp = tempDir();
  const stores: JournalStore[] = [];
  const managers: DelegationManager[] = [];
  let connects = 0;
  const connect = async (): Promise<AgentConnection> => {
    connects++;
    return connectAgent({ card: server.card, endpoint: server.jsonRpc });
  };
  async function open(dir: string, extra: Partial<Parameters<typeof DelegationManager.open>[0]> = {}) {
    const store = new JournalStore(dir);
    stores.push(store);
    const m = await DelegationManager.open({
      store,
      connect,
      watchMs: 50,
      runnerOptions: { reconnect: FAST_RECONNECT, cancelWaitMs: 2_000 },
      ...extra,
    });
    managers.push(m);
    return { m, store };
  }
  before(async () => {
    server = await startAgentServer({ script: held });
  });
  after(async () => {
    released = true;
    for (const m of managers) m.dispose();
    for (const s of stores) await s.close();
    await server.close();
    tmp.cleanup();
  });

  it('a second manager on the folder only reads a delegation the first runs, follows it from disk, and hands its cancel over', async () => {
    released = false;
    const dir = join(tmp.dir, 'two');
    const a = await open(dir);
    const journal = await a.m.start(makeRequest(server.jsonRpc, 'hold'));
    const id = journal.requestId;
    await until('the task is working', () => journal.taskState === TaskState.TASK_STATE_WORKING);
    const file = join(dir, `${id}.jsonl`);
    const b = await open(dir);
    await sleep(200);
    assert.ok(b.m.ownedElsewhere(id), 'b sees the delegation as run elsewhere');
    assert.equal(b.store.owns(id), false);
    assert.equal(b.m.view(id)?.state, 'working');
    await assert.rejects(b.m.checkAgain(id), DelegationOwnedElsewhereError);
    const bytes = readFileSync(file);
    await sleep(200);
    assert.deepEqual(readFileSync(file), bytes, 'nothing was written while b only looked');

    assert.equal(await b.m.cancel(id), undefined, 'the cancel is handed to the owner');
    await until('a journals the cancel', () => journal.decide()?.outcome === 'canceled');
    assert.equal(journal.cancelRequestedBy, 'user');
    await until('b reads it from disk', () => b.m.view(id)?.outcome === 'canceled');
    assert.equal(b.m.get(id)?.decide()?.cancelConfirmed, true);
  });

  it('a lease left by a process that died is taken over: the delegation is resumed and completes', async () => {
    released = false;
    const dir = join(tmp.dir, 'dead');
    const a = await open(dir);
    const journal = await a.m.start(makeRequest(server.jsonRpc, 'hold'));
    const id = journal.requestId;
    await until('the task is working', () => journal.taskState === TaskState.TASK_STATE_WORKING);
    // "Crash": stop without a trace and leave a lease whose process is gone.
    a.m.dispose();
    writeLease(dir, id, deadPid());
    released = true;
    const b = await open(dir);
    assert.ok(b.store.owns(id), 'the stale lease was taken over');
    assert.equal(JSON.parse(readFileSync(join(dir, `${id}.lease`), 'utf8')).pid, process.pid);
    await until('completed after the takeover', () => b.m.get(id)?.recordedOutcome?.outcome === 'completed');
  });

  it('a lease of a live process is respected until that process is gone, then taken over', async () => {
    released = false;
    const dir = join(tmp.dir, 'live');
    const a = await open(dir);
    const journal = await a.m.start(makeRequest(server.jsonRpc, 'hold'));
    const id = journal.requestId;
    await until('the task is working', () => journal.taskState === TaskState.TASK_STATE_WORKING);
    a.m.dispose();
    const other = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    try {
      writeLease(dir, id, other.pid ?? 0);
      const b = await open(dir);
      await sleep(200);
      assert.equal(b.store.owns(id), false, 'not taken from a live process');
      assert.ok(b.m.ownedElsewhere(id));
      released = true;
      other.kill('SIGKILL');
      await new Promise((r) => other.once('exit', r));
      await until('taken over once the process is gone', () => b.store.owns(id));
      await until('completed', () => b.m.get(id)?.recordedOutcome?.outcome === 'completed');
    } finally {
      other.kill('SIGKILL');
    }
  });

  it('a read-only manager starts no runner, takes no lease and writes nothing', async () => {
    released = false;
    const dir = join(tmp.dir, 'readonly');
    const a = await open(dir);
    const journal = await a.m.start(makeRequest(server.jsonRpc, 'hold'));
    const id = journal.requestId;
    await until('the task is working', () => journal.taskState === TaskState.TASK_STATE_WORKING);
    a.m.dispose();
    // What a had recorded before it stopped is flushed; nothing is written after that.
    await a.store.close();
    const file = join(dir, `${id}.jsonl`);
    const bytes = readFileSync(file);
    const before = connects;
    const b = await open(dir, { readOnly: true });
    await sleep(200);
    assert.equal(connects, before, 'no connection was made');
    assert.equal(b.store.owns(id), false);
    assert.equal(b.m.view(id)?.state, 'working');
    assert.deepEqual(readFileSync(file), bytes);
    b.m.dispose();
    released = true;
  });

  it('dispose stops what is pending: no runner is made after it, nothing is written', async () => {
    released = false;
    const dir = join(tmp.dir, 'dispose');
    const a = await open(dir);
    const journal = await a.m.start(makeRequest(server.jsonRpc, 'hold'));
    const id = journal.requestId;
    await until('the task is working', () => journal.taskState === TaskState.TASK_STATE_WORKING);
    a.m.dispose();
    // What a had recorded before it stopped is flushed; nothing is written after that.
    await a.store.close();
    const file = join(dir, `${id}.jsonl`);
    const bytes = readFileSync(file);
    const executions = server.executor.executions.length;
    let connected = 0;
    let late: AgentConnection | undefined;
    const store = new JournalStore(dir);
    stores.push(store);
    // A connection that takes a while to build: the manager is disposed before it is ready.
    const m = await DelegationManager.open({
      store,
      connect: async () => {
        await sleep(150);
        connected++;
        late = await connectAgent({ card: server.card, endpoint: server.jsonRpc });
        return late;
      },
    });
    m.dispose();
    const requests = server.requests.length;
    await sleep(400);
    assert.equal(connected, 1, 'the connection was asked for before dispose');
    assert.equal(m.get(id)?.decide(), undefined, 'nothing was recorded');
    assert.deepEqual(readFileSync(file), bytes, 'nothing was written');
    assert.equal(server.executor.executions.length, executions);
    assert.equal(server.requests.length, requests, 'no request after dispose');
    assert.ok(late);
    released = true;
  });
});
