import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { SqliteGatewayStore } from '../../../src/gateway/store/sqliteStore';
import { endProcess, startGatewayProcess } from './gatewayProcess';
import { checkStoredEnvelope, tempDir } from './helpers';
import { NODE24, NODE24_SKIP } from '../node24';

const runtimes: Array<{ name: string; node: string; driver: string; skip: string | false }> = [
  { name: 'Node 20 + better-sqlite3', node: process.execPath, driver: 'better-sqlite3', skip: false },
  // node:sqlite, the driver of VS Code's own runtime.
  { name: 'Node 24 + node:sqlite', node: NODE24 ?? '', driver: 'node:sqlite', skip: NODE24_SKIP },
];

interface Child {
  readonly proc: ChildProcess;
  readonly url: string;
  readonly token: string;
  readonly driver: string;
}

async function startChild(node: string, stateDir: string): Promise<Child> {
  const g = await startGatewayProcess<{ url: string; token: string; driver: string }>(
    'gatewayChild.ts',
    [stateDir],
    node,
  );
  return { proc: g.proc, ...g.ready };
}

function kill9(c: Child): Promise<void> {
  return endProcess(c.proc);
}

/** Reads SSE events from a streaming response until `stop` says so; returns the (seq, data) seen. */
async function readUntil(
  res: Response,
  stop: (seqs: number[]) => boolean,
  timeoutMs = 20_000,
): Promise<Array<{ seq: number; data: string }>> {
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  const dec = new TextDecoder();
  const out: Array<{ seq: number; data: string }> = [];
  let buf = '';
  const deadline = Date.now() + timeoutMs;
  try {
    while (Date.now() < deadline) {
      const r = await Promise.race([
        reader.read(),
        new Promise<{ done: true; value: undefined }>((res2) =>
          setTimeout(() => res2({ done: true, value: undefined }), Math.max(1, deadline - Date.now())),
        ),
      ]);
      if (r.done) break;
      buf += dec.decode(r.value, { stream: true });
      let i: number;
      while ((i = buf.indexOf('\n\n')) >= 0) {
        const block = buf.slice(0, i);
        buf = buf.slice(i + 2);
        const id = /^id: (\d+)$/m.exec(block)?.[1];
        const data = /^data: (.*)$/m.exec(block)?.[1] ?? '';
        if (id !== undefined) out.push({ seq: Number(id), data });
      }
      if (stop(out.map((e) => e.seq))) break;
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  return out;
}

for (const rt of runtimes) {
  describe(`gateway: kill -9 mid-stream, then restart (${rt.name})`, () => {
    it(
      'resumes with no lost and no duplicated events, records the unknown outcome, and the store passes integrity_check',
      { skip: rt.skip },
      async () => {
        using dir = tempDir();
        let child = await startChild(rt.node, dir.path);
        try {
          assert.equal(child.driver, rt.driver);
          const res = await fetch(`${child.url}/a2a/slow`, {
            method: 'POST',
            headers: {
              'Content-Type': 'application/json',
              'A2A-Version': '1.0',
              Authorization: `Bearer ${child.token}`,
            },
            body: JSON.stringify({
              jsonrpc: '2.0',
              id: 1,
              method: 'SendStreamingMessage',
              params: { message: { messageId: 'crash-1', role: 'ROLE_USER', parts: [{ text: 'go' }] } },
            }),
          });
          const before = await readUntil(res, (s) => s.length >= 30);
          assert.ok(before.length >= 30, `got ${before.length} events before the kill`);
          const taskId = /"id":"([0-9a-f-]{36})"/.exec(before[0].data)?.[1] ?? '';
          await kill9(child);

          const store = new SqliteGatewayStore({ file: join(dir.path, 'gateway.db'), driver: 'better-sqlite3' });
          assert.equal(await store.integrityCheck(), 'ok');
          const persisted = (await store.getTask('slow', taskId))?.lastSeq ?? 0;
          await store.close();
          assert.ok(
            persisted >= before[before.length - 1].seq,
            'every event a client saw was persisted before it was sent',
          );

          child = await startChild(rt.node, dir.path);
          const last = before[before.length - 1].seq;
          const resumed = await fetch(`${child.url}/a2a/slow`, {
            method: 'POST',
            headers: {
              'Content-Type': 'application/json',
              'A2A-Version': '1.0',
              Authorization: `Bearer ${child.token}`,
              'Last-Event-ID': String(last),
            },
            body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'SubscribeToTask', params: { id: taskId } }),
          });
          assert.equal(resumed.status, 200);
          const after = await readUntil(resumed, () => false);
          const all = [...before, ...after].map((e) => e.seq);
          assert.deepEqual(
            all,
            Array.from({ length: all.length }, (_, i) => i + 1),
            'contiguous, no gaps, no duplicates',
          );
          assert.equal(all.length, persisted + 1, 'everything persisted, plus the recorded outcome');
          const final = JSON.parse(after[after.length - 1].data) as {
            result: { statusUpdate?: { status: { state: string }; metadata: Record<string, unknown> } };
          };
          assert.equal(final.result.statusUpdate?.status.state, 'TASK_STATE_FAILED');
          assert.equal(final.result.statusUpdate?.metadata['baton/outcome'], 'unknown');
          // Signed for the request sent, like the end of any run: a client tells it from a stripped signature.
          const check = await checkStoredEnvelope(child.url, 'slow', child.token, taskId, {
            message: { messageId: 'crash-1', role: 'ROLE_USER', parts: [{ text: 'go' }] },
          });
          assert.ok(check.ok, JSON.stringify(check));
        } finally {
          await kill9(child);
        }
        const store = new SqliteGatewayStore({ file: join(dir.path, 'gateway.db'), driver: 'better-sqlite3' });
        assert.equal(await store.integrityCheck(), 'ok');
        await store.close();
      },
    );
  });
}
