/**
 * `startGateway`: the whole gateway in one call, for the `baton-gateway` program, the extension's
 * supervisor and tests. Binds 127.0.0.1 unless told otherwise; every route but the public cards needs
 * a bearer token; tasks a dead process left running are recorded as "unknown outcome" on start.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync } from 'node:fs';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { hostname } from 'node:os';
import { join } from 'node:path';
import express from 'express';
import type { NextFunction, Request, Response } from 'express';
import { AgentCard } from '@a2a-js/sdk';
import type { AgentCardSignature } from '@a2a-js/sdk';
import { loadOrCreateSigningKey, loadSigningKey, signAgentCard, signResultEnvelope } from '../node/signing';
import type { SigningKey } from '../node/signing';
import type { Capabilities, LocalAgent } from './agents/localAgent';
import { AgentRoute, checkAgentIds, IndexRoute, RouteTable } from './agentRoute';
import type { RouteSite } from './agentRoute';
import { ensureLocalToken, LOCAL_PRINCIPAL, TokenAuthenticator } from './auth';
import type { TokenChange } from './auth';
import { GATEWAY_VERSION } from './cards';
import type { CardKeys, IndexedAgent } from './cards';
import type { RemoteAgentConfig, StoreConfig, TokenConfig } from './config';
import { isLoopbackHost, sha256HexOf } from './config';
import { ClaimReleases } from './claimReleases';
import type { GatewayContext, GatewayLimits } from './gatewayContext';
import { cardDigest, checkDelegationPolicy, ChildBroker, DEFAULT_DELEGATION_POLICY } from './delegation/childBroker';
import type { DelegationPolicy } from './delegation/childBroker';
import { controlRouter } from './http/controlRoutes';
import { DEFAULT_BODY_LIMITS } from './http/jsonBody';
import type { BodyLimits } from './http/jsonBody';
import { isInstanceAlive, livenessFor } from './instanceLiveness';
import type { Liveness } from './instanceLiveness';
import { readiness } from './readiness';
import { RunQueue } from './runQueue';
import type { Turns } from './runQueue';
import { hasSharedTurns, SharedTurns } from './sharedTurns';
import { DEFAULT_RETENTION, INSTANCE_FORGET_MS, startRetention } from './retention';
import type { RetentionJob, RetentionPassResult, RetentionPolicy } from './retention';
import { LiveRoots } from './liveRoots';
import { PushingEventHub, PushNotifier } from './pushNotifier';
import type { PushOptions } from './pushNotifier';
import { openStore } from './store/openStore';
import { WorkspaceSweeper } from './workspace/workspaceSweeper';
import type { GatewayStore } from './store/gatewayStore';
import { StoreUnavailableError } from './store/gatewayStore';
import type { OrphanFound, TaskRunner } from './taskRunner';
import { isTerminal } from '../core/taskStates';
import { canonicalize } from '../core/jcs';

export interface GatewayOptions {
  /** Keys, the local token and the SQLite store live here (created 0700). */
  readonly stateDir: string;
  readonly host?: string;
  /** 0 (default) picks a free port. */
  readonly port?: number;
  /** The URL clients reach the gateway at, when it is behind a proxy; default http://<host>:<port>. */
  readonly publicUrl?: string;
  /**
   * The signing key to use instead of `<stateDir>/gateway-key.jwk`; it must exist (instances of one team
   * gateway share it, so none may make its own).
   */
  readonly keyFile?: string;
  /** Folders whose repositories requests may name (more are added and removed at run time: POST /baton/roots). */
  readonly roots?: readonly string[];
  /**
   * What `POST /baton/shutdown` (and the idle stop) does once answered; default: close the gateway.
   * The `baton-gateway` program passes its own clean exit.
   */
  readonly onShutdownRequest?: (why: string) => void;
  /** Stop (as a shutdown request does) after this long with no roots and no running task; default never. */
  readonly idleStopMs?: number;
  readonly localAgents?: readonly LocalAgent[];
  readonly remoteAgents?: readonly RemoteAgentConfig[];
  /** Team tokens; the local token (principal "local") is always created in stateDir/token. */
  readonly tokens?: readonly TokenConfig[];
  /** Requests without a token are this principal; refused unless the gateway binds a loopback address. */
  readonly anonymousPrincipal?: string;
  readonly store?: StoreConfig;
  readonly sqliteDriver?: 'auto' | 'node:sqlite' | 'better-sqlite3';
  readonly limits?: Partial<GatewayLimits>;
  /** Same as `requestLimits.maxBytes`. */
  readonly maxBodyBytes?: number;
  /** Per-request limits for every client, authenticated or not (defaults: DEFAULT_REQUEST_LIMITS). */
  readonly requestLimits?: Partial<RequestLimits>;
  /**
   * Hosts push-notification webhooks may use although their addresses are private (http allowed for
   * them too): `name`, `.domain` or `host:port`, as baton.privateHosts. Default none: public https only.
   */
  readonly pushAllowPrivateHosts?: readonly string[];
  /** Push delivery tuning (deadline, attempts, backoff); `resolve` and `testHooks` are for tests only. */
  readonly push?: Omit<PushOptions, 'allowPrivateHosts'>;
  readonly log?: (line: string) => void;
  /** How often a proxied remote's own card is read again (default 10 minutes); tests shorten it. */
  readonly remoteCardRefreshMs?: number;
  /** The guards of delegations agents start (defaults: DEFAULT_DELEGATION_POLICY). */
  readonly delegation?: Partial<DelegationPolicy>;
  /**
   * How a coding CLI the gateway runs starts `baton mcp` (argv), to delegate through this gateway with
   * its task's token. Default: this runtime with `baton.js` beside the gateway's own script, when it is
   * there; without either, coding CLIs get no way to delegate.
   */
  readonly mcpCommand?: readonly string[];
  /** What is kept of finished tasks, and how often that is enforced (defaults: DEFAULT_RETENTION). */
  readonly retention?: Partial<RetentionPolicy>;
}

export interface RunningGateway {
  readonly url: string;
  /** The local principal's bearer token (also in tokenFile). */
  readonly token: string;
  readonly tokenFile: string;
  readonly port: number;
  readonly store: GatewayStore;
  readonly instanceId: string;
  readonly agents: readonly IndexedAgent[];
  /**
   * Replaces the team's tokens (`opts.tokens`; the local principal's own stays): a config reloaded
   * while the gateway runs. Requests already admitted go on.
   */
  setTokens(tokens: readonly TokenConfig[]): TokenChange;
  /**
   * Changes `limits.maxRunningPerPrincipal` (undefined: no limit), as a reloaded config says: runs
   * going on go on, and waiting tasks get the turns a higher limit frees.
   */
  setMaxRunningPerPrincipal(limit: number | undefined): void;
  /**
   * Takes a new retention policy (a reloaded config's `retention`): a pass runs with it at once, so a
   * lowered size cap makes room now; `GET /baton/instance` reports the new cap.
   */
  setRetention(policy: RetentionPolicy): void;
  /**
   * Takes a reloaded config's remote agents (`remoteAgents`): new ones are served at once, removed ones
   * are retired (no new tasks; their tasks go on), and one removed earlier and back as it was is
   * restored. A remote's new credentials are taken; any other change to an agent waits for the next
   * start. The index card (and `agents`) follow.
   */
  setRemoteAgents(remotes: readonly RemoteAgentConfig[]): AgentChange;
  /**
   * Takes a reloaded config's per-task limits (`TaskLimits`; what it leaves out: the defaults): tasks
   * started from then on are held to them, tasks running keep what they were given, and a cancel
   * from then on waits the new grace.
   */
  setTaskLimits(limits: Partial<TaskLimits>): void;
  /**
   * Takes a reloaded config's guards of agent-started delegations (what it leaves out: the defaults):
   * the next delegation is checked against them. Throws for guards out of bounds (nothing changes).
   */
  setDelegationPolicy(policy: Partial<DelegationPolicy>): void;
  /**
   * Takes a reloaded config's request limits (what it leaves out: the defaults): requests from then on
   * are held to them (their bodies' size, shape and time, their headers' time); a body being read
   * meets the new size and idle limits from its next chunk.
   */
  setRequestLimits(given: Partial<RequestLimits>): void;
  close(): Promise<void>;
}

/** What `setRemoteAgents` did, by agent id. */
export interface AgentChange {
  readonly added: readonly string[];
  /** Removed from the config: no new tasks, their tasks go on. */
  readonly retired: readonly string[];
  /** Retired earlier, back in the config as they were: they take new tasks again. */
  readonly restored: readonly string[];
  /** Their credentials (`auth`) were replaced. */
  readonly credentials: readonly string[];
  /** Other settings changed: the agent stays as it was until the next start. */
  readonly changed: readonly string[];
  /** Not added, each with why (the id of a local agent). */
  readonly refused: readonly string[];
}

/** The limits a config read again may change: what each task gets, and how long a cancel waits. */
export type TaskLimits = Pick<GatewayLimits, 'capabilities' | 'defaultDeadlineMs' | 'maxDeadlineMs' | 'cancelGraceMs'>;

/** What one request may cost: its headers' time, and its body's size, shape and time (jsonBody.ts). */
export interface RequestLimits extends BodyLimits {
  /** Longest time for a request's headers to arrive. */
  readonly headersTimeoutMs: number;
}

export const DEFAULT_REQUEST_LIMITS: RequestLimits = { ...DEFAULT_BODY_LIMITS, headersTimeoutMs: 30_000 };

export const DEFAULT_LIMITS: TaskLimits = {
  capabilities: { write: true, shell: false, network: false } satisfies Capabilities,
  defaultDeadlineMs: 30 * 60_000,
  maxDeadlineMs: 4 * 3600_000,
  cancelGraceMs: 5_000,
};

export async function startGateway(opts: GatewayOptions): Promise<RunningGateway> {
  const log = opts.log ?? ((l: string) => process.stderr.write(`baton-gateway: ${l}\n`));
  checkAgentIds(opts.localAgents ?? [], opts.remoteAgents ?? []);
  const policy: DelegationPolicy = { ...DEFAULT_DELEGATION_POLICY, ...(opts.delegation ?? {}) };
  checkDelegationPolicy(policy);
  mkdirSync(opts.stateDir, { recursive: true, mode: 0o700 });
  chmodSync(opts.stateDir, 0o700);
  const tokenFile = join(opts.stateDir, 'token');
  const token = ensureLocalToken(tokenFile);
  if (opts.anonymousPrincipal && !isLoopbackHost(opts.host ?? '127.0.0.1')) {
    throw new Error(
      `requests without a token are allowed only on a loopback address, not ${opts.host}: give every client a token instead`,
    );
  }
  const local: TokenConfig = { principal: LOCAL_PRINCIPAL, sha256: sha256HexOf(token) };
  const auth = new TokenAuthenticator([local, ...(opts.tokens ?? [])], opts.anonymousPrincipal);
  const roots = new LiveRoots(opts.roots ?? []);
  // Routes are known once the server listens; the broker asks for them late.
  const late: { routes?: ReadonlyMap<string, AgentRoute> } = {};

  const store = await openStore(opts.store ?? { kind: 'sqlite' }, opts.stateDir, opts.sqliteDriver, log);
  const push = new PushNotifier(
    store,
    { ...(opts.push ?? {}), allowPrivateHosts: opts.pushAllowPrivateHosts ?? [] },
    log,
  );
  const hub = new PushingEventHub((agent, taskId, notice) => push.onCommit(agent, taskId, notice.state));
  store.onRemoteAppend((agent, taskId) => hub.publish(agent, taskId, undefined));
  store.onMissedAppends?.(() => hub.publishAll(undefined));
  const instanceId = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  const takeOverAfter = opts.store?.kind === 'postgres' ? opts.store.takeOverAfterSeconds : undefined;
  const liveness = livenessFor(takeOverAfter === undefined ? undefined : takeOverAfter * 1000);
  /** When the store last took this instance's heartbeat: `GET /baton/ready` goes by it. */
  let lastBeatAt = 0;
  const beat = async (): Promise<void> => {
    await store.heartbeat(instanceId, hostname(), process.pid);
    lastBeatAt = Date.now();
  };
  await beat();
  const heartbeat = setInterval(
    () =>
      void beat()
        // An unavailable store says so itself, once per outage.
        .catch((e: unknown) => e instanceof StoreUnavailableError || log(`heartbeat failed: ${String(e)}`)),
    liveness.heartbeatMs,
  );
  heartbeat.unref();
  // Aborted once close() begins (or a failed start lets go of everything): nothing new is started.
  const stopping = new AbortController();
  const orphanSweep: { timer?: NodeJS.Timeout } = {};
  const claims = new ClaimReleases(store, log);
  const stop = (): void => {
    stopping.abort();
    claims.close();
    clearInterval(heartbeat);
    clearInterval(orphanSweep.timer);
    clearInterval(idle.timer);
  };
  let shutdownAsked = false;
  const shutdown = (why: string): void => {
    if (shutdownAsked || stopping.signal.aborted) return;
    shutdownAsked = true;
    log(`stopping: ${why}`);
    if (opts.onShutdownRequest) opts.onShutdownRequest(why);
    else void running.close();
  };
  // Started once the gateway is whole (a stop it asks for closes it).
  const idle: { timer?: NodeJS.Timeout } = {};
  let retentionPolicy: RetentionPolicy = { ...DEFAULT_RETENTION, ...(opts.retention ?? {}) };
  if (!(retentionPolicy.intervalMs >= 1)) throw new Error('retention.intervalMs must be at least 1 ms');
  let lastRetention: { readonly at: number; readonly result: RetentionPassResult } | undefined;
  // Started once the gateway is whole; stopped (a pass in progress finishes its step) before the store closes.
  const retention: { job?: RetentionJob } = {};
  const release = async (): Promise<void> => {
    stop();
    await retention.job?.stop();
    await push.close();
    await store.close();
  };

  // The gateway's Ed25519 key (0600, created on first start unless a shared one is named): signs its
  // cards and every result envelope.
  const signingKey = await signingKeyOf(opts).catch(async (e: unknown) => {
    await release();
    throw e;
  });
  // One object, changed in place when a config read again changes them (`setRequestLimits`): the body
  // readers and the server's timers read it per request.
  const requestLimits: { -readonly [K in keyof RequestLimits]: RequestLimits[K] } = {
    ...DEFAULT_REQUEST_LIMITS,
    ...(opts.maxBodyBytes ? { maxBytes: opts.maxBodyBytes } : {}),
    ...(opts.requestLimits ?? {}),
  };

  // The server listens first: the routes, their cards and the envelopes' issuer are made from the
  // address it got. A request that arrives meanwhile waits for them.
  const host = opts.host ?? '127.0.0.1';
  const app = gatewayApp();
  const server = httpServer(app, requestLimits);
  const listening = listen(server, host, opts.port ?? 0).catch(async (e: unknown) => {
    // Nothing is served: let go of what was opened, so the process can exit with the reason.
    await release();
    throw listenError(e, host, opts.port ?? 0);
  });
  const children = new ChildBroker(policy, {
    store,
    hub,
    log,
    auditFile: join(opts.stateDir, 'audit.jsonl'),
    describe: (agentId) => {
      const route = late.routes?.get(agentId);
      if (!route) return undefined;
      const card = route.runner.baseCard();
      return { name: route.indexed.name, digest: cardDigest(card) };
    },
    cancel: async (agentId, taskId) => {
      const route = late.routes?.get(agentId);
      const row = route ? await store.getTask(agentId, taskId) : undefined;
      if (route && row && !isTerminal(row.state)) await route.runner.cancel(row);
    },
  });
  auth.setRuntimeTokens((t) => children.principalForToken(t));
  const managers = new Set((opts.localAgents ?? []).flatMap((a) => (a.workspaces ? [a.workspaces] : [])));
  const sweeper = new WorkspaceSweeper({ managers: [...managers], store, instanceId, log });
  // Each principal's local runs at once: one line per instance (SQLite), or shared by the instances.
  const maxRunning = opts.limits?.maxRunningPerPrincipal ?? 0;
  const runs: Turns = hasSharedTurns(store)
    ? new SharedTurns(maxRunning, store, instanceId, liveness, log)
    : new RunQueue(maxRunning);
  // Replaced whole when a config read again changes them (`setTaskLimits`); read where they apply.
  let limits: GatewayLimits = { ...DEFAULT_LIMITS, ...(opts.limits ?? {}) };
  const started = listening.then(async (port) => {
    const baseUrl = (opts.publicUrl ?? `http://${urlHost(host)}:${port}`).replace(/\/+$/, '');
    const mcpCommand = mcpCommandFor(opts);
    const site: RouteSite = { baseUrl, keys: cardKeys(signingKey), tokenRequired: !opts.anonymousPrincipal };
    const ctx: GatewayContext = {
      store,
      hub,
      instanceId,
      identity: `baton-gateway:${signingKey.kid}`,
      // Read at every request: the folders served now.
      get roots() {
        return roots.list;
      },
      get limits() {
        return limits;
      },
      liveness,
      claims,
      runs,
      children,
      ...(mcpCommand ? { mcp: { command: mcpCommand, gatewayUrl: `http://${urlHost(host)}:${port}` } } : {}),
      signEnvelope: (body) =>
        signResultEnvelope({ v: 1, issuer: baseUrl, ...body, issuedAt: new Date().toISOString() }, signingKey),
      log,
    };
    const table = new RouteTable({ auth, bodyLimits: requestLimits, log });
    // Ids and paths were checked to be unique (`checkAgentIds`).
    for (const route of agentRoutes(site, ctx, opts, push)) table.add(route);
    const routes = table.routes;
    late.routes = routes;
    try {
      await recoverOrphans(store, instanceId, liveness, routes, log, 'restart');
      // After the orphans are recorded: their tasks have ended, so their workspaces go.
      await sweeper.start();
    } catch (e) {
      sweeper.stop();
      await Promise.all([...routes.values()].map((r) => r.runner.close()));
      await closeServer(server);
      await release();
      throw e;
    }
    // Instances long gone (recovered above) need no row; a start a minute makes many.
    await store
      .pruneInstances(Date.now() - INSTANCE_FORGET_MS)
      .catch((e: unknown) => log(`cannot forget stopped instances: ${(e as Error).message}`));
    // Another instance was asked to cancel a task this one runs: cancel it here, the only writer.
    store.onCancelRequest(instanceId, (agent, taskId) => {
      if (!stopping.signal.aborted) void cancelOwnTask(store, instanceId, routes, agent, taskId, log);
    });
    // A shared store: an instance that dies while the others run leaves orphans nobody restarts for.
    // Each heartbeat, live instances look for them, and one takes each over.
    if (store.takeOver) {
      const skipped = new Set<string>();
      let sweeping = false;
      orphanSweep.timer = setInterval(() => {
        if (sweeping || stopping.signal.aborted) return;
        sweeping = true;
        recoverOrphans(store, instanceId, liveness, routes, log, 'takeover', skipped)
          .catch(
            (e: unknown) =>
              e instanceof StoreUnavailableError || log(`looking for tasks of stopped instances failed: ${String(e)}`),
          )
          .finally(() => (sweeping = false));
      }, liveness.heartbeatMs);
      orphanSweep.timer.unref();
    }
    const index = new IndexRoute(site, table.listed());
    const setRemoteAgents = (remotes: readonly RemoteAgentConfig[]): AgentChange => {
      const change = reconcileRemotes(table, remotes, {
        make: (cfg) => AgentRoute.remote(site, ctx, cfg, { refreshMs: opts.remoteCardRefreshMs, push }),
        why: (id) =>
          `the agent "${id}" was removed from this gateway's configuration: it takes no new tasks. Its tasks go on, and can still be read, answered and canceled here; the agents this gateway serves are listed at ${baseUrl}/.well-known/agent-card.json`,
      });
      if (change.added.length || change.retired.length || change.restored.length) index.setAgents(table.listed());
      return change;
    };
    const control = controlRouter({
      auth,
      ready: () =>
        readiness({
          stopping: stopping.signal.aborted,
          lastBeatAt,
          heartbeatMs: liveness.heartbeatMs,
          now: Date.now(),
        }),
      localToken: token,
      bodyLimits: requestLimits,
      instance: () => ({ instanceId, version: GATEWAY_VERSION, pid: process.pid, roots: roots.list }),
      storeInfo: async () => ({
        kind: store.kind,
        sizeBytes: await store.size(),
        maxBytes: retentionPolicy.maxStoreBytes > 0 ? retentionPolicy.maxStoreBytes : null,
        ...(lastRetention
          ? {
              lastRetention: {
                at: new Date(lastRetention.at).toISOString(),
                compacted: lastRetention.result.compacted,
                deleted: lastRetention.result.deleted,
              },
            }
          : {}),
      }),
      roots,
      answerConsent: (id, allow) => children.answerConsent(id, allow),
      shutdown,
      log,
    });
    return { port, baseUrl, table, setRemoteAgents, router: routesRouter(index, table, control) };
  });
  app.use((req: Request, res: Response, next: NextFunction) => {
    started.then(({ router }) => router(req, res, next), next);
  });
  app.use(errorHandler(log));

  const { port, baseUrl, table, setRemoteAgents } = await started;
  const routes = table.routes;
  // In the background: a remote that is slow or down neither delays nor fails the start.
  for (const route of routes.values()) route.start();
  // In the background too: a claim a dead instance left unbound is looked for at its remote.
  void resolveUnboundClaims(store, routes, stopping.signal, log);

  const running: RunningGateway = {
    url: baseUrl,
    token,
    tokenFile,
    port,
    store,
    instanceId,
    get agents() {
      return table.listed();
    },
    setRemoteAgents,
    setRequestLimits: (given) => {
      Object.assign(requestLimits, DEFAULT_REQUEST_LIMITS, given);
      Object.assign(server, serverTimeouts(requestLimits));
    },
    setTaskLimits: (taken) => {
      limits = {
        ...limits,
        capabilities: taken.capabilities ?? DEFAULT_LIMITS.capabilities,
        defaultDeadlineMs: taken.defaultDeadlineMs ?? DEFAULT_LIMITS.defaultDeadlineMs,
        maxDeadlineMs: taken.maxDeadlineMs ?? DEFAULT_LIMITS.maxDeadlineMs,
        cancelGraceMs: taken.cancelGraceMs ?? DEFAULT_LIMITS.cancelGraceMs,
      };
    },
    setDelegationPolicy: (taken) => children.setPolicy({ ...DEFAULT_DELEGATION_POLICY, ...taken }),
    setMaxRunningPerPrincipal: (limit) => runs.setLimit(limit ?? 0),
    setRetention: (policy) => {
      retention.job?.setPolicy(policy);
      retentionPolicy = policy;
    },
    setTokens: (tokens) => {
      const change = auth.setTokens([local, ...tokens]);
      return { count: change.count - 1, added: change.added, removed: change.removed };
    },
    async close(): Promise<void> {
      if (stopping.signal.aborted) return;
      stop();
      children.close();
      await Promise.all([...routes.values()].map((r) => r.stopWatching()));
      const closing = new Promise<void>((r) => server.close(() => r()));
      await Promise.all([...routes.values()].map((r) => r.runner.close()));
      server.closeAllConnections();
      await closing;
      await sweeper.close();
      await retention.job?.stop();
      // A clean stop leaves no row behind, unless this instance still owns an unfinished task.
      await store
        .pruneInstances(Date.now() - INSTANCE_FORGET_MS, instanceId)
        .catch((e: unknown) => log(`cannot remove this instance's row: ${(e as Error).message}`));
      // After the runners: the states a shutdown records are delivered too (for a bounded while).
      await release();
    },
  };
  idle.timer = watchIdle(opts.idleStopMs, () => isIdle(store, instanceId, roots), shutdown, log);
  retention.job = startRetention(store, retentionPolicy, log, (result, at) => {
    lastRetention = { at, result };
  });
  return running;
}

/** The shared key named by `keyFile` (never created here), else the state folder's own. */
async function signingKeyOf(opts: GatewayOptions): Promise<SigningKey> {
  if (!opts.keyFile) return loadOrCreateSigningKey(join(opts.stateDir, 'gateway-key.jwk'));
  try {
    return await loadSigningKey(opts.keyFile);
  } catch (e) {
    throw new Error(
      `${(e as Error).message}. keyFile names the key every instance shares: copy one gateway's <state>/gateway-key.jwk there (mode 0600) on each host`,
    );
  }
}

/** The argv that starts `baton mcp` for a coding CLI this gateway runs, if there is one. */
function mcpCommandFor(opts: GatewayOptions): readonly string[] | undefined {
  if (opts.mcpCommand) return opts.mcpCommand.length ? opts.mcpCommand : undefined;
  const beside = join(__dirname, 'baton.js');
  return existsSync(beside) ? [process.execPath, beside, 'mcp'] : undefined;
}

/** Checks now and then whether the gateway is idle, and asks it to stop once it has been for `idleMs`. */
function watchIdle(
  idleMs: number | undefined,
  idle: () => Promise<boolean>,
  shutdown: (why: string) => void,
  log: (line: string) => void,
): NodeJS.Timeout | undefined {
  if (!idleMs || idleMs <= 0) return undefined;
  let since: number | undefined;
  const timer = setInterval(
    () =>
      void idle().then(
        (now) => {
          since = now ? (since ?? Date.now()) : undefined;
          if (since !== undefined && Date.now() - since >= idleMs)
            shutdown(`idle for ${Math.round(idleMs / 1000)} s: no folders to serve and no running task`);
        },
        (e: unknown) => log(`idle check failed: ${String(e)}`),
      ),
    Math.max(50, Math.min(30_000, Math.floor(idleMs / 4))),
  );
  timer.unref();
  return timer;
}

/** No window needs the gateway: it serves no folder and runs no task. */
async function isIdle(store: GatewayStore, self: string, roots: LiveRoots): Promise<boolean> {
  if (roots.list.length > 0) return false;
  return !(await store.listOwnedUnfinished()).some((row) => row.owner === self);
}

/** Why the gateway could not listen, and what to do about it. */
function listenError(e: unknown, host: string, port: number): Error {
  const code = (e as { code?: unknown }).code;
  if (code === 'EADDRINUSE')
    return new Error(
      `${host}:${port} is already in use; stop what listens there or choose another port (--port, "port"; 0 picks a free one)`,
    );
  if (code === 'EACCES')
    return new Error(`not allowed to listen on ${host}:${port}; choose a port above 1023 (--port, "port")`);
  if (code === 'EADDRNOTAVAIL') return new Error(`${host} is not an address of this machine; fix --host / "host"`);
  return new Error(`cannot listen on ${host}:${port}: ${(e as Error).message ?? String(e)}`);
}

/**
 * The HTTP server, with time limits for every request whoever sends it. Node's own timers cover what
 * no route sees: headers that never finish, and (as a backstop, a little after the body limit) a
 * request whose body nobody reads, such as one refused before its body was wanted. They only run
 * while a request is being received; a long-lived response stream is not affected. Their answer is
 * a 408 that names the limit, instead of Node's bare one.
 */
function httpServer(app: express.Express, limits: RequestLimits): Server {
  const server = createServer(
    {
      ...serverTimeouts(limits),
      // Fixed at start: checks every 1/4 of the headers' time (at least every second), the limits read again.
      connectionsCheckingInterval: Math.max(50, Math.min(1_000, Math.floor(limits.headersTimeoutMs / 4))),
    },
    app,
  );
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
    if (socket.writable && socket.bytesWritten === 0) {
      const [status, message] =
        err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? [
              '408 Request Timeout',
              `the request did not arrive in time: its headers must arrive within ${server.headersTimeout / 1000} s and the whole request within ${server.requestTimeout / 1000} s (the gateway's limits)`,
            ]
          : err.code === 'HPE_HEADER_OVERFLOW'
            ? ['431 Request Header Fields Too Large', 'the request headers are too large']
            : ['400 Bad Request', 'the request is not valid HTTP'];
      const body = JSON.stringify({
        error: { code: Number(status.slice(0, 3)), status: status.slice(4).toUpperCase().replace(/ /g, '_'), message },
      });
      socket.end(
        `HTTP/1.1 ${status}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
    }
    socket.destroySoon();
  });
  return server;
}

/** Node's own timers for `limits`: the headers' time, and (a little after the body's) the whole request's. */
function serverTimeouts(limits: RequestLimits): { headersTimeout: number; requestTimeout: number } {
  return { headersTimeout: limits.headersTimeoutMs, requestTimeout: limits.headersTimeoutMs + limits.totalMs + 5_000 };
}

/** One route per agent, local ones first (the order of the index). */
function agentRoutes(site: RouteSite, ctx: GatewayContext, opts: GatewayOptions, push: PushNotifier): AgentRoute[] {
  return [
    ...(opts.localAgents ?? []).map((a) => AgentRoute.local(site, ctx, a, push)),
    ...(opts.remoteAgents ?? []).map((r) =>
      AgentRoute.remote(site, ctx, r, { refreshMs: opts.remoteCardRefreshMs, push }),
    ),
  ];
}

/** Two remote configs alike, whatever the order of their fields. */
const sameRemote = (a: RemoteAgentConfig, b: RemoteAgentConfig): boolean => canonicalize(a) === canonicalize(b);

/**
 * Brings the table's remote agents to `remotes` (see `RunningGateway.setRemoteAgents`): `make` makes
 * a new one's route, `why` says why a retired one takes no new tasks. A new route starts reading its
 * remote's card in the background.
 */
export function reconcileRemotes(
  table: RouteTable,
  remotes: readonly RemoteAgentConfig[],
  how: { readonly make: (cfg: RemoteAgentConfig) => AgentRoute; readonly why: (id: string) => string },
): AgentChange {
  const change = {
    added: [] as string[],
    retired: [] as string[],
    restored: [] as string[],
    credentials: [] as string[],
    changed: [] as string[],
    refused: [] as string[],
  };
  const wanted = new Set<string>();
  for (const cfg of remotes) {
    if (wanted.has(cfg.id)) continue;
    wanted.add(cfg.id);
    const route = table.routes.get(cfg.id);
    if (!route) {
      if (!table.free(cfg.id)) {
        change.refused.push(`${cfg.id} (its route /a2a/${cfg.id} is taken)`);
        continue;
      }
      const made = how.make(cfg);
      table.add(made);
      made.start();
      change.added.push(cfg.id);
      continue;
    }
    const was = route.remote;
    if (!was) {
      change.refused.push(`${cfg.id} (a local agent has this id)`);
      continue;
    }
    // Only the credentials differ: taken. Anything else that differs waits for the next start.
    const authOnly = sameRemote({ ...was, auth: cfg.auth }, cfg);
    if (!authOnly) change.changed.push(cfg.id);
    else if (!sameRemote(was, cfg)) {
      route.setRemoteAuth(cfg.auth);
      change.credentials.push(cfg.id);
    }
    if (route.retired && authOnly) {
      route.restore();
      change.restored.push(cfg.id);
    }
  }
  for (const route of table.routes.values()) {
    if (!route.remote || route.retired || wanted.has(route.id)) continue;
    route.retire(how.why(route.id));
    change.retired.push(route.id);
  }
  return change;
}

/** The gateway's key as the card builder uses it: its public JWK, and a signature over a card's wire JSON. */
function cardKeys(signingKey: SigningKey): CardKeys {
  return {
    publicJwk: signingKey.publicJwk,
    async sign(card: AgentCard): Promise<AgentCardSignature> {
      const signed = await signAgentCard(AgentCard.toJSON(card) as Record<string, unknown>, signingKey);
      const sigs = signed.signatures as Array<{ protected: string; signature: string }>;
      const last = sigs[sigs.length - 1];
      return { protected: last.protected, signature: last.signature, header: undefined };
    },
  };
}

/** The host as it goes in the gateway's URL: an IPv6 address in brackets, "any address" as loopback. */
function urlHost(host: string): string {
  return host.includes(':') ? `[${host}]` : host === '0.0.0.0' ? '127.0.0.1' : host;
}

/** Resolves with the port once the server listens. */
function listen(server: Server, host: string, port: number): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

function closeServer(server: Server): Promise<void> {
  const closing = new Promise<void>((r) => server.close(() => r()));
  server.closeAllConnections();
  return closing;
}

/** The express app before any route: what applies to every request. */
function gatewayApp(): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  // A request answered before its body was read (a wrong token, an unknown agent, a refused body) is
  // not kept open while the client goes on sending: the connection closes once the answer is out, and
  // the answer says `Connection: close` (a keep-alive client told nothing would send its next request
  // on the closing connection and see it reset).
  app.use((req: Request, res: Response, next: NextFunction) => {
    const writeHead = res.writeHead as (this: Response, ...args: unknown[]) => Response;
    res.writeHead = function (this: Response, ...args: unknown[]): Response {
      if (!req.complete && !this.headersSent) this.setHeader('Connection', 'close');
      return writeHead.apply(this, args);
    } as Response['writeHead'];
    res.once('finish', () => {
      if (!req.complete) req.socket.destroySoon();
    });
    next();
  });
  return app;
}

/** Where every agent's routes start: `/a2a/<agent>`. */
const A2A_PREFIX = '/a2a/';

/** The index card, every agent's routes, and the answers for what no route serves. */
function routesRouter(index: IndexRoute, table: RouteTable, control: express.Router): express.Router {
  const router = express.Router();
  router.use(index.router());
  router.use(control);
  // Each agent's router is found by the path segment that names it (`RouteTable`): tried in turn,
  // every agent a team adds cost every request about 2 µs. Paths match as express matches them:
  // without regard to case.
  router.use((req: Request, res: Response, next: NextFunction) => {
    const path = req.path;
    const end = path.indexOf('/', A2A_PREFIX.length);
    const agentRouter =
      path.length > A2A_PREFIX.length && path.slice(0, A2A_PREFIX.length).toLowerCase() === A2A_PREFIX
        ? table.routerAt(end < 0 ? path : path.slice(0, end))
        : undefined;
    if (agentRouter) agentRouter(req, res, next);
    else next();
  });
  // An unknown agent is a 404 for everyone: the index that names the agents is public anyway, and a 401
  // here would send a caller who mistyped the name off to look for a token.
  router.use('/a2a', (req: Request, res: Response) => {
    const name = decodeURIComponent(req.path.split('/')[1] ?? '');
    const known =
      table
        .listed()
        .map((a) => a.id)
        .join(', ') || 'none';
    const message = name
      ? `unknown agent "${name}"; this gateway serves: ${known}`
      : `address an agent at /a2a/<agent>; this gateway serves: ${known}`;
    res
      .status(404)
      .json(
        req.method === 'POST'
          ? { jsonrpc: '2.0', id: null, error: { code: -32601, message } }
          : { error: { code: 404, status: 'NOT_FOUND', message } },
      );
  });
  router.use((req: Request, res: Response) => {
    res.status(404).json({
      error: {
        code: 404,
        status: 'NOT_FOUND',
        message: `no route ${req.method} ${req.path}; agents live under /a2a/<agent>, the index at /.well-known/agent-card.json`,
      },
    });
  });
  return router;
}

function errorHandler(log: (line: string) => void): express.ErrorRequestHandler {
  return (err: unknown, _req: Request, res: Response, _next: NextFunction) => {
    void _next;
    log(`request failed: ${(err as Error).stack ?? String(err)}`);
    if (!res.headersSent)
      res.status(500).json({
        error: { code: 500, status: 'INTERNAL', message: 'the gateway failed to handle this request; see its log' },
      });
    else if (!res.writableEnded) res.end();
  };
}

/**
 * Records (local tasks) or re-attaches (proxied ones) the unfinished tasks of instances that are dead.
 * With a shared store each orphan is first taken over, so one instance alone recovers it however many
 * find it at once.
 */
async function recoverOrphans(
  store: GatewayStore,
  self: string,
  liveness: Liveness,
  runners: ReadonlyMap<string, { readonly runner: TaskRunner }>,
  log: (l: string) => void,
  why: OrphanFound,
  skipped: Set<string> = new Set(),
): Promise<void> {
  const instances = await store.instances();
  const now = Date.now();
  for (const found of await store.listOwnedUnfinished()) {
    const owner = found.owner;
    if (!owner || owner === self) continue;
    if (isInstanceAlive(instances.get(owner), now, liveness.staleMs)) continue;
    const entry = runners.get(found.agent);
    if (!entry) {
      const key = `${found.agent}\u0000${found.id}`;
      if (!skipped.has(key))
        log(`task ${found.id} belongs to agent ${found.agent}, which this gateway no longer serves; leaving it`);
      skipped.add(key);
      continue;
    }
    const row = store.takeOver ? await store.takeOver(found.agent, found.id, owner, self) : found;
    if (!row) continue; // another instance took it first, or it ended meanwhile
    try {
      await entry.runner.recoverOrphan(row, why);
      log(
        `task ${row.id} (${row.agent}): its worker died with instance ${owner} (no heartbeat for ${liveness.staleMs / 1000} s, or its process ended); ${entry.runner.orphanAction}`,
      );
    } catch (e) {
      log(`task ${row.id}: recovery failed: ${(e as Error).message}`);
    }
  }
}

/**
 * After a start: claims of first messages whose task was never bound (the instance forwarding them was
 * killed between the send and the binding) are resolved by their runner (found again, or recorded as
 * an unknown outcome), so a retry of the same message gets an answer rather than a wait.
 */
async function resolveUnboundClaims(
  store: GatewayStore,
  runners: ReadonlyMap<string, { readonly runner: TaskRunner }>,
  stopped: AbortSignal,
  log: (l: string) => void,
): Promise<void> {
  let claims;
  try {
    claims = await store.listUnboundRequests();
  } catch (e) {
    if (!stopped.aborted) log(`unbound requests could not be listed: ${(e as Error).message}`);
    return;
  }
  for (const claim of claims) {
    const runner = runners.get(claim.agent)?.runner;
    if (!runner?.resolveClaim || stopped.aborted) continue;
    try {
      await runner.resolveClaim(claim);
    } catch (e) {
      if (!stopped.aborted)
        log(
          `request ${claim.messageId} to ${claim.agent}: resolving its unbound claim failed: ${(e as Error).message}`,
        );
    }
  }
}

async function cancelOwnTask(
  store: GatewayStore,
  self: string,
  runners: ReadonlyMap<string, { readonly runner: TaskRunner }>,
  agent: string,
  taskId: string,
  log: (l: string) => void,
): Promise<void> {
  try {
    const entry = runners.get(agent);
    const row = entry ? await store.getTask(agent, taskId) : undefined;
    if (!entry || !row) {
      log(
        `cancel request for ${agent} task ${taskId} from another instance ignored: ${entry ? 'no such task' : 'this gateway does not serve that agent'}`,
      );
      return;
    }
    if (row.owner !== self || isTerminal(row.state)) {
      log(
        `cancel request for ${agent} task ${taskId} from another instance ignored: ${isTerminal(row.state) ? 'it has ended' : `this instance does not run it (owner ${row.owner ?? 'none'})`}`,
      );
      return;
    }
    await entry.runner.cancel(row);
  } catch (e) {
    log(`cancel request for ${agent} task ${taskId} from another instance failed: ${(e as Error).message}`);
  }
}

export { READ_ONLY } from '../core/delegation/guards';
export { wantsLegacyCard } from './http/cardRoute';
