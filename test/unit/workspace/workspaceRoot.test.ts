// Where the throwaway copies go on each platform (path.win32 / path.posix, whatever this machine is).
import * as assert from 'node:assert/strict';
import { posix, win32 } from 'node:path';
import { describe, it } from 'node:test';
import { defaultWorkspaceRoot } from '../../../src/gateway/workspace/workspaceRoot';

const windows = (env: Record<string, string | undefined>) => ({
  platform: 'win32' as const,
  env,
  path: win32,
  home: 'C:\\Users\\Ada',
});

describe('workspace root', () => {
  it('on Windows, a short local folder, not the Roaming globalStorage state folder', () => {
    const state = 'C:\\Users\\Ada\\AppData\\Roaming\\Code\\User\\globalStorage\\baton.baton\\gateway';
    const env = { LOCALAPPDATA: 'C:\\Users\\Ada\\AppData\\Local', APPDATA: 'C:\\Users\\Ada\\AppData\\Roaming' };
    assert.equal(defaultWorkspaceRoot(state, windows(env)), 'C:\\Users\\Ada\\AppData\\Local\\baton\\ws');
    assert.equal(defaultWorkspaceRoot(undefined, windows(env)), 'C:\\Users\\Ada\\AppData\\Local\\baton\\ws');
    assert.ok(defaultWorkspaceRoot(state, windows(env)).length < 40);
  });

  it('on Windows without a usable LOCALAPPDATA, the same place under the profile', () => {
    for (const LOCALAPPDATA of [undefined, '', 'relative\\dir'])
      assert.equal(
        defaultWorkspaceRoot('D:\\state', windows({ LOCALAPPDATA })),
        'C:\\Users\\Ada\\AppData\\Local\\baton\\ws',
      );
  });

  it('elsewhere, <state>/ws, or ~/.baton/ws without a state folder', () => {
    for (const platform of ['linux', 'darwin'] as const) {
      const seam = { platform, env: { LOCALAPPDATA: '/ignored' }, path: posix, home: '/Users/ada' };
      assert.equal(
        defaultWorkspaceRoot('/Users/ada/Library/Application Support/Code/User/globalStorage/b/gateway', seam),
        '/Users/ada/Library/Application Support/Code/User/globalStorage/b/gateway/ws',
      );
      assert.equal(defaultWorkspaceRoot(undefined, seam), '/Users/ada/.baton/ws');
    }
  });
});
