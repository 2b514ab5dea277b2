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

export class TokenAuthenticator {
  private entries: ReadonlyArray<{ principal: string; digest: Buffer }>;
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
   * Replaces the tokens (a reloaded config): requests from now on are checked against `tokens`; a
   * request already admitted, a stream among them, goes on. Tokens minted at run time stay.
   */
  setTokens(tokens: readonly TokenConfig[]): TokenChange {
    const next = toEntries(tokens);
    const key = (e: { principal: string; digest: Buffer }): string => `${e.principal}\u0000${e.digest.toString('hex')}`;
    const before = new Set(this.entries.map(key));
    const after = new Set(next.map(key));
    const change = {
      count: next.length,
      added: next.filter((e) => !before.has(key(e))).map((e) => e.principal),
      removed: this.entries.filter((e) => !after.has(key(e))).map((e) => e.principal),
    };
    this.entries = next;
    return change;
  }

  /** The principal a bearer token belongs to, or undefined. */
  principalFor(authorization: string | undefined): string | undefined {
    if (!authorization) return undefined;
    const m = /^Bearer[ ]+([\x21-\x7e]{1,4096})\s*$/i.exec(authorization);
    if (!m) return undefined;
    const digest = createHash('sha256').update(m[1]).digest();
    let found: string | undefined;
    for (const e of this.entries) if (timingSafeEqual(e.digest, digest) && found === undefined) found = e.principal;
    return found ?? this.lookup?.(m[1]);
  }

  /** Adds the tokens minted at run time (looked up after the configured ones). */
  setRuntimeTokens(lookup: (token: string) => string | undefined): void {
    this.lookup = lookup;
  }

  middleware() {
    return (req: Request, res: Response, next: NextFunction): void => {
      const header = req.header('authorization');
      const principal = header === undefined && this.anonymous ? this.anonymous : this.principalFor(header);
      if (!principal) {
        res.setHeader('WWW-Authenticate', 'Bearer realm="baton-gateway"');
        res.status(401).json({
          error: {
            code: 401,
            status: 'UNAUTHENTICATED',
            message:
              'missing or unknown bearer token: send "Authorization: Bearer <token>" (the local gateway keeps its token in <state>/token)',
          },
        });
        return;
      }
      res.locals.user = new GatewayUser(principal);
      next();
    };
  }
}

function toEntries(tokens: readonly TokenConfig[]): Array<{ principal: string; digest: Buffer }> {
  return tokens.map((t) => ({ principal: t.principal, digest: Buffer.from(t.sha256, 'hex') }));
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
