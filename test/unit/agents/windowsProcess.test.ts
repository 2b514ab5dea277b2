import { EventEmitter } from 'node:events';
import { PassThrough } from 'node:stream';
import type { ChildProcess, SpawnOptions } from 'node:child_process';
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { agentEnv, prepareAgentHome } from '../../../src/gateway/agents/agentHome';
import type { HomeFs } from '../../../src/gateway/agents/agentHome';
import { runProcess } from '../../../src/gateway/agents/processRun';
import type { SpawnFn } from '../../../src/gateway/agents/processRun';
import { bwrapStatus, confineCommand } from '../../../src/gateway/confine';
import { fakeHost } from '../harness/fakeHost';

/** A pid above Linux's largest possible one: signalling its group can reach no real process. */
const NO_SUCH_PID = 4_194_999;

interface Call {
  readonly command: string;
  readonly args: readonly string[];
  readonly options: SpawnOptions;
}

/** Records every spawn; the agent process stays running until it is killed with taskkill. */
function recordingSpawn(): { spawn: SpawnFn; calls: Call[]; agent: () => ChildProcess } {
  const calls: Call[] = [];
  const children: ChildProcess[] = [];
  const spawn: SpawnFn = (command, args, options) => {
    calls.push({ command, args, options });
    const child = new EventEmitter() as ChildProcess;
    Object.assign(child, {
      pid: NO_SUCH_PID + calls.length - 1,
      exitCode: null,
      signalCode: null,
      stdin: new PassThrough(),
      stdout: new PassThrough(),
      stderr: new PassThrough(),
    });
    children.push(child);
    if (/taskkill/i.test(command)) {
      // taskkill /T /F ends the agent process (and its tree).
      setImmediate(() => exit(children[0], 1));
    }
    setImmediate(() => child.emit('spawn'));
    return child;
  };
  return { spawn, calls, agent: () => children[0] };
}

/** What Node does when a child exits: exitCode is set before 'exit', 'close' follows the pipes. */
function exit(child: ChildProcess, code: number): void {
  Object.assign(child, { exitCode: code });
  child.emit('exit', code, null);
  child.stdout?.push(null);
  child.stderr?.push(null);
  child.emit('close', code, null);
}

const WIN_ENV = { SystemRoot: 'C:\\Windows', PATH: 'C:\\Windows\\System32' };

describe('agent processes on Windows (simulated: recorded spawn and taskkill argv)', () => {
  it('cancel ends the whole tree with taskkill /pid <pid> /T /F, without a shell and hidden; the CLI runs hidden, not detached', async () => {
    const rec = recordingSpawn();
    const ac = new AbortController();
    const run = runProcess({
      command: 'C:\\Program Files\\nodejs\\node.exe',
      args: ['cli.js'],
      cwd: 'C:\\w',
      env: WIN_ENV,
      deadline: Date.now() + 60_000,
      signal: ac.signal,
      platform: 'win32',
      spawn: rec.spawn,
      onSpawn: () => ac.abort(),
    });
    const res = await run;
    assert.equal(res.end, 'canceled');
    assert.equal(rec.calls[0].options.windowsHide, true);
    assert.equal(rec.calls[0].options.detached, false);
    const kills = rec.calls.slice(1);
    assert.ok(kills.length >= 1);
    assert.deepEqual(
      { command: kills[0].command, args: kills[0].args },
      { command: 'C:\\Windows\\System32\\taskkill.exe', args: ['/pid', String(NO_SUCH_PID), '/T', '/F'] },
    );
    assert.equal(kills[0].options.windowsHide, true);
    assert.notEqual(kills[0].options.shell, true);
  });

  it('a deadline ends the tree the same way; verbatim cmd.exe lines are passed on as such', async () => {
    const rec = recordingSpawn();
    const res = await runProcess({
      command: 'C:\\Windows\\system32\\cmd.exe',
      args: ['/d', '/s', '/c', '""C:\\x\\a.cmd" -p"'],
      cwd: 'C:\\w',
      env: WIN_ENV,
      deadline: Date.now() + 50,
      signal: new AbortController().signal,
      platform: 'win32',
      spawn: rec.spawn,
      windowsVerbatimArguments: true,
    });
    assert.equal(res.end, 'expired');
    assert.equal(rec.calls[0].options.windowsVerbatimArguments, true);
    assert.match(rec.calls[1].command, /taskkill\.exe$/);
    assert.deepEqual(rec.calls[1].args, ['/pid', String(NO_SUCH_PID), '/T', '/F']);
  });

  it('a CLI that exits by itself is not followed by a taskkill (its pid may already name another process)', async () => {
    const rec = recordingSpawn();
    const res = await runProcess({
      command: 'C:\\x\\codex.exe',
      args: [],
      cwd: 'C:\\w',
      env: WIN_ENV,
      deadline: Date.now() + 60_000,
      signal: new AbortController().signal,
      platform: 'win32',
      spawn: rec.spawn,
      onSpawn: () => exit(rec.agent(), 0),
    });
    assert.equal(res.end, 'exited');
    assert.equal(rec.calls.length, 1);
  });

  it('on POSIX the CLI still gets its own process group and no taskkill (windowsHide is set, it matters only on Windows)', async () => {
    const rec = recordingSpawn();
    const run = runProcess({
      command: '/usr/bin/true',
      args: [],
      cwd: '/tmp',
      env: {},
      deadline: Date.now() + 60_000,
      signal: new AbortController().signal,
      platform: 'linux',
      spawn: rec.spawn,
      onSpawn: () => exit(rec.agent(), 0),
    });
    const res = await run;
    assert.equal(res.end, 'exited');
    assert.equal(rec.calls.length, 1, 'no taskkill on POSIX');
    assert.equal(rec.calls[0].options.detached, true);
    assert.equal(rec.calls[0].options.windowsHide, true);
  });
});

describe('the private home on Windows (simulated: path.win32 and recorded file operations)', () => {
  const dirs = { home: 'D:\\baton\\.baton-private\\t1\\home', tmp: 'D:\\baton\\.baton-private\\t1\\tmp' };

  it('USERPROFILE, APPDATA, LOCALAPPDATA, HOMEDRIVE/HOMEPATH and TEMP point into the private home; the real ones do not leak', () => {
    const source = {
      Path: 'C:\\Windows\\System32;C:\\npm',
      SystemRoot: 'C:\\Windows',
      ComSpec: 'C:\\Windows\\system32\\cmd.exe',
      PATHEXT: '.COM;.EXE;.BAT;.CMD',
      USERPROFILE: 'C:\\Users\\jane',
      APPDATA: 'C:\\Users\\jane\\AppData\\Roaming',
      LOCALAPPDATA: 'C:\\Users\\jane\\AppData\\Local',
      HOMEDRIVE: 'C:',
      HOMEPATH: '\\Users\\jane',
      TEMP: 'C:\\Users\\jane\\AppData\\Local\\Temp',
      GITHUB_TOKEN: 'secret',
    };
    const env = agentEnv(source, dirs, fakeHost('win32', {}, source));
    assert.equal(env.PATH, 'C:\\Windows\\System32;C:\\npm');
    assert.equal(env.HOME, dirs.home);
    assert.equal(env.USERPROFILE, dirs.home);
    assert.equal(env.APPDATA, `${dirs.home}\\AppData\\Roaming`);
    assert.equal(env.LOCALAPPDATA, `${dirs.home}\\AppData\\Local`);
    assert.equal(env.HOMEDRIVE, 'D:');
    assert.equal(env.HOMEPATH, '\\baton\\.baton-private\\t1\\home');
    assert.equal(env.TEMP, dirs.tmp);
    assert.equal(env.TMP, dirs.tmp);
    assert.equal(env.SystemRoot, 'C:\\Windows');
    assert.equal(env.ComSpec, 'C:\\Windows\\system32\\cmd.exe');
    assert.equal(env.GITHUB_TOKEN, undefined, 'credentials only through the harness passthrough');
    for (const v of Object.values(env)) assert.ok(!String(v).includes('jane'), String(v));
  });

  it('on POSIX the environment is exactly what it was', () => {
    const env = agentEnv(
      { PATH: '/usr/bin', LANG: 'de_DE.UTF-8', USERPROFILE: 'x' },
      { home: '/h', tmp: '/t' },
      fakeHost('linux', {}),
    );
    assert.deepEqual(env, {
      PATH: '/usr/bin',
      HOME: '/h',
      TMPDIR: '/t',
      LANG: 'de_DE.UTF-8',
      TERM: 'dumb',
      NO_COLOR: '1',
      CI: '1',
    });
  });

  const recordingFs = (kinds: Record<string, 'dir' | 'file'>, failLinks = false) => {
    const ops: string[] = [];
    const fs: HomeFs = {
      kind: async (p) => kinds[p],
      mkdir: async (p) => void ops.push(`mkdir ${p}`),
      symlink: async (target, p, type) => {
        if (failLinks) throw Object.assign(new Error('EPERM: operation not permitted, symlink'), { code: 'EPERM' });
        ops.push(`link ${type ?? 'symlink'} ${target} -> ${p}`);
      },
      copyFile: async (from, to) => void ops.push(`copy ${from} -> ${to}`),
    };
    return { fs, ops };
  };

  it('login folders are joined with a junction (no Developer Mode needed), login files copied, and the step says so', async () => {
    const real = 'C:\\Users\\jane';
    const { fs, ops } = recordingFs({ [`${real}\\.claude`]: 'dir', [`${real}\\.claude.json`]: 'file' });
    const notes = await prepareAgentHome(
      dirs.home,
      real,
      ['.claude', '.claude.json', '.missing'],
      fakeHost('win32', {}),
      fs,
    );
    assert.deepEqual(ops, [
      `mkdir ${dirs.home}\\AppData\\Roaming`,
      `mkdir ${dirs.home}\\AppData\\Local`,
      `mkdir ${dirs.home}`,
      `link junction ${real}\\.claude -> ${dirs.home}\\.claude`,
      `mkdir ${dirs.home}`,
      `copy ${real}\\.claude.json -> ${dirs.home}\\.claude.json`,
    ]);
    assert.equal(notes.length, 1);
    assert.match(notes[0], /Copied \.claude\.json .*Developer Mode.*not kept/);
  });

  it('a login that cannot be brought in is said, not skipped silently', async () => {
    const real = 'C:\\Users\\jane';
    const { fs } = recordingFs({ [`${real}\\.copilot`]: 'dir' }, true);
    const notes = await prepareAgentHome(dirs.home, real, ['.copilot'], fakeHost('win32', {}), fs);
    assert.equal(notes.length, 1);
    assert.match(notes[0], /Could not bring C:\\Users\\jane\\\.copilot .*EPERM.*API key/);
  });

  it('on POSIX login entries are symlinked as before, with nothing to say', async () => {
    const { fs, ops } = recordingFs({ '/home/jane/.claude': 'dir', '/home/jane/.claude.json': 'file' });
    const notes = await prepareAgentHome(
      '/p/home',
      '/home/jane',
      ['.claude', '.claude.json'],
      fakeHost('linux', {}),
      fs,
    );
    assert.deepEqual(notes, []);
    assert.deepEqual(ops, [
      'mkdir /p/home',
      'link symlink /home/jane/.claude -> /p/home/.claude',
      'mkdir /p/home',
      'link symlink /home/jane/.claude.json -> /p/home/.claude.json',
    ]);
  });
});

describe('what the first step says about confinement, per platform', () => {
  const req = { argv: ['C:\\x\\claude.exe', '-p'], workspace: 'C:\\w', home: 'C:\\h', network: true };

  it('macOS and Windows: not confined, what that means, and no Linux install advice', async () => {
    for (const [platform, name] of [
      ['darwin', 'macOS'],
      ['win32', 'Windows'],
    ] as const) {
      const c = await confineCommand(req, { platform });
      assert.equal(c.confined, false);
      assert.deepEqual([c.command, ...c.args], req.argv);
      assert.match(c.detail, new RegExp(`^Unconfined: .*only on Linux.*no sandbox on ${name}`));
      assert.match(c.detail, /your user rights: it can read and change any file you can/);
      assert.doesNotMatch(c.detail, /apt-get|bubblewrap \(|install/);
    }
    assert.match((await confineCommand(req, { platform: 'win32' })).detail, /USERPROFILE, APPDATA and LOCALAPPDATA/);
  });

  it('Linux without bubblewrap: how to install it; with a bubblewrap that cannot sandbox: not to install it again', async () => {
    const missing = await confineCommand(req, { platform: 'linux', bwrapPath: '/nonexistent/bwrap' });
    assert.equal(missing.confined, false);
    assert.match(missing.detail, /^Unconfined: bubblewrap \(bwrap\) is not installed/);
    assert.match(missing.detail, /sudo apt-get install bubblewrap.*restart the gateway/);
    const broken = await confineCommand(req, { platform: 'linux', bwrapPath: '/bin/false' });
    assert.equal(broken.confined, false);
    assert.match(broken.detail, /^Unconfined: bubblewrap cannot create a sandbox here/);
    assert.match(broken.detail, /user namespaces/);
    assert.doesNotMatch(broken.detail, /apt-get/);
  });

  it('Linux with bubblewrap: confined, and what that covers', async (t) => {
    const status = await bwrapStatus();
    if (!status.ok) {
      t.skip(`bubblewrap unavailable: ${status.reason}`);
      return;
    }
    const c = await confineCommand(
      { ...req, argv: ['/bin/true'], workspace: '/tmp', home: '/tmp' },
      { platform: 'linux' },
    );
    assert.equal(c.confined, true);
    assert.match(
      c.detail,
      /^Confined with bubblewrap: .*read-only except the workspace.*your HOME and other tasks' workspaces hidden/,
    );
  });
});
