/**
 * What runs a task behind an agent route: a local agent on this machine, or a remote A2A agent the
 * gateway proxies. The request handler owns auth, idempotency-safe lookups, reads and replay; a runner
 * owns starting, cancelling and (after a restart) recovering the tasks it runs.
 */
import type { AgentCard, Message, SendMessageRequest, Task } from '@a2a-js/sdk';
import type { CommittedStart } from './eventLog';
import type { TaskKind, TaskRow, UnboundClaim } from './store/gatewayStore';

export interface StartedTask {
  readonly taskId: string;
  /** Set when this call created the task here: what its stream starts with, without a read. */
  readonly created?: CommittedStart;
}

/** The agent answered with a Message, not a task (A2A allows either): relayed as it came, no task made. */
export interface DirectReply {
  readonly reply: Message;
  /** The answer as one stream event, in the text it arrived in. */
  readonly body: string;
}

/** What of the caller's request reaches the runner besides the message. */
export interface RunCall {
  /** The extensions the caller asked for (its `A2A-Extensions` / `X-A2A-Extensions` header). */
  readonly extensions: readonly string[];
}

/** How an orphaned task was found: when an instance started, or by a live instance taking it over. */
export type OrphanFound = 'restart' | 'takeover';

export interface TaskRunner {
  readonly kind: TaskKind;
  /** Starts a task for the principal (or finds the one this messageId already made), or relays a direct reply. */
  start(params: SendMessageRequest, principal: string, call?: RunCall): Promise<StartedTask | DirectReply>;
  /** A follow-up message to an existing task (a reply to input-required). */
  continueTask(row: TaskRow, params: SendMessageRequest, principal: string, call?: RunCall): Promise<StartedTask>;
  /** Stops the task; resolves (within a bounded time) once its outcome is recorded. */
  cancel(row: TaskRow): Promise<void>;
  /** The authoritative task, when someone else holds it (a proxied remote); undefined: use the store. */
  fetchTask?(row: TaskRow, historyLength: number | undefined): Promise<Task | undefined>;
  /**
   * Makes sure someone is producing this task's events (a proxy re-attaches after a restart, or
   * looks again at a task that waited for authorization); a promise when the caller should wait for
   * that look before reading the task.
   */
  ensureLive?(row: TaskRow): Promise<void> | undefined;
  /**
   * Resolves once the agent has ended its answer to the task's latest message while the task goes on
   * (a remote whose stream closed with the task still working): a blocking send is answered then, as
   * the agent itself answers it. Undefined when nothing but the end of the turn ends the answer.
   */
  answerEnded?(taskId: string): Promise<void> | undefined;
  /**
   * A task this runner kind owned in a process that died: found when this instance started (`restart`),
   * or by a running instance whose look for orphans found the owner's heartbeat stale (`takeover`).
   */
  recoverOrphan(row: TaskRow, why?: OrphanFound): Promise<void>;
  /** What `recoverOrphan` does with such a task, for the log ("recorded as an unknown outcome"). */
  readonly orphanAction: string;
  /**
   * A first message's claim never bound to a task: resolved (to the task's id) when the instance that
   * made it is dead, 'pending' while it lives (it is still creating the task). `request`: the same
   * request sent again, when that is what finds the claim.
   */
  resolveClaim?(claim: UnboundClaim, request?: SendMessageRequest): Promise<string | 'pending'>;
  /** The agent's card, without gateway-level fields (the server adds interfaces, security, signature). */
  baseCard(): AgentCard;
  close(): Promise<void>;
}
