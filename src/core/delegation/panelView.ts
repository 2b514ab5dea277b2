/**
 * The one place the delegation panel's view is made: from the journal's record (./record.ts) and what
 * else the panel shows, passed in as plain data. Pure; the host calls it on every snapshot, so it only
 * maps and bounds what it is given (patch statistics are computed once, where the patch is kept).
 */
import type {
  DelegationView,
  PatchChoice,
  PatchStats,
  TimelineEntry,
  ToolCallPanelView,
} from '../protocol/delegationView';
import type { ToolCallView } from '../protocol/toolCalls';
import { boundDelegationView, PANEL_LIMITS } from '../protocol/panelLimits';
import type { ReviewView } from '../protocol/panelProtocol';
import { isFinalOutcome } from '../delegation';
import type { DelegationRecord, JournalTimelineEntry } from './record';

/** What the panel shows beside the journal's record. */
export interface DelegationPanelExtras {
  /** The approved patch in numbers; absent until the result check approved one. */
  readonly patch?: PatchStats;
  /** Every approved patch with its numbers, when the result check approved several. */
  readonly patches?: readonly PatchChoice[];
  /** Which of them the open review is of. */
  readonly reviewing?: number;
  /** The review of the returned patch, once the user opened it. */
  readonly review?: ReviewView;
}

/** The panel's view of a delegation, within the panel's bounds (src/core/protocol/panelLimits.ts). */
export function delegationPanelView(record: DelegationRecord, extras: DelegationPanelExtras = {}): DelegationView {
  const check = record.resultCheck;
  const executor = check?.executor;
  const first = Math.max(0, record.timeline.length - PANEL_LIMITS.timelineEntries);
  return boundDelegationView({
    id: record.requestId,
    title: record.title,
    agent: { name: record.agent.name, endpoint: record.agent.endpoint },
    state: record.state,
    terminal: isFinalOutcome(record.outcome),
    startedAt: record.createdAt,
    endedAt: record.endedAt,
    deadline: record.deadline,
    capabilities: record.capabilities.effective,
    executor: executor?.label,
    executorKind: executor?.kind,
    executorDetail: executor?.detail,
    confined: executor?.confined,
    reason: record.outcomeReason,
    ...(record.outcomeBecause ? { reasonWords: record.outcomeBecause } : {}),
    question: record.prompt,
    ...(record.toolCalls?.length ? { toolCalls: record.toolCalls.map(panelToolCall) } : {}),
    ...(record.waiting ? { waiting: record.waiting } : {}),
    ...(record.tokenRefused ? { tokenRefused: true } : {}),
    // Only what the panel can show is mapped; the bounds also apply to each entry's text.
    timeline: record.timeline.slice(first).map((e, i) => panelTimelineEntry(e, first + i + 1 + record.timelineOmitted)),
    timelineOmitted: record.timelineOmitted + first,
    artifacts: record.artifacts.map((a) => ({
      name: a.name || a.filename,
      mediaType: a.mediaType,
      bytes: a.size,
      isPatch: a.isPatch,
    })),
    // Statistics of a patch the check refused would describe changes Baton will not review.
    patch: record.outcome && check?.patch && check.signature.status !== 'invalid' ? extras.patch : undefined,
    ...(record.outcome && check?.signature.status !== 'invalid' && extras.patches && extras.patches.length > 1
      ? { patches: extras.patches }
      : {}),
    ...(check?.links?.length ? { patchLinks: check.links } : {}),
    ...(extras.review && extras.reviewing !== undefined ? { reviewing: extras.reviewing } : {}),
    signature: check?.signature,
    cancelConfirmed: record.cancelConfirmed,
    ...(extras.review ? { review: extras.review } : {}),
  });
}

/** An entry's data parts, when it has some (entries written before data was kept have none). */
function dataOf(e: { readonly data?: TimelineEntry['data'] }): Pick<TimelineEntry, 'data'> {
  return e.data?.length ? { data: e.data } : {};
}

/** What the panel shows of a tool call: everything but the file contents (the diff says what changes). */
function panelToolCall(c: ToolCallView): ToolCallPanelView {
  const { edit: _contents, ...shown } = c;
  void _contents;
  return shown;
}

function artifactCode(e: Extract<JournalTimelineEntry, { kind: 'artifact' }>): TimelineEntry['code'] {
  if (e.chunks > 1) return e.complete ? 'artifact.chunks' : 'artifact.chunksStreaming';
  return e.complete ? 'artifact' : 'artifact.streaming';
}

/**
 * One journal timeline entry as the panel shows it (before the panel's bounds are applied): Baton's
 * words as a code with params, the agent's words as the text.
 */
export function panelTimelineEntry(e: JournalTimelineEntry, seq: number): TimelineEntry {
  switch (e.kind) {
    case 'status': {
      const data = dataOf(e);
      return e.text
        ? {
            seq,
            at: e.at,
            kind: 'status',
            code: 'status.text',
            params: [e.state],
            text: e.text,
            markdown: true,
            ...data,
          }
        : { seq, at: e.at, kind: 'status', code: 'status', params: [e.state], text: '', markdown: true, ...data };
    }
    case 'step':
      return { seq, at: e.at, kind: 'step', text: e.text, markdown: true, ...dataOf(e) };
    case 'artifact': {
      const params = e.chunks > 1 ? [e.size.toLocaleString(), e.chunks] : [e.size.toLocaleString()];
      return { seq, at: e.at, kind: 'artifact', code: artifactCode(e), params, text: e.name };
    }
    case 'message':
      return e.role === 'user'
        ? {
            seq,
            at: e.at,
            kind: 'message',
            code: 'message.user',
            params: [],
            text: e.text,
            markdown: false,
            ...dataOf(e),
          }
        : { seq, at: e.at, kind: 'message', text: e.text, markdown: true, ...dataOf(e) };
    case 'notice': {
      const kind = e.level === 'error' ? 'error' : 'note';
      return e.code
        ? { seq, at: e.at, kind, code: e.code, params: e.params ?? [], text: '' }
        : { seq, at: e.at, kind, text: e.text };
    }
  }
}
