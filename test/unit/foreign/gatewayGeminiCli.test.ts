// The `baton` CLI delegating to Gemini CLI's real A2A server (test/peers/geminiPeer.ts) through
// baton-gateway: the gateway proxies the remote as its agent `gemini`, the CLI names that agent by id.
// The tool calls, their approval, the turn that ends waiting for the user and the connection the
// server needs kept open are the real server's and the real gateway's.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { TaskState } from '@a2a-js/sdk';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { batonMain, EXIT } from '../../../src/gateway/batonCli';
import { startGateway } from '../../../src/gateway/server';
import type { RunningGateway } from '../../../src/gateway/server';
import { clientFor, tempDir } from '../gateway/helpers';
import { httpRequests, startRecordedGeminiPeer } from './geminiServer';
import type { RecordedGeminiPeer } from './geminiServer';

function capture(): { stream: PassThrough; text: () => string } {
  const stream = new PassThrough();
  let buf = '';
  stream.on('data', (d: Buffer) => (buf += d.toString()));
  return { stream, text: () => buf };
}

async function until(what: string, check: () => boolean, timeoutMs = 60_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((ok) => setTimeout(ok, 100));
  }
}

const DEV_TOOL_EXTENSION =
  'https://github.com/google-gemini/gemini-cli/blob/main/docs/a2a/developer-profile/v0/spec.md';
const ORIGINAL = 'export const x = 1;\nexport const y = 10;\n';

describe('baton CLI with Gemini CLI’s A2A server through baton-gateway', () => {
  const dir = tempDir();
  let peer: RecordedGeminiPeer;
  let gw: RunningGateway;
  let env: NodeJS.ProcessEnv;
  const logs: string[] = [];

  before(async () => {
    peer = await startRecordedGeminiPeer({ files: { 'src/a.ts': ORIGINAL } });
    gw = await startGateway({
      stateDir: join(dir.path, 'gateway'),
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
    await until('the remote card to be read', () => logs.some((l) => l.includes('using the card at')), 10_000);
    env = {
      BATON_GATEWAY: gw.url,
      BATON_TOKEN: gw.token,
      BATON_CLI_DIR: join(dir.path, 'journals'),
      BATON_STATE_DIR: join(dir.path, 'state'),
    };
  });
  after(async () => {
    await gw?.close();
    await peer?.close();
    dir[Symbol.dispose]();
  });

  const file = (): string => join(peer.peer.workspace, 'src', 'a.ts');
  /** A turn whose model asks for one `replace` in src/a.ts, then (`done`) the text of its turn after the tool ran. */
  const replaceIn = (old: string, now: string, done?: string): void =>
    peer.peer.model.push(
      {
        functionCalls: [
          { name: 'replace', args: { file_path: file(), instruction: 'bump', old_string: old, new_string: now } },
        ],
      },
      ...(done ? [{ text: done }] : []),
    );

  it('prints the tool call, approves it after 10 s, the edit runs, Done completes with the edit as the patch', async () => {
    replaceIn('export const x = 1;', 'export const x = 2;', 'I changed x to 2.');
    const out = capture();
    const patchFile = join(dir.path, 'approved.patch');
    const delegating = batonMain(
      ['delegate', 'gemini', 'bump x in src/a.ts', '--out', patchFile, '--gateway', gw.url],
      out.stream,
      env,
    );
    await until('the tool call to be printed', () => /approve with: baton approve/.test(out.text())).catch(
      (e: Error) => {
        throw new Error(`${e.message}\n${out.text()}\n${logs.join('\n')}`);
      },
    );
    const requestId = /as ([0-9a-f-]{36})/.exec(out.text())?.[1] ?? '';
    assert.ok(requestId, out.text());
    assert.match(out.text(), /tool call replace-[^:]+: Edit \(replace\) a\.ts: awaiting approval/);
    assert.match(out.text(), /-export const x = 1;/);
    assert.match(out.text(), /\+export const x = 2;/);
    assert.equal(readFileSync(file(), 'utf8'), ORIGINAL, 'nothing is edited before approval');

    // The user takes their time: the server aborts a task whose connection closed, so the gateway held it.
    await new Promise((ok) => setTimeout(ok, 10_000));
    const approve = capture();
    assert.equal(await batonMain(['approve', requestId], approve.stream, env), 0, approve.text());
    assert.match(approve.text(), /approved: handed to the baton process following/);

    assert.equal(await delegating, EXIT['input-required'], out.text());
    assert.equal(
      readFileSync(file(), 'utf8'),
      'export const x = 2;\nexport const y = 10;\n',
      `${out.text()}\n${peer.peer.log().slice(-3000)}`,
    );
    const aborted = peer.peer.log().indexOf('Execution aborted by client');
    assert.ok(
      aborted < 0,
      `the run was not aborted\n--- the server's log before the abort:\n${peer.peer
        .log()
        .slice(
          Math.max(0, aborted - 4000),
          aborted + 200,
        )}\n--- the gateway's log:\n${logs.join('\n')}\n--- the CLI:\n${out.text()}`,
    );
    assert.match(out.text(), /I changed x to 2\./);
    assert.match(out.text(), /finished its turn and is waiting for you/);
    assert.match(out.text(), new RegExp(`baton done ${requestId}`));
    assert.doesNotMatch(out.text(), /\(no question\)/);
    assert.doesNotMatch(out.text(), /\bverified/i);
    assert.ok(
      peer.peer.model.lastParts().some((p) => JSON.stringify(p).includes('functionResponse')),
      'the model got the tool result',
    );

    const sentBefore = peer.received().length;
    const done = capture();
    assert.equal(
      await batonMain(['done', requestId, '--out', patchFile], done.stream, env),
      EXIT.completed,
      done.text(),
    );
    assert.match(done.text(), /^completed: You finished the delegation/m);
    assert.match(done.text(), /^the patch built from the agent's edits \(unsigned\) saved to /m);
    // The gateway signs what it relays (the task ends canceled there); the CLI's "completed" and the patch
    // built from the edits are not what was signed: nothing is called verified, nor said to be unsigned by the agent.
    assert.doesNotMatch(done.text(), /\bverified/i, done.text());
    assert.match(
      done.text(),
      /^signature: none \(the agent signs its results, but a signature does not cover the edits its tool calls reported; the patch is made from them \(1 file\), unverified\)$/m,
    );
    // "Done" ended the remote's task too: the gateway passed the cancel on.
    const sentOnDone = httpRequests(peer.received().slice(sentBefore)).map((r) => r.body);
    assert.ok(
      sentOnDone.some((b) => b.includes('"tasks/cancel"')),
      `a tasks/cancel reached the server: ${sentOnDone.join('\n')}`,
    );
    // What the gateway signed for this task: its state there (canceled by Done) over no artifacts.
    const journalFile = readdirSync(env.BATON_CLI_DIR ?? '', { recursive: true })
      .map(String)
      .find((f) => f.includes(requestId) && f.endsWith('.jsonl'));
    assert.ok(journalFile, 'the delegation has a journal');
    const taskId = /"taskId":"([^"]+)"/.exec(readFileSync(join(env.BATON_CLI_DIR ?? '', journalFile), 'utf8'))?.[1];
    assert.ok(taskId, 'the journal names the task');
    const client = await clientFor(`${gw.url}/a2a/gemini/.well-known/agent-card.json`, gw.token, {
      extensions: [DEV_TOOL_EXTENSION],
    });
    const atGateway = await client.getTask({ tenant: '', id: taskId });
    assert.equal(atGateway.status?.state, TaskState.TASK_STATE_CANCELED);
    assert.equal(typeof atGateway.metadata?.['baton/resultEnvelope'], 'string', 'the gateway signed the result');
    assert.deepEqual(atGateway.artifacts, [], 'the signature covers no patch');
    const patch = readFileSync(patchFile, 'utf8');
    assert.equal(
      patch,
      'diff --git a/src/a.ts b/src/a.ts\n--- a/src/a.ts\n+++ b/src/a.ts\n@@ -1,2 +1,2 @@\n-export const x = 1;\n+export const x = 2;\n export const y = 10;\n',
    );
    const clean = join(dir.path, 'clean');
    mkdirSync(join(clean, 'src'), { recursive: true });
    writeFileSync(join(clean, 'src', 'a.ts'), ORIGINAL);
    execFileSync('git', ['init', '-q'], { cwd: clean });
    execFileSync('git', ['apply', '--check', patchFile], { cwd: clean });
    const status = capture();
    assert.equal(await batonMain(['status', requestId], status.stream, env), EXIT.completed, status.text());
  });

  it('deny: the edit is not made, the model’s next turn sees the cancellation; a text reply goes on; cancel cancels the remote task', async () => {
    replaceIn('export const y = 10;', 'export const y = 11;');
    const out = capture();
    const delegating = batonMain(['delegate', 'gemini', 'bump y', '--gateway', gw.url], out.stream, env);
    await until('the tool call to be printed', () => /deny with: baton deny/.test(out.text()), 30_000).catch(
      (e: Error) => {
        throw new Error(`${e.message}\n${out.text()}\n${logs.join('\n')}`);
      },
    );
    const requestId = /as ([0-9a-f-]{36})/.exec(out.text())?.[1] ?? '';
    const callId = /tool call (replace-\S+):/.exec(out.text())?.[1] ?? '';
    assert.ok(callId, out.text());
    const deny = capture();
    assert.equal(await batonMain(['deny', requestId, callId], deny.stream, env), 0, deny.text());
    assert.equal(await delegating, EXIT['input-required'], out.text());
    assert.match(out.text(), /You denied Edit \(replace\) a\.ts/);
    assert.match(out.text(), /finished its turn and is waiting for you/);
    const before = readFileSync(file(), 'utf8');
    assert.match(before, /y = 10;/);
    const asked = peer.peer.model.requests.length;

    peer.peer.model.push({ text: 'Understood, I left the file as it is.' });
    const reply = capture();
    assert.equal(
      await batonMain(['reply', requestId, 'leave it then'], reply.stream, env),
      EXIT['input-required'],
      reply.text(),
    );
    assert.match(reply.text(), /Understood, I left the file as it is\./);
    assert.match(reply.text(), /finished its turn and is waiting for you/);
    const next = JSON.stringify(peer.peer.model.requests.slice(asked).map((r) => r.body.contents));
    assert.match(next, new RegExp(`"functionResponse":\\{"id":"${callId}"`));
    assert.match(next, /cancel/i);
    assert.match(next, /leave it then/);
    assert.equal(readFileSync(file(), 'utf8'), before);

    const sentBefore = peer.received().length;
    const cancel = capture();
    assert.equal(await batonMain(['cancel', requestId], cancel.stream, env), EXIT.canceled, cancel.text());
    assert.match(cancel.text(), /^canceled/m);
    // The gateway signed the canceled task it relayed, with no artifacts: that is what is shown, and nothing is saved.
    assert.match(cancel.text(), /^signature: verified \(signed by /m);
    assert.doesNotMatch(cancel.text(), /saved to/);
    // The gateway passed the cancel on to the remote.
    const sent = httpRequests(peer.received().slice(sentBefore)).map((r) => r.body);
    assert.ok(
      sent.some((b) => b.includes('"tasks/cancel"')),
      `a tasks/cancel reached the server: ${sent.join('\n')}`,
    );
  });
});
