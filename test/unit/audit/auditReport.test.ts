import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatAuditReport } from '../../../src/node/auditReport';
import type { AuditRecord } from '../../../src/node/journalStore';

const base: AuditRecord = {
  at: '2026-11-30T10:00:00.000Z',
  requestId: 'r-1',
  who: 'dev',
  agent: {
    id: 'https://a.example/card',
    name: 'Formatter',
    endpoint: 'https://a.example/a2a',
    cardDigest: 'sha256:0123456789abcdef0123',
  },
  contextDigests: [{ kind: 'file', path: 'src/a.ts', digest: 'sha256:aa' }],
  capabilities: {
    requested: { write: false, shell: false, network: false },
    effective: { write: false, shell: false, network: false },
  },
  taskId: 't-1',
  outcome: 'completed',
  reason: 'done',
  artifacts: [{ artifactId: 'p', name: 'changes.patch', digest: 'sha256:bbbbbbbbbbbbbbbbbbbbbb', final: true }],
};

describe('audit report', () => {
  it('shows each record newest first, with what travelled and what came back', () => {
    const later: AuditRecord = {
      ...base,
      at: '2026-11-30T11:00:00.000Z',
      review: {
        action: 'applied',
        files: [{ path: 'src/a.ts', whole: true, hunkIds: [] }],
        overrides: [],
        digests: [{ path: 'src/a.ts', before: 'sha256:1', after: 'sha256:2' }],
      },
    };
    const text = formatAuditReport([base, later], '/x/audit.jsonl');
    assert.match(text, /2 record\(s\), newest first\. Read from \/x\/audit\.jsonl/);
    assert.ok(text.indexOf('REVIEW') < text.indexOf('COMPLETED'), 'newest first');
    assert.match(text, /2026-11-30 10:00:00 UTC {2}COMPLETED {2}Formatter/);
    assert.match(text, /sent: the task, file src\/a\.ts/);
    assert.match(text, /returned changes\.patch \(sha256:bbbbbbbbbbbb…\)/);
    assert.match(text, /capabilities read-only \(may only propose a patch\)/);
    assert.match(text, /You applied 1 file\(s\): src\/a\.ts/);
  });

  it('marks a delegation a chat agent started, and one refused before anything was sent', () => {
    const started: AuditRecord = { ...base, startedBy: { kind: 'agent', via: 'vscode-lm' } };
    const refused: AuditRecord = {
      ...started,
      requestId: 'r-2',
      at: '2026-11-30T12:00:00.000Z',
      outcome: 'rejected',
      reason: 'baton_delegate: refused: chat agents may start at most 5 delegations per 60 seconds',
      taskId: undefined,
      artifacts: [],
      contextDigests: [],
      refused: { code: 'burst-cap' },
    };
    const text = formatAuditReport([started, refused], 'f');
    assert.match(
      text,
      /12:00:00 UTC {2}REFUSED {2}Formatter\n {2}delegation r-2, by dev through a chat agent \(vscode-lm\)/,
    );
    assert.match(text, /refused before anything was sent \(burst-cap\)/);
    assert.match(text, /reason: baton_delegate: refused: chat agents may start at most 5/);
    assert.match(
      text,
      /COMPLETED {2}Formatter\n {2}delegation r-1, task t-1, by dev through a chat agent \(vscode-lm\)/,
    );
  });

  it('says so when nothing was delegated', () => {
    assert.match(formatAuditReport([], 'f'), /Nothing has been delegated yet/);
  });

  it('keeps agent text inert: no control, escape or bidi characters reach the document', () => {
    const hostile = [
      '\x1b[2J\x1b[Hcleared',
      'fail\rcompleted',
      'x\u202egnp.exe',
      '\x1b]8;;https://evil\x07link\x1b]8;;\x07',
      'a\nFAKE  COMPLETED  line',
      '\u009b31mred',
    ];
    for (const h of hostile) {
      const text = formatAuditReport(
        [{ ...base, reason: h, agent: { ...base.agent, name: h }, artifacts: [{ ...base.artifacts[0], name: h }] }],
        'f',
      );
      assert.doesNotMatch(
        text,
        // eslint-disable-next-line no-control-regex
        /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/,
        JSON.stringify(h),
      );
      assert.ok(
        !text.split('\n').some((l) => l.startsWith('FAKE')),
        'a newline in agent text cannot start a line of its own',
      );
    }
  });
});
