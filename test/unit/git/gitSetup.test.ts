// The once-per-process git setup: the version check, and which of the user's settings are kept.
import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import {
  configText,
  GitError,
  git,
  keptEntries,
  MIN_GIT_VERSION,
  parseGitVersion,
  versionAtLeast,
  versionError,
} from '../../../src/node/git';

const base = mkdtempSync(join(tmpdir(), 'baton-git-setup-'));
after(() => rmSync(base, { recursive: true, force: true }));

describe('git version', () => {
  it('reads the versions git prints on Linux, Windows and macOS', () => {
    assert.deepEqual(parseGitVersion('git version 2.39.5\n'), { major: 2, minor: 39, patch: 5 });
    assert.deepEqual(parseGitVersion('git version 2.45.1.windows.1'), { major: 2, minor: 45, patch: 1 });
    assert.deepEqual(parseGitVersion('git version 2.39.3 (Apple Git-146)'), { major: 2, minor: 39, patch: 3 });
    assert.deepEqual(parseGitVersion('git version 2.40'), { major: 2, minor: 40, patch: 0 });
    assert.equal(parseGitVersion('hub version 2.14.2'), undefined);
    assert.equal(parseGitVersion(''), undefined);
  });

  it('compares by major, minor, then patch (numbers, not text)', () => {
    const v = (major: number, minor: number, patch: number) => ({ major, minor, patch });
    assert.equal(versionAtLeast(v(2, 32, 0), MIN_GIT_VERSION), true);
    assert.equal(versionAtLeast(v(2, 100, 0), MIN_GIT_VERSION), true);
    assert.equal(versionAtLeast(v(3, 0, 0), MIN_GIT_VERSION), true);
    assert.equal(versionAtLeast(v(2, 31, 9), MIN_GIT_VERSION), false);
    assert.equal(versionAtLeast(v(2, 4, 0), MIN_GIT_VERSION), false);
    assert.equal(versionAtLeast(v(1, 99, 99), MIN_GIT_VERSION), false);
    assert.equal(versionAtLeast(v(2, 32, 1), v(2, 32, 2)), false);
  });

  it('an old or unreadable version is an error naming what was found and what is needed', () => {
    assert.equal(versionError('git version 2.39.5'), undefined);
    const old = versionError('git version 2.25.1');
    assert.ok(old instanceof GitError);
    assert.match(old.message, /needs git 2\.32\.0 or newer, and found git 2\.25\.1\. Install a newer git/);
    assert.match(versionError('something else')?.message ?? '', /reports its version as "something else"/);
  });

  it('fails every git call with its own error when git is not on PATH', async () => {
    const empty = join(base, 'no-git');
    mkdirSync(empty);
    await assert.rejects(
      git(['rev-parse', '--show-toplevel'], { cwd: base, env: { PATH: empty } }),
      (e: unknown) => e instanceof GitError && /git is not on PATH\. Install git/.test(e.message),
    );
  });

  it('fails every git call when the git on PATH is too old', { skip: process.platform === 'win32' }, async () => {
    const bin = join(base, 'old-git');
    mkdirSync(bin);
    writeFileSync(join(bin, 'git'), '#!/bin/sh\necho "git version 2.30.2"\n', { mode: 0o755 });
    await assert.rejects(
      git(['status'], { cwd: base, env: { PATH: `${bin}:${process.env.PATH ?? ''}` } }),
      (e: unknown) => e instanceof GitError && /needs git 2\.32\.0 or newer, and found git 2\.30\.2/.test(e.message),
    );
  });
});

describe('the setup, once per configuration', () => {
  it('is read once while the config files are unchanged, and again after one changes', async () => {
    const home = join(base, 'home-once');
    mkdirSync(home);
    const global = join(home, '.gitconfig');
    writeFileSync(global, '[core]\n\tautocrlf = input\n');
    // No system config: the listing's only file is the global one, found by HOME (a GIT_CONFIG_GLOBAL
    // given to a call would be passed to git as it is).
    assert.equal(process.env.GIT_CONFIG_GLOBAL, undefined);
    const env = { HOME: home, XDG_CONFIG_HOME: join(home, '.config'), GIT_CONFIG_NOSYSTEM: '1' };
    const origin = async (): Promise<string> =>
      git(['config', '--global', '--list', '--show-origin'], { cwd: base, env });
    const first = await origin();
    assert.match(first, /^file:\S+baton-git-\S+\s+core\.autocrlf=input$/, 'the kept settings, in a file of Baton’s');
    assert.equal(await origin(), first, 'the same kept-settings file: the setup was not made again');
    assert.equal(await origin(), first);
    writeFileSync(global, '[core]\n\tautocrlf = true\n');
    const after = await origin();
    assert.match(after, /core\.autocrlf=true$/, 'a change is read on the next call');
  });
});

describe("the user's settings Baton keeps", () => {
  const listing = (entries: [string, string][]): string =>
    entries.map(([s, e]) => `${s}\0${s === 'command' ? 'command line:' : `file:/${s}/config`}\0${e}\0`).join('');

  it('keeps the allow-listed keys from the system and global scopes only, in order', () => {
    const out = keptEntries(
      listing([
        ['system', 'core.autocrlf\ntrue'],
        ['system', 'credential.helper\nmanager'],
        ['global', 'safe.directory\nC:/Users/me/repo'],
        ['global', 'safe.directory\n*'],
        ['global', 'core.fsmonitor\ntrue'],
        ['global', 'core.hookspath\n~/hooks'],
        ['global', 'filter.lfs.clean\ngit-lfs clean -- %f'],
        ['global', 'diff.x.textconv\ncat'],
        ['global', 'core.longpaths'],
        ['local', 'core.autocrlf\nfalse'],
        ['local', 'safe.directory\n/agent/wrote/this'],
        ['command', 'core.eol\ncrlf'],
        ['worktree', 'core.symlinks\ntrue'],
      ]),
    );
    assert.deepEqual(out, [
      { key: 'core.autocrlf', value: 'true' },
      { key: 'safe.directory', value: 'C:/Users/me/repo' },
      { key: 'safe.directory', value: '*' },
      { key: 'core.longpaths', value: undefined },
    ]);
  });

  it('writes a config file git reads back value for value (quotes, backslashes, newlines, an empty reset)', () => {
    const entries = [
      { key: 'safe.directory', value: '' },
      { key: 'safe.directory', value: 'C:\\Users\\me "quoted"\\repo' },
      { key: 'core.autocrlf', value: 'input' },
      { key: 'core.longpaths', value: undefined },
      { key: 'core.attributesfile', value: '/a\tb\nc #not a comment; nor this' },
    ];
    const file = join(base, 'kept.config');
    writeFileSync(file, configText(entries));
    const read = execFileSync('git', ['config', '--file', file, '--list', '-z'], { encoding: 'utf8' })
      .split('\0')
      .filter(Boolean);
    assert.deepEqual(read, [
      'safe.directory\n',
      'safe.directory\nC:\\Users\\me "quoted"\\repo',
      'core.autocrlf\ninput',
      'core.longpaths',
      'core.attributesfile\n/a\tb\nc #not a comment; nor this',
    ]);
    assert.equal(configText([]), '');
  });
});
