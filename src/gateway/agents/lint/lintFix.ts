/**
 * The lint-fix agent's fixes on one file's text, with ESLint's `Linter` (the `eslint/universal`
 * entry, which bundles into a single file) and a built-in set of fixable rules whose fixes keep
 * behaviour. It runs on the agent's thread (lint/lintWorker.ts), never on the gateway's.
 */
import type { Linter } from 'eslint/universal';
import * as tsParser from '@typescript-eslint/parser';
import { posix } from 'node:path';

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
