import * as vscode from 'vscode';
import {
  addFetchedAgents,
  approveAgent,
  callableEndpoint,
  deserializeRegistry,
  EMPTY_REGISTRY,
  findAgent,
  listingIndexes,
  pinnedKeysFor,
  recordFetch,
  recordFetchFailure,
  recordListing,
  recordNotModified,
  rejectAgent,
  removeAgent,
  serializeRegistry,
  tokenOrigin,
  type AgentEntry,
  type AgentSource,
  type ApproveResult,
  type RegistryState,
} from '../../core/agentRegistry';
import { approvalRefusalText } from '../../core/approvalText';
import { readAgentIndex } from '../../core/agentCard';
import type { ProxyCheck } from '../../core/proxyCheck';
import type { SafeFetchOptions } from '../../node/safeFetch';
import { loadNet } from '../lazy';
import { verifyAgentCard } from '../../node/signing';
import { Disposable } from '../lifecycle';
import type { RegistryFile } from './registryFile';

/** What one Add Agent did. */
export interface AddResult {
  /** The entries added or refreshed, the one given first. */
  readonly entries: AgentEntry[];
  /** When an index listed cards that were left out: what to tell the user (already logged). */
  readonly summary: string | undefined;
}

/** Network settings every card fetch uses (machine-scoped settings; see package.json). */
export interface FetchSettings {
  readonly allowPrivateHosts: readonly string[];
  readonly proxy?: string;
  readonly noProxy?: readonly string[];
}

/**
 * The governed agents: added by card URL (or from a gateway's index, the settings, or the local
 * gateway), pending until the user reviews and approves the card, pinned by digest and endpoint once
 * approved. Every state change is saved, then announced.
 */
export class AgentService extends Disposable {
  private state: RegistryState;
  private readonly _onDidChange = this._register(new vscode.EventEmitter<void>());
  readonly onDidChange = this._onDidChange.event;
  private readonly _onDidUnlist = this._register(
    new vscode.EventEmitter<{ readonly indexUrl: string; readonly agents: readonly AgentEntry[] }>(),
  );
  /** A gateway index no longer lists these agents it had listed (its operator removed them): they are unavailable. */
  readonly onDidUnlist = this._onDidUnlist.event;
  /** Cards last fetched through a proxy, and what was checked before the proxy got the fetch (the proxy chose the address). */
  readonly viaProxy = new Map<string, ProxyCheck>();
  /** Extra hosts allowed as private for the session (the local gateway's 127.0.0.1:port). */
  private readonly sessionPrivateHosts = new Set<string>();

  constructor(
    private readonly storage: RegistryFile,
    private readonly settings: () => FetchSettings,
    private readonly log: vscode.LogOutputChannel,
  ) {
    super();
    const saved = storage.read();
    let state = EMPTY_REGISTRY;
    if (typeof saved === 'string') {
      try {
        state = deserializeRegistry(saved);
      } catch (e) {
        log.error(
          `agents: could not read the saved agents (${e instanceof Error ? e.message : String(e)}); starting empty`,
        );
      }
    }
    this.state = state;
  }

  get agents(): readonly AgentEntry[] {
    return this.state.agents;
  }

  get registry(): RegistryState {
    return this.state;
  }

  find(cardUrl: string): AgentEntry | undefined {
    return findAgent(this.state, cardUrl);
  }

  allowPrivateHost(host: string): void {
    this.sessionPrivateHosts.add(host);
  }

  private async commit(next: RegistryState): Promise<void> {
    this.state = next;
    await this.storage.write(serializeRegistry(next));
    this._onDidChange.fire();
  }

  private fetchOptions(): SafeFetchOptions {
    const s = this.settings();
    return {
      allowPrivateHosts: [...s.allowPrivateHosts, ...this.sessionPrivateHosts],
      proxy: s.proxy,
      noProxy: s.noProxy,
      timeoutMs: 10_000,
    };
  }

  /**
   * Adds the agent behind a card URL or base URL; a gateway's card also adds the agents its index
   * lists, within the walk's limits (src/node/agentDiscovery.ts). Everything found is saved in one
   * step, so a walk that fails adds nothing. Rejects with the error of the card the user gave; cards
   * listed by an index that were left out are logged and summed up in `summary`.
   */
  async add(input: string, source: AgentSource = 'user'): Promise<AddResult> {
    const net = loadNet();
    const found = await net.discoverAgents(input, { fetch: this.fetchOptions() });
    const now = new Date().toISOString();
    const items = await Promise.all(
      found.agents.map(async (a) => {
        const signature = await verifyAgentCard(a.fetched.card.raw, {
          pinnedKeys: pinnedKeysFor(this.state, new URL(a.cardUrl).origin),
        });
        const from: AgentSource =
          a.depth === 0 ? source : source === 'local-gateway' ? 'local-gateway' : 'gateway-index';
        return {
          cardUrl: a.cardUrl,
          source: from,
          ...(a.listedBy ? { listedBy: a.listedBy } : {}),
          served: { card: a.fetched.card, digest: a.fetched.digest, signature, etag: a.fetched.etag, fetchedAt: now },
        };
      }),
    );
    if (items.length > 0) await this.commit(addFetchedAgents(this.state, items, now));
    for (const a of found.agents) this.noteRoute(a.cardUrl, a.fetched.proxied);
    for (const line of net.discoveryLog(found)) this.log.warn(`agents: ${line}`);
    const summary = net.discoverySummary(found);
    if (summary) this.log.warn(`agents: ${summary}`);
    const entries = found.agents
      .map((a) => findAgent(this.state, a.cardUrl))
      .filter((e): e is AgentEntry => e !== undefined);
    return { entries, summary };
  }

  private noteRoute(cardUrl: string, proxied: ProxyCheck | undefined): void {
    if (proxied) this.viaProxy.set(cardUrl, proxied);
    else this.viaProxy.delete(cardUrl);
  }

  /** Re-fetches one card (with its ETag); a changed card sends an approved agent back to pending. */
  async refresh(cardUrl: string): Promise<void> {
    const entry = this.find(cardUrl);
    if (!entry) return;
    try {
      const fetched = await loadNet().fetchAgentCard(entry.cardUrl, {
        ...this.fetchOptions(),
        etag: entry.served?.etag,
      });
      this.noteRoute(entry.cardUrl, fetched.proxied);
      if (fetched.notModified) {
        await this.commit(recordNotModified(this.state, entry.cardUrl, new Date().toISOString()));
        return;
      }
      const signature = await verifyAgentCard(fetched.card.raw, {
        pinnedKeys: pinnedKeysFor(this.state, entry.origin),
      });
      await this.commit(
        recordFetch(this.state, entry.cardUrl, {
          card: fetched.card,
          digest: fetched.digest,
          signature,
          etag: fetched.etag,
          fetchedAt: new Date().toISOString(),
        }),
      );
    } catch (e) {
      const code = typeof (e as { code?: unknown }).code === 'string' ? (e as { code: string }).code : 'error';
      await this.commit(
        recordFetchFailure(this.state, entry.cardUrl, {
          code,
          message: e instanceof Error ? e.message : String(e),
          at: new Date().toISOString(),
        }),
      );
    }
  }

  /**
   * `refresh` of every agent, and a look at the gateway indexes Baton's agents came from
   * (`listingIndexes`): one that now lists agents Baton does not have is walked again, as Add Agent
   * walks it, which adds them as pending. Answers the card URLs of the agents that added.
   */
  async refreshAll(): Promise<string[]> {
    const [, added] = await Promise.all([
      Promise.all(this.state.agents.map((a) => this.refresh(a.cardUrl))),
      Promise.all(listingIndexes(this.state).map((i) => this.readListing(i.cardUrl, i.source))),
    ]);
    return [...new Set(added.flat())];
  }

  /**
   * Reads again the gateway index that listed this agent, to learn whether its gateway still serves it
   * (after a delegation to it was refused, most often because the gateway's operator removed it).
   * Adds nothing: that is Refresh Agents' job, with the user watching.
   */
  async recheckListing(cardUrl: string): Promise<void> {
    const entry = this.find(cardUrl);
    if (entry?.listedBy) await this.readListing(entry.listedBy, entry.source, { addNew: false });
  }

  /**
   * Reads the index at `indexUrl`: the agents it listed and lists no longer are unavailable from now on,
   * the ones it lists again are back (`recordListing`), and when it lists agents Baton does not have, it
   * is walked again from there (`add`; not with `addNew: false`). Answers the card URLs it added. An
   * index that cannot be read is logged and changes nothing.
   */
  private async readListing(
    indexUrl: string,
    source: AgentSource,
    opts: { addNew: boolean } = { addNew: true },
  ): Promise<string[]> {
    try {
      const net = loadNet();
      const fetched = await net.fetchAgentCard(indexUrl, this.fetchOptions());
      if (fetched.notModified) return [];
      const listed = readAgentIndex(fetched.card, indexUrl).map((a) => a.cardUrl);
      const next = recordListing(this.state, indexUrl, listed, new Date().toISOString());
      if (next !== this.state) {
        const unlisted = next.agents.filter((a) => a.unlistedAt && !findAgent(this.state, a.cardUrl)?.unlistedAt);
        const back = next.agents.filter((a) => !a.unlistedAt && findAgent(this.state, a.cardUrl)?.unlistedAt);
        await this.commit(next);
        for (const a of unlisted) this.log.warn(`agents: ${indexUrl} no longer lists ${a.cardUrl}; it is unavailable`);
        for (const a of back) this.log.info(`agents: ${indexUrl} lists ${a.cardUrl} again`);
        if (unlisted.length) this._onDidUnlist.fire({ indexUrl, agents: unlisted });
      }
      if (!opts.addNew || listed.every((u) => findAgent(this.state, u))) return [];
      const known = new Set(this.state.agents.map((a) => a.cardUrl));
      const { entries } = await this.add(indexUrl, source);
      return entries.map((e) => e.cardUrl).filter((u) => !known.has(u));
    } catch (e) {
      this.log.warn(`agents: reading the gateway index ${indexUrl} again failed: ${(e as Error).message}`);
      return [];
    }
  }

  async approve(
    cardUrl: string,
    reviewedDigest: string,
    opts: { endpointUrl?: string; acknowledgeOffOrigin?: boolean } = {},
  ): Promise<ApproveResult> {
    const result = approveAgent(this.state, cardUrl, {
      reviewedDigest,
      endpointUrl: opts.endpointUrl,
      acknowledgeOffOrigin: opts.acknowledgeOffOrigin,
      now: new Date().toISOString(),
    });
    if (result.ok) await this.commit(result.state);
    // The refusal is shown to the user as its message: say it in their language.
    return result.ok ? result : { ...result, message: approvalRefusalText(result.why, vscode.l10n.t) };
  }

  async reject(cardUrl: string): Promise<void> {
    await this.commit(rejectAgent(this.state, cardUrl));
  }

  async remove(cardUrl: string): Promise<void> {
    await this.commit(removeAgent(this.state, cardUrl));
  }

  approved(): AgentEntry[] {
    return this.state.agents.filter((a) => callableEndpoint(a) !== undefined);
  }

  /** The origin this agent's token may go to (never one a card merely names). */
  tokenOrigin(entry: AgentEntry): string | undefined {
    return tokenOrigin(entry);
  }
}
