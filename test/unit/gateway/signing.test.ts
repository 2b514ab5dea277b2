import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { Artifact, SendMessageRequest, TaskStatus } from '@a2a-js/sdk';
import { requestDigest, toVerifiedKey, verifyAgentCard, verifyResultEnvelope } from '../../../src/node/signing';
import type { PublicJwk } from '../../../src/node/signing';
import { clientFor, sendRequest, suiteGateway, userMessage } from './helpers';

describe('gateway: keys, signed cards and signed results', () => {
  const gw = suiteGateway();

  it('creates its key and token 0600 in a 0700 state folder', () => {
    assert.equal(statSync(gw.stateDir).mode & 0o777, 0o700);
    assert.equal(statSync(join(gw.stateDir, 'gateway-key.jwk')).mode & 0o777, 0o600);
    assert.equal(statSync(gw.tokenFile).mode & 0o777, 0o600);
  });

  it('signs every card it serves, with the key its cards publish', async () => {
    for (const path of ['/.well-known/agent-card.json', '/a2a/echo/.well-known/agent-card.json']) {
      const card = (await (await fetch(`${gw.url}${path}`, { headers: { 'A2A-Version': '1.0' } })).json()) as Record<
        string,
        unknown
      >;
      const jwk = (
        card.capabilities as { extensions: Array<{ uri: string; params?: { publicKeyJwk?: PublicJwk } }> }
      ).extensions.find((e) => e.uri === 'urn:baton:a2a:signed-result:v1')?.params?.publicKeyJwk;
      assert.ok(jwk, path);
      const check = await verifyAgentCard(card, { pinnedKeys: [await toVerifiedKey(jwk)] });
      assert.equal(check.status, 'verified', `${path}: ${JSON.stringify(check)}`);
      const tampered = { ...card, description: 'something else' };
      assert.equal((await verifyAgentCard(tampered, { pinnedKeys: [await toVerifiedKey(jwk)] })).status, 'invalid');
    }
  });

  it('puts a result envelope on the terminal task that verifies against what GetTask returns, and fails on a tampered patch', async () => {
    const card = (await (
      await fetch(`${gw.url}/a2a/echo/.well-known/agent-card.json`, { headers: { 'A2A-Version': '1.0' } })
    ).json()) as { capabilities: { extensions: Array<{ uri: string; params?: { publicKeyJwk?: PublicJwk } }> } };
    const jwk = card.capabilities.extensions.find((e) => e.uri === 'urn:baton:a2a:signed-result:v1')?.params
      ?.publicKeyJwk as PublicJwk;
    const client = await clientFor(`${gw.url}/a2a/echo/.well-known/agent-card.json`, gw.token);
    const msg = userMessage('format src');
    const done = await client.sendMessage(sendRequest(msg));
    // The envelope binds the request as the client sent it; the SDK client sends it unchanged.
    assert.ok('id' in done);
    const task = await client.getTask({ tenant: '', id: done.id });
    const jws = task.metadata?.['baton/resultEnvelope'];
    assert.equal(typeof jws, 'string');
    const artifacts = task.artifacts.map(
      (a) => Artifact.toJSON(a) as { artifactId: string; name?: string; parts: unknown[] },
    );
    const ok = await verifyResultEnvelope(String(jws), {
      keys: [await toVerifiedKey(jwk)],
      taskId: task.id,
      artifacts,
      requestDigest: requestDigest(SendMessageRequest.toJSON(sendRequest(msg)) as Record<string, unknown>),
      status: TaskStatus.toJSON(task.status ?? { state: 0, message: undefined, timestamp: undefined }) as Record<
        string,
        unknown
      >,
    });
    assert.equal(ok.ok, true, JSON.stringify(ok));
    if (ok.ok) {
      assert.equal(ok.envelope.executor?.id, 'echo');
      assert.deepEqual(ok.envelope.capabilities, { write: false, shell: false, network: false });
    }
    const tampered = artifacts.map((a) => ({
      ...a,
      parts: [{ text: 'diff --git a/evil b/evil\n', mediaType: 'text/x-diff' }],
    }));
    const bad = await verifyResultEnvelope(String(jws), {
      keys: [await toVerifiedKey(jwk)],
      taskId: task.id,
      artifacts: tampered,
    });
    assert.equal(bad.ok, false);
    if (!bad.ok) assert.equal(bad.failure, 'artifact-mismatch');
  });
});

describe('gateway: artifact digest', () => {
  it("equals src/node/signing.ts's artifactDigest, for text, unicode, data and chunked parts", async () => {
    const { artifactDigest } = await import('../../../src/node/signing');
    const { artifactDigestOffLoop } = await import('../../../src/gateway/resultEnvelope');
    const cases = [
      {
        artifactId: 'a',
        name: 'changes.patch',
        parts: [{ text: 'diff --git a/x b/x\n', mediaType: 'text/x-diff', filename: 'changes.patch' }],
      },
      { artifactId: 'b', parts: [{ text: 'é😀\u2028' }, { text: 'second chunk' }] },
      { artifactId: 'c', name: '', parts: [{ data: { z: 1, a: [true, null, 1.5] } }] },
    ];
    for (const c of cases) assert.equal(await artifactDigestOffLoop(c), artifactDigest(c));
  });

  it('is the same hashed off the event loop, for small artifacts and for patches above the hand-off size', async () => {
    const { artifactDigest } = await import('../../../src/node/signing');
    const { artifactDigestOffLoop, HASH_OFF_LOOP_CHARS } = await import('../../../src/gateway/resultEnvelope');
    const big = `diff --git a/x b/x\n${'+é😀 line\n'.repeat(HASH_OFF_LOOP_CHARS / 4)}`;
    const cases = [
      { artifactId: 'small', parts: [{ text: 'diff --git a/x b/x\n' }] },
      { artifactId: 'big', name: 'changes.patch', parts: [{ text: big, mediaType: 'text/x-diff' }] },
      { artifactId: 'edge', parts: [{ text: 'x'.repeat(HASH_OFF_LOOP_CHARS) }] },
    ];
    for (const c of cases) assert.equal(await artifactDigestOffLoop(c), artifactDigest(c));
  });
});
