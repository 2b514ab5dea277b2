/**
 * The `baton` command in VS Code's terminals. The `.vsix` carries the CLI as `dist/baton.js`, not as
 * an npm `bin`, so the extension writes a small launcher into its own storage and puts that folder on
 * the integrated terminal's PATH: `baton` runs the CLI on the runtime VS Code itself runs on (Electron
 * as Node, so no Node needs to be installed), against the same local gateway the window uses.
 */
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface CliLauncher {
  readonly name: string;
  readonly text: string;
}

/** `'…'` for sh: everything literal, a `'` closed, escaped and reopened. */
function shQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/** `"…"` for cmd.exe: Windows paths hold no `"`; a `%` would expand, so it is doubled. */
function cmdQuote(s: string): string {
  return `"${s.replace(/%/g, '%%')}"`;
}

/**
 * The launchers for one platform: `baton` (sh) everywhere but Windows, `baton.cmd` there. Both pass
 * every argument through untouched (`"$@"`, `%*`) and keep `ELECTRON_RUN_AS_NODE` to themselves.
 */
export function cliLaunchers(runtime: string, script: string, platform: NodeJS.Platform): CliLauncher[] {
  if (platform === 'win32')
    return [
      {
        name: 'baton.cmd',
        text: [
          '@echo off',
          'setlocal',
          'set ELECTRON_RUN_AS_NODE=1',
          `${cmdQuote(runtime)} ${cmdQuote(script)} %*`,
          '',
        ].join('\r\n'),
      },
    ];
  return [
    {
      name: 'baton',
      text: ['#!/bin/sh', `ELECTRON_RUN_AS_NODE=1 exec ${shQuote(runtime)} ${shQuote(script)} "$@"`, ''].join('\n'),
    },
  ];
}

/** Writes the launchers into `dir` (only when they changed) and returns `dir`, ready to go on PATH. */
export function writeCliLaunchers(
  dir: string,
  runtime: string,
  script: string,
  platform: NodeJS.Platform = process.platform,
): string {
  mkdirSync(dir, { recursive: true });
  for (const l of cliLaunchers(runtime, script, platform)) {
    const file = join(dir, l.name);
    let current: string | undefined;
    try {
      current = readFileSync(file, 'utf8');
    } catch {
      current = undefined;
    }
    if (current === l.text) continue;
    writeFileSync(file, l.text, { mode: 0o755 });
    // `mode` applies only to a new file: one rewritten in place keeps its old mode.
    if (platform !== 'win32') chmodSync(file, 0o755);
  }
  return dir;
}

/** The command line and environment of Baton's MCP server (`baton mcp`), as VS Code's agent sessions start it. */
export interface McpServerCommand {
  readonly command: string;
  readonly args: string[];
  readonly env: Record<string, string>;
}

/**
 * `baton mcp` on the runtime the launchers use (`ELECTRON_RUN_AS_NODE=1 <runtime> <script> mcp`),
 * against the local gateway of `gatewayStateDir`, unless the user's environment names another state
 * folder or a gateway (`BATON_STATE_DIR`, `BATON_GATEWAY`): then those are passed on.
 */
export function mcpServerCommand(
  runtime: string,
  script: string,
  gatewayStateDir: string,
  env: NodeJS.ProcessEnv = process.env,
): McpServerCommand {
  return {
    command: runtime,
    args: [script, 'mcp'],
    env: {
      ELECTRON_RUN_AS_NODE: '1',
      BATON_STATE_DIR: env.BATON_STATE_DIR || gatewayStateDir,
      ...(env.BATON_GATEWAY ? { BATON_GATEWAY: env.BATON_GATEWAY } : {}),
    },
  };
}
