// "Verified" means the user reviews exactly what was signed: the result check (src/node/resultCheck.ts)
// on delegations run by the real runner and SDK client against a signing agent on 127.0.0.1 that
// tampers with its stream, its signed claims, its key or its final task — each ambiguity is a failure
// that says what did not match — and against Baton's gateway, whose honest results verify.
import * as assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { PATCH_ARTIFACT } from '../../../src/core/batonProfile';
import { DelegationJournal } from '../../../src/core/delegation';
import type { JournalEntry } from '../../../src/core/delegation';
import type { AgentCard } from '@a2a-js/sdk';
import { startGateway } from '../../../src/gateway/server';
import type { RunningGateway } from '../../../src/gateway/server';
import { connectAgent, normalizeCard } from '../../../src/node/a2a/clientFactory';
import { JournalStore } from '../../../src/node/journalStore';
import { checkResult, finalTaskOf, resultKeys, signedResultsOf } from '../../../src/node/resultCheck';
import type { ResultCheck } from '../../../src/node/resultCheck';
import { generateSigningKey } from '../../../src/node/signing';
import { scriptedAgent } from '../gateway/helpers';
import type { AgentServer } from './agentServers';
import { newRun, tempDir, within } from './harness';
import { PATCH_ID, SIGNED_PATCH, startSigningAgent } from './signingAgent';
import type { SigningAgent } from './signingAgent';
import { CASES, MESSAGE_DIFF } from './tamperCases';

async function delegateTo(
  agent: SigningAgent | { card: SigningAgent['card']; jsonRpc: SigningAgent['jsonRpc'] },
  store: JournalStore,
  name: string,
): Promise<{ check: ResultCheck; journal: DelegationJournal }> {
  const run = await newRun(agent as unknown as AgentServer, store, `change x «${name}»`);
  await within(run.runner.start(), 15_000, name);
  const entries = await run.entries();
  const journal = DelegationJournal.fromEntries(entries);
  const { promised } = signedResultsOf(agent.card);
  const check = await checkResult({
    journal,
    final: finalTaskOf(entries),
    keys: await resultKeys([], agent.card),
    signaturesPromised: promised,
    signer: new URL(agent.jsonRpc.url).origin,
  });
  return { check, journal };
}

describe('result check: a signing agent that tampers with what it sends', () => {
  let agent: SigningAgent;
  let plain: SigningAgent;
  let tmp: ReturnType<typeof tempDir>;
  let store: JournalStore;
  before(async () => {
    const scenarios = new Map(CASES.map((c) => [c.name, c.tamper]));
    agent = await startSigningAgent(scenarios);
    plain = await startSigningAgent(scenarios, { promise: false });
    tmp = tempDir();
    store = new JournalStore(join(tmp.dir, 'journals'));
  });
  after(async () => {
    await store.close();
    await agent.close();
    await plain.close();
    tmp.cleanup();
  });

  for (const c of CASES) {
    it(
      c.failure
        ? `${c.name}: not verified (${c.failure}), and no patch is offered`
        : `${c.name}: verified, with the signed patch byte for byte`,
      async () => {
        const { check, journal } = await delegateTo(agent, store, c.name);
        assert.equal(
          journal.decide()?.outcome === 'completed' || journal.decide()?.outcome === 'failed',
          true,
          journal.decide()?.reason,
        );
        if (!c.failure) {
          assert.equal(check.status, 'verified', check.detail);
          assert.match(check.detail, c.why);
          assert.ok(check.status === 'verified' && check.patch);
          assert.equal(check.patch.bytes.toString('utf8'), SIGNED_PATCH);
          assert.equal(check.patch.artifactId, PATCH_ID);
          return;
        }
        assert.equal(check.status, 'invalid', `${c.name} was ${check.status}: ${check.detail}`);
        assert.equal(check.status === 'invalid' && check.failure, c.failure, check.detail);
        assert.match(check.detail, c.why);
        assert.ok(!('patch' in check), 'a result that did not verify offers no patch');
      },
    );
  }

  it('a patch under another name is verified with the result; a diff in the final message is offered, unsigned', async () => {
    const renamed = await delegateTo(agent, store, 'signed-fix-diff');
    assert.ok(renamed.check.status === 'verified', renamed.check.detail);
    assert.deepEqual(
      renamed.check.patches?.map((p) => [p.name, p.source, p.signature, p.bytes.toString('utf8')]),
      [['fix.diff', 'artifact', 'verified', SIGNED_PATCH]],
    );
    const inMessage = await delegateTo(agent, store, 'signed-message-diff');
    assert.ok(inMessage.check.status === 'verified', inMessage.check.detail);
    assert.deepEqual(
      inMessage.check.patches?.map((p) => [p.name, p.source, p.signature, p.bytes.toString('utf8')]),
      [
        [PATCH_ARTIFACT.name, 'artifact', 'verified', SIGNED_PATCH],
        ['message', 'message', 'unsigned', MESSAGE_DIFF],
      ],
    );
    // From an agent that signs nothing, the same patches are all unsigned.
    const plainMessage = await delegateTo(plain, store, 'signed-message-diff');
    assert.equal(plainMessage.check.status, 'unsigned', plainMessage.check.detail);
    assert.deepEqual(
      plainMessage.check.patches?.map((p) => p.signature),
      ['unsigned', 'unsigned'],
    );
  });

  it('the journal shows the final changes.patch, not one streamed before it under the same name', async () => {
    const { journal } = await delegateTo(agent, store, 'streamed-other-patch');
    assert.equal(journal.patch()?.text, SIGNED_PATCH);
    assert.equal(journal.patch()?.final, true);
  });

  it('from an agent that promises no signatures: the final patch, unverified; duplicates and several patches still fail', async () => {
    const honest = await delegateTo(plain, store, 'unsigned');
    assert.equal(honest.check.status, 'unsigned', honest.check.detail);
    assert.equal(honest.check.detail, 'the agent sent no signed result');
    assert.equal(honest.check.status === 'unsigned' && honest.check.patch?.bytes.toString('utf8'), SIGNED_PATCH);
    // Nothing is promised about the stream: the final patch is the one shown, and the detail says the stream differed.
    for (const name of ['streamed-other-patch', 'chunk-changed']) {
      const streamed = await delegateTo(plain, store, name);
      assert.equal(streamed.check.status, 'unsigned', streamed.check.detail);
      assert.match(streamed.check.detail, /what was streamed differs from the final task, which is what is shown/);
      assert.equal(streamed.check.status === 'unsigned' && streamed.check.patch?.bytes.toString('utf8'), SIGNED_PATCH);
    }
    for (const name of ['dup-evil-after', 'dup-identical']) {
      const r = await delegateTo(plain, store, name);
      assert.ok(
        r.check.status === 'invalid' && r.check.failure === 'artifact-duplicate',
        `${name}: ${r.check.status} ${r.check.detail}`,
      );
    }
    const two = await delegateTo(plain, store, 'two-patches');
    assert.ok(two.check.status === 'invalid' && two.check.failure === 'patch-ambiguous', two.check.detail);
  });
});

describe("result check: Baton's gateway", () => {
  let gw: RunningGateway;
  let tmp: ReturnType<typeof tempDir>;
  let store: JournalStore;
  before(async () => {
    tmp = tempDir();
    gw = await startGateway({
      stateDir: join(tmp.dir, 'gw'),
      localAgents: [scriptedAgent({ steps: 3 })],
      log: () => undefined,
    });
    store = new JournalStore(join(tmp.dir, 'journals'));
  });
  after(async () => {
    await store.close();
    await gw.close();
    tmp.cleanup();
  });

  /** Delegates to the echo route over one of its interfaces and checks the result. */
  async function delegate(
    binding: string,
    version: string,
  ): Promise<{ check: ResultCheck; journal: DelegationJournal; entries: JournalEntry[]; card: AgentCard }> {
    const raw = (await (
      await fetch(`${gw.url}/a2a/echo/.well-known/agent-card.json`, { headers: { 'A2A-Version': '1.0' } })
    ).json()) as unknown;
    const card = normalizeCard(raw);
    const iface = card.supportedInterfaces.find((i) => i.protocolBinding === binding && i.protocolVersion === version);
    assert.ok(iface, `${binding} ${version}`);
    const endpoint = { url: iface.url, protocolBinding: binding, protocolVersion: version };
    const connection = await connectAgent({ card, endpoint, getToken: async () => gw.token });
    const run = await newRun({ card, jsonRpc: endpoint } as unknown as AgentServer, store, 'Echo', {
      connection,
      endpoint,
    });
    await within(run.runner.start(), 20_000, 'delegation');
    const entries = await run.entries();
    const journal = DelegationJournal.fromEntries(entries);
    const check = await checkResult({
      journal,
      final: finalTaskOf(entries),
      keys: await resultKeys([], card),
      signaturesPromised: signedResultsOf(card).promised,
      signer: gw.url,
    });
    return { check, journal, entries, card };
  }

  it('over A2A 1.0 (JSON-RPC and HTTP+JSON) the result verifies with everything bound', async () => {
    for (const binding of ['JSONRPC', 'HTTP+JSON']) {
      const { check } = await delegate(binding, '1.0');
      assert.equal(check.status, 'verified', `${binding}: ${check.detail}`);
    }
  });

  it('over A2A 0.3 the agent signs the request as 0.3 carried it, which is not the one sent: not verified, and it says why', async () => {
    for (const binding of ['JSONRPC', 'HTTP+JSON']) {
      const { check } = await delegate(binding, '0.3');
      assert.ok(
        check.status === 'invalid' && check.failure === 'request-mismatch',
        `${binding}: ${check.status} ${check.detail}`,
      );
      assert.match(
        check.detail,
        /went over A2A 0\.3, which does not carry all of what Baton sent.*approve the agent's A2A 1\.0 interface/,
      );
    }
  });

  it('an honest result verifies with everything bound, and the patch is the artifact the gateway signed', async () => {
    const { check, journal, entries, card } = await delegate('JSONRPC', '1.0');
    assert.equal(check.status, 'verified', check.detail);
    // Who ran it comes from the signed claims.
    assert.deepEqual(check.status === 'verified' && check.executor, { id: 'echo', kind: 'builtin', confined: false });
    const row = await gw.store.getTask('echo', journal.taskId ?? '');
    const stored = JSON.parse(row?.snapshot ?? '{}') as {
      artifacts?: Array<{ name?: string; parts: Array<{ text?: string }> }>;
    };
    const signedPatch = stored.artifacts
      ?.find((a) => a.name === PATCH_ARTIFACT.name)
      ?.parts.map((p) => p.text ?? '')
      .join('');
    assert.ok(signedPatch);
    assert.equal(check.status === 'verified' && check.patch?.bytes.toString('utf8'), signedPatch);
    // A key the card does not name (another gateway's, a rotated one) does not verify it.
    const otherKey = await generateSigningKey();
    const other = await checkResult({
      journal,
      final: finalTaskOf(entries),
      keys: await resultKeys([], {
        ...card,
        capabilities: card.capabilities && {
          ...card.capabilities,
          extensions: card.capabilities.extensions.map((e) => ({
            ...e,
            params: e.params && { ...e.params, publicKeyJwk: otherKey.publicJwk },
          })),
        },
      }),
      signaturesPromised: true,
      signer: gw.url,
    });
    assert.ok(other.status === 'invalid' && other.failure === 'unknown-key', other.detail);
  });
});
