/**
 * What the HTTP layer learns about a request that the SDK's request types do not carry: the
 * authenticated principal, the replay cursor (`Last-Event-ID` or metadata `baton/cursor`; the SDK's
 * `SubscribeToTaskRequest` has no metadata) and the signal that fires when the client goes away.
 */
import type { ServerCallContext, User } from '@a2a-js/sdk/server';
import { RequestMalformedError } from '@a2a-js/sdk/errors';

export class GatewayUser implements User {
  constructor(readonly principal: string) {}
  get isAuthenticated(): boolean {
    return true;
  }
  get userName(): string {
    return this.principal;
  }
}

const CURSOR = 'baton/cursor';
const SIGNAL = 'baton/signal';

export function principalOf(ctx: ServerCallContext): string {
  const u = ctx.user;
  if (u instanceof GatewayUser) return u.principal;
  // The auth middleware runs before every A2A route; reaching here without a principal is a wiring bug.
  throw new Error('request reached an A2A handler without an authenticated principal');
}

export function setCursor(ctx: ServerCallContext, cursor: number | undefined): void {
  if (cursor !== undefined) ctx.state.set(CURSOR, cursor);
}

export function cursorOf(ctx: ServerCallContext): number | undefined {
  const v = ctx.state.get(CURSOR);
  return typeof v === 'number' ? v : undefined;
}

export function setSignal(ctx: ServerCallContext, signal: AbortSignal): void {
  ctx.state.set(SIGNAL, signal);
}

export function signalOf(ctx: ServerCallContext): AbortSignal | undefined {
  const v = ctx.state.get(SIGNAL);
  return v instanceof AbortSignal ? v : undefined;
}

/** A replay cursor as sent: a non-negative integer, else a clear error (not a silent full replay). */
export function parseCursor(raw: unknown, where: string): number | undefined {
  if (raw === undefined || raw === null || raw === '') return undefined;
  const n =
    typeof raw === 'number' ? raw : typeof raw === 'string' && /^\d{1,15}$/.test(raw.trim()) ? Number(raw.trim()) : NaN;
  if (!Number.isSafeInteger(n) || n < 0) {
    throw new RequestMalformedError(
      `${where} must be the seq of the last event received (a non-negative integer), got ${JSON.stringify(String(raw)).slice(0, 40)}`,
    );
  }
  return n;
}
