// Journals written by older versions kept the result check (signature, executor, approved patch) in a
// sidecar file and stored English sentences in their entries: loaded by this version they show the
// same as a journal this version writes.
import * as assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { TaskState, type Task } from '@a2a-js/sdk';
import { DelegationJournal, type JournalEntry } from '../../../src/core/delegation';
import { delegationPanelView } from '../../../src/core/delegation/panelView';
import { timelineEntryText } from '../../../src/core/protocol/timelineText';
import { adoptLegacyResultCheck, readSidecar, sidecarPath } from '../../../src/node/delegationSidecar';
import { encodeEntry, JournalStore } from '../../../src/node/journalStore';
import { makeRequest, tempDir } from './harness';

const endpoint = { url: 'https://agent.example/a2a', protocolBinding: 'JSONRPC', protocolVersion: '1.0' };

function completedTask(): Task {
  return {
    id: 't',
    contextId: 'c',
    status: { state: TaskState.TASK_STATE_COMPLETED, timestamp: undefined, message: undefined },
    artifacts: [],
    history: [],
    metadata: undefined,
  };
}

/** The same delegation, in the entries both versions write alike. */
const common = (): JournalEntry[] => [
  { kind: 'send', at: 2, attempt: 1 },
  { kind: 'task', at: 3, taskId: 't', contextId: 'c' },
  { kind: 'connection', at: 4, status: 'lost', error: 'socket hang up' },
  { kind: 'snapshot', at: 5, source: 'final', task: completedTask() },
  { kind: 'outcome', at: 6, outcome: 'completed', reason: 'The agent completed the task.' },
];

const oldSidecar = {
  folder: '/repo',
  base: { baseCommit: 'abc', uncommittedDigest: 'sha256:1' },
  signature: { status: 'verified', detail: 'signed by https://agent.example' },
  patch: { artifactId: 'a1', sha256: 'sha256:ff' },
  executor: 'claude (headless)',
  executorKind: 'headless',
  executorDetail: 'Unconfined: bubblewrap is not installed',
  confined: false,
};

/** Writes a journal as JSON lines, as any version of JournalStore does. */
function writeJournal(dir: string, requestId: string, entries: readonly JournalEntry[]): void {
  writeFileSync(join(dir, `${requestId}.jsonl`), entries.map((e) => JSON.stringify(encodeEntry(e)) + '\n').join(''));
}

async function load(dir: string, requestId: string): Promise<DelegationJournal> {
  const loaded = await new JournalStore(dir).load(requestId);
  return DelegationJournal.fromEntries(loaded.entries);
}

describe('journals written by older versions', () => {
  it('take their result check from the sidecar and show what this version shows', async () => {
    const { dir, cleanup } = tempDir();
    try {
      const request = makeRequest(endpoint, 'Fix it', { createdAt: 1 }, 'old-1');
      const old: JournalEntry[] = [
        { kind: 'request', at: 1, request },
        ...common(),
        { kind: 'cancelResult', at: 7, confirmed: true, detail: 'The agent confirmed the cancel.' },
        {
          kind: 'notice',
          at: 8,
          level: 'warning',
          text: 'Streaming from the agent keeps failing; following the task by polling instead.',
        },
      ];
      writeJournal(dir, 'old-1', old);
      writeFileSync(sidecarPath(dir, 'old-1'), JSON.stringify(oldSidecar));

      const current: JournalEntry[] = [
        { kind: 'request', at: 1, request: { ...request, requestId: 'new-1' } },
        ...common(),
        { kind: 'cancelResult', at: 7, confirmed: true, code: 'cancel.confirmed' },
        { kind: 'notice', at: 8, level: 'warning', code: 'stream.keepsFailing' },
        {
          kind: 'resultCheck',
          at: 9,
          signature: { status: 'verified', detail: 'signed by https://agent.example' },
          executor: {
            label: 'claude (headless)',
            kind: 'headless',
            detail: 'Unconfined: bubblewrap is not installed',
            confined: false,
          },
          patch: { artifactId: 'a1', sha256: 'sha256:ff' },
        },
      ];
      writeJournal(dir, 'new-1', current);

      const oldJournal = await load(dir, 'old-1');
      assert.equal(adoptLegacyResultCheck(dir, oldJournal, 100), true);
      const newJournal = await load(dir, 'new-1');
      assert.equal(adoptLegacyResultCheck(dir, newJournal, 100), false, 'no sidecar, nothing to adopt');

      const stats = { files: 2, additions: 3, deletions: 1 };
      const before = delegationPanelView(oldJournal.view(50), { patch: stats });
      const now = delegationPanelView(newJournal.view(50), { patch: stats });
      assert.deepEqual(before.signature, { status: 'verified', detail: 'signed by https://agent.example' });
      assert.equal(before.executor, 'claude (headless)');
      assert.equal(before.executorKind, 'headless');
      assert.equal(before.executorDetail, 'Unconfined: bubblewrap is not installed');
      assert.equal(before.confined, false);
      assert.deepEqual(before.patch, stats);
      assert.deepEqual(oldJournal.resultCheck?.patch, { artifactId: 'a1', sha256: 'sha256:ff' });

      const shown = (v: typeof before) => ({
        ...v,
        id: '',
        timeline: v.timeline.map((e) => [e.seq, e.kind, timelineEntryText(e)]),
      });
      assert.deepEqual(shown(before), shown(now));
      // The sidecar still says where the delegation was started from.
      assert.deepEqual(readSidecar(dir, 'old-1'), { folder: '/repo', base: oldSidecar.base });
    } finally {
      cleanup();
    }
  });

  it('a result check recorded in the journal wins over an old sidecar', async () => {
    const { dir, cleanup } = tempDir();
    try {
      const request = makeRequest(endpoint, 'Fix it', {}, 'old-2');
      writeJournal(dir, 'old-2', [
        { kind: 'request', at: 1, request },
        ...common(),
        { kind: 'resultCheck', at: 9, signature: { status: 'unsigned', detail: 'rechecked' } },
      ]);
      writeFileSync(sidecarPath(dir, 'old-2'), JSON.stringify(oldSidecar));
      const journal = await load(dir, 'old-2');
      assert.equal(adoptLegacyResultCheck(dir, journal, 100), false);
      const v = delegationPanelView(journal.view(50));
      assert.deepEqual(v.signature, { status: 'unsigned', detail: 'rechecked' });
      assert.equal(v.executor, undefined);
    } finally {
      cleanup();
    }
  });

  it('a sidecar without a result check, or one that cannot be read, adds nothing', async () => {
    const { dir, cleanup } = tempDir();
    try {
      for (const [id, content] of [
        ['s-1', JSON.stringify({ folder: '/repo' })],
        ['s-2', '{ not json'],
      ] as const) {
        writeJournal(dir, id, [{ kind: 'request', at: 1, request: makeRequest(endpoint, 'x', {}, id) }, ...common()]);
        writeFileSync(sidecarPath(dir, id), content);
        const journal = await load(dir, id);
        assert.equal(adoptLegacyResultCheck(dir, journal, 100), false, id);
        assert.equal(delegationPanelView(journal.view(50)).signature, undefined, id);
      }
    } finally {
      cleanup();
    }
  });
});
