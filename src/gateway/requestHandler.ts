/**
 * One agent route's A2A request handler (the SDK's `A2ARequestHandler`, so the SDK's transports serve
 * it, 1.0 and 0.3). It owns what is the same for every kind of agent: the principal's view of tasks
 * (another principal's task answers exactly like an unknown one), blocking and streaming sends over the
 * event log, replay from a cursor, and a bounded cancel. The `TaskRunner` behind it runs the tasks.
 */
import { Message, Role, Task, TaskState, taskStateToJSON } from '@a2a-js/sdk';
import type {
  AgentCard,
  CancelTaskRequest,
  DeleteTaskPushNotificationConfigRequest,
  GetExtendedAgentCardRequest,
  GetTaskPushNotificationConfigRequest,
  GetTaskRequest,
  ListTaskPushNotificationConfigsRequest,
  ListTaskPushNotificationConfigsResponse,
  ListTasksRequest,
  ListTasksResponse,
  SendMessageRequest,
  StreamResponse,
  SubscribeToTaskRequest,
  TaskPushNotificationConfig,
} from '@a2a-js/sdk';
import type { A2ARequestHandler, ServerCallContext } from '@a2a-js/sdk/server';
import {
  ExtendedAgentCardNotConfiguredError,
  PushNotificationNotSupportedError,
  RequestMalformedError,
  TaskNotFoundError,
  UnsupportedOperationError,
} from '@a2a-js/sdk/errors';
import { META, REPLAY_EXTENSION_URI } from '../core/batonProfile';
import { followTask, rowToResponse, withSeqs } from './eventLog';
import type { CommittedStart } from './eventLog';
import type { GatewayContext } from './gatewayContext';
import { requestDigest, requestKey } from './localTaskRunner';
import { instanceAlive } from './instanceLiveness';
import { configOf, defaultIdForUrl, newPushConfigId, validatePushConfig } from './pushNotifier';
import type { PushNotifier } from './pushNotifier';
import { cursorOf, principalOf, signalOf } from './requestContext';
import type { EventRow, TaskRow } from './store/gatewayStore';
import type { DirectReply, StartedTask, TaskRunner } from './taskRunner';
import { endsTurn, isTerminal } from '../core/taskStates';

/** ListTasks `pageSize` (A2A 1.0 a2a.proto): at most this, 50 when left out. */
const LIST_MAX = 100;
const LIST_DEFAULT = 50;
/** A forwarded cancel waits the owner's grace period plus this (the NOTIFY trip, the owner's commit). */
const FORWARDED_CANCEL_MARGIN_MS = 2_000;

function notFound(id: string): Error {
  // One message for "unknown" and "someone else's": the answer must not tell them apart.
  return new TaskNotFoundError(`task ${id} not found`);
}

type RowStream = AsyncGenerator<readonly EventRow[], void, undefined>;

/** The events as this client gets them: with `baton/seq` in each event when it activated the replay profile. */
function forClient(rows: RowStream, context: ServerCallContext): RowStream {
  return context.activatedExtensions?.includes(REPLAY_EXTENSION_URI) ? withSeqs(rows) : rows;
}

/** The states a ListTasks `status` filter may name (UNSPECIFIED, or left out, filters nothing). */
const LISTABLE_STATES: readonly TaskState[] = [
  TaskState.TASK_STATE_SUBMITTED,
  TaskState.TASK_STATE_WORKING,
  TaskState.TASK_STATE_COMPLETED,
  TaskState.TASK_STATE_FAILED,
  TaskState.TASK_STATE_CANCELED,
  TaskState.TASK_STATE_INPUT_REQUIRED,
  TaskState.TASK_STATE_REJECTED,
  TaskState.TASK_STATE_AUTH_REQUIRED,
];

/** A `historyLength` as GetTask and ListTasks take it: left out, or a whole number from 0. */
function checkHistoryLength(historyLength: number | undefined): void {
  if (historyLength !== undefined && !(Number.isInteger(historyLength) && historyLength >= 0))
    throw new RequestMalformedError(
      `historyLength must be a whole number, 0 or more (got ${String(historyLength)}); leave it out for the whole history`,
    );
}

const RFC_3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:[Zz]|([+-])(\d{2}):(\d{2}))$/;

/**
 * An RFC 3339 timestamp (the JSON form of a `google.protobuf.Timestamp`, e.g. "2023-10-27T10:00:00Z"
 * or "2023-10-27T12:00:00.5+02:00") as epoch ms, its fraction cut to the millisecond; undefined for
 * anything else, a date that does not exist (February 30) included.
 */
export function rfc3339Millis(text: string): number | undefined {
  const m = RFC_3339.exec(text);
  if (!m) return undefined;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number);
  const [offHour, offMinute] = [Number(m[9] ?? 0), Number(m[10] ?? 0)];
  if (hour > 23 || minute > 59 || second > 59 || offHour > 23 || offMinute > 59) return undefined;
  const t = new Date(0);
  t.setUTCFullYear(year, month - 1, day);
  if (t.getUTCFullYear() !== year || t.getUTCMonth() !== month - 1 || t.getUTCDate() !== day) return undefined;
  t.setUTCHours(hour, minute, second, Number((m[7] ?? '').slice(0, 3).padEnd(3, '0')));
  return t.getTime() - (m[8] === '-' ? -1 : 1) * (offHour * 60 + offMinute) * 60_000;
}

/**
 * What every message sent to a route must carry (A2A 1.0 a2a.proto: `message_id`, `role` and `parts`
 * are required), checked here for both kinds of route before anything is looked up or run.
 */
function checkSentMessage(msg: Message | undefined): asserts msg is Message {
  if (!msg) throw new RequestMalformedError('the request has no message; send params.message');
  if (!msg.parts.length) throw new RequestMalformedError('the message has no parts; send at least one part');
  if (!msg.messageId) throw new RequestMalformedError('message.messageId is required (it is the idempotency key)');
  if (msg.role !== Role.ROLE_USER && msg.role !== Role.ROLE_AGENT)
    throw new RequestMalformedError(
      'message.role is required: send "ROLE_USER" for a message from the client ("ROLE_AGENT" marks one from an agent)',
    );
}

/** A send whose message and asked history were checked (`checkSend`). */
type CheckedSend = SendMessageRequest & { readonly message: Message };

/** What SendMessage and SendStreamingMessage check first, once, before anything is looked up or run. */
function checkSend(params: SendMessageRequest): asserts params is CheckedSend {
  checkSentMessage(params.message);
  checkHistoryLength(params.configuration?.historyLength);
}

/**
 * The task a follow-up message continues, as that message found it (wire JSON): its stored snapshot
 * with the message added to its history, as the SDK's server has it when the agent resumes (a message
 * the history already holds, a follow-up sent again, is not added twice), cut to the `historyLength`
 * the send asked for.
 */
function continuedTask(row: TaskRow, msg: Message, historyLength: number | undefined): Record<string, unknown> {
  const task = JSON.parse(row.snapshot) as Record<string, unknown>;
  let history = Array.isArray(task.history) ? (task.history as unknown[]) : [];
  const known = history.some((m) => (m as { messageId?: unknown } | null)?.messageId === msg.messageId);
  if (!known) history = [...history, Message.toJSON({ ...msg, taskId: row.id, contextId: row.contextId })];
  if (historyLength !== undefined) history = historyLength <= 0 ? [] : history.slice(-historyLength);
  task.history = history;
  return task;
}

function withHistoryLength(task: Task, historyLength: number | undefined): Task {
  if (historyLength === undefined) return task;
  if (historyLength <= 0) return { ...task, history: [] };
  return { ...task, history: task.history.slice(-historyLength) };
}

export class GatewayRequestHandler implements A2ARequestHandler {
  /**
   * Set while the agent takes no new tasks (it was removed from the config of a running gateway): why,
   * in words for the caller. Its tasks go on: they can still be read, followed, answered and canceled.
   */
  retired: string | undefined;

  constructor(
    private readonly ctx: GatewayContext,
    readonly agentId: string,
    private readonly card: () => AgentCard,
    readonly runner: TaskRunner,
    /** Push notifications; without it every push method answers PushNotificationNotSupported. */
    private readonly push?: PushNotifier,
  ) {}

  getAgentCard(): Promise<AgentCard> {
    return Promise.resolve(this.card());
  }

  /**
   * No route has an extended card. A2A §3.3.4: a card that does not declare one answers
   * UnsupportedOperation; ExtendedAgentCardNotConfigured is for a card that declares one it lacks.
   */
  getAuthenticatedExtendedAgentCard(_p: GetExtendedAgentCardRequest, _c: ServerCallContext): Promise<AgentCard> {
    if (!this.card().capabilities?.extendedAgentCard)
      return Promise.reject(
        new UnsupportedOperationError(
          `the agent ${this.agentId} has no extended card (its card says capabilities.extendedAgentCard: false); read its public card at /a2a/${this.agentId}/.well-known/agent-card.json`,
        ),
      );
    return Promise.reject(new ExtendedAgentCardNotConfiguredError('this agent has no extended card'));
  }

  /** The caller's task, or the same "not found" whether it is unknown or another principal's. */
  async ownTask(id: string, context: ServerCallContext): Promise<TaskRow> {
    if (!id || !id.trim()) throw new RequestMalformedError('a task id is required');
    const row = await this.ctx.store.getTask(this.agentId, id);
    if (!row || row.principal !== principalOf(context)) throw notFound(id);
    return row;
  }

  private async startOrContinue(params: CheckedSend, context: ServerCallContext): Promise<StartedTask | DirectReply> {
    const msg = params.message;
    const principal = principalOf(context);
    // A push config sent with the message is checked before anything runs, so a refused URL refuses
    // the whole request instead of leaving a task running that nobody will hear about.
    const sentPush = params.configuration?.taskPushNotificationConfig;
    const push = sentPush ? this.requirePush() : undefined;
    const pushConfig =
      push && sentPush ? await validatePushConfig(sentPush, push.opts, () => defaultIdForUrl(sentPush.url)) : undefined;
    let started: StartedTask;
    const call = { extensions: [...(context.requestedExtensions ?? [])] };
    if (msg.taskId) {
      const row = await this.ownTask(msg.taskId, context);
      started = await this.runner.continueTask(row, params, principal, call);
    } else {
      // A first message sent again (a retry of one it took before it was removed) still finds its task.
      const key = (): string => requestKey(params, requestDigest(params));
      if (this.retired !== undefined && !(await this.ctx.store.findRequest(principal, this.agentId, key())))
        throw new UnsupportedOperationError(this.retired);
      // A task's own token starts children of that task only, through the guards (childBroker.ts).
      const children = this.ctx.children?.isTaskPrincipal(principal) ? this.ctx.children : undefined;
      const sent = children ? await children.admit(principal, this.agentId, params) : params;
      let out: Awaited<ReturnType<TaskRunner['start']>>;
      try {
        out = await this.runner.start(sent, principal, call);
      } catch (e) {
        children?.failed(principal);
        throw e;
      }
      if ('reply' in out) {
        children?.failed(principal);
        return out;
      }
      started = out;
      await children?.adopt(principal, this.agentId, started.taskId, sent);
    }
    if (push && pushConfig) {
      await push.save(this.agentId, started.taskId, pushConfig);
      push.catchUp(this.agentId, started.taskId, pushConfig.id);
    }
    return started;
  }

  async sendMessage(params: SendMessageRequest, context: ServerCallContext): Promise<Message | Task> {
    checkSend(params);
    const started = await this.startOrContinue(params, context);
    if ('reply' in started) return started.reply;
    const taskId = started.taskId;
    const row0 = await this.ctx.store.getTask(this.agentId, taskId);
    if (!row0) throw notFound(taskId);
    if (!params.configuration?.returnImmediately) {
      // Blocking send: wait for the turn to end (the task's deadline bounds the run), or for the agent
      // to end its answer with the task still running (a proxied fire-and-forget agent answers so).
      const answered = this.runner.answerEnded?.(taskId);
      const done = new AbortController();
      const outer = signalOf(context);
      try {
        await Promise.race([
          this.turnEnd(taskId, row0.lastSeq, outer ? AbortSignal.any([outer, done.signal]) : done.signal),
          ...(answered ? [answered] : []),
        ]);
      } finally {
        done.abort(); // stops following the task once the answer is decided
      }
    }
    return this.snapshot(taskId, params.configuration?.historyLength, context);
  }

  /**
   * Starts (or continues) and returns the task's stored events from its first one, in batches; errors
   * before the first event are thrown here, so the transport answers them as plain errors, not as a
   * broken stream.
   */
  async openSendStream(params: SendMessageRequest, context: ServerCallContext): Promise<RowStream> {
    checkSend(params);
    const prior = params.message.taskId ? await this.ownTask(params.message.taskId, context) : undefined;
    const started = await this.startOrContinue(params, context);
    if ('reply' in started) {
      // No task, so no seq: the one event the agent answered, then the stream ends.
      const only: EventRow = { seq: 0, body: started.body };
      return (async function* () {
        yield [only];
      })();
    }
    if (!prior)
      // A task created by this call starts its stream with what its writer committed, without a read.
      return forClient(this.follow(started.taskId, 0, signalOf(context), false, started.created), context);
    // A2A §3.1.2: a task's stream begins with the Task. A follow-up's turn begins with the task as the
    // message found it (its seq, so a replay client takes it as seen), then the turn's events.
    const first: EventRow = {
      seq: prior.lastSeq,
      body: JSON.stringify({ task: continuedTask(prior, params.message, params.configuration?.historyLength) }),
    };
    const rest = this.follow(started.taskId, prior.lastSeq, signalOf(context));
    return forClient(
      (async function* () {
        yield [first];
        yield* rest;
      })(),
      context,
    );
  }

  async *sendMessageStream(
    params: SendMessageRequest,
    context: ServerCallContext,
  ): AsyncGenerator<StreamResponse, void, undefined> {
    for await (const rows of await this.openSendStream(params, context))
      for (const row of rows) yield rowToResponse(row);
  }

  /**
   * Subscribe. With a cursor (the replay profile): every stored event after it, then live ones, and the
   * stream closes once a finished task has nothing left. Without: plain A2A — the current task first,
   * then live events until the task ends (A2A: an interrupted state does not end it); a finished task is an error.
   */
  async openSubscribeStream(id: string, context: ServerCallContext): Promise<RowStream> {
    let row = await this.ownTask(id, context);
    const cursor = cursorOf(context);
    if (!isTerminal(row.state)) {
      const looked = this.runner.ensureLive?.(row);
      if (looked) {
        await looked;
        row = (await this.ctx.store.getTask(this.agentId, id)) ?? row;
      }
    }
    const follow = (afterSeq: number): RowStream => forClient(this.follow(id, afterSeq, signalOf(context)), context);
    if (cursor !== undefined) {
      if (cursor > row.lastSeq)
        throw new RequestMalformedError(`cursor ${cursor} is past the last event of task ${id} (${row.lastSeq})`);
      return follow(cursor);
    }
    if (isTerminal(row.state))
      throw new UnsupportedOperationError(
        `task ${id} has ended; get it with GetTask (or subscribe with Last-Event-ID to replay its events)`,
      );
    const first: EventRow = { seq: row.lastSeq, body: JSON.stringify({ task: JSON.parse(row.snapshot) as unknown }) };
    // A2A §3.1.6: this stream ends at a terminal state; an input-required task goes on once answered.
    const rest = forClient(this.follow(id, row.lastSeq, signalOf(context), true), context);
    return (async function* () {
      yield [first];
      yield* rest;
    })();
  }

  async *resubscribe(
    params: SubscribeToTaskRequest,
    context: ServerCallContext,
  ): AsyncGenerator<StreamResponse, void, undefined> {
    for await (const rows of await this.openSubscribeStream(params.id, context))
      for (const row of rows) yield rowToResponse(row);
  }

  private async snapshot(id: string, historyLength: number | undefined, context: ServerCallContext): Promise<Task> {
    const row = await this.ownTask(id, context);
    const remote = await this.runner.fetchTask?.(row, historyLength);
    if (remote) return { ...remote, metadata: { ...(remote.metadata ?? {}), [META.seq]: row.lastSeq } };
    return withHistoryLength(Task.fromJSON(JSON.parse(row.snapshot)), historyLength);
  }

  async getTask(params: GetTaskRequest, context: ServerCallContext): Promise<Task> {
    checkHistoryLength(params.historyLength);
    return this.snapshot(params.id, params.historyLength, context);
  }

  /**
   * ListTasks, newest first. Parameters out of their range are refused, not bent (A2A 1.0 a2a.proto).
   * `statusTimestampAfter` (inclusive) and the order both use the time the store last recorded a
   * change of the task (`TaskRow.updatedAt`); `totalSize` counts every task the filters take, on all
   * pages.
   */
  async listTasks(params: ListTasksRequest, context: ServerCallContext): Promise<ListTasksResponse> {
    const limit = params.pageSize ?? LIST_DEFAULT;
    if (!Number.isInteger(limit) || limit < 1 || limit > LIST_MAX)
      throw new RequestMalformedError(
        `pageSize must be a whole number from 1 to ${LIST_MAX} (got ${String(params.pageSize)}); leave it out for ${LIST_DEFAULT}`,
      );
    checkHistoryLength(params.historyLength);
    if (params.status !== TaskState.TASK_STATE_UNSPECIFIED && !LISTABLE_STATES.includes(params.status))
      throw new RequestMalformedError(
        `status is not a task state; send one of ${LISTABLE_STATES.map((s) => taskStateToJSON(s)).join(', ')}, or leave it out for every state`,
      );
    let updatedFrom: number | undefined;
    if (params.statusTimestampAfter) {
      updatedFrom = rfc3339Millis(params.statusTimestampAfter);
      if (updatedFrom === undefined)
        throw new RequestMalformedError(
          `statusTimestampAfter must be an RFC 3339 timestamp such as "2025-10-27T10:00:00Z" (got ${JSON.stringify(params.statusTimestampAfter.slice(0, 64))})`,
        );
    }
    let before: { updatedAt: number; id: string } | undefined;
    if (params.pageToken) {
      const m = /^(\d+):(.+)$/.exec(params.pageToken);
      if (!m)
        throw new RequestMalformedError(
          'pageToken is not one this gateway issued; send the nextPageToken of the previous page, or leave it out for the first page',
        );
      before = { updatedAt: Number(m[1]), id: m[2] };
    }
    const filter = {
      agent: this.agentId,
      principal: principalOf(context),
      ...(params.contextId ? { contextId: params.contextId } : {}),
      ...(params.status ? { state: params.status } : {}),
      ...(updatedFrom !== undefined ? { updatedFrom } : {}),
    };
    const [rows, totalSize] = await Promise.all([
      this.ctx.store.listTasks({ ...filter, limit: limit + 1, ...(before ? { before } : {}) }),
      this.ctx.store.countTasks(filter),
    ]);
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return {
      tasks: page.map((r) => {
        const t = withHistoryLength(Task.fromJSON(JSON.parse(r.snapshot)), params.historyLength);
        return params.includeArtifacts ? t : { ...t, artifacts: [] };
      }),
      nextPageToken: rows.length > limit && last ? `${last.updatedAt}:${last.id}` : '',
      pageSize: limit,
      totalSize,
    };
  }

  /**
   * Cancel, for every kind of agent. A task another live instance runs (or relays) is cancelled there:
   * a second writer here would clash with its seq numbers and record a wrong outcome. This instance
   * asks the owner, waits (bounded) for the turn to end, and answers with the task as stored. An owner
   * that is gone (or dies meanwhile) leaves the task to this runner's own cancel, which records the
   * orphan's outcome.
   */
  async cancelTask(params: CancelTaskRequest, context: ServerCallContext, retried = false): Promise<Task> {
    let row = await this.ownTask(params.id, context);
    const owner = row.owner;
    // A SQLite state folder has one process: any other owner recorded there is dead.
    if (
      owner &&
      owner !== this.ctx.instanceId &&
      this.ctx.store.kind !== 'sqlite' &&
      !isTerminal(row.state) &&
      (await this.ownerAlive(owner))
    ) {
      await this.ctx.store.requestCancel(this.agentId, row.id, owner);
      const waitMs = this.ctx.limits.cancelGraceMs + FORWARDED_CANCEL_MARGIN_MS;
      const timeout = AbortSignal.timeout(waitMs);
      const caller = signalOf(context);
      const signal = caller ? AbortSignal.any([caller, timeout]) : timeout;
      await this.turnEnd(row.id, row.lastSeq, signal);
      row = (await this.ctx.store.getTask(this.agentId, row.id)) ?? row;
      if (endsTurn(row.state) || row.owner !== owner) return this.snapshot(params.id, undefined, context);
      if (await this.ownerAlive(owner)) {
        this.ctx.log(
          `cancel of ${this.agentId} task ${row.id}: instance ${owner} runs it and has not ended it within ${waitMs} ms; answering with the task as it is (the cancel is in progress there)`,
        );
        return this.snapshot(params.id, undefined, context);
      }
      this.ctx.log(
        `cancel of ${this.agentId} task ${row.id}: instance ${owner}, which ran it, stopped heartbeating; recording it here`,
      );
    }
    if (owner && owner !== this.ctx.instanceId && this.ctx.store.takeOver && !isTerminal(row.state)) {
      // The owner is dead. Take the task over before recording anything, so that a live instance's
      // orphan recovery does not record it too; if one took it first, the cancel goes to that one.
      const taken = await this.ctx.store.takeOver(this.agentId, row.id, owner, this.ctx.instanceId);
      if (!taken) {
        const fresh = await this.ctx.store.getTask(this.agentId, row.id);
        if (!fresh || isTerminal(fresh.state) || fresh.owner === owner || retried)
          return this.snapshot(params.id, undefined, context);
        return this.cancelTask(params, context, true);
      }
      row = taken;
    }
    await this.runner.cancel(row);
    return this.snapshot(params.id, undefined, context);
  }

  /** This agent's events of a task after `afterSeq`, until its turn ends (`onlyTerminal`: until it ends) or `signal` fires. */
  private follow(
    taskId: string,
    afterSeq: number,
    signal: AbortSignal | undefined,
    onlyTerminal = false,
    created?: CommittedStart,
  ): RowStream {
    return followTask({
      store: this.ctx.store,
      hub: this.ctx.hub,
      agent: this.agentId,
      taskId,
      afterSeq,
      untilTurnEnds: true,
      onlyTerminal,
      signal,
      ...(created ? { created } : {}),
    });
  }

  /** Resolves once the task's turn has ended (or `signal` fires). */
  private async turnEnd(taskId: string, afterSeq: number, signal: AbortSignal | undefined): Promise<void> {
    for await (const _rows of this.follow(taskId, afterSeq, signal)) void _rows;
  }

  private async ownerAlive(instance: string): Promise<boolean> {
    return instanceAlive(this.ctx, instance);
  }

  private requirePush(): PushNotifier {
    if (!this.push) throw new PushNotificationNotSupportedError('push notifications are not enabled on this gateway');
    // A route whose card does not offer push (a remote that declares none) refuses it, as its card says.
    if (!this.card().capabilities?.pushNotifications)
      throw new PushNotificationNotSupportedError(
        `the agent ${this.agentId} does not support push notifications (its card says so); follow the task with SubscribeToTask or GetTask`,
      );
    return this.push;
  }

  async createTaskPushNotificationConfig(
    p: TaskPushNotificationConfig,
    c: ServerCallContext,
  ): Promise<TaskPushNotificationConfig> {
    const push = this.requirePush();
    const row = await this.ownTask(p.taskId, c);
    const cfg = await validatePushConfig(p, push.opts, newPushConfigId);
    return push.save(this.agentId, row.id, cfg);
  }

  async getTaskPushNotificationConfig(
    p: GetTaskPushNotificationConfigRequest,
    c: ServerCallContext,
  ): Promise<TaskPushNotificationConfig> {
    this.requirePush();
    const row = await this.ownTask(p.taskId, c);
    const found = (await this.ctx.store.listPushConfigs(this.agentId, row.id)).find((r) => r.id === p.id);
    if (!found)
      throw new TaskNotFoundError(
        `push-notification config ${JSON.stringify(p.id)} not found for task ${row.id}; list them with ListTaskPushNotificationConfigs`,
      );
    return configOf(found);
  }

  async listTaskPushNotificationConfigs(
    p: ListTaskPushNotificationConfigsRequest,
    c: ServerCallContext,
  ): Promise<ListTaskPushNotificationConfigsResponse> {
    this.requirePush();
    const row = await this.ownTask(p.taskId, c);
    // At most a handful per task (PushNotifier caps them), so one page.
    return { configs: (await this.ctx.store.listPushConfigs(this.agentId, row.id)).map(configOf), nextPageToken: '' };
  }

  async deleteTaskPushNotificationConfig(
    p: DeleteTaskPushNotificationConfigRequest,
    c: ServerCallContext,
  ): Promise<void> {
    this.requirePush();
    const row = await this.ownTask(p.taskId, c);
    // Deleting a config that is already gone succeeds, as the SDK's own handler does: a retried delete is not an error.
    await this.ctx.store.deletePushConfig(this.agentId, row.id, p.id);
  }
}
