import type { AgentsNode } from '../views/agentsView';

/** The delegation a command acts on: its id, or a Delegations view item (which carries `id`). */
export function delegationIdOf(arg: unknown): string | undefined {
  return typeof arg === 'string' ? arg : (arg as { id?: string } | undefined)?.id;
}

/** The agent a command acts on: its card URL, or an Agents view item. */
export function cardUrlOf(arg: unknown): string | undefined {
  if (typeof arg === 'string') return arg;
  const node = arg as AgentsNode | undefined;
  return node?.kind === 'agent' ? node.entry.cardUrl : undefined;
}
