// Delegate Again (src/core/delegation/again.ts): what a new delegation takes from an earlier one's
// request, read back from the first message exactly as the shared builder wrote it.
import * as assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { META } from '../../../src/core/batonProfile';
import type { DelegationRequest } from '../../../src/core/delegation';
import { againPlan } from '../../../src/core/delegation/again';
import { buildDelegationRequest } from '../../../src/core/delegation/request';

const agent: DelegationRequest['agent'] = {
  id: 'https://agents.example/.well-known/agent-card.json',
  name: 'Refactor',
  endpoint: 'https://agents.example/a2a',
  protocolBinding: 'JSONRPC',
  protocolVersion: '1.0',
  cardUrl: 'https://agents.example/.well-known/agent-card.json',
};
const ids = { requestId: '6f1c1a3e-1111-4222-8333-944455556666', createdAt: 1_700_000_000_000, who: 'dev' };
const range = { startLine: 3, startCharacter: 2, endLine: 5, endCharacter: 0 };
const diagnostic = {
  path: 'src/cart.js',
  range: { startLine: 9, startCharacter: 4, endLine: 9, endCharacter: 13 },
  severity: 'error' as const,
  message: "'lineTotal' is not defined",
  source: 'eslint',
  code: 'no-undef',
};

describe('Delegate Again: the plan from an earlier request', () => {
  it('takes the agent, the task as typed, the capabilities asked for, the deadline’s length, the context’s places and the parent', () => {
    const request = buildDelegationRequest({
      ...ids,
      agent,
      task: 'Rename lineTotal to itemTotal\nand keep the exports',
      selection: { path: 'src/cart.js', range, text: 'const x = 1;\n', languageId: 'javascript' },
      files: [
        { path: 'src/util.js', text: 'export {}', languageId: 'javascript' },
        { path: 'docs/', text: '' },
      ],
      diagnostics: [diagnostic],
      capabilities: { write: true, shell: false, network: true },
      deadline: ids.createdAt + 15 * 60_000,
      parentRequestId: 'parent-1',
    });
    const plan = againPlan(request);
    assert.deepEqual(plan, {
      agentId: agent.cardUrl,
      agentName: 'Refactor',
      task: 'Rename lineTotal to itemTotal\nand keep the exports',
      capabilities: { write: true, shell: false, network: true },
      deadlineMinutes: 15,
      selection: { path: 'src/cart.js', range },
      files: ['src/util.js', 'docs/'],
      diagnostics: [diagnostic],
      parentRequestId: 'parent-1',
    });
  });

  it('asks for what was asked, not what the agent granted, and leaves out what the first had none of', () => {
    const built = buildDelegationRequest({
      ...ids,
      agent,
      task: 'Format it',
      capabilities: { write: true, shell: true, network: false },
    });
    const granted: DelegationRequest = {
      ...built,
      capabilities: {
        requested: built.capabilities.requested,
        effective: { write: true, shell: false, network: false },
      },
    };
    const plan = againPlan(granted);
    assert.deepEqual(plan.capabilities, { write: true, shell: true, network: false });
    assert.equal('deadlineMinutes' in plan, false);
    assert.equal('selection' in plan, false);
    assert.equal('parentRequestId' in plan, false);
    assert.deepEqual(plan.files, []);
    assert.deepEqual(plan.diagnostics, []);
  });

  it('uses the agent’s id where an older journal kept no card URL, and keeps a deadline within a day', () => {
    const { cardUrl: _dropped, ...older } = agent;
    const plan = againPlan(
      buildDelegationRequest({ ...ids, agent: older, task: 't', deadline: ids.createdAt + 3 * 24 * 3_600_000 }),
    );
    assert.equal(plan.agentId, agent.id);
    assert.equal(plan.deadlineMinutes, 24 * 60);
    assert.equal(
      againPlan(buildDelegationRequest({ ...ids, agent, task: 't', deadline: ids.createdAt + 10 })).deadlineMinutes,
      1,
    );
  });

  it('skips context parts it cannot read back (a selection without a range, a diagnostic without a message)', () => {
    const request = buildDelegationRequest({ ...ids, agent, task: 't', diagnostics: [diagnostic] });
    const parts = [
      ...request.message.parts.map((p) =>
        p.metadata?.[META.context] === 'diagnostics' && p.content?.$case === 'data'
          ? { ...p, content: { $case: 'data' as const, value: [diagnostic, { path: 'a.js', severity: 'error' }] } }
          : p,
      ),
      {
        content: { $case: 'text' as const, value: 'x' },
        filename: 'b.js',
        mediaType: 'text/plain',
        metadata: { [META.context]: 'selection' },
      },
    ];
    const plan = againPlan({ ...request, message: { ...request.message, parts } });
    assert.deepEqual(plan.diagnostics, [diagnostic]);
    assert.equal(plan.selection, undefined);
  });

  it('refuses a request whose first message has no task text, with a reason', () => {
    const request = buildDelegationRequest({ ...ids, agent, task: 't' });
    const noText = { ...request, message: { ...request.message, parts: [] } };
    assert.throws(() => againPlan(noText), /no task text/);
  });
});
