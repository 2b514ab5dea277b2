/**
 * VoltAgent's A2A server as it is on the wire: `@voltagent/a2a-server` 2.0.3 served by
 * `@voltagent/server-hono` 2.0.14 (with `@voltagent/core` 2.10.0), recorded against a VoltAgent agent
 * with a stand-in model and replayed here byte for byte in its shapes:
 *
 * - the card at `/.well-known/<agent>/agent-card.json`: no `protocolVersion`, no `preferredTransport`,
 *   `url` `<origin>/a2a/<agent>`, `capabilities.streaming: true`;
 * - `message/stream`: SSE frames `data: \u001e{…}` (a record separator before the JSON), each a bare
 *   task (no `kind`) with its whole history and the answer so far as the status message, `working`
 *   then `completed`; the stream then closes. The user's message is twice in the history (VoltAgent
 *   appends it to the task it has just made with it);
 * - `message/send` (blocking), `tasks/get`, `tasks/cancel`: the bare task in a JSON-RPC answer;
 * - `tasks/resubscribe`: HTTP 400, `{"error":{"code":-32601,"message":"Unknown method 'tasks/resubscribe'","data":{}}}`.
 *
 * The answer is the user's text echoed a word at a time (`echo: ` first), every `stepMs`. Unlike
 * VoltAgent, whose run stops when its stream's connection goes (its task then stays `working` for
 * good), a run here goes on after `cutAfter` cuts the first stream, as the spec asks of a server, so a
 * client that follows the task after the cut can be seen to reach the end.
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

type Json = Record<string, unknown>;

interface VoltTask {
  id: string;
  contextId: string;
  history: Json[];
  status: { state: string; timestamp: string; message?: Json };
  metadata?: Json;
}

export interface VoltAgentWire {
  readonly origin: string;
  readonly cardUrl: string;
  readonly url: string;
  /** The JSON-RPC methods asked, in order. */
  readonly methods: string[];
  /** Cut the next `message/stream` after this many events (its run goes on). */
  cutNextStreamAfter(events: number): void;
  close(): Promise<void>;
}

const RS = '\u001e';

function now(): string {
  return new Date().toISOString();
}

function agentMessage(task: VoltTask, messageId: string, text: string): Json {
  return {
    kind: 'message',
    role: 'agent',
    messageId,
    parts: [{ kind: 'text', text }],
    taskId: task.id,
    contextId: task.contextId,
  };
}

async function body(req: IncomingMessage): Promise<Json> {
  let text = '';
  for await (const chunk of req) text += String(chunk);
  return JSON.parse(text) as Json;
}

export async function startVoltAgentWire(opts: { stepMs?: number } = {}): Promise<VoltAgentWire> {
  const stepMs = opts.stepMs ?? 20;
  const tasks = new Map<string, VoltTask>();
  const listeners = new Map<string, Set<(t: VoltTask) => void>>();
  const methods: string[] = [];
  let cutAfter: number | undefined;
  let origin = '';

  const save = (t: VoltTask): void => {
    const copy = structuredClone(t);
    tasks.set(t.id, copy);
    for (const l of listeners.get(t.id) ?? []) l(copy);
  };
  const ended = (t: VoltTask): boolean => ['completed', 'failed', 'canceled'].includes(t.status.state);

  /** VoltAgent's run: the answer grows a word at a time in one agent message, then `completed`. */
  const run = async (task: VoltTask, text: string): Promise<void> => {
    const messageId = randomUUID();
    task.history.push(agentMessage(task, messageId, ''));
    task.status = { state: 'working', timestamp: now(), message: agentMessage(task, messageId, '') };
    save(task);
    let answer = '';
    for (const word of ['echo: ', ...text.split(/(?<= )/)]) {
      await new Promise((ok) => setTimeout(ok, stepMs));
      if (tasks.get(task.id)?.status.state === 'canceled') return;
      answer += word;
      task.history[task.history.length - 1] = agentMessage(task, messageId, answer);
      task.status = { state: 'working', timestamp: now(), message: agentMessage(task, messageId, answer) };
      save(task);
    }
    if (tasks.get(task.id)?.status.state === 'canceled') return;
    task.status = { state: 'completed', timestamp: now(), message: agentMessage(task, messageId, answer) };
    task.metadata = {
      finishReason: 'stop',
      usage: { promptTokens: 1, completionTokens: 1, totalTokens: 2, cachedInputTokens: 0, reasoningTokens: 0 },
    };
    save(task);
  };

  const newTask = (params: Json): { task: VoltTask; text: string } => {
    const message = params.message as Json;
    const taskId = (message.taskId as string | undefined) ?? randomUUID();
    const contextId = (message.contextId as string | undefined) ?? randomUUID();
    const normalized = { ...message, taskId, contextId };
    const task: VoltTask = {
      id: taskId,
      contextId,
      // As VoltAgent does: the task is made with the message, then the message is appended again.
      history: [normalized, normalized],
      status: { state: 'working', timestamp: now() },
    };
    const parts = (message.parts as Json[] | undefined) ?? [];
    return { task, text: parts.map((p) => (p.kind === 'text' ? String(p.text) : '')).join('') };
  };

  const answer = (res: ServerResponse, status: number, payload: Json): void => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(payload));
  };

  const server: Server = createServer((req, res) => {
    void (async () => {
      if (req.method === 'GET' && req.url === '/.well-known/echo/agent-card.json') {
        answer(res, 200, {
          name: 'echo',
          description: 'Echoes text back',
          url: `${origin}/a2a/echo`,
          version: '0.1.0',
          capabilities: { streaming: true, pushNotifications: false, stateTransitionHistory: false },
          defaultInputModes: ['text'],
          defaultOutputModes: ['text'],
          skills: [],
        });
        return;
      }
      if (req.method !== 'POST' || req.url !== '/a2a/echo') {
        res.writeHead(404).end('404 Not Found');
        return;
      }
      const rpc = await body(req);
      const id = rpc.id as number | string;
      const method = String(rpc.method);
      const params = (rpc.params ?? {}) as Json;
      methods.push(method);
      const ok = (result: VoltTask): void => answer(res, 200, { jsonrpc: '2.0', id, result });
      const notFound = (taskId: string): void =>
        answer(res, 400, {
          jsonrpc: '2.0',
          id,
          error: { code: -32001, message: `Task '${taskId}' not found`, data: { taskId } },
        });
      switch (method) {
        case 'message/stream': {
          const { task, text } = newTask(params);
          save(task);
          res.writeHead(200, {
            'content-type': 'text/event-stream',
            'cache-control': 'no-cache',
            connection: 'keep-alive',
            'x-accel-buffering': 'no',
          });
          let sent = 0;
          const cut = cutAfter;
          cutAfter = undefined;
          const frame = (t: VoltTask): void => {
            if (res.destroyed) return;
            if (cut !== undefined && sent >= cut) {
              res.destroy();
              return;
            }
            sent++;
            res.write(`data: ${RS}${JSON.stringify({ jsonrpc: '2.0', id, result: t })}\n\n`);
            if (ended(t)) res.end();
          };
          const set = listeners.get(task.id) ?? new Set();
          listeners.set(task.id, set);
          set.add(frame);
          res.on('close', () => set.delete(frame));
          frame(structuredClone(task));
          void run(task, text);
          return;
        }
        case 'message/send': {
          const { task, text } = newTask(params);
          save(task);
          await run(task, text);
          ok(tasks.get(task.id) as VoltTask);
          return;
        }
        case 'tasks/get': {
          const t = tasks.get(String(params.id));
          if (!t) notFound(String(params.id));
          else ok(t);
          return;
        }
        case 'tasks/cancel': {
          const t = tasks.get(String(params.id));
          if (!t) {
            notFound(String(params.id));
            return;
          }
          if (ended(t)) {
            answer(res, 400, {
              jsonrpc: '2.0',
              id,
              error: { code: -32002, message: `Task '${t.id}' can no longer be canceled`, data: { taskId: t.id } },
            });
            return;
          }
          t.status = { state: 'canceled', timestamp: now(), message: agentMessage(t, randomUUID(), 'Task canceled') };
          save(t);
          ok(t);
          return;
        }
        default:
          answer(res, 400, {
            jsonrpc: '2.0',
            id,
            error: { code: -32601, message: `Unknown method '${method}'`, data: {} },
          });
      }
    })().catch((e: unknown) => {
      if (!res.headersSent) res.writeHead(500).end(String(e));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    origin,
    cardUrl: `${origin}/.well-known/echo/agent-card.json`,
    url: `${origin}/a2a/echo`,
    methods,
    cutNextStreamAfter: (events) => {
      cutAfter = events;
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
