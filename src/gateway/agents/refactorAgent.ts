/**
 * The `refactor` built-in agent: renames a symbol across the repository, organises imports, and
 * applies the safe combined code fixes of the TypeScript language service, on JavaScript and
 * TypeScript, in a throwaway workspace; the result is changes.patch. It needs no model, works offline
 * and runs no repository code.
 *
 * The language service runs on a thread of the built-in agents' pool (builtinThreads.ts,
 * refactor/refactorWorker.ts): a long job never blocks the gateway, a job beyond the pool's size
 * waits and says so, and cancel or the deadline end the thread at once. Every step
 * is reported as it happens. When a name has several declarations it asks which one (input-required)
 * and goes on with the reply. `paceMs` (the gateway's --agent-pace-ms) waits between steps so a
 * person can watch the steps stream and press Cancel on a small repository; it is a setting, off by
 * default, and the first step says when it is on.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { posix } from 'node:path';
import type { Workspace, WorkspaceManager } from '../workspace/workspaceManager';
import { interrupted, targetFiles, writeWorkspaceFile } from './builtinFiles';
import type { TargetFiles } from './builtinFiles';
import type { LocalAgent, LocalRunEvent, LocalRunRequest, LocalRunResult } from './localAgent';
import type { Candidate, FileEdit } from './refactor/languageService';
import { ambiguityQuestion, parseRefactorRequest, pickCandidate, scopeText } from './refactor/refactorRequest';
import type { RefactorOp, RefactorRequest } from './refactor/refactorRequest';
import type { WorkerApi } from './refactor/workerClient';
import type { AgentThread, BuiltinThreadPool } from './builtinThreads';
import { onThread, sharedThreadPool } from './builtinThreads';
import type { AgentWork } from './workspaceRun';
import { runInWorkspace } from './workspaceRun';

const JS_TS = new Set(['.js', '.mjs', '.cjs', '.jsx', '.ts', '.mts', '.cts', '.tsx']);
const BUILTIN_DETAIL =
  'Built-in agent: the TypeScript language service in a worker thread, on its throwaway workspace only; it runs no repository code.';
/** Replies that name no candidate before the agent stops asking. */
const MAX_ASKS = 5;
/** Rounds of fixes per file (each fix can make another one apply). */
const MAX_FIX_ROUNDS = 10;

export interface RefactorAgentOptions {
  readonly manager: WorkspaceManager;
  /** Milliseconds to wait between steps (0: none). */
  readonly paceMs?: number;
  /** The threads it works on (default: one pool shared by the built-in agents made without one). */
  readonly threads?: BuiltinThreadPool;
}

export function createRefactorAgent(opts: RefactorAgentOptions): LocalAgent {
  return {
    id: 'refactor',
    name: 'Refactor (TypeScript)',
    description:
      'Renames symbols across the repository, organises imports and applies safe fixes with the TypeScript language service, on JavaScript and TypeScript, and returns the result as a patch. Asks when a name is ambiguous. Needs no model; works offline.',
    kind: 'builtin',
    maxCapabilities: { write: true, shell: false, network: false },
    skills: [
      {
        id: 'rename',
        name: 'Rename a symbol',
        description:
          'Renames a function, class, variable, type, … and every reference to it in the repository (imports and exports included). When several declarations have that name it asks which one.',
        tags: ['refactor', 'rename', 'typescript', 'javascript', 'patch'],
        examples: ['rename calculateTotal to computeTotal', 'rename `Cart` to `Basket` in src/cart.js'],
      },
      {
        id: 'organize-imports',
        name: 'Organise imports',
        description: 'Sorts and merges imports and removes unused ones in the files in scope.',
        tags: ['refactor', 'imports', 'typescript', 'javascript', 'patch'],
        examples: ['organise imports in src/', 'organize imports in src/**/*.ts'],
      },
      {
        id: 'fix-all',
        name: 'Fix all',
        description:
          "Applies the language service's combined code fixes that keep intent: unused declarations and imports, missing await, unreachable code, unused labels, NaN comparisons. Type-based fixes need TypeScript (or // @ts-check in JavaScript).",
        tags: ['refactor', 'fix', 'typescript', 'javascript', 'patch'],
        examples: ['fix all', 'fix all in src/report.ts', 'organise imports and fix all in src/'],
      },
    ],
    workspaces: opts.manager,
    run: (request, emit) => runRefactor(opts, request, emit),
  };
}

async function runRefactor(
  opts: RefactorAgentOptions,
  request: LocalRunRequest,
  emit: (e: LocalRunEvent) => void,
): Promise<LocalRunResult> {
  // The task as the user wrote it: the text of the context parts is neither an operation nor a scope.
  const task = request.task ?? request.prompt;
  const parsed = parseRefactorRequest(task);
  if ('error' in parsed) return { outcome: 'failed', reason: parsed.error, patch: '' };
  const pool = opts.threads ?? sharedThreadPool();
  return runInWorkspace(request, emit, {
    manager: opts.manager,
    describe: async () => ({ confined: false, detail: BUILTIN_DETAIL }),
    work: (ws) =>
      onThread<WorkerApi>(pool, 'refactor', request, emit, 'refactoring', async (thread) => {
        const job = new Job(ws, request, emit, thread, opts.paceMs ?? 0);
        try {
          return await job.run(parsed, scopeText(task));
        } catch (e) {
          if (interrupted(request.deadline, request.signal)) return stopped(request);
          throw e;
        }
        // Stopped while it waited for a thread: said as the agent says it.
      }).then((work) => (work.outcome === 'canceled' || work.outcome === 'expired' ? stopped(request) : work)),
  });
}

function stopped(request: LocalRunRequest): AgentWork {
  const why = interrupted(request.deadline, request.signal) ?? 'canceled';
  return {
    outcome: why,
    reason:
      why === 'canceled'
        ? 'Canceled; nothing was changed.'
        : 'The deadline passed before the refactoring was done; nothing was changed.',
  };
}

class Stop extends Error {}

/** One run: the scope, the project, the operations, each step reported (and paced). */
class Job {
  private changed = new Set<string>();

  constructor(
    private readonly ws: Workspace,
    private readonly request: LocalRunRequest,
    private readonly emit: (e: LocalRunEvent) => void,
    private readonly thread: AgentThread<WorkerApi>,
    private readonly paceMs: number,
  ) {}

  async run(parsed: RefactorRequest, scopeText: string): Promise<AgentWork> {
    try {
      return await this.work(parsed, scopeText);
    } catch (e) {
      if (e instanceof Stop) return stopped(this.request);
      throw e;
    }
  }

  private async work(parsed: RefactorRequest, scopeText: string): Promise<AgentWork> {
    const supports = (p: string): boolean => JS_TS.has(posix.extname(p).toLowerCase());
    // The project is every JS/TS file (references reach beyond the scope); the scope is what is worked on.
    const all = (await targetFiles(this.ws, { requested: [], supports })).files;
    const target = await targetFiles(this.ws, {
      requested: this.request.files,
      task: scopeText,
      roots: this.request.repoPath ? [this.request.repoPath] : [],
      supports,
    });
    const pacing =
      this.paceMs > 0
        ? ` Pacing is on: ${this.paceMs} ms between steps (the gateway's --agent-pace-ms), so the steps can be followed.`
        : '';
    await this.step(`${describeOps(parsed.ops)}. ${target.scope}.${pacing}`);
    // What announceScope says for the other agents, as paced steps.
    for (const note of target.notes) await this.step(note);
    for (const s of target.skipped) await this.step(`Skipped ${s}`);
    if (target.failure) return { outcome: 'failed', reason: target.failure };
    if (!all.length)
      return {
        outcome: 'completed',
        exitCode: 0,
        summary: 'The repository has no JavaScript or TypeScript files: nothing to do.',
      };
    const scope = { files: target.files, narrowed: narrows(target, all) };

    await this.step(
      `Loading the project: ${all.length} JavaScript/TypeScript file(s) found, ${scope.files.length} in scope.`,
    );
    const started = Date.now();
    const sources = await this.guard(this.thread.call('open', this.ws.dir, all));
    await this.step(
      `TypeScript language service ready in ${Date.now() - started} ms (${sources} source files with the standard library).`,
    );

    const summaries: string[] = [];
    for (const op of parsed.ops) {
      const s =
        op.kind === 'rename'
          ? await this.rename(op, scope)
          : op.kind === 'fix-all'
            ? await this.fixAll(scope.files)
            : await this.organize(scope.files);
      if (typeof s !== 'string') return s;
      summaries.push(s);
    }
    return {
      outcome: 'completed',
      exitCode: 0,
      summary: `${summaries.join(' ')}${this.changed.size ? '' : ' Nothing needed changing.'}`,
    };
  }

  private async rename(
    op: Extract<RefactorOp, { kind: 'rename' }>,
    scope: { files: readonly string[]; narrowed: boolean },
  ): Promise<string | AgentWork> {
    await this.step(`Looking for declarations of "${op.from}"${scope.narrowed ? ' in the scope' : ''}.`);
    const found = await this.guard(
      this.thread.call('declarationsOf', op.from, scope.narrowed ? scope.files : undefined),
    );
    if (!found.length)
      return {
        outcome: 'failed',
        reason: `No declaration named "${op.from}" was found ${scope.narrowed ? 'in the scope' : 'in the repository'}. Check the spelling (names are case-sensitive)${scope.narrowed ? ', or name no files to search the whole repository' : ''}.`,
      };
    const target = found.length === 1 ? found[0] : await this.choose(op, found);
    if ('outcome' in target) return target;
    const clash = (await this.guard(this.thread.call('declarationsOf', op.to, undefined)))[0];
    if (clash)
      return {
        outcome: 'failed',
        reason: `"${op.to}" is already declared at ${clash.file}:${clash.line} (${clash.kind}); renaming to it could change what the code refers to. Choose another name.`,
      };
    await this.step(
      `Renaming ${target.kind} "${op.from}" at ${target.file}:${target.line} to "${op.to}" and every reference to it.`,
    );
    let edits: FileEdit[];
    try {
      edits = await this.guard(this.thread.call('rename', target.file, target.pos, op.to));
    } catch (e) {
      if (e instanceof Stop) throw e;
      return { outcome: 'failed', reason: `"${op.from}" at ${target.file}:${target.line}: ${(e as Error).message}.` };
    }
    let places = 0;
    for (const edit of edits) {
      await this.write(edit);
      places += edit.places;
      await this.step(`Renamed in ${edit.file} (${edit.places} place${edit.places === 1 ? '' : 's'}).`);
    }
    const outside = scope.narrowed ? edits.filter((e) => !scope.files.includes(e.file)).map((e) => e.file) : [];
    return `Renamed "${op.from}" to "${op.to}": ${places} place(s) in ${edits.length} file(s)${outside.length ? ` (${list(outside)} outside the scope, because they refer to it)` : ''}.`;
  }

  /** Asks which declaration is meant until a reply names one (bounded). */
  private async choose(
    op: Extract<RefactorOp, { kind: 'rename' }>,
    found: readonly Candidate[],
  ): Promise<Candidate | AgentWork> {
    const question = ambiguityQuestion(op.from, op.to, found);
    if (!this.request.ask)
      return {
        outcome: 'failed',
        reason: `${question}\n(Nobody can answer here: name the file in the task, e.g. "rename ${op.from} to ${op.to} in ${found[0].file}".)`,
      };
    let prompt = question;
    for (let i = 0; i < MAX_ASKS; i++) {
      const reply = await this.untilStopped(this.request.ask(prompt));
      const picked = pickCandidate(reply, found);
      if ('index' in picked) {
        const c = found[picked.index];
        await this.step(`Reply "${reply.trim().slice(0, 80)}": ${c.file}:${c.line} (${c.kind}).`);
        return c;
      }
      prompt = `That did not pick one: ${picked.why}.\n\n${question}`;
    }
    return {
      outcome: 'failed',
      reason: `No reply named one of the ${found.length} declarations of "${op.from}" after ${MAX_ASKS} tries; start again and name the file, e.g. "rename ${op.from} to ${op.to} in ${found[0].file}".`,
    };
  }

  private async organize(files: readonly string[]): Promise<string> {
    await this.step(`Organising imports in ${files.length} file(s).`);
    let n = 0;
    for (const f of files) {
      this.check();
      const edit = await this.guard(this.thread.call('organizeImports', f));
      if (!edit) continue;
      await this.write(edit);
      n++;
      await this.step(`Organised imports in ${f}.`);
    }
    return `Organised imports in ${n} of ${files.length} file(s).`;
  }

  private async fixAll(files: readonly string[]): Promise<string> {
    await this.step(`Looking for fixable problems in ${files.length} file(s).`);
    const applied = new Map<string, number>();
    let fixedFiles = 0;
    for (const f of files) {
      this.check();
      const done = new Set<string>();
      for (let round = 0; round < MAX_FIX_ROUNDS; round++) {
        const next = (await this.guard(this.thread.call('fixesFor', f))).find((s) => !done.has(s.fixId));
        if (!next) break;
        done.add(next.fixId);
        const edits = await this.guard(this.thread.call('applyFix', f, next.fixId));
        if (!edits.length) continue;
        for (const e of edits) await this.write(e);
        applied.set(next.description, (applied.get(next.description) ?? 0) + next.count);
        await this.step(`${f}: ${next.description} (${next.count} edit${next.count === 1 ? '' : 's'}).`);
      }
      if (done.size) fixedFiles++;
    }
    const what = [...applied].map(([d, c]) => `${d.replace(/^\w/, (x) => x.toLowerCase())} ×${c}`).join(', ');
    return applied.size
      ? `Fixed ${fixedFiles} of ${files.length} file(s): ${what}.`
      : `No fixable problems in ${files.length} file(s).`;
  }

  private async write(edit: FileEdit): Promise<void> {
    this.check();
    await writeWorkspaceFile(this.ws, edit.file, edit.text);
    this.changed.add(edit.file);
  }

  /** Reports a step, then waits the pace (cancel and the deadline cut the wait short). */
  private async step(text: string): Promise<void> {
    this.check();
    this.emit({ kind: 'step', text });
    if (this.paceMs <= 0) return;
    const left = this.request.deadline - Date.now();
    try {
      await sleep(Math.max(0, Math.min(this.paceMs, left)), undefined, { signal: this.request.signal });
    } catch {
      throw new Stop();
    }
    this.check();
  }

  /** `p`, unless the run is canceled or its deadline passes first (then Stop). */
  private untilStopped<T>(p: Promise<T>): Promise<T> {
    const { signal, deadline } = this.request;
    return new Promise<T>((resolve, reject) => {
      const stop = (): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', stop);
        reject(new Stop());
      };
      const timer = setTimeout(stop, Math.max(0, deadline - Date.now()));
      signal.addEventListener('abort', stop, { once: true });
      p.then(
        (v) => {
          clearTimeout(timer);
          signal.removeEventListener('abort', stop);
          resolve(v);
        },
        () => stop(),
      );
    });
  }

  private check(): void {
    if (interrupted(this.request.deadline, this.request.signal)) throw new Stop();
  }

  /** A call to the thread; when it fails because the run was stopped, that is what is reported. */
  private async guard<T>(p: Promise<T>): Promise<T> {
    try {
      return await p;
    } catch (e) {
      if (interrupted(this.request.deadline, this.request.signal)) throw new Stop();
      throw e;
    }
  }
}

/**
 * Whether the scope is less than the whole project, so a rename looks for declarations in it only:
 * files sent or named, or the whole repository but for what the task leaves out.
 */
function narrows(target: TargetFiles, project: readonly string[]): boolean {
  return target.source !== 'repository' || target.files.length < project.length;
}

function describeOps(ops: readonly RefactorOp[]): string {
  return ops
    .map((op) =>
      op.kind === 'rename'
        ? `Rename "${op.from}" to "${op.to}"`
        : op.kind === 'fix-all'
          ? 'Fix all (safe combined code fixes)'
          : 'Organise imports',
    )
    .join(', then ');
}

function list(files: readonly string[]): string {
  return files.length > 5 ? `${files.slice(0, 5).join(', ')} and ${files.length - 5} more` : files.join(', ');
}
