import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { planLaunch } from '../../../src/gateway/agents/launch';
import { copilotHarness } from '../../../src/gateway/harness/copilot';
import { claudeHarness } from '../../../src/gateway/harness/claude';
import { geminiHarness } from '../../../src/gateway/harness/gemini';
import { opencodeHarness } from '../../../src/gateway/harness/opencode';
import { fakeHost, npmCmdShim } from '../harness/fakeHost';

const HOSTILE = [
  'fix it & calc.exe',
  'a | b',
  'caret ^& echo',
  '%PATH%',
  'say "hi" & exit',
  'line one\r\nline two & del *',
  '!USERNAME!',
  'a < b > c',
  'C:\\dir\\',
];
const CAPS = { write: true, shell: false, network: false };
const NODE = 'C:\\Program Files\\nodejs\\node.exe';
const SCRIPT = 'C:\\Users\\jane\\AppData\\Roaming\\npm\\node_modules\\@github\\copilot\\npm-loader.js';
const SHIM = 'C:\\Users\\jane\\AppData\\Roaming\\npm\\copilot.cmd';
const ENV = {
  Path: 'C:\\Program Files\\nodejs;C:\\Users\\jane\\AppData\\Roaming\\npm',
  ComSpec: 'C:\\Windows\\system32\\cmd.exe',
};

describe('starting Windows batch scripts without a shell (simulated: path.win32 and a fake file system)', () => {
  it("an npm .cmd shim is unwrapped to node and the script it names: Copilot's prompt argument reaches it byte for byte", () => {
    const host = fakeHost(
      'win32',
      { [SHIM]: npmCmdShim('node_modules\\@github\\copilot\\npm-loader.js'), [SCRIPT]: '', [NODE]: '' },
      ENV,
    );
    for (const prompt of HOSTILE) {
      const inv = copilotHarness.invocation({ prompt, capabilities: CAPS, workspace: 'C:\\w', isGitRepo: true });
      const plan = planLaunch(SHIM, inv.args, host);
      assert.ok(plan.ok, prompt);
      assert.equal(plan.command, NODE);
      assert.deepEqual(plan.args, [SCRIPT, ...inv.args]);
      assert.ok(plan.args.includes(prompt));
      assert.notEqual(plan.verbatim, true);
    }
  });

  it('the node.exe beside a shim wins over PATH; the older npm form is understood too', () => {
    const shim = 'D:\\tools\\claude.cmd';
    const older = [
      '@IF EXIST "%~dp0\\node.exe" (',
      '  "%~dp0\\node.exe"  "%~dp0\\..\\lib\\claude\\cli.mjs" %*',
      ') ELSE (',
      '  @SETLOCAL',
      '  @SET PATHEXT=%PATHEXT:;.JS;=;%',
      '  node  "%~dp0\\..\\lib\\claude\\cli.mjs" %*',
      ')',
    ].join('\r\n');
    const host = fakeHost(
      'win32',
      { [shim]: older, 'D:\\lib\\claude\\cli.mjs': '', 'D:\\tools\\node.exe': '', [NODE]: '' },
      ENV,
    );
    const plan = planLaunch(shim, ['-p'], host);
    assert.deepEqual(plan, {
      ok: true,
      command: 'D:\\tools\\node.exe',
      args: ['D:\\lib\\claude\\cli.mjs', '-p'],
      via: 'D:\\tools\\node.exe D:\\lib\\claude\\cli.mjs',
    });
  });

  it('any other batch script runs through cmd.exe only with arguments cmd.exe cannot misread', () => {
    const bat = 'C:\\Program Files (x86)\\Claude\\claude.bat';
    const host = fakeHost('win32', { [bat]: '@echo off\r\n"%~dp0\\claude.exe" %*\r\n' }, ENV);
    const inv = claudeHarness.invocation({ prompt: 'x & y', capabilities: CAPS, workspace: 'C:\\w', isGitRepo: true });
    const plan = planLaunch(bat, inv.args, host);
    assert.ok(plan.ok);
    assert.equal(plan.command, 'C:\\Windows\\system32\\cmd.exe');
    assert.equal(plan.verbatim, true);
    assert.deepEqual(plan.args.slice(0, 3), ['/d', '/s', '/c']);
    assert.equal(plan.args[3], `""${bat}" ${inv.args.join(' ')}"`);
    const spaced = planLaunch(bat, ['--dir', 'C:\\Users\\Jane Doe\\w', ''], host);
    assert.ok(spaced.ok);
    assert.equal(spaced.args[3], `""${bat}" --dir "C:\\Users\\Jane Doe\\w" """`);
  });

  it('refuses a batch script when an argument holds &, |, ^, %VAR%, !VAR!, quotes, newlines or a trailing backslash', () => {
    const cmd = 'C:\\tools\\copilot.cmd';
    // Not an npm shim, and an npm shim whose script is gone: neither can be unwrapped.
    const hosts = [
      fakeHost('win32', { [cmd]: '@echo off\r\n"C:\\tools\\real-copilot.exe" %*\r\n', [NODE]: '' }, ENV),
      fakeHost('win32', { [cmd]: npmCmdShim('node_modules\\gone\\index.js'), [NODE]: '' }, ENV),
    ];
    for (const host of hosts)
      for (const prompt of HOSTILE) {
        const plan = planLaunch(cmd, ['-p', prompt, '--no-color'], host);
        assert.equal(plan.ok, false, JSON.stringify(prompt));
        assert.ok(!plan.ok && /baton\.cliPaths/.test(plan.reason) && /copilot\.cmd/.test(plan.reason));
      }
    const percentPath = fakeHost('win32', { 'C:\\100%\\x.cmd': '' }, ENV);
    assert.equal(planLaunch('C:\\100%\\x.cmd', ['-p'], percentPath).ok, false);
  });

  it('harnesses that take the prompt on stdin keep it off the command line, so even a plain batch script can run them', () => {
    const bat = 'C:\\tools\\cli.cmd';
    const host = fakeHost('win32', { [bat]: '@echo off\r\n' }, ENV);
    for (const spec of [claudeHarness, geminiHarness, opencodeHarness])
      for (const prompt of HOSTILE) {
        const inv = spec.invocation({
          prompt,
          capabilities: { write: true, shell: true, network: true },
          workspace: 'C:\\Users\\Jane Doe\\AppData\\Local\\baton\\ws\\t1',
          isGitRepo: true,
        });
        assert.equal(inv.stdin, prompt);
        assert.ok(planLaunch(bat, inv.args, host).ok, spec.id);
      }
  });

  it('a shim that runs something other than node is not unwrapped', () => {
    const cmd = 'C:\\npm\\tool.cmd';
    const host = fakeHost(
      'win32',
      {
        [cmd]: '@"%~dp0\\bash.exe" "%~dp0\\node_modules\\tool\\run.js" %*\r\n',
        'C:\\npm\\node_modules\\tool\\run.js': '',
        [NODE]: '',
      },
      ENV,
    );
    const plan = planLaunch(cmd, ['a'], host);
    assert.ok(plan.ok);
    assert.equal(plan.verbatim, true);
  });

  it('programs, and everything on POSIX, are started as they are', () => {
    const win = fakeHost('win32', {}, ENV);
    assert.deepEqual(planLaunch('C:\\x\\codex.exe', ['a & b'], win), {
      ok: true,
      command: 'C:\\x\\codex.exe',
      args: ['a & b'],
    });
    const posix = fakeHost('linux', {}, {});
    assert.deepEqual(planLaunch('/usr/bin/run.cmd', ['a & b'], posix), {
      ok: true,
      command: '/usr/bin/run.cmd',
      args: ['a & b'],
    });
  });
});
