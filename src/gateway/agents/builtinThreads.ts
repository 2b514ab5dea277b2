/**
 * The threads the built-in agents do their heavy work on (Prettier, ESLint, the TypeScript language
 * service), so a long job never blocks the gateway's event loop, and the pool that bounds how many
 * run at once.
 *
 * Each job gets its own worker thread, started from its bundle beside dist/gateway.js
 * (`gateway-format.js`, `gateway-lint.js`, `gateway-refactor.js`, scripts/build.mjs) or, under tsx,
 * from the source; the thread is ended when the job ends, so nothing it loaded stays in memory while
 * the gateway is idle. A job beyond the pool's size waits in a queue (first come, first served) and
 * is told so; cancel and the deadline end the thread at once, whatever it is doing.
 */
import { existsSync } from 'node:fs';
import { cpus } from 'node:os';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { interrupted } from './builtinFiles';
import type { LocalRunEvent, LocalRunRequest } from './localAgent';
import type { AgentWork } from './workspaceRun';

/** The built-in agents' thread programs: each bundle's name and its source, relative to this folder. */
const THREADS = {
  format: { bundle: 'gateway-format.js', source: 'format/formatWorker.ts' },
  lint: { bundle: 'gateway-lint.js', source: 'lint/lintWorker.ts' },
  refactor: { bundle: 'gateway-refactor.js', source: 'refactor/refactorWorker.ts' },
} as const;
export type ThreadName = keyof typeof THREADS;

type Fn = (...args: never[]) => unknown;
/** A thread's calls, by method name (the thread side is `serveThread` in threadServer.ts). */
export type ThreadApi<A> = { [K in keyof A]: Fn };
type Args<F> = F extends (...args: infer P) => unknown ? P : never;
type Result<F> = F extends (...args: never[]) => infer R ? Awaited<R> : never;

export interface ThreadCall {
  readonly id: number;
  readonly method: string;
  readonly args: readonly unknown[];
}
export type ThreadReply =
  | { readonly id: number; readonly ok: true; readonly value: unknown }
  | { readonly id: number; readonly ok: false; readonly error: string };

function startWorker(name: ThreadName): Worker {
  const { bundle, source } = THREADS[name];
  // Bundled: beside dist/gateway.js.
  const bundled = join(__dirname, bundle);
  if (existsSync(bundled) || !__filename.endsWith('.ts')) return new Worker(bundled);
  // From source (tests): a worker does not inherit tsx's loader for its entry file; load its hook first.
  const tsx = createRequire(__filename).resolve(['tsx', 'cjs'].join('/'));
  return new Worker(`require(${JSON.stringify(tsx)}); require(${JSON.stringify(join(__dirname, source))});`, {
    eval: true,
  });
}

/** One job's thread: typed calls answered in order, and `stop()`, which ends it at once. */
export class AgentThread<A extends ThreadApi<A>> {
  private readonly worker: Worker;
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  private stopped: Error | undefined;
  private readonly exited: Promise<void>;

  constructor(readonly name: ThreadName) {
    this.worker = startWorker(name);
    this.exited = new Promise((resolve) => this.worker.once('exit', () => resolve()));
    this.worker.on('message', (r: ThreadReply) => {
      const p = this.pending.get(r.id);
      if (!p) return;
      this.pending.delete(r.id);
      if (r.ok) p.resolve(r.value);
      else p.reject(new Error(r.error));
    });
    this.worker.on('error', (e) => this.fail(new Error(`the ${name} thread failed: ${e.message}`)));
    this.worker.on('exit', (code) => this.fail(new Error(`the ${name} thread stopped (exit code ${code})`)));
  }

  call<M extends keyof A & string>(method: M, ...args: Args<A[M]>): Promise<Result<A[M]>> {
    if (this.stopped) return Promise.reject(this.stopped);
    const id = this.nextId++;
    return new Promise<Result<A[M]>>((resolve, reject) => {
      this.pending.set(id, { resolve: (v) => resolve(v as Result<A[M]>), reject });
      const call: ThreadCall = { id, method, args };
      this.worker.postMessage(call);
    });
  }

  /** Ends the thread now; calls in flight reject with `why`. Resolves once it has exited. */
  async stop(why = new Error('stopped')): Promise<void> {
    this.fail(why);
    await this.worker.terminate();
    await this.exited;
  }

  private fail(why: Error): void {
    this.stopped ??= why;
    for (const p of this.pending.values()) p.reject(this.stopped);
    this.pending.clear();
  }
}

/** The default size: leave a core to the gateway itself, and no more than two threads. */
export function defaultThreadCount(cores = cpus().length): number {
  return Math.max(1, Math.min(2, cores - 1));
}

export interface ThreadJob {
  readonly signal: AbortSignal;
  /** Absolute epoch milliseconds. */
  readonly deadline: number;
  /** Called once when the job has to wait: how many jobs are ahead of it and how many threads run. */
  onQueued?(ahead: number, size: number): void;
}

/** Why a job waiting for a thread did not get one. */
export class ThreadWaitEnded extends Error {
  constructor(readonly why: 'canceled' | 'expired') {
    super(
      why === 'canceled' ? 'canceled while waiting for a thread' : 'the deadline passed while waiting for a thread',
    );
    this.name = 'ThreadWaitEnded';
  }
}

export class BuiltinThreadPool {
  readonly size: number;
  private active = 0;
  private readonly queue: Array<() => void> = [];

  constructor(size = defaultThreadCount()) {
    if (!Number.isInteger(size) || size < 1)
      throw new Error(`the built-in agents need at least one thread, not ${size}`);
    this.size = size;
  }

  /** Jobs running on a thread now. */
  get running(): number {
    return this.active;
  }

  /** Jobs waiting for a thread now. */
  get waiting(): number {
    return this.queue.length;
  }

  /**
   * Runs `use` with a thread of its own once one of the pool's slots is free. Cancel and the deadline
   * end the thread at once (the calls in flight reject; the job sees `job.signal` aborted or the
   * deadline past); while waiting they reject with ThreadWaitEnded. The thread is ended when `use` ends.
   */
  async run<A extends ThreadApi<A>, T>(
    name: ThreadName,
    job: ThreadJob,
    use: (thread: AgentThread<A>) => Promise<T>,
  ): Promise<T> {
    await this.acquire(job);
    let thread: AgentThread<A> | undefined;
    const end = (why: Error): void => void thread?.stop(why);
    const onAbort = (): void => end(new Error('canceled'));
    const timer = setTimeout(() => end(new Error('the deadline passed')), Math.max(0, job.deadline - Date.now()));
    job.signal.addEventListener('abort', onAbort, { once: true });
    try {
      if (job.signal.aborted) throw new ThreadWaitEnded('canceled');
      thread = new AgentThread<A>(name);
      return await use(thread);
    } finally {
      clearTimeout(timer);
      job.signal.removeEventListener('abort', onAbort);
      await thread?.stop();
      this.release();
    }
  }

  private acquire(job: ThreadJob): Promise<void> {
    if (job.signal.aborted) return Promise.reject(new ThreadWaitEnded('canceled'));
    if (Date.now() >= job.deadline) return Promise.reject(new ThreadWaitEnded('expired'));
    if (this.active < this.size && !this.queue.length) {
      this.active++;
      return Promise.resolve();
    }
    job.onQueued?.(this.queue.length, this.size);
    return new Promise<void>((resolve, reject) => {
      const granted = (): void => {
        cleanup();
        this.active++;
        resolve();
      };
      const leave = (why: 'canceled' | 'expired'): void => {
        const i = this.queue.indexOf(granted);
        if (i >= 0) this.queue.splice(i, 1);
        cleanup();
        reject(new ThreadWaitEnded(why));
      };
      const onAbort = (): void => leave('canceled');
      const timer = setTimeout(() => leave('expired'), Math.max(0, job.deadline - Date.now()));
      const cleanup = (): void => {
        clearTimeout(timer);
        job.signal.removeEventListener('abort', onAbort);
      };
      job.signal.addEventListener('abort', onAbort, { once: true });
      this.queue.push(granted);
    });
  }

  private release(): void {
    this.active--;
    this.queue.shift()?.();
  }
}

let shared: BuiltinThreadPool | undefined;
/** The pool built-in agents made without one share (a gateway passes its own: discover.ts). */
export function sharedThreadPool(): BuiltinThreadPool {
  shared ??= new BuiltinThreadPool();
  return shared;
}

/** The status step a job that waits for a thread shows. */
export function queuedStep(ahead: number, size: number): string {
  return `Waiting for a free built-in agent thread: all ${size} are busy${ahead ? ` and ${ahead} task(s) are waiting ahead of this one` : ''}. It starts as soon as one is free.`;
}

/** What a run says when it was stopped, before or while it worked. */
export function stoppedWork(request: LocalRunRequest, doing: string): AgentWork {
  const stop = interrupted(request.deadline, request.signal) ?? 'canceled';
  return { outcome: stop, reason: stop === 'canceled' ? 'Canceled.' : `The deadline passed while ${doing}.` };
}

/**
 * `work` on a thread of `pool`, saying so when it has to wait for one; a cancel or the deadline
 * (while waiting, or ending the thread mid-call) is the run's outcome, not a failure.
 */
export async function onThread<A extends ThreadApi<A>>(
  pool: BuiltinThreadPool,
  name: ThreadName,
  request: LocalRunRequest,
  emit: (e: LocalRunEvent) => void,
  doing: string,
  work: (thread: AgentThread<A>) => Promise<AgentWork>,
): Promise<AgentWork> {
  try {
    return await pool.run<A, AgentWork>(
      name,
      {
        signal: request.signal,
        deadline: request.deadline,
        onQueued: (ahead, size) => emit({ kind: 'step', text: queuedStep(ahead, size) }),
      },
      work,
    );
  } catch (e) {
    if (e instanceof ThreadWaitEnded || interrupted(request.deadline, request.signal))
      return stoppedWork(request, doing);
    throw e;
  }
}
