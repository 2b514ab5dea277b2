/**
 * `baton-gateway --agent-pace-ms N`, as the demo starts it: the refactoring agent's first step says
 * the pace, and a value that is not a whole number of milliseconds is refused.
 */
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { META } from '../../../src/core/batonProfile';
import { bounded, clientFor, sendRequest, tempDir, userMessage } from '../gateway/helpers';
import { makeRepo } from '../workspace/repoFixtures';

const ROOT = resolve(__dirname, '../../..');
const CLI = join(ROOT, 'src/gateway/cli.ts');

describe('baton-gateway --agent-pace-ms', () => {
  it('refuses a pace that is not a whole number of milliseconds', () => {
    for (const bad of ['abc', '-5', '1.5', '999999']) {
      const r = spawnSync(process.execPath, ['--import', 'tsx', CLI, `--agent-pace-ms=${bad}`, '--no-local-agents'], {
        cwd: ROOT,
        encoding: 'utf8',
      });
      assert.equal(r.status, 2, bad);
      assert.match(r.stderr, /--agent-pace-ms must be a whole number of milliseconds from 0 to 60000/);
    }
  });

  it('paces the refactoring agent, and its first step says so', async () => {
    using dir = tempDir();
    const repo = makeRepo(dir.path, 'repo', { 'a.ts': 'export const unusedImportUser = 1;\n' });
    const proc = spawn(
      process.execPath,
      ['--import', 'tsx', CLI, '--state', join(dir.path, 'state'), '--root', dir.path, '--agent-pace-ms', '250'],
      { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    try {
      const line = await bounded(
        new Promise<string>((res, rej) => {
          let out = '';
          proc.stdout.on('data', (d: Buffer) => {
            out += d.toString();
            if (out.includes('\n')) res(out.slice(0, out.indexOf('\n')));
          });
          proc.once('exit', (code) => rej(new Error(`the gateway exited ${code}`)));
        }),
        'the gateway to start',
        60_000,
      );
      const info = JSON.parse(line) as { url: string; tokenFile: string; agents: string[] };
      assert.ok(info.agents.includes('refactor'));
      const client = await clientFor(
        `${info.url}/a2a/refactor/.well-known/agent-card.json`,
        readFileSync(info.tokenFile, 'utf8').trim(),
      );
      const t0 = Date.now();
      const texts: string[] = [];
      for await (const ev of client.sendMessageStream(
        sendRequest(userMessage('organise imports', { [META.repository]: repo })),
      )) {
        if (ev.payload?.$case !== 'statusUpdate') continue;
        const c = ev.payload.value.status?.message?.parts[0]?.content;
        if (c?.$case === 'text') texts.push(c.value);
      }
      const first = texts.find((t) => t.startsWith('Organise imports'));
      assert.match(
        first ?? '',
        /Scope: the whole repository \(no files were sent and the task names none\): 1 file\. Pacing is on: 250 ms between steps/,
      );
      const steps = texts.indexOf(first ?? '') >= 0 ? texts.length - texts.indexOf(first ?? '') - 1 : 0;
      assert.ok(Date.now() - t0 >= steps * 250, `${Date.now() - t0} ms for ${steps} paced steps`);
    } finally {
      proc.kill('SIGTERM');
    }
  });
});
