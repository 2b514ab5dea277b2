// The development-tool extension's pure parts: tool-call data parts as Gemini CLI's A2A server 0.25.2
// sends them (shapes taken from its wire), folded into the journal, and the patch built from its edits.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StreamResponse, TaskState } from '@a2a-js/sdk';
import {
  mergeToolCall,
  pendingToolCalls,
  slimDevToolEvent,
  slimToolCallData,
  toolAnswerParts,
  toolCallFromData,
  toolCallsPatch,
  workspaceRootOf,
} from '../../../src/core/devTool';
import { DelegationJournal } from '../../../src/core/delegation';
import type { DelegationRequest } from '../../../src/core/delegation';
import { buildDelegationRequest } from '../../../src/core/delegation/request';
import { READ_ONLY } from '../../../src/core/delegation/guards';
import { decodeEntry, encodeEntry } from '../../../src/node/journalStore';

const ROOT = '/work/ws';
const SCHEMA = { type: 'object', properties: { file_path: { type: 'string', description: 'x'.repeat(3000) } } };

function callData(status: string, extra: Record<string, unknown> = {}, callId = 'replace-1'): Record<string, unknown> {
  return {
    request: {
      callId,
      name: 'replace',
      args: { file_path: `${ROOT}/src/a.ts`, instruction: 'bump', old_string: 'x = 1', new_string: 'x = 2' },
      isClientInitiated: false,
      prompt_id: 'p1',
    },
    status,
    tool: {
      name: 'replace',
      displayName: 'Edit',
      description: 'Replaces text within a file. '.repeat(40),
      kind: 'edit',
      parameterSchema: SCHEMA,
      schema: { name: 'replace', parametersJsonSchema: SCHEMA },
    },
    ...extra,
  };
}

const CONFIRM = {
  confirmationDetails: {
    type: 'edit',
    title: 'Confirm Edit: src/a.ts',
    fileName: 'a.ts',
    filePath: `${ROOT}/src/a.ts`,
    fileDiff: '--- a.ts\tCurrent\n+++ a.ts\tProposed\n@@ -1,1 +1,1 @@\n-x = 1\n+x = 2\n',
    originalContent: 'x = 1\n',
    newContent: 'x = 2\n',
  },
};

function request(): DelegationRequest {
  return buildDelegationRequest({
    requestId: '00000000-0000-4000-8000-000000000001',
    task: 'bump x',
    paths: [],
    repository: undefined,
    capabilities: READ_ONLY,
    agent: {
      id: 'gemini',
      name: 'Gemini',
      endpoint: 'http://localhost:1/',
      protocolBinding: 'JSONRPC',
      protocolVersion: '0.3',
    },
    who: 'me',
    createdAt: 1,
  });
}

/** A status update as the SDK hands it over (0.3 JSON through its legacy conversion). */
function statusEvent(state: string, kind: string, data?: Record<string, unknown>): StreamResponse {
  return StreamResponse.fromJSON({
    statusUpdate: {
      taskId: 't1',
      contextId: 'c1',
      status: {
        state,
        ...(data ? { message: { messageId: 'm', role: 'ROLE_AGENT', parts: [{ data }] } } : {}),
      },
      metadata: { coderAgent: { kind }, model: 'gemini-2.5-pro' },
    },
  });
}

let seq = 0;
function event(j: DelegationJournal, ev: StreamResponse): void {
  j.apply({ kind: 'event', at: 10 + seq, taskId: 't1', seq: ++seq, sequenced: false, event: ev });
}

describe('development-tool tool calls', () => {
  it('reads a tool call tolerantly, keeping only what is shown', () => {
    const call = toolCallFromData(callData('awaiting_approval', CONFIRM));
    assert.ok(call);
    assert.equal(call.callId, 'replace-1');
    assert.equal(call.displayName, 'Edit');
    assert.equal(call.status, 'awaiting_approval');
    assert.deepEqual(call.options, ['proceed_once', 'proceed_always', 'cancel']);
    assert.equal(call.confirmation?.fileDiff, CONFIRM.confirmationDetails.fileDiff);
    assert.deepEqual(call.edit, { filePath: `${ROOT}/src/a.ts`, originalContent: 'x = 1\n', newContent: 'x = 2\n' });
    assert.ok(!JSON.stringify(call).includes('parameterSchema'));
    // Missing or mistyped fields are left out, not errors; a part without a request's call id is no tool call.
    const bare = toolCallFromData({ request: { callId: 'c9' }, status: 42, confirmationDetails: { type: 7 } });
    assert.deepEqual(bare, { callId: 'c9', name: '(unnamed tool)', status: 'unknown', args: {}, options: [] });
    assert.equal(toolCallFromData({ callId: 'c9', outcome: 'proceed_once' }), undefined);
    assert.equal(toolCallFromData('text'), undefined);
  });

  it('slims what is journaled: the schema goes, the description is shortened, the rest stays', () => {
    const data = callData('validating');
    const slim = slimToolCallData(data);
    const tool = slim.tool as Record<string, unknown>;
    assert.equal(tool.parameterSchema, undefined);
    assert.equal(tool.schema, undefined);
    assert.ok((tool.description as string).length <= 201);
    assert.deepEqual(slim.request, data.request);
    assert.ok(JSON.stringify(slim).length < JSON.stringify(data).length / 3);
    const ev = slimDevToolEvent(statusEvent('TASK_STATE_WORKING', 'tool-call-update', data));
    assert.ok(!JSON.stringify(StreamResponse.toJSON(ev)).includes('parameterSchema'));
  });

  it('merges updates: a later one without the confirmation keeps it; the answer sent stays recorded', () => {
    const asked = toolCallFromData(callData('awaiting_approval', CONFIRM));
    const ran = toolCallFromData(callData('success'));
    assert.ok(asked && ran);
    const merged = mergeToolCall({ ...asked, answered: 'proceed_once' }, ran);
    assert.equal(merged.status, 'success');
    assert.equal(merged.confirmation?.title, 'Confirm Edit: src/a.ts');
    assert.equal(merged.edit?.newContent, 'x = 2\n');
    assert.equal(merged.answered, 'proceed_once');
    assert.deepEqual(pendingToolCalls([merged]), []);
  });

  it('finds the workspace root from a confirmation title beside the absolute path', () => {
    const call = toolCallFromData(callData('awaiting_approval', CONFIRM));
    assert.ok(call);
    assert.equal(workspaceRootOf([call]), ROOT);
    const shortened = {
      ...call,
      confirmation: { ...call.confirmation, type: 'edit', title: 'Confirm Edit: .../a.ts' },
    };
    assert.equal(workspaceRootOf([shortened]), undefined);
  });

  it('builds a git patch per file, first content to last, that git applies; refuses paths outside the root', () => {
    const edit = (callId: string, file: string, before: string | undefined, after: string, status = 'success') =>
      toolCallFromData(
        callData(
          status,
          {
            confirmationDetails: {
              type: 'edit',
              title: `Confirm Edit: ${file}`,
              filePath: `${ROOT}/${file}`,
              newContent: after,
              ...(before === undefined ? {} : { originalContent: before }),
            },
          },
          callId,
        ),
      ) ?? assert.fail('a tool call');
    const calls = [
      edit('c1', 'src/a.ts', 'a\nb\nc\n', 'a\nB\nc\n'),
      edit('c2', 'docs/new.md', undefined, '# new\n'),
      edit('c3', 'src/a.ts', 'a\nB\nc\n', 'a\nB\nC\n'),
      edit('c4', 'src/a.ts', 'a\nB\nC\n', 'never\n', 'cancelled'),
    ];
    const built = toolCallsPatch(calls, ROOT);
    assert.equal(built?.kind, 'patch');
    if (built?.kind !== 'patch') return;
    assert.deepEqual(built.files, ['src/a.ts', 'docs/new.md']);
    assert.match(built.text, /^diff --git a\/src\/a\.ts b\/src\/a\.ts\n--- a\/src\/a\.ts\n\+\+\+ b\/src\/a\.ts\n/);
    assert.match(built.text, /-b\n-c\n\+B\n\+C\n/);
    assert.doesNotMatch(built.text, /never/);
    assert.match(built.text, /diff --git a\/docs\/new\.md b\/docs\/new\.md\nnew file mode 100644\n--- \/dev\/null\n/);
    const repo = mkdtempSync(join(tmpdir(), 'baton-devtool-'));
    try {
      mkdirSync(join(repo, 'src'));
      writeFileSync(join(repo, 'src', 'a.ts'), 'a\nb\nc\n');
      writeFileSync(join(repo, 'changes.patch'), built.text);
      execFileSync('git', ['init', '-q'], { cwd: repo });
      execFileSync('git', ['apply', 'changes.patch'], { cwd: repo });
      assert.equal(
        execFileSync('cat', ['src/a.ts', 'docs/new.md'], { cwd: repo, encoding: 'utf8' }),
        'a\nB\nC\n# new\n',
      );
    } finally {
      rmSync(repo, { recursive: true, force: true });
    }
    const escape = { ...calls[0], edit: { filePath: '/etc/passwd', newContent: 'x' } };
    const dotdot = { ...calls[0], edit: { filePath: `${ROOT}/../x`, newContent: 'x' } };
    assert.deepEqual(toolCallsPatch([calls[0], escape, dotdot], ROOT), {
      kind: 'outside',
      root: ROOT,
      paths: ['/etc/passwd', `${ROOT}/../x`],
    });
    assert.deepEqual(toolCallsPatch(calls, undefined), {
      kind: 'outside',
      root: undefined,
      paths: [`${ROOT}/src/a.ts`, `${ROOT}/docs/new.md`],
    });
  });
});

describe('the journal of a development-tool delegation', () => {
  it('keeps each tool call by call id; a tool-call update does not settle the task; Done completes it', () => {
    const j = new DelegationJournal(request());
    j.apply({ kind: 'send', at: 2, attempt: 1 });
    j.apply({ kind: 'task', at: 3, taskId: 't1', contextId: 'c1' });
    event(j, statusEvent('TASK_STATE_WORKING', 'tool-call-update', callData('validating')));
    event(j, statusEvent('TASK_STATE_WORKING', 'tool-call-confirmation', callData('awaiting_approval', CONFIRM)));
    event(j, statusEvent('TASK_STATE_INPUT_REQUIRED', 'state-change'));
    assert.equal(j.decide()?.outcome, 'input-required');
    let view = j.view(100);
    assert.equal(view.waiting, 'approval');
    assert.equal(view.toolCalls?.length, 1);
    assert.equal(view.actions.done, undefined);
    assert.match(
      view.timeline.map((e) => ('text' in e ? e.text : '')).join('\n'),
      /Edit \(replace\) a\.ts: awaiting approval/,
    );

    const answer = {
      messageId: 'a1',
      taskId: 't1',
      contextId: 'c1',
      role: 1,
      parts: toolAnswerParts('replace-1', 'proceed_once'),
      metadata: undefined,
      extensions: [],
      referenceTaskIds: [],
    };
    j.apply({ kind: 'reply', at: 20, message: answer });
    assert.equal(j.toolCalls()[0].answered, 'proceed_once');
    // The server repeats input-required on the approved call's updates (without `final`): still running.
    event(j, statusEvent('TASK_STATE_INPUT_REQUIRED', 'tool-call-update', callData('executing')));
    assert.equal(j.decide(), undefined);
    event(j, statusEvent('TASK_STATE_INPUT_REQUIRED', 'tool-call-update', callData('success')));
    assert.equal(j.decide(), undefined);
    event(j, statusEvent('TASK_STATE_WORKING', 'state-change'));
    event(j, statusEvent('TASK_STATE_INPUT_REQUIRED', 'state-change'));
    view = j.view(200);
    assert.equal(view.outcome, 'input-required');
    assert.equal(view.waiting, 'turn');
    assert.equal(view.actions.done, true);
    assert.equal(view.toolCalls?.[0].status, 'success');
    assert.equal(view.toolCalls?.[0].edit?.newContent, 'x = 2\n');

    j.apply({ kind: 'finished', at: 300, by: 'user' });
    assert.equal(j.decide()?.outcome, 'completed');
    assert.equal(j.decide()?.because?.code, 'completed.byUser');
    // The quiet cancel at the agent afterwards changes nothing.
    event(j, statusEvent('TASK_STATE_CANCELED', 'state-change'));
    assert.equal(j.decide()?.outcome, 'completed');
    assert.equal(j.taskState, TaskState.TASK_STATE_CANCELED);
  });

  it('the entries round-trip through the journal file; a journal written before tool calls were kept still loads', () => {
    const entries = [
      { kind: 'request', at: 1, request: request() },
      { kind: 'send', at: 2, attempt: 1 },
      { kind: 'task', at: 3, taskId: 't1', contextId: 'c1' },
      // Older versions journaled the whole data part, schema and all.
      {
        kind: 'event',
        at: 4,
        taskId: 't1',
        seq: 1,
        sequenced: false,
        event: statusEvent('TASK_STATE_WORKING', 'tool-call-confirmation', callData('awaiting_approval', CONFIRM)),
      },
      { kind: 'finished', at: 5, by: 'user' },
    ] as const;
    const decoded = entries.map((e) => decodeEntry(JSON.parse(JSON.stringify(encodeEntry(e)))));
    const j = DelegationJournal.fromEntries(decoded);
    assert.equal(j.toolCalls()[0].confirmation?.title, 'Confirm Edit: src/a.ts');
    assert.equal(j.devTool, true);
    assert.equal(j.decide()?.outcome, 'completed');
  });
});
