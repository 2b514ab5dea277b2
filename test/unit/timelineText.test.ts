// Timeline entries are recorded as codes with params and rendered where they are shown, with the
// reader's translate function: a journal reads in the reader's language, not the writer's.
import * as assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DelegationJournal } from '../../src/core/delegation';
import { delegationPanelView } from '../../src/core/delegation/panelView';
import { english, type Translate } from '../../src/core/protocol/l10n';
import { TIMELINE_MESSAGES, timelineEntryText } from '../../src/core/protocol/timelineText';
import { makeRequest } from './delegation/harness';

const endpoint = { url: 'https://agent.example/a2a', protocolBinding: 'JSONRPC', protocolVersion: '1.0' };

/** A translation that marks every message it was asked for, and fills it in as l10n would. */
const pirate: Translate = (message, ...args) => `Arr! ${english(message, ...args)}`;

describe('timelineEntryText', () => {
  it('fills params in order, then the agent text, in English by default', () => {
    assert.equal(
      timelineEntryText({ code: 'connection.gaveUpBecause', params: [3, 'timeout'], text: '' }),
      'Gave up reconnecting after 3 attempts (timeout).',
    );
    assert.equal(
      timelineEntryText({ code: 'status.text', params: ['working'], text: 'Reading {0}' }),
      '**working** — Reading {0}',
      "the agent's text is not a template",
    );
  });

  it('hands the English message and its arguments to the translate function given', () => {
    const asked: [string, Array<string | number | boolean>][] = [];
    const t: Translate = (message, ...args) => {
      asked.push([message, args]);
      return 'translated';
    };
    assert.equal(timelineEntryText({ code: 'message.user', params: [], text: 'main' }, t), 'translated');
    assert.deepEqual(asked, [['You: {0}', ['main']]]);
  });

  it('shows the stored text of an entry without a code, or with one it does not know', () => {
    assert.equal(timelineEntryText({ text: 'Written by an older version.' }, pirate), 'Written by an older version.');
    const unknown = { code: 'no.such.code', text: 'fallback' } as unknown as Parameters<typeof timelineEntryText>[0];
    assert.equal(timelineEntryText(unknown), 'fallback');
  });

  it('every message uses only placeholders in sequence from {0}', () => {
    for (const [code, message] of Object.entries(TIMELINE_MESSAGES)) {
      const used = [...message.matchAll(/\{(\d+)\}/g)].map((m) => Number(m[1]));
      const highest = used.length ? Math.max(...used) : -1;
      for (let i = 0; i <= highest; i++) assert.ok(used.includes(i), `${code} skips {${i}}`);
    }
  });

  it('a journal written in one language reads in the language of whoever shows it', () => {
    const j = new DelegationJournal(makeRequest(endpoint, 'Tidy'));
    j.apply({ kind: 'send', at: 1, attempt: 1 });
    j.apply({ kind: 'connection', at: 2, status: 'lost', error: 'socket hang up' });
    j.apply({ kind: 'cancel', at: 3, by: 'user' });
    j.apply({ kind: 'cancelResult', at: 4, confirmed: false, code: 'cancel.timeout', params: [10] });
    const record = j.view(5);
    // The record keeps the code, its params and the English line (for the CLI and the host's plain text).
    assert.deepEqual(
      record.timeline.map((e) => (e.kind === 'notice' ? [e.code, e.params, e.text] : undefined)),
      [
        ['connection.lostBecause', ['socket hang up'], 'Connection to the agent lost (socket hang up); reconnecting.'],
        ['cancel.user', [], 'Cancel requested.'],
        ['cancel.timeout', [10], 'The agent did not confirm the cancel within 10 s.'],
      ],
    );
    const shown = delegationPanelView(record).timeline.map((e) => timelineEntryText(e, pirate));
    assert.deepEqual(shown, [
      'Arr! Connection to the agent lost (socket hang up); reconnecting.',
      'Arr! Cancel requested.',
      'Arr! The agent did not confirm the cancel within 10 s.',
    ]);
  });
});
