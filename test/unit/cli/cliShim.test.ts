// The `baton` launcher the extension puts on the terminal's PATH: it runs the shipped CLI on VS Code's
// own runtime and passes every argument through untouched.
import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, win32 } from 'node:path';
import { after, describe, it } from 'node:test';
import { cliLaunchers, mcpServerCommand, writeCliLaunchers } from '../../../src/node/cliShim';

const base = mkdtempSync(join(tmpdir(), "baton shim 'quoted' "));
after(() => rmSync(base, { recursive: true, force: true }));

describe('the baton launcher on the terminal PATH', () => {
  it('runs the script on the given runtime with every argument as it was typed, ELECTRON_RUN_AS_NODE set', () => {
    const script = join(base, 'fake cli.js');
    writeFileSync(
      script,
      'process.stdout.write(JSON.stringify({ argv: process.argv.slice(2), electron: process.env.ELECTRON_RUN_AS_NODE }))',
    );
    const dir = writeCliLaunchers(join(base, 'bin'), process.execPath, script, 'linux');
    const launcher = join(dir, 'baton');
    assert.ok(statSync(launcher).mode & 0o100, 'executable');
    const args = ['delegate', 'rename "a" to b; rm -rf ~', "it's $HOME", '`id`', '', '--write'];
    const out = JSON.parse(execFileSync(launcher, args, { encoding: 'utf8' })) as { argv: string[]; electron: string };
    assert.deepEqual(out.argv, args);
    assert.equal(out.electron, '1');
  });

  it('writes baton.cmd on Windows: setlocal, quoted paths, a % doubled, arguments passed with %*', () => {
    const [l] = cliLaunchers(
      'C:\\Users\\A 100%\\AppData\\Local\\Programs\\Microsoft VS Code\\Code.exe',
      win32.join('C:\\Users\\A 100%\\.vscode\\extensions\\baton.baton-0.1.0', 'dist', 'baton.js'),
      'win32',
    );
    assert.equal(l.name, 'baton.cmd');
    assert.deepEqual(l.text.split('\r\n'), [
      '@echo off',
      'setlocal',
      'set ELECTRON_RUN_AS_NODE=1',
      '"C:\\Users\\A 100%%\\AppData\\Local\\Programs\\Microsoft VS Code\\Code.exe" "C:\\Users\\A 100%%\\.vscode\\extensions\\baton.baton-0.1.0\\dist\\baton.js" %*',
      '',
    ]);
  });

  it('the MCP server definition runs `mcp` on the same runtime and script, against the window’s gateway', () => {
    const script = join(base, 'fake mcp.js');
    writeFileSync(
      script,
      'process.stdout.write(JSON.stringify({ argv: process.argv.slice(2), electron: process.env.ELECTRON_RUN_AS_NODE, state: process.env.BATON_STATE_DIR, gateway: process.env.BATON_GATEWAY ?? null }))',
    );
    const c = mcpServerCommand(process.execPath, script, '/state/of/window', {});
    const out = JSON.parse(
      execFileSync(c.command, c.args, { env: { PATH: process.env.PATH, ...c.env }, encoding: 'utf8' }),
    ) as { argv: string[]; electron: string; state: string; gateway: string | null };
    assert.deepEqual(out, { argv: ['mcp'], electron: '1', state: '/state/of/window', gateway: null });
    // A state folder or a gateway the user chose is passed on, as the terminal's `baton` keeps it.
    assert.deepEqual(
      mcpServerCommand(process.execPath, script, '/state/of/window', {
        BATON_STATE_DIR: '/mine',
        BATON_GATEWAY: 'https://gw.example',
      }).env,
      { ELECTRON_RUN_AS_NODE: '1', BATON_STATE_DIR: '/mine', BATON_GATEWAY: 'https://gw.example' },
    );
  });

  it('rewrites a launcher only when what it runs changed', () => {
    const dir = join(base, 'bin2');
    writeCliLaunchers(dir, '/usr/bin/node', '/ext/dist/baton.js', 'linux');
    const first = statSync(join(dir, 'baton')).mtimeMs;
    writeCliLaunchers(dir, '/usr/bin/node', '/ext/dist/baton.js', 'linux');
    assert.equal(statSync(join(dir, 'baton')).mtimeMs, first);
  });

  it('the .vsix carries the CLI the launcher runs (dist/baton.js)', () => {
    const root = resolve(__dirname, '../../..');
    const vsce = join(root, 'node_modules/@vscode/vsce/vsce');
    const files = execFileSync(process.execPath, [vsce, 'ls', '--no-dependencies'], { cwd: root, encoding: 'utf8' })
      .split('\n')
      .map((l) => l.trim());
    assert.ok(files.includes('dist/baton.js'), files.join('\n'));
  });
});
