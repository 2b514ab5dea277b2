/** Task-state sets the gateway and the client decide on, named once. */
import { TaskState } from '@a2a-js/sdk';

export const TERMINAL_STATES: ReadonlySet<TaskState> = new Set([
  TaskState.TASK_STATE_COMPLETED,
  TaskState.TASK_STATE_FAILED,
  TaskState.TASK_STATE_CANCELED,
  TaskState.TASK_STATE_REJECTED,
]);

/** A stream closes at these too (A2A: interrupted states end a turn). */
export const INTERRUPTED_STATES: ReadonlySet<TaskState> = new Set([
  TaskState.TASK_STATE_INPUT_REQUIRED,
  TaskState.TASK_STATE_AUTH_REQUIRED,
]);

export function isTerminal(s: TaskState | undefined): boolean {
  return s !== undefined && TERMINAL_STATES.has(s);
}

export function isInterrupted(s: TaskState | undefined): boolean {
  return s !== undefined && INTERRUPTED_STATES.has(s);
}

export function endsTurn(s: TaskState | undefined): boolean {
  return isTerminal(s) || isInterrupted(s);
}
