/**
 * The lint-fix agent's thread (bundled as dist/gateway-lint.js with ESLint's Linter and the
 * TypeScript parser, so the gateway neither loads nor runs ESLint on its own thread).
 */
import { Linter } from 'eslint/universal';
import { serveThread } from '../threadServer';
import type { LintApi } from './lintApi';
import { lintFix } from './lintFix';

const linter = new Linter({ configType: 'flat' });
const api: LintApi = { lintFix: (text, filename) => lintFix(linter, text, filename) };
serveThread(api);
