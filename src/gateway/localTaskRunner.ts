/**
 * Runs a `LocalAgent` (built-in agents, headless coding CLIs) as A2A tasks: one task per first
 * message, events numbered and committed before anyone sees them, a deadline, a cancel that answers
 * within `cancelGraceMs` whatever the agent does, and a signed envelope on every terminal result.
 * An agent that asks (`request.ask`) puts its task in input-required; the reply is a follow-up
 * message on the same task, which this process hands to the waiting run.
 */
import { createHash, randomUUID } from 'node:crypto';
import { realpathSync } from 'node:fs';
import { isAbsolute, relative, sep } from 'node:path';
import { Message, Role, StreamResponse, TaskState } from '@a2a-js/sdk';
import type { AgentCard, Part, SendMessageRequest, Task } from '@a2a-js/sdk';
import { RequestMalformedError, TaskNotCancelableError, UnsupportedOperationError } from '@a2a-js/sdk/errors';
import { META, PATCH_ARTIFACT } from '../core/batonProfile';
import { baseAgentCard } from './cards';
import { canonicalize } from '../core/jcs';
import { intersectCapabilities, readChain, readRequestedCapabilities } from '../core/delegation/guards';
import type { Capabilities, LocalAgent, LocalRunEvent, LocalRunResult } from './agents/localAgent';
import { artifactEvent, chunkText, contextPathsOf, promptOf, statusEvent, taskTextOf, textPart } from './a2aBuild';
import { TaskWriter } from './eventLog';
import type { GatewayContext } from './gatewayContext';
import { recordedCapabilities, recordedRequestDigest, sentRequestDigest, signStatusEvent } from './resultEnvelope';
import type { TaskRow } from './store/gatewayStore';
import type { StartedTask, TaskRunner } from './taskRunner';
import { claimantGone, instanceAlive } from './instanceLiveness';
import { isTerminal } from '../core/taskStates';
import { KeyedSerial } from '../core/keyedSerial';
import { sleep } from '../core/sleep';

/** Artifact events stay well under the SDK client's 4 MiB SSE event limit. */
const ARTIFACT_CHUNK = 1024 * 1024;
/** How long a request waits for a concurrent one with the same messageId to create its task. */
export const CLAIM_WAIT_MS = 10_000;

export function sha256Hex(text: string | Uint8Array): string {
  return `sha256:${createHash('sha256').update(text).digest('hex')}`;
}

/**
 * The idempotency digest of a request: RFC 8785 form of its message's wire JSON. Only the message
 * counts: how it was sent (streaming or blocking, accepted output modes) is not part of "the same
 * request", so a retry over another transport still finds its task.
 */
export function requestDigest(params: SendMessageRequest): string {
  return sha256Hex(canonicalize(params.message ? Message.toJSON(params.message) : null));
}

/**
 * The idempotency key of a request: its messageId, scoped to the task it continues (a follow-up and a
 * new send are different requests) and to its body. So the same message sent again finds what the first
 * made, and a different message under a reused messageId is a request of its own: never answered with
 * the first one's task, never refused (A2A lets agents use messageId to detect duplicates; clients,
 * conformance suites among them, reuse it for different messages).
 */
export function requestKey(params: SendMessageRequest, digest: string): string {
  const msg = params.message;
  return `${msg?.taskId ? `task:${msg.taskId}/` : ''}${msg?.messageId ?? ''}#${digest}`;
}

/**
 * A concurrent request with the same messageId (maybe on another instance) claimed the task id before
 * it created the task: wait, bounded, until the task exists.
 */
export async function waitForTask(ctx: GatewayContext, agent: string, taskId: string): Promise<string> {
  const until = Date.now() + CLAIM_WAIT_MS;
  while (!(await ctx.store.getTask(agent, taskId))) {
    if (Date.now() > until)
      throw new UnsupportedOperationError(
        `the task for this messageId (${taskId}) was not created; send the request again`,
      );
    await sleep(20);
  }
  return taskId;
}

/** Waits (bounded) for a concurrent request with the same messageId to record the task it created. */
export async function waitForBinding(
  ctx: GatewayContext,
  principal: string,
  agent: string,
  key: string,
): Promise<string> {
  const until = Date.now() + CLAIM_WAIT_MS;
  while (Date.now() < until) {
    await sleep(20);
    const found = await ctx.store.findRequest(principal, agent, key);
    if (found?.taskId) return found.taskId;
    if (!found) break;
  }
  throw new UnsupportedOperationError(
    `the task for messageId ${key.replace(/#.*$/, '')} could not be created; send the request again`,
  );
}

/**
 * Claims a first message's idempotency key for this principal and agent, the one way every runner
 * does it. `undefined`: the claim is this request's, and the caller goes on (binding its task to the
 * key, or releasing the key). A task id: the same message came before, and this is its task (waited
 * for while a concurrent request is still creating it). A different message under a messageId used
 * before is refused.
 */
export async function claimFirstMessage(
  ctx: GatewayContext,
  claim: { principal: string; agent: string; messageId: string; key: string; digest: string },
  taskId: string | null,
): Promise<string | undefined> {
  const { principal, agent, key } = claim;
  await ctx.claims.settle(principal, agent, key);
  for (let round = 0; ; round++) {
    const found = await ctx.store.claimRequest(principal, agent, key, claim.digest, taskId, ctx.instanceId);
    if (found.kind === 'conflict')
      throw new RequestMalformedError(
        `messageId ${claim.messageId} was already used for a different request; send a new messageId`,
      );
    if (found.kind !== 'existing') return undefined;
    // An instance stopped (kill -9, a crash) between claiming the request and storing its task: the task
    // will never exist, and without this every resend would wait for it and be refused for good. The
    // claim is forgotten (by one instance, if several find it) and the request claimed again.
    if (round === 0 && found.taskId && (await staleLocalClaim(ctx, principal, agent, key, found.taskId))) continue;
    return waitForTask(ctx, agent, found.taskId ?? (await waitForBinding(ctx, principal, agent, key)));
  }
}

/**
 * Whether the claim of `key`, naming `taskId`, was left by an instance that stopped before storing that
 * task; if so it is forgotten (here, or by another instance that found it first): the request can be
 * claimed again.
 */
async function staleLocalClaim(
  ctx: GatewayContext,
  principal: string,
  agent: string,
  key: string,
  taskId: string,
): Promise<boolean> {
  if (await ctx.store.getTask(agent, taskId)) return false;
  const claim = await ctx.store.findRequest(principal, agent, key);
  if (!claim || claim.taskId !== taskId || claim.instance === ctx.instanceId) return false;
  // The task may have been stored just before its instance stopped: looked for again after the check.
  if (!(await claimantGone(ctx, claim)) || (await ctx.store.getTask(agent, taskId))) return false;
  if (!(await ctx.store.releaseStaleClaim(principal, agent, key, taskId, claim.instance))) return true;
  ctx.log(
    `the request with messageId ${key.replace(/#[^#]*$/, '')} on ${agent} was claimed by instance ${claim.instance ?? '(unnamed)'}, which stopped before it stored the task; running it again`,
  );
  return true;
}

/** The repository a request names must be inside one of the gateway's roots (symlinks resolved). */
export function resolveRepository(raw: unknown, roots: readonly string[]): string | undefined {
  if (raw === undefined || raw === null || raw === '') return undefined;
  if (typeof raw !== 'string' || !isAbsolute(raw)) {
    throw new RequestMalformedError(`metadata "${META.repository}" must be an absolute path on the gateway's machine`);
  }
  let real: string;
  try {
    real = realpathSync(raw);
  } catch {
    throw new RequestMalformedError(`repository ${raw} does not exist on the gateway's machine`);
  }
  for (const root of roots) {
    // The root is resolved like the repository is: on macOS /tmp and /var are symlinks.
    const rel = relative(realRoot(root), real);
    if (rel === '' || (!rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel))) return real;
  }
  throw new RequestMalformedError(
    roots.length
      ? `repository ${raw} is outside the folders this gateway serves (${roots.join(', ')}); start the gateway with --root <folder> to allow it`
      : `repository ${raw} cannot be used: this gateway was started without --root, so it serves no repositories`,
  );
}

function realRoot(root: string): string {
  try {
    return realpathSync(root);
  } catch {
    return root; // a root that does not exist (yet) contains nothing that does
  }
}

/** The files sent as context: the `baton/files` metadata, then the paths of selection and file parts it does not list. */
function readFiles(v: unknown, parts: readonly Part[]): string[] {
  if (v !== undefined && v !== null && (!Array.isArray(v) || v.some((f) => typeof f !== 'string'))) {
    throw new RequestMalformedError(`metadata "${META.files}" must be a list of repository-relative paths`);
  }
  const listed = Array.isArray(v) ? (v as string[]) : [];
  for (const f of listed) checkRelative(f, `in "${META.files}"`);
  const fromParts = contextPathsOf(parts).filter((f) => !listed.includes(f));
  for (const f of fromParts) checkRelative(f, `of a "${META.context}" part`);
  return [...new Set([...listed, ...fromParts])];
}

function checkRelative(f: string, where: string): void {
  if (isAbsolute(f) || /^[A-Za-z]:/.test(f) || f.split(/[\\/]/).includes('..')) {
    throw new RequestMalformedError(
      `file ${JSON.stringify(f)} ${where} must be relative to the repository, without ".."`,
    );
  }
}

function readDeadline(v: unknown, limits: GatewayContext['limits']): number {
  const now = Date.now();
  if (v === undefined || v === null || v === '') return now + limits.defaultDeadlineMs;
  const t = typeof v === 'string' ? Date.parse(v) : NaN;
  if (!Number.isFinite(t)) throw new RequestMalformedError(`metadata "${META.deadline}" must be an ISO 8601 time`);
  if (t <= now) throw new RequestMalformedError(`metadata "${META.deadline}" (${String(v)}) has already passed`);
  return Math.min(t, now + limits.maxDeadlineMs);
}

interface Running {
  readonly writer: TaskWriter;
  readonly abort: AbortController;
  readonly done: Promise<void>;
  settled: boolean;
  canceled: boolean;
  /** The gateway is shutting down: the outcome is unknown to the caller, not a cancel they asked for. */
  stopping: boolean;
  expired: boolean;
  patchEmitted: boolean;
  /** The agent said it runs confined (bubblewrap). */
  confined: boolean;
  readonly requestDigest: string;
  /** What the caller can recompute for the envelope (the whole SendMessageRequest as sent). */
  readonly sentDigest: string;
  readonly capabilities: Capabilities;
  /** The question the run waits on (input-required), with how to hand it the answer. */
  waiting: { readonly question: string; answer(text: string): void } | undefined;
  /** The gateway stopped while the run waited for a reply (its outcome is then known: nothing was done). */
  stoppedWaiting: boolean;
  /**
   * Nothing of this run can be stored any more (another instance took the task over while this one
   * could not reach the database): the run is stopped, and no outcome is recorded here.
   */
  lost: boolean;
  /** The run got its turn (`RunQueue`) and the agent was started; false while it waits in line. */
  started: boolean;
  /**
   * Gives the turn back: when the agent returns, or when the outcome is recorded without it (an agent
   * abandoned after a cancel or the deadline no longer holds up its principal's next task).
   */
  release?: () => void;
}

/** What a task waiting for its turn says (`place` 1: it starts next). */
export function waitingText(limit: number, place: number): string {
  const ahead =
    place === 1
      ? 'it starts next'
      : place === 2
        ? 'one of yours waits before it'
        : `${place - 1} of yours wait before it`;
  const most = limit === 1 ? 'one of your tasks runs' : `${limit} of your tasks run`;
  return `waiting for its turn: at most ${most} on this gateway at once; ${ahead}`;
}

/** A task's status while it waits for its turn: in words, and its place as data on the message (`META.turn`). */
function waitingEvent(taskId: string, contextId: string, limit: number, place: number): StreamResponse {
  const turn = { [META.turn]: { place, limit } };
  return statusEvent(taskId, contextId, TaskState.TASK_STATE_SUBMITTED, waitingText(limit, place), undefined, turn);
}

/** Why a task that waited its turn ended with the gateway, and what to do. */
const NEVER_STARTED =
  'the gateway stopped while this task waited for its turn, so it never started and nothing was changed: send it again';

/** Why a task that waited for a reply cannot go on after its process ended, and what to do. */
const LOST_QUESTION =
  'the gateway stopped while this task waited for your reply, so the question can no longer be answered (the agent kept its work in memory); nothing was changed in your repository: start a new task';

export class LocalTaskRunner implements TaskRunner {
  readonly kind = 'local' as const;
  private readonly running = new Map<string, Running>();
  /** One recorder at a time per orphan: a sweep, a cancel and a reply may all find the same one at once. */
  private readonly orphans = new KeyedSerial();

  constructor(
    private readonly ctx: GatewayContext,
    private readonly agent: LocalAgent,
  ) {}

  baseCard(): AgentCard {
    return baseAgentCard(this.agent.name, this.agent.description, this.agent.skills);
  }

  async start(params: SendMessageRequest, principal: string): Promise<StartedTask> {
    const msg = params.message;
    if (!msg) throw new RequestMalformedError('the request has no message');
    if (!msg.messageId) throw new RequestMalformedError('message.messageId is required (it is the idempotency key)');
    const md: Record<string, unknown> = { ...(params.metadata ?? {}), ...(msg.metadata ?? {}) };
    const repoPath = resolveRepository(md[META.repository], this.ctx.roots);
    const files = readFiles(md[META.files], msg.parts);
    const requested = readRequestedCapabilities(md[META.capabilities]);
    if (!requested.ok) throw new RequestMalformedError(requested.reason);
    const deadline = readDeadline(md[META.deadline], this.ctx.limits);
    const capabilities = intersectCapabilities(
      requested.capabilities,
      this.agent.maxCapabilities,
      this.ctx.limits.capabilities,
    );
    let digest: string;
    try {
      digest = requestDigest(params);
    } catch (e) {
      throw new RequestMalformedError(`the request cannot be canonicalised: ${(e as Error).message}`);
    }

    const taskId = randomUUID();
    const key = requestKey(params, digest);
    const earlier = await claimFirstMessage(
      this.ctx,
      { principal, agent: this.agent.id, messageId: msg.messageId, key, digest },
      taskId,
    );
    if (earlier) return { taskId: earlier };

    const contextId = msg.contextId || randomUUID();
    const userMessage: Message = { ...msg, taskId, contextId, role: Role.ROLE_USER };
    const sentDigest = sentRequestDigest(params);
    const task: Task = {
      id: taskId,
      contextId,
      status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: new Date().toISOString() },
      artifacts: [],
      history: [userMessage],
      metadata: {
        [META.executor]: { id: this.agent.id, kind: this.agent.kind },
        [META.capabilities]: capabilities,
        [META.deadline]: new Date(deadline).toISOString(),
        [META.requestDigest]: sentDigest,
      },
    };
    const writer = new TaskWriter(this.ctx.store, this.ctx.hub, this.agent.id, taskId, task, 1);
    const first: StreamResponse = { payload: { $case: 'task', value: structuredClone(task) } };
    const firstRow = { seq: 1, body: JSON.stringify(StreamResponse.toJSON(first)) };
    try {
      await this.ctx.store.createTask(
        {
          agent: this.agent.id,
          id: taskId,
          contextId,
          principal,
          kind: 'local',
          state: TaskState.TASK_STATE_SUBMITTED,
          snapshot: writer.snapshotJson(),
          owner: this.ctx.instanceId,
        },
        firstRow,
      );
    } catch (e) {
      await this.ctx.claims.release(principal, this.agent.id, key);
      throw e;
    }
    const created = writer.createdWith([firstRow]);
    const prompt = promptOf(msg.parts);
    // The chain above this task: trusted only as the gateway wrote it, for a child an agent started.
    const chain = this.ctx.children?.isTaskPrincipal(principal) ? readChain(md) : [];
    this.launch(writer, {
      principal,
      above: chain.slice(0, -1),
      repoPath,
      prompt,
      task: taskTextOf(msg.parts),
      files,
      capabilities,
      deadline,
      digest,
      sentDigest,
    });
    return { taskId, created };
  }

  private launch(
    writer: TaskWriter,
    r: {
      principal: string;
      repoPath: string | undefined;
      prompt: string;
      task: string;
      files: string[];
      capabilities: Capabilities;
      deadline: number;
      digest: string;
      sentDigest: string;
      above: readonly string[];
    },
  ): void {
    const abort = new AbortController();
    let resolveDone!: () => void;
    const done = new Promise<void>((res) => (resolveDone = res));
    const rt: Running = {
      writer,
      abort,
      done,
      settled: false,
      canceled: false,
      stopping: false,
      expired: false,
      patchEmitted: false,
      confined: false,
      requestDigest: r.digest,
      sentDigest: r.sentDigest,
      capabilities: r.capabilities,
      waiting: undefined,
      stoppedWaiting: false,
      lost: false,
      started: false,
    };
    this.running.set(writer.taskId, rt);
    // Another instance took the task over (this one could not reach the database for a while) and
    // recorded its outcome: the run here goes on for nothing, with the agent's CLI, its workspace and
    // its deadline. It is stopped, once, and says why.
    writer.onFailure((e) => {
      if (rt.settled || rt.lost) return;
      rt.lost = true;
      this.ctx.log(
        `task ${writer.taskId} (${this.agent.id}): stopped its run: its events can no longer be stored by this instance (${e.message})`,
      );
      abort.abort(new Error('the task was taken over by another gateway instance'));
    });
    const { taskId } = writer;
    const contextId = writer.contextId;
    const push = (e: StreamResponse): void => {
      if (!rt.settled) this.addEvent(writer, e);
    };
    const emit = (ev: LocalRunEvent): void => {
      if (rt.settled) return;
      switch (ev.kind) {
        case 'started':
          rt.confined = ev.confined;
          push(
            statusEvent(
              taskId,
              contextId,
              TaskState.TASK_STATE_WORKING,
              ev.detail ?? `started${ev.confined ? ' (confined)' : ''}`,
              {
                // detail: how it runs, in words (why it is unconfined, what bubblewrap allows), for the client to show.
                [META.executor]: {
                  id: this.agent.id,
                  kind: this.agent.kind,
                  confined: ev.confined,
                  ...(ev.detail ? { detail: ev.detail } : {}),
                },
              },
            ),
          );
          break;
        case 'step':
          push(statusEvent(taskId, contextId, TaskState.TASK_STATE_WORKING, ev.text));
          break;
        case 'log':
          push(statusEvent(taskId, contextId, TaskState.TASK_STATE_WORKING, ev.text, { 'baton/log': ev.stream }));
          break;
        case 'artifact':
          rt.patchEmitted = true;
          this.pushArtifact(rt, ev.text);
          break;
      }
    };
    const children = this.ctx.children;
    const mcp = this.ctx.mcp;
    // A coding CLI gets `baton mcp` bound to this task: a token that starts children of it only.
    const bound =
      this.agent.kind === 'headless' && children && mcp
        ? children.mint({
            agentId: this.agent.id,
            taskId,
            capabilities: r.capabilities,
            deadline: r.deadline,
            above: r.above,
            ...(r.repoPath ? { repoPath: r.repoPath } : {}),
            post: (text, metadata) =>
              push(statusEvent(taskId, contextId, TaskState.TASK_STATE_WORKING, text, metadata)),
          })
        : undefined;
    const ask = (question: string): Promise<string> => {
      if (rt.settled || abort.signal.aborted)
        return Promise.reject(new Error('the run was stopped before it could ask'));
      if (rt.waiting) return Promise.reject(new Error('the agent asked again before its first question was answered'));
      return new Promise<string>((resolve, reject) => {
        // Cancel, the deadline and a shutdown abort the signal: the question goes unanswered.
        const onAbort = (): void => {
          rt.waiting = undefined;
          reject(
            abort.signal.reason instanceof Error ? abort.signal.reason : new Error('stopped while waiting for a reply'),
          );
        };
        abort.signal.addEventListener('abort', onAbort, { once: true });
        rt.waiting = {
          question,
          answer: (text) => {
            abort.signal.removeEventListener('abort', onAbort);
            rt.waiting = undefined;
            resolve(text);
          },
        };
        push(statusEvent(taskId, contextId, TaskState.TASK_STATE_INPUT_REQUIRED, question));
      });
    };
    const timer = setTimeout(
      () => {
        rt.expired = true;
        abort.abort(new Error('deadline passed'));
        // An agent that ignores its signal still gets an outcome, a grace period later.
        setTimeout(
          () =>
            void this.finish(rt, {
              outcome: 'expired',
              reason: 'the deadline passed and the agent did not stop',
              patch: '',
            }),
          this.ctx.limits.cancelGraceMs,
        ).unref();
      },
      Math.max(0, r.deadline - Date.now()),
    );
    timer.unref();
    const runs = this.ctx.runs;
    const now = runs.tryTake(r.principal);
    if (now) push(statusEvent(taskId, contextId, TaskState.TASK_STATE_WORKING, `accepted by ${this.agent.name}`));
    void (async () => {
      let result: LocalRunResult;
      rt.release = now;
      if (!rt.release) {
        try {
          rt.release = await runs.wait(
            { principal: r.principal, agent: this.agent.id, taskId },
            abort.signal,
            (place) => push(waitingEvent(taskId, contextId, runs.limit, place)),
          );
        } catch (e) {
          clearTimeout(timer);
          await this.finish(rt, { outcome: 'failed', reason: (e as Error).message, patch: '' });
          return;
        }
        push(statusEvent(taskId, contextId, TaskState.TASK_STATE_WORKING, `accepted by ${this.agent.name}`));
      }
      rt.started = true;
      try {
        result = await this.agent.run(
          {
            taskId,
            ...(r.repoPath ? { repoPath: r.repoPath } : {}),
            prompt: r.prompt,
            task: r.task,
            files: r.files,
            capabilities: r.capabilities,
            deadline: r.deadline,
            signal: abort.signal,
            ask,
            ...(bound && mcp
              ? {
                  delegation: {
                    command: mcp.command,
                    gatewayUrl: mcp.gatewayUrl,
                    token: bound.token,
                    parentTaskId: bound.parentTaskId,
                  },
                }
              : {}),
          },
          emit,
        );
      } catch (e) {
        result = {
          outcome: 'failed',
          reason: `the agent stopped with an error: ${(e as Error).message ?? String(e)}`,
          patch: '',
        };
      }
      clearTimeout(timer);
      rt.release?.();
      await this.finish(rt, result);
    })().finally(resolveDone);
  }

  private pushArtifact(rt: Running, text: string): void {
    const { taskId } = rt.writer;
    const contextId = rt.writer.contextId;
    const artifactId = `${taskId}-patch`;
    const chunks = chunkText(text, ARTIFACT_CHUNK);
    chunks.forEach((chunk, i) => {
      const artifact = {
        artifactId,
        name: PATCH_ARTIFACT.name,
        description: 'The changes the agent made, as a unified diff against the tree it started from.',
        parts: [textPart(chunk, PATCH_ARTIFACT.mediaType, PATCH_ARTIFACT.name)],
        metadata: { 'baton/sha256': sha256Hex(text) },
        extensions: [],
      };
      this.addEvent(rt.writer, artifactEvent(taskId, contextId, artifact, i > 0, i === chunks.length - 1));
    });
  }

  /**
   * Queues an event without waiting for its commit. Once the writer's store failed for good nothing is
   * queued: the run was stopped and said so once (see `launch`); an event that cannot be added for
   * another reason is logged.
   */
  private addEvent(writer: TaskWriter, e: StreamResponse): void {
    if (writer.failure) return;
    try {
      writer.addResponse(e);
    } catch (err) {
      this.ctx.log(`task ${writer.taskId}: store write failed: ${(err as Error).message}`);
    }
  }

  /** Records the outcome exactly once: the run's own result, a cancel that timed out, or an expiry. */
  private async finish(rt: Running, result: LocalRunResult): Promise<void> {
    if (rt.settled) return;
    rt.release?.();
    const { writer } = rt;
    // Its token stops working and the children still running are canceled, their last states on this stream.
    await this.ctx.children?.ending(this.agent.id, writer.taskId);
    if (rt.settled) return;
    if (rt.lost) {
      // Its outcome is recorded by the instance that took the task over.
      rt.settled = true;
      this.running.delete(writer.taskId);
      return;
    }
    // The patch and the final status go to the store in one commit (the signing comes between them).
    writer.hold();
    try {
      const event = await this.outcomeEvent(rt, result);
      writer.setOwner(null);
      this.addEvent(writer, event);
    } finally {
      writer.release();
    }
    try {
      await writer.committed();
    } catch (e) {
      this.ctx.log(`task ${writer.taskId}: recording the outcome failed: ${(e as Error).message}`);
    }
    this.running.delete(writer.taskId);
  }

  /** Queues the patch (once) and returns the final status event, signed. */
  private async outcomeEvent(rt: Running, result: LocalRunResult): Promise<StreamResponse> {
    if (result.patch && !rt.patchEmitted) {
      rt.patchEmitted = true;
      this.pushArtifact(rt, result.patch);
    }
    rt.settled = true;
    let outcome: string = result.outcome;
    if (rt.stoppedWaiting && outcome !== 'completed') {
      outcome = 'failed';
      result = { ...result, reason: LOST_QUESTION };
    } else if (rt.stopping && !rt.started) {
      outcome = 'failed';
      result = { ...result, reason: NEVER_STARTED };
    } else if (rt.stopping && outcome !== 'completed') outcome = 'unknown';
    else if (rt.expired && outcome !== 'completed') outcome = 'expired';
    else if (rt.canceled && outcome !== 'completed') outcome = 'canceled';
    const state =
      outcome === 'completed'
        ? TaskState.TASK_STATE_COMPLETED
        : outcome === 'canceled'
          ? TaskState.TASK_STATE_CANCELED
          : TaskState.TASK_STATE_FAILED;
    const text =
      outcome === 'completed'
        ? (result.summary ?? (result.patch ? 'done: changes.patch attached' : 'done: no changes'))
        : outcome === 'expired'
          ? `expired: ${result.reason ?? 'the deadline passed'}`
          : outcome === 'unknown'
            ? 'unknown outcome: the gateway stopped while the agent was running; check the repository before retrying'
            : (result.reason ?? outcome);
    const { writer } = rt;
    const metadata: Record<string, unknown> = { [META.outcome]: outcome };
    return signStatusEvent(
      this.ctx,
      statusEvent(writer.taskId, writer.contextId, state, text, metadata),
      writer.task,
      rt.sentDigest,
      { id: this.agent.id, kind: this.agent.kind, confined: rt.confined },
      { ...rt.capabilities },
    );
  }

  /**
   * A reply to a task that waits for one (input-required): recorded in its history, the task working
   * again (committed before this returns, so the caller's stream follows from there), and the text
   * handed to the waiting run. A retry of a reply already taken finds the task as it is.
   */
  async continueTask(row: TaskRow, params: SendMessageRequest, principal: string): Promise<StartedTask> {
    const msg = params.message;
    if (!msg?.messageId) throw new RequestMalformedError('message.messageId is required (it is the idempotency key)');
    if (msg.contextId && msg.contextId !== row.contextId) {
      throw new RequestMalformedError(
        `message.contextId ${msg.contextId} is not the context of task ${row.id}; send the reply with contextId ${row.contextId}`,
      );
    }
    await this.ctx.claims.settle(principal, this.agent.id, msg.messageId);
    const rt = this.running.get(row.id);
    if (!rt?.waiting) {
      const taken = await this.ctx.store.findRequest(principal, this.agent.id, msg.messageId);
      if (taken?.taskId === row.id) return { taskId: row.id };
      if (isTerminal(row.state)) throw new UnsupportedOperationError(`task ${row.id} has ended; start a new task`);
      if (!rt) return this.noRunFor(row);
      throw new UnsupportedOperationError(
        `task ${row.id} is working and has not asked anything; reply when it is input-required`,
      );
    }
    const claim = await this.ctx.store.claimRequest(
      principal,
      this.agent.id,
      msg.messageId,
      requestDigest(params),
      row.id,
    );
    if (claim.kind === 'conflict')
      throw new RequestMalformedError(
        `messageId ${msg.messageId} was already used for a different request; send a new messageId`,
      );
    if (claim.kind === 'existing') return { taskId: row.id };
    const waiting = rt.waiting;
    if (!waiting || rt.settled) {
      // Answered by another reply, canceled or expired while the claim was written.
      await this.ctx.claims.release(principal, this.agent.id, msg.messageId);
      throw new UnsupportedOperationError(
        `task ${row.id} is no longer waiting for a reply (another reply was taken, or it was canceled or expired meanwhile)`,
      );
    }
    // Taken now, so a second reply arriving while this one is committed cannot answer too.
    rt.waiting = undefined;
    rt.writer.recordMessage({ ...msg, taskId: row.id, contextId: row.contextId, role: Role.ROLE_USER });
    this.addEvent(
      rt.writer,
      statusEvent(row.id, row.contextId, TaskState.TASK_STATE_WORKING, 'reply received; continuing'),
    );
    try {
      await rt.writer.committed();
    } catch (e) {
      this.ctx.log(`task ${row.id}: recording the reply failed: ${(e as Error).message}`);
    }
    waiting.answer(promptOf(msg.parts));
    return { taskId: row.id };
  }

  /** A reply to a task no run here waits on: another live instance runs it, or its process ended. */
  private async noRunFor(row: TaskRow): Promise<StartedTask> {
    if (row.owner && row.owner !== this.ctx.instanceId && (await instanceAlive(this.ctx, row.owner))) {
      throw new UnsupportedOperationError(
        `task ${row.id} runs on another instance of this gateway (${row.owner}), which holds its question; send the reply through that instance`,
      );
    }
    await this.recoverOrphan(row);
    throw new UnsupportedOperationError(
      `task ${row.id} cannot take a reply: ${row.state === TaskState.TASK_STATE_INPUT_REQUIRED ? LOST_QUESTION : 'the gateway stopped while the agent was running; check the repository before retrying'}`,
    );
  }

  async cancel(row: TaskRow): Promise<void> {
    const rt = this.running.get(row.id);
    if (!rt) {
      if (isTerminal(row.state)) throw new TaskNotCancelableError(`task ${row.id} has already ended`);
      // Nobody here runs it: its worker died with an earlier process (restart recovery records it).
      await this.recoverOrphan(row);
      return;
    }
    rt.canceled = true;
    rt.abort.abort(new Error('canceled'));
    const grace = this.ctx.limits.cancelGraceMs;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([rt.done, new Promise<void>((r) => (timer = setTimeout(r, grace)))]);
    clearTimeout(timer);
    if (!rt.settled) {
      await this.finish(rt, {
        outcome: 'canceled',
        reason: `canceled; the agent did not stop within ${grace} ms and was abandoned`,
        patch: '',
      });
    }
  }

  readonly orphanAction = 'recorded as failed with an unknown outcome (a local run cannot move)';

  /**
   * Records the outcome of a task whose run ended with an earlier process. Each caller waits for the
   * one before it and reads the task again: once one has recorded it (or another instance took it
   * over), the others find nothing left to do.
   */
  recoverOrphan(row: TaskRow): Promise<void> {
    return this.orphans.run(row.id, async () => {
      let fresh = await this.ctx.store.getTask(row.agent, row.id);
      if (!fresh || isTerminal(fresh.state) || fresh.owner !== row.owner || this.running.has(row.id)) return;
      // In a shared store, taking it over first keeps a live instance's sweep from recording it too.
      const owner = fresh.owner;
      if (owner && owner !== this.ctx.instanceId && this.ctx.store.takeOver) {
        fresh = await this.ctx.store.takeOver(row.agent, row.id, owner, this.ctx.instanceId);
        if (!fresh) return;
      }
      await this.recordOrphan(fresh);
    });
  }

  /** The outcome of a run that ended with an earlier process, signed like the end of any run. */
  private async recordOrphan(row: TaskRow): Promise<void> {
    const writer = TaskWriter.forRow(this.ctx.store, this.ctx.hub, row);
    writer.setOwner(null);
    // It only waited: the run's work was in memory and in its throwaway workspace, never in the repository.
    const waited = row.state === TaskState.TASK_STATE_INPUT_REQUIRED;
    const task = writer.task;
    const event = await signStatusEvent(
      this.ctx,
      statusEvent(
        row.id,
        row.contextId,
        TaskState.TASK_STATE_FAILED,
        waited
          ? LOST_QUESTION
          : 'unknown outcome: the gateway stopped while the agent was running; check the repository before retrying',
        { [META.outcome]: waited ? 'failed' : 'unknown' },
      ),
      task,
      recordedRequestDigest(task),
      // Whether the run was confined died with its process: only what the task itself records is signed.
      { id: this.agent.id, kind: this.agent.kind },
      recordedCapabilities(task),
    );
    await writer.push(event);
  }

  async close(): Promise<void> {
    const all = [...this.running.values()];
    for (const rt of all) {
      rt.stopping = true;
      rt.stoppedWaiting = rt.waiting !== undefined;
      rt.abort.abort(new Error('gateway shutting down'));
    }
    await Promise.race([Promise.all(all.map((r) => r.done)), sleep(this.ctx.limits.cancelGraceMs)]);
    await Promise.all(
      all.map((rt) => this.finish(rt, { outcome: 'failed', reason: 'the gateway stopped', patch: '' })),
    );
  }
}
