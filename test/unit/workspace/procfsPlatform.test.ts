import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { cwdInside, isAlive } from '../../../src/gateway/workspace/procfs';

/** Above Linux's largest possible pid: no process has it. */
const NO_SUCH_PID = 4_194_999;

describe('process checks without /proc (macOS, Windows; simulated by platform)', () => {
  it('a live owner stays alive even though its start time cannot be compared; a gone one is gone', () => {
    for (const platform of ['win32', 'darwin'] as const) {
      assert.equal(isAlive(process.pid, 'a start time from /proc that is not there', platform), true);
      assert.equal(isAlive(NO_SUCH_PID, undefined, platform), false);
    }
    // Linux still compares start times, so a reused pid is not mistaken for the owner.
    assert.equal(isAlive(process.pid, 'not its start time', 'linux'), false);
  });

  it('where a live worker runs is unknown, so a sweep leaves it alone', () => {
    assert.equal(cwdInside(process.pid, process.cwd(), 'win32'), 'unknown');
    assert.equal(cwdInside(NO_SUCH_PID, process.cwd(), 'win32'), 'gone');
    assert.equal(cwdInside(process.pid, process.cwd(), 'linux'), 'inside');
  });
});
