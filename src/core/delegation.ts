/**
 * The client's record of one delegation (docs/architecture.md "One task model"): `requestId` (the first
 * message's `messageId`, the idempotency key) → `taskId`/`contextId` → a journal of entries, events
 * carrying a per-task `seq` → one outcome. Pure: no I/O, no clock (times are passed in).
 *
 * The journal is the source of truth; `DelegationJournal` folds entries into derived state as they are
 * appended (or replayed from disk) and never keeps the raw entries, so memory stays bounded however
 * long a task streams. `decideOutcome` is the one place that turns what was seen into an outcome.
 */
import type { Artifact, Message, Part, StreamResponse, Task } from '@a2a-js/sdk';
import { TaskState } from '@a2a-js/sdk';
import { META, PATCH_ARTIFACT } from './batonProfile';
import { canonicalize } from './jcs';
import { isRecord } from './isRecord';
import { isCredentialRefusal } from './httpErrorText';
import type { DelegationRecord, JournalTimelineEntry, RecordedArtifact, ResultCheckRecord } from './delegation/record';
import {
  capabilityWords,
  consentOf,
  foldConsent,
  type ConsentDecision,
  type ConsentQuestion,
  type ConsentRecord,
} from './delegation/consent';
import { childTaskOf, foldChildTask, type ReportedChildren, type StartedBy } from './delegation/tree';
import type { ChildTaskInfo } from './batonProfile';
import type { CapabilitySet, DelegationOutcome, DelegationState } from './protocol/delegationView';
import { english } from './protocol/l10n';
import { timelineEntryText, type TimelineCode, type TimelineParam } from './protocol/timelineText';
import { boundData, type DataPartView } from './protocol/dataView';
import { PANEL_LIMITS } from './protocol/panelLimits';
import { isPatchArtifact as isPatchByContent } from './patch/patchArtifacts';
import { isInterrupted as isInterruptedTaskState, isTerminal as isTerminalTaskState } from './taskStates';
import {
  coderAgentKind,
  mergeToolCall,
  pendingToolCalls,
  toolAnswersOf,
  toolCallFromData,
  toolCallLine,
} from './devTool';
import type { ToolCallView } from './protocol/toolCalls';

export type {
  DelegationRecord,
  ExecutorInfo,
  JournalTimelineEntry,
  RecordedArtifact,
  RecordedPatch,
  ResultCheckRecord,
} from './delegation/record';
import { outcomeReasonText, type OutcomeCode, type OutcomeWords } from './protocol/outcomeText';
export type { CapabilitySet, DelegationOutcome, DelegationState, SignatureCheck } from './protocol/delegationView';

export const DELEGATION_OUTCOMES: readonly DelegationOutcome[] = [
  'completed',
  'failed',
  'canceled',
  'rejected',
  'input-required',
  'auth-required',
  'unknown',
  'expired',
];

/** Outcomes after which nothing more happens on the task (input/auth-required wait for the user; unknown for "check again"). */
export function isFinalOutcome(o: DelegationOutcome | undefined): boolean {
  return o === 'completed' || o === 'failed' || o === 'canceled' || o === 'rejected' || o === 'expired';
}

// The state sets are named once, in taskStates.ts; these are their names on the client's side.
export { isInterruptedTaskState, isTerminalTaskState };

/** The agent as the user approved it: the pinned endpoint is the only place requests go. */
export interface AgentRef {
  readonly id: string;
  readonly name: string;
  /** The approved interface URL (never one a freshly fetched card names). */
  readonly endpoint: string;
  readonly protocolBinding: string;
  readonly protocolVersion: string;
  /** Digest of the approved card, for the audit log. */
  readonly cardDigest?: string;
  /**
   * Where the card was read (the URL the user gave). Follow-up commands read the card there again
   * only when `card` is missing; journals written before it was kept have neither.
   */
  readonly cardUrl?: string;
  /** The card as it was pinned (its wire JSON, the one `cardDigest` is of): what follow-ups connect with. */
  readonly card?: Readonly<Record<string, unknown>>;
}

/** A digest of one piece of context that travelled (or of the uncommitted state), for the audit log. */
export interface ContextDigest {
  readonly kind: 'selection' | 'file' | 'diagnostics' | 'uncommitted';
  /** Repository-relative path, when the context is a file or a selection in one. */
  readonly path?: string;
  readonly digest: string;
}

/** What is known of a first message that could not be sent (see the `sendFailed` entry). */
export type SendDelivery = 'no' | 'refused' | 'maybe';

/** Everything decided before the first message is sent; the journal's first entry. */
export interface DelegationRequest {
  /** UUID; the first message's `messageId`; the delegation's id everywhere. */
  readonly requestId: string;
  readonly title: string;
  /** Who delegated (the OS/VS Code user, or the parent agent for a child delegation). */
  readonly who: string;
  readonly agent: AgentRef;
  /** The first message, exactly as sent (its `messageId` is `requestId`). */
  readonly message: Message;
  /** Epoch ms. */
  readonly createdAt: number;
  /** Epoch ms; the task is canceled at the agent and the outcome is `expired` when it passes. */
  readonly deadline?: number;
  readonly capabilities: { readonly requested: CapabilitySet; readonly effective: CapabilitySet };
  readonly contextDigests: readonly ContextDigest[];
  readonly parentRequestId?: string;
  /** Agent ids from the root delegation down to (and including) this one's agent. */
  readonly chain: readonly string[];
  /** Who started it; journals written before this was recorded have none (a person did). */
  readonly startedBy?: StartedBy;
}

/**
 * Baton's words in a journal entry: a code with its params, rendered in the reader's language where it
 * is shown (src/core/protocol/timelineText.ts), or a stored text (entries older versions wrote, and
 * text that is not Baton's own).
 */
export type EntryWords =
  | { readonly code: TimelineCode; readonly params?: readonly TimelineParam[] }
  | { readonly code?: undefined; readonly text: string };

/** Development-tool events about a tool call, whose task state is not news (see `applyEvent`). */
const TOOL_CALL_KINDS: ReadonlySet<string> = new Set(['tool-call-update', 'tool-call-confirmation', 'thought']);

/** One line of a delegation's journal. `at` is epoch ms. SDK objects are in their in-memory (ts-proto) shape. */
export type JournalEntry =
  | { readonly kind: 'request'; readonly at: number; readonly request: DelegationRequest }
  /** About to send the first message (attempt counts retries of the same `requestId`). */
  | { readonly kind: 'send'; readonly at: number; readonly attempt: number }
  /**
   * The first message could not be sent. `delivered: 'no'` when it provably never reached the agent;
   * `'refused'` when the agent answered the send itself with an error, before any task; `'maybe'` when
   * it may have arrived (the answer was lost or could not be read).
   */
  | {
      readonly kind: 'sendFailed';
      readonly at: number;
      readonly delivered: SendDelivery;
      readonly error: string;
    }
  /** The agent's stream reported an error after its task existed (and GetTask did not show it settled). */
  | { readonly kind: 'agentError'; readonly at: number; readonly error: string }
  | { readonly kind: 'task'; readonly at: number; readonly taskId: string; readonly contextId: string }
  /**
   * A status update, artifact update or message from the agent. `seq` is the agent's per-task
   * sequence number when `sequenced` (replay profile), else a local arrival counter.
   */
  | {
      readonly kind: 'event';
      readonly at: number;
      readonly taskId: string;
      readonly seq: number;
      readonly sequenced: boolean;
      readonly event: StreamResponse;
    }
  /** A whole Task: the first event of a stream, a resubscribe's first event, or a `GetTask` result (`final`: taken after it settled). */
  | {
      readonly kind: 'snapshot';
      readonly at: number;
      readonly source: 'stream' | 'getTask' | 'final' | 'cancel';
      readonly task: Task;
    }
  /** A message on the task: the user's text, or (`toolAnswers`) answers to tool calls, automatic ones flagged. */
  | {
      readonly kind: 'reply';
      readonly at: number;
      readonly message: Message;
      readonly autoApproved?: boolean;
    }
  /** The user accepted what the agent did and finished the delegation (it ends as completed). */
  | { readonly kind: 'finished'; readonly at: number; readonly by: 'user' }
  | { readonly kind: 'cancel'; readonly at: number; readonly by: 'user' | 'deadline' }
  /** The cancel's answer; `detail` is how older versions wrote it (now `code`/`params`). */
  | ({ readonly kind: 'cancelResult'; readonly at: number; readonly confirmed: boolean } & (
      | { readonly code: TimelineCode; readonly params?: readonly TimelineParam[] }
      | { readonly code?: undefined; readonly detail: string }
    ))
  | {
      readonly kind: 'connection';
      readonly at: number;
      readonly status: 'lost' | 'retrying' | 'restored' | 'gaveUp' | 'checking';
      readonly attempt?: number;
      readonly error?: string;
    }
  | ({ readonly kind: 'notice'; readonly at: number; readonly level: 'info' | 'warning' | 'error' } & EntryWords)
  /** What the result check found (signature, executor, the patch it approved), when it is done. */
  | ({ readonly kind: 'resultCheck'; readonly at: number } & ResultCheckRecord)
  /** The outcome `decideOutcome` reached, recorded when it changes. */
  | {
      readonly kind: 'outcome';
      readonly at: number;
      readonly outcome: DelegationOutcome;
      readonly reason: string;
      readonly because?: OutcomeWords;
      readonly cancelConfirmed?: boolean;
    };

/** What `decideOutcome` looks at: a summary of the journal so far. */
export interface OutcomeFacts {
  /** The task's latest known state (sticky once terminal). */
  readonly taskState?: TaskState;
  /** The agent's status message for that state, as text. */
  readonly stateText?: string;
  /** `baton/outcome` on the terminal status, when a Baton gateway says more than the A2A state can. */
  readonly agentOutcome?: string;
  /** The agent answered with a Message instead of a task (a complete, task-less exchange). */
  readonly messageResult: boolean;
  readonly cancelBy?: 'user' | 'deadline';
  /** The cancel request got an answer (or its bounded wait ran out): `confirmed` says which. */
  readonly cancelAnswered: boolean;
  readonly cancelConfirmed: boolean;
  /** The cancel found no task to name: the agent had reported none (`cancel.noTask`). */
  readonly cancelNoTask?: boolean;
  /** A reply was sent after the last interruption and no state has been seen since. */
  readonly replyPending: boolean;
  /** Reconnecting gave up and nothing reconciled it since. */
  readonly contactLost?: string;
  /** The first message was not sent; `delivered: 'no'` means provably never reached the agent. */
  readonly sendFailed?: { readonly delivered: SendDelivery; readonly error: string };
  /** The agent's stream reported this error after the task existed. */
  readonly agentError?: string;
  readonly endpoint: string;
  readonly deadline?: number;
  /** The user finished the delegation while the agent waited for them (Done). */
  readonly finishedBy?: 'user';
}

export interface OutcomeDecision {
  readonly outcome: DelegationOutcome;
  /** In English (logs, the CLI): the agent's own words, or Baton's sentence for `because`. */
  readonly reason: string;
  /** Baton's reason as data, when the reason is Baton's and not the agent's: the UI says it in its language. */
  readonly because?: OutcomeWords;
  readonly cancelConfirmed?: boolean;
}

/** A decision whose reason is Baton's own: its English sentence and its code. */
function ours(outcome: DelegationOutcome, code: OutcomeCode, ...params: string[]): OutcomeDecision {
  const because: OutcomeWords = params.length ? { code, params } : { code };
  return { outcome, reason: outcomeReasonText(because, ''), because };
}

/** The agent's own words when it gave some, else Baton's. */
function theirsOr(outcome: DelegationOutcome, text: string | undefined, code: OutcomeCode): OutcomeDecision {
  return text ? { outcome, reason: text } : ours(outcome, code);
}

/** The one place an outcome is decided. Undefined while the delegation is still in flight. */
export function decideOutcome(f: OutcomeFacts): OutcomeDecision | undefined {
  // Done: whatever the agent does with the task afterwards (Baton cancels it there), the user accepted it.
  if (f.finishedBy === 'user') return ours('completed', 'completed.byUser');
  const confirmed = f.cancelBy
    ? { cancelConfirmed: f.cancelConfirmed || f.taskState === TaskState.TASK_STATE_CANCELED }
    : {};
  switch (f.taskState) {
    case TaskState.TASK_STATE_COMPLETED:
      return theirsOr('completed', f.stateText, 'completed');
    case TaskState.TASK_STATE_FAILED:
      if (f.agentOutcome === 'expired') return theirsOr('expired', f.stateText, 'expired.atAgent');
      if (f.agentOutcome === 'unknown') return theirsOr('unknown', f.stateText, 'unknown.atAgent');
      return theirsOr('failed', f.stateText, 'failed');
    case TaskState.TASK_STATE_REJECTED:
      return theirsOr('rejected', f.stateText, 'rejected');
    case TaskState.TASK_STATE_CANCELED:
      return f.cancelBy === 'deadline'
        ? { ...ours('expired', 'expired.canceled'), cancelConfirmed: true }
        : {
            ...(f.cancelBy
              ? ours('canceled', 'canceled.confirmed')
              : theirsOr('canceled', f.stateText, 'canceled.byAgent')),
            ...confirmed,
          };
    default:
      break;
  }
  if (f.messageResult) return ours('completed', 'completed.message');
  if (f.cancelBy && f.cancelAnswered && f.cancelNoTask && f.taskState === undefined) {
    // Nothing could be canceled and nothing is known of a task: say so, with the endpoint to check.
    const noTask =
      f.cancelBy === 'deadline'
        ? ours('expired', 'expired.noTask', f.endpoint)
        : ours('canceled', 'canceled.noTask', f.endpoint);
    return { ...noTask, cancelConfirmed: false };
  }
  if (f.cancelBy === 'deadline' && f.cancelAnswered) {
    return {
      ...ours('expired', f.cancelConfirmed ? 'expired.cancelConfirmed' : 'expired.cancelUnconfirmed'),
      ...confirmed,
    };
  }
  if (f.cancelBy === 'user' && f.cancelAnswered) {
    return { ...ours('canceled', f.cancelConfirmed ? 'canceled.confirmed' : 'canceled.unconfirmed'), ...confirmed };
  }
  if (f.agentError !== undefined) return ours('failed', 'failed.atAgent', f.endpoint, f.agentError);
  if (f.sendFailed?.delivered === 'no') return ours('failed', 'failed.unreachable', f.endpoint, f.sendFailed.error);
  if (f.sendFailed?.delivered === 'refused') return ours('failed', 'failed.refused', f.endpoint, f.sendFailed.error);
  if (f.sendFailed) return ours('unknown', 'unknown.sendInDoubt', f.endpoint, f.sendFailed.error);
  if (f.contactLost !== undefined) return ours('unknown', 'unknown.contactLost', f.endpoint, f.contactLost);
  if (!f.replyPending && f.taskState === TaskState.TASK_STATE_INPUT_REQUIRED) {
    return theirsOr('input-required', f.stateText, 'input-required');
  }
  if (!f.replyPending && f.taskState === TaskState.TASK_STATE_AUTH_REQUIRED) {
    return theirsOr('auth-required', f.stateText, 'auth-required');
  }
  return undefined;
}

/** Text of a message's parts, for display and reasons. Non-text parts are described, not dumped. */
export function partsText(parts: readonly Part[] | undefined, maxDataChars = 2000): string {
  if (!parts) return '';
  const out: string[] = [];
  for (const p of parts) {
    const c = p.content;
    if (!c) continue;
    switch (c.$case) {
      case 'text':
        out.push(c.value);
        break;
      case 'data': {
        const s = JSON.stringify(c.value) ?? 'null';
        out.push('```json\n' + (s.length > maxDataChars ? s.slice(0, maxDataChars) + '…' : s) + '\n```');
        break;
      }
      case 'url':
        out.push(`[${p.filename || 'file'}] ${c.value}`);
        break;
      case 'raw':
        out.push(`[${p.filename || 'binary'}: ${c.value.length} bytes${p.mediaType ? `, ${p.mediaType}` : ''}]`);
        break;
    }
  }
  return out.join('\n');
}

/**
 * JSON bytes of data parts one timeline entry keeps as values; beyond it (all parts of the entry
 * together) a part is kept as its summary. The raw event stays whole in the journal on disk.
 */
export const TIMELINE_DATA_BYTES: number = PANEL_LIMITS.entryChars;

/**
 * A message's parts as a timeline entry shows them: the text of every part but data parts (as
 * `partsText` describes them), and the data parts as data, bounded by `maxBytes` together.
 */
export function timelineContent(
  parts: readonly Part[] | undefined,
  maxBytes: number = TIMELINE_DATA_BYTES,
): { readonly text: string; readonly data: readonly DataPartView[] } {
  if (!parts) return { text: '', data: [] };
  const others: Part[] = [];
  const data: DataPartView[] = [];
  let budget = maxBytes;
  for (const p of parts) {
    if (p.content?.$case !== 'data') {
      others.push(p);
      continue;
    }
    const d = boundData(p.content.value, Math.max(0, budget));
    if ('value' in d) budget -= d.bytes;
    data.push(d);
  }
  return { text: partsText(others), data };
}

/** The `baton/seq` an event or task carries, when the agent speaks the replay profile. */
export function seqOf(metadata: Record<string, unknown> | undefined): number | undefined {
  const v = metadata?.[META.seq];
  const n = typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : v;
  return typeof n === 'number' && Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}

/** An artifact's content, with appended chunks concatenated (the SDK stores each chunk as another part). */
export interface ArtifactContent {
  readonly artifactId: string;
  readonly name: string;
  readonly description: string;
  readonly mediaType: string;
  readonly filename: string;
  /** Concatenated text parts. */
  readonly text: string;
  /** Data parts and non-text parts, in order. */
  readonly otherParts: readonly Part[];
  /** True when taken from `GetTask` after the task settled. */
  readonly final: boolean;
}

/**
 * Where what the stream brought and the final task (GetTask after it settled) disagree about an
 * artifact: the user may have seen, or a caller may pick, content that is not the final one. Result
 * verification treats each as a failure (src/node/resultCheck.ts).
 *
 * - `not-final`: streamed, but absent from the final task;
 * - `differs`: streamed (or an earlier final task) with other content than the final task has (a stream
 *   whose last chunk has not come may hold a beginning of it: it stopped, it did not contradict);
 * - `after-final`: an artifact update that came after the final task was taken.
 */
export interface ArtifactConflict {
  readonly kind: 'not-final' | 'differs' | 'after-final';
  readonly artifactId: string;
  readonly name: string;
}

interface ArtifactAccumulator {
  artifactId: string;
  name: string;
  description: string;
  mediaType: string;
  filename: string;
  textChunks: string[];
  size: number;
  otherParts: Part[];
  chunks: number;
  complete: boolean;
  final: boolean;
  timelineIndex: number;
  /** Whether the content is a patch (src/core/patch/patchArtifacts.ts), once asked of a final artifact. */
  isPatch?: boolean;
}

/**
 * Whether an artifact is a patch: by its name at once, by its content once it is final (a final
 * artifact never changes, so it is read once, not on every view).
 */
function accumulatorIsPatch(a: ArtifactAccumulator | undefined): boolean {
  if (!a) return false;
  if (a.name === PATCH_ARTIFACT.name || a.filename === PATCH_ARTIFACT.name) return true;
  if (!a.final) return false;
  a.isPatch ??= isPatchByContent({
    artifactId: a.artifactId,
    name: a.name,
    description: a.description,
    parts: [
      ...(a.textChunks.length
        ? [
            {
              content: { $case: 'text' as const, value: a.textChunks.join('') },
              filename: a.filename,
              mediaType: a.mediaType,
              metadata: undefined,
            },
          ]
        : []),
      ...a.otherParts,
    ],
    metadata: undefined,
    extensions: [],
  });
  return a.isPatch;
}

function artifactFrom(a: Artifact, final: boolean, timelineIndex: number): ArtifactAccumulator {
  const acc: ArtifactAccumulator = {
    artifactId: a.artifactId,
    name: a.name,
    description: a.description,
    mediaType: '',
    filename: '',
    textChunks: [],
    size: 0,
    otherParts: [],
    chunks: 0,
    complete: final,
    final,
    timelineIndex,
  };
  appendParts(acc, a.parts);
  return acc;
}

function appendParts(acc: ArtifactAccumulator, parts: readonly Part[]): void {
  acc.chunks++;
  for (const p of parts) {
    if (!acc.mediaType && p.mediaType) acc.mediaType = p.mediaType;
    if (!acc.filename && p.filename) acc.filename = p.filename;
    if (p.content?.$case === 'text') {
      acc.textChunks.push(p.content.value);
      acc.size += p.content.value.length;
    } else {
      acc.otherParts.push(p);
      if (p.content?.$case === 'raw') acc.size += p.content.value.length;
    }
  }
}

/** A part's content as a comparable string (metadata left out, as the signed digest leaves it out). */
function partKey(p: Part): string {
  const c = p.content;
  let value: unknown = null;
  if (c?.$case === 'raw') value = Array.from(c.value, (b) => b.toString(16).padStart(2, '0')).join('');
  else if (c?.$case === 'data') {
    try {
      value = canonicalize(c.value);
    } catch {
      value = JSON.stringify(c.value) ?? null;
    }
  } else if (c) value = c.value;
  return JSON.stringify([c?.$case ?? null, value, p.mediaType, p.filename]);
}

/**
 * Whether what was seen of an artifact agrees with its final form: the same name, and the same text
 * and other parts — or, while its last chunk has not come (the stream stopped delivering and the task
 * was followed by polling), a beginning of them. A stream that said it was complete must match exactly.
 */
function agrees(seen: ArtifactAccumulator, final: ArtifactAccumulator): boolean {
  if (seen.name !== final.name) return false;
  const text = seen.textChunks.join('');
  const finalText = final.textChunks.join('');
  const n = seen.otherParts.length;
  if (
    seen.complete
      ? text !== finalText || n !== final.otherParts.length
      : !finalText.startsWith(text) || n > final.otherParts.length
  )
    return false;
  return seen.otherParts.every((p, i) => partKey(p) === partKey(final.otherParts[i]));
}

function stateName(s: TaskState): string {
  switch (s) {
    case TaskState.TASK_STATE_SUBMITTED:
      return 'submitted';
    case TaskState.TASK_STATE_WORKING:
      return 'working';
    case TaskState.TASK_STATE_COMPLETED:
      return 'completed';
    case TaskState.TASK_STATE_FAILED:
      return 'failed';
    case TaskState.TASK_STATE_CANCELED:
      return 'canceled';
    case TaskState.TASK_STATE_INPUT_REQUIRED:
      return 'input-required';
    case TaskState.TASK_STATE_REJECTED:
      return 'rejected';
    case TaskState.TASK_STATE_AUTH_REQUIRED:
      return 'auth-required';
    default:
      return 'unknown';
  }
}

/** The first `max` characters of chunked text, without joining it all (a view is built per snapshot). */
function previewOf(chunks: readonly string[], max: number): string {
  let out = '';
  for (const c of chunks) {
    if (out.length >= max) break;
    out += c.length > max - out.length ? c.slice(0, max - out.length) : c;
  }
  return out;
}

/** A timeline entry's text and data: data parts as data (bounded), not as JSON text. */
function shown(parts: readonly Part[] | undefined): { text: string; data?: readonly DataPartView[] } {
  const c = timelineContent(parts);
  return c.data.length ? { text: c.text, data: c.data } : { text: c.text };
}

/** A status entry's optional text and data: absent when the status came without a message. */
function withText(c: { text: string; data?: readonly DataPartView[] }): {
  text?: string;
  data?: readonly DataPartView[];
} {
  return { ...(c.text ? { text: c.text } : {}), ...(c.data ? { data: c.data } : {}) };
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

export interface DelegationJournalOptions {
  /** Timeline entries kept for the view (older ones are counted, not kept). Default 2000. */
  readonly timelineLimit?: number;
  /** Characters of artifact text shown as a preview. Default 4096. */
  readonly previewChars?: number;
}

/**
 * Folds a delegation's journal into the state the runner and the panel need. Feed it every entry in
 * order (`apply`) — when it is written and again when it is replayed from disk.
 */
export class DelegationJournal {
  readonly request: DelegationRequest;
  private _taskId?: string;
  private _contextId?: string;
  private _taskState?: TaskState;
  private _stateText?: string;
  private _agentOutcome?: string;
  private _stateSeq = -1;
  private _messageResult = false;
  private _started = false;
  private _sendAttempts = 0;
  private _sendFailed?: { delivered: SendDelivery; error: string };
  private _agentError?: string;
  private _cancelBy?: 'user' | 'deadline';
  private _cancelAnswered = false;
  private _cancelConfirmed = false;
  private _cancelNoTask = false;
  private _replyPending = false;
  /** The task is `submitted` and the gateway holds it until its turn (`META.turn` on its status message). */
  private _waitingTurn = false;
  /** The latest try to reach the agent (while reconnecting, or the last before giving up) was refused its credentials. */
  private _tokenRefused = false;
  private _contactLost?: string;
  private _reconnecting = false;
  private _recorded?: OutcomeDecision;
  private _endedAt?: number;
  private _lastAt: number;
  /** Every sequenced seq at or below this has been seen; higher ones seen are in `_seenAbove`. */
  private _contiguous = 0;
  private readonly _seenAbove = new Set<number>();
  private _maxSeq = 0;
  private _localSeq = 0;
  private _eventCount = 0;
  private _timeline: JournalTimelineEntry[] = [];
  private _resultCheck?: ResultCheckRecord;
  /**
   * A GetTask snapshot taken while events before it were still missing (after a reconnect, before the
   * replay): its state change is shown when the replayed event with that seq arrives, so the timeline
   * stays in the agent's order instead of showing the outcome before the steps that led to it.
   */
  private _deferredStatusSeq: number | undefined;
  private _timelineBase = 0;
  private readonly _artifacts = new Map<string, ArtifactAccumulator>();
  private _finalSeen = false;
  /** Keyed by kind and artifact id, so a long stream cannot grow it beyond one entry per artifact. */
  private readonly _conflicts = new Map<string, ArtifactConflict>();
  private readonly _timelineLimit: number;
  private readonly _previewChars: number;
  /** Children the gateway reported on this task's stream (`META.child`), the latest report per child. */
  private readonly _children: ReportedChildren = new Map();
  /** Consent questions the gateway asked on this task's stream (`META.consent`) and their decisions, by id. */
  private readonly _consents = new Map<string, { question?: ConsentQuestion; decision?: ConsentDecision }>();
  /** Tool calls of the development-tool extension, by call id, in the order first seen (latest state each). */
  private readonly _toolCalls = new Map<string, ToolCallView>();
  /** The agent speaks the development-tool dialect (its events carry `metadata.coderAgent`). */
  private _devTool = false;
  private _finishedBy?: 'user';

  constructor(request: DelegationRequest, options: DelegationJournalOptions = {}) {
    this.request = request;
    this._lastAt = request.createdAt;
    this._timelineLimit = options.timelineLimit ?? 2000;
    this._previewChars = options.previewChars ?? 4096;
  }

  /** Rebuilds a journal from persisted entries (the first must be the `request`). */
  static fromEntries(entries: readonly JournalEntry[], options?: DelegationJournalOptions): DelegationJournal {
    const first = entries[0];
    if (!first || first.kind !== 'request') throw new Error('a delegation journal must start with its request');
    const j = new DelegationJournal(first.request, options);
    for (const e of entries.slice(1)) j.apply(e);
    return j;
  }

  get requestId(): string {
    return this.request.requestId;
  }
  get taskId(): string | undefined {
    return this._taskId;
  }
  get contextId(): string | undefined {
    return this._contextId;
  }
  get taskState(): TaskState | undefined {
    return this._taskState;
  }

  /** The text of the task's latest status message, as the journal knows it. */
  get stateText(): string | undefined {
    return this._stateText;
  }
  /** Has a `send` been journaled (the first message may have reached the agent)? */
  get started(): boolean {
    return this._started;
  }
  get sendAttempts(): number {
    return this._sendAttempts;
  }
  /** The `Last-Event-ID` to resume from: every sequenced event up to it has been journaled. */
  get cursor(): number {
    return this._contiguous;
  }
  get maxSeq(): number {
    return this._maxSeq;
  }
  /** Events journaled (status/artifact/message), duplicates excluded. */
  get eventCount(): number {
    return this._eventCount;
  }
  /** The last recorded outcome (an `outcome` entry), if any. */
  get recordedOutcome(): OutcomeDecision | undefined {
    return this._recorded;
  }
  /** True once a `final` snapshot (GetTask after settling) is in the journal. */
  get hasFinalSnapshot(): boolean {
    return this._finalSeen;
  }
  get cancelRequestedBy(): 'user' | 'deadline' | undefined {
    return this._cancelBy;
  }

  facts(): OutcomeFacts {
    return {
      taskState: this._taskState,
      stateText: this._stateText,
      agentOutcome: this._agentOutcome,
      messageResult: this._messageResult,
      cancelBy: this._cancelBy,
      cancelAnswered: this._cancelAnswered,
      cancelConfirmed: this._cancelConfirmed,
      ...(this._cancelNoTask ? { cancelNoTask: true } : {}),
      replyPending: this._replyPending,
      contactLost: this._contactLost,
      sendFailed: this._sendFailed,
      agentError: this._agentError,
      endpoint: this.request.agent.endpoint,
      deadline: this.request.deadline,
      ...(this._finishedBy ? { finishedBy: this._finishedBy } : {}),
    };
  }

  /** The agent's tool calls (development-tool extension), each in its latest state, in the order first seen. */
  toolCalls(): ToolCallView[] {
    return [...this._toolCalls.values()];
  }

  /** The agent speaks the development-tool extension (seen in its events). */
  get devTool(): boolean {
    return this._devTool;
  }

  get finishedBy(): 'user' | undefined {
    return this._finishedBy;
  }

  /** The outcome the journal so far implies (not necessarily recorded yet). */
  decide(): OutcomeDecision | undefined {
    return decideOutcome(this.facts());
  }

  /** True if a sequenced event with this seq is already journaled for the task. */
  isDuplicate(taskId: string, seq: number): boolean {
    if (this._taskId !== undefined && taskId !== this._taskId) return false;
    return seq <= this._contiguous || this._seenAbove.has(seq);
  }

  /** A local seq for an event the agent did not number. */
  nextLocalSeq(): number {
    return ++this._localSeq;
  }

  /**
   * Applies one entry. Returns false (and changes nothing) for a sequenced event already journaled,
   * so the caller can skip persisting it.
   */
  apply(e: JournalEntry): boolean {
    this._lastAt = Math.max(this._lastAt, e.at);
    switch (e.kind) {
      case 'request':
        return true;
      case 'send':
        this._started = true;
        this._sendAttempts = Math.max(this._sendAttempts, e.attempt);
        this._sendFailed = undefined;
        return true;
      case 'sendFailed':
        this._sendFailed = { delivered: e.delivered, error: e.error };
        this.note(e.at, 'error', { code: 'send.failed', params: [e.error] });
        return true;
      case 'agentError':
        this._agentError = e.error;
        this.note(e.at, 'error', { code: 'stream.agentError', params: [e.error] });
        return true;
      case 'task':
        this.bindTask(e.taskId, e.contextId);
        return true;
      case 'event':
        return this.applyEvent(e);
      case 'snapshot':
        this.applySnapshot(e.task, e.source, e.at);
        return true;
      case 'reply': {
        this._replyPending = true;
        this._contactLost = undefined;
        this._agentError = undefined;
        this._recorded = undefined;
        this._endedAt = undefined;
        const answers = toolAnswersOf(e.message.parts);
        for (const a of answers) {
          const call = this._toolCalls.get(a.callId);
          if (call)
            this._toolCalls.set(a.callId, {
              ...call,
              answered: a.outcome,
              ...(e.autoApproved ? { autoApproved: true } : {}),
            });
          const code = e.autoApproved
            ? 'toolCall.autoApproved'
            : a.outcome === 'cancel'
              ? 'toolCall.denied'
              : 'toolCall.approved';
          this.note(e.at, 'info', {
            code,
            params: [call ? toolCallLine(call).replace(/: [^:]*$/, '') : a.callId, a.outcome],
          });
        }
        // The answer itself is said by the note above; what else the message has is shown as sent.
        const rest = shown(e.message.parts.filter((p) => p.content?.$case !== 'data' || answers.length === 0));
        if (rest.text || rest.data || answers.length === 0)
          this.push({ kind: 'message', at: iso(e.at), role: 'user', ...rest });
        return true;
      }
      case 'finished':
        this._finishedBy = e.by;
        this.note(e.at, 'info', { code: 'finished.byUser' });
        return true;
      case 'cancel':
        this._cancelBy ??= e.by;
        this.note(e.at, 'info', { code: e.by === 'deadline' ? 'cancel.deadline' : 'cancel.user' });
        return true;
      case 'cancelResult':
        this._cancelAnswered = true;
        this._cancelConfirmed = this._cancelConfirmed || e.confirmed;
        if (e.code === 'cancel.noTask') this._cancelNoTask = true;
        this.note(e.at, e.confirmed ? 'info' : 'warning', e.code ? e : { text: e.detail });
        return true;
      case 'connection':
        this.applyConnection(e);
        return true;
      case 'notice':
        this.note(e.at, e.level, e);
        return true;
      case 'resultCheck':
        this._resultCheck = {
          signature: e.signature,
          ...(e.message ? { message: e.message } : {}),
          ...(e.executor ? { executor: e.executor } : {}),
          ...(e.patch ? { patch: e.patch } : {}),
          ...(Array.isArray(e.patches) ? { patches: e.patches } : {}),
          ...(Array.isArray(e.links) ? { links: e.links } : {}),
        };
        return true;
      case 'outcome':
        this._recorded = {
          outcome: e.outcome,
          reason: e.reason,
          ...(e.because ? { because: e.because } : {}),
          cancelConfirmed: e.cancelConfirmed,
        };
        if (isFinalOutcome(e.outcome) || e.outcome === 'unknown') this._endedAt = e.at;
        else this._endedAt = undefined;
        return true;
    }
  }

  private applyConnection(e: Extract<JournalEntry, { kind: 'connection' }>): void {
    if (e.status === 'lost' || e.status === 'retrying' || e.status === 'gaveUp') {
      const refused = isCredentialRefusal(e.error ?? '');
      // Said once per stretch of refusals: a new token may be all it takes.
      if (refused && !this._tokenRefused)
        this.note(e.at, 'warning', { code: 'connection.tokenRefused', params: [hostOf(this.request.agent.endpoint)] });
      this._tokenRefused = refused;
    } else this._tokenRefused = false;
    switch (e.status) {
      case 'lost':
        this._reconnecting = true;
        this.note(
          e.at,
          'warning',
          e.error ? { code: 'connection.lostBecause', params: [e.error] } : { code: 'connection.lost' },
        );
        break;
      case 'retrying':
        this._reconnecting = true;
        break;
      case 'restored':
        this._reconnecting = false;
        this._contactLost = undefined;
        this.note(e.at, 'info', { code: 'connection.restored' });
        break;
      case 'gaveUp':
        this._reconnecting = false;
        this._contactLost = e.error ?? 'no answer';
        this.note(
          e.at,
          'error',
          e.error
            ? { code: 'connection.gaveUpBecause', params: [e.attempt ?? 0, e.error] }
            : { code: 'connection.gaveUp', params: [e.attempt ?? 0] },
        );
        break;
      case 'checking':
        this._recorded = undefined;
        this._contactLost = undefined;
        this._sendFailed = undefined;
        this._agentError = undefined;
        this._reconnecting = true;
        this.note(e.at, 'info', { code: 'connection.checking' });
        break;
    }
  }

  private bindTask(taskId: string, contextId: string): void {
    if (!taskId) return;
    this._taskId ??= taskId;
    if (contextId) this._contextId ??= contextId;
  }

  /** Moves the known state forward. Terminal states are final (A2A); sequenced info never goes back in seq. */
  private setState(
    state: TaskState | undefined,
    text: string | undefined,
    seq: number | undefined,
    at: number,
    metadata?: Record<string, unknown>,
    /** The status's message: a gateway holding the task until its turn says so on it (`META.turn`). */
    statusMessage?: { readonly metadata?: Record<string, unknown> },
  ): boolean {
    if (state === undefined || state === TaskState.TASK_STATE_UNSPECIFIED || state === TaskState.UNRECOGNIZED)
      return false;
    if (isTerminalTaskState(this._taskState)) return false;
    if (seq !== undefined && seq < this._stateSeq) return false;
    if (seq !== undefined) this._stateSeq = seq;
    const changed = state !== this._taskState;
    this._taskState = state;
    this._stateText = text || undefined;
    this._waitingTurn = state === TaskState.TASK_STATE_SUBMITTED && isRecord(statusMessage?.metadata?.[META.turn]);
    const hint = metadata?.[META.outcome];
    this._agentOutcome = typeof hint === 'string' ? hint : undefined;
    this._replyPending = false;
    this._reconnecting = false;
    this._contactLost = undefined;
    if (isTerminalTaskState(state)) this._endedAt ??= at;
    return changed;
  }

  private applyEvent(e: Extract<JournalEntry, { kind: 'event' }>): boolean {
    if (e.sequenced) {
      if (this.isDuplicate(e.taskId, e.seq)) return false;
      this._seenAbove.add(e.seq);
      while (this._seenAbove.has(this._contiguous + 1)) this._seenAbove.delete(++this._contiguous);
      this._maxSeq = Math.max(this._maxSeq, e.seq);
    } else {
      this._localSeq = Math.max(this._localSeq, e.seq);
    }
    this._eventCount++;
    const p = e.event.payload;
    if (!p) return true;
    const seq = e.sequenced ? e.seq : undefined;
    switch (p.$case) {
      case 'statusUpdate': {
        const ev = p.value;
        this.bindTask(ev.taskId, ev.contextId);
        const child = childTaskOf(ev.metadata);
        if (child) foldChildTask(this._children, child, seq);
        const gap: unknown = ev.metadata?.[META.gap];
        if (gap !== undefined) {
          // The gateway says its log of the task lacks events here: shown as Baton's own notice, the state
          // left to the events that follow (the remote's task as it is now).
          const takeover = isRecord(gap) && gap.reason === 'takeover';
          this.note(e.at, 'warning', { code: takeover ? 'relay.gapTakeover' : 'relay.gap' });
          break;
        }
        const consent = consentOf(ev.metadata);
        if (consent) {
          // Shown in Baton's words (the gateway's English line is left out); the state does not change.
          this.applyConsent(consent, e.at);
          break;
        }
        const calls = this.applyToolCalls(ev.metadata, ev.status?.message?.parts);
        // A tool call is shown as its one line (the panel and the CLI show the call itself), not as its JSON.
        const text = calls.length > 0 ? calls.map(toolCallLine).join('\n') : partsText(ev.status?.message?.parts);
        // The dialect's tool-call updates repeat whatever state the task had (input-required while an
        // approved call runs, without `final`): only its other events say where the task is.
        const state = TOOL_CALL_KINDS.has(coderAgentKind(ev.metadata) ?? '') ? undefined : ev.status?.state;
        const changed = state !== undefined && this.setState(state, text, seq, e.at, ev.metadata, ev.status?.message);
        const deferred = this._deferredStatusSeq !== undefined && seq !== undefined && seq >= this._deferredStatusSeq;
        if (deferred) this._deferredStatusSeq = undefined;
        // A tool call's JSON is not shown again as data: the panel and the CLI show the call itself.
        const content = calls.length > 0 ? { text } : shown(ev.status?.message?.parts);
        if ((changed || deferred) && state !== undefined)
          this.push({ kind: 'status', at: iso(e.at), state: stateName(state), ...withText(content) });
        else if (text) this.push({ kind: 'step', at: iso(e.at), ...content });
        break;
      }
      case 'artifactUpdate': {
        const ev = p.value;
        this.bindTask(ev.taskId, ev.contextId);
        if (ev.artifact) this.applyArtifactChunk(ev.artifact, ev.append, ev.lastChunk, e.at);
        break;
      }
      case 'message': {
        const m = p.value;
        if (m.taskId) this.bindTask(m.taskId, m.contextId);
        else this._messageResult = true;
        this.push({ kind: 'message', at: iso(e.at), role: 'agent', ...shown(m.parts) });
        break;
      }
      case 'task':
        this.applySnapshot(p.value, 'stream', e.at);
        break;
    }
    return true;
  }

  private applyArtifactChunk(a: Artifact, append: boolean, lastChunk: boolean, at: number): void {
    const existing = this._artifacts.get(a.artifactId);
    if (this._finalSeen) this.conflict('after-final', a.artifactId, existing?.name || a.name);
    if (existing?.final) return; // GetTask's copy is authoritative
    let acc: ArtifactAccumulator;
    if (existing && append) {
      acc = existing;
      appendParts(acc, a.parts);
    } else {
      const index = existing
        ? existing.timelineIndex
        : this.push({
            kind: 'artifact',
            at: iso(at),
            artifactId: a.artifactId,
            name: a.name,
            size: 0,
            chunks: 0,
            complete: false,
          });
      acc = artifactFrom(a, false, index);
      this._artifacts.set(a.artifactId, acc);
    }
    acc.complete = acc.complete || lastChunk;
    this.updateArtifactEntry(acc, at);
  }

  private updateArtifactEntry(acc: ArtifactAccumulator, at: number): void {
    const i = acc.timelineIndex - this._timelineBase;
    const first = i >= 0 && i < this._timeline.length ? this._timeline[i].at : iso(at);
    const entry: JournalTimelineEntry = {
      kind: 'artifact',
      at: first,
      artifactId: acc.artifactId,
      name: acc.name,
      size: acc.size,
      chunks: acc.chunks,
      complete: acc.complete,
    };
    if (i >= 0 && i < this._timeline.length) this._timeline[i] = entry;
  }

  private applySnapshot(task: Task, source: 'stream' | 'getTask' | 'final' | 'cancel', at: number): void {
    this.bindTask(task.id, task.contextId);
    const text = partsText(task.status?.message?.parts);
    const state = task.status?.state;
    const snapSeq = seqOf(task.metadata);
    const before = this._stateText;
    const changed = this.setState(state, text, snapSeq, at, task.metadata, task.status?.message);
    const ahead = source === 'getTask' && snapSeq !== undefined && snapSeq > this._contiguous;
    if (changed && state !== undefined && ahead) this._deferredStatusSeq = snapSeq;
    else if ((changed || (source === 'final' && this._deferredStatusSeq !== undefined)) && state !== undefined) {
      this._deferredStatusSeq = undefined;
      this.push({
        kind: 'status',
        at: iso(at),
        state: stateName(state),
        ...withText(shown(task.status?.message?.parts)),
      });
    } else if (source === 'stream' && text && text !== before && this._taskState === state) {
      // An agent that reports progress as whole tasks (A2A 0.3 agents do): a new status text in the
      // same state is a step, as it would be in a status update.
      this.push({ kind: 'step', at: iso(at), ...shown(task.status?.message?.parts) });
    }
    if (source === 'final') {
      this._finalSeen = true;
      const finalIds = new Set(task.artifacts.map((a) => a.artifactId));
      for (const prev of this._artifacts.values())
        if (!finalIds.has(prev.artifactId)) this.conflict('not-final', prev.artifactId, prev.name);
      for (const a of task.artifacts) {
        const prev = this._artifacts.get(a.artifactId);
        const index = prev
          ? prev.timelineIndex
          : this.push({
              kind: 'artifact',
              at: iso(at),
              artifactId: a.artifactId,
              name: a.name,
              size: 0,
              chunks: 0,
              complete: true,
            });
        const acc = artifactFrom(a, true, index);
        if (prev && !agrees(prev, acc)) this.conflict('differs', a.artifactId, prev.name || a.name);
        acc.chunks = prev?.chunks ?? a.parts.length;
        this._artifacts.set(a.artifactId, acc);
        this.updateArtifactEntry(acc, at);
      }
    }
  }

  private conflict(kind: ArtifactConflict['kind'], artifactId: string, name: string): void {
    const key = `${kind}\u0000${artifactId}`;
    if (!this._conflicts.has(key)) this._conflicts.set(key, { kind, artifactId, name });
  }

  /** Where the stream and the final task disagree about artifacts, in the order it was seen. */
  /** Folds the tool calls a development-tool status update carries; returns them as they now stand. */
  private applyToolCalls(
    metadata: Record<string, unknown> | undefined,
    parts: readonly Part[] | undefined,
  ): ToolCallView[] {
    if (coderAgentKind(metadata) !== undefined) this._devTool = true;
    // Only an agent that speaks the dialect makes tool calls: any other agent's data part is its data.
    if (!this._devTool) return [];
    const out: ToolCallView[] = [];
    for (const part of parts ?? []) {
      if (part.content?.$case !== 'data') continue;
      const call = toolCallFromData(part.content.value);
      if (!call) continue;
      const merged = mergeToolCall(this._toolCalls.get(call.callId), call);
      this._toolCalls.set(call.callId, merged);
      out.push(merged);
    }
    return out;
  }

  artifactConflicts(): readonly ArtifactConflict[] {
    return [...this._conflicts.values()];
  }

  private applyConsent(report: NonNullable<ReturnType<typeof consentOf>>, at: number): void {
    const id = report.kind === 'question' ? report.question.id : report.id;
    const before = this._consents.get(id);
    foldConsent(this._consents, report);
    const after = this._consents.get(id);
    if (report.kind === 'question') {
      if (before?.question || !after?.question) return;
      const q = after.question;
      const caps = capabilityWords(q.capabilities, english);
      this.note(at, 'info', {
        code: 'consent.asked',
        params: [this.request.agent.name || q.parentAgentId || '?', q.agentName, q.title, caps],
      });
      return;
    }
    if (before?.decision || !after?.decision) return;
    const name = after.question?.agentName ?? '?';
    const level = after.decision === 'allowed' ? 'info' : 'warning';
    this.note(at, level, { code: `consent.${after.decision}`, params: [name] });
  }

  /** A notice in the timeline: its code and params, with the English line for readers without a translation. */
  private note(at: number, level: 'info' | 'warning' | 'error', words: EntryWords): void {
    if (words.code === undefined) {
      this.push({ kind: 'notice', at: iso(at), level, text: words.text });
      return;
    }
    const params = words.params ?? [];
    this.push({
      kind: 'notice',
      at: iso(at),
      level,
      code: words.code,
      params,
      text: timelineEntryText({ code: words.code, params, text: '' }),
    });
  }

  /** Appends to the timeline and returns the entry's absolute index. */
  private push(entry: JournalTimelineEntry): number {
    this._timeline.push(entry);
    if (this._timeline.length > this._timelineLimit * 2) {
      const drop = this._timeline.length - this._timelineLimit;
      this._timeline = this._timeline.slice(drop);
      this._timelineBase += drop;
    }
    return this._timelineBase + this._timeline.length - 1;
  }

  /** Artifacts with appended chunks concatenated; `final` ones come from GetTask. */
  artifacts(): ArtifactContent[] {
    return [...this._artifacts.values()].map((a) => ({
      artifactId: a.artifactId,
      name: a.name,
      description: a.description,
      mediaType: a.mediaType,
      filename: a.filename,
      text: a.textChunks.join(''),
      otherParts: a.otherParts,
      final: a.final,
    }));
  }

  /**
   * The returned `changes.patch`, if any: the final task's when there is one (a streamed artifact of the
   * same name that the final task does not list is never preferred to it). What a user reviews comes
   * from the verified result instead (src/node/resultCheck.ts); this is the journal's own view.
   */
  patch(): ArtifactContent | undefined {
    const all = this.artifacts();
    const named = all.filter((a) => a.name === PATCH_ARTIFACT.name || a.filename === PATCH_ARTIFACT.name);
    const patches = named.length ? named : all.filter((a) => accumulatorIsPatch(this._artifacts.get(a.artifactId)));
    return patches.find((a) => a.final) ?? patches[0];
  }

  /** The panel's state word: the outcome when decided, else where the delegation is. */
  state(): DelegationState {
    const decided = (this.decide() ?? this._recorded)?.outcome;
    if (decided && (isFinalOutcome(decided) || decided === 'unknown')) return decided;
    if (this._cancelBy && !this._cancelAnswered) return 'canceling';
    if (decided) return decided;
    if (this._reconnecting) return 'reconnecting';
    if (!this._started) return 'queued';
    if (this._replyPending) return 'working';
    if (this._taskState === TaskState.TASK_STATE_SUBMITTED) return this._waitingTurn ? 'waiting' : 'submitted';
    if (this._taskState === TaskState.TASK_STATE_WORKING) return 'working';
    return 'starting';
  }

  /** What the result check recorded last, if it ran. */
  get resultCheck(): ResultCheckRecord | undefined {
    return this._resultCheck;
  }

  /** The consent questions the gateway asked on this task's stream, in the order asked, with their decisions. */
  consents(): ConsentRecord[] {
    const out: ConsentRecord[] = [];
    for (const c of this._consents.values())
      if (c.question) out.push(c.decision ? { question: c.question, decision: c.decision } : { question: c.question });
    return out;
  }

  /** Children the gateway reported for this task, oldest first. */
  childTasks(): ChildTaskInfo[] {
    return [...this._children.values()].map((c) => c.info).sort((a, b) => a.startedAt - b.startedAt);
  }

  /**
   * The first message was refused for its credentials (HTTP 401/403, `UNAUTHENTICATED`), so the delegation
   * failed before any task: a new token and Delegate Again are what the user needs.
   */
  private refusedAtSend(state: DelegationState): boolean {
    const f = this._sendFailed;
    return state === 'failed' && !!f && f.delivered !== 'maybe' && isCredentialRefusal(f.error);
  }

  view(now: number): DelegationRecord {
    const r = this.request;
    const decided = this.decide() ?? this._recorded;
    const state = this.state();
    const ended = this._endedAt;
    const artifacts: RecordedArtifact[] = [...this._artifacts.values()].map((a) => {
      return {
        artifactId: a.artifactId,
        name: a.name,
        mediaType: a.mediaType,
        filename: a.filename,
        size: a.size,
        final: a.final,
        preview: previewOf(a.textChunks, this._previewChars),
        isPatch: accumulatorIsPatch(a),
      };
    });
    const timeline =
      this._timeline.length > this._timelineLimit ? this._timeline.slice(-this._timelineLimit) : this._timeline.slice();
    const interrupted = state === 'input-required' || state === 'auth-required';
    const settled = isFinalOutcome(decided?.outcome);
    const toolCalls = this.toolCalls();
    const waiting =
      state !== 'input-required' || this._stateText
        ? undefined
        : pendingToolCalls(toolCalls).length > 0
          ? ('approval' as const)
          : ('turn' as const);
    return {
      requestId: r.requestId,
      title: r.title,
      who: r.who,
      agent: { id: r.agent.id, name: r.agent.name, endpoint: r.agent.endpoint },
      ...(r.parentRequestId ? { parentRequestId: r.parentRequestId } : {}),
      ...(r.startedBy ? { startedBy: r.startedBy } : {}),
      ...(this._children.size ? { childTasks: this.childTasks() } : {}),
      state,
      ...(decided ? { outcome: decided.outcome, outcomeReason: decided.reason } : {}),
      ...(decided?.because ? { outcomeBecause: decided.because } : {}),
      ...(decided?.cancelConfirmed !== undefined ? { cancelConfirmed: decided.cancelConfirmed } : {}),
      ...(this._taskId ? { taskId: this._taskId } : {}),
      ...(this._contextId ? { contextId: this._contextId } : {}),
      createdAt: iso(r.createdAt),
      ...(ended !== undefined ? { endedAt: iso(ended) } : {}),
      ...(r.deadline !== undefined ? { deadline: iso(r.deadline), deadlineRemainingMs: r.deadline - now } : {}),
      elapsedMs: Math.max(0, (ended ?? now) - r.createdAt),
      capabilities: r.capabilities,
      timeline,
      timelineOmitted: this._timelineBase + this._timeline.length - timeline.length,
      artifacts,
      ...(interrupted && this._stateText ? { prompt: this._stateText } : {}),
      ...(toolCalls.length > 0 ? { toolCalls } : {}),
      ...(waiting ? { waiting } : {}),
      ...((this._tokenRefused && (state === 'reconnecting' || state === 'unknown')) || this.refusedAtSend(state)
        ? { tokenRefused: true }
        : {}),
      ...(this._resultCheck ? { resultCheck: this._resultCheck } : {}),
      actions: {
        cancel: !settled && state !== 'unknown' && state !== 'canceling',
        reply: state === 'input-required',
        checkAgain: state === 'unknown' || state === 'auth-required',
        // A diff in the final message (or the patch built from the agent's edits) is a patch too, once
        // the result check approved it.
        reviewChanges: artifacts.some((a) => a.isPatch && a.final) || this._resultCheck?.patch !== undefined,
        ...(waiting === 'turn' ? { done: true } : {}),
      },
    };
  }
}

/** The host (and port) of an agent's endpoint, for the user to recognise; the text itself when it is no URL. */
function hostOf(endpoint: string): string {
  try {
    return new URL(endpoint).host;
  } catch {
    return endpoint;
  }
}
