/**
 * The processes `bench/scale.ts` starts: `remote`, an SDK agent whose tasks report progress as agents
 * at work do (a status event every `PACE_MS`, then a patch artifact and the final status), and
 * `gateway`, a gateway that proxies it. Every event carries `i` (its place in the task) and `sentAt`
 * (when the agent published it, on the clock all the processes share) in its metadata.
 */
import { Agent, createServer, request as httpRequest } from 'node:http';
import { connect, createServer as createTcpServer } from 'node:net';
import type { AddressInfo } from 'node:net';
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

/**
 * The least a Node process that relays these streams does: each request is forwarded to the agent and
 * its response piped back byte for byte (no parsing, numbering, storing or signing; a reference for
 * the gateway's relay cost, not a relay anyone should run). Prints `{"url"}` when ready.
 */
async function barePipe(target: string): Promise<void> {
  const to = new URL(target);
  const agent = new Agent({ keepAlive: true });
  const server = createServer((req, res) => {
    const up = httpRequest(
      {
        agent,
        host: to.hostname,
        port: to.port,
        path: to.pathname,
        method: req.method,
        headers: { ...req.headers, host: to.host },
      },
      (upRes) => {
        res.writeHead(upRes.statusCode ?? 502, upRes.headers);
        upRes.pipe(res);
      },
    );
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  server.keepAliveTimeout = 120_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  process.stdout.write(
    `${JSON.stringify({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/rpc` })}\n`,
  );
}

/**
 * Less still: a TCP pipe that copies each connection's bytes to the agent and back, with no HTTP at all
 * (it cannot route, authenticate or see an event; the floor of any Node process the bytes pass through).
 * Prints `{"url"}` when ready.
 */
async function tcpPipe(target: string): Promise<void> {
  const to = new URL(target);
  const server = createTcpServer((down) => {
    const up = connect(Number(to.port), to.hostname);
    up.on('error', () => down.destroy());
    down.on('error', () => up.destroy());
    down.pipe(up);
    up.pipe(down);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  process.stdout.write(
    `${JSON.stringify({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}${to.pathname}` })}\n`,
  );
}

async function childMain(mode: string, args: string[]): Promise<void> {
  if (mode === 'pipe') return barePipe(args[0] ?? '');
  if (mode === 'tcp-pipe') return tcpPipe(args[0] ?? '');
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
