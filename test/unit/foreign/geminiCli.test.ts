// The `baton` CLI against Gemini CLI's real A2A server (test/peers/geminiPeer.ts): a direct card URL, no
// gateway. Its model is a stand-in scripted per test; the tool calls, their approval, the turn that ends
// waiting for the user and the keep-alive the server needs are the real server's.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { batonMain, EXIT } from '../../../src/gateway/batonCli';
import { startGeminiPeer } from '../../peers/geminiPeer';
import type { GeminiPeer } from '../../peers/geminiPeer';

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

const ORIGINAL = 'export const x = 1;\nexport const y = 10;\n';

describe('baton CLI with Gemini CLI’s A2A server (tool-call approvals, turns that end waiting)', () => {
  let peer: GeminiPeer;
  let dir: string;
  let env: NodeJS.ProcessEnv;
  let cardUrl: string;

  before(async () => {
    peer = await startGeminiPeer({ files: { 'src/a.ts': ORIGINAL } });
    dir = mkdtempSync(join(tmpdir(), 'baton-gemini-cli-'));
    // No gateway is involved: the delegation goes to the card URL given. The server's card names
    // `http://localhost:<port>/`, so the card is read from that origin too.
    cardUrl = peer.cardUrl.replace('127.0.0.1', 'localhost');
    env = {
      BATON_GATEWAY: 'http://127.0.0.1:9',
      BATON_CLI_DIR: join(dir, 'journals'),
      BATON_STATE_DIR: join(dir, 'state'),
    };
  });
  after(async () => {
    await peer?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** A turn whose model asks for one `replace` in src/a.ts, then (`done`) the text of its turn after the tool ran. */
  const replaceIn = (old: string, now: string, done?: string): void =>
    peer.model.push(
      {
        functionCalls: [
          {
            name: 'replace',
            args: {
              file_path: join(peer.workspace, 'src', 'a.ts'),
              instruction: 'bump',
              old_string: old,
              new_string: now,
            },
          },
        ],
      },
      ...(done ? [{ text: done }] : []),
    );
  const replaceX = (): void => replaceIn('export const x = 1;', 'export const x = 2;', 'I changed x to 2.');

  it('prints the tool call, approves it after 10 s of thinking, the edit runs, Done completes with the edit as the patch', async () => {
    replaceX();
    const out = capture();
    const patchFile = join(dir, 'approved.patch');
    const delegating = batonMain(['delegate', cardUrl, 'bump x in src/a.ts', '--out', patchFile], out.stream, env);
    await until('the tool call to be printed', () => /approve with: baton approve/.test(out.text()));
    const requestId = /as ([0-9a-f-]{36})/.exec(out.text())?.[1] ?? '';
    assert.ok(requestId, out.text());
    assert.match(out.text(), /tool call replace-[^:]+: Edit \(replace\) a\.ts: awaiting approval/);
    assert.match(out.text(), /-export const x = 1;/);
    assert.match(out.text(), /\+export const x = 2;/);
    assert.equal(
      readFileSync(join(peer.workspace, 'src', 'a.ts'), 'utf8'),
      ORIGINAL,
      'nothing is edited before approval',
    );

    // The user takes their time: the server aborts a task whose connection closed, so this proves it stayed open.
    await new Promise((ok) => setTimeout(ok, 10_000));
    const approve = capture();
    assert.equal(await batonMain(['approve', requestId], approve.stream, env), 0, approve.text());
    assert.match(approve.text(), /approved: handed to the baton process following/);

    assert.equal(await delegating, EXIT['input-required'], out.text());
    assert.equal(
      readFileSync(join(peer.workspace, 'src', 'a.ts'), 'utf8'),
      'export const x = 2;\nexport const y = 10;\n',
      `${out.text()}\n${peer.log().slice(-3000)}`,
    );
    assert.match(out.text(), /I changed x to 2\./);
    assert.match(out.text(), /finished its turn and is waiting for you/);
    assert.match(out.text(), new RegExp(`baton done ${requestId}`));
    assert.match(out.text(), new RegExp(`baton reply ${requestId}`));
    assert.match(out.text(), new RegExp(`baton cancel ${requestId}`));
    assert.doesNotMatch(out.text(), /\(no question\)/);
    const last = peer.model.lastParts();
    assert.ok(
      last.some((p) => JSON.stringify(p).includes('functionResponse')),
      'the model got the tool result',
    );

    const done = capture();
    assert.equal(
      await batonMain(['done', requestId, '--out', patchFile], done.stream, env),
      EXIT.completed,
      done.text(),
    );
    assert.match(done.text(), /^completed: You finished the delegation/m);
    assert.match(done.text(), /^the patch built from the agent's edits \(unsigned\) saved to /m);
    const patch = readFileSync(patchFile, 'utf8');
    assert.equal(
      patch,
      'diff --git a/src/a.ts b/src/a.ts\n--- a/src/a.ts\n+++ b/src/a.ts\n@@ -1,2 +1,2 @@\n-export const x = 1;\n+export const x = 2;\n export const y = 10;\n',
    );
    // The patch applies to a clean copy of the workspace as it was.
    const clean = join(dir, 'clean');
    mkdirSync(join(clean, 'src'), { recursive: true });
    writeFileSync(join(clean, 'src', 'a.ts'), ORIGINAL);
    execFileSync('git', ['init', '-q'], { cwd: clean });
    execFileSync('git', ['apply', '--check', patchFile], { cwd: clean });
    const status = capture();
    assert.equal(await batonMain(['status', requestId], status.stream, env), EXIT.completed);
  });

  it('deny: the edit is not made, the model’s next turn sees the cancellation; a text reply goes on; cancel cancels', async () => {
    // A denied call ends the turn at once (the model is asked again only after the user's next message).
    replaceIn('export const y = 10;', 'export const y = 11;');
    const out = capture();
    const delegating = batonMain(['delegate', cardUrl, 'bump x again'], out.stream, env);
    await until('the tool call to be printed', () => /deny with: baton deny/.test(out.text()), 30_000).catch(
      (e: Error) => {
        throw new Error(`${e.message}\n${out.text()}\n${JSON.stringify(peer.model.requests.map((r) => r.path))}`);
      },
    );
    const requestId = /as ([0-9a-f-]{36})/.exec(out.text())?.[1] ?? '';
    const callId = /tool call (replace-\S+):/.exec(out.text())?.[1] ?? '';
    assert.ok(callId, out.text());
    const wrong = capture();
    await assert.rejects(
      batonMain(['deny', requestId, 'no-such-call'], wrong.stream, env),
      /not waiting for approval; waiting: replace-/,
    );
    const deny = capture();
    assert.equal(await batonMain(['deny', requestId, callId], deny.stream, env), 0, deny.text());
    assert.equal(await delegating, EXIT['input-required'], out.text());
    assert.match(out.text(), /You denied Edit \(replace\) a\.ts/);
    assert.match(out.text(), /finished its turn and is waiting for you/);
    const before = readFileSync(join(peer.workspace, 'src', 'a.ts'), 'utf8');
    assert.match(before, /y = 10;/);
    const asked = peer.model.requests.length;

    peer.model.push({ text: 'Understood, I left the file as it is.' });
    const reply = capture();
    assert.equal(await batonMain(['reply', requestId, 'leave it then'], reply.stream, env), EXIT['input-required']);
    assert.match(reply.text(), /Understood, I left the file as it is\./);
    assert.match(reply.text(), /finished its turn and is waiting for you/);
    // The model's next turn carries the denied call's result and the user's text.
    const next = JSON.stringify(peer.model.requests.slice(asked).map((r) => r.body.contents));
    assert.match(next, new RegExp(`"functionResponse":\\{"id":"${callId}"`));
    assert.match(next, /cancel/i);
    assert.match(next, /leave it then/);
    assert.equal(readFileSync(join(peer.workspace, 'src', 'a.ts'), 'utf8'), before);

    const cancel = capture();
    assert.equal(await batonMain(['cancel', requestId], cancel.stream, env), EXIT.canceled, cancel.text());
    assert.match(cancel.text(), /^canceled/m);
  });
});
