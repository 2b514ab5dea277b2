/**
 * The agent's side of its language-service thread: typed calls answered in order, a start on first
 * use (the bundle beside dist/gateway.js, or the source through tsx), and `stop()`, which ends the
 * thread at once whatever it is doing (cancel and the deadline do not wait for a long job).
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { ProjectService } from './languageService';

/** The calls the thread answers: `open`, then the project's own methods. */
export interface WorkerApi {
  open(root: string, files: readonly string[]): number;
  declarationsOf: ProjectService['declarationsOf'];
  rename: ProjectService['rename'];
  organizeImports(file: string): ReturnType<ProjectService['organizeImports']> | null;
  fixesFor: ProjectService['fixesFor'];
  applyFix: ProjectService['applyFix'];
}

type Method = keyof WorkerApi;
export type WorkerCall = {
  [M in Method]: { readonly id: number; readonly method: M; readonly args: Parameters<WorkerApi[M]> };
}[Method];
export type WorkerReply =
  | { readonly id: number; readonly ok: true; readonly value: unknown }
  | { readonly id: number; readonly ok: false; readonly error: string };

function startWorker(): Worker {
  // Bundled: dist/gateway-refactor.js beside dist/gateway.js (scripts/build.mjs).
  const bundled = join(__dirname, 'gateway-refactor.js');
  if (existsSync(bundled) || !__filename.endsWith('.ts')) return new Worker(bundled);
  // From source (tests): a worker does not inherit tsx's loader for its entry file; load its hook first.
  const tsx = createRequire(__filename).resolve(['tsx', 'cjs'].join('/'));
  const source = join(__dirname, 'refactorWorker.ts');
  return new Worker(`require(${JSON.stringify(tsx)}); require(${JSON.stringify(source)});`, { eval: true });
}

export class LanguageServiceThread {
  private readonly worker = startWorker();
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  private stopped: Error | undefined;

  constructor() {
    this.worker.on('message', (r: WorkerReply) => {
      const p = this.pending.get(r.id);
      if (!p) return;
      this.pending.delete(r.id);
      if (r.ok) p.resolve(r.value);
      else p.reject(new Error(r.error));
    });
    this.worker.on('error', (e) => this.fail(new Error(`the language service thread failed: ${e.message}`)));
    this.worker.on('exit', (code) => this.fail(new Error(`the language service thread stopped (exit code ${code})`)));
  }

  call<M extends Method>(method: M, ...args: Parameters<WorkerApi[M]>): Promise<ReturnType<WorkerApi[M]>> {
    if (this.stopped) return Promise.reject(this.stopped);
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.worker.postMessage({ id, method, args } as WorkerCall);
    });
  }

  /** Ends the thread now; calls in flight reject with `why`. */
  async stop(why = new Error('stopped')): Promise<void> {
    this.fail(why);
    await this.worker.terminate();
  }

  private fail(why: Error): void {
    this.stopped ??= why;
    for (const p of this.pending.values()) p.reject(this.stopped);
    this.pending.clear();
  }
}
