import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { detectHarnesses } from '../../../src/gateway/harness/registry';
import { fakeHost } from './fakeHost';

const found = (host: ReturnType<typeof fakeHost>, paths = {}) =>
  detectHarnesses({ host, paths }).map((d) => [d.spec.id, d.binary, d.source]);

describe('harness detection on Windows (simulated: path.win32 and a fake file system)', () => {
  it('looks names up with PATHEXT, in PATHEXT order, case-insensitively, folder by folder', () => {
    const host = fakeHost(
      'win32',
      {
        // npm installs an extension-less sh script beside the .cmd shim: Windows cannot start it.
        'C:\\npm\\claude': '#!/bin/sh\n',
        'C:\\npm\\claude.CMD': '@ECHO off\r\n',
        'C:\\npm\\claude.ps1': '',
        'C:\\tools\\codex.EXE': '',
        // .JS is in PATHEXT but only Windows Script Host could start it.
        'C:\\npm\\gemini.js': '',
        'C:\\Program Files\\Gemini\\gemini.bat': '',
        'C:\\npm\\copilot.cmd': '',
        'C:\\npm\\copilot.exe': '',
        'C:\\npm\\opencode': '#!/bin/sh\n',
      },
      // Windows spells it Path; PATHEXT entries in any case.
      { Path: 'C:\\npm;relative\\bin;C:\\tools;"C:\\Program Files\\Gemini"', PATHEXT: '.com;.Exe;.BAT;.cmd;.VBS;.JS' },
    );
    assert.deepEqual(found(host), [
      ['claude', 'C:\\npm\\claude.cmd', 'path'],
      ['codex', 'C:\\tools\\codex.exe', 'path'],
      ['gemini', 'C:\\Program Files\\Gemini\\gemini.bat', 'path'],
      ['copilot', 'C:\\npm\\copilot.exe', 'path'],
    ]);
  });

  it('an earlier PATH folder wins over a preferred extension; without PATHEXT, Windows’ default applies', () => {
    const host = fakeHost(
      'win32',
      {
        'C:\\first\\claude.cmd': '',
        'C:\\second\\claude.exe': '',
        'C:\\first\\codex.bat': '',
        'C:\\first\\codex.cmd': '',
      },
      { PATH: 'C:\\first;C:\\second' },
    );
    assert.deepEqual(found(host), [
      ['claude', 'C:\\first\\claude.cmd', 'path'],
      ['codex', 'C:\\first\\codex.bat', 'path'],
    ]);
    const cmdFirst = fakeHost(
      'win32',
      { 'C:\\first\\codex.bat': '', 'C:\\first\\codex.cmd': '' },
      {
        PATH: 'C:\\first',
        PATHEXT: '.CMD;.BAT',
      },
    );
    assert.deepEqual(found(cmdFirst), [['codex', 'C:\\first\\codex.cmd', 'path']]);
  });

  it('baton.cliPaths overrides resolve the same way: an extension-less path finds its .cmd, never the sh shim', () => {
    const host = fakeHost(
      'win32',
      {
        'C:\\npm\\claude': '#!/bin/sh\n',
        'C:\\npm\\claude.cmd': '',
        'D:\\bin\\codex.CMD': '',
        'D:\\bin\\gemini': '#!/bin/sh\n',
        'D:\\bin\\copilot.js': '',
      },
      { PATH: '', PATHEXT: '.COM;.EXE;.BAT;.CMD;.JS' },
    );
    assert.deepEqual(
      found(host, {
        claude: 'C:\\npm\\claude',
        codex: 'd:\\bin\\codex.cmd',
        gemini: 'D:\\bin\\gemini',
        copilot: 'D:\\bin\\copilot.js',
        opencode: 'opencode.cmd',
      }),
      [
        ['claude', 'C:\\npm\\claude.cmd', 'configured'],
        ['codex', 'd:\\bin\\codex.cmd', 'configured'],
      ],
    );
  });

  it('POSIX lookup is unchanged: the name as is, absolute PATH entries only', () => {
    const host = fakeHost('linux', { '/usr/bin/claude': '', '/opt/x/codex.cmd': '' }, { PATH: '/usr/bin:rel:/opt/x' });
    assert.deepEqual(found(host), [['claude', '/usr/bin/claude', 'path']]);
  });
});
