/**
 * The words Baton puts in a delegation's timeline. Journals record what happened as a `code` with
 * `params` (plain values: counts, state names, error messages), never as a sentence, so the same
 * journal reads in the user's language wherever it is shown. Each place that shows an entry renders
 * it with `timelineEntryText` and its own translate function: the panel with `@vscode/l10n`'s `t`,
 * the CLI and the host's plain-text views with the English default.
 *
 * The agent's own words (status messages, answers, artifact names) are never translated: they travel
 * in the entry's `text` and are handed to the message as its last argument, after `params`.
 */
import { english, type Translate } from './l10n';

/** English messages by code; `{0}`, `{1}`… are replaced by the entry's params, then its text. */
export const TIMELINE_MESSAGES = {
  // Where the delegation is, in Baton's words around the agent's.
  status: '{0}',
  'status.text': '**{0}** — {1}',
  'message.user': 'You: {0}',
  artifact: '{1} · {0} characters',
  'artifact.streaming': '{1} · {0} characters (streaming…)',
  'artifact.chunks': '{2} · {0} characters in {1} chunks',
  'artifact.chunksStreaming': '{2} · {0} characters in {1} chunks (streaming…)',
  // Sending and following the task.
  'send.failed': 'Sending failed: {0}',
  'stream.agentError': 'The agent reported an error: {0}',
  'connection.lost': 'Connection to the agent lost; reconnecting.',
  'connection.lostBecause': 'Connection to the agent lost ({0}); reconnecting.',
  'connection.restored': 'Reconnected to the agent.',
  'connection.gaveUp': 'Gave up reconnecting after {0} attempts.',
  'connection.gaveUpBecause': 'Gave up reconnecting after {0} attempts ({1}).',
  'connection.checking': 'Checking the task again.',
  'connection.tokenRefused':
    'The agent at {0} refused Baton’s token. If it was changed or revoked, set the new one (Set Token…): Baton keeps trying until it gives up, and Check Again asks once more after that.',
  'relay.gap':
    'Some progress from the agent was not received while the gateway restarted: the steps above and below are not the whole history.',
  'relay.gapTakeover':
    'Some progress from the agent was not received while another gateway instance took the task over: the steps above and below are not the whole history.',
  'stream.tooLarge': 'The agent sent an event over the 4 MiB streaming limit; following the task by polling instead.',
  'stream.tooLargeBecause':
    'The agent sent an event over the 4 MiB streaming limit; following the task by polling instead. ({0})',
  'stream.keepsFailing': 'Streaming from the agent keeps failing; following the task by polling instead.',
  'stream.notOffered':
    'The agent does not stream its progress: Baton asks it how the task is going, every second while it reports something new and less often (up to every 5 s) while it does not.',
  'stream.noFirstEvent':
    'The agent has not answered for {0} s: it has not reported a task yet. It may still be starting (a model call can take a while), so Baton keeps waiting; the deadline ends the delegation, and Cancel stops it now.',
  'gateway.unavailable':
    'The gateway is temporarily unavailable; retrying (HTTP {0} from {1}: {2}; next try in {3} s). This is not a refusal.',
  'gateway.available': 'The gateway answers again.',
  'replay.failed': 'Could not fetch the events missed while disconnected: {0}',
  'final.failed': 'Could not fetch the final artifacts from the agent ({0}); showing what was streamed.',
  'final.failedRetry':
    'Could not fetch the final artifacts from the agent ({0}); showing what was streamed. Check Again later to fetch them.',
  'follow.failed': 'Unexpected error while following the task: {0}',
  'reply.failed': 'Sending the reply failed: {0}',
  // Canceling.
  'cancel.user': 'Cancel requested.',
  'cancel.deadline': 'The deadline passed; canceling the task at the agent.',
  'cancel.confirmed': 'The agent confirmed the cancel.',
  'cancel.beforeSend': 'Canceled before anything was sent.',
  'cancel.noTask': 'The agent had not reported a task yet, so there was nothing to cancel there.',
  'cancel.otherState': 'The agent answered the cancel but the task is {0}.',
  'cancel.noState': 'The agent answered the cancel but the task is in no state.',
  'cancel.timeout': 'The agent did not confirm the cancel within {0} s.',
  'cancel.refused': 'The agent refused or failed the cancel: {0}.',
  'cancel.unavailable': 'The cancel could not be delivered: {0}.',
  // Tool calls (the development-tool extension) and finishing a delegation that waits for you.
  'toolCall.approved': 'You approved {0} ({1}).',
  'toolCall.denied': 'You denied {0}.',
  'toolCall.autoApproved': 'Approved {0} automatically ({1}): automatic approval is on for this agent.',
  // A child an agent at the gateway asks to start, waiting for the user's consent.
  'consent.asked': '{0} asks to delegate to {1}: {2} (capabilities: {3}); waiting for your approval.',
  'consent.allowed': 'The delegation to {0} was allowed.',
  'consent.denied': 'The delegation to {0} was denied.',
  'consent.expired': 'The delegation to {0} was refused: nobody answered within the time the gateway waits.',
  'finished.byUser': 'You finished the delegation: it ends as completed with what the agent did.',
  // The journal itself.
  'journal.tornTail':
    'The journal was cut by a crash; a partial last line was dropped. Missing events are fetched again from the agent where it supports replay.',
  'journal.skipped':
    'The journal was cut by a crash; {0} unreadable lines were skipped. Missing events are fetched again from the agent where it supports replay.',
  'journal.tornTailSkipped':
    'The journal was cut by a crash; a partial last line was dropped and {0} unreadable lines were skipped. Missing events are fetched again from the agent where it supports replay.',
  'journal.writeFailed': 'Could not write the delegation journal: {0}. This delegation may not survive a reload.',
} as const;

export type TimelineCode = keyof typeof TIMELINE_MESSAGES;
export type TimelineParam = string | number;

export function isTimelineCode(v: unknown): v is TimelineCode {
  return typeof v === 'string' && Object.prototype.hasOwnProperty.call(TIMELINE_MESSAGES, v);
}

/** What a timeline entry says: a code with its params and the agent's text, or only a text. */
export interface TimelineWords {
  readonly code?: TimelineCode;
  readonly params?: readonly TimelineParam[];
  /** The agent's own text; the whole line for an entry without a code (written by an older version). */
  readonly text: string;
}

/**
 * The line an entry shows. An entry without a known code (one an older version wrote, or a malformed
 * one) shows its stored text as it is.
 */
export function timelineEntryText(e: TimelineWords, t: Translate = english): string {
  if (!isTimelineCode(e.code)) return e.text;
  const params = Array.isArray(e.params) ? e.params : [];
  return t(TIMELINE_MESSAGES[e.code], ...params, e.text);
}
