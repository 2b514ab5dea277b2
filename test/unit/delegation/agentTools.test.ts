// The pure parts of the language-model tools: what a model may send (and the errors that say what to
// send instead), the confirmation shown before a chat agent delegates, the burst cap, and the report
// get task gives back.
import * as assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  AGENT_TOOL_NAMES,
  BurstCap,
  burstCapError,
  cancelConfirmation,
  delegateConfirmation,
  parseDelegateInput,
  parseFindAgentsInput,
  parseTaskInput,
  taskReport,
  workspacePath,
} from '../../../src/core/delegation/agentTools';
import { DelegationJournal } from '../../../src/core/delegation';
import { english } from '../../../src/core/protocol/l10n';
import { makeRequest } from './harness';
import { Role, TaskState } from '@a2a-js/sdk';

const AGENT = 'http://127.0.0.1:7000/a2a/formatter/.well-known/agent-card.json';

function error(r: { ok: boolean; error?: string }): string {
  assert.equal(r.ok, false, 'expected a refusal');
  return r.error ?? '';
}

describe('delegate tool input', () => {
  it('takes agent and task, read-only by default, with normalised workspace paths', () => {
    const r = parseDelegateInput({
      agent: ` ${AGENT} `,
      task: '  Format src/  ',
      files: ['src\\app.ts', './src/app.ts', 'lib/'],
    });
    assert.ok(r.ok);
    assert.deepEqual(r.value, {
      agent: AGENT,
      task: 'Format src/',
      files: ['src/app.ts', 'lib'],
      selection: false,
      capabilities: { write: false, shell: false, network: false },
    });
  });

  it('grants only the capabilities asked for, and keeps the deadline and the parent', () => {
    const r = parseDelegateInput({
      agent: AGENT,
      task: 't',
      capabilities: { write: true },
      deadlineMinutes: 15,
      selection: true,
      parentRequestId: '1b4e28ba-2fa1-11d2-883f-0016d3cca427',
    });
    assert.ok(r.ok);
    assert.deepEqual(r.value.capabilities, { write: true, shell: false, network: false });
    assert.equal(r.value.deadlineMinutes, 15);
    assert.equal(r.value.selection, true);
    assert.equal(r.value.parentRequestId, '1b4e28ba-2fa1-11d2-883f-0016d3cca427');
  });

  it('refuses what is missing or malformed, saying what to send', () => {
    assert.match(error(parseDelegateInput(undefined)), /must be an object with at least "agent" and "task"/);
    assert.match(error(parseDelegateInput({ task: 'x' })), /"agent" is required: .*baton_find_agents/);
    assert.match(error(parseDelegateInput({ agent: AGENT, task: '   ' })), /"task" is required/);
    assert.match(error(parseDelegateInput({ agent: AGENT, task: 'x'.repeat(20_001) })), /at most 20000/);
    assert.match(
      error(parseDelegateInput({ agent: AGENT, task: 't', files: 'src/a.ts' })),
      /list of workspace-relative/,
    );
    assert.match(
      error(parseDelegateInput({ agent: AGENT, task: 't', files: Array.from({ length: 21 }, (_, i) => `f${i}`) })),
      /names 21 files; at most 20/,
    );
    assert.match(error(parseDelegateInput({ agent: AGENT, task: 't', selection: 'yes' })), /"selection" must be true/);
    assert.match(
      error(parseDelegateInput({ agent: AGENT, task: 't', capabilities: ['write'] })),
      /"capabilities" must be an object/,
    );
    assert.match(
      error(parseDelegateInput({ agent: AGENT, task: 't', capabilities: { write: 'yes' } })),
      /"capabilities.write" must be true or false/,
    );
    assert.match(
      error(parseDelegateInput({ agent: AGENT, task: 't', capabilities: { root: true } })),
      /unknown field\(s\) "root"; the fields are write, shell, network/,
    );
    for (const d of [0, -5, 1.5, 1441, '10'])
      assert.match(
        error(parseDelegateInput({ agent: AGENT, task: 't', deadlineMinutes: d })),
        /whole number of minutes from 1 to 1440/,
      );
    assert.match(
      error(parseDelegateInput({ agent: AGENT, task: 't', parentRequestId: '../x' })),
      /"parentRequestId" must be the id of a delegation/,
    );
    assert.match(error(parseDelegateInput({ agent: AGENT, task: 't', apply: true })), /unknown field\(s\) "apply"/);
  });

  it('refuses paths that leave the workspace folder', () => {
    for (const p of [
      '/etc/passwd',
      'C:\\Windows\\win.ini',
      'c:/x',
      '~/.ssh/id_rsa',
      '../secret',
      'src/../../x',
      'a//b',
      'a\u0000b',
      ' ',
    ])
      assert.equal(workspacePath(p).ok, false, p);
    assert.deepEqual(workspacePath('src/app.ts'), { ok: true, path: 'src/app.ts' });
    assert.match(
      error(parseDelegateInput({ agent: AGENT, task: 't', files: ['src/ok.ts', '../../etc/passwd'] })),
      /leaves the workspace folder.*Give paths relative to the workspace folder/,
    );
  });

  it('find agents takes an optional query; get task and cancel take an id', () => {
    assert.deepEqual(parseFindAgentsInput(undefined), { ok: true, value: {} });
    assert.deepEqual(parseFindAgentsInput({ query: '  format ' }), { ok: true, value: { query: 'format' } });
    assert.match(error(parseFindAgentsInput({ query: 3 })), /"query" must be a string/);
    assert.match(error(parseFindAgentsInput({ name: 'x' })), /unknown field/);
    assert.deepEqual(parseTaskInput({ id: 'abc-1' }, AGENT_TOOL_NAMES.getTask), { ok: true, value: { id: 'abc-1' } });
    assert.match(error(parseTaskInput({}, AGENT_TOOL_NAMES.getTask)), /baton_get_task: "id" must be a delegation's id/);
    assert.match(error(parseTaskInput({ id: '../../x' }, AGENT_TOOL_NAMES.cancelTask)), /^baton_cancel_task:/);
  });

  it('the tool names and input schemas in package.json are the ones the code reads', () => {
    const pkg = JSON.parse(readFileSync(join(__dirname, '../../../package.json'), 'utf8')) as {
      contributes: {
        languageModelTools: {
          name: string;
          toolReferenceName: string;
          when: string;
          canBeReferencedInPrompt: boolean;
          inputSchema: { properties: Record<string, unknown>; required?: string[]; additionalProperties: boolean };
        }[];
      };
    };
    const tools = pkg.contributes.languageModelTools;
    assert.deepEqual(
      tools.map((t) => [t.name, t.toolReferenceName]),
      [
        [AGENT_TOOL_NAMES.findAgents, 'batonAgents'],
        [AGENT_TOOL_NAMES.delegate, 'batonDelegate'],
        [AGENT_TOOL_NAMES.getTask, 'batonTask'],
        [AGENT_TOOL_NAMES.cancelTask, 'batonCancel'],
      ],
    );
    for (const t of tools) {
      assert.equal(t.when, 'isWorkspaceTrusted', t.name);
      assert.equal(t.canBeReferencedInPrompt, true, t.name);
      assert.equal(t.inputSchema.additionalProperties, false, t.name);
    }
    // Every field the schema offers is one the parser takes (a schema field it refuses would trap the model).
    const delegate = tools[1].inputSchema;
    const input: Record<string, unknown> = {
      agent: AGENT,
      task: 't',
      files: ['a.ts'],
      selection: true,
      capabilities: { write: true, shell: false, network: false },
      deadlineMinutes: 5,
      parentRequestId: 'p-1',
    };
    assert.deepEqual(Object.keys(delegate.properties).sort(), Object.keys(input).sort());
    assert.ok(parseDelegateInput(input).ok);
    assert.deepEqual(delegate.required, ['agent', 'task']);
  });
});

describe('the confirmation before a chat agent delegates', () => {
  const facts = {
    agentName: 'Formatter (built-in)',
    endpoint: 'http://127.0.0.1:7000/a2a/formatter',
    task: 'Format the files under src/',
    context: 'Sent: this text and src/app.ts. The agent works on a throwaway copy of your repository.',
    capabilities: { write: true, shell: false, network: false },
    deadlineMinutes: 15,
  };

  it('names the agent, the task, the context, the capabilities and the deadline', () => {
    const c = delegateConfirmation(facts, english);
    assert.equal(c.title, 'Delegate to Formatter (built-in)?');
    const lines = c.message.split('\n\n');
    assert.equal(lines[0], 'Agent: Formatter (built-in) (http://127.0.0.1:7000/a2a/formatter)');
    assert.equal(lines[1], 'Task: Format the files under src/');
    assert.equal(lines[2], `Context: ${facts.context}`);
    assert.equal(lines[3], 'Capabilities: write');
    assert.equal(lines[4], 'Deadline: 15 minutes');
    assert.match(lines.at(-1) ?? '', /never applied by the agent/);
  });

  it('says read-only when nothing is asked, names the parent, and shortens a long task', () => {
    const c = delegateConfirmation(
      {
        ...facts,
        capabilities: { write: false, shell: false, network: false },
        task: 'y'.repeat(5000),
        parentTitle: 'Refactor the cart',
      },
      english,
    );
    assert.match(c.message, /Capabilities: read-only \(may only propose a patch\)/);
    assert.match(c.message, /Started from within: Refactor the cart/);
    assert.match(c.message, new RegExp(`Task: y{1000}…\\n`));
    assert.doesNotMatch(c.message, /y{1001}/);
  });

  it('is said through the translate function it is given', () => {
    const c = delegateConfirmation(facts, (m, ...a) => `«${english(m, ...a)}»`);
    assert.ok(
      c.message.split('\n\n').every((l) => l.startsWith('«') && l.endsWith('»')),
      c.message,
    );
  });

  it('cancel names the task and its state', () => {
    const c = cancelConfirmation({ title: 'Format src', agentName: 'Formatter', state: 'Working' }, english);
    assert.equal(c.title, 'Cancel the delegation to Formatter?');
    assert.match(c.message, /Task: Format src\n\nState: Working/);
  });
});

describe('the burst cap on agent-started delegations', () => {
  it('allows five in a minute, refuses the sixth with when to retry, and frees slots as they age', () => {
    const cap = new BurstCap(5, 60_000);
    const t0 = 1_000_000;
    for (let i = 0; i < 5; i++) assert.deepEqual(cap.take(t0 + i * 1000), { ok: true });
    const refused = cap.take(t0 + 10_000);
    assert.deepEqual(refused, { ok: false, retryAfterMs: 50_000 });
    // A refusal takes no slot: the first start still leaves the window first.
    assert.deepEqual(cap.take(t0 + 59_999), { ok: false, retryAfterMs: 1 });
    assert.deepEqual(cap.take(t0 + 60_000), { ok: true });
    assert.equal(cap.take(t0 + 60_001).ok, false);
    assert.deepEqual(cap.take(t0 + 61_000), { ok: true });
  });

  it('says the limit and when to try again in words a model can act on', () => {
    const cap = new BurstCap(5, 60_000);
    assert.equal(
      burstCapError(cap, 12_300),
      'baton_delegate: refused: chat agents may start at most 5 delegations per 60 seconds, and that many were started. Follow the running ones with baton_get_task, or try again in 13 seconds.',
    );
  });
});

describe('get task’s report', () => {
  function journalWith(): DelegationJournal {
    const request = makeRequest(
      { url: 'http://127.0.0.1:1/a2a/x', protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
      'Format src',
      { parentRequestId: 'parent-1' },
      'req-1',
    );
    const j = new DelegationJournal(request);
    j.apply({ kind: 'send', at: 1, attempt: 1 });
    j.apply({ kind: 'task', at: 2, taskId: 't', contextId: 'c' });
    const status = (seq: number, state: TaskState, text: string) =>
      j.apply({
        kind: 'event',
        at: 2 + seq,
        taskId: 't',
        seq,
        sequenced: true,
        event: {
          payload: {
            $case: 'statusUpdate',
            value: {
              taskId: 't',
              contextId: 'c',
              status: {
                state,
                timestamp: undefined,
                message: {
                  messageId: `m${seq}`,
                  contextId: 'c',
                  taskId: 't',
                  role: Role.ROLE_AGENT,
                  parts: [
                    { content: { $case: 'text', value: text }, filename: '', mediaType: '', metadata: undefined },
                  ],
                  metadata: undefined,
                  extensions: [],
                  referenceTaskIds: [],
                },
              },
              metadata: undefined,
            },
          },
        },
      });
    status(1, TaskState.TASK_STATE_WORKING, 'Reading src/');
    status(2, TaskState.TASK_STATE_WORKING, 'Formatting 2 files');
    return j;
  }

  it('a running task: its state, last steps and how to follow it', () => {
    const text = taskReport(journalWith().view(10));
    assert.match(text, /^Delegation req-1: "Format src" to Test agent\.\nState: working\./);
    assert.match(text, /Started from within delegation parent-1\./);
    assert.match(text, /Last steps \(the agent’s words\):\n- \[working\] Reading src\/\n- Formatting 2 files/);
    assert.match(text, /Still running: follow it with baton_get_task \{"id": "req-1"\}/);
    assert.doesNotMatch(text, /Patch:/);
  });

  it('a completed task: the result, the patch per file and the review command, never an apply', () => {
    const j = journalWith();
    j.apply({
      kind: 'event',
      at: 20,
      taskId: 't',
      seq: 3,
      sequenced: true,
      event: {
        payload: {
          $case: 'statusUpdate',
          value: {
            taskId: 't',
            contextId: 'c',
            status: { state: TaskState.TASK_STATE_COMPLETED, timestamp: undefined, message: undefined },
            metadata: undefined,
          },
        },
      },
    });
    const text = taskReport(j.view(30), {
      patch: {
        files: [
          { path: 'src/a.ts', added: 3, removed: 1 },
          { path: 'src/b.css', added: 0, removed: 2 },
        ],
        additions: 3,
        deletions: 3,
      },
    });
    assert.match(text, /State: completed\./);
    assert.match(text, /Patch: 2 file\(s\), \+3 −3, waiting for the user's review \(nothing is applied\):/);
    assert.match(text, /- src\/a\.ts \(\+3 −1\)\n- src\/b\.css \(\+0 −2\)/);
    assert.match(text, /command baton\.reviewChanges and the argument "req-1"/);
    assert.match(text, /Only the user can apply it\./);
    assert.doesNotMatch(text, /Still running/);
  });
});
