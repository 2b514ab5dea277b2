/**
 * The delegation panel's view model: what the host posts to the panel for one delegation. Plain JSON
 * (no SDK objects, no functions) so it crosses `postMessage` unchanged and the webview may import it
 * (the webview may import only src/core/protocol). Produced by `delegationPanelView` in
 * src/core/delegation/panelView.ts from the journal's record and what else the panel shows.
 */
import type { DataPartView } from './dataView';
import type { ReviewView } from './panelProtocol';
import type { TimelineCode, TimelineParam } from './timelineText';
import type { OutcomeWords } from './outcomeText';
import type { ToolCallView } from './toolCalls';

/** A tool call as the panel shows it: without the whole file contents the host keeps for the patch. */
export type ToolCallPanelView = Omit<ToolCallView, 'edit'>;

/** How a delegation ended (or paused). */
export type DelegationOutcome =
  'completed' | 'failed' | 'canceled' | 'rejected' | 'input-required' | 'auth-required' | 'unknown' | 'expired';

/**
 * What the panel shows as the state: the outcome once one is decided, otherwise where the delegation
 * is in its life. `queued` waits for a concurrency slot; `starting` has sent (or is sending) the first
 * message and has no task yet; `waiting` is a task the gateway holds until its turn (the member's
 * limit of running tasks there); `reconnecting` lost its stream and is reconciling; `canceling` sent a
 * cancel and waits for the agent's answer.
 */
export type DelegationState =
  'queued' | 'starting' | 'waiting' | 'submitted' | 'working' | 'reconnecting' | 'canceling' | DelegationOutcome;

export interface CapabilitySet {
  readonly write: boolean;
  readonly shell: boolean;
  readonly network: boolean;
}

/** What Baton checked about a finished delegation's signed result. */
export interface SignatureCheck {
  readonly status: 'verified' | 'invalid' | 'unsigned';
  readonly detail: string;
}

/** The returned patch in numbers. */
export interface PatchStats {
  readonly files: number;
  readonly additions: number;
  readonly deletions: number;
}

/** One patch the result check approved, for the user to choose which one to review. */
export interface PatchChoice {
  /** Its index among the delegation's patches (what `reviewChanges` is asked for). */
  readonly index: number;
  /** The artifact's name (or file name); `message` for a diff in the agent's final message. */
  readonly name: string;
  readonly source: 'artifact' | 'message' | 'tool-calls';
  /** `verified`: these bytes are the signed artifact's; `unsigned`: nothing signed them. */
  readonly signature: 'verified' | 'unsigned';
  /** Absent when the bytes do not parse as a patch (the review says why). */
  readonly stats?: PatchStats;
}

/** A patch the agent returned as a link, which Baton does not download. */
export interface PatchLink {
  readonly name: string;
  readonly url: string;
}

export interface TimelineEntry {
  /** The event's per-task sequence number (or a host-assigned one for local notes). */
  readonly seq: number;
  /** ISO time. */
  readonly at: string;
  readonly kind: 'status' | 'message' | 'step' | 'artifact' | 'error' | 'note';
  /**
   * Baton's words for the entry, rendered where it is shown (`timelineEntryText` in timelineText.ts);
   * absent when the whole line is `text`.
   */
  readonly code?: TimelineCode;
  readonly params?: readonly TimelineParam[];
  /**
   * The agent's text (plain, or markdown when `markdown`, rendered sanitised by the panel); without a
   * `code`, the whole line.
   */
  readonly text: string;
  readonly markdown?: boolean;
  readonly state?: DelegationState;
  /** The text's length before it was shortened for the panel (see panelLimits.ts); absent when it was not. */
  readonly fullChars?: number;
  /** The agent's structured content (data parts), shown as a collapsed tree; a summary where it did not fit. */
  readonly data?: readonly DataPartView[];
}

export interface ArtifactView {
  readonly name: string;
  readonly mediaType?: string;
  readonly bytes: number;
  readonly digest?: string;
  readonly isPatch: boolean;
}

/** A child of a delegation, as its panel lists it. */
export interface DelegationChildView {
  /** The child's delegation id when it is a delegation of this window, else its tree id. */
  readonly id: string;
  readonly title: string;
  readonly agentName: string;
  /** A delegation state, or the A2A state a gateway reported for it. */
  readonly state: string;
  /** A delegation of this window: its panel can be opened. */
  readonly local: boolean;
  readonly startedBy: 'user' | 'agent';
  /** For a child a gateway reported: its task id there. */
  readonly taskId?: string;
  /** How many children it has in turn. */
  readonly children: number;
}

export interface DelegationView {
  readonly id: string;
  /** First line of the task as the user wrote it. */
  readonly title: string;
  readonly agent: { readonly name: string; readonly endpoint: string };
  readonly state: DelegationState;
  readonly terminal: boolean;
  readonly startedAt: string;
  readonly endedAt?: string;
  readonly deadline?: string;
  readonly capabilities: CapabilitySet;
  /** Who executed it and how, as the agent reported it. */
  readonly executor?: string;
  /** `builtin` (runs in the gateway, no repository code), `headless` (a coding CLI), `remote`. */
  readonly executorKind?: string;
  /** How it runs, in the gateway's words: why it is unconfined, or what its sandbox allows. */
  readonly executorDetail?: string;
  readonly confined?: boolean;
  /** Why it ended the way it did (the agent's reason, or what Baton saw), in English. */
  readonly reason?: string;
  /** Baton's reason as data (then `reason` is its English): the panel says it in its language. */
  readonly reasonWords?: OutcomeWords;
  /** The question the agent asked when `input-required`. */
  readonly question?: string;
  /** The question's length before it was shortened for the panel; absent when it was not. */
  readonly questionChars?: number;
  /** The agent's tool calls (development-tool extension), latest state each, in the order it made them. */
  readonly toolCalls?: readonly ToolCallPanelView[];
  /**
   * `input-required` without a question: a tool call awaits approval, or the agent finished its turn and
   * waits for the user (reply, Done or Cancel).
   */
  readonly waiting?: 'approval' | 'turn';
  /**
   * The agent refused Baton's credentials: while reconnecting, once contact is lost, or at the first
   * message (the delegation failed before any task). A new token may help.
   */
  readonly tokenRefused?: true;
  readonly timeline: readonly TimelineEntry[];
  /** Earlier timeline entries not in `timeline` (the journal has them). */
  readonly timelineOmitted?: number;
  readonly artifacts: readonly ArtifactView[];
  /** The first (or only) approved patch in numbers: what Review Changes opens without a choice. */
  readonly patch?: PatchStats;
  /** Every approved patch, when there are several: each is reviewed on its own. */
  readonly patches?: readonly PatchChoice[];
  /** Patches the agent returned as links, which Baton does not download. */
  readonly patchLinks?: readonly PatchLink[];
  /** Which of `patches` the open review is of. */
  readonly reviewing?: number;
  readonly signature?: SignatureCheck;
  readonly cancelConfirmed?: boolean;
  /** The review of the returned changes.patch, once the user opened it. */
  readonly review?: ReviewView;
  /** `agent` when a chat agent started it (through VS Code's language-model tools or `baton mcp`). */
  readonly startedBy?: 'user' | 'agent';
  /**
   * Baton no longer calls its agent (removed, no longer served by its gateway, its card changed, or
   * rejected): Delegate Again asks for another agent for the same task.
   */
  readonly agentUnavailable?: boolean;
  /** Delegations started from within this one, newest first. */
  readonly children?: readonly DelegationChildView[];
}
