// `baton delegate` against agents that do not answer as they should: one that answers the stream with
// headers and then nothing (before, the CLI printed "delegating to …" and waited forever: it set no
// deadline and said nothing), and a gateway that answers 503 with Retry-After while its store is down
// (before, the CLI reported that the agent refused the request).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { TaskState } from '@a2a-js/sdk';
import { batonMain, DEFAULT_DEADLINE_MS, parseDeadline } from '../../../src/gateway/batonCli';
import { JournalStore } from '../../../src/node/journalStore';
import { startAgentServer } from '../delegation/agentServers';
import type { AgentServer } from '../delegation/agentServers';
import { startFlakyFront, startSilentPeer } from '../delegation/silentPeer';
import type { FlakyFront, Peer } from '../delegation/silentPeer';
import { tempDir } from './helpers';

async function run(
  args: string[],
  env: NodeJS.ProcessEnv,
  tuning: Parameters<typeof batonMain>[3] = {},
): Promise<{ code: number; text: string }> {
  const out = new PassThrough();
  let text = '';
  out.on('data', (d: Buffer) => (text += d.toString()));
  const code = await batonMain(args, out, env, tuning);
  return { code, text };
}

function idOf(text: string): string {
  const id = /as ([0-9a-f-]{36})/.exec(text)?.[1];
  assert.ok(id, text);
  return id;
}

describe('baton delegate to an agent that answers with headers and then nothing', () => {
  let peer: Peer;
  const home = tempDir('baton-cli-silent-');
  const env = (): NodeJS.ProcessEnv => ({
    BATON_CLI_DIR: join(home.path, 'journals'),
    BATON_STATE_DIR: join(home.path, 'state'),
  });
  before(async () => {
    peer = await startSilentPeer();
  });
  after(async () => {
    await peer.close();
    home[Symbol.dispose]();
  });

  it('says the agent has not answered yet and how to stop, then the deadline ends it: expired, no task was reported', async () => {
    const started = Date.now();
    const { code, text } = await run(['delegate', peer.cardUrl, 'Say hello', '--deadline', '2s'], env(), {
      runner: { firstEventNoticeMs: 300 },
    });
    const id = idOf(text);
    assert.equal(code, 13, text);
    assert.match(text, /warning: The agent has not answered for 0\.3 s: it has not reported a task yet/);
    assert.match(text, new RegExp(`press Ctrl-C to stop waiting here.*baton status ${id}.*baton cancel ${id}`));
    assert.match(text, /The deadline \(--deadline\) ends it at \d{4}-\d\d-\d\dT/);
    assert.match(text, /^expired: The deadline passed before the agent at .* reported a task\./m);
    assert.ok(Date.now() - started < 15_000);
    const [req] = (await new JournalStore(env().BATON_CLI_DIR ?? '').load(id)).entries;
    assert.ok(req.kind === 'request' && req.request.deadline !== undefined);
  });

  it('gives a delegation the default deadline (the extension’s 30 minutes) unless --deadline says otherwise', () => {
    assert.equal(DEFAULT_DEADLINE_MS, 30 * 60_000);
    assert.equal(parseDeadline(undefined), DEFAULT_DEADLINE_MS);
    assert.equal(parseDeadline('45s'), 45_000);
    assert.equal(parseDeadline('90'), 90 * 60_000);
    assert.equal(parseDeadline('2h'), 2 * 3_600_000);
    for (const bad of ['0', 'soon', '25h', '-5m', '0.5s'])
      assert.throws(() => parseDeadline(bad), /is not a duration from 1s to 24h: write it as 45s, 30m or 2h/);
  });
});

describe('baton delegate through a gateway answering 503 with Retry-After', () => {
  let server: AgentServer;
  let front: FlakyFront;
  const home = tempDir('baton-cli-503-');
  const env = (): NodeJS.ProcessEnv => ({
    BATON_CLI_DIR: join(home.path, 'journals'),
    BATON_STATE_DIR: join(home.path, 'state'),
  });
  before(async () => {
    front = await startFlakyFront(0);
    server = await startAgentServer({
      // The card names the front, so `baton delegate` calls through it.
      cardBase: () => `http://127.0.0.1:${front.port}`,
      wireCard: true,
      script: async (t) => {
        t.task();
        t.status(TaskState.TASK_STATE_WORKING, 'Working');
        t.artifact('answer', 'response.txt', 'hello', { lastChunk: true, mediaType: 'text/plain' });
        t.status(TaskState.TASK_STATE_COMPLETED, 'Done');
      },
    });
    await front.close();
    front = await startFlakyFront(server.port, front.port);
  });
  after(async () => {
    await front.close();
    await server.close();
    home[Symbol.dispose]();
  });

  it('retries the send and completes with one task, saying the gateway is unavailable, not that the agent refused', async () => {
    front.fail(/^SendStreamingMessage$/, 2);
    const { code, text } = await run(
      ['delegate', `http://127.0.0.1:${front.port}/.well-known/agent-card.json`, 'hi'],
      env(),
    );
    assert.equal(code, 0, text);
    assert.match(
      text,
      /warning: The gateway is temporarily unavailable; retrying \(HTTP 503 from http:\/\/127\.0\.0\.1:\d+: the gateway's task store is unavailable/,
    );
    assert.doesNotMatch(text, /refused/);
    assert.match(text, /answer \(response\.txt\): hello/);
    assert.deepEqual(front.refused, ['SendStreamingMessage', 'SendStreamingMessage']);
    assert.equal(front.passed.filter((m) => m === 'SendStreamingMessage').length, 1, 'one task at the agent');
  });
});
