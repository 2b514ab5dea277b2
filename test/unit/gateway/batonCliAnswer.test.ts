// An agent that answers in a text artifact (Mastra's A2A server streams `response.txt` and ends with
// "The agent completed the task."): `baton delegate`, `baton status` and their `--json` show the text,
// bounded, and never a binary part or a patch.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { TaskState } from '@a2a-js/sdk';
import { ANSWER_MAX_CHARS, batonMain } from '../../../src/gateway/batonCli';
import { startAgentServer } from '../delegation/agentServers';
import type { AgentServer } from '../delegation/agentServers';
import { tempDir } from './helpers';

async function run(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; text: string }> {
  const stream = new PassThrough();
  let text = '';
  stream.on('data', (d: Buffer) => (text += d.toString()));
  const code = await batonMain(args, stream, env);
  return { code, text };
}

const LONG = `${'a line of the long answer\n'.repeat(1000)}the end`;

describe('baton command line: the agent answers in a text artifact', () => {
  const home = tempDir('baton-cli-answer-');
  let agent: AgentServer;
  let env: NodeJS.ProcessEnv;
  let cardUrl: string;
  before(async () => {
    agent = await startAgentServer({
      script: async (t) => {
        t.task(TaskState.TASK_STATE_WORKING);
        if (t.text === 'long') {
          t.artifact('long', 'long.md', LONG, { lastChunk: true, mediaType: 'text/markdown' });
          t.status(TaskState.TASK_STATE_COMPLETED, 'The agent completed the task.');
          return;
        }
        // As Mastra streams it: the answer in chunks of one text artifact, with no media type.
        t.artifact('r', 'response.txt', 'echo: hello', { lastChunk: false, mediaType: '' });
        t.artifact('r', 'response.txt', ' there friend', { append: true, lastChunk: true, mediaType: '' });
        t.artifactParts('img', 'picture.png', [
          {
            content: { $case: 'raw', value: Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x1b, 0x5b]) },
            metadata: undefined,
            filename: 'picture.png',
            mediaType: 'image/png',
          },
        ]);
        t.artifact('p', 'fix.diff', 'diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n', {
          lastChunk: true,
          mediaType: 'text/x-diff',
        });
        t.status(TaskState.TASK_STATE_COMPLETED, 'The agent completed the task.');
      },
    });
    cardUrl = `${agent.base}/.well-known/agent-card.json`;
    env = {
      BATON_CLI_DIR: join(home.path, 'journals'),
      BATON_STATE_DIR: join(home.path, 'state'),
    };
  });
  after(async () => {
    await agent.close();
    home[Symbol.dispose]();
  });

  it('delegate and status print the text, after the outcome; --json carries it; a binary part or a patch is never printed as one', async () => {
    const r = await run(['delegate', cardUrl, 'hello there friend', '--out', join(home.path, 'x.patch')], env);
    assert.equal(r.code, 0, r.text);
    assert.match(r.text, /^completed: The agent completed the task\.$/m);
    assert.match(r.text, /^answer \(response\.txt\): echo: hello there friend$/m);
    assert.ok(r.text.indexOf('answer (') > r.text.indexOf('completed: '), r.text);
    assert.doesNotMatch(r.text, /answer \((picture\.png|fix\.diff)\)/);
    assert.doesNotMatch(r.text, /PNG/);
    const id = /as ([0-9a-f-]{36})/.exec(r.text)?.[1] ?? '';

    const status = await run(['status', id], env);
    assert.equal(status.code, 0, status.text);
    assert.match(status.text, /^answer \(response\.txt\): echo: hello there friend$/m);

    const json = await run(
      ['delegate', cardUrl, 'hello there friend', '--json', '--out', join(home.path, 'y.patch')],
      env,
    );
    const last = JSON.parse(json.text.trim().split('\n').at(-1) ?? '{}') as { answers?: unknown };
    assert.deepEqual(last.answers, [
      { artifactId: 'r', name: 'response.txt', mediaType: '', text: 'echo: hello there friend', chars: 24, cut: false },
    ]);
    const statusJson = await run(['status', id, '--json'], env);
    const view = JSON.parse(statusJson.text) as { answers?: Array<{ text: string }> };
    assert.equal(view.answers?.[0]?.text, 'echo: hello there friend');
  });

  it('a long answer is cut, and says so', async () => {
    const r = await run(['delegate', cardUrl, 'long'], env);
    assert.equal(r.code, 0, r.text);
    assert.match(r.text, /^answer \(long\.md\): a line of the long answer$/m);
    assert.match(r.text, /^ {4}a line of the long answer$/m);
    assert.doesNotMatch(r.text, /the end/);
    assert.match(
      r.text,
      new RegExp(
        `^\\(cut: the first ${ANSWER_MAX_CHARS} of ${LONG.length} characters are shown; the rest is in the agent's task [0-9a-f-]{36}\\)$`,
        'm',
      ),
    );
  });
});
