/**
 * Gateway overhead and replay speed.
 *
 * - `BENCH gateway`: an SDK agent streams 5,000 status events and a 1 MiB patch artifact; an SDK
 *   client receives them directly from the SDK server and through the gateway's proxy route (which
 *   numbers, persists with synchronous=FULL and relays every event), alternating runs;
 *   `bare_pipe_ratio` is the same measure through a bare Node pipe that forwards the bytes and does
 *   nothing else (bench/scale/child.ts), the floor of any relay in Node on this machine.
 * - `BENCH gateway-latency`: the same agent paced as agents are in use (a status event every 2 ms):
 *   how long each event takes from the agent's `publish` to the client, directly and through the
 *   gateway (which persists it with an fsync before sending it). The ratio compares the medians; the
 *   added milliseconds are what a user waits longer per event.
 * - `BENCH replay`: 10,000 events of a finished task replayed from the store (subscribe with
 *   Last-Event-ID: 0) versus receiving the same task's events live as the agent produces them.
 *
 * The SDK server, the gateway and the client each run in their own process, as they do in use (in one
 * process the three would take turns on one event loop). On a 2-core machine the three processes
 * share two cores, so the figure counts the gateway's CPU time, not only the latency it adds; the line
 * also prints the gateway's CPU per relayed run and the remote agent's per run (from /proc) so that
 * the two can be told apart.
 */
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { TaskState } from '@a2a-js/sdk';
import type { StreamResponse } from '@a2a-js/sdk';
import { AgentEvent } from '@a2a-js/sdk/server';
import type { AgentExecutor, ExecutionEventBus, RequestContext } from '@a2a-js/sdk/server';
import type { LocalAgent } from '../src/gateway/agents/localAgent';
import { compare, median, loadNote } from './util';
import {
  benchGateway,
  clientAt,
  clockMs,
  cpuMsOf,
  percentile,
  request,
  sdkServer,
  startChild,
  stopChildren,
} from './scale/procs';

const STATUS_EVENTS = 5_000;
const PATCH = `diff --git a/big b/big\n${'+'.repeat(79)}\n`
  .repeat(Math.ceil((1024 * 1024) / 104))
  .slice(0, 1024 * 1024);
const REPLAY_EVENTS = 10_000;
const PACED_EVENTS = 300;
const PACE_MS = 2;

class StreamingExecutor implements AgentExecutor {
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
    const text = ctx.userMessage.parts[0]?.content?.$case === 'text' ? ctx.userMessage.parts[0].content.value : '';
    if (text === 'paced') {
      for (let i = 0; i < PACED_EVENTS; i++) {
        await new Promise((r) => setTimeout(r, PACE_MS));
        bus.publish(
          AgentEvent.statusUpdate({
            taskId,
            contextId,
            status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: undefined },
            metadata: { i, sentAt: clockMs() },
          }),
        );
      }
      bus.publish(
        AgentEvent.statusUpdate({
          taskId,
          contextId,
          status: { state: TaskState.TASK_STATE_COMPLETED, message: undefined, timestamp: undefined },
          metadata: undefined,
        }),
      );
      bus.finished();
      return;
    }
    for (let i = 0; i < STATUS_EVENTS; i++) {
      bus.publish(
        AgentEvent.statusUpdate({
          taskId,
          contextId,
          status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: new Date().toISOString() },
          metadata: { i },
        }),
      );
      // Yield now and then, as a real agent producing events over time does.
      if (i % 100 === 0) await new Promise((r) => setImmediate(r));
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
        metadata: undefined,
      }),
    );
    bus.publish(
      AgentEvent.statusUpdate({
        taskId,
        contextId,
        status: { state: TaskState.TASK_STATE_COMPLETED, message: undefined, timestamp: undefined },
        metadata: undefined,
      }),
    );
    bus.finished();
  }
  cancelTask(): Promise<void> {
    return Promise.resolve();
  }
}

async function drain(stream: AsyncGenerator<unknown>, expectAtLeast: number): Promise<number> {
  let n = 0;
  for await (const _ of stream) {
    void _;
    n++;
  }
  if (n < expectAtLeast) throw new Error(`expected at least ${expectAtLeast} events, got ${n}`);
  return n;
}

/** Milliseconds from the agent's publish to this client, for each paced event of one task. */
async function latencies(stream: AsyncGenerator<StreamResponse>): Promise<number[]> {
  const out: number[] = [];
  for await (const ev of stream) {
    const sentAt = ev.payload?.$case === 'statusUpdate' ? ev.payload.value.metadata?.sentAt : undefined;
    if (typeof sentAt === 'number') out.push(clockMs() - sentAt);
  }
  if (out.length !== PACED_EVENTS) throw new Error(`expected ${PACED_EVENTS} paced events, got ${out.length}`);
  return out;
}

const fastAgent: LocalAgent = {
  id: 'burst',
  name: 'Burst',
  description: `Emits ${REPLAY_EVENTS} steps`,
  kind: 'builtin',
  skills: [],
  maxCapabilities: { write: false, shell: false, network: false },
  async run(_req, emit) {
    for (let i = 0; i < REPLAY_EVENTS; i++) {
      emit({ kind: 'step', text: `step ${i}` });
      if (i % 100 === 0) await new Promise((r) => setImmediate(r));
    }
    return { outcome: 'completed', patch: '' };
  },
};

/** Starts this file as a child in `mode` (see `childMain`). */
function child(mode: 'remote' | 'gateway', ...args: string[]): ReturnType<typeof startChild> {
  return startChild('gateway-child', __filename, mode, ...args);
}

async function childMain(mode: string, args: string[]): Promise<void> {
  if (mode === 'remote') {
    const remote = await sdkServer(new StreamingExecutor());
    process.stdout.write(`${JSON.stringify({ url: remote.url })}\n`);
    return;
  }
  await benchGateway(args[0] ?? '', [fastAgent]);
}

export async function run(): Promise<void> {
  const remote = await child('remote');
  const gw = await child('gateway', remote.info.url);
  // A bare Node pipe to the same agent (bench/scale/child.ts): what relaying alone costs in this run.
  const pipe = await startChild('scale-child', join(__dirname, 'scale', 'child.ts'), 'pipe', remote.info.url);
  try {
    const direct = await clientAt(remote.info.url);
    const proxied = await clientAt(`${gw.info.url}/a2a/remote`, gw.info.token);
    const expected = STATUS_EVENTS + 3;
    await drain(direct.sendMessageStream(request('warm')), expected);
    await drain(proxied.sendMessageStream(request('warm')), expected);
    const rounds = 9;
    const cpu0 = [cpuMsOf(gw.proc), cpuMsOf(remote.proc)];
    const g = await compare(
      rounds,
      () => drain(direct.sendMessageStream(request('go')), expected),
      () => drain(proxied.sendMessageStream(request('go')), expected),
    );
    const cpu1 = [cpuMsOf(gw.proc), cpuMsOf(remote.proc)];
    const piped = await clientAt(pipe.info.url);
    await drain(piped.sendMessageStream(request('warm')), expected);
    const bare = await compare(
      rounds,
      () => drain(direct.sendMessageStream(request('go')), expected),
      () => drain(piped.sendMessageStream(request('go')), expected),
    );
    // Where the time goes on a small machine: the gateway's CPU per relayed run (it is idle during the
    // direct runs) beside the remote agent's per run; the three processes share the machine's cores.
    const perRun = (i: number, runs: number): string => {
      const a = cpu0[i];
      const b = cpu1[i];
      return a === undefined || b === undefined ? 'n/a' : ((b - a) / runs).toFixed(1);
    };
    console.log(
      `BENCH gateway ratio=${g.ratio.toFixed(3)} direct_ms=${g.baselineMs.toFixed(1)} gateway_ms=${g.candidateMs.toFixed(1)} bare_pipe_ratio=${bare.ratio.toFixed(3)} events=${expected} artifact_bytes=${PATCH.length} gateway_cpu_ms=${perRun(0, rounds)} remote_cpu_ms=${perRun(1, 2 * rounds)} cores=${availableParallelism()} ${loadNote()}`,
    );

    // Paced as an agent at work: what the store's fsync before each send adds to every event's trip.
    const lat = { direct: [] as number[], gateway: [] as number[] };
    for (let i = 0; i < 3; i++) {
      lat.direct.push(...(await latencies(direct.sendMessageStream(request('paced')))));
      lat.gateway.push(...(await latencies(proxied.sendMessageStream(request('paced')))));
    }
    const p50 = { direct: median(lat.direct), gateway: median(lat.gateway) };
    console.log(
      `BENCH gateway-latency ratio=${(p50.gateway / p50.direct).toFixed(3)} direct_p50_ms=${p50.direct.toFixed(2)} gateway_p50_ms=${p50.gateway.toFixed(2)} added_p50_ms=${(p50.gateway - p50.direct).toFixed(2)} direct_p95_ms=${percentile(lat.direct, 95).toFixed(2)} gateway_p95_ms=${percentile(lat.gateway, 95).toFixed(2)} events=${3 * PACED_EVENTS} pace_ms=${PACE_MS} ${loadNote()}`,
    );

    const burst = await clientAt(`${gw.info.url}/a2a/burst`, gw.info.token);
    let lastTask = '';
    const live = async (): Promise<void> => {
      let n = 0;
      for await (const ev of burst.sendMessageStream(request('go'))) {
        if (ev.payload?.$case === 'task') lastTask = ev.payload.value.id;
        n++;
      }
      if (n < REPLAY_EVENTS) throw new Error(`live stream ended after ${n} events`);
    };
    const replay = async (): Promise<void> => {
      await drain(
        burst.resubscribeTask({ tenant: '', id: lastTask }, { serviceParameters: { 'Last-Event-ID': '0' } }),
        REPLAY_EVENTS,
      );
    };
    await live();
    const r = await compare(7, live, replay);
    console.log(
      `BENCH replay ratio=${r.ratio.toFixed(3)} live_ms=${r.baselineMs.toFixed(1)} replay_ms=${r.candidateMs.toFixed(1)} events=${REPLAY_EVENTS} ${loadNote()}`,
    );
  } finally {
    await stopChildren([gw, pipe, remote]);
  }
}

if (process.argv[2] === '--bench-child') {
  void childMain(process.argv[3] ?? '', process.argv.slice(4)).catch((e: unknown) => {
    process.stderr.write(`${String(e)}\n`);
    process.exit(1);
  });
}
