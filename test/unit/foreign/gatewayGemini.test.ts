/**
 * Gemini CLI's A2A server (a real 0.3 server, test/peers) behind baton-gateway's proxy, driven with
 * the SDK's own client: its card, tool calls and approvals (sent 12 s after the question, while the
 * server ties the task's run to the socket that started it), the development-tool extension, replies,
 * cancel, and what the gateway signs for a task the remote never ends by itself.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { StreamResponse, TaskState, TaskStatus } from '@a2a-js/sdk';
import type { AgentCard, Message, Part } from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import { startGateway } from '../../../src/gateway/server';
import type { RunningGateway } from '../../../src/gateway/server';
import { requestDigest, toVerifiedKey, verifyResultEnvelope } from '../../../src/node/signing';
import type { PublicJwk } from '../../../src/node/signing';
import { SendMessageRequest } from '@a2a-js/sdk';
import { clientFor, collect, sendRequest, tempDir, userMessage } from '../gateway/helpers';
import { httpRequests, startRecordedGeminiPeer } from './geminiServer';
import type { RecordedGeminiPeer } from './geminiServer';

export const DEV_TOOL_EXTENSION =
  'https://github.com/google-gemini/gemini-cli/blob/main/docs/a2a/developer-profile/v0/spec.md';

type Json = Record<string, unknown>;

function wire(e: StreamResponse): Json {
  return StreamResponse.toJSON(e) as Json;
}
function statusOf(e: StreamResponse): { state: TaskState | undefined; metadata: Json; parts: Json[] } {
  if (e.payload?.$case !== 'statusUpdate') return { state: undefined, metadata: {}, parts: [] };
  const w = (wire(e).statusUpdate ?? {}) as { metadata?: Json; status?: { message?: { parts?: Json[] } } };
  return { state: e.payload.value.status?.state, metadata: w.metadata ?? {}, parts: w.status?.message?.parts ?? [] };
}
function toolCalls(events: StreamResponse[]): Array<{ data: Json; coder: unknown; size: number }> {
  const out: Array<{ data: Json; coder: unknown; size: number }> = [];
  for (const e of events) {
    const s = statusOf(e);
    for (const p of s.parts)
      if (p.data && typeof p.data === 'object')
        out.push({ data: p.data as Json, coder: s.metadata.coderAgent, size: JSON.stringify(p.data).length });
  }
  return out;
}
function texts(events: StreamResponse[]): string[] {
  return events.flatMap((e) =>
    statusOf(e)
      .parts.map((p) => p.text)
      .filter((t): t is string => typeof t === 'string'),
  );
}
function lastState(events: StreamResponse[]): TaskState | undefined {
  return [...events]
    .reverse()
    .map((e) => statusOf(e).state)
    .find((s) => s !== undefined);
}
function followUp(taskId: string, contextId: string, parts: Part[]): Message {
  return { ...userMessage('x'), taskId, contextId, parts };
}
const dataPart = (value: Json): Part => ({
  content: { $case: 'data', value },
  metadata: undefined,
  filename: '',
  mediaType: '',
});
const textPart = (value: string): Part => ({
  content: { $case: 'text', value },
  metadata: undefined,
  filename: '',
  mediaType: '',
});

describe('gateway + Gemini CLI A2A server (0.3, real peer)', () => {
  const dir = tempDir();
  let gw: RunningGateway;
  let peer: RecordedGeminiPeer;
  let client: Client;
  const logs: string[] = [];
  before(async () => {
    peer = await startRecordedGeminiPeer({ files: { 'a.ts': 'export const x = 1;\n' } });
    gw = await startGateway({
      stateDir: dir.path,
      remoteAgents: [
        {
          id: 'gemini',
          name: 'Gemini CLI',
          description: 'Remote A2A agent',
          descriptionIsDefault: true,
          url: peer.url,
          protocolBinding: 'JSONRPC',
          auth: { kind: 'none' },
          skills: [],
          extensions: [DEV_TOOL_EXTENSION],
        },
      ],
      limits: { cancelGraceMs: 5000 },
      log: (l) => logs.push(l),
    });
    const cardUrl = `${gw.url}/a2a/gemini/.well-known/agent-card.json`;
    for (let i = 0; i < 200 && !logs.some((l) => l.includes('using the card at')); i++)
      await new Promise((r) => setTimeout(r, 50));
    client = await clientFor(cardUrl, gw.token, { extensions: [DEV_TOOL_EXTENSION] });
  });
  after(async () => {
    await gw?.close();
    await peer?.close();
    dir[Symbol.dispose]();
  });

  it("serves the remote's 0.3 card (localhost URL with a trailing slash, configured as 127.0.0.1) as one of its agents, with the extension it speaks", async () => {
    const raw = (await (await fetch(peer.peer.cardUrl)).json()) as Json;
    assert.equal(raw.protocolVersion, '0.3.0');
    assert.match(String(raw.url), /^http:\/\/localhost:\d+\/$/);
    const card = (await (
      await fetch(`${gw.url}/a2a/gemini/.well-known/agent-card.json`, { headers: { 'A2A-Version': '1.0' } })
    ).json()) as AgentCard & Json;
    const skills = (raw.skills as Json[]).map((s) => s.id);
    assert.deepEqual(
      card.skills.map((s) => s.id),
      skills,
    );
    assert.equal(card.description, raw.description);
    const uris = (card.capabilities as { extensions: Array<{ uri: string }> }).extensions.map((e) => e.uri);
    assert.ok(uris.includes(DEV_TOOL_EXTENSION), uris.join(', '));
    // Requests go to the pinned endpoint, never to the card's localhost URL.
    assert.ok((card.supportedInterfaces as Array<{ url: string }>).every((i) => i.url.startsWith(gw.url)));
    const index = await (
      await fetch(`${gw.url}/.well-known/agent-card.json`, { headers: { 'A2A-Version': '1.0' } })
    ).text();
    assert.ok(index.includes('gemini'));
  });

  it('relays tool calls whole, and an approval sent 12 s later (data part only) reaches the server unchanged and runs the tool', async () => {
    peer.peer.model.push(
      {
        functionCalls: [
          {
            name: 'replace',
            args: {
              file_path: join(peer.peer.workspace, 'a.ts'),
              instruction: 'bump x',
              old_string: 'export const x = 1;',
              new_string: 'export const x = 2;',
            },
          },
        ],
      },
      { text: 'I changed x to 2.' },
    );
    const first = await collect(client.sendMessageStream(sendRequest(userMessage('please edit a.ts'))));
    const task = first[0].payload?.$case === 'task' ? first[0].payload.value : undefined;
    assert.ok(task, 'the first event is the task');
    assert.equal(lastState(first), TaskState.TASK_STATE_INPUT_REQUIRED, 'the turn ends waiting for the approval');
    const calls = toolCalls(first);
    const waiting = calls.find((c) => c.data.status === 'awaiting_approval');
    assert.ok(waiting, `a tool call awaits approval: ${calls.map((c) => String(c.data.status)).join(', ')}`);
    // Data parts intact: the full tool description and schema (several KB), the confirmation's diff.
    assert.ok(waiting.size > 2000, `data part of ${waiting.size} characters`);
    const tool = waiting.data.tool as Json;
    assert.ok(tool.parameterSchema && typeof tool.description === 'string');
    const details = waiting.data.confirmationDetails as Json;
    assert.equal(details.type, 'edit');
    assert.match(String(details.fileDiff), /\+export const x = 2;/);
    assert.deepEqual(waiting.coder, { kind: 'tool-call-confirmation' });
    assert.ok(first.some((e) => (statusOf(e).metadata.coderAgent as Json | undefined)?.kind === 'state-change'));
    const callId = String((waiting.data.request as Json).callId);

    // The user thinks it over; the server's run of the task must survive it.
    await new Promise((r) => setTimeout(r, 12_000));
    const before = peer.received().length;
    const approval = followUp(task.id, task.contextId, [dataPart({ callId, outcome: 'proceed_once' })]);
    const second = await collect(client.sendMessageStream(sendRequest(approval)));
    const statuses = toolCalls(second).map((c) => c.data.status);
    assert.deepEqual(statuses, ['scheduled', 'executing', 'success'], JSON.stringify(texts(second)));
    // The server reports them as input-required with final:false; relayed as working, its state noted.
    assert.ok(
      second
        .filter((e) => toolCalls([e]).length)
        .every(
          (e) =>
            statusOf(e).state === TaskState.TASK_STATE_WORKING &&
            statusOf(e).metadata['baton/remoteState'] === 'input-required',
        ),
    );
    assert.ok(texts(second).includes('I changed x to 2.'));
    assert.equal(lastState(second), TaskState.TASK_STATE_INPUT_REQUIRED);
    assert.equal(readFileSync(join(peer.peer.workspace, 'a.ts'), 'utf8'), 'export const x = 2;\n');
    assert.ok(!peer.peer.log().includes('Execution aborted by client'), 'the run was not aborted');

    // What reached the server: the approval's data part as sent, and the extension the caller activated.
    const sent = httpRequests(peer.received().slice(before)).find((r) => r.body.includes(approval.messageId));
    assert.ok(sent, 'the approval reached the server');
    const body = JSON.parse(sent.body) as {
      method: string;
      params: { message: { parts: Json[]; taskId: string; contextId: string } };
    };
    assert.equal(body.method, 'message/stream');
    assert.deepEqual(body.params.message.parts, [{ kind: 'data', data: { callId, outcome: 'proceed_once' } }]);
    assert.equal(body.params.message.taskId, task.id);
    assert.equal(body.params.message.contextId, task.contextId);
    assert.equal(sent.headers['x-a2a-extensions'], DEV_TOOL_EXTENSION);
  });

  it('a text reply continues the task; a "done" (cancel while it waits for input) ends it canceled, signed over what the client was shown', async () => {
    peer.peer.model.push({ text: 'answer: hello there' }, { text: 'answer: and again' });
    const asked = userMessage('hello there');
    const first = await collect(client.sendMessageStream(sendRequest(asked)));
    const task = first[0].payload?.$case === 'task' ? first[0].payload.value : undefined;
    assert.ok(task);
    assert.ok(texts(first).includes('answer: hello there'), JSON.stringify(texts(first)));
    assert.equal(lastState(first), TaskState.TASK_STATE_INPUT_REQUIRED);
    const reply = await collect(
      client.sendMessageStream(sendRequest(followUp(task.id, task.contextId, [textPart('and again')]))),
    );
    assert.ok(texts(reply).includes('answer: and again'), JSON.stringify(texts(reply)));
    // The model was told the reply (it came through the gateway as the user's text).
    assert.ok(JSON.stringify(peer.peer.model.requests.at(-1)?.body).includes('and again'));
    assert.equal(lastState(reply), TaskState.TASK_STATE_INPUT_REQUIRED);
    // It never ends by itself: the client is done with it.
    const canceled = await client.cancelTask({ tenant: '', id: task.id, metadata: undefined });
    assert.equal(canceled.status?.state, TaskState.TASK_STATE_CANCELED);
    const final = await client.getTask({ tenant: '', id: task.id });
    assert.equal(final.status?.state, TaskState.TASK_STATE_CANCELED);
    const jws = final.metadata?.['baton/resultEnvelope'];
    assert.equal(typeof jws, 'string', 'the canceled result is signed');
    const card = (await (
      await fetch(`${gw.url}/a2a/gemini/.well-known/agent-card.json`, { headers: { 'A2A-Version': '1.0' } })
    ).json()) as {
      capabilities: { extensions: Array<{ uri: string; params?: { publicKeyJwk?: PublicJwk } }> };
    };
    const jwk = card.capabilities.extensions.find((e) => e.uri === 'urn:baton:a2a:signed-result:v1')?.params
      ?.publicKeyJwk as PublicJwk;
    const keys = [await toVerifiedKey(jwk)];
    const status = TaskStatus.toJSON(final.status ?? { state: 0, message: undefined, timestamp: undefined }) as Json;
    const digest = requestDigest(SendMessageRequest.toJSON(sendRequest(asked)) as Json);
    // The envelope signs the final status the client gets, for this task and the request that started
    // it, over no artifacts (the remote made none).
    const check = (over: { status?: Json; artifacts?: Array<{ artifactId: string; name: string; parts: Json[] }> }) =>
      verifyResultEnvelope(String(jws), {
        keys,
        taskId: task.id,
        contextId: task.contextId,
        artifacts: over.artifacts ?? [],
        requestDigest: digest,
        state: 'TASK_STATE_CANCELED',
        status: over.status ?? status,
      });
    const ok = await check({});
    assert.equal(ok.ok, true, JSON.stringify(ok));
    // Bytes it did not sign do not verify: another status, or an artifact it never saw.
    const other = { ...status, message: { ...(status.message as Json), parts: [{ text: 'completed fine' }] } };
    assert.equal((await check({ status: other })).ok, false);
    const extra = [{ artifactId: 'a', name: 'changes.patch', parts: [{ text: 'x' }] }];
    assert.equal((await check({ artifacts: extra })).ok, false);
  });
});
