/**
 * The SQLite store's thread: owns the one connection and runs every call in arrival order, so a
 * `synchronous=FULL` commit (an fsync) waits here instead of stalling the gateway's event loop, which
 * keeps relaying and serving while the disk catches up. Writes that wait together share one commit
 * (`SqliteCallQueue`). Started by `SqliteWorkerStore`.
 */
import { parentPort, receiveMessageOnPort, workerData } from 'node:worker_threads';
import { SqliteCallQueue } from './sqliteCallQueue';
import { SqliteGatewayStore } from './sqliteStore';
import type { SqliteStoreOptions } from './sqliteStore';
import type { StoreCall, StoreReply } from './sqliteWorkerStore';

const port = parentPort;
if (!port) throw new Error('sqliteWorker runs as a worker thread of the gateway');

let store: SqliteGatewayStore | undefined;
let openError = 'the store did not open';
try {
  store = new SqliteGatewayStore(workerData as SqliteStoreOptions);
  port.postMessage({ id: 0, ok: true, value: store.driverName } satisfies StoreReply);
} catch (e) {
  openError = (e as Error).message ?? String(e);
  port.postMessage({ id: 0, ok: false, error: openError } satisfies StoreReply);
}

function isStoreCall(v: unknown): v is StoreCall {
  return (
    typeof v === 'object' &&
    v !== null &&
    'id' in v &&
    typeof v.id === 'number' &&
    'method' in v &&
    typeof v.method === 'string' &&
    'args' in v &&
    Array.isArray(v.args)
  );
}

/** The calls of one message (the gateway posts the calls of a turn together). */
const callsOf = (m: unknown): StoreCall[] => (Array.isArray(m) ? m.filter(isStoreCall) : []);

/** Calls of a message taken from the port during a commit and not handed to the queue yet. */
let pulled: StoreCall[] = [];
let pulledAt = 0;

/** Blocks this thread for a moment (it has nothing else to do while it gathers a group). */
const nap = new Int32Array(new SharedArrayBuffer(4));

const queue = store
  ? new SqliteCallQueue(store, {
      reply: (replies) => port.postMessage(replies),
      onClosed: () => port.close(),
      pull: () => {
        while (pulledAt >= pulled.length) {
          const m = receiveMessageOnPort(port);
          if (!m) return undefined;
          pulled = callsOf(m.message);
          pulledAt = 0;
        }
        return pulled[pulledAt++];
      },
      sleep: (ms) => void Atomics.wait(nap, 0, 0, ms),
    })
  : undefined;

port.on('message', (m: unknown) => {
  const calls = callsOf(m);
  if (queue) for (const c of calls) queue.push(c);
  else port.postMessage(calls.map((c): StoreReply => ({ id: c.id, ok: false, error: openError })));
});
