/**
 * The gateway at team scale: many agents streaming at once, relayed through the proxy route.
 *
 * An SDK agent runs tasks that report progress as agents at work do (a status event every 50 ms, 100
 * of them, then a 64 KiB patch artifact and the final status; bench/scale/child.ts). An SDK client
 * runs N such tasks at once (their starts spread over one 50 ms period, so the load is steady), directly
 * against the agent and through the gateway's proxy route (which numbers, persists before sending and
 * relays every event), in alternating rounds. Each event's latency is from the agent's publish to the
 * client's receipt, on the clock the processes share; the added latency is the through-gateway
 * percentile minus the direct one. The agent, the gateway and the client each run in their own process.
 *
 * - `BENCH relay-cpu`: the gateway's CPU per relayed event (during the 200-task rounds through it)
 *   against the SDK agent's own CPU per event (during all the 200-task rounds), both from /proc;
 *   `gateway_main_us` is the gateway's main thread's part (the rest: the store's thread, GC helpers).
 *   `bare_pipe_us` / `bare_pipe_ratio`: the same 200-task rounds through a bare Node pipe that forwards
 *   each request and pipes the response back byte for byte (bench/scale/child.ts): the least any Node
 *   relay of these streams spends, with nothing parsed, numbered, stored or signed. `tcp_pipe_us` /
 *   `tcp_pipe_ratio`: the same through a TCP pipe that copies each connection's bytes with no HTTP at
 *   all (it could not route or authenticate a request): the floor of any Node process the bytes pass through.
 * - `BENCH load200`, `BENCH load500`: added p50/p95, first-event p50, streams that failed or lost,
 *   duplicated or reordered an event (`errors` through the gateway, `direct_errors` directly), and the
 *   gateway's peak resident set during its rounds; `machine_busy` is the share of the machine's cores
 *   the three processes used together during those rounds (averaged over each round), and
 *   `steady_added_p95_ms` the added p95 of the events in the middle of the tasks (away from the burst
 *   of creations at the start and of patches at the end), `start_added_p95_ms` and `end_added_p95_ms`
 *   those of the two bursts. The load200 line ends with the same added
 *   percentiles through the bare pipe (`bare_pipe_added_p95_ms`, …): the floor of any Node relay; so
 *   does the load500 line, from 500-task rounds through the pipe.
 * - `BENCH load200_rolling`: the same 200 streams at once, but as a team's load comes: tasks arrive
 *   steadily (400 of them over two task lengths, one every `TASK_MS / 200`) and finish as others start,
 *   so the gateway relays 200 streams (≈4,000 events/s) while it also creates and ends tasks, without
 *   the bursts of load200. Only the events sent while all 200 run (from one task length to two after
 *   the round began) are counted. `BENCH load500_rolling` is the same with 500 at once (1,000 arriving).
 * - then `soak()` from bench/scale/soak.ts, when it is there.
 *
 * `BENCH_SCALE_QUICK=1` runs relay-cpu, load200 and load200_rolling only, e.g. under `--cpu-prof`;
 * `BENCH_SCALE_ONLY=load500` runs load500 and load500_rolling only, `BENCH_SCALE_ONLY=load200_rolling`
 * load200_rolling alone.
 */
import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@a2a-js/sdk/client';
import { loadNote } from './util';
import { PACE_MS, STATUS_EVENTS, TIMED_EVENTS } from './scale/child';
import type { Child } from './scale/procs';
import { clientAt, clockMs, cpuMsOf, percentile, request, rssMbOf, startChild, stopChildren } from './scale/procs';

/**
 * Every task of a round starts within one `PACE_MS` and ends within one: the first and last events
 * meet the creations and the patches of all the others. Events `STEADY_FROM` to `STEADY_TO` are the
 * relay in its steady state (`steady_added_p95_ms`).
 */
const STEADY_FROM = 10;
const STEADY_TO = STATUS_EVENTS - 10;

/** How long one task runs: its status events, one `PACE_MS` apart, then the patch and the final status. */
const TASK_MS = (STATUS_EVENTS + 1) * PACE_MS;

/** How a round's tasks start: spread over `spreadMs`, and which events count (sent within `countMs` of the round's start). */
export interface Arrivals {
  readonly tasks: number;
  readonly spreadMs: number;
  readonly countMs?: readonly [from: number, to: number];
}

/** Every task at once (within one `PACE_MS`). */
export const together = (tasks: number): Arrivals => ({ tasks, spreadMs: PACE_MS });

/** `concurrent` tasks at once in the steady state: twice as many arrive over two task lengths; the second length is counted. */
const rolling = (concurrent: number): Arrivals => ({
  tasks: 2 * concurrent,
  spreadMs: 2 * TASK_MS,
  countMs: [TASK_MS, 2 * TASK_MS],
});

/** Rounds per way (direct, through the gateway) at each load. */
const ROUNDS = 2;

export interface RoundResult {
  readonly latencies: number[];
  /** The latencies of the events in the middle of each task, away from the start and the end of all of them. */
  readonly steady: number[];
  /** The latencies of each task's first `STEADY_FROM` events (the burst of creations) and of its events from `STEADY_TO` on (the burst of patches and final statuses). */
  readonly start: number[];
  readonly end: number[];
  readonly first: number[];
  errors: number;
  events: number;
}

/** One task's stream: each timed event's latency, checked for loss, duplicates and order. */
async function oneTask(
  client: Client,
  way: string,
  delayMs: number,
  counted: (sentAt: number) => boolean,
  out: RoundResult,
): Promise<void> {
  await new Promise((r) => setTimeout(r, delayMs));
  const sent = clockMs();
  let next = 0;
  let firstAt: number | undefined;
  try {
    for await (const ev of client.sendMessageStream(request('go'))) {
      const now = clockMs();
      firstAt ??= now;
      out.events++;
      const p = ev.payload;
      const md =
        p?.$case === 'statusUpdate' || p?.$case === 'artifactUpdate'
          ? p.value.metadata
          : p?.$case === 'task'
            ? p.value.metadata
            : undefined;
      const i: unknown = md?.i;
      const sentAt: unknown = md?.sentAt;
      if (typeof i !== 'number' || typeof sentAt !== 'number') continue;
      if (i !== next) throw new Error(`event ${i} arrived where ${next} was due`);
      next++;
      if (!counted(sentAt)) continue;
      out.latencies.push(now - sentAt);
      if (i < STEADY_FROM) out.start.push(now - sentAt);
      else if (i < STEADY_TO) out.steady.push(now - sentAt);
      else out.end.push(now - sentAt);
    }
    if (next !== TIMED_EVENTS) throw new Error(`the stream ended after ${next} of ${TIMED_EVENTS} events`);
    if (firstAt !== undefined) out.first.push(firstAt - sent);
  } catch (e) {
    out.errors++;
    if (out.errors <= 3) console.error(`# ${way} stream failed: ${(e as Error).message}`);
  }
}

/** One round of `a` through `client`: each event's latency, checked for loss, duplicates and order. */
export async function round(client: Client, way: string, a: Arrivals): Promise<RoundResult> {
  const out: RoundResult = { latencies: [], steady: [], start: [], end: [], first: [], errors: 0, events: 0 };
  const t0 = clockMs();
  const [from, to] = a.countMs ?? [Number.NEGATIVE_INFINITY, Number.POSITIVE_INFINITY];
  const counted = (sentAt: number): boolean => sentAt - t0 >= from && sentAt - t0 < to;
  await Promise.all(
    Array.from({ length: a.tasks }, (_, k) => oneTask(client, way, (k * a.spreadMs) / a.tasks, counted, out)),
  );
  return out;
}

interface LoadResult {
  readonly direct: RoundResult[];
  readonly gateway: RoundResult[];
  readonly gatewayCpuMs: number;
  /** The gateway's main thread's share of `gatewayCpuMs`. */
  readonly gatewayMainMs: number;
  readonly agentCpuMs: number;
  readonly rssMb: number;
  /** The share of the machine's cores the agent, the gateway and the client (this process) used together during the rounds through the gateway. */
  readonly machineBusy: number;
}

/** `ROUNDS` rounds each way of these arrivals, alternating which goes first. */
async function load(a: Arrivals, direct: Client, proxied: Client, gw: Child, remote: Child): Promise<LoadResult> {
  const res = { direct: [] as RoundResult[], gateway: [] as RoundResult[] };
  let rss = 0;
  const sampler = setInterval(() => {
    rss = Math.max(rss, rssMbOf(gw.proc) ?? 0);
  }, 100);
  const cpu = (c: Child, mainThread = false): number => cpuMsOf(c.proc, mainThread) ?? Number.NaN;
  const agent0 = cpu(remote);
  let gatewayCpu = 0;
  let gatewayMain = 0;
  let busyMs = 0;
  let wallMs = 0;
  try {
    for (let i = 0; i < 2 * ROUNDS; i++) {
      if ((i % 2 === 0) === i % 4 < 2) res.direct.push(await round(direct, 'direct', a));
      else {
        const g0 = cpu(gw);
        const m0 = cpu(gw, true);
        const a0 = cpu(remote);
        const c0 = process.cpuUsage();
        const t0 = performance.now();
        res.gateway.push(await round(proxied, 'gateway', a));
        gatewayCpu += cpu(gw) - g0;
        gatewayMain += cpu(gw, true) - m0;
        const c = process.cpuUsage(c0);
        busyMs += cpu(gw) - g0 + (cpu(remote) - a0) + (c.user + c.system) / 1000;
        wallMs += performance.now() - t0;
      }
    }
  } finally {
    clearInterval(sampler);
  }
  return {
    ...res,
    gatewayCpuMs: gatewayCpu,
    gatewayMainMs: gatewayMain,
    agentCpuMs: cpu(remote) - agent0,
    rssMb: rss,
    machineBusy: busyMs / (wallMs * availableParallelism()),
  };
}

const all = (rs: readonly RoundResult[], f: (r: RoundResult) => number[]): number[] => rs.flatMap(f);
const sum = (rs: readonly RoundResult[], f: (r: RoundResult) => number): number => rs.reduce((a, r) => a + f(r), 0);

/** The `q` percentile of `f`'s latencies through `way` minus that of the direct rounds, in ms. */
function addedMs(
  way: readonly RoundResult[],
  direct: readonly RoundResult[],
  f: (x: RoundResult) => number[],
  q: number,
): string {
  const p = (xs: number[]): number => (xs.length ? percentile(xs, q) : Number.NaN);
  return (p(all(way, f)) - p(all(direct, f))).toFixed(2);
}

function loadLine(name: string, tasks: number, r: LoadResult): string {
  const d = all(r.direct, (x) => x.latencies);
  const g = all(r.gateway, (x) => x.latencies);
  const p = (xs: number[], q: number): number => (xs.length ? percentile(xs, q) : Number.NaN);
  const errors = sum(r.gateway, (x) => x.errors);
  return [
    `BENCH ${name}`,
    `added_p95_ms=${addedMs(r.gateway, r.direct, (x) => x.latencies, 95)}`,
    `added_p50_ms=${addedMs(r.gateway, r.direct, (x) => x.latencies, 50)}`,
    `steady_added_p95_ms=${addedMs(r.gateway, r.direct, (x) => x.steady, 95)}`,
    `start_added_p95_ms=${addedMs(r.gateway, r.direct, (x) => x.start, 95)}`,
    `end_added_p95_ms=${addedMs(r.gateway, r.direct, (x) => x.end, 95)}`,
    `errors=${errors} direct_errors=${sum(r.direct, (x) => x.errors)}`,
    `rss_mb=${r.rssMb.toFixed(0)}`,
    `direct_p50_ms=${p(d, 50).toFixed(2)} direct_p95_ms=${p(d, 95).toFixed(2)}`,
    `gateway_p50_ms=${p(g, 50).toFixed(2)} gateway_p95_ms=${p(g, 95).toFixed(2)} gateway_p99_ms=${p(g, 99).toFixed(2)}`,
    `first_p50_ms=${p(
      all(r.gateway, (x) => x.first),
      50,
    ).toFixed(1)} direct_first_p50_ms=${p(
      all(r.direct, (x) => x.first),
      50,
    ).toFixed(1)}`,
    `tasks=${tasks} rounds=${ROUNDS} gateway_cpu_ms=${r.gatewayCpuMs.toFixed(0)} agent_cpu_ms=${r.agentCpuMs.toFixed(0)}`,
    `cores=${availableParallelism()} machine_busy=${r.machineBusy.toFixed(2)} ${loadNote()}`,
  ].join(' ');
}

/**
 * The same percentiles through the bare pipe, against the direct rounds: the latency any Node relay
 * adds to these streams before it parses, numbers or stores anything.
 */
function pipeLatency(r: LoadResult, pipeRounds: readonly RoundResult[]): string {
  const added = (f: (x: RoundResult) => number[], q: number): string => addedMs(pipeRounds, r.direct, f, q);
  return [
    `bare_pipe_added_p95_ms=${added((x) => x.latencies, 95)}`,
    `bare_pipe_added_p50_ms=${added((x) => x.latencies, 50)}`,
    `bare_pipe_steady_added_p95_ms=${added((x) => x.steady, 95)}`,
    `bare_pipe_start_added_p95_ms=${added((x) => x.start, 95)}`,
    `bare_pipe_end_added_p95_ms=${added((x) => x.end, 95)}`,
  ].join(' ');
}

/** `ROUNDS` rounds of `tasks` through a pipe child (after a warm-up), and its CPU per event meanwhile. */
async function pipeRounds(pipe: Child, tasks = 200): Promise<{ rounds: RoundResult[]; us: number }> {
  const client = await clientAt(pipe.info.url);
  await round(client, 'pipe', together(20));
  const cpu0 = cpuMsOf(pipe.proc) ?? Number.NaN;
  const rounds: RoundResult[] = [];
  for (let i = 0; i < ROUNDS; i++) rounds.push(await round(client, 'pipe', together(tasks)));
  const events = sum(rounds, (x) => x.events);
  return { rounds, us: (((cpuMsOf(pipe.proc) ?? Number.NaN) - cpu0) * 1000) / events };
}

async function load500(direct: Client, proxied: Client, gw: Child, remote: Child, pipe: Child): Promise<void> {
  const l500 = await load(together(500), direct, proxied, gw, remote);
  // The bare pipe at 500 too: on a small machine the agent and the client leave a relay little room.
  console.log(`${loadLine('load500', 500, l500)} ${pipeLatency(l500, (await pipeRounds(pipe, 500)).rounds)}`);
  console.log(
    `${loadLine('load500_rolling', 1000, await load(rolling(500), direct, proxied, gw, remote))} concurrent=500`,
  );
}

export async function run(): Promise<void> {
  const entry = join(__dirname, 'scale', 'child.ts');
  const remote = await startChild('scale-child', entry, 'remote');
  const gw = await startChild('scale-child', entry, 'gateway', remote.info.url);
  const pipe = await startChild('scale-child', entry, 'pipe', remote.info.url);
  const tcp = await startChild('scale-child', entry, 'tcp-pipe', remote.info.url);
  try {
    const direct = await clientAt(remote.info.url);
    const proxied = await clientAt(`${gw.info.url}/a2a/remote`, gw.info.token);
    // Warm up both ways (connections, JIT, the store's first pages).
    await round(direct, 'direct', together(20));
    await round(proxied, 'gateway', together(20));

    if (process.env.BENCH_SCALE_ONLY === 'load200_rolling') {
      console.log(
        `${loadLine('load200_rolling', 400, await load(rolling(200), direct, proxied, gw, remote))} concurrent=200`,
      );
      return;
    }
    if (process.env.BENCH_SCALE_ONLY === 'load500') {
      await load500(direct, proxied, gw, remote, pipe);
      return;
    }
    const l200 = await load(together(200), direct, proxied, gw, remote);
    const events = (rs: readonly RoundResult[]): number => sum(rs, (x) => x.events);
    // The same rounds through a bare Node pipe and a TCP pipe (bench/scale/child.ts): what relaying alone costs.
    const bare = await pipeRounds(pipe);
    const tcpPipe = await pipeRounds(tcp);
    const gatewayUs = (l200.gatewayCpuMs * 1000) / events(l200.gateway);
    const mainUs = (l200.gatewayMainMs * 1000) / events(l200.gateway);
    const agentUs = (l200.agentCpuMs * 1000) / (events(l200.gateway) + events(l200.direct));
    console.log(
      `BENCH relay-cpu ratio=${(gatewayUs / agentUs).toFixed(3)} gateway_us=${gatewayUs.toFixed(1)} gateway_main_us=${mainUs.toFixed(1)} agent_us=${agentUs.toFixed(1)} bare_pipe_us=${bare.us.toFixed(1)} bare_pipe_ratio=${(bare.us / agentUs).toFixed(3)} tcp_pipe_us=${tcpPipe.us.toFixed(1)} tcp_pipe_ratio=${(tcpPipe.us / agentUs).toFixed(3)} events=${events(l200.gateway)} tasks=200 ${loadNote()}`,
    );
    console.log(`${loadLine('load200', 200, l200)} ${pipeLatency(l200, bare.rounds)}`);
    console.log(
      `${loadLine('load200_rolling', 400, await load(rolling(200), direct, proxied, gw, remote))} concurrent=200`,
    );
    // BENCH_SCALE_QUICK=1 stops here (for profiling the relay at 200 tasks).
    if (process.env.BENCH_SCALE_QUICK === '1') return;
    await load500(direct, proxied, gw, remote, pipe);
  } finally {
    await stopChildren([gw, pipe, tcp, remote]);
  }

  const soakFile = join(__dirname, 'scale', 'soak.ts');
  if (!existsSync(soakFile)) {
    console.log('BENCH soak skipped: bench/scale/soak.ts not found');
    return;
  }
  const mod = (await import(soakFile)) as { soak?: () => Promise<void> };
  if (typeof mod.soak !== 'function') throw new Error('bench/scale/soak.ts does not export soak()');
  await mod.soak();
}
