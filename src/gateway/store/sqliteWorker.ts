/**
 * The SQLite store's thread: owns the one connection and runs every call in arrival order, so a
 * `synchronous=FULL` commit (an fsync) waits here instead of stalling the gateway's event loop, which
 * keeps relaying and serving while the disk catches up. Started by `SqliteWorkerStore`.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { SqliteGatewayStore } from './sqliteStore';
import type { SqliteStoreOptions } from './sqliteStore';
import type { StoreCall, StoreReply } from './sqliteWorkerStore';

const port = parentPort;
if (!port) throw new Error('sqliteWorker runs as a worker thread of the gateway');

let store: SqliteGatewayStore | undefined;
try {
  store = new SqliteGatewayStore(workerData as SqliteStoreOptions);
  port.postMessage({ id: 0, ok: true, value: store.driverName } satisfies StoreReply);
} catch (e) {
  port.postMessage({ id: 0, ok: false, error: (e as Error).message ?? String(e) } satisfies StoreReply);
}

port.on('message', (call: StoreCall) => {
  void (async () => {
    try {
      if (!store) throw new Error('the store did not open');
      const fn = store[call.method] as (...args: unknown[]) => Promise<unknown>;
      const value = await fn.apply(store, [...call.args]);
      port.postMessage({ id: call.id, ok: true, value } satisfies StoreReply);
      if (call.method === 'close') port.close();
    } catch (e) {
      port.postMessage({ id: call.id, ok: false, error: (e as Error).message ?? String(e) } satisfies StoreReply);
    }
  })();
});
