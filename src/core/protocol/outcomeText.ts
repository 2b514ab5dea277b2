/**
 * Why a delegation ended the way it did, in Baton's words, as data: a code and its parameters, kept
 * in the journal beside the English sentence (for logs and the `baton` CLI), and said in the reader's
 * language where it is shown. When the agent gave its own reason, that text is shown instead and is
 * never translated.
 */
import { english, type Translate } from './l10n';

/** English messages by code; `{0}`, `{1}`… are replaced by the params. */
export const OUTCOME_MESSAGES = {
  completed: 'The agent completed the task.',
  'expired.atAgent': 'The deadline passed at the agent.',
  'unknown.atAgent':
    'The agent lost track of the task (a worker died during a side effect). Check the agent before retrying.',
  failed: 'The agent reported the task failed and gave no reason.',
  rejected: 'The agent rejected the task and gave no reason.',
  'expired.canceled': 'The deadline passed; the agent confirmed the task is canceled.',
  'canceled.confirmed': 'Canceled; the agent confirmed.',
  'canceled.byAgent': 'The agent canceled the task.',
  'completed.message': 'The agent answered with a message.',
  'expired.cancelConfirmed': 'The deadline passed; cancel was sent and the agent confirmed it.',
  'expired.cancelUnconfirmed':
    'The deadline passed; cancel was sent and the agent did not confirm it — the task may still be running there.',
  'canceled.unconfirmed':
    'Cancel was sent but the agent did not confirm it in time; the task may still be running there.',
  'expired.noTask':
    "The deadline passed before the agent at {0} reported a task. It is not known whether it received the request: it may have started work. No cancel could be sent (there was no task to name): check the agent's tasks, or ask its owner, before delegating again.",
  'canceled.noTask':
    "Stopped before the agent at {0} reported a task. It is not known whether it received the request: it may have started work. No cancel could be sent (there was no task to name): check the agent's tasks, or ask its owner, before delegating again.",
  'failed.unreachable': 'Could not reach the agent at {0}: {1}. Nothing was sent.',
  'failed.refused': 'The agent at {0} refused the request before starting a task: {1}',
  'failed.atAgent':
    'The agent at {0} reported an error after the task started: {1}. The task may be left unfinished there.',
  'unknown.sendInDoubt':
    'Sending to {0} failed ({1}) and it is not known whether the agent received the task. Check the agent, then Check Again — Baton does not resend blindly.',
  'unknown.contactLost':
    "Lost contact with the agent at {0} ({1}); the task's state could not be reconciled and it may still be running. Check that the agent is reachable, then Check Again.",
  'input-required': 'The agent needs more input.',
  'auth-required': 'The agent needs authorization to continue.',
  'unknown.afterCancel': 'The cancel left the task in an unknown state.',
  'completed.byUser': 'You finished the delegation and accepted what the agent did.',
} as const;

export type OutcomeCode = keyof typeof OUTCOME_MESSAGES;

export interface OutcomeWords {
  readonly code: OutcomeCode;
  readonly params?: readonly string[];
}

export function isOutcomeCode(c: unknown): c is OutcomeCode {
  return typeof c === 'string' && Object.hasOwn(OUTCOME_MESSAGES, c);
}

/** The sentence for a reason, through `t`; a code this version does not know gives `fallback`. */
export function outcomeReasonText(w: OutcomeWords | undefined, fallback: string, t: Translate = english): string {
  if (!w || !isOutcomeCode(w.code)) return fallback;
  return t(OUTCOME_MESSAGES[w.code], ...(Array.isArray(w.params) ? w.params : []));
}
