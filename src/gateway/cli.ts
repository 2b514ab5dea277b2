/**
 * `baton-gateway`: the A2A server that fronts Baton's local agents and proxies remote ones.
 *
 *   baton-gateway [--config FILE] [--state DIR] [--host H] [--port N] [--root DIR]… [--no-local-agents] [--agent-pace-ms N] [--builtin-threads N]
 *
 * Prints one JSON line on stdout when it is listening (`{"url", "tokenFile", "pid", "instanceId", "agents"}`)
 * so a supervisor can wait for it, and writes the same to <state>/gateway.json for the editor and the
 * `baton` command line. Stops cleanly on SIGTERM / SIGINT, on an authenticated `POST /baton/shutdown`, and
 * (with --idle-stop-seconds) once it has served no folder and run no task for that long. On SIGHUP it
 * reads its config file again and takes its `tokens` (a member added, a token revoked), its remote
 * `agents` (added, removed, new credentials), its per-task limits (capabilities, deadlines, cancel
 * grace), its limit of running tasks per member, its request limits, its delegation guards and its
 * `retention` without a restart.
 */
import { readFileSync, rmSync, unwatchFile, watchFile, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { discoverLocalAgents } from './agents/discover';
import { HARNESSES, harnessById } from './harness/registry';
import type { LocalAgent } from './agents/localAgent';
import { GATEWAY_VERSION } from './cards';
import { defaultStateDir } from './cliPaths';
import { ConfigError, gatewayLimitsOf, loadGatewayConfig, requestLimitsOf } from './config';
import type { GatewayConfig } from './config';
import { DEFAULT_LIMITS, DEFAULT_REQUEST_LIMITS, startGateway } from './server';
import type { AgentChange, RequestLimits, RunningGateway, TaskLimits } from './server';
import { DEFAULT_DELEGATION_POLICY } from './delegation/childBroker';
import type { DelegationPolicy } from './delegation/childBroker';
import { retentionFromConfig, retentionWords } from './retention';
import type { RetentionPolicy } from './retention';
import { defaultWorkspaceRoot } from './workspace/workspaceRoot';
import { applyHeapGrowth } from './heapGrowth';

const USAGE = `usage: baton-gateway [options]

  --config FILE        JSON config: agents, tokens, store, roots, limits, retention (see docs/gateway.md);
                       "retention": {"finishedTaskHours": 168, "maxStoreMb": 2048, "replayWindowMinutes": 60,
                       "intervalSeconds": 60} are the defaults (finished tasks deleted after a week or, oldest
                       first, above the size cap; their events compacted after the replay window). On SIGHUP
                       the file is read again and its tokens, remote agents (added; removed: no new tasks,
                       theirs go on; new credentials), limits (capabilities, deadlines, cancel grace,
                       maxRunningTasksPerPrincipal, request limits), delegation guards and retention taken;
                       other settings wait for the next start
  --state DIR          state folder: key, token, SQLite store (default $BATON_STATE_DIR or ~/.baton/gateway)
  --host HOST          address to bind (default 127.0.0.1)
  --port N             port (default 0: a free one)
  --root DIR           a folder whose repositories requests may name (repeatable)
  --public-url URL     the URL clients use, when behind a proxy
  --cli ID=PATH        use this executable for a coding CLI (claude, codex, gemini, copilot, opencode); repeatable
  --no-local-agents    serve only the configured remote agents
  --no-agent ID        serve every local agent but this one (repeatable)
  --agent-pace-ms N    the refactoring agent waits N ms between its steps, so they can be watched and
                       canceled on a small repository (default 0; the demo uses it)
  --builtin-threads N  built-in agent jobs that run at once, each on its own thread, 1 to 16 (default: one
                       less than the cores, 1 to 2); more wait in a queue
  --max-depth N        how deep agent-started delegations may go, 0 to 3 (default 1: the children of a task
                       you started may not delegate further); config "maxDepth"
  --max-breadth N      children one task may start (default 3); config "maxBreadth"
  --watch-config       with --config: read the file again whenever it changes, as on SIGHUP (for Windows,
                       and for a config mounted into a container)
  --idle-stop-seconds N  stop after N seconds with no folder to serve and no running task (default 0: never;
                       the editor starts its shared gateway with this)
  --print-postgres-schema  print the SQL that creates the PostgreSQL store's tables and exit: for an
                       administrator to run once as their owner when the gateway's role may not create
                       tables (it then needs SELECT, INSERT, UPDATE, DELETE on them; docs/gateway.md)
  --version, --help
`;

async function main(argv: string[]): Promise<number> {
  let values: Record<string, string | boolean | string[] | undefined>;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean', short: 'v' },
        config: { type: 'string' },
        state: { type: 'string' },
        host: { type: 'string' },
        port: { type: 'string' },
        root: { type: 'string', multiple: true },
        'public-url': { type: 'string' },
        'no-local-agents': { type: 'boolean' },
        'no-agent': { type: 'string', multiple: true },
        cli: { type: 'string', multiple: true },
        'agent-pace-ms': { type: 'string' },
        'builtin-threads': { type: 'string' },
        'idle-stop-seconds': { type: 'string' },
        'max-depth': { type: 'string' },
        'max-breadth': { type: 'string' },
        'watch-config': { type: 'boolean' },
        'print-postgres-schema': { type: 'boolean' },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (e) {
    process.stderr.write(`baton-gateway: ${(e as Error).message}\n${USAGE}`);
    return 2;
  }
  if (values.version) {
    process.stdout.write(`baton-gateway ${GATEWAY_VERSION}\n`);
    return 0;
  }
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  if (values['print-postgres-schema']) {
    const { postgresSchemaSql } = await import('./store/postgresStore');
    process.stdout.write(postgresSchemaSql());
    return 0;
  }
  if (values['watch-config'] && typeof values.config !== 'string') {
    process.stderr.write('baton-gateway: --watch-config needs --config FILE (the file to watch)\n');
    return 2;
  }
  let config: GatewayConfig | undefined;
  try {
    if (typeof values.config === 'string') config = loadGatewayConfig(resolve(values.config));
  } catch (e) {
    process.stderr.write(`baton-gateway: ${e instanceof ConfigError ? e.message : String(e)}\n`);
    return 2;
  }
  const port = typeof values.port === 'string' ? Number(values.port) : config?.port;
  if (port !== undefined && (!Number.isInteger(port) || port < 0 || port > 65535)) {
    process.stderr.write('baton-gateway: --port must be a number from 0 to 65535\n');
    return 2;
  }
  const threads = typeof values['builtin-threads'] === 'string' ? Number(values['builtin-threads']) : undefined;
  if (threads !== undefined && (!Number.isInteger(threads) || threads < 1 || threads > 16)) {
    process.stderr.write('baton-gateway: --builtin-threads must be a whole number from 1 to 16\n');
    return 2;
  }
  const pace = typeof values['agent-pace-ms'] === 'string' ? Number(values['agent-pace-ms']) : 0;
  if (!Number.isInteger(pace) || pace < 0 || pace > 60_000) {
    process.stderr.write('baton-gateway: --agent-pace-ms must be a whole number of milliseconds from 0 to 60000\n');
    return 2;
  }
  const idle = typeof values['idle-stop-seconds'] === 'string' ? Number(values['idle-stop-seconds']) : 0;
  if (!Number.isInteger(idle) || idle < 0) {
    process.stderr.write('baton-gateway: --idle-stop-seconds must be a whole number of seconds (0: never)\n');
    return 2;
  }
  const maxDepth = typeof values['max-depth'] === 'string' ? Number(values['max-depth']) : config?.delegation.maxDepth;
  if (maxDepth !== undefined && (!Number.isInteger(maxDepth) || maxDepth < 0 || maxDepth > 3)) {
    process.stderr.write('baton-gateway: --max-depth must be a whole number from 0 to 3\n');
    return 2;
  }
  const maxBreadth =
    typeof values['max-breadth'] === 'string' ? Number(values['max-breadth']) : config?.delegation.maxBreadth;
  if (maxBreadth !== undefined && (!Number.isInteger(maxBreadth) || maxBreadth < 1 || maxBreadth > 100)) {
    process.stderr.write('baton-gateway: --max-breadth must be a whole number from 1 to 100\n');
    return 2;
  }
  // The flags stay over the file's guards when it is read again (SIGHUP).
  const guardFlags = {
    ...(typeof values['max-depth'] === 'string' ? { maxDepth } : {}),
    ...(typeof values['max-breadth'] === 'string' ? { maxBreadth } : {}),
  };
  const delegation = delegationOf(config?.delegation, guardFlags);
  const stateDir = resolve(typeof values.state === 'string' ? values.state : defaultStateDir());
  const roots = [...(config?.roots ?? []), ...((values.root as string[] | undefined) ?? []).map((r) => resolve(r))];

  let localAgents: LocalAgent[] = [];
  const wanted = values['no-local-agents'] ? false : (config?.localAgents ?? true);
  if (wanted !== false) {
    const cliPaths: Record<string, string> = {};
    for (const spec of (values.cli as string[] | undefined) ?? []) {
      const eq = spec.indexOf('=');
      const id = spec.slice(0, eq);
      if (eq <= 0 || !harnessById(id)) {
        process.stderr.write(
          `baton-gateway: --cli takes ID=PATH with ID one of ${HARNESSES.map((h) => h.id).join(', ')}; got "${spec}"\n`,
        );
        return 2;
      }
      cliPaths[id] = resolve(spec.slice(eq + 1));
    }
    const found = await discoverLocalAgents({
      workspaceRoot: defaultWorkspaceRoot(stateDir),
      cliPaths,
      agentPaceMs: pace,
      ...(threads !== undefined ? { builtinThreads: threads } : {}),
    });
    const without = new Set((values['no-agent'] as string[] | undefined) ?? []);
    localAgents = (wanted === true ? found : found.filter((a) => wanted.includes(a.id))).filter(
      (a) => !without.has(a.id),
    );
    if (Array.isArray(wanted)) {
      const missing = wanted.filter((id) => !found.some((a) => a.id === id));
      if (missing.length)
        process.stderr.write(
          `baton-gateway: local agent(s) not found on this machine: ${missing.join(', ')} (found: ${found.map((a) => a.id).join(', ') || 'none'})\n`,
        );
    }
  }

  const limits = config?.limits;
  let stopRequested = (): void => undefined;
  const gw = await startGateway({
    stateDir,
    onShutdownRequest: () => stopRequested(),
    ...(idle > 0 ? { idleStopMs: idle * 1000 } : {}),
    ...(typeof values.host === 'string' ? { host: values.host } : config?.host ? { host: config.host } : {}),
    ...(port !== undefined ? { port } : {}),
    ...(typeof values['public-url'] === 'string'
      ? { publicUrl: values['public-url'] }
      : config?.publicUrl
        ? { publicUrl: config.publicUrl }
        : {}),
    ...(config?.keyFile ? { keyFile: config.keyFile } : {}),
    roots,
    localAgents,
    delegation,
    remoteAgents: config?.remoteAgents ?? [],
    tokens: config?.tokens ?? [],
    ...(config?.anonymousPrincipal ? { anonymousPrincipal: config.anonymousPrincipal } : {}),
    ...(config?.store ? { store: config.store } : {}),
    ...(config?.pushAllowPrivateHosts.length ? { pushAllowPrivateHosts: config.pushAllowPrivateHosts } : {}),
    ...(config ? { retention: retentionFromConfig(config.retention) } : {}),
    limits: gatewayLimitsOf(limits),
    requestLimits: requestLimitsOf(limits),
  });
  // Which coding CLIs were looked for and where they were found, so a client can say what is missing.
  const codingClis = HARNESSES.map((h) => ({
    id: h.id,
    name: h.name,
    binaries: h.binaries,
    found: localAgents.some((a) => a.id === h.id),
  }));
  const info = {
    url: gw.url,
    tokenFile: gw.tokenFile,
    pid: process.pid,
    // Proves which gateway answers at `url` (GET /baton/instance): a pid may belong to another process by now.
    instanceId: gw.instanceId,
    agents: gw.agents.map((a) => a.id),
    clis: (values.cli as string[] | undefined) ?? [],
    codingClis,
  };
  const infoFile = join(stateDir, 'gateway.json');
  /** The info file again, with the agents served now (a reload changed them), if it still names this gateway. */
  const rewriteInfo = (): void => {
    if (namesInstance(infoFile, gw.instanceId))
      writeFileSync(infoFile, `${JSON.stringify({ ...info, agents: gw.agents.map((a) => a.id) })}\n`, { mode: 0o600 });
  };

  const configFile = typeof values.config === 'string' ? values.config : undefined;
  /** What a reload may change, as in effect (the file's at start, then as reloads change it). */
  let taken: Taken = {
    maxRunning: config?.limits?.maxRunningTasksPerPrincipal,
    retention: retentionFromConfig(config?.retention ?? {}),
    limits: taskLimitsWords(gatewayLimitsOf(limits)),
    delegation: delegationWords(delegation),
    requests: requestLimitsWords(requestLimitsOf(limits)),
  };
  let stopping = false;
  const reload = (why: string): void => {
    if (!configFile || stopping) return;
    const r = reloadConfig(configFile, config, taken, gw, guardFlags, why);
    taken = r.taken;
    if (r.agentsChanged) rewriteInfo();
    process.stderr.write(`baton-gateway: ${r.line}\n`);
  };
  // --watch-config: the file is read again when it changes, as on SIGHUP (where no signal can be
  // sent: Windows, or a container whose config is a mounted file replaced in place).
  const unwatch = configFile && values['watch-config'] ? watchConfig(resolve(configFile), reload) : undefined;
  // With a config file (a server's way) a hangup reads it again. Without one it stops the gateway
  // (cleanly, as SIGTERM does), as a hangup ends any program started from a terminal that closes.
  // Once stopping, a hangup is ignored: the stop goes on. Windows has no SIGHUP to send: a restart
  // (several instances behind a balancer: one at a time) does it there.
  const stopped = new Promise<void>((done) => {
    const stop = (): void => {
      if (stopping) return;
      stopping = true;
      // A second SIGTERM or SIGINT (Ctrl-C twice) ends the process at once, as it does by default.
      process.off('SIGTERM', stop);
      process.off('SIGINT', stop);
      done();
    };
    stopRequested = stop;
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
    if (process.platform !== 'win32') process.on('SIGHUP', configFile ? () => reload('SIGHUP') : stop);
  });
  // Only once the signals are handled: a supervisor may send one as soon as it reads either (a
  // SIGHUP before its handler ended the process, as a hangup does by default).
  writeFileSync(infoFile, `${JSON.stringify(info)}\n`, { mode: 0o600 });
  process.stdout.write(`${JSON.stringify(info)}\n`);
  await stopped;
  unwatch?.();
  await gw.close();
  // Only once everything is stopped, so a client waiting for the file to go knows the tasks have ended;
  // and only if it is still ours (a gateway started meanwhile has written its own).
  if (namesInstance(infoFile, gw.instanceId)) rmSync(infoFile, { force: true });
  return 0;
}

/** How often `--watch-config` looks at the file, and how long it waits for a change to settle. */
const WATCH_INTERVAL_MS = 1000;
const WATCH_SETTLE_MS = 300;

/**
 * Calls `reload` when the file's contents change: its status is polled (`fs.watchFile`), which sees a
 * file replaced through a symbolic link (a Kubernetes ConfigMap), on a network share and on Windows,
 * where change events do not always come. A change is taken once it has settled (an editor may write
 * a file in steps), and only when the text differs from the text last taken. Answers how to stop.
 */
function watchConfig(file: string, reload: (why: string) => void): () => void {
  const text = (): string | undefined => {
    try {
      return readFileSync(file, 'utf8');
    } catch {
      return undefined;
    }
  };
  let last = text();
  let settle: NodeJS.Timeout | undefined;
  watchFile(file, { interval: WATCH_INTERVAL_MS, persistent: false }, () => {
    clearTimeout(settle);
    settle = setTimeout(() => {
      const now = text();
      if (now === last) return;
      last = now;
      reload('config file changed');
    }, WATCH_SETTLE_MS);
  });
  return () => {
    clearTimeout(settle);
    unwatchFile(file);
  };
}

/** A per-member limit in words (undefined: none). */
const limitWords = (n: number | undefined): string => (n === undefined ? 'no limit' : String(n));

/** What a running gateway takes from its config file again on SIGHUP, besides the tokens and agents. */
interface Taken {
  readonly maxRunning: number | undefined;
  readonly retention: RetentionPolicy;
  /** The per-task limits in effect, in words (`taskLimitsWords`). */
  readonly limits: string;
  /** The delegation guards in effect, in words (`delegationWords`). */
  readonly delegation: string;
  /** The request limits in effect, in words (`requestLimitsWords`). */
  readonly requests: string;
}

/** The guards of agent-started delegations a config gives, with the command line's over them. */
function delegationOf(
  d: GatewayConfig['delegation'] | undefined,
  flags: { readonly maxDepth?: number; readonly maxBreadth?: number },
): Partial<DelegationPolicy> {
  const maxDepth = flags.maxDepth ?? d?.maxDepth;
  const maxBreadth = flags.maxBreadth ?? d?.maxBreadth;
  return {
    ...(maxDepth !== undefined ? { maxDepth } : {}),
    ...(maxBreadth !== undefined ? { maxBreadth } : {}),
    ...(d?.burst ? { burst: { max: d.burst.max, windowMs: d.burst.windowSeconds * 1000 } } : {}),
    ...(d?.consent ? { consent: d.consent } : {}),
    ...(d?.consentTimeoutSeconds ? { consentTimeoutMs: d.consentTimeoutSeconds * 1000 } : {}),
  };
}

/** Request limits (what a config leaves out: the defaults) in words, for the SIGHUP line. */
export function requestLimitsWords(given: Partial<RequestLimits>): string {
  const l: RequestLimits = { ...DEFAULT_REQUEST_LIMITS, ...given };
  const size = l.maxBytes % (1024 * 1024) === 0 ? `${l.maxBytes / (1024 * 1024)} MiB` : `${l.maxBytes} bytes`;
  return `body ${size}, JSON ${l.maxDepth} deep and ${l.maxMembers} members, headers within ${span(l.headersTimeoutMs)}, body within ${span(l.totalMs)} (idle ${span(l.idleMs)})`;
}

/** A length of time in words: whole minutes as minutes, else seconds. */
const span = (ms: number): string => (ms >= 60_000 && ms % 60_000 === 0 ? `${ms / 60_000} min` : `${ms / 1000} s`);

/** Per-task limits (what a config leaves out: the defaults) in words, for the SIGHUP line. */
export function taskLimitsWords(given: Partial<TaskLimits>): string {
  const l: TaskLimits = { ...DEFAULT_LIMITS, ...given };
  const caps = (['write', 'shell', 'network'] as const).map((k) => (l.capabilities[k] ? k : `no ${k}`)).join(', ');
  return `capabilities ${caps}, deadline ${span(l.defaultDeadlineMs)} (at most ${span(l.maxDeadlineMs)}), cancel grace ${span(l.cancelGraceMs)}`;
}

/** Delegation guards (what a config leaves out: the defaults) in words, for the SIGHUP line. */
export function delegationWords(given: Partial<DelegationPolicy>): string {
  const p: DelegationPolicy = { ...DEFAULT_DELEGATION_POLICY, ...given };
  const consent = Object.entries(p.consent)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([id, v]) => `${id} ${v}`)
    .join(', ');
  return `depth ${p.maxDepth}, ${p.maxBreadth} per task, ${p.burst.max} per ${span(p.burst.windowMs)}, consent ${consent || 'asked'} (${span(p.consentTimeoutMs)} to answer)`;
}

/** What a reload did to the remote agents, in words (nothing when it did nothing). */
export function agentChangeWords(c: AgentChange): string[] {
  const ids = (list: readonly string[]): string => list.join(', ');
  const parts: string[] = [];
  if (c.added.length) parts.push(`agents added: ${ids(c.added)}`);
  if (c.retired.length)
    parts.push(`agents removed: ${ids(c.retired)} (no new tasks; the tasks they have go on and can be read)`);
  if (c.restored.length) parts.push(`agents back: ${ids(c.restored)}`);
  if (c.credentials.length) parts.push(`new credentials for ${ids(c.credentials)}`);
  if (c.changed.length)
    parts.push(
      `other settings of ${ids(c.changed)} changed and take effect at the next start (only auth is taken now)`,
    );
  if (c.refused.length) parts.push(`agents not added: ${ids(c.refused)}`);
  return parts;
}

/**
 * Reads the config file again and takes what a running gateway can take: its tokens (`setTokens`), its
 * remote agents (`setRemoteAgents`), its per-task limits, the per-member limit of running tasks, its
 * request limits, the delegation guards and the retention policy (a pass runs with it at once). Says in one line what changed, or why nothing did (a file that no longer
 * reads: everything stays as it was). Other settings that changed are said to wait for the next start.
 * Answers what is in effect after it, and whether the agents served changed.
 */
function reloadConfig(
  file: string,
  started: GatewayConfig | undefined,
  taken: Taken,
  gw: Pick<
    RunningGateway,
    | 'setTokens'
    | 'setMaxRunningPerPrincipal'
    | 'setRetention'
    | 'setRemoteAgents'
    | 'setTaskLimits'
    | 'setDelegationPolicy'
    | 'setRequestLimits'
  >,
  guardFlags: { readonly maxDepth?: number; readonly maxBreadth?: number },
  why = 'SIGHUP',
): { line: string; taken: Taken; agentsChanged: boolean } {
  let next: GatewayConfig;
  try {
    next = loadGatewayConfig(resolve(file));
  } catch (e) {
    return {
      line: `${why}: cannot read ${file} again (${e instanceof ConfigError ? e.message : String(e)}); the tokens, agents, limits and retention stay as they were`,
      taken,
      agentsChanged: false,
    };
  }
  const change = gw.setTokens(next.tokens);
  const names = (list: readonly string[]): string => [...new Set(list)].sort().join(', ');
  const parts = [`${why}: tokens read again from ${file}: ${change.count} accepted`];
  if (change.added.length) parts.push(`new for ${names(change.added)}`);
  if (change.removed.length) parts.push(`no longer accepted for ${names(change.removed)}`);
  if (!change.added.length && !change.removed.length) parts.push('unchanged');
  const agents = gw.setRemoteAgents(next.remoteAgents);
  parts.push(...agentChangeWords(agents));
  const limit = next.limits?.maxRunningTasksPerPrincipal;
  if (limit !== taken.maxRunning) {
    gw.setMaxRunningPerPrincipal(limit);
    parts.push(`running tasks per member: ${limitWords(limit)} (was ${limitWords(taken.maxRunning)})`);
  }
  const taskLimits = gatewayLimitsOf(next.limits);
  const limits = taskLimitsWords(taskLimits);
  if (limits !== taken.limits) {
    gw.setTaskLimits(taskLimits);
    parts.push(`task limits: ${limits} (was ${taken.limits}), for tasks started from now on`);
  }
  const guards = delegationOf(next.delegation, guardFlags);
  const delegation = delegationWords(guards);
  let guardsTaken = delegation;
  if (delegation !== taken.delegation) {
    try {
      gw.setDelegationPolicy(guards);
      parts.push(`delegation guards: ${delegation} (was ${taken.delegation})`);
    } catch (e) {
      // Out of bounds (the file's reader checks them too): the guards in effect stay, and the line says why.
      guardsTaken = taken.delegation;
      parts.push(`delegation guards not taken (${(e as Error).message}); still ${taken.delegation}`);
    }
  }
  const requestLimits = requestLimitsOf(next.limits);
  const requests = requestLimitsWords(requestLimits);
  if (requests !== taken.requests) {
    gw.setRequestLimits(requestLimits);
    parts.push(`request limits: ${requests} (was ${taken.requests}), for requests from now on`);
  }
  const retention = retentionFromConfig(next.retention);
  if ((Object.keys(retention) as (keyof RetentionPolicy)[]).some((k) => retention[k] !== taken.retention[k])) {
    gw.setRetention(retention);
    parts.push(`retention: ${retentionWords(retention)} (was ${retentionWords(taken.retention)}), a pass runs now`);
  }
  // What a running gateway cannot take: everything but the tokens, the remote agents (whose other
  // changes `agentChangeWords` names), the limits, the delegation guards and retention.
  const rest = (c: GatewayConfig | undefined): string =>
    JSON.stringify({
      ...c,
      tokens: undefined,
      remoteAgents: undefined,
      retention: undefined,
      delegation: undefined,
      // Every limit is taken again (the per-task ones, the per-member one and the request limits).
      limits: undefined,
    });
  const line = parts.join('; ');
  return {
    line:
      rest(next) === rest(started) ? line : `${line}. Other settings changed in the file take effect at the next start`,
    taken: { maxRunning: limit, retention, limits, delegation: guardsTaken, requests },
    agentsChanged: agents.added.length + agents.retired.length + agents.restored.length > 0,
  };
}

function namesInstance(file: string, instanceId: string): boolean {
  try {
    return (JSON.parse(readFileSync(file, 'utf8')) as { instanceId?: unknown }).instanceId === instanceId;
  } catch {
    return false;
  }
}

const heapNote = applyHeapGrowth();
if (heapNote) process.stderr.write(`baton-gateway: ${heapNote}\n`);

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (e: unknown) => {
    process.stderr.write(`baton-gateway: ${(e as Error).message ?? String(e)}\n`);
    process.exitCode = 1;
  },
);
