import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { discoverLocalAgents } from '../../../src/gateway/agents/discover';
import { batonMain } from '../../../src/gateway/batonCli';
import { startGateway } from '../../../src/gateway/server';
import type { RunningGateway } from '../../../src/gateway/server';
import { tempDir } from './helpers';
import { startRemote } from './remoteAgent';

function capture(): { stream: PassThrough; text: () => string } {
  const stream = new PassThrough();
  let buf = '';
  stream.on('data', (d: Buffer) => (buf += d.toString()));
  return { stream, text: () => buf };
}

describe('baton command line against a real gateway and the built-in formatter', () => {
  const state = tempDir();
  const roots = tempDir('baton-cli-roots-');
  const journals = tempDir('baton-cli-journals-');
  const repo = join(roots.path, 'sample');
  let gw: RunningGateway;
  let env: NodeJS.ProcessEnv;
  before(async () => {
    mkdirSync(join(repo, 'src'), { recursive: true });
    writeFileSync(join(repo, 'src', 'ugly.js'), 'const  a = {b:1,\n  c:2}\nfunction f( x ){return x+1}\n');
    const git = (...a: string[]): string => execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...a], { cwd: repo, encoding: 'utf8' });
    git('init', '-q');
    git('add', '.');
    git('commit', '-qm', 'init');
    const localAgents = await discoverLocalAgents({ workspaceRoot: join(state.path, 'ws'), clis: false });
    gw = await startGateway({ stateDir: state.path, roots: [roots.path], localAgents, log: () => undefined });
    env = { BATON_GATEWAY: gw.url, BATON_TOKEN: gw.token, BATON_CLI_DIR: journals.path, BATON_STATE_DIR: state.path };
  });
  after(async () => {
    await gw.close();
    for (const d of [state, roots, journals]) d[Symbol.dispose]();
  });

  it('lists the agents of the gateway', async () => {
    const out = capture();
    assert.equal(await batonMain(['agents'], out.stream, env), 0);
    assert.match(out.text(), /^formatter\s/m);
    assert.match(out.text(), /^lint-fix\s/m);
  });

  it('delegate formatter "format src" --repo <sample> prints live progress, saves the patch, exits 0', async () => {
    const out = capture();
    const patchFile = join(state.path, 'out.patch');
    const code = await batonMain(['delegate', 'formatter', 'format src', '--repo', repo, '--out', patchFile], out.stream, env);
    const text = out.text();
    assert.equal(code, 0, text);
    assert.match(text, /^delegating to .* as [0-9a-f-]{36}$/m);
    assert.ok(text.split('\n').filter((l) => l.startsWith('  ')).length >= 2, `expected progress lines:\n${text}`);
    assert.match(text, /^completed/m);
    // The gateway signs the result; the CLI checks it as the extension does before it saves the patch.
    assert.match(text, /^signature: verified \(signed by http:\/\/127\.0\.0\.1:\d+’s key /m);
    assert.match(text, new RegExp(`changes\\.patch saved to ${patchFile.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
    assert.ok(existsSync(patchFile));
    const patch = readFileSync(patchFile, 'utf8');
    assert.match(patch, /src\/ugly\.js/);
    assert.match(patch, /^\+const a = \{ b: 1, c: 2 \};$/m);
    // The user's tree is untouched: the change only comes back as a patch.
    assert.equal(readFileSync(join(repo, 'src', 'ugly.js'), 'utf8'), 'const  a = {b:1,\n  c:2}\nfunction f( x ){return x+1}\n');

    const id = /as ([0-9a-f-]{36})/.exec(text)?.[1] ?? '';
    const status = capture();
    assert.equal(await batonMain(['status', id], status.stream, env), 0);
    assert.match(status.text(), /completed/);
  });

  it('refuses a repository outside the roots and exits with the failed code', async () => {
    const out = capture();
    const code = await batonMain(['delegate', 'formatter', 'format', '--repo', '/etc', '--json'], out.stream, env);
    assert.notEqual(code, 0);
    assert.match(out.text(), /outside the folders this gateway serves/);
  });
});

describe('baton command line: a task that waits for authorization, through the gateway to a remote agent', () => {
  const state = tempDir();
  const journals = tempDir('baton-cli-journals-');
  let gw: RunningGateway;
  let remote: Awaited<ReturnType<typeof startRemote>>;
  let env: NodeJS.ProcessEnv;
  before(async () => {
    remote = await startRemote(0, 'remote-token-for-the-cli-test', false);
    gw = await startGateway({
      stateDir: state.path,
      remoteAgents: [{ id: 'remote', name: 'Remote', description: 'proxied', url: remote.url, protocolBinding: 'JSONRPC', protocolVersion: '1.0', auth: { kind: 'bearer', token: 'remote-token-for-the-cli-test' }, skills: [] }],
      log: () => undefined,
    });
    env = { BATON_GATEWAY: gw.url, BATON_TOKEN: gw.token, BATON_CLI_DIR: journals.path, BATON_STATE_DIR: state.path };
  });
  after(async () => {
    await gw.close();
    await remote.close();
    for (const d of [state, journals]) d[Symbol.dispose]();
  });

  it('delegate stops at auth-required and says what to do; after the sign-in, baton watch follows it to the end', async () => {
    const first = capture();
    assert.equal(await batonMain(['delegate', 'remote', 'auth'], first.stream, env), 15, first.text());
    assert.match(first.text(), /^auth-required/m);
    assert.match(first.text(), /authorize as it asks, then follow the task again with: baton watch [0-9a-f-]{36}/);
    const id = /as ([0-9a-f-]{36})/.exec(first.text())?.[1] ?? '';
    remote.executor.authorize();
    remote.executor.finishAuthTask = true;
    const watched = capture();
    const patchFile = join(state.path, 'after-auth.patch');
    assert.equal(await batonMain(['watch', id, '--out', patchFile], watched.stream, env), 0, watched.text());
    assert.match(watched.text(), /^completed/m);
    assert.match(watched.text(), /^signature: verified /m);
    assert.match(watched.text(), /changes\.patch saved to /);
    assert.match(readFileSync(patchFile, 'utf8'), /^diff --git a\/auth/);
  });
});
