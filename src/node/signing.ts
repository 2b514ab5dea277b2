/**
 * Signatures Baton makes and checks (docs/security.md "Signed results"), over jose:
 *
 * - a gateway's Ed25519 key: created once, stored 0600 as a private JWK (or PKCS#8 PEM);
 * - Agent Card signatures per A2A §8.4: a JWS in flattened form with the payload detached, the payload
 *   being the RFC 8785 form of the card without `signatures` (our canonicalisation keeps empty fields,
 *   unlike the SDK's `canonicalizeAgentCard`: A2A-NOTES.md). Verification accepts `EdDSA` and `ES256`
 *   only, with keys the caller supplies (pinned per origin) or — first use only — the key the signature
 *   carries in its protected `jwk` header. `jku` is never fetched.
 * - the signed result envelope: a compact JWS binding the request digest, each artifact's digest, the
 *   result digest, the executor and the effective capabilities. A tampered artifact fails verification
 *   and the result names it.
 */
import { createHash, KeyObject, sign as signBytes } from 'node:crypto';
import { chmod, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import * as jose from 'jose';
import { cardSigningPayload } from '../core/agentCard';
import type { CardSignature } from '../core/agentCard';
import type { CardSignatureCheck, VerifiedKey } from '../core/agentRegistry';
import { canonicalize } from '../core/jcs';
import { isRecord } from '../core/isRecord';

/** The only algorithms Baton accepts: no `none`, no HMAC (a public key must never serve as an HMAC secret). */
export const ALLOWED_ALGS = ['EdDSA', 'ES256'] as const;
export type AllowedAlg = (typeof ALLOWED_ALGS)[number];

export type PublicJwk = Readonly<Record<string, unknown>> & { readonly kty: string };

export interface SigningKey {
  /** RFC 7638 thumbprint of the public key; used as `kid`. */
  readonly kid: string;
  readonly alg: 'EdDSA';
  readonly privateKey: jose.CryptoKey;
  /** Public JWK with `kid`, `alg` and `use: "sig"`. */
  readonly publicJwk: PublicJwk;
}

export class SigningError extends Error {
  constructor(
    readonly code: 'key-file' | 'key-permissions' | 'key-invalid',
    message: string,
  ) {
    super(message);
    this.name = 'SigningError';
  }
}

// ---------------------------------------------------------------------------------------------------
// Keys

export async function generateSigningKey(): Promise<SigningKey> {
  const { privateKey } = await jose.generateKeyPair('Ed25519', { extractable: true });
  return fromPrivateJwk(await jose.exportJWK(privateKey));
}

async function fromPrivateJwk(jwk: jose.JWK): Promise<SigningKey> {
  if (jwk.kty !== 'OKP' || jwk.crv !== 'Ed25519' || typeof jwk.d !== 'string' || typeof jwk.x !== 'string') {
    throw new SigningError('key-invalid', 'The signing key must be an Ed25519 private key (OKP, crv Ed25519).');
  }
  const privateKey = (await jose.importJWK({ kty: 'OKP', crv: 'Ed25519', x: jwk.x, d: jwk.d }, 'EdDSA', {
    extractable: true,
  })) as jose.CryptoKey;
  const pub = { kty: 'OKP', crv: 'Ed25519', x: jwk.x };
  const kid = await jose.calculateJwkThumbprint(pub, 'sha256');
  return { kid, alg: 'EdDSA', privateKey, publicJwk: { ...pub, kid, alg: 'EdDSA', use: 'sig' } };
}

/** Writes the private key, readable by the owner only (0600; parent folder created 0700). Never overwrites. */
export async function writeSigningKey(key: SigningKey, file: string, format: 'jwk' | 'pem' = 'jwk'): Promise<void> {
  await mkdir(dirname(file), { recursive: true, mode: 0o700 });
  const data =
    format === 'pem'
      ? await jose.exportPKCS8(key.privateKey)
      : `${JSON.stringify(await jose.exportJWK(key.privateKey))}\n`;
  await writeFile(file, data, { mode: 0o600, flag: 'wx' });
  await chmod(file, 0o600); // the umask cannot widen it, but make it explicit
}

/** Reads a key file written by `writeSigningKey` (JWK JSON or PKCS#8 PEM). Refuses a file others can read. */
export async function loadSigningKey(file: string): Promise<SigningKey> {
  let text: string;
  try {
    const st = await stat(file);
    if (process.platform !== 'win32' && (st.mode & 0o077) !== 0) {
      throw new SigningError(
        'key-permissions',
        `The signing key ${file} is readable by other users (mode ${(st.mode & 0o777).toString(8)}). Run: chmod 600 ${file}`,
      );
    }
    text = await readFile(file, 'utf8');
  } catch (e) {
    if (e instanceof SigningError) throw e;
    throw new SigningError('key-file', `Cannot read the signing key ${file}: ${(e as Error).message}`);
  }
  try {
    if (text.trimStart().startsWith('-----BEGIN')) {
      const key = (await jose.importPKCS8(text, 'EdDSA', { extractable: true })) as jose.CryptoKey;
      return fromPrivateJwk(await jose.exportJWK(key));
    }
    return await fromPrivateJwk(JSON.parse(text) as jose.JWK);
  } catch (e) {
    if (e instanceof SigningError) throw e;
    throw new SigningError(
      'key-invalid',
      `The signing key ${file} is not a valid Ed25519 private key: ${(e as Error).message}`,
    );
  }
}

/** Loads the key at `file`, or creates it (0600) on first start. */
export async function loadOrCreateSigningKey(file: string, format: 'jwk' | 'pem' = 'jwk'): Promise<SigningKey> {
  try {
    await stat(file);
  } catch {
    const key = await generateSigningKey();
    try {
      await writeSigningKey(key, file, format);
      return key;
    } catch (e) {
      // Another process created it first: use theirs.
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST')
        throw new SigningError('key-file', `Cannot write the signing key ${file}: ${(e as Error).message}`);
    }
  }
  return loadSigningKey(file);
}

/** A public JWK as a `VerifiedKey` (for pinning keys obtained out of band). */
export async function toVerifiedKey(jwk: PublicJwk): Promise<VerifiedKey> {
  const pub = publicPart(jwk);
  const thumbprint = await jose.calculateJwkThumbprint(pub as jose.JWK, 'sha256');
  return { kid: typeof jwk.kid === 'string' ? jwk.kid : thumbprint, thumbprint, jwk: pub };
}

/** Only the public members, so a private member a card might carry is never stored or used. */
function publicPart(jwk: Readonly<Record<string, unknown>>): Record<string, unknown> {
  if (jwk.kty === 'OKP') return { kty: 'OKP', crv: jwk.crv, x: jwk.x };
  if (jwk.kty === 'EC') return { kty: 'EC', crv: jwk.crv, x: jwk.x, y: jwk.y };
  throw new SigningError('key-invalid', `Key type ${String(jwk.kty)} is not accepted (only Ed25519 and P-256 keys).`);
}

// ---------------------------------------------------------------------------------------------------
// Agent Card signatures

export interface SignCardOptions {
  /** Put the public key in the protected header (`jwk`), so a first-time verifier can pin it. Default true. */
  readonly embedKey?: boolean;
  /** A JWKS URL to name in the header. Baton never fetches it; other clients may. */
  readonly jku?: string;
}

/**
 * One A2A card signature entry (A2A §8.4: detached payload, typ JOSE) over the card exactly as it will
 * be served (its JSON, without `signatures`). Sign the object you serve: the verifier canonicalises
 * the served JSON, so a card re-shaped after signing (e.g. by `AgentCard.toJSON`) will not verify.
 */
export async function createCardSignature(
  card: Readonly<Record<string, unknown>>,
  key: SigningKey,
  options: SignCardOptions = {},
): Promise<CardSignature> {
  const payload = new TextEncoder().encode(cardSigningPayload(card));
  const header: jose.JWSHeaderParameters = { alg: 'EdDSA', typ: 'JOSE', kid: key.kid };
  if (options.embedKey !== false) header.jwk = { kty: 'OKP', crv: 'Ed25519', x: key.publicJwk.x as string };
  if (options.jku) header.jku = options.jku;
  const jws = await new jose.FlattenedSign(payload).setProtectedHeader(header).sign(key.privateKey);
  return { protected: jws.protected as string, signature: jws.signature };
}

/** Returns the card with one more entry in `signatures`. */
export async function signAgentCard(
  card: Readonly<Record<string, unknown>>,
  key: SigningKey,
  options: SignCardOptions = {},
): Promise<Record<string, unknown>> {
  const signature = await createCardSignature(card, key, options);
  const existing = Array.isArray(card.signatures) ? (card.signatures as unknown[]) : [];
  return { ...card, signatures: [...existing, signature] };
}

export interface VerifyCardOptions {
  /** Keys pinned for the card's origin. When non-empty, only these are accepted and a signature is required. */
  readonly pinnedKeys?: readonly VerifiedKey[];
}

/**
 * Checks a card's signatures. `verified` when at least one signature verifies: with a pinned key, or —
 * when the origin has none pinned — with the key in its own protected header (`firstUse: true`, to be
 * pinned on approval). `invalid` names the reason for the first failing signature.
 */
export async function verifyAgentCard(
  card: Readonly<Record<string, unknown>>,
  options: VerifyCardOptions = {},
): Promise<CardSignatureCheck> {
  const pinned = options.pinnedKeys ?? [];
  const sigs = Array.isArray(card.signatures) ? (card.signatures as unknown[]) : [];
  if (sigs.length === 0) {
    return pinned.length > 0
      ? { status: 'invalid', reason: 'the card is unsigned, but a signing key is pinned for its origin' }
      : { status: 'unsigned' };
  }
  let payload: string;
  try {
    payload = jose.base64url.encode(cardSigningPayload(card));
  } catch (e) {
    return { status: 'invalid', reason: (e as Error).message };
  }
  const reasons: string[] = [];
  const verified: VerifiedKey[] = [];
  for (const [i, s] of sigs.entries()) {
    const r = await verifyOne(s, payload, pinned);
    if (typeof r === 'string') reasons.push(`signatures[${i}]: ${r}`);
    else if (!verified.some((v) => v.thumbprint === r.thumbprint)) verified.push(r);
  }
  if (verified.length > 0) return { status: 'verified', keys: verified, firstUse: pinned.length === 0 };
  return { status: 'invalid', reason: reasons.join('; ') };
}

function decodeHeader(protectedB64: string): Record<string, unknown> | string {
  try {
    const h = JSON.parse(new TextDecoder().decode(jose.base64url.decode(protectedB64))) as unknown;
    if (typeof h !== 'object' || h === null || Array.isArray(h)) return 'the protected header is not a JSON object';
    return h as Record<string, unknown>;
  } catch {
    return 'the protected header is not base64url JSON';
  }
}

function algAllowed(alg: unknown): alg is AllowedAlg {
  return typeof alg === 'string' && (ALLOWED_ALGS as readonly string[]).includes(alg);
}

async function verifyOne(
  entry: unknown,
  payload: string,
  pinned: readonly VerifiedKey[],
): Promise<VerifiedKey | string> {
  if (typeof entry !== 'object' || entry === null) return 'not an object';
  const e = entry as Record<string, unknown>;
  if (typeof e.protected !== 'string' || typeof e.signature !== 'string')
    return 'missing protected header or signature';
  const header = decodeHeader(e.protected);
  if (typeof header === 'string') return header;
  // alg lives in the protected header only; an unprotected alg could be swapped.
  if (!algAllowed(header.alg))
    return `alg ${JSON.stringify(header.alg ?? null)} is not allowed (only ${ALLOWED_ALGS.join(', ')})`;
  if (header.crit !== undefined) return 'crit header parameters are not supported';
  let candidates: VerifiedKey[];
  if (pinned.length > 0) {
    candidates =
      typeof header.kid === 'string'
        ? pinned.filter((k) => k.kid === header.kid || k.thumbprint === header.kid)
        : [...pinned];
    if (candidates.length === 0)
      return `signed with key ${String(header.kid)}, which is not the key pinned for this origin`;
  } else if (typeof header.jwk === 'object' && header.jwk !== null) {
    const jwk = header.jwk as Record<string, unknown>;
    if ('d' in jwk) return 'the embedded key carries a private member';
    try {
      candidates = [await toVerifiedKey(jwk as PublicJwk)];
    } catch (err) {
      return (err as Error).message;
    }
  } else {
    return header.jku !== undefined
      ? 'no key to check it with: the card names a jku, which Baton never fetches (pin the key for this origin instead)'
      : 'no key to check it with (no pinned key, no jwk in the protected header)';
  }
  let last = 'signature does not verify';
  for (const k of candidates) {
    try {
      const key = await jose.importJWK(k.jwk as jose.JWK, header.alg);
      await jose.flattenedVerify(
        {
          protected: e.protected,
          payload,
          signature: e.signature,
          ...(isRecord(e.header) ? { header: e.header } : {}),
        },
        key,
        {
          algorithms: [...ALLOWED_ALGS],
        },
      );
      return k;
    } catch (err) {
      last =
        err instanceof jose.errors.JWSSignatureVerificationFailed
          ? 'signature does not verify'
          : (err as Error).message;
    }
  }
  return last;
}

// ---------------------------------------------------------------------------------------------------
// Signed result envelope

export const ENVELOPE_TYP = 'baton-result+jws';

export interface EnvelopeArtifact {
  readonly artifactId: string;
  readonly name?: string;
  /** `artifactDigest` of the artifact. */
  readonly digest: string;
}

/**
 * Claims of a result envelope. The fields below are the ones verification checks; others (outcome,
 * agent, …) are signed and returned as they are.
 */
export interface ResultEnvelope {
  readonly taskId: string;
  readonly contextId?: string;
  /** `requestDigest` of the request that created the task (null when the relay did not see it). */
  readonly requestDigest?: string | null;
  readonly artifacts: readonly EnvelopeArtifact[];
  /** Terminal state, e.g. `TASK_STATE_COMPLETED`. */
  readonly state?: string;
  /** `resultDigest` of the final status, when the signer binds it. */
  readonly resultDigest?: string;
  /** Who executed it, e.g. `{id: 'formatter', kind: 'builtin'}`. */
  readonly executor?: Readonly<Record<string, unknown>>;
  /** Effective capabilities, e.g. `{write: false, shell: false, network: false}` (null when unknown). */
  readonly capabilities?: Readonly<Record<string, unknown>> | null;
  readonly issuedAt?: string;
  readonly [claim: string]: unknown;
}

/** Wire JSON of an artifact (`Artifact.toJSON` form): appended chunks concatenated into its parts. */
export interface ArtifactLike {
  readonly artifactId: string;
  readonly name?: string;
  readonly parts: readonly unknown[];
}

/**
 * `jcsDigest` (src/core/jcs.ts) with Node's native SHA-256: the same value, but the portable one in
 * core takes most of a second for a request of a few MiB, and the gateway digests every request on
 * its event loop.
 */
function jcsDigest(value: unknown): string {
  return `sha256:${createHash('sha256').update(canonicalize(value), 'utf8').digest('hex')}`;
}

/**
 * Digest of what an artifact carries: RFC 8785 of its id, name and every part (text, data, url, raw,
 * mediaType, filename) — not metadata, which relays annotate. Signer and verifier both pass the wire
 * JSON (`Artifact.toJSON(a)`), so the SDK's in-memory shape never reaches the digest.
 */
export function artifactDigest(artifact: ArtifactLike): string {
  return jcsDigest({ artifactId: artifact.artifactId, name: artifact.name ?? '', parts: artifact.parts });
}

/**
 * Digest of a request: RFC 8785 of the `SendMessageRequest` wire JSON (`SendMessageRequest.toJSON`),
 * `tenant` left out (a routing detail). Equal to the gateway's idempotency digest.
 */
export function requestDigest(sendMessageRequest: Readonly<Record<string, unknown>>): string {
  const { tenant: _tenant, ...rest } = sendMessageRequest;
  return jcsDigest(rest);
}

/** Digest of the terminal status (wire form `{state, message?}`; the timestamp is left out). */
export function resultDigest(status: Readonly<Record<string, unknown>>): string {
  return jcsDigest({ state: status.state, message: status.message ?? null });
}

/** Signs the claims as a compact JWS (EdDSA, kid, typ `baton-result+jws`) over their RFC 8785 form. */
export function signResultEnvelope(claims: Readonly<Record<string, unknown>>, key: SigningKey): Promise<string> {
  // The compact JWS jose's CompactSign makes (Ed25519 signatures are deterministic: the same bytes),
  // signed with node:crypto: a gateway signs every finished task, and jose's path through WebCrypto
  // costs about three times as much CPU on the event loop. With a callback, node:crypto signs on libuv's
  // thread pool, so a burst of tasks ending at once does not hold up the events being relayed.
  return new Promise((resolve, reject) => {
    try {
      const header = Buffer.from(JSON.stringify({ alg: 'EdDSA', kid: key.kid, typ: ENVELOPE_TYP })).toString(
        'base64url',
      );
      const input = `${header}.${Buffer.from(canonicalize(claims), 'utf8').toString('base64url')}`;
      signBytes(null, Buffer.from(input), keyObjectOf(key), (err, signature) => {
        if (err) reject(err);
        else resolve(`${input}.${signature.toString('base64url')}`);
      });
    } catch (e) {
      reject(e instanceof Error ? e : new Error(String(e)));
    }
  });
}

const keyObjects = new WeakMap<SigningKey, KeyObject>();
function keyObjectOf(key: SigningKey): KeyObject {
  let k = keyObjects.get(key);
  if (!k) {
    k = KeyObject.from(key.privateKey);
    keyObjects.set(key, k);
  }
  return k;
}

export type EnvelopeFailure =
  | 'malformed'
  | 'alg-not-allowed'
  | 'unknown-key'
  | 'bad-signature'
  | 'request-mismatch'
  | 'result-mismatch'
  | 'task-mismatch'
  | 'artifact-mismatch'
  | 'artifact-missing'
  | 'artifact-unsigned'
  | 'artifact-duplicate';

export type EnvelopeVerification =
  | { readonly ok: true; readonly envelope: ResultEnvelope; readonly key: VerifiedKey }
  | {
      readonly ok: false;
      readonly failure: EnvelopeFailure;
      readonly message: string;
      readonly artifactId?: string;
      readonly artifactName?: string;
    };

export interface VerifyEnvelopeInput {
  /** The issuer's keys (pinned for the gateway's origin). Never fetched. */
  readonly keys: readonly VerifiedKey[];
  /** The task the client asked about. */
  readonly taskId: string;
  /** The context the client's task is in; checked when given (the envelope must sign the same one). */
  readonly contextId?: string;
  /** What the client received: the final artifacts from GetTask, wire JSON. */
  readonly artifacts: readonly ArtifactLike[];
  /**
   * `requestDigest` of what the client sent; checked when given. Several when the client may have sent
   * the same message in more than one form (streaming or not): the envelope must sign one of them.
   */
  readonly requestDigest?: string | readonly string[];
  /** The terminal state the client saw; checked when given (an envelope that does not sign a state fails). */
  readonly state?: string;
  /** The final status (wire JSON); checked against `resultDigest` when given (an envelope without one fails). */
  readonly status?: Readonly<Record<string, unknown>>;
}

/** The first artifact id that occurs twice in a list, if any. */
function duplicateId(list: readonly { readonly artifactId: string }[]): string | undefined {
  const seen = new Set<string>();
  for (const a of list) {
    if (seen.has(a.artifactId)) return a.artifactId;
    seen.add(a.artifactId);
  }
  return undefined;
}

/** Verifies an envelope against what the client received; on failure says what, and which artifact. */
export async function verifyResultEnvelope(jws: string, input: VerifyEnvelopeInput): Promise<EnvelopeVerification> {
  let header: jose.ProtectedHeaderParameters;
  try {
    header = jose.decodeProtectedHeader(jws);
  } catch {
    return { ok: false, failure: 'malformed', message: 'The result envelope is not a compact JWS.' };
  }
  if (!algAllowed(header.alg))
    return {
      ok: false,
      failure: 'alg-not-allowed',
      message: `The result envelope uses alg ${JSON.stringify(header.alg ?? null)}, which is not allowed.`,
    };
  const candidates =
    typeof header.kid === 'string'
      ? input.keys.filter((k) => k.kid === header.kid || k.thumbprint === header.kid)
      : [...input.keys];
  if (candidates.length === 0)
    return {
      ok: false,
      failure: 'unknown-key',
      message: 'The result envelope is signed with a key that is not pinned for this agent.',
    };
  let envelope: ResultEnvelope | undefined;
  let used: VerifiedKey | undefined;
  for (const k of candidates) {
    try {
      const key = await jose.importJWK(k.jwk as jose.JWK, header.alg);
      const { payload, protectedHeader } = await jose.compactVerify(jws, key, { algorithms: [...ALLOWED_ALGS] });
      if (protectedHeader.typ !== ENVELOPE_TYP)
        return {
          ok: false,
          failure: 'malformed',
          message: `The envelope's typ is ${String(protectedHeader.typ)}, not ${ENVELOPE_TYP}.`,
        };
      envelope = JSON.parse(new TextDecoder().decode(payload)) as ResultEnvelope;
      used = k;
      break;
    } catch {
      // try the next pinned key
    }
  }
  if (!envelope || !used)
    return {
      ok: false,
      failure: 'bad-signature',
      message: 'The result envelope signature does not verify: the result may have been altered.',
    };
  if (
    !isRecord(envelope) ||
    !Array.isArray(envelope.artifacts) ||
    !envelope.artifacts.every((a) => isRecord(a) && typeof a.artifactId === 'string' && typeof a.digest === 'string')
  ) {
    return { ok: false, failure: 'malformed', message: 'The result envelope has an unknown format.' };
  }
  if (envelope.taskId !== input.taskId)
    return {
      ok: false,
      failure: 'task-mismatch',
      message: `The envelope is for task ${String(envelope.taskId)}, not ${input.taskId}.`,
    };
  if (input.contextId !== undefined && envelope.contextId !== input.contextId) {
    return {
      ok: false,
      failure: 'task-mismatch',
      message: `The envelope is for context ${String(envelope.contextId ?? '(none)')}, not ${input.contextId}.`,
    };
  }
  if (input.requestDigest !== undefined) {
    const sent = typeof input.requestDigest === 'string' ? [input.requestDigest] : input.requestDigest;
    if (typeof envelope.requestDigest !== 'string') {
      return {
        ok: false,
        failure: 'request-mismatch',
        message:
          'The envelope does not say which request it answers (no request digest), so it cannot be bound to the one sent.',
      };
    }
    if (!sent.includes(envelope.requestDigest))
      return {
        ok: false,
        failure: 'request-mismatch',
        message: 'The envelope was signed for a different request than the one sent.',
      };
  }
  if (input.state !== undefined && envelope.state !== input.state) {
    return {
      ok: false,
      failure: 'result-mismatch',
      message:
        envelope.state === undefined
          ? `The envelope does not sign the task's state, but the task shows ${input.state}.`
          : `The agent signed the state ${String(envelope.state)}, but the task shows ${input.state}.`,
    };
  }
  if (input.status && (envelope.resultDigest === undefined || resultDigest(input.status) !== envelope.resultDigest)) {
    return {
      ok: false,
      failure: 'result-mismatch',
      message: 'The final status (state and message) differs from the one the agent signed.',
    };
  }
  // One entry per artifact id, on both sides: with two entries for one id, which bytes were signed and
  // which are shown would depend on who picks the first. Identical twins fail too: "identical" could only
  // mean equal digests, and the digest leaves out what relays annotate (metadata, description).
  const signedTwice = duplicateId(envelope.artifacts);
  if (signedTwice !== undefined)
    return {
      ok: false,
      failure: 'artifact-duplicate',
      message: `The envelope lists artifact ${signedTwice} more than once.`,
      artifactId: signedTwice,
    };
  const receivedTwice = duplicateId(input.artifacts);
  if (receivedTwice !== undefined) {
    const name = input.artifacts.find((a) => a.artifactId === receivedTwice)?.name;
    return {
      ok: false,
      failure: 'artifact-duplicate',
      message: `The task lists artifact "${name || receivedTwice}" more than once: Baton cannot tell which one the agent signed. Do not apply it.`,
      artifactId: receivedTwice,
      ...(name !== undefined ? { artifactName: name } : {}),
    };
  }
  for (const signed of envelope.artifacts) {
    const label = signed.name || signed.artifactId;
    const named = signed.name !== undefined ? { artifactName: signed.name } : {};
    const got = input.artifacts.find((a) => a.artifactId === signed.artifactId);
    if (!got)
      return {
        ok: false,
        failure: 'artifact-missing',
        message: `Artifact "${label}" was signed but not received.`,
        artifactId: signed.artifactId,
        ...named,
      };
    if (artifactDigest(got) !== signed.digest) {
      return {
        ok: false,
        failure: 'artifact-mismatch',
        message: `Artifact "${label}" does not match what the agent signed: it was altered after signing. Do not apply it.`,
        artifactId: signed.artifactId,
        ...named,
      };
    }
  }
  for (const a of input.artifacts) {
    if (!envelope.artifacts.some((s) => s.artifactId === a.artifactId)) {
      return {
        ok: false,
        failure: 'artifact-unsigned',
        message: `Artifact "${a.name ?? a.artifactId}" is not covered by the signature.`,
        artifactId: a.artifactId,
        ...(a.name !== undefined ? { artifactName: a.name } : {}),
      };
    }
  }
  return { ok: true, envelope, key: used };
}
