/**
 * The `lint-fix` built-in agent: ESLint's autofixes over JavaScript and TypeScript files in a
 * throwaway workspace, returned as changes.patch. It needs no model and works offline.
 *
 * It uses ESLint's `Linter` (the `eslint/universal` entry, which bundles into a single file) with a
 * built-in set of fixable rules whose fixes keep behaviour (prefer-const, no-var, dot-notation, …).
 * The repository's own ESLint config is deliberately not loaded: flat configs are JavaScript, and
 * loading one would run repository code (and its plugins) inside the gateway. Formatting is the
 * formatter agent's job, so no stylistic rules are here.
 */
import { Linter } from 'eslint/universal';
import * as tsParser from '@typescript-eslint/parser';
import { existsSync } from 'node:fs';
import { join, posix } from 'node:path';
import type { WorkspaceManager } from '../workspace/workspaceManager';
import { announceScope, interrupted, readWorkspaceFile, targetFiles, writeWorkspaceFile } from './builtinFiles';
import type { LocalAgent, LocalRunEvent, LocalRunRequest } from './localAgent';
import { runInWorkspace } from './workspaceRun';

const JS = new Set(['.js', '.mjs', '.cjs', '.jsx']);
const TS = new Set(['.ts', '.mts', '.cts', '.tsx']);

/** Fixable core rules whose fixes do not change what the code does. */
export const LINT_FIX_RULES: Linter.RulesRecord = {
  'prefer-const': ['error', { destructuring: 'all' }],
  'no-var': 'error',
  'object-shorthand': ['error', 'properties'],
  'dot-notation': 'error',
  'no-extra-boolean-cast': 'error',
  'no-useless-rename': 'error',
  'no-unneeded-ternary': 'error',
  yoda: 'error',
  'no-else-return': ['error', { allowElseIf: false }],
  'no-lonely-if': 'error',
  'operator-assignment': 'error',
  'prefer-exponentiation-operator': 'error',
  'no-useless-computed-key': 'error',
  'no-regex-spaces': 'error',
  'prefer-object-spread': 'error',
  'no-extra-bind': 'error',
  'no-unused-labels': 'error',
  'no-useless-return': 'error',
  'no-undef-init': 'error',
  eqeqeq: ['error', 'always', { null: 'ignore' }],
  curly: ['error', 'multi-line'],
  'prefer-arrow-callback': 'error',
  'unicode-bom': ['error', 'never'],
};

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
  'Built-in agent: runs inside the gateway on its throwaway workspace only and runs no repository code.';

function configFor(sourceType: 'module' | 'commonjs' | 'script'): Linter.Config[] {
  const languageOptions = {
    ecmaVersion: 'latest' as const,
    sourceType,
    parserOptions: { ecmaFeatures: { jsx: true } },
  };
  return [
    { linterOptions: { reportUnusedDisableDirectives: 'off' } },
    { files: ['**/*.js', '**/*.mjs', '**/*.cjs', '**/*.jsx'], languageOptions, rules: LINT_FIX_RULES },
    {
      files: ['**/*.ts', '**/*.mts', '**/*.cts', '**/*.tsx'],
      languageOptions: { ...languageOptions, parser: tsParser as Linter.Parser },
      rules: LINT_FIX_RULES,
    },
  ];
}

export interface LintFixResult {
  readonly output: string;
  readonly fixed: Record<string, number>;
  readonly fatal?: string;
}

/** Applies the built-in fixes to one file's text. */
export function lintFix(linter: Linter, text: string, filename: string): LintFixResult {
  const ext = posix.extname(filename).toLowerCase();
  const types: ('module' | 'commonjs' | 'script')[] =
    ext === '.cjs' ? ['commonjs'] : ext === '.mjs' || TS.has(ext) ? ['module'] : ['module', 'commonjs'];
  let fatal: string | undefined;
  for (const sourceType of types) {
    const config = configFor(sourceType);
    const before = linter.verify(text, config, { filename });
    const parseError = before.find((m) => m.fatal);
    if (parseError) {
      fatal = `${parseError.line}:${parseError.column} ${parseError.message}`;
      continue;
    }
    const fixed: Record<string, number> = {};
    for (const m of before) if (m.fix && m.ruleId) fixed[m.ruleId] = (fixed[m.ruleId] ?? 0) + 1;
    const res = linter.verifyAndFix(text, config, { filename });
    return { output: res.fixed ? res.output : text, fixed };
  }
  return { output: text, fixed: {}, fatal };
}

export function createLintFixAgent(opts: { readonly manager: WorkspaceManager }): LocalAgent {
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
    run: (request, emit) => runLintFix(opts.manager, request, emit),
  };
}

async function runLintFix(manager: WorkspaceManager, request: LocalRunRequest, emit: (e: LocalRunEvent) => void) {
  return runInWorkspace(request, emit, {
    manager,
    describe: async () => ({ confined: false, detail: BUILTIN_DETAIL }),
    work: async (ws) => {
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
      const linter = new Linter({ configType: 'flat' });
      const totals: Record<string, number> = {};
      let changedFiles = 0;
      let unparsable = 0;
      for (const rel of files) {
        const stop = interrupted(request.deadline, request.signal);
        if (stop)
          return { outcome: stop, reason: stop === 'canceled' ? 'Canceled.' : 'The deadline passed while fixing.' };
        const text = await readWorkspaceFile(ws, rel);
        const res = lintFix(linter, text, rel);
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
    },
  });
}
