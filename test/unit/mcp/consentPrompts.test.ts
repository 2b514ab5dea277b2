/**
 * The user's consent for a child an agent at the gateway starts, as the extension sees it: a real
 * gateway runs a stand-in coding CLI that delegates three times through `baton mcp`; the client
 * follows the parent with its own delegation journal (`DelegationManager`), reads the open questions
 * from it (`openConsents`) and answers them on the local gateway's consent route with its token
 * (`LocalGateway.answerConsent`): the first allowed, the second denied, the third left to expire. The
 * journal shows each question and decision in the parent's timeline, the allowed child under it, and
 * after a reload nothing is open any more. The pure parts (reading the metadata, the prompt's words,
 * which gateway can be answered) are checked on their own.
 */
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { META } from '../../../src/core/batonProfile';
import type { DelegationJournal } from '../../../src/core/delegation';
import {
  consentOf,
  consentPromptText,
  consentUnanswerable,
  foldConsent,
  MAX_CONSENTS,
  openConsents,
  type ConsentDecision,
  type ConsentQuestion,
} from '../../../src/core/delegation/consent';
import { english } from '../../../src/core/protocol/l10n';
import { timelineEntryText } from '../../../src/core/protocol/timelineText';
import { LocalGateway, type LocalGatewayInfo } from '../../../src/extension/gateway/localGateway';
import { discoverLocalAgents } from '../../../src/gateway/agents/discover';
import { startGateway, type RunningGateway } from '../../../src/gateway/server';
import { WorkspaceManager } from '../../../src/gateway/workspace/workspaceManager';
import { connectAgent, normalizeCard, type PinnedEndpoint } from '../../../src/node/a2a/clientFactory';
import { DelegationManager } from '../../../src/node/a2a/delegationManager';
import { JournalStore } from '../../../src/node/journalStore';
import { makeRepo, tempSpace, type TempSpace } from '../workspace/repoFixtures';
import { FAST_RECONNECT, makeRequest, within } from '../delegation/harness';
import { mcpCommand, STANDIN } from './helpers';

const question = (over: Record<string, unknown> = {}): Record<string, unknown> => ({
  id: '0b6c2f9e-1d1a-4c62-9d55-2a4f6f3f1c11',
  parentTaskId: 'T-parent',
  parentAgentId: 'opencode',
  agentId: 'formatter',
  agentName: 'Formatter (Prettier)',
  title: 'format a.ts',
  capabilities: { write: true, shell: false, network: false },
  expiresAt: new Date(Date.now() + 40_000).toISOString(),
  ...over,
});

describe('consent questions: reading, folding, words', () => {
  it('reads a question and a decision, and refuses malformed ones', () => {
    const q = consentOf({ [META.consent]: question() });
    assert.equal(q?.kind, 'question');
    assert.equal(q?.kind === 'question' && q.question.agentName, 'Formatter (Prettier)');
    assert.deepEqual(q?.kind === 'question' && q.question.capabilities, { write: true, shell: false, network: false });
    assert.deepEqual(consentOf({ [META.consent]: { id: 'abc-1', decision: 'denied' } }), {
      kind: 'decision',
      id: 'abc-1',
      decision: 'denied',
    });
    assert.equal(consentOf({ [META.consent]: { id: 'abc-1', decision: 'maybe' } }), undefined);
    assert.equal(consentOf({ [META.consent]: question({ expiresAt: 'soon' }) }), undefined);
    assert.equal(consentOf({ [META.consent]: question({ id: '../shutdown' }) }), undefined, 'not a path segment');
    assert.equal(consentOf({ [META.child]: question() }), undefined);
    assert.equal(consentOf(undefined), undefined);
    const long = consentOf({ [META.consent]: question({ title: 'x'.repeat(5000), agentName: undefined }) });
    assert.equal(long?.kind === 'question' && long.question.title.length, 200);
    assert.equal(long?.kind === 'question' && long.question.agentName, 'formatter', 'the agent id stands in');
  });

  it('open means undecided and unexpired; a decision seen first keeps its question closed', () => {
    const now = Date.now();
    const consents = new Map<string, { question?: ConsentQuestion; decision?: ConsentDecision }>();
    const ask = (id: string, expiresAt: number) => {
      const r = consentOf({ [META.consent]: question({ id, expiresAt: new Date(expiresAt).toISOString() }) });
      assert.ok(r);
      foldConsent(consents, r);
    };
    ask('a', now + 10_000);
    ask('b', now - 1);
    foldConsent(consents, { kind: 'decision', id: 'c', decision: 'allowed' });
    ask('c', now + 10_000);
    ask('d', now + 10_000);
    foldConsent(consents, { kind: 'decision', id: 'd', decision: 'expired' });
    const records = [...consents.values()].flatMap((c) =>
      c.question ? [c.decision ? { question: c.question, decision: c.decision } : { question: c.question }] : [],
    );
    assert.deepEqual(
      openConsents(records, now).map((q) => q.id),
      ['a'],
    );
    for (let i = 0; i < MAX_CONSENTS + 10; i++)
      foldConsent(consents, { kind: 'decision', id: `x${i}`, decision: 'denied' });
    assert.equal(consents.size, MAX_CONSENTS);
  });

  it('says who wants to delegate to whom, what for and with which capabilities', () => {
    const r = consentOf({ [META.consent]: question() });
    assert.ok(r?.kind === 'question');
    assert.equal(
      consentPromptText(r.question, 'OpenCode', english),
      'OpenCode wants to delegate to Formatter (Prettier): format a.ts (capabilities: write)',
    );
    const bare = { ...r.question, title: '', capabilities: { write: false, shell: false, network: false } };
    assert.equal(
      consentPromptText(bare, 'OpenCode', english),
      'OpenCode wants to delegate to Formatter (Prettier) (capabilities: read only)',
    );
    const seen: string[] = [];
    consentPromptText(r.question, 'OpenCode', (m) => (seen.push(m), m));
    assert.ok(seen.includes('{0} wants to delegate to {1}: {2} (capabilities: {3})'), 'the message is its own key');
  });

  it('answers only questions of the local gateway', () => {
    const local = 'http://127.0.0.1:4100';
    assert.equal(consentUnanswerable('http://127.0.0.1:4100/a2a/opencode', local), undefined);
    assert.equal(consentUnanswerable('http://127.0.0.1:4101/a2a/opencode', local), 'remote');
    assert.equal(consentUnanswerable('https://gw.example.com/a2a/opencode', local), 'remote');
    assert.equal(consentUnanswerable('not a url', local), 'remote');
    assert.equal(consentUnanswerable('http://127.0.0.1:4100/a2a/opencode', undefined), 'no-local-gateway');
  });
});

describe('consent for a coding CLI’s children, answered from the client’s journal', () => {
  let space: TempSpace;
  let gw: RunningGateway;
  let repo: string;
  let stateDir: string;
  before(async () => {
    space = tempSpace('baton-consent-ui-');
    repo = makeRepo(space.base, 'repo', { 'a.ts': 'export const   a = {b:1}\n' });
    stateDir = join(space.base, 'state');
    gw = await startGateway({
      stateDir,
      roots: [space.base],
      localAgents: await discoverLocalAgents({
        manager: new WorkspaceManager({ root: space.root, userHome: space.home }),
        pathVar: STANDIN,
        confine: { mode: 'off' },
        realHome: space.home,
        agentPaceMs: 500,
      }),
      mcpCommand: mcpCommand(),
      delegation: { consentTimeoutMs: 3_000 },
      log: () => undefined,
    });
  });
  after(async () => {
    await gw?.close();
    space?.dispose();
  });

  it('asks once per question; allowed runs under its parent, denied and expired are refused; nothing reopens after a reload', async () => {
    const raw: unknown = await (
      await fetch(`${gw.url}/a2a/opencode/.well-known/agent-card.json`, {
        headers: { 'A2A-Version': '1.0', Authorization: `Bearer ${gw.token}` },
      })
    ).json();
    const card = normalizeCard(raw);
    const iface = card.supportedInterfaces.find((i) => i.protocolBinding === 'JSONRPC' && i.protocolVersion === '1.0');
    assert.ok(iface);
    const endpoint: PinnedEndpoint = { url: iface.url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' };
    const info: LocalGatewayInfo = {
      url: gw.url,
      pid: process.pid,
      tokenFile: join(stateDir, 'token'),
      instanceId: '',
      clis: [],
    };
    const local = new LocalGateway({ stateDir, command: [], idleStopMs: 0, log: () => undefined });
    assert.equal(local.token(info), gw.token, 'the token file is the gateway’s');

    const line = (task: string) =>
      `@standin mcp delegate ${JSON.stringify({ agent: 'formatter', task, wait_seconds: 50 })}`;
    const base = makeRequest(endpoint, 'Work with other agents');
    const request = {
      ...base,
      agent: { ...base.agent, name: 'OpenCode' },
      message: {
        ...base.message,
        parts: [
          {
            content: {
              $case: 'text' as const,
              value: ['Work with other agents', line('one'), line('two'), line('three')].join('\n'),
            },
            filename: '',
            mediaType: 'text/plain',
            metadata: undefined,
          },
        ],
        metadata: { ...base.message.metadata, [META.repository]: repo },
      },
    };
    const store = new JournalStore(join(space.base, 'journals'));
    const open = () =>
      DelegationManager.open({
        store,
        connect: async () => connectAgent({ card, endpoint, getToken: async () => gw.token }),
        runnerOptions: { reconnect: FAST_RECONNECT, pollIntervalMs: 50, cancelWaitMs: 1000, drainTimeoutMs: 1000 },
      });
    const m = await open();
    const asked: string[] = [];
    const answers: Array<string | undefined> = [];
    const seen = new Set<string>();
    const onChange = async (): Promise<void> => {
      const j = m.get(request.requestId);
      for (const q of j ? openConsents(j.consents(), Date.now()) : []) {
        if (seen.has(q.id)) continue;
        seen.add(q.id);
        asked.push(q.title);
        assert.equal(consentUnanswerable(request.agent.endpoint, gw.url), undefined, 'the local gateway’s question');
        if (q.title === 'one') answers.push(await local.answerConsent(info, q.id, 'allow'));
        if (q.title === 'two') {
          answers.push(await local.answerConsent(info, q.id, 'deny'));
          answers.push(await local.answerConsent(info, q.id, 'allow'));
        }
      }
    };
    const pending: Array<Promise<void>> = [];
    const unsubscribe = m.onDidChange(() => void pending.push(onChange()));
    await m.start(request);
    await within(
      (async () => {
        while (!['completed', 'failed'].includes(m.get(request.requestId)?.state() ?? ''))
          await new Promise((r) => setTimeout(r, 50));
        await m.idle(request.requestId);
      })(),
      60_000,
      'the parent to finish',
    );
    await Promise.all(pending);
    unsubscribe();
    const j = m.get(request.requestId) as DelegationJournal;
    m.dispose();

    assert.deepEqual(asked, ['one', 'two', 'three'], 'each question once');
    assert.equal(answers[0], undefined, 'the allow was taken');
    assert.equal(answers[1], undefined, 'the deny was taken');
    assert.match(answers[2] ?? '', /no consent question .* is waiting \(it was answered or it expired\)/);
    assert.deepEqual(
      j.consents().map((c) => [c.question.title, c.decision]),
      [
        ['one', 'allowed'],
        ['two', 'denied'],
        ['three', 'expired'],
      ],
    );
    const children = j.childTasks();
    assert.deepEqual(
      children.map((c) => [c.agentId, c.title, c.state]),
      [['formatter', 'one', 'completed']],
      'only the allowed child ran',
    );
    const lines = j
      .view(Date.now())
      .timeline.filter((e) => e.kind === 'notice' && e.code?.startsWith('consent.'))
      .map((e) => (e.kind === 'notice' ? timelineEntryText({ code: e.code, params: e.params, text: e.text }) : ''));
    assert.deepEqual(lines, [
      'OpenCode asks to delegate to Formatter (Prettier): one (capabilities: read only); waiting for your approval.',
      'The delegation to Formatter (Prettier) was allowed.',
      'OpenCode asks to delegate to Formatter (Prettier): two (capabilities: read only); waiting for your approval.',
      'The delegation to Formatter (Prettier) was denied.',
      'OpenCode asks to delegate to Formatter (Prettier): three (capabilities: read only); waiting for your approval.',
      'The delegation to Formatter (Prettier) was refused: nobody answered within the time the gateway waits.',
    ]);
    assert.equal(j.state(), 'completed');

    // A reload: the journal read back from disk has the same questions, all decided, none open.
    const reopened = await open();
    const back = reopened.get(request.requestId) as DelegationJournal;
    assert.deepEqual(
      back.consents().map((c) => c.decision),
      ['allowed', 'denied', 'expired'],
    );
    assert.deepEqual(openConsents(back.consents(), 0), [], 'decided questions are not asked again');
    reopened.dispose();
    await store.close();
  });
});
