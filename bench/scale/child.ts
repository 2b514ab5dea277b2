/**
 * The processes `bench/scale.ts` starts: `remote`, an SDK agent whose tasks report progress as agents
 * at work do (a status event every `PACE_MS`, then a patch artifact and the final status), and
 * `gateway`, a gateway that proxies it. Every event carries `i` (its place in the task) and `sentAt`
 * (when the agent published it, on the clock all the processes share) in its metadata.
 */
import { TaskState } from '@a2a-js/sdk';
import { AgentEvent } from '@a2a-js/sdk/server';
import type { AgentExecutor, ExecutionEventBus, RequestContext } from '@a2a-js/sdk/server';
import { benchGateway, clockMs, sdkServer } from './procs';

export const STATUS_EVENTS = 100;
export const PACE_MS = 50;
export const PATCH_BYTES = 64 * 1024;
/** Events with `i` and `sentAt`: the status events, the patch, the final status. */
export const TIMED_EVENTS = STATUS_EVENTS + 2;

const PATCH = `diff --git a/big b/big\n${'+'.repeat(79)}\n`.repeat(Math.ceil(PATCH_BYTES / 104)).slice(0, PATCH_BYTES);

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, Math.max(0, ms)));

class PacedExecutor implements AgentExecutor {
  async execute(ctx: RequestContext, bus: ExecutionEventBus): Promise<void> {
    const { taskId, contextId } = ctx;
    bus.publish(
      AgentEvent.task({
        id: taskId,
        contextId,
        status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: undefined },
        artifacts: [],
        history: [ctx.userMessage],
        metadata: undefined,
      }),
    );
    // On a schedule, not a chain of timeouts: the rate stays one event per PACE_MS however late a timer fires.
    const start = performance.now();
    for (let i = 0; i < STATUS_EVENTS; i++) {
      await sleep(start + (i + 1) * PACE_MS - performance.now());
      bus.publish(
        AgentEvent.statusUpdate({
          taskId,
          contextId,
          status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: new Date().toISOString() },
          metadata: { i, sentAt: clockMs() },
        }),
      );
    }
    bus.publish(
      AgentEvent.artifactUpdate({
        taskId,
        contextId,
        artifact: {
          artifactId: 'patch',
          name: 'changes.patch',
          description: '',
          parts: [
            {
              content: { $case: 'text', value: PATCH },
              metadata: undefined,
              filename: 'changes.patch',
              mediaType: 'text/x-diff',
            },
          ],
          metadata: undefined,
          extensions: [],
        },
        append: false,
        lastChunk: true,
        metadata: { i: STATUS_EVENTS, sentAt: clockMs() },
      }),
    );
    bus.publish(
      AgentEvent.statusUpdate({
        taskId,
        contextId,
        status: { state: TaskState.TASK_STATE_COMPLETED, message: undefined, timestamp: new Date().toISOString() },
        metadata: { i: STATUS_EVENTS + 1, sentAt: clockMs() },
      }),
    );
    bus.finished();
  }
  cancelTask(): Promise<void> {
    return Promise.resolve();
  }
}

async function childMain(mode: string, args: string[]): Promise<void> {
  if (mode === 'remote') {
    const remote = await sdkServer(new PacedExecutor());
    process.stdout.write(`${JSON.stringify({ url: remote.url })}\n`);
    return;
  }
  await benchGateway(args[0] ?? '', []);
}

if (process.argv[2] === '--bench-child') {
  void childMain(process.argv[3] ?? '', process.argv.slice(4)).catch((e: unknown) => {
    process.stderr.write(`${String(e)}\n`);
    process.exit(1);
  });
}
