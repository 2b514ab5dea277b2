/**
 * The thread side of builtinThreads.ts: answers the agent's calls in order with `handlers`, a call's
 * value (or its promise's) as the reply, a thrown error as a failed reply.
 */
import { parentPort } from 'node:worker_threads';
import type { ThreadCall, ThreadReply } from './builtinThreads';

function isCall(m: unknown): m is ThreadCall {
  if (!m || typeof m !== 'object') return false;
  const c = m as Record<string, unknown>;
  return typeof c.id === 'number' && typeof c.method === 'string' && Array.isArray(c.args);
}

export function serveThread(handlers: object): void {
  let queue: Promise<void> = Promise.resolve();
  parentPort?.on('message', (m: unknown) => {
    if (!isCall(m)) return;
    queue = queue.then(async () => {
      let reply: ThreadReply;
      try {
        const handler: unknown = Reflect.get(handlers, m.method);
        if (typeof handler !== 'function') throw new Error(`the thread has no call "${m.method}"`);
        const value: unknown = await Reflect.apply(handler, handlers, m.args);
        reply = { id: m.id, ok: true, value };
      } catch (e) {
        reply = { id: m.id, ok: false, error: e instanceof Error ? e.message : String(e) };
      }
      parentPort?.postMessage(reply);
    });
  });
}
