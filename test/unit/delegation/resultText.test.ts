// What Baton says about a result is data (a code and what it names): the check's `detail` is it in
// English (logs, the CLI), the panel says it in the user's language.
import * as assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { english, type Translate } from '../../../src/core/protocol/l10n';
import { resultCheckText, type ResultMessage } from '../../../src/core/resultText';

describe('result check messages', () => {
  it('say in English what the check always said', () => {
    const cases: [ResultMessage, string][] = [
      [{ code: 'no-task' }, 'the agent returned no task, so there is no result to check'],
      [{ code: 'no-signature', streamedDiffers: false }, 'the agent sent no signed result'],
      [
        { code: 'no-signature', streamedDiffers: true },
        'the agent sent no signed result; what was streamed differs from the final task, which is what is shown',
      ],
      [
        { code: 'no-pinned-key', signer: 'https://a.example', streamedDiffers: false },
        'signed, but no key is pinned for https://a.example to check it with',
      ],
      [
        { code: 'verified', signer: 'https://a.example', kid: 'abcdefghijklmnopq' },
        'signed by https://a.example’s key abcdefghijkl',
      ],
      [
        { code: 'patch-ambiguous', count: 2, ids: ['p1', 'p2'] },
        'The task carries 2 changes.patch artifacts (p1, p2): Baton cannot tell which one to review.',
      ],
      [
        { code: 'artifact-differs', name: 'changes.patch' },
        'Artifact "changes.patch" as streamed differs from the final result the agent signed. Do not apply it.',
      ],
      [{ code: 'envelope', detail: 'The signature does not verify.' }, 'The signature does not verify.'],
      [
        { code: 'envelope-legacy', detail: 'The request differs.', version: '0.3' },
        "The request differs. The request went over A2A 0.3, which does not carry all of what Baton sent, so the agent signed what it received instead: approve the agent's A2A 1.0 interface to get results that verify.",
      ],
    ];
    for (const [m, text] of cases) assert.equal(resultCheckText(m, english), text, m.code);
  });

  it('are said through the translate function they are given, with what they name as arguments', () => {
    const calls: unknown[][] = [];
    const t: Translate = (message, ...args) => {
      calls.push([message, ...args]);
      return 'traduit';
    };
    assert.equal(resultCheckText({ code: 'task-mismatch', taskId: 't-2', expected: 't-1' }, t), 'traduit');
    assert.deepEqual(calls, [['The agent answered with task {0}, not {1}.', 't-2', 't-1']]);
  });
});
