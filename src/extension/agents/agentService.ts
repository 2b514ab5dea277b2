import * as vscode from 'vscode';
import { readAgentIndex } from '../../core/agentCard';
import {
  addAgent,
  approveAgent,
  callableEndpoint,
  deserializeRegistry,
  EMPTY_REGISTRY,
  findAgent,
  normalizeCardUrl,
  pinnedKeysFor,
  recordFetch,
  recordFetchFailure,
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
import type { ProxyCheck } from '../../core/proxyCheck';
import type { SafeFetchOptions } from '../../node/safeFetch';
import { loadNet } from '../lazy';
import { verifyAgentCard } from '../../node/signing';
import { Disposable } from '../lifecycle';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { existsSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * Where the governed agents are kept: a file in the extension's global storage folder (on the machine
 * the extension runs on), written atomically. Not globalState: in a browser-hosted workbench that lives
 * in the browser and is only flushed now and then.
 */
export class RegistryFile {
  constructor(readonly path: string) {}

  read(): string | undefined {
    return existsSync(this.path) ? readFileSync(this.path, 'utf8') : undefined;
  }

  async write(text: string): Promise<void> {
    await mkdir(dirname(this.path), { recursive: true, mode: 0o700 });
    const tmp = `${this.path}.${process.pid}.tmp`;
    await writeFile(tmp, text, { mode: 0o600 });
    await rename(tmp, this.path);
  }
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
        log.error(`agents: could not read the saved agents (${e instanceof Error ? e.message : String(e)}); starting empty`);
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
    return { allowPrivateHosts: [...s.allowPrivateHosts, ...this.sessionPrivateHosts], proxy: s.proxy, noProxy: s.noProxy, timeoutMs: 10_000 };
  }

  /**
   * Adds the agent behind a card URL or base URL; a gateway's card also adds each agent in its index.
   * Returns the entries added or refreshed. Fetch errors are recorded on the entry and rethrown.
   */
  async add(input: string, source: AgentSource = 'user'): Promise<AgentEntry[]> {
    const fetched = await loadNet().fetchAgentCard(input, this.fetchOptions());
    if (fetched.notModified) throw new Error('unexpected 304 for a new card');
    const cardUrl = normalizeCardUrl(fetched.cardUrl);
    this.noteRoute(cardUrl, fetched.proxied);
    const index = readAgentIndex(fetched.card, cardUrl);
    const added: AgentEntry[] = [];
    // A gateway's root card that serves no interface of its own is an index, not an agent.
    if (fetched.card.interfaces.length === 0 && index.length > 0) {
      for (const item of index) added.push(...(await this.addIndexed(item.cardUrl, source, cardUrl)));
      return added;
    }
    let state = findAgent(this.state, cardUrl) ? this.state : addAgent(this.state, { cardUrl, source, now: new Date().toISOString() });
    const signature = await verifyAgentCard(fetched.card.raw, { pinnedKeys: pinnedKeysFor(state, new URL(cardUrl).origin) });
    state = recordFetch(state, cardUrl, { card: fetched.card, digest: fetched.digest, signature, etag: fetched.etag, fetchedAt: new Date().toISOString() });
    await this.commit(state);
    const entry = findAgent(this.state, cardUrl);
    if (entry) added.push(entry);
    for (const item of index) added.push(...(await this.addIndexed(item.cardUrl, source, cardUrl)));
    return added;
  }

  private noteRoute(cardUrl: string, proxied: ProxyCheck | undefined): void {
    if (proxied) this.viaProxy.set(cardUrl, proxied);
    else this.viaProxy.delete(cardUrl);
  }

  private async addIndexed(cardUrl: string, source: AgentSource, indexUrl: string): Promise<AgentEntry[]> {
    try {
      return await this.add(cardUrl, source === 'local-gateway' ? 'local-gateway' : 'gateway-index');
    } catch (e) {
      this.log.warn(`agents: could not add ${cardUrl} from the index at ${indexUrl}: ${e instanceof Error ? e.message : String(e)}`);
      return [];
    }
  }

  /** Re-fetches one card (with its ETag); a changed card sends an approved agent back to pending. */
  async refresh(cardUrl: string): Promise<void> {
    const entry = this.find(cardUrl);
    if (!entry) return;
    try {
      const fetched = await loadNet().fetchAgentCard(entry.cardUrl, { ...this.fetchOptions(), etag: entry.served?.etag });
      this.noteRoute(entry.cardUrl, fetched.proxied);
      if (fetched.notModified) {
        await this.commit(recordNotModified(this.state, entry.cardUrl, new Date().toISOString()));
        return;
      }
      const signature = await verifyAgentCard(fetched.card.raw, { pinnedKeys: pinnedKeysFor(this.state, entry.origin) });
      await this.commit(recordFetch(this.state, entry.cardUrl, { card: fetched.card, digest: fetched.digest, signature, etag: fetched.etag, fetchedAt: new Date().toISOString() }));
    } catch (e) {
      const code = typeof (e as { code?: unknown }).code === 'string' ? (e as { code: string }).code : 'error';
      await this.commit(recordFetchFailure(this.state, entry.cardUrl, { code, message: e instanceof Error ? e.message : String(e), at: new Date().toISOString() }));
    }
  }

  async refreshAll(): Promise<void> {
    await Promise.all(this.state.agents.map((a) => this.refresh(a.cardUrl)));
  }

  async approve(cardUrl: string, reviewedDigest: string, opts: { endpointUrl?: string; acknowledgeOffOrigin?: boolean } = {}): Promise<ApproveResult> {
    const result = approveAgent(this.state, cardUrl, { reviewedDigest, endpointUrl: opts.endpointUrl, acknowledgeOffOrigin: opts.acknowledgeOffOrigin, now: new Date().toISOString() });
    if (result.ok) await this.commit(result.state);
    return result;
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
