/**
 * Bearer tokens. Tokens are compared by SHA-256 in constant time, so the gateway never keeps a team's
 * tokens in memory as given and a timing probe learns nothing. The local gateway's own token is a
 * random one in a 0600 file in its state folder, for the extension and the `baton` command line.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import type { NextFunction, Request, Response } from 'express';
import { GatewayUser } from './requestContext';
import type { TokenConfig } from './config';

export const LOCAL_PRINCIPAL = 'local';

/** What replacing the tokens changed: the principals of the tokens now accepted and no longer accepted. */
export interface TokenChange {
  readonly count: number;
  readonly added: readonly string[];
  readonly removed: readonly string[];
}

interface Entry {
  readonly principal: string;
  readonly digest: Buffer;
  /** The principal and the digest: what a replaced token list is compared by. */
  readonly key: string;
}

export class TokenAuthenticator {
  private entries: readonly Entry[];
  /** The responses in progress of each configured token (by `Entry.key`): ended when it is revoked. */
  private readonly open = new Map<string, Set<Response>>();
  /** Tokens minted at run time (a task's own token, src/gateway/delegation/childBroker.ts). */
  private lookup: ((token: string) => string | undefined) | undefined;

  constructor(
    tokens: readonly TokenConfig[],
    /** Requests without an Authorization header are this principal (loopback-only gateways); none by default. */
    private readonly anonymous?: string,
  ) {
    this.entries = toEntries(tokens);
  }

  /**
   * Replaces the tokens (a reloaded config): requests from now on are checked against `tokens`, and
   * what a token no longer accepted has in progress (a stream that is open, a call not yet answered)
   * is ended: a revoked token stops working at once. Tokens minted at run time stay.
   */
  setTokens(tokens: readonly TokenConfig[]): TokenChange {
    const next = toEntries(tokens);
    const before = new Set(this.entries.map((e) => e.key));
    const after = new Set(next.map((e) => e.key));
    const removed = this.entries.filter((e) => !after.has(e.key));
    const change = {
      count: next.length,
      added: next.filter((e) => !before.has(e.key)).map((e) => e.principal),
      removed: removed.map((e) => e.principal),
    };
    this.entries = next;
    for (const e of removed) {
      for (const res of this.open.get(e.key) ?? []) res.destroy();
      this.open.delete(e.key);
    }
    return change;
  }

  /** Keeps `res` with its token's entry until it is done, to end it if the token is revoked meanwhile. */
  private track(entry: Entry, res: Response): void {
    const set = this.open.get(entry.key) ?? new Set<Response>();
    this.open.set(entry.key, set);
    set.add(res);
    res.once('close', () => {
      set.delete(res);
      if (!set.size && this.open.get(entry.key) === set) this.open.delete(entry.key);
    });
  }

  /** The principal a bearer token belongs to, or undefined. */
  principalFor(authorization: string | undefined): string | undefined {
    return this.match(authorization)?.principal;
  }

  /** The principal of a bearer token, with its configured entry (none for a token minted at run time). */
  private match(authorization: string | undefined): { principal: string; entry?: Entry } | undefined {
    if (!authorization) return undefined;
    const m = /^Bearer[ ]+([\x21-\x7e]{1,4096})\s*$/i.exec(authorization);
    if (!m) return undefined;
    const digest = createHash('sha256').update(m[1]).digest();
    let found: Entry | undefined;
    for (const e of this.entries) if (timingSafeEqual(e.digest, digest) && found === undefined) found = e;
    if (found) return { principal: found.principal, entry: found };
    const runtime = this.lookup?.(m[1]);
    return runtime === undefined ? undefined : { principal: runtime };
  }

  /** Adds the tokens minted at run time (looked up after the configured ones). */
  setRuntimeTokens(lookup: (token: string) => string | undefined): void {
    this.lookup = lookup;
  }

  middleware() {
    return (req: Request, res: Response, next: NextFunction): void => {
      const header = req.header('authorization');
      const found = header === undefined && this.anonymous ? { principal: this.anonymous } : this.match(header);
      const principal = found?.principal;
      if (!principal) {
        res.setHeader('WWW-Authenticate', 'Bearer realm="baton-gateway"');
        res.status(401).json({
          error: {
            code: 401,
            status: 'UNAUTHENTICATED',
            message: this.entries.some((e) => e.principal !== LOCAL_PRINCIPAL)
              ? 'missing or unknown bearer token: send "Authorization: Bearer <token>" with the token this gateway issued you (ask whoever runs it for one, or for a new one if yours was revoked)'
              : 'missing or unknown bearer token: send "Authorization: Bearer <token>" (the local gateway keeps its token in <state>/token)',
          },
        });
        return;
      }
      if (found.entry) this.track(found.entry, res);
      res.locals.user = new GatewayUser(principal);
      next();
    };
  }
}

function toEntries(tokens: readonly TokenConfig[]): Entry[] {
  return tokens.map((t) => ({
    principal: t.principal,
    digest: Buffer.from(t.sha256, 'hex'),
    key: `${t.principal}\u0000${t.sha256.toLowerCase()}`,
  }));
}

/** Reads the local token, creating a random one (0600) on first start. */
export function ensureLocalToken(file: string): string {
  if (existsSync(file)) {
    chmodSync(file, 0o600);
    const t = readFileSync(file, 'utf8').trim();
    if (t.length >= 32) return t;
  }
  const token = randomBytes(32).toString('base64url');
  writeFileSync(file, `${token}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
  return token;
}
