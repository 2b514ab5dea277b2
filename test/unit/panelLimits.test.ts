// The host trims every delegation view to the panel's bounds before posting it: however much an agent
// sent, a snapshot stays small and cheap to build, and says what it left out.
import * as assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { boundDelegationView, PANEL_LIMITS, shorten } from '../../src/core/protocol/panelLimits';
import type { DelegationView } from '../../src/core/protocol/panelProtocol';

function view(over: Partial<DelegationView>): DelegationView {
  return {
    id: 'd-1',
    title: 'Format',
    agent: { name: 'Formatter', endpoint: 'http://127.0.0.1:7777/a2a/formatter' },
    state: 'working',
    terminal: false,
    startedAt: new Date().toISOString(),
    capabilities: { write: false, shell: false, network: false },
    timeline: [],
    artifacts: [],
    ...over,
  };
}

describe('panel limits: the host posts bounded snapshots', () => {
  it('keeps the latest entries within the entry and character budgets and counts the rest', () => {
    const mib = 'm'.repeat(1024 * 1024);
    const timeline = Array.from({ length: 2000 }, (_, i) => ({
      seq: i + 1,
      at: new Date().toISOString(),
      kind: 'message' as const,
      markdown: true,
      text: `${i}:${mib}`,
    }));
    const started = performance.now();
    const bounded = boundDelegationView(
      view({
        timeline,
        timelineOmitted: 10,
        title: 't'.repeat(100_000),
        reason: 'r'.repeat(5_000_000),
        question: 'q'.repeat(3_000_000),
      }),
    );
    const ms = performance.now() - started;
    const chars = bounded.timeline.reduce((n, e) => n + e.text.length, 0);
    assert.ok(chars <= PANEL_LIMITS.snapshotChars, `${chars} characters of timeline`);
    assert.ok(bounded.timeline.length <= PANEL_LIMITS.timelineEntries);
    assert.equal(bounded.timelineOmitted, 10 + 2000 - bounded.timeline.length);
    assert.equal(bounded.timeline[bounded.timeline.length - 1].seq, 2000, 'the latest entry is kept');
    for (const e of bounded.timeline) {
      assert.ok(e.text.length <= PANEL_LIMITS.entryChars);
      assert.equal(e.fullChars, `${e.seq - 1}:`.length + mib.length, 'the full length is kept');
    }
    assert.ok(bounded.title.length <= PANEL_LIMITS.lineChars);
    assert.ok((bounded.reason ?? '').length <= PANEL_LIMITS.entryChars);
    assert.equal(bounded.question?.length, PANEL_LIMITS.entryChars);
    assert.equal(bounded.questionChars, 3_000_000);
    assert.ok(JSON.stringify(bounded).length < PANEL_LIMITS.snapshotChars + 3 * PANEL_LIMITS.entryChars + 200_000);
    assert.ok(ms < 1000, `bounding took ${ms} ms`);
  });

  it('leaves a small view as it is and never splits a surrogate pair', () => {
    const small = view({ timeline: [{ seq: 1, at: new Date().toISOString(), kind: 'step', text: 'ok' }] });
    const bounded = boundDelegationView(small);
    assert.deepEqual(bounded.timeline, small.timeline);
    assert.equal(bounded.timelineOmitted, 0);
    const cut = shorten(`${'a'.repeat(9)}😀tail`, 10);
    assert.equal(cut.text, 'a'.repeat(9));
    assert.ok(cut.shortened);
  });
});
