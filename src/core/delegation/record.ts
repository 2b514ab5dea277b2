/**
 * The journal's record of one delegation: what `DelegationJournal.view()` folds its entries into, for
 * the runner, the CLI, the Delegations view and the audit. The panel shows a view made from it
 * (`delegationPanelView` in ./panelView.ts); this record holds more (who, ids, artifact previews,
 * what may be done next) and the timeline as it happened rather than as lines to show.
 */
import type { CapabilitySet, DelegationOutcome, DelegationState, SignatureCheck } from '../protocol/delegationView';
import type { OutcomeWords } from '../protocol/outcomeText';
import type { DataPartView } from '../protocol/dataView';
import type { TimelineCode, TimelineParam } from '../protocol/timelineText';
import type { ChildTaskInfo } from '../batonProfile';
import type { ResultMessage } from '../resultText';
import type { StartedBy } from './tree';
import type { ToolCallView } from '../protocol/toolCalls';

/** Who executed a delegation and how, as the agent reported it (signed, when the result verified). */
export interface ExecutorInfo {
  /** `id (kind)`, for display. */
  readonly label: string;
  /** `builtin`, `headless`, `remote`. */
  readonly kind?: string;
  /** How it runs, in the gateway's words: why it is unconfined, or what its sandbox allows. */
  readonly detail?: string;
  readonly confined?: boolean;
}

/** What the result check found: recorded in the journal when the check is done, the latest one counts. */
export interface ResultCheckRecord {
  /** `detail` is English (logs, the CLI); `message` is the same as data, for the UI to say in its language. */
  readonly signature: SignatureCheck;
  readonly message?: ResultMessage;
  readonly executor?: ExecutorInfo;
  /** The patch the check approved for review: its bytes are kept beside the journal, their digest here. */
  readonly patch?: { readonly artifactId: string; readonly sha256: string };
  /**
   * Every patch the check approved, the first being `patch` (absent in journals written before results
   * could hold several: then `patch` is the only one).
   */
  readonly patches?: readonly RecordedPatch[];
  /** Patches the agent returned as links, which Baton does not download. */
  readonly links?: readonly { readonly name: string; readonly url: string }[];
}

/** One approved patch: where it came from, whether its bytes are the signed ones, and their digest. */
export interface RecordedPatch {
  readonly artifactId: string;
  readonly sha256: string;
  readonly name: string;
  readonly source: 'artifact' | 'message' | 'tool-calls';
  readonly signature: 'verified' | 'unsigned';
}

/**
 * Entries that carry the agent's words have `text` (every part but data parts) and, when the message had
 * data parts, `data`: each as its value, or its summary past `TIMELINE_DATA_BYTES` (src/core/delegation.ts).
 */
export type JournalTimelineEntry =
  /** The task's state changed; `text` is the agent's status message, if any (markdown). */
  | {
      readonly kind: 'status';
      readonly at: string;
      readonly state: string;
      readonly text?: string;
      readonly data?: readonly DataPartView[];
    }
  /** A progress message while the task is working (a status update with a message and no state change). */
  | { readonly kind: 'step'; readonly at: string; readonly text: string; readonly data?: readonly DataPartView[] }
  /** One artifact; updated in place as appended chunks arrive. */
  | {
      readonly kind: 'artifact';
      readonly at: string;
      readonly artifactId: string;
      readonly name: string;
      readonly size: number;
      readonly chunks: number;
      readonly complete: boolean;
    }
  /** A message: the agent's answer (when it replies with a Message) or the user's reply. */
  | {
      readonly kind: 'message';
      readonly at: string;
      readonly role: 'agent' | 'user';
      readonly text: string;
      readonly data?: readonly DataPartView[];
    }
  /**
   * Something Baton did or saw: reconnecting, cancel sent, deadline passed, an event refused. `code`
   * and `params` say it for any language; `text` is the English line (or the stored text of an entry
   * written without a code).
   */
  | {
      readonly kind: 'notice';
      readonly at: string;
      readonly level: 'info' | 'warning' | 'error';
      readonly code?: TimelineCode;
      readonly params?: readonly TimelineParam[];
      readonly text: string;
    };

export interface RecordedArtifact {
  readonly artifactId: string;
  readonly name: string;
  readonly mediaType: string;
  readonly filename: string;
  /** Characters of text content (or bytes of raw content). */
  readonly size: number;
  /** True once the content comes from `GetTask` after the task settled (never only from streamed chunks). */
  readonly final: boolean;
  /** The start of the text content, for display; the full content is in the host. */
  readonly preview: string;
  readonly isPatch: boolean;
}

export interface DelegationRecord {
  readonly requestId: string;
  readonly title: string;
  readonly who: string;
  readonly agent: { readonly id: string; readonly name: string; readonly endpoint: string };
  readonly parentRequestId?: string;
  /** Who started it, when the journal records it (older ones do not: a person did). */
  readonly startedBy?: StartedBy;
  /** Children the gateway reported on this task's stream, the latest report of each. */
  readonly childTasks?: readonly ChildTaskInfo[];
  readonly state: DelegationState;
  readonly outcome?: DelegationOutcome;
  /** Why it ended like this, in words the user can act on (the agent's reason for failed/rejected). */
  readonly outcomeReason?: string;
  /** Baton's reason as data, when the reason is Baton's: said in the reader's language where shown. */
  readonly outcomeBecause?: OutcomeWords;
  /** For canceled/expired: whether the agent confirmed the cancel. */
  readonly cancelConfirmed?: boolean;
  readonly taskId?: string;
  readonly contextId?: string;
  /** ISO times. */
  readonly createdAt: string;
  readonly endedAt?: string;
  readonly deadline?: string;
  readonly elapsedMs: number;
  /** Negative once the deadline has passed. */
  readonly deadlineRemainingMs?: number;
  readonly capabilities: { readonly requested: CapabilitySet; readonly effective: CapabilitySet };
  readonly timeline: readonly JournalTimelineEntry[];
  /** Older timeline entries not included (the journal has them all). */
  readonly timelineOmitted: number;
  readonly artifacts: readonly RecordedArtifact[];
  /** When the agent asked for input or auth: its question. */
  readonly prompt?: string;
  /** The agent's tool calls (development-tool extension), latest state each; absent when it made none. */
  readonly toolCalls?: readonly ToolCallView[];
  /**
   * Why an `input-required` delegation without a question waits: a tool call awaits the user's
   * approval, or the agent finished its turn and waits for the user (reply, Done or Cancel).
   */
  readonly waiting?: 'approval' | 'turn';
  /**
   * The agent refused Baton's credentials (HTTP 401/403): while reconnecting, once contact is lost, or
   * at the first message (failed before any task).
   */
  readonly tokenRefused?: true;
  /** The latest result check, once one is recorded. */
  readonly resultCheck?: ResultCheckRecord;
  readonly actions: {
    readonly cancel: boolean;
    readonly reply: boolean;
    readonly checkAgain: boolean;
    readonly reviewChanges: boolean;
    /** Finish it as completed (Done): the agent waits for the user with no question. */
    readonly done?: boolean;
  };
}

/**
 * The patches a result check approved, in order: its `patches`, or for a check written before a result
 * could hold several, its one `patch` (then the gateway's `changes.patch`).
 */
export function recordedPatches(check: ResultCheckRecord | undefined): readonly RecordedPatch[] {
  if (!check?.patch) return [];
  if (check.patches?.length) return check.patches;
  return [
    {
      ...check.patch,
      name: 'changes.patch',
      source: 'artifact',
      signature: check.signature.status === 'verified' ? 'verified' : 'unsigned',
    },
  ];
}
