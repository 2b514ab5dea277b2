// Small pieces the gateway shares instead of keeping copies: the task-state sets (with the client),
// the JSON-object check (with the panel protocol), and the task row both stores read.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { TaskState } from '@a2a-js/sdk';
import { isInterruptedTaskState, isTerminalTaskState } from '../../../src/core/delegation';
import { isRecord } from '../../../src/core/isRecord';
import { endsTurn, INTERRUPTED_STATES, isInterrupted, isTerminal, TERMINAL_STATES } from '../../../src/core/taskStates';
import { toTaskRow } from '../../../src/gateway/store/gatewayStore';

describe('shared pieces', () => {
  it('names the terminal and interrupted states once, for the gateway and the client alike', () => {
    assert.deepEqual(
      [...TERMINAL_STATES],
      [
        TaskState.TASK_STATE_COMPLETED,
        TaskState.TASK_STATE_FAILED,
        TaskState.TASK_STATE_CANCELED,
        TaskState.TASK_STATE_REJECTED,
      ],
    );
    assert.deepEqual(
      [...INTERRUPTED_STATES],
      [TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_AUTH_REQUIRED],
    );
    assert.equal(isTerminalTaskState, isTerminal);
    assert.equal(isInterruptedTaskState, isInterrupted);
    for (const s of [TaskState.TASK_STATE_WORKING, TaskState.TASK_STATE_SUBMITTED, undefined]) {
      assert.equal(isTerminal(s) || isInterrupted(s) || endsTurn(s), false, String(s));
    }
    assert.equal(endsTurn(TaskState.TASK_STATE_AUTH_REQUIRED), true);
    assert.equal(endsTurn(TaskState.TASK_STATE_CANCELED), true);
  });

  it('isRecord: objects only, not null or arrays', () => {
    assert.equal(isRecord({}), true);
    assert.equal(isRecord({ a: 1 }), true);
    for (const v of [null, undefined, [], 'x', 1, true]) assert.equal(isRecord(v), false, String(v));
  });

  it('reads a task row the same from SQLite values and PostgreSQL values (BIGINT as text)', () => {
    const expected = {
      agent: 'echo',
      id: 't1',
      contextId: 'c1',
      principal: 'local',
      kind: 'proxy',
      state: TaskState.TASK_STATE_WORKING,
      lastSeq: 7,
      snapshot: '{}',
      owner: null,
      createdAt: 1_700_000_000_000,
      updatedAt: 1_700_000_000_500,
      compacted: false,
    };
    const common = { agent: 'echo', id: 't1', context_id: 'c1', principal: 'local', kind: 'proxy', snapshot: '{}' };
    const sqlite = {
      ...common,
      state: 2,
      last_seq: 7,
      owner: null,
      created_at: 1_700_000_000_000,
      updated_at: 1_700_000_000_500,
      compacted: 0,
    };
    const postgres = {
      ...common,
      state: 2,
      last_seq: '7',
      owner: null,
      created_at: '1700000000000',
      updated_at: '1700000000500',
      compacted: false,
    };
    assert.equal(TaskState.TASK_STATE_WORKING, 2);
    assert.deepEqual(toTaskRow(sqlite), expected);
    assert.deepEqual(toTaskRow(postgres), expected);
    assert.equal(toTaskRow({ ...sqlite, kind: 'local', owner: 'me' }).owner, 'me');
    assert.equal(toTaskRow({ ...sqlite, kind: 'other' }).kind, 'local');
    // Retention's compacted flag: an INTEGER in SQLite, a BOOLEAN in PostgreSQL.
    assert.equal(toTaskRow({ ...sqlite, compacted: 1 }).compacted, true);
    assert.equal(toTaskRow({ ...postgres, compacted: true }).compacted, true);
  });
});
