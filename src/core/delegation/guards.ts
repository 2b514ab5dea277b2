/**
 * Authority guards, pure, used by every caller that grants capabilities or forwards a delegation:
 * `effective = caller grants ∩ local policy ∩ agent's declared capabilities ∩ request ∩ deployment
 * limits`, read-only by default; and the delegation chain's depth, breadth and cycle checks.
 */
import { META } from '../batonProfile';
import type { CapabilitySet } from '../delegation';
import { isRecord } from '../isRecord';

export const READ_ONLY: CapabilitySet = Object.freeze({ write: false, shell: false, network: false });

/**
 * Intersection of capability grants. A set that is missing, or that leaves a capability out, denies
 * it: nothing is granted unless every party grants it (read-only by default).
 */
export function intersectCapabilities(...grants: ReadonlyArray<Partial<CapabilitySet> | undefined>): CapabilitySet {
  if (grants.length === 0) return READ_ONLY;
  const all = (k: keyof CapabilitySet): boolean => grants.every((g) => g?.[k] === true);
  return { write: all('write'), shell: all('shell'), network: all('network') };
}

/** Reads a capability set from untrusted metadata (`baton/capabilities`); anything malformed is read-only. */
export function parseCapabilities(v: unknown): CapabilitySet {
  if (!isRecord(v)) return READ_ONLY;
  return { write: v.write === true, shell: v.shell === true, network: v.network === true };
}

export type CapabilityRequest =
  { readonly ok: true; readonly capabilities: CapabilitySet } | { readonly ok: false; readonly reason: string };

/**
 * Reads the capabilities a request asks for (`baton/capabilities` in its metadata), strictly: none is
 * read-only, a capability left out is not asked for, and anything malformed is refused with what to
 * send instead (where `parseCapabilities` would quietly read it as read-only).
 */
export function readRequestedCapabilities(v: unknown): CapabilityRequest {
  if (v === undefined || v === null) return { ok: true, capabilities: READ_ONLY };
  if (typeof v !== 'object' || Array.isArray(v))
    return {
      ok: false,
      reason: `metadata "${META.capabilities}" must be an object like {"write": false, "shell": false, "network": false}`,
    };
  const o = v as Record<string, unknown>;
  for (const k of ['write', 'shell', 'network'] as const) {
    if (o[k] !== undefined && typeof o[k] !== 'boolean')
      return { ok: false, reason: `metadata "${META.capabilities}".${k} must be true or false` };
  }
  return { ok: true, capabilities: { write: o.write === true, shell: o.shell === true, network: o.network === true } };
}

export interface ChainLimits {
  /** How many delegations deep a chain may go; 1 = only the user delegates. */
  readonly maxDepth: number;
  /** How many children one task may start. */
  readonly maxBreadth: number;
}

export const DEFAULT_CHAIN_LIMITS: ChainLimits = { maxDepth: 1, maxBreadth: 4 };

export type ChainCheck =
  | { readonly ok: true; readonly chain: readonly string[] }
  | { readonly ok: false; readonly code: 'depth' | 'breadth' | 'cycle' | 'invalid'; readonly reason: string };

/**
 * May a delegation whose parent chain is `parentChain` (agent ids from the root down; empty when the
 * user delegates directly) hand a task to `targetAgentId`, given the parent already started
 * `siblings` children? Returns the child's chain when it may.
 */
export function checkDelegationChain(
  parentChain: readonly string[],
  targetAgentId: string,
  siblings = 0,
  limits: ChainLimits = DEFAULT_CHAIN_LIMITS,
): ChainCheck {
  if (!targetAgentId) return { ok: false, code: 'invalid', reason: 'The target agent has no id.' };
  if (parentChain.includes(targetAgentId)) {
    return {
      ok: false,
      code: 'cycle',
      reason: `Refused: ${targetAgentId} is already in this delegation chain (${[...parentChain, targetAgentId].join(' → ')}).`,
    };
  }
  const chain = [...parentChain, targetAgentId];
  if (chain.length > limits.maxDepth) {
    return {
      ok: false,
      code: 'depth',
      reason: `Refused: the chain ${chain.join(' → ')} is ${chain.length} deep; the limit is ${limits.maxDepth}.`,
    };
  }
  if (parentChain.length > 0 && siblings >= limits.maxBreadth) {
    return {
      ok: false,
      code: 'breadth',
      reason: `Refused: this task already started ${siblings} delegations; the limit is ${limits.maxBreadth}.`,
    };
  }
  return { ok: true, chain };
}

/**
 * The chain a task or message carries in metadata (`baton/chain`): its string entries, in order (any
 * other entry is not ours to read); not a list → empty.
 */
export function readChain(metadata: Readonly<Record<string, unknown>> | undefined): string[] {
  const v = metadata?.[META.chain];
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}
