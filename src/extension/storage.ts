import type * as vscode from 'vscode';

/**
 * Every key Baton stores, declared once. Secrets (tokens) live only in SecretStorage, one key per
 * host — never in settings, globalState, webview state, logs or argv — and there is no catch-all token.
 */
export type SecretKey = `baton.token.${string}`;

export interface GlobalStateShape {
  /** Reserved for UI preferences; agents and delegations live in files in the global storage folder. */
  'baton.ui.v1': unknown;
}
export type GlobalStateKey = keyof GlobalStateShape;

/** A host name as a secret key: lower-cased, port kept (tokens are bound to the exact origin's host). */
export function tokenKey(host: string): SecretKey {
  const h = host.trim().toLowerCase();
  if (!/^[a-z0-9.\-:[\]]+$/.test(h)) throw new Error(`not a host name: ${JSON.stringify(host)}`);
  return `baton.token.${h}`;
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

  getToken(host: string): Thenable<string | undefined> {
    return this.secrets.get(tokenKey(host));
  }

  async setToken(host: string, token: string): Promise<void> {
    await this.secrets.store(tokenKey(host), token);
  }

  async deleteToken(host: string): Promise<void> {
    await this.secrets.delete(tokenKey(host));
  }
}
