/**
 * Delegations agents start (docs/gateway.md "Agents that delegate"). A coding CLI the gateway runs
 * gets a capability token bound to its task: with it, `baton mcp` may start children of that task
 * and read or cancel them, nothing else, until the task ends (then it is revoked and the children
 * still running are canceled). Every guard is decided here, from what the gateway knows about the
 * parent, never from what the child sends: depth, breadth, cycles (agent id and card digest), a
 * gateway-wide burst cap, the user's consent (asked on the parent's stream and answered on
 * `POST /baton/consent/<id>`, or an explicit per-agent policy), the child's capabilities
 * (request ∩ parent's effective ones; the runner then intersects with the agent and the gateway)
 * and its deadline (capped by the parent's). Admissions, refusals and consent decisions go to the
 * gateway's audit log (`<state>/audit.jsonl`) with the parent of each delegation.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { appendFile } from 'node:fs/promises';
import { TaskState } from '@a2a-js/sdk';
import type { SendMessageRequest, Task } from '@a2a-js/sdk';
import { UnsupportedOperationError } from '@a2a-js/sdk/errors';
import { META } from '../../core/batonProfile';
import type { ChildTaskInfo } from '../../core/batonProfile';
import type { CapabilitySet } from '../../core/delegation';
import { intersectCapabilities, readRequestedCapabilities } from '../../core/delegation/guards';
import { delegationTitle } from '../../core/delegation/request';
import { isTerminal } from '../../core/taskStates';
import { taskTextOf } from '../a2aBuild';
import type { EventHub } from '../eventLog';
import type { GatewayStore } from '../store/gatewayStore';
import { CHILD_PRINCIPAL_PREFIX } from '../store/gatewayStore';

/** The settings that bound agent-started delegations (config `maxDepth`, `maxBreadth`, `burst`, `consent`). */
export interface DelegationPolicy {
  /** How deep agents may delegate: 1 (default) = a task the user started may have children, they none; at most 3. */
  readonly maxDepth: number;
  /** Children one task may start (default 3). */
  readonly maxBreadth: number;
  /** Agent-started delegations the whole gateway admits per window (default 10 a minute). */
  readonly burst: { readonly max: number; readonly windowMs: number };
  /** An explicit decision per target agent id; every other agent needs the user's answer. */
  readonly consent: Readonly<Record<string, 'allow' | 'deny'>>;
  /** How long the user has to answer before the child is refused (default 40 s, under `delegate`'s 50 s). */
  readonly consentTimeoutMs: number;
}

export const MAX_DEPTH_LIMIT = 3;

export const DEFAULT_DELEGATION_POLICY: DelegationPolicy = {
  maxDepth: 1,
  maxBreadth: 3,
  burst: { max: 10, windowMs: 60_000 },
  consent: {},
  consentTimeoutMs: 40_000,
};

/** What a guard refused, for the caller's error and the audit log. */
export type RefusalCode = 'depth' | 'breadth' | 'cycle' | 'burst' | 'consent' | 'ended';

/** A consent question, as the parent's stream carries it (`META.consent`). */
export interface ConsentRequest {
  readonly id: string;
  readonly parentTaskId: string;
  readonly parentAgentId: string;
  readonly agentId: string;
  readonly agentName: string;
  readonly title: string;
  readonly capabilities: CapabilitySet;
  /** ISO 8601: unanswered by then, the child is refused. */
  readonly expiresAt: string;
}

/** What the broker needs from the gateway around it. */
export interface BrokerDeps {
  readonly store: GatewayStore;
  readonly hub: EventHub;
  readonly log: (line: string) => void;
  /** The JSON Lines audit file (created 0600). */
  readonly auditFile: string;
  /** A route's name and card digest, for cycles by digest and for the child's details. */
  describe(agentId: string): { readonly name: string; readonly digest: string } | undefined;
  /** Cancels a task through its route's runner (bounded by the cancel grace). */
  cancel(agentId: string, taskId: string): Promise<void>;
}

/** What the parent's runner gives when it mints a binding: what it may hand down, and how to post on its stream. */
export interface ParentTask {
  readonly agentId: string;
  readonly taskId: string;
  readonly capabilities: CapabilitySet;
  /** Epoch ms. */
  readonly deadline: number;
  /**
   * The chain above this task (agent ids from the root down, without its own): what `admit` wrote in
   * the task's first message when an agent started it; empty for a task the user started.
   */
  readonly above: readonly string[];
  /** The repository the parent works on (its children work on the same one), if any. */
  readonly repoPath?: string;
  /** Posts a working status event on the parent's stream with this text and metadata. */
  post(text: string, metadata: Record<string, unknown>): void;
}

/** What a headless run gets to bind `baton mcp` to its task. */
export interface TaskBinding {
  readonly token: string;
  readonly parentTaskId: string;
}

interface Binding {
  readonly parent: ParentTask;
  readonly principal: string;
  readonly tokenDigest: string;
  /** Agent ids from the root task down to the parent's own. */
  readonly chain: readonly string[];
  readonly digests: readonly string[];
  readonly children: Map<string, ChildTaskInfo>;
  /** Children admitted but not yet started, so concurrent requests cannot pass breadth together. */
  pending: number;
  ended: boolean;
  ending?: Promise<void>;
  readonly unsubscribe: Set<() => void>;
}

/** Retention reads it too: a finished task with an unfinished child is kept. */
const PRINCIPAL_PREFIX = CHILD_PRINCIPAL_PREFIX;

export class ChildBroker {
  private readonly byDigest = new Map<string, Binding>();
  private readonly byPrincipal = new Map<string, Binding>();
  /** Parents by task id (`agent/task`), for cancel and the end of a parent. */
  private readonly byTask = new Map<string, Binding>();
  private readonly admitted: number[] = [];
  private readonly consents = new Map<string, (allow: boolean) => void>();
  private auditChain: Promise<void> = Promise.resolve();

  constructor(
    private current: DelegationPolicy,
    private readonly deps: BrokerDeps,
  ) {
    checkDelegationPolicy(current);
  }

  /** The guards in effect: each delegation is checked against them as it is admitted. */
  get policy(): DelegationPolicy {
    return this.current;
  }

  /**
   * New guards (the gateway's config read again): the next delegation an agent starts is checked
   * against them; those admitted stay, and a consent already asked for waits as long as it was told.
   * Throws, saying the bounds, for guards the broker cannot hold (nothing changes then).
   */
  setPolicy(policy: DelegationPolicy): void {
    checkDelegationPolicy(policy);
    this.current = policy;
  }

  /** The principal a task token stands for (looked up by the token's SHA-256; tokens are random), or undefined. */
  principalForToken(token: string): string | undefined {
    const b = this.byDigest.get(sha256(token));
    return b && !b.ended ? b.principal : undefined;
  }

  isTaskPrincipal(principal: string): boolean {
    return principal.startsWith(PRINCIPAL_PREFIX);
  }

  /** A token for this task only; revoked when `ending` runs for it. */
  mint(parent: ParentTask): TaskBinding {
    const token = `bt_${randomBytes(32).toString('base64url')}`;
    const key = taskKey(parent.agentId, parent.taskId);
    const chain = [...parent.above, parent.agentId];
    const binding: Binding = {
      parent,
      principal: `${PRINCIPAL_PREFIX}${parent.agentId}/${parent.taskId}`,
      tokenDigest: sha256(token),
      chain,
      digests: chain.map((id) => this.deps.describe(id)?.digest ?? ''),
      children: new Map(),
      pending: 0,
      ended: false,
      unsubscribe: new Set(),
    };
    this.byDigest.set(binding.tokenDigest, binding);
    this.byPrincipal.set(binding.principal, binding);
    this.byTask.set(key, binding);
    return { token, parentTaskId: parent.taskId };
  }

  /**
   * Checks a first message a task principal sends to `agentId` and returns it as the gateway will run
   * it: the parent, chain, capabilities, deadline and repository set from what the gateway knows.
   * Throws the refusal (with the reason and the limit) otherwise.
   */
  async admit(principal: string, agentId: string, params: SendMessageRequest): Promise<SendMessageRequest> {
    const b = this.byPrincipal.get(principal);
    const msg = params.message;
    if (!b || !msg) throw new UnsupportedOperationError('this token may only start children of its own task');
    const target = this.deps.describe(agentId);
    const title = delegationTitle(taskTextOf(msg.parts));
    const refuse = (code: RefusalCode, reason: string, limit?: number): never => {
      this.audit({ event: 'refused', code, reason, ...(limit !== undefined ? { limit } : {}), ...who(b, agentId) });
      this.deps.log(`delegation from ${b.parent.agentId} task ${b.parent.taskId} to ${agentId} refused: ${reason}`);
      throw new UnsupportedOperationError(`Refused (${code}): ${reason}`);
    };
    if (b.ended) refuse('ended', `task ${b.parent.taskId} has ended; its token no longer starts anything`);
    const depth = b.chain.length;
    if (depth > this.policy.maxDepth)
      refuse(
        'depth',
        `the chain ${[...b.chain, agentId].join(' → ')} would make a delegation ${depth} deep; the gateway allows agent-started delegations ${this.policy.maxDepth} deep (maxDepth)`,
        this.policy.maxDepth,
      );
    if (b.chain.includes(agentId))
      refuse(
        'cycle',
        `${agentId} is already in this delegation chain (${[...b.chain, agentId].join(' → ')}); an agent may not delegate to itself or to an agent above it`,
      );
    if (target?.digest && b.digests.includes(target.digest))
      refuse(
        'cycle',
        `${agentId} has the same agent card as an agent already in this chain (${b.chain.join(' → ')}); an agent may not delegate to itself under another name`,
      );
    const siblings = b.children.size + b.pending;
    if (siblings >= this.policy.maxBreadth)
      refuse(
        'breadth',
        `task ${b.parent.taskId} already started ${siblings} delegation(s); the limit is ${this.policy.maxBreadth} per task (maxBreadth)`,
        this.policy.maxBreadth,
      );
    const now = Date.now();
    while (this.admitted.length && this.admitted[0] <= now - this.policy.burst.windowMs) this.admitted.shift();
    if (this.admitted.length >= this.policy.burst.max)
      refuse(
        'burst',
        `agents started ${this.admitted.length} delegations in the last ${Math.round(this.policy.burst.windowMs / 1000)} s; the gateway allows ${this.policy.burst.max} (burst); try again later`,
        this.policy.burst.max,
      );
    const md: Record<string, unknown> = { ...(params.metadata ?? {}), ...(msg.metadata ?? {}) };
    const requested = readRequestedCapabilities(md[META.capabilities]);
    const capabilities = intersectCapabilities(
      requested.ok ? requested.capabilities : undefined,
      b.parent.capabilities,
    );
    const sentDeadline = md[META.deadline];
    const asked = typeof sentDeadline === 'string' ? Date.parse(sentDeadline) : NaN;
    const deadline = Number.isFinite(asked) ? Math.min(asked, b.parent.deadline) : b.parent.deadline;
    if (deadline <= now)
      refuse('ended', `task ${b.parent.taskId}'s deadline has passed; its children would have no time`);
    this.admitted.push(now);
    b.pending++;
    try {
      await this.consent(b, agentId, target?.name ?? agentId, title, capabilities, refuse);
      // The parent may have ended while the user was asked.
      if (b.ended) refuse('ended', `task ${b.parent.taskId} ended while its delegation waited for consent`);
    } catch (e) {
      b.pending--;
      this.admitted.splice(this.admitted.indexOf(now), 1);
      throw e;
    }
    const metadata: Record<string, unknown> = { ...(msg.metadata ?? {}) };
    delete metadata[META.repository];
    delete metadata[META.baseCommit];
    delete metadata[META.uncommittedDigest];
    Object.assign(metadata, {
      [META.parent]: { taskId: b.parent.taskId, agentId: b.parent.agentId },
      [META.chain]: [...b.chain, agentId],
      [META.capabilities]: capabilities,
      [META.deadline]: new Date(deadline).toISOString(),
      ...(b.parent.repoPath ? { [META.repository]: b.parent.repoPath } : {}),
    });
    const outer: Record<string, unknown> = { ...(params.metadata ?? {}) };
    for (const k of [META.parent, META.chain, META.capabilities, META.deadline, META.repository]) delete outer[k];
    return { ...params, metadata: outer, message: { ...msg, metadata } };
  }

  /** The start of an admitted child failed: its place is given back. */
  failed(principal: string): void {
    const b = this.byPrincipal.get(principal);
    if (b && b.pending > 0) b.pending--;
  }

  /** An admitted child's task exists: it is recorded, reported on the parent's stream and followed. */
  async adopt(principal: string, agentId: string, taskId: string, params: SendMessageRequest): Promise<void> {
    const b = this.byPrincipal.get(principal);
    if (!b) return;
    const key = taskKey(agentId, taskId);
    if (b.pending > 0) b.pending--;
    if (b.children.has(key)) return;
    const md = params.message?.metadata ?? {};
    const row = await this.deps.store.getTask(agentId, taskId);
    const info: ChildTaskInfo = {
      taskId,
      ...(row?.contextId ? { contextId: row.contextId } : {}),
      agentId,
      agentName: this.deps.describe(agentId)?.name ?? agentId,
      title: delegationTitle(taskTextOf(params.message?.parts ?? [])),
      state: stateWord(row?.state ?? TaskState.TASK_STATE_SUBMITTED),
      startedBy: b.parent.agentId,
      startedAt: Date.now(),
    };
    b.children.set(key, info);
    this.audit({
      event: 'delegation',
      taskId,
      capabilities: md[META.capabilities],
      deadline: md[META.deadline],
      chain: md[META.chain],
      ...who(b, agentId),
    });
    this.report(b, key, info);
    const look = (): void => void this.look(b, key, agentId, taskId);
    const off = this.deps.hub.subscribe(agentId, taskId, look);
    b.unsubscribe.add(off);
    look();
  }

  /**
   * The parent's run is over (or canceled): its token stops working at once, the children still
   * running are canceled (each within the cancel grace) and their last states reported. Idempotent.
   */
  ending(agentId: string, taskId: string): Promise<void> {
    const b = this.byTask.get(taskKey(agentId, taskId));
    if (!b) return Promise.resolve();
    if (b.ending) return b.ending;
    b.ended = true;
    this.byDigest.delete(b.tokenDigest);
    b.ending = (async () => {
      const open = [...b.children.entries()].filter(([, c]) => !c.outcome && !endedWord(c.state));
      await Promise.all(
        open.map(async ([key, c]) => {
          try {
            await this.deps.cancel(c.agentId, c.taskId);
            this.audit({ event: 'canceled', taskId: c.taskId, reason: 'its parent ended', ...who(b, c.agentId) });
          } catch (e) {
            this.deps.log(`canceling child ${c.agentId} task ${c.taskId}: ${(e as Error).message}`);
          }
          await this.look(b, key, c.agentId, c.taskId);
        }),
      );
      for (const off of b.unsubscribe) off();
      b.unsubscribe.clear();
      this.byPrincipal.delete(b.principal);
      this.byTask.delete(taskKey(agentId, taskId));
    })();
    return b.ending;
  }

  /** The user's answer to a consent question; false when there is no such question (answered or expired). */
  answerConsent(id: string, allow: boolean): boolean {
    const answer = this.consents.get(id);
    if (!answer) return false;
    answer(allow);
    return true;
  }

  /** Stops waiting for every open consent question (the gateway is stopping). */
  close(): void {
    for (const answer of this.consents.values()) answer(false);
  }

  private async consent(
    b: Binding,
    agentId: string,
    agentName: string,
    title: string,
    capabilities: CapabilitySet,
    refuse: (code: RefusalCode, reason: string, limit?: number) => never,
  ): Promise<void> {
    const policy = this.policy.consent[agentId];
    if (policy === 'allow') return;
    if (policy === 'deny')
      refuse('consent', `the gateway's consent policy denies delegations to ${agentId} (consent.${agentId} = "deny")`);
    const id = randomUUID();
    const expires = Date.now() + this.policy.consentTimeoutMs;
    const request: ConsentRequest = {
      id,
      parentTaskId: b.parent.taskId,
      parentAgentId: b.parent.agentId,
      agentId,
      agentName,
      title,
      capabilities,
      expiresAt: new Date(expires).toISOString(),
    };
    b.parent.post(`${b.parent.agentId} asks to delegate to ${agentName}: ${title} (waiting for your approval)`, {
      [META.consent]: request,
    });
    const allowed = await new Promise<boolean | undefined>((resolve) => {
      const timer = setTimeout(() => resolve(undefined), this.policy.consentTimeoutMs);
      timer.unref();
      this.consents.set(id, (allow) => {
        clearTimeout(timer);
        resolve(allow);
      });
    });
    this.consents.delete(id);
    const decision = allowed === true ? 'allowed' : allowed === false ? 'denied' : 'expired';
    b.parent.post(`delegation to ${agentName} ${decision}`, { [META.consent]: { id, decision } });
    this.audit({ event: 'consent', consentId: id, decision, ...who(b, agentId) });
    if (allowed === true) return;
    refuse(
      'consent',
      allowed === false
        ? `the user denied the delegation to ${agentName}`
        : `the user did not approve the delegation to ${agentName} within ${Math.round(this.policy.consentTimeoutMs / 1000)} s; set consent.${agentId} = "allow" in the gateway's config to let agents delegate to it without asking`,
    );
  }

  /** Reads a child's state and reports it on its parent's stream when it changed. */
  private async look(b: Binding, key: string, agentId: string, taskId: string): Promise<void> {
    const known = b.children.get(key);
    if (!known) return;
    const row = await this.deps.store.getTask(agentId, taskId).catch(() => undefined);
    if (!row) return;
    const state = stateWord(row.state);
    const outcome = isTerminal(row.state) ? (outcomeOf(row.snapshot) ?? state) : undefined;
    if (state === known.state && outcome === known.outcome) return;
    const info: ChildTaskInfo = { ...known, state, ...(outcome ? { outcome } : {}) };
    b.children.set(key, info);
    this.report(b, key, info);
    if (outcome) this.audit({ event: 'ended', taskId, outcome, ...who(b, agentId) });
  }

  private report(b: Binding, _key: string, info: ChildTaskInfo): void {
    const words = info.outcome ? `ended: ${info.outcome}` : info.state;
    b.parent.post(`child ${info.agentName} (${info.taskId}) ${words}`, { [META.child]: info });
  }

  private audit(record: Record<string, unknown>): void {
    const line = `${JSON.stringify({ at: new Date().toISOString(), ...record })}\n`;
    this.auditChain = this.auditChain
      .then(() => appendFile(this.deps.auditFile, line, { mode: 0o600 }))
      .catch((e: unknown) => this.deps.log(`audit log write failed: ${(e as Error).message}`));
  }

  /** Resolves once every audit line so far is written (tests and shutdown). */
  flushed(): Promise<void> {
    return this.auditChain;
  }
}

/** Throws, saying the bounds, for a policy the broker cannot hold. */
export function checkDelegationPolicy(policy: DelegationPolicy): void {
  const { maxDepth, maxBreadth, burst, consentTimeoutMs } = policy;
  if (!Number.isInteger(maxDepth) || maxDepth < 0 || maxDepth > MAX_DEPTH_LIMIT)
    throw new Error(`maxDepth must be a whole number from 0 to ${MAX_DEPTH_LIMIT}, got ${maxDepth}`);
  if (!Number.isInteger(maxBreadth) || maxBreadth < 1)
    throw new Error(`maxBreadth must be a whole number of at least 1, got ${maxBreadth}`);
  if (!(burst.max >= 1 && burst.windowMs >= 1)) throw new Error('burst needs max ≥ 1 delegations per windowMs ≥ 1 ms');
  if (!(consentTimeoutMs >= 1)) throw new Error('consentTimeoutMs must be at least 1 ms');
}

function who(b: Binding, agentId: string): Record<string, unknown> {
  return { parent: { agentId: b.parent.agentId, taskId: b.parent.taskId }, agentId };
}

function taskKey(agentId: string, taskId: string): string {
  return `${agentId}/${taskId}`;
}

function sha256(s: string): string {
  return createHash('sha256').update(s).digest('hex');
}

/** A2A state in 1.0 words: `working`, `input-required`, … */
export function stateWord(s: TaskState): string {
  const name = TaskState[s] as string | undefined;
  return (name ?? 'unknown')
    .replace(/^TASK_STATE_/, '')
    .toLowerCase()
    .replace(/_/g, '-');
}

function endedWord(w: string): boolean {
  return ['completed', 'failed', 'canceled', 'rejected'].includes(w);
}

/** `META.outcome` from a stored task snapshot's last status. */
function outcomeOf(snapshot: string): string | undefined {
  try {
    const t = JSON.parse(snapshot) as Task & { status?: { message?: { metadata?: Record<string, unknown> } } };
    const fromTask = t.metadata?.[META.outcome];
    if (typeof fromTask === 'string') return fromTask;
    const fromStatus = t.status?.message?.metadata?.[META.outcome];
    return typeof fromStatus === 'string' ? fromStatus : undefined;
  } catch {
    return undefined;
  }
}

/** A card's digest for cycle checks: its name, description and skills (what makes it the same agent). */
export function cardDigest(card: { name?: string; description?: string; skills?: readonly unknown[] }): string {
  return sha256(JSON.stringify([card.name ?? '', card.description ?? '', card.skills ?? []]));
}
