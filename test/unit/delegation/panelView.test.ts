// The panel's view of a delegation, made by one pure function from the journal's record and what else
// the panel shows: states, the timeline in codes and the agent's words, the outcome, the result check
// recorded in the journal, patch statistics and the review passed in.
import * as assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { StreamResponse, Task } from '@a2a-js/sdk';
import { Role, TaskState } from '@a2a-js/sdk';
import { DelegationJournal, type JournalEntry } from '../../../src/core/delegation';
import { delegationPanelView, panelTimelineEntry } from '../../../src/core/delegation/panelView';
import { PANEL_LIMITS } from '../../../src/core/protocol/panelLimits';
import type { ReviewView } from '../../../src/core/protocol/panelProtocol';
import { timelineEntryText } from '../../../src/core/protocol/timelineText';
import { makeRequest } from './harness';

const endpoint = { url: 'https://agent.example/a2a', protocolBinding: 'JSONRPC', protocolVersion: '1.0' };

function message(text: string, role = Role.ROLE_AGENT) {
  return {
    messageId: 'm',
    contextId: 'c',
    taskId: 't',
    role,
    parts: [{ content: { $case: 'text' as const, value: text }, filename: '', mediaType: '', metadata: undefined }],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

function status(state: TaskState, text?: string): StreamResponse {
  return {
    payload: {
      $case: 'statusUpdate',
      value: {
        taskId: 't',
        contextId: 'c',
        status: { state, timestamp: undefined, message: text ? message(text) : undefined },
        metadata: undefined,
      },
    },
  };
}

function finalTask(state: TaskState, text: string): Task {
  return {
    id: 't',
    contextId: 'c',
    status: { state, timestamp: undefined, message: message(text) },
    artifacts: [
      {
        artifactId: 'a1',
        name: 'changes.patch',
        description: '',
        parts: [
          { content: { $case: 'text', value: '+x\n' }, filename: '', mediaType: 'text/x-diff', metadata: undefined },
        ],
        metadata: undefined,
        extensions: [],
      },
    ],
    history: [],
    metadata: undefined,
  };
}

function journalOf(entries: readonly JournalEntry[]): DelegationJournal {
  const j = new DelegationJournal(makeRequest(endpoint, 'Tidy the code', {}, 'req-1'));
  let seq = 0;
  for (const e of entries) j.apply(e.kind === 'event' ? { ...e, seq: ++seq } : e);
  return j;
}

const ev = (event: StreamResponse, at = 2): JournalEntry => ({
  kind: 'event',
  at,
  taskId: 't',
  seq: 0,
  sequenced: false,
  event,
});

const completed: JournalEntry[] = [
  { kind: 'send', at: 1, attempt: 1 },
  { kind: 'task', at: 1, taskId: 't', contextId: 'c' },
  ev(status(TaskState.TASK_STATE_WORKING)),
  ev(status(TaskState.TASK_STATE_WORKING, 'Reading')),
  { kind: 'snapshot', at: 3, source: 'final', task: finalTask(TaskState.TASK_STATE_COMPLETED, 'All done') },
  { kind: 'outcome', at: 3, outcome: 'completed', reason: 'All done' },
];

const verified: JournalEntry = {
  kind: 'resultCheck',
  at: 4,
  signature: { status: 'verified', detail: 'signed by the gateway' },
  executor: { label: 'formatter (builtin)', kind: 'builtin', detail: 'runs in the gateway', confined: false },
  patch: { artifactId: 'a1', sha256: 'sha256:00' },
};

const stats = { files: 1, additions: 1, deletions: 0 };

describe('delegationPanelView', () => {
  it('shows where a delegation is before it settles, and the outcome once it has', () => {
    const queued = delegationPanelView(journalOf([]).view(10));
    assert.equal(queued.state, 'queued');
    assert.equal(queued.terminal, false);
    assert.equal(queued.id, 'req-1');
    assert.equal(queued.title, 'Tidy the code');
    assert.deepEqual(queued.capabilities, { write: false, shell: false, network: false });

    const working = delegationPanelView(journalOf(completed.slice(0, 4)).view(10));
    assert.equal(working.state, 'working');
    assert.equal(working.terminal, false);
    assert.equal(working.reason, undefined);

    const done = delegationPanelView(journalOf(completed).view(10));
    assert.equal(done.state, 'completed');
    assert.equal(done.terminal, true);
    assert.equal(done.reason, 'All done');
    assert.ok(done.endedAt);
    assert.deepEqual(done.artifacts, [{ name: 'changes.patch', mediaType: 'text/x-diff', bytes: 3, isPatch: true }]);
  });

  it("asks the user's question when the agent needs input", () => {
    const v = delegationPanelView(
      journalOf([
        { kind: 'send', at: 1, attempt: 1 },
        ev(status(TaskState.TASK_STATE_INPUT_REQUIRED, 'Which branch?')),
      ]).view(10),
    );
    assert.equal(v.state, 'input-required');
    assert.equal(v.question, 'Which branch?');
    assert.equal(v.terminal, false);
  });

  it("puts Baton's words in codes and the agent's words in the text, numbered after what was left out", () => {
    const j = journalOf([
      ...completed.slice(0, 4),
      { kind: 'connection', at: 5, status: 'lost', error: 'socket hang up' },
      { kind: 'connection', at: 6, status: 'restored' },
      { kind: 'reply', at: 7, message: message('main', Role.ROLE_USER) },
      { kind: 'notice', at: 8, level: 'info', text: 'Stored by an older version.' },
      { kind: 'notice', at: 9, level: 'error', code: 'journal.writeFailed', params: ['disk full'] },
    ]);
    const v = delegationPanelView(j.view(10));
    const lines = v.timeline.map((e) => [e.kind, e.code, timelineEntryText(e)]);
    assert.deepEqual(lines, [
      ['status', 'status', 'working'],
      ['step', undefined, 'Reading'],
      ['note', 'connection.lostBecause', 'Connection to the agent lost (socket hang up); reconnecting.'],
      ['note', 'connection.restored', 'Reconnected to the agent.'],
      ['message', 'message.user', 'You: main'],
      ['note', undefined, 'Stored by an older version.'],
      [
        'error',
        'journal.writeFailed',
        'Could not write the delegation journal: disk full. This delegation may not survive a reload.',
      ],
    ]);
    assert.deepEqual(
      v.timeline.map((e) => e.seq),
      [1, 2, 3, 4, 5, 6, 7],
    );
    const status = v.timeline[0];
    assert.equal(status.markdown, true);
    assert.deepEqual(status.params, ['working']);
    const user = v.timeline[4];
    assert.equal(user.text, 'main', "the user's words travel as they were written");
    assert.equal(user.markdown, false);
  });

  const gapCases = [
    {
      title: "shows the gateway's gap notice as a warning of its own, in Baton's words, between the steps around it",
      reason: 'restart',
      notice: 'Some progress from the agent was not received while the gateway restarted.',
      code: 'relay.gap',
      shown:
        'Some progress from the agent was not received while the gateway restarted: the steps above and below are not the whole history.',
    },
    {
      title: 'says which gap it is when another gateway instance took the task over',
      reason: 'takeover',
      notice: 'Some progress from the agent was not received while another gateway instance took the task over.',
      code: 'relay.gapTakeover',
      shown:
        'Some progress from the agent was not received while another gateway instance took the task over: the steps above and below are not the whole history.',
    },
  ];
  for (const c of gapCases) {
    it(c.title, () => {
      const gap = status(TaskState.TASK_STATE_WORKING, c.notice);
      if (gap.payload?.$case === 'statusUpdate')
        gap.payload.value.metadata = { 'baton/gap': { reason: c.reason, lastSeq: 3 } };
      const v = delegationPanelView(
        journalOf([
          { kind: 'send', at: 1, attempt: 1 },
          ev(status(TaskState.TASK_STATE_WORKING, 'Reading')),
          ev(gap, 3),
          ev(status(TaskState.TASK_STATE_WORKING, 'Writing'), 4),
          ev(status(TaskState.TASK_STATE_COMPLETED), 5),
        ]).view(10),
      );
      assert.deepEqual(
        v.timeline.map((e) => [e.kind, e.code, timelineEntryText(e)]),
        [
          ['status', 'status.text', '**working** — Reading'],
          ['note', c.code, c.shown],
          ['step', undefined, 'Writing'],
          ['status', 'status', 'completed'],
        ],
      );
      assert.equal(v.state, 'completed');
    });
  }

  it('shows a state change with its message, and an artifact with its size as it streams', () => {
    assert.equal(
      timelineEntryText(panelTimelineEntry({ kind: 'status', at: 'x', state: 'failed', text: 'boom' }, 1)),
      '**failed** — boom',
    );
    const artifact = (chunks: number, complete: boolean) =>
      timelineEntryText(
        panelTimelineEntry(
          { kind: 'artifact', at: 'x', artifactId: 'a', name: 'out.txt', size: 1234, chunks, complete },
          1,
        ),
      );
    assert.equal(artifact(1, true), `out.txt · ${(1234).toLocaleString()} characters`);
    assert.equal(artifact(1, false), `out.txt · ${(1234).toLocaleString()} characters (streaming…)`);
    assert.equal(artifact(3, true), `out.txt · ${(1234).toLocaleString()} characters in 3 chunks`);
    assert.equal(artifact(3, false), `out.txt · ${(1234).toLocaleString()} characters in 3 chunks (streaming…)`);
  });

  it('keeps the latest entries within the panel bound and counts the rest', () => {
    const many: JournalEntry[] = [{ kind: 'send', at: 1, attempt: 1 }];
    for (let i = 0; i < PANEL_LIMITS.timelineEntries + 20; i++)
      many.push(ev(status(TaskState.TASK_STATE_WORKING, `step ${i}`)));
    const v = delegationPanelView(journalOf(many).view(10));
    assert.equal(v.timeline.length, PANEL_LIMITS.timelineEntries);
    assert.equal(v.timelineOmitted, 20);
    assert.equal(v.timeline.at(-1)?.text, `step ${PANEL_LIMITS.timelineEntries + 19}`);
    assert.equal(v.timeline.at(-1)?.seq, PANEL_LIMITS.timelineEntries + 20);
  });

  it('shows the signature and the executor the journal recorded, and the statistics of an approved patch', () => {
    const before = delegationPanelView(journalOf(completed).view(10), { patch: stats });
    assert.equal(before.signature, undefined);
    assert.equal(before.executor, undefined);
    assert.equal(before.patch, undefined, 'no statistics before the check approved a patch');

    const v = delegationPanelView(journalOf([...completed, verified]).view(10), { patch: stats });
    assert.deepEqual(v.signature, { status: 'verified', detail: 'signed by the gateway' });
    assert.equal(v.executor, 'formatter (builtin)');
    assert.equal(v.executorKind, 'builtin');
    assert.equal(v.executorDetail, 'runs in the gateway');
    assert.equal(v.confined, false);
    assert.deepEqual(v.patch, stats);
  });

  it('the latest result check counts, and one that did not verify shows no patch', () => {
    const invalid: JournalEntry = {
      kind: 'resultCheck',
      at: 5,
      signature: { status: 'invalid', detail: 'the digest does not match' },
    };
    const v = delegationPanelView(journalOf([...completed, verified, invalid]).view(10), { patch: stats });
    assert.deepEqual(v.signature, { status: 'invalid', detail: 'the digest does not match' });
    assert.equal(v.executor, undefined);
    assert.equal(v.patch, undefined);
  });

  it('merges in the review of the returned patch when one is open', () => {
    const review: ReviewView = { state: 'ready', files: [], checkOk: true };
    const record = journalOf([...completed, verified]).view(10);
    assert.equal(delegationPanelView(record).review, undefined);
    assert.deepEqual(delegationPanelView(record, { review }).review, review);
  });
});
