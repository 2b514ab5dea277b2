// Why a delegation ended: Baton's reasons are journaled as codes and said in the reader's language;
// the agent's own reason is shown as it wrote it.
import * as assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TaskState } from '@a2a-js/sdk';
import { decideOutcome, type OutcomeFacts } from '../../src/core/delegation';
import { outcomeReasonText, type OUTCOME_MESSAGES } from '../../src/core/protocol/outcomeText';

const base: OutcomeFacts = {
  messageResult: false,
  cancelAnswered: false,
  cancelConfirmed: false,
  replyPending: false,
  endpoint: 'https://agent.example/a2a',
};
const shout = (m: string, ...args: Array<string | number | boolean>) =>
  `«${m.replace(/\{(\d+)\}/g, (_w, i: string) => String(args[Number(i)]))}»`;

describe('outcome reasons', () => {
  it("Baton's reason carries a code whose English is the reason, and reads in another language through t", () => {
    const d = decideOutcome({ ...base, sendFailed: { delivered: 'no', error: 'ECONNREFUSED' } });
    assert.equal(d?.outcome, 'failed');
    assert.equal(d?.reason, 'Could not reach the agent at https://agent.example/a2a: ECONNREFUSED. Nothing was sent.');
    assert.deepEqual(d?.because, { code: 'failed.unreachable', params: ['https://agent.example/a2a', 'ECONNREFUSED'] });
    assert.equal(outcomeReasonText(d?.because, d?.reason ?? '', shout), `«${d?.reason}»`);
  });

  it("the agent's own reason has no code and is never translated", () => {
    const d = decideOutcome({ ...base, taskState: TaskState.TASK_STATE_FAILED, stateText: 'disk full' });
    assert.deepEqual(d, { outcome: 'failed', reason: 'disk full' });
    assert.equal(outcomeReasonText(d?.because, d?.reason ?? '', shout), 'disk full');
    const none = decideOutcome({ ...base, taskState: TaskState.TASK_STATE_FAILED });
    assert.equal(none?.because?.code, 'failed');
    assert.equal(none?.reason, 'The agent reported the task failed and gave no reason.');
  });

  it('every outcome Baton decides for itself has a code (cancel, deadline, contact lost, message answers)', () => {
    const cases: OutcomeFacts[] = [
      { ...base, messageResult: true },
      { ...base, cancelBy: 'user', cancelAnswered: true, cancelConfirmed: false },
      { ...base, cancelBy: 'deadline', cancelAnswered: true, cancelConfirmed: true },
      { ...base, taskState: TaskState.TASK_STATE_CANCELED, cancelBy: 'deadline' },
      { ...base, contactLost: 'socket hang up' },
      { ...base, sendFailed: { delivered: 'maybe', error: 'timeout' } },
    ];
    for (const f of cases) {
      const d = decideOutcome(f);
      assert.ok(d?.because, JSON.stringify(f));
      assert.equal(outcomeReasonText(d.because, ''), d.reason);
    }
  });

  it('a code this version does not know shows the stored English', () => {
    assert.equal(
      outcomeReasonText({ code: 'from.a.newer.version' as keyof typeof OUTCOME_MESSAGES }, 'stored'),
      'stored',
    );
    assert.equal(outcomeReasonText(undefined, 'stored'), 'stored');
  });
});
