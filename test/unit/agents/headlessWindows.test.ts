import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHeadlessAgent } from '../../../src/gateway/agents/headlessAgent';
import type { LocalRunEvent } from '../../../src/gateway/agents/localAgent';
import { copilotHarness } from '../../../src/gateway/harness/copilot';
import { WorkspaceManager } from '../../../src/gateway/workspace/workspaceManager';
import { makeRepo, tempSpace } from '../workspace/repoFixtures';
import type { TempSpace } from '../workspace/repoFixtures';
import { fakeHost } from '../harness/fakeHost';

describe('a headless agent on Windows (simulated: a Windows host, a batch script that is not an npm shim)', () => {
  let space: TempSpace;
  before(() => {
    space = tempSpace('baton-headless-win-');
  });
  after(() => space.dispose());

  it('says it runs unconfined on Windows, and refuses to pass the task text through cmd.exe, without starting anything', async () => {
    const binary = 'C:\\tools\\copilot.cmd';
    const host = fakeHost(
      'win32',
      { [binary]: '@echo off\r\n"C:\\tools\\copilot-real.exe" %*\r\n' },
      {
        Path: 'C:\\tools',
        ComSpec: 'C:\\Windows\\system32\\cmd.exe',
      },
    );
    const manager = new WorkspaceManager({ root: space.root, userHome: space.home });
    const agent = createHeadlessAgent(
      { spec: copilotHarness, binary, source: 'path' },
      { manager, host, realHome: space.home },
    );
    const repo = makeRepo(space.base, 'repo', { 'a.txt': 'a\n' });
    const events: LocalRunEvent[] = [];
    const result = await agent.run(
      {
        taskId: 'w-1',
        repoPath: repo,
        prompt: 'Fix it & del /s /q %USERPROFILE%',
        files: [],
        capabilities: { write: true, shell: false, network: false },
        deadline: Date.now() + 30_000,
        signal: new AbortController().signal,
      },
      (e) => events.push(e),
    );
    const started = events[0];
    assert.ok(started.kind === 'started' && !started.confined);
    assert.match(started.detail ?? '', /no sandbox on Windows/);
    assert.equal(result.outcome, 'failed');
    assert.match(
      result.reason ?? '',
      /^Could not start GitHub Copilot CLI \(C:\\tools\\copilot\.cmd\): copilot\.cmd is a batch script/,
    );
    assert.match(result.reason ?? '', /baton\.cliPaths/);
    assert.ok(!events.some((e) => e.kind === 'log'), 'nothing ran');
  });
});
