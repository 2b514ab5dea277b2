/**
 * The request of a delegation — its first message, title, capabilities and chain — built one way for
 * every caller (the extension's Delegate commands and `baton delegate`), with one set of defaults:
 * read-only unless the user asks for more, and the task's first line, at most `TITLE_LENGTH`
 * characters, as its title.
 *
 * Pure, like the message builder it wraps (context.ts).
 */
import type { CapabilitySet, DelegationRequest } from '../delegation';
import { buildDelegationMessage, pureSha256Hex } from './context';
import type { DelegationMessageInput, Sha256Hex } from './context';
import { READ_ONLY } from './guards';
import type { StartedBy } from './tree';

/** The longest title a delegation gets from its task. */
export const TITLE_LENGTH = 200;

/**
 * The deadline a delegation gets when whoever starts it names none: the editor's default
 * (`baton.defaultDeadlineMinutes`), `baton delegate`'s and the `baton mcp` delegate tool's, so an agent
 * that never answers does not hold a delegation in flight forever.
 */
export const DEFAULT_DEADLINE_MINUTES = 30;
/** The longest deadline anyone may give a delegation (24 hours, as the editor allows). */
export const MAX_DEADLINE_MINUTES = 24 * 60;

export interface DelegationRequestInput extends Omit<DelegationMessageInput, 'capabilities' | 'chain'> {
  /** The agent delegated to; its id starts the delegation chain. */
  readonly agent: DelegationRequest['agent'];
  /** Who delegates (the OS user name). */
  readonly who: string;
  /** Epoch ms. */
  readonly createdAt: number;
  /** What the user asked for; read-only when left out. */
  readonly capabilities?: CapabilitySet;
  /** Who starts it, when it is not the person at the keyboard (a chat agent). */
  readonly startedBy?: StartedBy;
  /** The delegation this one is started from within (the task tree). */
  readonly parentRequestId?: string;
}

/** A delegation's title: the first line of its task, shortened to `TITLE_LENGTH`. */
export function delegationTitle(task: string): string {
  return task.split('\n')[0].slice(0, TITLE_LENGTH);
}

export function buildDelegationRequest(
  input: DelegationRequestInput,
  sha256Hex: Sha256Hex = pureSha256Hex,
): DelegationRequest {
  const capabilities = input.capabilities ?? READ_ONLY;
  const chain = [input.agent.id];
  const { message, contextDigests } = buildDelegationMessage(
    {
      requestId: input.requestId,
      task: input.task,
      selection: input.selection,
      files: input.files,
      diagnostics: input.diagnostics,
      paths: input.paths,
      unsaved: input.unsaved,
      repository: input.repository,
      capabilities,
      deadline: input.deadline,
      chain,
    },
    sha256Hex,
  );
  return {
    requestId: input.requestId,
    title: delegationTitle(input.task),
    who: input.who,
    agent: input.agent,
    message,
    createdAt: input.createdAt,
    ...(input.deadline !== undefined ? { deadline: input.deadline } : {}),
    capabilities: { requested: capabilities, effective: capabilities },
    contextDigests,
    ...(input.parentRequestId ? { parentRequestId: input.parentRequestId } : {}),
    chain,
    ...(input.startedBy ? { startedBy: input.startedBy } : {}),
  };
}
