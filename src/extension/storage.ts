import type * as vscode from 'vscode';
import { legacyTokenHost, normalizeOrigin } from '../core/origin';

/**
 * Every key Baton stores, declared once. Secrets (tokens) live only in SecretStorage, one key per
 * origin — never in settings, globalState, webview state, logs or argv — and there is no catch-all token.
 */
export type SecretKey = `baton.token.${string}`;

export interface GlobalStateShape {
  /** Reserved for UI preferences; agents and delegations live in files in the global storage folder. */
  'baton.ui.v1': unknown;
}
export type GlobalStateKey = keyof GlobalStateShape;

/**
 * An origin as a secret key: `baton.token.https://host:port`, normalised (core/origin.ts), so a token
 * is bound to scheme, host and port — one stored for https is not found for http on the same host.
 */
export function tokenKey(origin: string): SecretKey {
  return `baton.token.${normalizeOrigin(origin)}`;
}

/**
 * Where tokens were kept when they were keyed by host (`baton.token.host[:port]`). Such a token was
 * set for an https agent (Baton fetches cards over https unless a host is allowed as private), so it
 * now belongs to the https origin of that host: it moves there the first time that origin asks, and
 * a plain-http origin never gets it.
 */
function legacyTokenKey(origin: string): SecretKey | undefined {
  const host = legacyTokenHost(origin);
  return host === undefined ? undefined : `baton.token.${host}`;
}

export class BatonStorage {
  constructor(
    private readonly state: vscode.Memento,
    private readonly secrets: vscode.SecretStorage,
  ) {}

  get<K extends GlobalStateKey>(key: K): GlobalStateShape[K] | undefined {
    return this.state.get<GlobalStateShape[K]>(key);
  }

  async set<K extends GlobalStateKey>(key: K, value: GlobalStateShape[K]): Promise<void> {
    await this.state.update(key, value);
  }

  /** The token stored for exactly this origin (after normalisation), or undefined. */
  async getToken(origin: string): Promise<string | undefined> {
    const key = tokenKey(origin);
    const token = await this.secrets.get(key);
    if (token !== undefined) return token;
    const legacy = legacyTokenKey(origin);
    if (!legacy) return undefined;
    const old = await this.secrets.get(legacy);
    if (old === undefined) return undefined;
    await this.secrets.store(key, old);
    await this.secrets.delete(legacy);
    return old;
  }

  async setToken(origin: string, token: string): Promise<void> {
    await this.secrets.store(tokenKey(origin), token);
    // The new token replaces one kept under the host's old key, which would otherwise come back.
    const legacy = legacyTokenKey(origin);
    if (legacy) await this.secrets.delete(legacy);
  }

  async deleteToken(origin: string): Promise<void> {
    await this.secrets.delete(tokenKey(origin));
    const legacy = legacyTokenKey(origin);
    if (legacy) await this.secrets.delete(legacy);
  }
}
