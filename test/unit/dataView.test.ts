// Data parts in the timeline (src/core/protocol/dataView.ts, timelineContent in src/core/delegation.ts,
// and the panel's bounds): kept as values while they fit, as summaries beyond, never cut inside.
import * as assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Part } from '@a2a-js/sdk';
import { timelineContent } from '../../src/core/delegation';
import { panelTimelineEntry } from '../../src/core/delegation/panelView';
import { recordedPatches } from '../../src/core/delegation/record';
import { boundData, dataSummaryLine, formatBytes, summarizeData } from '../../src/core/protocol/dataView';
import { boundDelegationView, PANEL_LIMITS } from '../../src/core/protocol/panelLimits';
import type { DelegationView } from '../../src/core/protocol/panelProtocol';

const toolCall = {
  request: { callId: 'c1', name: 'replace', args: { file_path: 'a.ts', new_string: 'x'.repeat(6000) } },
  status: 'awaiting_approval',
  confirmationDetails: { type: 'edit', fileDiff: '+a\n' },
  tool: { name: 'replace' },
};

function dataPart(value: unknown): Part {
  return { content: { $case: 'data', value }, mediaType: 'application/json', filename: '', metadata: undefined };
}
function textPart(value: string): Part {
  return { content: { $case: 'text', value }, mediaType: 'text/plain', filename: '', metadata: undefined };
}

describe('data parts: structure, bounded, never cut inside', () => {
  it('a value within the limit is kept whole; beyond it, a summary of its top level', () => {
    const bytes = JSON.stringify(toolCall).length;
    assert.deepEqual(boundData(toolCall, bytes), { value: toolCall, bytes });
    assert.deepEqual(boundData(toolCall, bytes - 1), {
      summary: { type: 'object', count: 4, keys: ['request', 'status', 'confirmationDetails', 'tool'] },
      bytes,
    });
    assert.deepEqual(boundData([1, 2, 3], 2).valueOf(), { summary: { type: 'array', count: 3, keys: [] }, bytes: 7 });
  });

  it('the one-line summary the CLI prints', () => {
    const d = boundData(toolCall, 100_000);
    assert.equal(
      dataSummaryLine(d),
      `{request, status, confirmationDetails, tool} (4 keys, ${formatBytes(JSON.stringify(toolCall).length)})`,
    );
    assert.match(dataSummaryLine(d), /\(4 keys, 6\.\d KB\)$/);
    assert.equal(dataSummaryLine(boundData(['a'], 0)), '[1 item] (5 bytes)');
    assert.equal(dataSummaryLine(boundData('s', 100)), 'string (3 bytes)');
    const wide = Object.fromEntries(Array.from({ length: 80 }, (_, i) => [`k${i}`, i]));
    assert.equal(summarizeData(wide).keys.length, 50);
    assert.match(dataSummaryLine(boundData(wide, 0)), /k49, …\} \(80 keys, /);
  });

  it('a timeline entry keeps text and data apart; past its budget the later parts are summaries', () => {
    const c = timelineContent([textPart('calling a tool'), dataPart(toolCall), dataPart(toolCall)], 10_000);
    assert.equal(c.text, 'calling a tool');
    assert.equal(c.data.length, 2);
    assert.ok('value' in c.data[0]);
    assert.deepEqual(c.data[0].value, toolCall);
    assert.ok('summary' in c.data[1], 'the second does not fit the entry: only its summary');
    const entry = panelTimelineEntry({ kind: 'step', at: new Date(0).toISOString(), ...c }, 1);
    assert.deepEqual(entry.data, c.data);
  });

  it('the panel keeps data whole within its snapshot budget and summarises the rest, valid JSON either way', () => {
    const big = { blob: 'y'.repeat(PANEL_LIMITS.entryChars / 2), more: 'z"\\'.repeat(1000) };
    const bytes = JSON.stringify(big).length;
    const timeline = Array.from({ length: 60 }, (_, i) => ({
      seq: i + 1,
      at: new Date(0).toISOString(),
      kind: 'step' as const,
      text: `step ${i}`,
      data: [{ value: big, bytes }],
    }));
    const view: DelegationView = {
      id: 'd',
      title: 't',
      agent: { name: 'a', endpoint: 'http://127.0.0.1/a' },
      state: 'working',
      terminal: false,
      startedAt: new Date(0).toISOString(),
      capabilities: { write: false, shell: false, network: false },
      timeline,
      artifacts: [],
    };
    const bounded = boundDelegationView(view);
    const kept = bounded.timeline.flatMap((e) => e.data ?? []);
    const whole = kept.filter((d) => 'value' in d);
    const summaries = kept.filter((d) => 'summary' in d);
    assert.ok(whole.length > 0 && summaries.length > 0, `${whole.length} whole, ${summaries.length} summarised`);
    for (const d of whole) assert.deepEqual('value' in d && d.value, big, 'a kept value is the value, uncut');
    for (const d of summaries) assert.deepEqual('summary' in d && d.summary.keys, ['blob', 'more']);
    assert.ok(whole.length * bytes <= PANEL_LIMITS.snapshotChars);
    // The latest entries keep their values; the older ones are the summaries.
    assert.ok('value' in (bounded.timeline.at(-1)?.data?.[0] ?? {}));
    // A malformed data part (a compromised host) is dropped, not rendered.
    const odd = boundDelegationView({ ...view, timeline: [{ ...timeline[0], data: [{ nope: 1 } as never] }] });
    assert.deepEqual(odd.timeline[0]?.data, []);
    // A summary with more keys than a summary names, or longer ones, is bounded again.
    const keys = Array.from({ length: 1000 }, (_, i) => `${i}`.padEnd(500, 'k'));
    const wide = boundDelegationView({
      ...view,
      timeline: [{ ...timeline[0], data: [{ summary: { type: 'object', count: 1000, keys }, bytes: 1 }] }],
    });
    const summary = wide.timeline[0]?.data?.[0];
    assert.ok(summary && 'summary' in summary);
    assert.equal(summary.summary.keys.length, 50);
    assert.ok(summary.summary.keys.every((k) => k.length <= 200));
  });

  it('a result check recorded before results could hold several patches reads as its one changes.patch', () => {
    const old = {
      signature: { status: 'verified' as const, detail: '' },
      patch: { artifactId: 'p', sha256: 'sha256:1' },
    };
    assert.deepEqual(recordedPatches(old), [
      { artifactId: 'p', sha256: 'sha256:1', name: 'changes.patch', source: 'artifact', signature: 'verified' },
    ]);
    assert.deepEqual(recordedPatches({ signature: { status: 'unsigned', detail: '' } }), []);
  });
});
