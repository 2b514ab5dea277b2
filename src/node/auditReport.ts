/**
 * The audit log as a person reads it: one block per line of `audit.jsonl`, newest first, with the
 * outcome, the agent, what travelled (digests), what came back and what the user did with it. The raw
 * JSON Lines file stays the record (Export Audit Log writes it, or CSV); this is only its reading form.
 * Agent-controlled strings (names, reasons, artifact names) are shown as inert text: control and
 * bidirectional-override characters are shown as visible escapes, so a reason cannot forge a line,
 * redraw or reorder the report.
 */
import { terminalLine } from '../core/terminalText';
import type { AuditRecord } from './journalStore';

function inert(s: string, max = 500): string {
  const flat = terminalLine(s);
  return flat.length > max ? `${flat.slice(0, max)}…` : flat;
}

function caps(c: AuditRecord['capabilities']): string {
  const e = c.effective;
  const on = [e.write && 'write', e.shell && 'shell', e.network && 'network'].filter(Boolean);
  return on.length ? on.join(', ') : 'read-only (may only propose a patch)';
}

function reviewLine(r: NonNullable<AuditRecord['review']>): string {
  const files = r.files.map((f) => (f.whole ? f.path : `${f.path} (${f.hunkIds.length} hunk(s))`));
  const verb = {
    applied: 'applied',
    undone: 'undid the apply of',
    rejected: 'rejected the patch',
    'merge-aborted': 'aborted the 3-way merge of',
  }[r.action];
  const overrides = r.overrides.length
    ? `; overrode the refusal of ${r.overrides.map((o) => inert(o, 200)).join(', ')}`
    : '';
  return `You ${verb}${files.length ? ` ${files.length} file(s): ${files.map((f) => inert(f, 200)).join(', ')}` : ''}${overrides}`;
}

export function formatAuditReport(records: readonly AuditRecord[], source: string): string {
  const out: string[] = [
    'Baton audit log',
    `${records.length} record(s), newest first. Read from ${source}; Export Audit Log (in the Delegations view) writes it as JSON Lines or CSV.`,
    '',
  ];
  if (!records.length) out.push('Nothing has been delegated yet.');
  for (const r of [...records].reverse()) {
    const when = Number.isNaN(Date.parse(r.at))
      ? inert(r.at, 40)
      : new Date(r.at).toISOString().replace('T', ' ').slice(0, 19) + ' UTC';
    const kind = r.review ? 'REVIEW' : r.refused ? 'REFUSED' : inert(r.outcome, 20).toUpperCase();
    out.push(`${when}  ${kind}  ${inert(r.agent.name, 120)}`);
    out.push(
      `  delegation ${r.requestId}${r.taskId ? `, task ${inert(r.taskId, 120)}` : ''}${r.parentRequestId ? `, started by delegation ${r.parentRequestId}` : ''}, by ${inert(r.who, 60)}${r.startedBy?.kind === 'agent' ? ` through a chat agent (${inert(r.startedBy.via, 40)})` : ''}`,
    );
    if (r.refused) out.push(`  refused before anything was sent (${inert(r.refused.code, 40)})`);
    out.push(
      `  agent endpoint ${inert(r.agent.endpoint, 300)}${r.agent.cardDigest ? ` (card ${r.agent.cardDigest.slice(0, 19)}…)` : ''}`,
    );
    if (r.review) {
      out.push(`  ${reviewLine(r.review)}`);
      for (const d of r.review.digests)
        out.push(
          `    ${inert(d.path, 200)}: ${d.before?.slice(0, 19) ?? 'new'} → ${d.after?.slice(0, 19) ?? 'deleted'}`,
        );
    } else {
      out.push(`  capabilities ${caps(r.capabilities)}`);
      if (r.reason) out.push(`  reason: ${inert(r.reason)}`);
      if (r.cancelConfirmed !== undefined)
        out.push(`  cancel ${r.cancelConfirmed ? 'confirmed by the agent' : 'not confirmed by the agent'}`);
      const sent = r.contextDigests.map((c) => `${c.kind}${c.path ? ` ${inert(c.path, 200)}` : ''}`);
      out.push(`  sent: the task${sent.length ? `, ${sent.join(', ')}` : ''}`);
      for (const a of r.artifacts)
        out.push(
          `  returned ${inert(a.name, 120)} (${a.digest.slice(0, 19)}…)${a.final ? '' : ' — streamed, not in the final task'}`,
        );
    }
    out.push('');
  }
  return out.join('\n');
}
