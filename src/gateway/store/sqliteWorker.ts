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

const queue = store
  ? new SqliteCallQueue(
      store,
      (r) => port.postMessage(r),
      () => port.close(),
      undefined,
      undefined,
      () => {
        const m: unknown = receiveMessageOnPort(port)?.message;
        return isStoreCall(m) ? m : undefined;
      },
    )
  : undefined;

port.on('message', (call: StoreCall) => {
  if (queue) queue.push(call);
  else port.postMessage({ id: call.id, ok: false, error: openError } satisfies StoreReply);
});
