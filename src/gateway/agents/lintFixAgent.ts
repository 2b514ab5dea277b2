/**
 * The `lint-fix` built-in agent: ESLint's autofixes over JavaScript and TypeScript files in a
 * throwaway workspace, returned as changes.patch. It needs no model and works offline.
 *
 * It uses ESLint's `Linter` with a built-in set of fixable rules whose fixes keep behaviour
 * (prefer-const, no-var, dot-notation, …: lint/lintFix.ts), on a thread of the built-in agents' pool
 * (lint/lintWorker.ts), never on the gateway's event loop. The repository's own ESLint config is deliberately not loaded: flat configs are JavaScript, and
 * loading one would run repository code (and its plugins) inside the gateway. Formatting is the
 * formatter agent's job, so no stylistic rules are here.
 */
import { existsSync } from 'node:fs';
import { join, posix } from 'node:path';
import { announceScope, interrupted, readWorkspaceFile, targetFiles, writeWorkspaceFile } from './builtinFiles';
import { onThread, sharedThreadPool, stoppedWork } from './builtinThreads';
import type { BuiltinAgentOptions } from './formatterAgent';
import type { LintApi } from './lint/lintApi';
import type { LocalAgent, LocalRunEvent, LocalRunRequest } from './localAgent';
import { runInWorkspace } from './workspaceRun';

const JS = new Set(['.js', '.mjs', '.cjs', '.jsx']);
const TS = new Set(['.ts', '.mts', '.cts', '.tsx']);

const ESLINT_CONFIGS = [
  'eslint.config.js',
  'eslint.config.mjs',
  'eslint.config.cjs',
  'eslint.config.ts',
  'eslint.config.mts',
  '.eslintrc',
  '.eslintrc.js',
  '.eslintrc.cjs',
  '.eslintrc.json',
  '.eslintrc.yml',
  '.eslintrc.yaml',
];
const BUILTIN_DETAIL =
  "Built-in agent: runs on one of the gateway's built-in agent threads, on its throwaway workspace only, and runs no repository code.";

export function createLintFixAgent(opts: BuiltinAgentOptions): LocalAgent {
  return {
    id: 'lint-fix',
    name: 'Lint fixer (ESLint)',
    description:
      "Applies ESLint's safe automatic fixes (prefer-const, no-var, dot-notation, eqeqeq, …) to JavaScript and TypeScript files and returns the result as a patch. Needs no model; works offline.",
    kind: 'builtin',
    maxCapabilities: { write: true, shell: false, network: false },
    skills: [
      {
        id: 'lint-fix',
        name: 'Fix lint problems',
        description:
          'ESLint autofixes over JS and TS files. Scope: the files and folders sent as context; else the paths and globs the task names ("src/", "in src/cart.js", "src/**/*.ts", "except test/"); else every JS/TS file of the repository. The first step says which; a named path that matches nothing is said, and the run fails if none matches.',
        tags: ['lint', 'eslint', 'fix', 'patch'],
        examples: [
          'Fix the lint problems in src/cart.js',
          'Fix lint problems under src/ except src/vendor/',
          'Fix lint problems in the whole repository',
        ],
      },
    ],
    workspaces: opts.manager,
    run: (request, emit) => runLintFix(opts, request, emit),
  };
}

function runLintFix(opts: BuiltinAgentOptions, request: LocalRunRequest, emit: (e: LocalRunEvent) => void) {
  const pool = opts.threads ?? sharedThreadPool();
  return runInWorkspace(request, emit, {
    manager: opts.manager,
    describe: async () => ({ confined: false, detail: BUILTIN_DETAIL }),
    work: (ws) =>
      onThread<LintApi>(pool, 'lint', request, emit, 'fixing', async (thread) => {
        const supports = (p: string) => {
          const ext = posix.extname(p).toLowerCase();
          return JS.has(ext) || TS.has(ext);
        };
        const target = await targetFiles(ws, {
          requested: request.files,
          task: request.task ?? request.prompt,
          roots: request.repoPath ? [request.repoPath] : [],
          supports,
          ignoreFile: '.eslintignore',
        });
        const { files } = target;
        announceScope(target, emit);
        if (target.failure) return { outcome: 'failed', reason: target.failure };
        const own = ESLINT_CONFIGS.find((f) => existsSync(join(ws.dir, f)));
        if (own)
          emit({
            kind: 'step',
            text: `${own} was not loaded: Baton never runs repository code. Built-in safe fixes were applied instead.`,
          });
        const totals: Record<string, number> = {};
        let changedFiles = 0;
        let unparsable = 0;
        for (const rel of files) {
          if (interrupted(request.deadline, request.signal)) return stoppedWork(request, 'fixing');
          const text = await readWorkspaceFile(ws, rel);
          const res = await thread.call('lintFix', text, rel);
          if (res.fatal) {
            unparsable++;
            emit({ kind: 'log', stream: 'stderr', text: `Could not parse ${rel}: ${res.fatal}` });
            continue;
          }
          if (res.output !== text) {
            await writeWorkspaceFile(ws, rel, res.output);
            changedFiles++;
            for (const [rule, count] of Object.entries(res.fixed)) totals[rule] = (totals[rule] ?? 0) + count;
            emit({
              kind: 'step',
              text: `Fixed ${rel}: ${Object.entries(res.fixed)
                .map(([r, c]) => `${r} ×${c}`)
                .join(', ')}`,
            });
          }
        }
        const rules = Object.entries(totals)
          .sort((a, b) => b[1] - a[1])
          .map(([r, c]) => `${r} ×${c}`)
          .join(', ');
        const summary = `ESLint fixed ${changedFiles} of ${files.length} file(s)${rules ? ` (${rules})` : ''}${unparsable ? `; ${unparsable} could not be parsed` : ''}.`;
        return { outcome: 'completed', exitCode: 0, summary };
      }),
  });
}
