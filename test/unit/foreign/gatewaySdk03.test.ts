/**
 * A2A 0.3 agents built with the 0.3-era SDK (sdk03Servers.ts), each with a habit real 0.3 agents have,
 * reached directly by the `baton` CLI (its card URL) and through baton-gateway's proxy (the CLI with the
 * agent's id, and the 1.0 SDK client for the events themselves).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { TaskState } from '@a2a-js/sdk';
import type { StreamResponse } from '@a2a-js/sdk';
import { batonMain } from '../../../src/gateway/batonCli';
import { startGateway } from '../../../src/gateway/server';
import type { RunningGateway } from '../../../src/gateway/server';
import type { RemoteAgentConfig } from '../../../src/gateway/config';
import { CUT_POINTS, startCutProxy } from '../delegation/cutProxy';
import type { CutProxy } from '../delegation/cutProxy';
import { clientFor, collect, sendRequest, tempDir, userMessage } from '../gateway/helpers';
import { ODD_EXTENSION, patchFor, startSdk03Server } from './sdk03Servers';
import type { Quirk, Sdk03Server } from './sdk03Servers';

function capture(): { stream: PassThrough; text: () => string } {
  const stream = new PassThrough();
  let buf = '';
  stream.on('data', (d: Buffer) => (buf += d.toString()));
  return { stream, text: () => buf };
}

const stateOf = (e: StreamResponse): TaskState | undefined =>
  e.payload?.$case === 'statusUpdate'
    ? e.payload.value.status?.state
    : e.payload?.$case === 'task'
      ? e.payload.value.status?.state
      : undefined;
const noteOf = (e: StreamResponse): string => {
  const msg =
    e.payload?.$case === 'statusUpdate' || e.payload?.$case === 'task' ? e.payload.value.status?.message : undefined;
  return (msg?.parts ?? []).map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');
};

describe('A2A 0.3 SDK agents with real-world quirks: directly and through the gateway', () => {
  const state = tempDir();
  const journals = tempDir('baton-sdk03-journals-');
  const repo = join(state.path, 'repo');
  const servers = new Map<Quirk, Sdk03Server>();
  let cut: CutProxy;
  let gw: RunningGateway;
  let env: NodeJS.ProcessEnv;
  const logs: string[] = [];

  before(async () => {
    mkdirSync(repo);
    writeFileSync(join(repo, 'notes.txt'), 'old\n');
    const git = (...a: string[]): string =>
      execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...a], {
        cwd: repo,
        encoding: 'utf8',
      });
    git('init', '-q');
    git('add', '.');
    git('commit', '-qm', 'init');
    for (const q of ['snapshot', 'message', 'oddCard'] as const) servers.set(q, await startSdk03Server(q));
    servers.set('noResubscribe', await startSdk03Server('noResubscribe', { stepMs: 150 }));
    servers.set('noStreaming', await startSdk03Server('noStreaming', { stepMs: 700 }));
    // The gateway reaches the agent without resubscribe through a proxy that cuts its first stream.
    const slow = servers.get('noResubscribe');
    cut = await startCutProxy(Number(new URL(slow?.url ?? '').port), 'message/stream');
    slow?.advertise(`http://127.0.0.1:${cut.port}`);
    const remote = (id: string, s: Sdk03Server, extra: Partial<RemoteAgentConfig> = {}): RemoteAgentConfig => ({
      id,
      name: id,
      description: 'Remote A2A agent',
      descriptionIsDefault: true,
      url: s.url,
      protocolBinding: 'JSONRPC',
      auth: { kind: 'none' },
      skills: [],
      ...extra,
    });
    const odd = servers.get('oddCard') as Sdk03Server;
    gw = await startGateway({
      stateDir: join(state.path, 'gw'),
      remoteAgents: [
        remote('snapshot', servers.get('snapshot') as Sdk03Server),
        remote('message', servers.get('message') as Sdk03Server),
        remote('odd', odd, { cardUrl: odd.cardUrl }),
        remote('noresub', servers.get('noResubscribe') as Sdk03Server, { url: `http://127.0.0.1:${cut.port}` }),
        remote('nostream', servers.get('noStreaming') as Sdk03Server),
      ],
      limits: { cancelGraceMs: 2000 },
      log: (l) => logs.push(l),
    });
    env = {
      BATON_GATEWAY: gw.url,
      BATON_TOKEN: gw.token,
      BATON_CLI_DIR: journals.path,
      BATON_STATE_DIR: join(state.path, 'gw'),
    };
    // The remotes' cards are read in the background: wait for all five.
    for (let i = 0; i < 200 && logs.filter((l) => l.includes('using the card at')).length < 5; i++)
      await new Promise((r) => setTimeout(r, 50));
  });
  after(async () => {
    await gw?.close();
    await cut?.close();
    for (const s of servers.values()) await s.close();
    for (const d of [state, journals]) d[Symbol.dispose]();
  });

  const delegate = async (target: string, task: string): Promise<{ code: number; text: string; id: string }> => {
    const out = capture();
    const patch = join(state.path, `${task.replace(/\W+/g, '-')}-${Math.random().toString(36).slice(2)}.patch`);
    const code = await batonMain(['delegate', target, task, '--repo', repo, '--out', patch], out.stream, env);
    const text = out.text();
    return { code, text, id: /as ([0-9a-f-]{36})/.exec(text)?.[1] ?? '' };
  };
  const savedPatch = (text: string): string => {
    const file = /changes\.patch saved to (\S+)/.exec(text)?.[1];
    assert.ok(file, text);
    return readFileSync(file, 'utf8');
  };

  for (const via of ['direct', 'gateway'] as const) {
    const target = (quirk: Quirk, id: string): string => (via === 'direct' ? (servers.get(quirk)?.cardUrl ?? '') : id);

    it(`${via}: snapshot-only progress reaches completed, with its steps shown and its patch`, async () => {
      const r = await delegate(target('snapshot', 'snapshot'), `fix it ${via}`);
      assert.equal(r.code, 0, r.text);
      assert.match(r.text, /reading the code/);
      assert.match(r.text, /writing the patch/);
      assert.equal(savedPatch(r.text), patchFor(`fix it ${via}`));
    });

    it(`${via}: snapshot-only agent that asks: the reply is a follow-up on the same task, which then completes`, async () => {
      const r = await delegate(target('snapshot', 'snapshot'), `ask me ${via}`);
      assert.match(r.text, /which file\?/, r.text);
      const out = capture();
      const code = await batonMain(['reply', r.id, 'notes.txt'], out.stream, env);
      assert.equal(code, 0, out.text());
      assert.match(out.text(), /got the answer: notes\.txt/);
      assert.equal(savedPatch(out.text()), patchFor(`ask me ${via} (notes.txt)`));
    });

    it(`${via}: an agent that answers with a Message (no task): the answer arrives and the delegation ends`, async () => {
      const r = await delegate(target('message', 'message'), `hi ${via}`);
      assert.equal(r.code, 0, r.text);
      assert.match(r.text, new RegExp(`agent: hello back: hi ${via}`));
      assert.match(r.text, /completed: The agent answered with a message\./);
      assert.match(r.text, /signature: none \(the agent returned no task/);
    });

    it(`${via}: a card at a path of its own, whose url has a trailing slash`, async () => {
      const r = await delegate(target('oddCard', 'odd'), `odd ${via}`);
      assert.equal(r.code, 0, r.text);
      assert.equal(savedPatch(r.text), patchFor(`odd ${via}`));
    });

    it(`${via}: an agent whose card says it does not stream: the delegation completes with its patch`, async () => {
      const r = await delegate(target('noStreaming', 'nostream'), `plain ${via}`);
      assert.equal(r.code, 0, r.text);
      assert.equal(savedPatch(r.text), patchFor(`plain ${via}`));
    });
  }

  it('gateway: the route card of the odd-card agent is read from its own card path and lists its extension', async () => {
    const card = (await (
      await fetch(`${gw.url}/a2a/odd/.well-known/agent-card.json`, { headers: { 'A2A-Version': '1.0' } })
    ).json()) as {
      skills: Array<{ id: string }>;
      description: string;
      capabilities: { extensions: Array<{ uri: string; description?: string }> };
    };
    assert.deepEqual(
      card.skills.map((s) => s.id),
      ['oddCard-skill'],
    );
    assert.equal(card.description, 'an A2A 0.3 agent (oddCard)');
    const declared = card.capabilities.extensions.find((e) => e.uri === ODD_EXTENSION);
    assert.equal(declared?.description, 'an extension it declares', "the remote's own extension is listed");
  });

  it('gateway: snapshot progress is relayed as 1.0 status updates; a Message answer as the one event', async () => {
    const client = await clientFor(`${gw.url}/a2a/snapshot/.well-known/agent-card.json`, gw.token);
    const events = await collect(client.sendMessageStream(sendRequest(userMessage('sdk client'))));
    // The first snapshot is the task; each later one is relayed as the updates it implies.
    assert.equal(events[0].payload?.$case, 'task');
    assert.ok(
      events.slice(1).every((e) => e.payload?.$case === 'statusUpdate' || e.payload?.$case === 'artifactUpdate'),
    );
    const notes = events.map(noteOf).filter(Boolean);
    assert.deepEqual(notes, ['reading the code', 'writing the patch', 'done: sdk client']);
    assert.equal(stateOf(events[events.length - 1]), TaskState.TASK_STATE_COMPLETED);
    const artifacts = events.filter((e) => e.payload?.$case === 'artifactUpdate');
    assert.equal(artifacts.length, 1);
    const task = await client.getTask({
      tenant: '',
      id: events[0].payload?.$case === 'task' ? events[0].payload.value.id : '',
    });
    assert.equal(task.artifacts[0]?.name, 'changes.patch');
    assert.equal(typeof task.metadata?.['baton/resultEnvelope'], 'string');

    const msgClient = await clientFor(`${gw.url}/a2a/message/.well-known/agent-card.json`, gw.token);
    const answer = await collect(msgClient.sendMessageStream(sendRequest(userMessage('plain'))));
    assert.equal(answer.length, 1);
    assert.equal(answer[0].payload?.$case, 'message');
    const reply = answer[0].payload?.$case === 'message' ? answer[0].payload.value : undefined;
    assert.equal(reply?.parts[0]?.content?.$case === 'text' ? reply.parts[0].content.value : '', 'hello back: plain');
    // A second message in the same context is answered again (there is no task to continue).
    const again = await msgClient.sendMessage(
      sendRequest({ ...userMessage('again'), contextId: reply?.contextId ?? '' }),
    );
    assert.ok(!('id' in again && 'status' in again), 'a Message, not a task');
  });

  it('gateway: an input-required with final:false that ends the stream ends the turn (relayed as it came)', async () => {
    const client = await clientFor(`${gw.url}/a2a/odd/.well-known/agent-card.json`, gw.token);
    const events = await collect(client.sendMessageStream(sendRequest(userMessage('a question'))));
    const last = events[events.length - 1];
    assert.equal(stateOf(last), TaskState.TASK_STATE_INPUT_REQUIRED);
    assert.equal(noteOf(last), 'which one?');
    const meta = last.payload?.$case === 'statusUpdate' ? last.payload.value.metadata : undefined;
    assert.equal(meta?.['baton/remoteState'], undefined, 'not marked: it was the end of the turn');
    assert.ok(!events.some((e) => stateOf(e) === TaskState.TASK_STATE_WORKING && noteOf(e) === 'which one?'));
  });

  it('gateway: an agent whose card says it does not stream is sent message/send and followed by tasks/get: its steps, patch and signed end arrive', async () => {
    const nostream = servers.get('noStreaming') as Sdk03Server;
    const client = await clientFor(`${gw.url}/a2a/nostream/.well-known/agent-card.json`, gw.token);
    const events = await collect(client.sendMessageStream(sendRequest(userMessage('no stream'))));
    assert.equal(stateOf(events[events.length - 1]), TaskState.TASK_STATE_COMPLETED, JSON.stringify(logs.slice(-5)));
    assert.ok(
      events.some((e) => /^step \d$/.test(noteOf(e) ?? '')),
      'a step seen while it worked',
    );
    const id = events[0].payload?.$case === 'task' ? events[0].payload.value.id : '';
    const task = await client.getTask({ tenant: '', id });
    assert.equal(task.artifacts[0]?.name, 'changes.patch');
    assert.equal(typeof task.metadata?.['baton/resultEnvelope'], 'string');
    assert.ok(nostream.methods.includes('message/send'), nostream.methods.join(', '));
    assert.ok(nostream.methods.includes('tasks/get'), nostream.methods.join(', '));
    assert.deepEqual(
      nostream.methods.filter((m) => m === 'message/stream' || m === 'tasks/resubscribe'),
      [],
    );
  });

  it('gateway: a relay whose stream breaks, to an agent that refuses tasks/resubscribe, still reaches the outcome (by GetTask)', async () => {
    cut.setCutPoint(CUT_POINTS.midEvent);
    const client = await clientFor(`${gw.url}/a2a/noresub/.well-known/agent-card.json`, gw.token);
    const events = await collect(client.sendMessageStream(sendRequest(userMessage('slow one'))));
    assert.equal(cut.cuts, 1, 'the stream was cut');
    assert.equal(stateOf(events[events.length - 1]), TaskState.TASK_STATE_COMPLETED, JSON.stringify(logs.slice(-5)));
    const noresub = servers.get('noResubscribe') as Sdk03Server;
    assert.ok(noresub.resubscribes() >= 1, 'the relay tried to resubscribe and was refused');
    const task = await client.getTask({
      tenant: '',
      id: events[0].payload?.$case === 'task' ? events[0].payload.value.id : '',
    });
    assert.equal(task.status?.state, TaskState.TASK_STATE_COMPLETED);
    assert.equal(task.artifacts[0]?.name, 'changes.patch');
  });

  it('direct: the CLI whose stream breaks, following an agent that refuses tasks/resubscribe, reaches completed', async () => {
    const noresub = servers.get('noResubscribe') as Sdk03Server;
    const [cutsBefore, refusedBefore] = [cut.cuts, noresub.resubscribes()];
    cut.setCutPoint(CUT_POINTS.midEvent);
    // Its card is read through the proxy too: the card names the proxy's origin for its endpoint.
    const r = await delegate(`http://127.0.0.1:${cut.port}/.well-known/agent-card.json`, 'slow direct');
    assert.equal(cut.cuts, cutsBefore + 1, 'the stream was cut');
    assert.ok(noresub.resubscribes() > refusedBefore, 'the client tried to resubscribe and was refused');
    assert.equal(r.code, 0, r.text);
    assert.equal(savedPatch(r.text), patchFor('slow direct'));
  });
});
