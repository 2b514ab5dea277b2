/** A Windows (or POSIX) machine made of a few files, for lookup and launch tests on any OS. */
import path from 'node:path';
import type { Host } from '../../../src/gateway/harness/host';

/** `files`: path → text; Windows paths compare case-insensitively, like NTFS. */
export function fakeHost(
  platform: 'win32' | 'linux',
  files: Record<string, string>,
  env: NodeJS.ProcessEnv = {},
): Host & { readonly reads: string[] } {
  const key = (p: string) => (platform === 'win32' ? p.toLowerCase() : p);
  const byKey = new Map(Object.entries(files).map(([p, text]) => [key(p), text]));
  const reads: string[] = [];
  return {
    platform,
    env,
    path: platform === 'win32' ? path.win32 : path.posix,
    isExecutableFile: (p) => byKey.has(key(p)),
    readText: (p) => {
      reads.push(p);
      return byKey.get(key(p));
    },
    reads,
  };
}

/** What npm's cmd-shim writes for a package bin (npm 7 and later). */
export function npmCmdShim(script: string): string {
  return [
    '@ECHO off',
    'GOTO start',
    ':find_dp0',
    'SET dp0=%~dp0',
    'EXIT /b',
    ':start',
    'SETLOCAL',
    'CALL :find_dp0',
    '',
    'IF EXIST "%dp0%\\node.exe" (',
    '  SET "_prog=%dp0%\\node.exe"',
    ') ELSE (',
    '  SET "_prog=node"',
    '  SET PATHEXT=%PATHEXT:;.JS;=;%',
    ')',
    '',
    `endLocal & goto #_undefined_# 2>NUL || title %COMSPEC% & "%_prog%"  "%dp0%\\${script}" %*`,
    '',
  ].join('\r\n');
}
