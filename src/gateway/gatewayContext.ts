/** What every agent route of one gateway shares: the store, the hub, who this instance is, its limits. */
import type { Capabilities } from './agents/localAgent';
import type { ClaimReleases } from './claimReleases';
import type { Liveness } from './instanceLiveness';
import type { ChildBroker } from './delegation/childBroker';
import type { EventHub } from './eventLog';
import type { GatewayStore } from './store/gatewayStore';

import type { EnvelopeBody } from './resultEnvelope';
import type { TransientPolicy } from '../node/a2a/transientAnswers';
import type { Turns } from './runQueue';

/** Signs a result envelope (compact JWS) with the gateway's key; the server adds issuer and time. */
export type EnvelopeSigner = (body: EnvelopeBody) => Promise<string>;

export interface GatewayLimits {
  /** The most any request may get, whatever it asks for and whatever the agent could do. */
  readonly capabilities: Capabilities;
  /** Used when a request names no deadline. */
  readonly defaultDeadlineMs: number;
  /** No request may run longer than this. */
  readonly maxDeadlineMs: number;
  /** How long a cancel waits for an agent to stop before it is abandoned and recorded as canceled. */
  readonly cancelGraceMs: number;
  /**
   * How long a call to a remote agent that answers 429/502/503/504 is tried again (the client's
   * policy, `TRANSIENT_POLICY`, for what is left out).
   */
  readonly remoteRetry?: Partial<TransientPolicy>;
  /**
   * Local runs (coding CLIs, built-in agents) one principal may have at once, on every instance of a
   * shared store together; the others wait their turn (src/gateway/runQueue.ts). Unset or 0: no limit.
   */
  readonly maxRunningPerPrincipal?: number;
}

export interface GatewayContext {
  readonly store: GatewayStore;
  readonly hub: EventHub;
  /** Unique per process: owners of running tasks are recorded by it. */
  readonly instanceId: string;
  /**
   * This gateway in a delegation chain (`baton/chain`): `baton-gateway:<key thumbprint>`, stable for its
   * state folder. A proxy adds `<identity>/<agent>` to what it forwards and refuses a request that
   * already carries it (a loop between gateways that proxy each other).
   */
  readonly identity: string;
  /** Real paths of the folders whose repositories may be named in requests. */
  readonly roots: readonly string[];
  readonly limits: GatewayLimits;
  /** When another instance counts as dead (its tasks are then taken over). */
  readonly liveness: Liveness;
  /** Claims whose release the store refused, released again once it answers (src/gateway/claimReleases.ts). */
  readonly claims: ClaimReleases;
  /**
   * Each principal's local runs at once, and the line beyond `limits.maxRunningPerPrincipal`: in memory
   * (SQLite, one process), or shared by the instances of a PostgreSQL store.
   */
  readonly runs: Turns;
  readonly signEnvelope?: EnvelopeSigner;
  /** Delegations agents start: task tokens and the guards (absent: agents get no way to delegate). */
  readonly children?: ChildBroker;
  /**
   * How a coding CLI this gateway runs reaches `baton mcp`: the argv that starts it and the gateway's
   * own address on this machine (absent: coding CLIs get no way to delegate).
   */
  readonly mcp?: { readonly command: readonly string[]; readonly gatewayUrl: string };
  /** Diagnostics for operators (stderr by default); never receives tokens. */
  readonly log: (line: string) => void;
}
