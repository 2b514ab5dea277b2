/**
 * The SQLite store, run on its own thread (`sqliteWorker.ts`). Same behaviour as `SqliteGatewayStore`
 * (calls are answered in the order they were made), but a durable commit no longer blocks the event
 * loop: while one batch is being fsynced, the gateway goes on receiving the next, which the task's
 * writer then commits as one group; and the batches of different tasks that wait for the thread
 * together share one commit (`SqliteCallQueue`).
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { AppendListener, CancelRequestListener, GatewayStore } from './gatewayStore';
import { eventsOfPages, toPage } from './sqliteStore';
import type { EventPage, PageBatch, SqliteGatewayStore, SqliteStoreOptions } from './sqliteStore';

/** The store's methods the thread answers (not those SQLite leaves out: one process per state folder). */
type Method = Exclude<
  keyof GatewayStore,
  | 'kind'
  | 'ordersAppends'
  | 'foldsSnapshots'
  | 'onRemoteAppend'
  | 'onMissedAppends'
  | 'onCancelRequest'
  | 'takeOver'
  | 'queueTurn'
  | 'turnsOf'
  | 'dropTurn'
  | 'onTurnsMoved'
>;

/** What the thread answers: the store's methods, its page reads, and what opening it did. */
export type WorkerMethod = Method | 'readPages' | 'appendPage' | 'notes';

export interface StoreCall {
  readonly id: number;
  readonly method: WorkerMethod;
  readonly args: readonly unknown[];
}

export type StoreReply =
  | { readonly id: number; readonly ok: true; readonly value: unknown }
  | { readonly id: number; readonly ok: false; readonly error: string };

/**
 * The thread's young generation is kept small: what it allocates is the calls it is handed and the
 * rows it reads, gone once answered. With V8's default it grew to 16 MiB semi-spaces in a burst of
 * patches and held them: in one load500 round of `npm run bench -- scale` each, the thread's heap (read
 * with v8.getHeapStatistics inside it) peaked at 59 MiB with the default and 42 MiB with this.
 */
const WORKER_LIMITS = { maxYoungGenerationSizeMb: 8 };

/**
 * A page this large (a patch, typically) crosses to the thread as its UTF-8 bytes, moved with the
 * message (transferred, not copied) and bound as they are: posted as a string, it was copied into the
 * message, then into the thread's heap, then into UTF-8 for SQLite, and a burst of patches made most
 * of that heap (its total peaked at 53 MiB in a load500 round, and at 18–24 MiB with the bytes moved;
 * the gateway's RSS in such rounds: 251–325 MiB in four, then 247–314 in eight). Smaller pages
 * (status events of a few hundred bytes) stay strings: a moved buffer is an allocation of its own.
 */
export const TRANSFER_BYTES = 16 * 1024;

/**
 * The page's bodies as they cross: bytes in a buffer of their own (to be moved) when large, else the
 * text itself. Bytes given are the page's own (`toPage` makes a new buffer for them): they are moved.
 */
export function crossing(bodies: string | Uint8Array): { bodies: string | Uint8Array; moved?: ArrayBuffer } {
  if (typeof bodies === 'string' && bodies.length < TRANSFER_BYTES) return { bodies };
  const bytes = typeof bodies === 'string' ? Buffer.from(bodies, 'utf8') : bodies;
  // Only a buffer that holds these bytes alone can be moved (moving a shared one would take the rest).
  const own = bytes.byteOffset === 0 && bytes.buffer.byteLength === bytes.byteLength;
  return own && bytes.buffer instanceof ArrayBuffer ? { bodies: bytes, moved: bytes.buffer } : { bodies };
}

/** The worker: beside the bundle (dist/gateway-sqlite.js), or from source when run through tsx. */
function startWorker(opts: SqliteStoreOptions): Worker {
  const bundled = join(__dirname, 'gateway-sqlite.js');
  if (existsSync(bundled) || !__filename.endsWith('.ts'))
    return new Worker(bundled, { workerData: opts, resourceLimits: WORKER_LIMITS });
  // A worker does not inherit tsx's loader for its entry file; its require hook is loaded first.
  const tsx = createRequire(__filename).resolve(['tsx', 'cjs'].join('/'));
  const source = join(__dirname, 'sqliteWorker.ts');
  return new Worker(`require(${JSON.stringify(tsx)}); require(${JSON.stringify(source)});`, {
    eval: true,
    workerData: opts,
    resourceLimits: WORKER_LIMITS,
  });
}

export class SqliteWorkerStore implements GatewayStore {
  readonly kind = 'sqlite' as const;
  /** One thread takes the calls in the order they were posted and answers them in that order. */
  readonly ordersAppends = true;
  /** The thread's store folds a task's later pages into its snapshot when it is read. */
  readonly foldsSnapshots = true;
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  private stopped: Error | undefined;
  /** Calls made since the last post: they cross to the thread as one message. */
  private outbox: StoreCall[] = [];
  /** The buffers the outbox's calls move to the thread (see `crossing`), by call id. */
  private moved = new Map<number, ArrayBuffer>();

  private constructor(
    private readonly worker: Worker,
    readonly driverName: SqliteGatewayStore['driverName'],
  ) {
    worker.on('message', (replies: readonly StoreReply[]) => {
      for (const r of replies) {
        const p = this.pending.get(r.id);
        if (!p) continue;
        this.pending.delete(r.id);
        if (r.ok) p.resolve(r.value);
        else p.reject(new Error(r.error));
      }
    });
    const stop = (why: Error): void => {
      this.stopped ??= why;
      for (const p of this.pending.values()) p.reject(this.stopped);
      this.pending.clear();
    };
    worker.on('error', (e) => stop(new Error(`the gateway's SQLite thread failed: ${e.message}`)));
    worker.on('exit', (code) => stop(new Error(`the gateway's SQLite thread stopped (exit code ${code})`)));
  }

  /** Opens the store on its thread; `log` hears what opening it did (a one-time migration). */
  static async open(opts: SqliteStoreOptions, log?: (line: string) => void): Promise<SqliteWorkerStore> {
    const store = await SqliteWorkerStore.start(opts);
    if (log) for (const note of (await store.callWorker('notes', [])) as string[]) log(note);
    return store;
  }

  private static start(opts: SqliteStoreOptions): Promise<SqliteWorkerStore> {
    const worker = startWorker(opts);
    return new Promise((resolve, reject) => {
      const onError = (e: Error): void => reject(new Error(`cannot start the gateway's SQLite thread: ${e.message}`));
      worker.once('error', onError);
      worker.once('message', (r: StoreReply) => {
        worker.off('error', onError);
        if (r.ok) resolve(new SqliteWorkerStore(worker, r.value as SqliteGatewayStore['driverName']));
        else {
          void worker.terminate();
          reject(new Error(r.error));
        }
      });
    });
  }

  private call<M extends Method>(method: M, ...args: Parameters<GatewayStore[M]>): ReturnType<GatewayStore[M]> {
    return this.callWorker(method, args) as ReturnType<GatewayStore[M]>;
  }

  private callWorker(method: WorkerMethod, args: readonly unknown[], moved?: ArrayBuffer): Promise<unknown> {
    return new Promise<unknown>((resolve, reject) => {
      if (this.stopped) return reject(this.stopped);
      const id = this.nextId++;
      this.pending.set(id, { resolve, reject });
      if (moved) this.moved.set(id, moved);
      if (this.outbox.push({ id, method, args }) === 1) queueMicrotask(this.post);
    });
  }

  /**
   * Posts the calls made in this turn as one message: a message costs far more than the bytes it
   * carries, and the writers of every task flush in the same turn (see `TaskWriter`).
   */
  private readonly post = (): void => {
    const calls = this.outbox;
    const moved = this.moved;
    this.outbox = [];
    if (moved.size) this.moved = new Map();
    if (this.stopped) {
      for (const c of calls) this.pending.get(c.id)?.reject(this.stopped);
      return;
    }
    try {
      this.worker.postMessage(calls, moved.size ? [...moved.values()] : undefined);
    } catch {
      // One of them cannot cross (an argument that cannot be cloned or moved; nothing was sent): each
      // goes alone, so only that one fails, as a rejected call rather than an exception out of here.
      for (const c of calls) {
        const m = moved.get(c.id);
        try {
          this.worker.postMessage([c], m ? [m] : []);
        } catch (e) {
          this.pending
            .get(c.id)
            ?.reject(new Error(`the gateway's SQLite thread could not be sent this call: ${(e as Error).message}`));
          this.pending.delete(c.id);
        }
      }
    }
  };

  claimRequest: GatewayStore['claimRequest'] = (...a) => this.call('claimRequest', ...a);
  findRequest: GatewayStore['findRequest'] = (...a) => this.call('findRequest', ...a);
  bindRequest: GatewayStore['bindRequest'] = (...a) => this.call('bindRequest', ...a);
  releaseRequest: GatewayStore['releaseRequest'] = (...a) => this.call('releaseRequest', ...a);
  releaseStaleClaim: GatewayStore['releaseStaleClaim'] = (...a) => this.call('releaseStaleClaim', ...a);
  listUnboundRequests: GatewayStore['listUnboundRequests'] = (...a) => this.call('listUnboundRequests', ...a);
  takeOverRequest: GatewayStore['takeOverRequest'] = (...a) => this.call('takeOverRequest', ...a);
  createTask: GatewayStore['createTask'] = (...a) => this.call('createTask', ...a);
  /** A batch crosses to the thread as one page (its bodies one long string, or bytes), not as many small objects. */
  append: GatewayStore['append'] = (batch) => {
    if (batch.events.length === 0) return Promise.resolve();
    let page: ReturnType<typeof toPage>;
    try {
      page = toPage(batch.taskId, batch.events);
    } catch (e) {
      return Promise.reject(e instanceof Error ? e : new Error(String(e)));
    }
    const { bodies, moved } = crossing(page.bodies);
    // Spelled out, not `{ ...rest, ...page }`: object spread with more keys after it takes V8's slow
    // path, about 2 µs a batch (a batch is mostly one event), as much as making the page.
    const crossed: PageBatch = {
      agent: batch.agent,
      taskId: batch.taskId,
      state: batch.state,
      snapshot: batch.snapshot,
      owner: batch.owner,
      firstSeq: page.firstSeq,
      lastSeq: page.lastSeq,
      bodies,
    };
    return this.callWorker('appendPage', [crossed], moved) as Promise<void>;
  };
  getTask: GatewayStore['getTask'] = (...a) => this.call('getTask', ...a);
  listTasks: GatewayStore['listTasks'] = (...a) => this.call('listTasks', ...a);
  countTasks: GatewayStore['countTasks'] = (...a) => this.call('countTasks', ...a);
  /** Pages cross the thread boundary as they are stored (a few long strings clone faster than many rows). */
  readEvents: GatewayStore['readEvents'] = async (agent, taskId, afterSeq, limit) =>
    eventsOfPages(
      (await this.callWorker('readPages', [agent, taskId, afterSeq, limit])) as EventPage[],
      afterSeq,
      limit,
    );
  listOwnedUnfinished: GatewayStore['listOwnedUnfinished'] = (...a) => this.call('listOwnedUnfinished', ...a);
  heartbeat: GatewayStore['heartbeat'] = (...a) => this.call('heartbeat', ...a);
  instances: GatewayStore['instances'] = (...a) => this.call('instances', ...a);
  putPushConfig: GatewayStore['putPushConfig'] = (...a) => this.call('putPushConfig', ...a);
  listPushConfigs: GatewayStore['listPushConfigs'] = (...a) => this.call('listPushConfigs', ...a);
  deletePushConfig: GatewayStore['deletePushConfig'] = (...a) => this.call('deletePushConfig', ...a);
  integrityCheck: GatewayStore['integrityCheck'] = (...a) => this.call('integrityCheck', ...a);
  requestCancel: GatewayStore['requestCancel'] = (...a) => this.call('requestCancel', ...a);
  retain: GatewayStore['retain'] = (...a) => this.call('retain', ...a);
  size: GatewayStore['size'] = (...a) => this.call('size', ...a);
  pruneInstances: GatewayStore['pruneInstances'] = (...a) => this.call('pruneInstances', ...a);

  onRemoteAppend(_listener: AppendListener): void {
    // One process writes a SQLite state folder; its own appends reach subscribers through the EventHub.
  }

  onCancelRequest(_instance: string, _listener: CancelRequestListener): void {
    // One process writes a SQLite state folder: no other instance can ask this one to cancel.
  }

  async close(): Promise<void> {
    if (this.stopped) return;
    try {
      await this.call('close');
    } finally {
      this.stopped = new Error("the gateway's SQLite thread is closed (the store was closed)");
      await this.worker.terminate();
    }
  }
}
