import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { TaskState } from '@a2a-js/sdk';
import { SqliteGatewayStore } from '../../../src/gateway/store/sqliteStore';
import { PRIVATE_DIR_NAME } from '../../../src/gateway/workspace/workspaceManager';
import { endProcess, startGatewayProcess } from './gatewayProcess';
import { tempDir } from './helpers';

interface Child {
  readonly proc: ChildProcess;
  readonly stderr: () => string;
  readonly url: string;
  readonly token: string;
}

async function startChild(stateDir: string): Promise<Child> {
  const g = await startGatewayProcess<{ url: string; token: string }>('workspaceGatewayChild.ts', [stateDir]);
  return { proc: g.proc, stderr: g.stderr, ...g.ready };
}

function ended(c: Child, signal: NodeJS.Signals): Promise<void> {
  return endProcess(c.proc, signal);
}

/** Starts a task on the holder agent and returns its id once the agent holds its workspace. */
async function holdTask(c: Child, messageId: string): Promise<string> {
  const res = await fetch(`${c.url}/a2a/holder`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', Authorization: `Bearer ${c.token}` },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'SendStreamingMessage',
      params: { message: { messageId, role: 'ROLE_USER', parts: [{ text: 'hold' }] } },
    }),
  });
  assert.equal(res.status, 200);
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  const dec = new TextDecoder();
  let seen = '';
  try {
    for (;;) {
      const r = await reader.read();
      if (r.done) throw new Error(`the stream ended before the agent held its workspace: ${seen}`);
      seen += dec.decode(r.value, { stream: true });
      if (seen.includes('holding')) break;
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  const id = /"id":"([0-9a-f-]{36})"/.exec(seen)?.[1];
  assert.ok(id, 'the first event names the task');
  return id;
}

function workspaceOf(stateDir: string, taskId: string): { dir: string; privateDir: string } {
  return { dir: join(stateDir, 'ws', taskId), privateDir: join(stateDir, 'ws', PRIVATE_DIR_NAME, taskId) };
}

describe('gateway: workspaces of local tasks are swept', () => {
  it('removes the workspace of a task killed with kill -9 at the next start, keeps one whose task still runs on a live instance', async () => {
    using dir = tempDir();
    const state = dir.path;
    let a = await startChild(state);
    let b: Child | undefined;
    let c: Child | undefined;
    try {
      const killed = await holdTask(a, 'sweep-killed');
      const killedWs = workspaceOf(state, killed);
      assert.ok(existsSync(killedWs.dir) && existsSync(killedWs.privateDir), 'the running task has its workspace');
      await ended(a, 'SIGKILL');
      assert.ok(existsSync(killedWs.dir), 'kill -9 leaves the workspace behind');

      // The restart records the task's unknown outcome, then sweeps: the start is answered after both.
      b = await startChild(state);
      assert.equal(existsSync(killedWs.dir), false, 'the killed task’s folder is gone after the restart');
      assert.equal(existsSync(killedWs.privateDir), false, 'and its private state');
      const store = new SqliteGatewayStore({ file: join(state, 'gateway.db'), driver: 'better-sqlite3' });
      try {
        const row = await store.getTask('holder', killed);
        assert.equal(row?.state, TaskState.TASK_STATE_FAILED, 'the killed task is recorded as ended');
      } finally {
        await store.close();
      }

      // A task running on b: another instance on the same state folder starts and stops, b's workspace stays.
      const live = await holdTask(b, 'sweep-live');
      const liveWs = workspaceOf(state, live);
      assert.ok(existsSync(liveWs.dir));
      c = await startChild(state);
      assert.ok(existsSync(liveWs.dir), 'a sweep at start keeps the workspace of a task running on a live instance');
      await ended(c, 'SIGTERM');
      assert.equal(c.proc.exitCode, 0, `${c.proc.signalCode}: ${c.stderr()}`);
      assert.ok(existsSync(liveWs.dir), 'a clean stop of another instance keeps it too');

      // b's clean stop cancels its task; nothing of it is left.
      await ended(b, 'SIGTERM');
      assert.equal(b.proc.exitCode, 0, `${b.proc.signalCode}: ${b.stderr()}`);
      assert.equal(existsSync(liveWs.dir), false);
      assert.equal(existsSync(liveWs.privateDir), false);
      a = await startChild(state);
    } finally {
      await ended(a, 'SIGKILL');
      if (b) await ended(b, 'SIGKILL');
      if (c) await ended(c, 'SIGKILL');
    }
  });
});
