/**
 * How each delegation state looks, wherever it is shown (the Delegations view and the panel): its
 * words, its codicon and its tone. Declared once so the tree and the panel never disagree. The words
 * are English messages said through the reader's translate function (`t`), so `npm run l10n` extracts
 * them from the table.
 */
import type { DelegationState } from './delegationView';
import type { Translate } from './l10n';

/** `running` and `ok` read as progress and success, `warn` needs attention, `bad` failed, `muted` is quiet. */
export type StateTone = 'running' | 'ok' | 'bad' | 'warn' | 'muted';

export interface StateLook {
  /** A codicon name. */
  readonly icon: string;
  /** The icon turns while the state lasts. */
  readonly spin: boolean;
  readonly tone: StateTone;
  /** Nothing more happens to the delegation once it is in this state. */
  readonly final: boolean;
}

const STATE_WORDS = {
  queued: 'Queued',
  starting: 'Starting',
  reconnecting: 'Reconnecting',
  canceling: 'Canceling',
  waiting: 'Waiting for its turn',
  submitted: 'Submitted',
  working: 'Working',
  'input-required': 'Needs your input',
  'auth-required': 'Needs authorization',
  completed: 'Completed',
  failed: 'Failed',
  canceled: 'Canceled',
  rejected: 'Rejected by the agent',
  unknown: 'Outcome unknown',
  expired: 'Expired',
} as const satisfies Record<DelegationState, string>;

const look = (icon: string, tone: StateTone, spin = false, final = false): StateLook => ({ icon, spin, tone, final });

export const STATE_LOOKS: Readonly<Record<DelegationState, StateLook>> = {
  queued: look('clock', 'muted'),
  starting: look('loading', 'running', true),
  reconnecting: look('sync', 'warn', true),
  canceling: look('loading', 'muted', true),
  waiting: look('clock', 'muted'),
  submitted: look('loading', 'running', true),
  working: look('loading', 'running', true),
  'input-required': look('comment-discussion', 'warn'),
  'auth-required': look('key', 'warn'),
  completed: look('pass', 'ok', false, true),
  failed: look('error', 'bad', false, true),
  canceled: look('circle-slash', 'muted', false, true),
  rejected: look('close', 'bad', false, true),
  unknown: look('question', 'warn'),
  expired: look('watch', 'bad', false, true),
};

export function isDelegationState(s: string): s is DelegationState {
  return Object.hasOwn(STATE_LOOKS, s);
}

/** How a state looks; a state this version does not know (a newer journal) looks like an unknown outcome. */
export function stateLook(state: string): StateLook {
  return isDelegationState(state) ? STATE_LOOKS[state] : STATE_LOOKS.unknown;
}

/** A state in words, in the reader's language; a state this version does not know is shown as it is. */
export function stateLabel(state: string, t: Translate): string {
  return isDelegationState(state) ? t(STATE_WORDS[state]) : state;
}
