/**
 * The proof that whoever answers at a local gateway's recorded address holds that gateway's token,
 * without the token being sent: HMAC-SHA256 over the caller's nonce and the instance id, keyed with the
 * token. The editor checks it before it sends the token anywhere, because a stale `gateway.json`'s port
 * may belong to an unrelated process by now (docs/security.md, "The gateway").
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** A nonce is 16 to 128 base64url characters: enough to be fresh, bounded so the answer is cheap. */
export const NONCE_PATTERN = /^[A-Za-z0-9_-]{16,128}$/;

export function newNonce(): string {
  return randomBytes(24).toString('base64url');
}

export function instanceProof(token: string, instanceId: string, nonce: string): string {
  return createHmac('sha256', token).update(`baton-instance\n${instanceId}\n${nonce}`).digest('base64url');
}

/** Whether `proof` is the proof for this token, instance and nonce (compared in constant time). */
export function provesInstance(proof: string, token: string, instanceId: string, nonce: string): boolean {
  const want = Buffer.from(instanceProof(token, instanceId, nonce));
  const got = Buffer.from(proof);
  return got.length === want.length && timingSafeEqual(got, want);
}
