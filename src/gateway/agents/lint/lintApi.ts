/** The calls the lint-fix agent's thread answers (lint/lintWorker.ts). */
import type { LintFixResult } from './lintFix';

export interface LintApi {
  /** The built-in fixes applied to one file's text. */
  lintFix(text: string, filename: string): LintFixResult;
}
