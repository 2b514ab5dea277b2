// One esbuild build per target: the extension (Node, `vscode` external), the delegation panel (browser),
// the gateway (a Node program), and the integration suite that runs inside VS Code's extension host.
// Type-checking is separate (`npm run typecheck`). Prints each bundle's size at the end.
import * as esbuild from 'esbuild';
import { cpSync, mkdirSync, readdirSync, statSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const production = process.argv.includes('--production');
const watch = process.argv.includes('--watch');
const minify = !process.argv.includes('--no-minify');

/** @type {esbuild.BuildOptions} */
const common = {
  bundle: true,
  minify,
  sourcemap: production ? false : 'linked',
  legalComments: 'none',
  logLevel: 'warning',
  absWorkingDir: root,
};

/** @type {Record<string, esbuild.BuildOptions>} */
const targets = {
  extension: {
    ...common,
    entryPoints: ['src/extension/extension.ts'],
    outfile: 'dist/extension.js',
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    // dist/net.js (undici) is its own bundle, required on first use (src/extension/lazy.ts).
    external: ['vscode', './net.js'],
  },
  net: {
    ...common,
    entryPoints: ['src/extension/net.ts'],
    outfile: 'dist/net.js',
    platform: 'node',
    format: 'cjs',
    target: 'node20',
  },
  webview: {
    ...common,
    entryPoints: ['src/webview/main.ts'],
    outfile: 'dist/webview/panel.js',
    platform: 'browser',
    format: 'esm',
    target: 'es2022',
  },
  baton: {
    ...common,
    entryPoints: ['src/gateway/batonCli.ts'],
    outfile: 'dist/baton.js',
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    banner: { js: '#!/usr/bin/env node' },
  },
  gatewaySqlite: {
    ...common,
    // The gateway's SQLite thread (src/gateway/store/sqliteWorkerStore.ts finds it beside dist/gateway.js).
    entryPoints: ['src/gateway/store/sqliteWorker.ts'],
    outfile: 'dist/gateway-sqlite.js',
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    external: ['better-sqlite3'],
  },
  gatewayFormat: {
    ...common,
    // The formatter agent's thread, with Prettier's standalone build and plugins: started per job
    // (src/gateway/agents/builtinThreads.ts), never at startup.
    entryPoints: ['src/gateway/agents/format/formatWorker.ts'],
    outfile: 'dist/gateway-format.js',
    platform: 'node',
    format: 'cjs',
    target: 'node20',
  },
  gatewayLint: {
    ...common,
    // The lint-fix agent's thread, with ESLint's Linter and the TypeScript parser.
    entryPoints: ['src/gateway/agents/lint/lintWorker.ts'],
    outfile: 'dist/gateway-lint.js',
    platform: 'node',
    format: 'cjs',
    target: 'node20',
  },
  gatewayRefactor: {
    ...common,
    // The refactoring agent's language-service thread, with the TypeScript compiler (several MB):
    // started per job (src/gateway/agents/builtinThreads.ts), never at startup.
    entryPoints: ['src/gateway/agents/refactor/refactorWorker.ts'],
    outfile: 'dist/gateway-refactor.js',
    platform: 'node',
    format: 'cjs',
    target: 'node20',
  },
  gateway: {
    ...common,
    entryPoints: ['src/gateway/cli.ts'],
    outfile: 'dist/gateway.js',
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    banner: { js: '#!/usr/bin/env node' },
    // Native and optional drivers stay outside the bundle: the gateway picks its store at run time
    // (node:sqlite on Node >= 22.13, better-sqlite3 on Node 20, pg for teams).
    external: ['better-sqlite3', 'pg-native', '@grpc/grpc-js', '@bufbuild/protobuf', 'mysql2'],
  },
};

if (!production && !process.argv.includes('--no-tests')) {
  targets.integration = {
    ...common,
    minify: false,
    // One bundle per test file (mocha loads them by path); npm packages stay external and load from
    // node_modules, our own modules (test servers, src/ helpers) are bundled in.
    packages: 'external',
    entryPoints: ['test/integration/suite/index.ts', 'test/integration/suite/*.test.ts'],
    outdir: 'out/test/integration',
    platform: 'node',
    format: 'cjs',
    target: 'node20',
  };
}

function copyAssets() {
  // Codicons for the panel: served from dist/webview so localResourceRoots stays bundle + media.
  mkdirSync(join(root, 'dist/webview'), { recursive: true });
  for (const f of ['codicon.css', 'codicon.ttf']) {
    cpSync(join(root, 'node_modules/@vscode/codicons/dist', f), join(root, 'dist/webview', f));
  }
  // The standard library declarations the refactoring agent's language service reads (dist/ts-lib).
  const tsLib = join(root, 'node_modules/typescript/lib');
  mkdirSync(join(root, 'dist/ts-lib'), { recursive: true });
  for (const f of readdirSync(tsLib)) {
    if (/^lib\..*\.d\.ts$/.test(f)) cpSync(join(tsLib, f), join(root, 'dist/ts-lib', f));
  }
}

const kb = (f) => (statSync(join(root, f)).size / 1024).toFixed(1) + ' KB';

if (watch) {
  copyAssets();
  for (const [name, opts] of Object.entries(targets)) {
    const ctx = await esbuild.context(opts);
    await ctx.watch();
    console.log(`watching ${name}`);
  }
} else {
  rmSync(join(root, 'dist'), { recursive: true, force: true });
  // `npm run package` writes out/baton.vsix, and vsce does not create the folder on a fresh checkout.
  mkdirSync(join(root, 'out'), { recursive: true });
  copyAssets();
  await Promise.all(Object.values(targets).map((t) => esbuild.build(t)));
  console.log(`bundles${minify ? ' (minified)' : ''}:`);
  console.log(
    `  extension  dist/extension.js      ${kb('dist/extension.js')}  (+ dist/net.js ${kb('dist/net.js')}, loaded on first fetch)`,
  );
  console.log(`  webview    dist/webview/panel.js  ${kb('dist/webview/panel.js')}`);
  console.log(
    `  gateway    dist/gateway.js        ${kb('dist/gateway.js')}  (+ the built-in agents' threads, started per job: dist/gateway-format.js ${kb('dist/gateway-format.js')}, dist/gateway-lint.js ${kb('dist/gateway-lint.js')}, dist/gateway-refactor.js ${kb('dist/gateway-refactor.js')})`,
  );
}
