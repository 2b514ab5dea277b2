/**
 * The delegation panel's view model: what the host posts to the panel for one delegation. Plain JSON
 * (no SDK objects, no functions) so it crosses `postMessage` unchanged and the webview may import it
 * (the webview may import only src/core/protocol). Produced by `DelegationJournal.view()` in
 * src/core/delegation.ts.
 */

/** How a delegation ended (or paused). DESIGN.md "One task model". */
export type DelegationOutcome =
  'completed' | 'failed' | 'canceled' | 'rejected' | 'input-required' | 'auth-required' | 'unknown' | 'expired';

/**
 * What the panel shows as the state: the outcome once one is decided, otherwise where the delegation
 * is in its life. `queued` waits for a concurrency slot; `starting` has sent (or is sending) the first
 * message and has no task yet; `reconnecting` lost its stream and is reconciling; `canceling` sent a
 * cancel and waits for the agent's answer.
 */
export type DelegationState =
  'queued' | 'starting' | 'submitted' | 'working' | 'reconnecting' | 'canceling' | DelegationOutcome;

export interface CapabilitySet {
  readonly write: boolean;
  readonly shell: boolean;
  readonly network: boolean;
}

export type TimelineEntry =
  /** The task's state changed; `text` is the agent's status message, if any (markdown). */
  | { readonly kind: 'status'; readonly at: string; readonly state: string; readonly text?: string }
  /** A progress message while the task is working (a status update with a message and no state change). */
  | { readonly kind: 'step'; readonly at: string; readonly text: string }
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
  | { readonly kind: 'message'; readonly at: string; readonly role: 'agent' | 'user'; readonly text: string }
  /** Something Baton did or saw: reconnecting, cancel sent, deadline passed, an event refused. */
  | {
      readonly kind: 'notice';
      readonly at: string;
      readonly level: 'info' | 'warning' | 'error';
      readonly text: string;
    };

export interface ArtifactView {
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

export interface DelegationView {
  readonly requestId: string;
  readonly title: string;
  readonly who: string;
  readonly agent: { readonly id: string; readonly name: string; readonly endpoint: string };
  readonly parentRequestId?: string;
  readonly state: DelegationState;
  readonly outcome?: DelegationOutcome;
  /** Why it ended like this, in words the user can act on (the agent's reason for failed/rejected). */
  readonly outcomeReason?: string;
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
  readonly timeline: readonly TimelineEntry[];
  /** Older timeline entries not included (the journal has them all). */
  readonly timelineOmitted: number;
  readonly artifacts: readonly ArtifactView[];
  /** When the agent asked for input or auth: its question. */
  readonly prompt?: string;
  readonly actions: {
    readonly cancel: boolean;
    readonly reply: boolean;
    readonly checkAgain: boolean;
    readonly reviewChanges: boolean;
  };
}
