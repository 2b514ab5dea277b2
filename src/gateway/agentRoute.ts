/**
 * The gateway's routes, made once its address is known: one `AgentRoute` per agent (a local agent or a
 * proxied remote) at /a2a/<agent>, and the `IndexRoute` at /.well-known/agent-card.json. Each owns its
 * card, built from the real base URL and kept with its ETag until the route invalidates it (a remote's
 * own card changed), its request handler and the task runner behind it.
 */
import express from 'express';
import type { NextFunction, Request, Response } from 'express';
import type { AgentCard } from '@a2a-js/sdk';
import type { LocalAgent } from './agents/localAgent';
import type { TokenAuthenticator } from './auth';
import { buildAgentCard, buildGatewayCard } from './cards';
import type { CardKeys, IndexedAgent } from './cards';
import type { RemoteAgentConfig, RemoteAuth } from './config';
import type { GatewayContext } from './gatewayContext';
import { a2aRouter } from './http/a2aRoutes';
import { cardRoute, CardSlot } from './http/cardRoute';
import type { PublishedCard } from './http/cardRoute';
import type { BodyLimits } from './http/jsonBody';
import { LocalTaskRunner } from './localTaskRunner';
import { ProxyTaskRunner } from './proxyTaskRunner';
import type { PushNotifier } from './pushNotifier';
import { mergeRemoteFacts, RemoteCardWatcher } from './remoteCard';
import { GatewayRequestHandler } from './requestHandler';
import type { TaskRunner } from './taskRunner';

/** Where the gateway is reached and how its cards are signed: what every route's card is built from. */
export interface RouteSite {
  /** The URL clients reach the gateway at (no trailing slash). */
  readonly baseUrl: string;
  readonly keys: CardKeys;
  /** False on a loopback gateway that serves requests without a token. */
  readonly tokenRequired: boolean;
}

/** What a route serves: the agent as the index lists it, its runner, and (for a remote) its card watcher. */
interface RouteAgent {
  readonly indexed: IndexedAgent;
  readonly runner: TaskRunner;
  readonly watcher?: RemoteCardWatcher;
  /** A remote's config, and how its credentials are replaced (a config read again). */
  readonly remote?: { readonly cfg: () => RemoteAgentConfig; readonly setAuth: (auth: RemoteAuth) => void };
}

/** What the A2A part of every route shares: who may call, and what one request may cost. */
export interface RouteHttp {
  readonly auth: TokenAuthenticator;
  readonly bodyLimits: BodyLimits;
  readonly log: (line: string) => void;
}

export class AgentRoute {
  readonly id: string;
  /** The route's path: /a2a/<agent>. */
  readonly path: string;
  readonly indexed: IndexedAgent;
  readonly runner: TaskRunner;
  readonly watcher: RemoteCardWatcher | undefined;
  readonly handler: GatewayRequestHandler;
  private readonly card: CardSlot;
  private readonly remoteAgent: RouteAgent['remote'];

  private constructor(
    private readonly site: RouteSite,
    ctx: GatewayContext,
    make: (invalidate: () => void) => RouteAgent,
    push: PushNotifier | undefined,
  ) {
    this.card = new CardSlot(() => this.buildCard());
    const agent = make(() => this.invalidate());
    this.indexed = agent.indexed;
    this.runner = agent.runner;
    this.watcher = agent.watcher;
    this.remoteAgent = agent.remote;
    this.id = agent.indexed.id;
    this.path = routePath(this.id);
    this.handler = new GatewayRequestHandler(ctx, this.id, () => this.readyCard(), this.runner, push);
  }

  /** A built-in agent or headless CLI on this machine. */
  static local(site: RouteSite, ctx: GatewayContext, agent: LocalAgent, push?: PushNotifier): AgentRoute {
    return new AgentRoute(
      site,
      ctx,
      () => ({
        indexed: { id: agent.id, name: agent.name, description: agent.description, kind: agent.kind },
        runner: new LocalTaskRunner(ctx, agent),
      }),
      push,
    );
  }

  /** A remote A2A agent the gateway proxies; its route card follows the remote's own card as it changes. */
  static remote(
    site: RouteSite,
    ctx: GatewayContext,
    cfg: RemoteAgentConfig,
    opts: { readonly refreshMs?: number; readonly push?: PushNotifier } = {},
  ): AgentRoute {
    return new AgentRoute(
      site,
      ctx,
      (invalidate) => {
        const watcher = new RemoteCardWatcher(cfg, {
          refreshMs: opts.refreshMs,
          transient: ctx.limits.remoteRetry,
          log: ctx.log,
          onChange: invalidate,
        });
        const runner = new ProxyTaskRunner(ctx, cfg, () => watcher.facts);
        return {
          indexed: { id: cfg.id, name: cfg.name, description: cfg.description, kind: 'remote' },
          runner,
          watcher,
          remote: {
            cfg: () => runner.config,
            setAuth: (auth) => {
              runner.setAuth(auth);
              watcher.setAuth(auth);
            },
          },
        };
      },
      opts.push,
    );
  }

  /** The remote agent's config as the route uses it; undefined for a local agent. */
  get remote(): RemoteAgentConfig | undefined {
    return this.remoteAgent?.cfg();
  }

  /** A remote's new credentials (its config read again): every call to it from now on carries them. */
  setRemoteAuth(auth: RemoteAuth): void {
    this.remoteAgent?.setAuth(auth);
  }

  /** True while the agent takes no new tasks (`retire`). */
  get retired(): boolean {
    return this.handler.retired !== undefined;
  }

  /**
   * The agent was removed from the config of the running gateway: it takes no new tasks (a first
   * message is refused with `why`) and leaves the index, but its tasks go on. They can still be read,
   * followed, answered and canceled at its route, and its card is still served there, for the clients
   * that follow them.
   */
  retire(why: string): void {
    this.handler.retired = why;
    // Nobody new will use its card: it is no longer read from the remote every few minutes.
    this.watcher?.pause();
  }

  /** Takes new tasks again (the agent is back in the config as it was), its remote's card read again. */
  restore(): void {
    this.handler.retired = undefined;
    if (this.watcher && !this.watcher.watching) this.watcher.start();
  }

  /** The route's card as served (built on first use, again after `invalidate`). */
  published(): Promise<PublishedCard> {
    return this.card.get();
  }

  /** The card changed (a remote's own card did): the next request builds it again, with a new ETag. */
  invalidate(): void {
    this.card.invalidate();
    // Built again at once, so requests (which use the last card built meanwhile) soon see the new one.
    void this.card.get().catch(() => undefined);
  }

  /** The public card at <path>/.well-known/agent-card.json and, behind the token check, the A2A routes. */
  router(http: RouteHttp): express.Router {
    const router = express.Router();
    router.use(`${this.path}/.well-known/agent-card.json`, cardRoute(this.card));
    router.use(
      this.path,
      http.auth.middleware(),
      // The request handler reads the card synchronously: make sure one has been built before it runs.
      // (Once one has, `readyCard` uses it while a newer one is built: a remote's card read may
      // invalidate the route card at any time, also while this request is still reading its body.)
      (_req: Request, _res: Response, next: NextFunction) => {
        if (this.card.latest) return next();
        this.card.get().then(() => next(), next);
      },
      a2aRouter({ handler: this.handler, bodyLimits: http.bodyLimits, log: http.log }),
    );
    return router;
  }

  /** Starts following the remote's own card, in the background; nothing for a local agent. */
  start(): void {
    this.watcher?.start();
  }

  async stopWatching(): Promise<void> {
    await this.watcher?.close();
  }

  /** The route's card for a request: the current one, or (while a newer one is built) the last one built. */
  private readyCard(): AgentCard {
    const ready = this.card.latest;
    // The route's middleware waits for a first card before any request reaches the handler.
    if (!ready) throw new Error(`the card of agent ${this.id} has not been built yet; send the request again`);
    return ready.card;
  }

  private buildCard(): Promise<AgentCard> {
    const facts = this.watcher?.facts;
    const base = this.watcher
      ? mergeRemoteFacts(this.runner.baseCard(), this.watcher.cfg, facts)
      : this.runner.baseCard();
    return buildAgentCard(base, this.site.baseUrl, this.id, this.site.keys, facts, this.site.tokenRequired);
  }
}

/** Where an agent's routes start: /a2a/<agent>. */
const routePath = (id: string): string => `/a2a/${encodeURIComponent(id)}`;

/**
 * The routes a gateway serves, by agent id (retired ones too), each found by the path segment that
 * names it, so a request costs the same whatever the number of agents. Routes are added while the
 * gateway runs (a config read again adds remote agents); none is ever taken out, a removed agent's is
 * retired (`AgentRoute.retire`).
 */
export class RouteTable {
  readonly routes = new Map<string, AgentRoute>();
  private readonly byPath = new Map<string, express.Router>();

  constructor(private readonly http: RouteHttp) {}

  /** Serves `route`; false when its id or its path (paths match without regard to case) is taken. */
  add(route: AgentRoute): boolean {
    const key = route.path.toLowerCase();
    if (this.routes.has(route.id) || this.byPath.has(key)) return false;
    this.routes.set(route.id, route);
    this.byPath.set(key, route.router(this.http));
    return true;
  }

  /** Whether a route could be added with this id (the id and its path are free). */
  free(id: string): boolean {
    return !this.routes.has(id) && !this.byPath.has(routePath(id).toLowerCase());
  }

  /** The router of the route at `path` (/a2a/<agent>, any case). */
  routerAt(path: string): express.Router | undefined {
    return this.byPath.get(path.toLowerCase());
  }

  /** The agents that take new tasks, in the order they were added: what the index lists. */
  listed(): IndexedAgent[] {
    return [...this.routes.values()].filter((r) => !r.retired).map((r) => r.indexed);
  }
}

/** The gateway's own card: the index of the agents it serves. */
export class IndexRoute {
  private readonly card: CardSlot;

  constructor(
    site: RouteSite,
    private agents: readonly IndexedAgent[],
  ) {
    this.card = new CardSlot(() => buildGatewayCard(site.baseUrl, this.agents, site.keys, site.tokenRequired));
  }

  /** The agents the index lists changed (a config read again): the card is built again, with a new ETag. */
  setAgents(agents: readonly IndexedAgent[]): void {
    this.agents = agents;
    this.card.invalidate();
    void this.card.get().catch(() => undefined);
  }

  published(): Promise<PublishedCard> {
    return this.card.get();
  }

  router(): express.Router {
    const router = express.Router();
    router.use('/.well-known/agent-card.json', cardRoute(this.card));
    return router;
  }
}

/**
 * Refuses two agents under one name, before anything is opened: the local agents' ids, then the
 * remote ones' (a remote may not take a local agent's name).
 */
export function checkAgentIds(
  localAgents: readonly Pick<LocalAgent, 'id'>[],
  remoteAgents: readonly Pick<RemoteAgentConfig, 'id'>[],
): void {
  // Routes match without regard to case: ids that differ only in case would share one.
  const ids = new Set<string>();
  for (const a of localAgents) {
    if (ids.has(a.id.toLowerCase())) throw new Error(`two agents are named ${a.id}; rename one in the config`);
    ids.add(a.id.toLowerCase());
  }
  for (const r of remoteAgents) {
    if (ids.has(r.id.toLowerCase()))
      throw new Error(
        `agent id ${r.id} is used by a local agent and a configured remote agent; rename the remote one in the config`,
      );
    ids.add(r.id.toLowerCase());
  }
}
