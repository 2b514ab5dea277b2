/**
 * Delegate Again: what a new delegation takes from an earlier one — its agent, its task, the
 * capabilities asked for, the length of its deadline and where its context came from — read back from
 * the first message as it was sent (context.ts builds it). The context's text is not reused: the files
 * and the selection are read again as they are now, so what travels agrees with the repository the
 * agent works on; the diagnostics travel as they were, since the task names them.
 *
 * Pure.
 */
import type { Part } from '@a2a-js/sdk';
import { META } from '../batonProfile';
import { isRecord } from '../isRecord';
import type { CapabilitySet, DelegationRequest } from '../delegation';
import type { DiagnosticContext, TextRange } from './context';
import { MAX_DEADLINE_MINUTES } from './request';

export interface AgainPlan {
  /** The agent's id among the approved ones (the card's URL). */
  readonly agentId: string;
  readonly agentName: string;
  readonly task: string;
  /** What the user asked for then (the agent may have granted less). */
  readonly capabilities: CapabilitySet;
  /** The earlier deadline's length, in whole minutes; undefined when it had none. */
  readonly deadlineMinutes?: number;
  /** The selection's file and range, to be read again. */
  readonly selection?: { readonly path: string; readonly range: TextRange };
  /** Files sent as context, to be read again; a folder's path ends with `/`. */
  readonly files: readonly string[];
  readonly diagnostics: readonly DiagnosticContext[];
  /** The delegation the earlier one was started from within, if any. */
  readonly parentRequestId?: string;
}

const SEVERITIES: ReadonlySet<string> = new Set(['error', 'warning', 'information', 'hint']);

function textOf(p: Part): string | undefined {
  return p.content?.$case === 'text' ? p.content.value : undefined;
}

function isRange(v: unknown): v is TextRange {
  return (
    isRecord(v) &&
    ['startLine', 'startCharacter', 'endLine', 'endCharacter'].every(
      (k) => typeof v[k] === 'number' && Number.isSafeInteger(v[k]) && (v[k] as number) >= 0,
    )
  );
}

function diagnosticOf(v: unknown): DiagnosticContext | undefined {
  if (!isRecord(v) || typeof v.path !== 'string' || typeof v.message !== 'string' || !isRange(v.range))
    return undefined;
  if (typeof v.severity !== 'string' || !SEVERITIES.has(v.severity)) return undefined;
  return {
    path: v.path,
    range: v.range,
    severity: v.severity as DiagnosticContext['severity'],
    message: v.message,
    ...(typeof v.source === 'string' ? { source: v.source } : {}),
    ...(typeof v.code === 'string' ? { code: v.code } : {}),
  };
}

/**
 * The plan for delegating `request` again. Throws when its first message has no task text (a journal
 * this version did not write): nothing can be sent again from it.
 */
export function againPlan(request: DelegationRequest): AgainPlan {
  const [first, ...rest] = request.message.parts;
  const task = first ? textOf(first) : undefined;
  if (!task?.trim()) throw new Error('The delegation’s first message has no task text to send again.');
  let selection: AgainPlan['selection'];
  const files: string[] = [];
  const diagnostics: DiagnosticContext[] = [];
  for (const p of rest) {
    const md = p.metadata ?? {};
    switch (md[META.context]) {
      case 'selection': {
        const range: unknown = md[META.range];
        if (p.filename && isRange(range)) selection = { path: p.filename, range };
        break;
      }
      case 'file':
        if (p.filename) files.push(p.filename);
        break;
      case 'diagnostics':
        if (p.content?.$case === 'data' && Array.isArray(p.content.value))
          for (const d of p.content.value as unknown[]) {
            const ok = diagnosticOf(d);
            if (ok) diagnostics.push(ok);
          }
        break;
    }
  }
  const minutes =
    request.deadline !== undefined
      ? Math.min(MAX_DEADLINE_MINUTES, Math.max(1, Math.round((request.deadline - request.createdAt) / 60_000)))
      : undefined;
  return {
    agentId: request.agent.cardUrl ?? request.agent.id,
    agentName: request.agent.name,
    task,
    capabilities: { ...request.capabilities.requested },
    ...(minutes !== undefined ? { deadlineMinutes: minutes } : {}),
    ...(selection ? { selection } : {}),
    files,
    diagnostics,
    ...(request.parentRequestId ? { parentRequestId: request.parentRequestId } : {}),
  };
}
