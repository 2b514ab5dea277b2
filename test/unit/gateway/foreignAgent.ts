/**
 * A foreign A2A agent for the proxy tests, written without the SDK, shaped like the 0.3 servers seen
 * in the wild: JSON-RPC with 0.3 method names and `kind`-tagged objects, its card at the origin, and
 * habits the SDK's own server never has — progress and the end as full task snapshots, or (`broken`)
 * a first event that is not a stream response at all while its task goes on.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import type { Request, Response } from 'express';

type Json = Record<string, unknown>;

interface ForeignTask {
  id: string;
  contextId: string;
  state: string;
  note: string;
  artifacts: Json[];
  history: Json[];
}

export interface ForeignAgent {
  readonly url: string;
  readonly tasks: Map<string, ForeignTask>;
  /** The JSON-RPC methods it was called with, in order. */
  readonly calls: string[];
  close(): Promise<void>;
}

function message(text: string, role: 'agent' | 'user', taskId: string, contextId: string): Json {
  return {
    kind: 'message',
    messageId: `m-${taskId}-${text}`,
    role,
    parts: [{ kind: 'text', text }],
    taskId,
    contextId,
  };
}

function taskJson(t: ForeignTask): Json {
  return {
    kind: 'task',
    id: t.id,
    contextId: t.contextId,
    status: {
      state: t.state,
      message: message(t.note, 'agent', t.id, t.contextId),
      timestamp: new Date().toISOString(),
    },
    artifacts: t.artifacts,
    history: t.history,
  };
}

/** Serves a 0.3 card (its `protocolVersion` is what the card says) and the agent at /rpc. */
export async function startForeignAgent(opts: { cardVersion?: string } = {}): Promise<ForeignAgent> {
  const tasks = new Map<string, ForeignTask>();
  const calls: string[] = [];
  let n = 0;
  let url = '';
  const app = express();
  app.use(express.json());
  app.get('/.well-known/agent-card.json', (_req, res) => {
    res.json({
      protocolVersion: opts.cardVersion ?? '0.3.0',
      name: 'foreign',
      description: 'a foreign 0.3 agent',
      url,
      preferredTransport: 'JSONRPC',
      version: '1',
      capabilities: { streaming: true, pushNotifications: false },
      defaultInputModes: ['text/plain'],
      defaultOutputModes: ['text/plain'],
      skills: [{ id: 'x', name: 'x', description: 'x', tags: [] }],
    });
  });
  app.post('/rpc', (req: Request, res: Response) => {
    const body = req.body as { id?: unknown; method?: string; params?: Json };
    const id = body.id ?? null;
    const method = body.method ?? '';
    calls.push(method);
    const reply = (result: unknown): void => void res.json({ jsonrpc: '2.0', id, result });
    const params = body.params ?? {};
    // A2A 1.0 method names too (for the "broken" case only: its tasks answer in 1.0 JSON).
    if (method === 'tasks/get' || method === 'tasks/cancel' || method === 'GetTask' || method === 'CancelTask') {
      const t = tasks.get(String(params.id));
      if (!t) return void res.json({ jsonrpc: '2.0', id, error: { code: -32001, message: 'Task not found' } });
      if (method.toLowerCase().includes('cancel')) {
        t.state = 'canceled';
        t.note = 'canceled';
      }
      if (method === 'GetTask' || method === 'CancelTask')
        return reply({ id: t.id, contextId: t.contextId, status: { state: `TASK_STATE_${t.state.toUpperCase()}` } });
      return reply(taskJson(t));
    }
    if (method !== 'message/stream' && method !== 'SendStreamingMessage')
      return void res.json({ jsonrpc: '2.0', id, error: { code: -32601, message: `not here: ${method}` } });
    const msg = (params.message ?? {}) as Json;
    const text = String(((msg.parts as Json[] | undefined)?.[0] ?? {}).text ?? '');
    const t: ForeignTask = {
      id: `foreign-${++n}`,
      contextId: `ctx-${n}`,
      state: 'submitted',
      note: 'queued',
      artifacts: [],
      history: [{ ...msg, kind: 'message' }],
    };
    tasks.set(t.id, t);
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const send = (result: unknown): void =>
      void res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', id, result })}\n\n`);
    if (text === 'broken') {
      // Its task is under way, but what it sends first is no A2A event.
      t.state = 'working';
      t.note = 'working';
      send({ kind: 'progress', id: t.id, percent: 10 });
      res.end();
      return;
    }
    // "snapshots": every step as the whole task.
    send(taskJson(t));
    const steps: Array<() => void> = [
      () => Object.assign(t, { state: 'working', note: 'reading' }),
      () => Object.assign(t, { state: 'working', note: 'writing' }),
      () =>
        Object.assign(t, {
          state: 'completed',
          note: 'done',
          artifacts: [
            { artifactId: 'p', name: 'changes.patch', parts: [{ kind: 'text', text: 'diff --git a/f b/f\n' }] },
          ],
        }),
    ];
    let i = 0;
    const next = (): void => {
      const step = steps[i++];
      if (!step) return void res.end();
      step();
      send(taskJson(t));
      setTimeout(next, 10);
    };
    setTimeout(next, 10);
  });
  const server: Server = await new Promise((r) => {
    const s = app.listen(0, '127.0.0.1', () => r(s));
  });
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/rpc`;
  return {
    url,
    tasks,
    calls,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
