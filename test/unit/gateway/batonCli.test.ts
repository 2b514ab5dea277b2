import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { discoverLocalAgents } from '../../../src/gateway/agents/discover';
import { batonMain, EXIT_UNVERIFIED } from '../../../src/gateway/batonCli';
import { READ_ONLY } from '../../../src/core/delegation/guards';
import { extensionDelegationRequest } from '../../../src/extension/delegate/delegationRequest';
import { startGateway } from '../../../src/gateway/server';
import { decodeEntry, encodeEntry, JournalStore } from '../../../src/node/journalStore';
import { delegationRepository } from '../../../src/node/patchDrift';
import type { RunningGateway } from '../../../src/gateway/server';
import { tempDir } from './helpers';
import { startRemote } from './remoteAgent';
import { SIGNED_PATCH, startSigningAgent } from '../delegation/signingAgent';
import type { SigningAgent } from '../delegation/signingAgent';
import { CASES } from '../delegation/tamperCases';

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
    const git = (...a: string[]): string =>
      execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...a], {
        cwd: repo,
        encoding: 'utf8',
      });
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

  it('a reader that closes the pipe early (baton … | head) ends the output quietly, without an EPIPE stack trace', async () => {
    const { spawn } = await import('node:child_process');
    for (const args of [['agents'], ['agents', '--json']]) {
      const child = spawn(
        process.execPath,
        ['--import', 'tsx', join(__dirname, '../../../src/gateway/batonCli.ts'), ...args],
        { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      child.stdout.destroy(); // the reader is gone before the first line is written
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      const code = await new Promise<number | null>((ok) => child.on('exit', ok));
      assert.doesNotMatch(stderr, /EPIPE|Error|at /, stderr);
      assert.equal(code, 0, stderr);
    }
  });

  it('lists the agents of the gateway', async () => {
    const out = capture();
    assert.equal(await batonMain(['agents'], out.stream, env), 0);
    assert.match(out.text(), /^formatter\s/m);
    assert.match(out.text(), /^lint-fix\s/m);
  });

  it('sends the request the extension builds for the same task, agent and repository (read-only, same title)', async () => {
    const out = capture();
    const task = `format src ${'and keep it tidy '.repeat(12)}\nwith a second line`;
    const code = await batonMain(
      ['delegate', 'formatter', task, '--repo', repo, '--out', join(state.path, 'same.patch')],
      out.stream,
      env,
    );
    assert.equal(code, 0, out.text());
    const id = /as ([0-9a-f-]{36})/.exec(out.text())?.[1] ?? '';
    const [first] = (await new JournalStore(journals.path).load(id)).entries;
    assert.equal(first?.kind, 'request');
    const sent = first.request;
    const extension = extensionDelegationRequest({
      requestId: sent.requestId,
      createdAt: sent.createdAt,
      who: sent.who,
      agent: sent.agent,
      choice: { task, capabilities: READ_ONLY },
      context: { files: [], diagnostics: [], unsaved: [] },
      repository: (await delegationRepository(repo)).repository,
      // The extension's default deadline (baton.defaultDeadlineMinutes, 30), which baton gives too.
      deadline: sent.createdAt + 30 * 60_000,
    });
    const asJournaled = decodeEntry(
      JSON.parse(JSON.stringify(encodeEntry({ kind: 'request', at: 0, request: extension }))),
    );
    assert.equal(asJournaled.kind, 'request');
    assert.deepEqual(sent, asJournaled.request);
  });

  it('without --out the patch is saved beside the journals, never in the working directory or the repository', async () => {
    const out = capture();
    const cwd = process.cwd();
    process.chdir(repo);
    let code: number;
    try {
      code = await batonMain(['delegate', 'formatter', 'format src', '--repo', repo], out.stream, env);
    } finally {
      process.chdir(cwd);
    }
    const text = out.text();
    assert.equal(code, 0, text);
    const id = /as ([0-9a-f-]{36})/.exec(text)?.[1] ?? '';
    const saved = join(journals.path, '..', 'patches', `${id}.patch`);
    assert.match(text, new RegExp(`changes\\.patch saved to .*patches/${id}\\.patch`));
    assert.match(text, /apply it from the repository's top folder with: git apply /);
    assert.ok(existsSync(saved), saved);
    assert.equal(
      execFileSync('git', ['status', '--porcelain', '--untracked-files=all'], { cwd: repo, encoding: 'utf8' }),
      '',
      'nothing new in the repository',
    );
  });

  it('delegate formatter "format src" --repo <sample> prints live progress, saves the patch, exits 0', async () => {
    const out = capture();
    const patchFile = join(state.path, 'out.patch');
    const code = await batonMain(
      ['delegate', 'formatter', 'format src', '--repo', repo, '--out', patchFile],
      out.stream,
      env,
    );
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
    assert.equal(
      readFileSync(join(repo, 'src', 'ugly.js'), 'utf8'),
      'const  a = {b:1,\n  c:2}\nfunction f( x ){return x+1}\n',
    );

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
      remoteAgents: [
        {
          id: 'remote',
          name: 'Remote',
          description: 'proxied',
          url: remote.url,
          protocolBinding: 'JSONRPC',
          protocolVersion: '1.0',
          auth: { kind: 'bearer', token: 'remote-token-for-the-cli-test' },
          skills: [],
        },
      ],
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

describe('baton command line: results from a signing agent that tampers with them', () => {
  const journals = tempDir('baton-cli-journals-');
  const outDir = tempDir('baton-cli-out-');
  const scenarios = new Map(CASES.map((c) => [c.name, c.tamper]));
  let agent: SigningAgent;
  let env: NodeJS.ProcessEnv;
  before(async () => {
    agent = await startSigningAgent(scenarios);
    // No gateway is involved; the CLI only needs one named to start.
    env = {
      BATON_GATEWAY: agent.base,
      BATON_TOKEN: 'unused',
      BATON_CLI_DIR: journals.path,
      BATON_STATE_DIR: join(outDir.path, 'state'),
    };
  });
  after(async () => {
    await agent.close();
    for (const d of [journals, outDir]) d[Symbol.dispose]();
  });

  async function delegate(name: string, extra: string[] = []): Promise<{ code: number; text: string; file: string }> {
    const out = capture();
    const file = join(outDir.path, `${name}-${Math.random().toString(36).slice(2)}.patch`);
    const code = await batonMain(
      ['delegate', agent.cardUrl, `change x «${name}»`, '--out', file, ...extra],
      out.stream,
      env,
    );
    return { code, text: out.text(), file };
  }

  it('an honest result: verified, and the file holds the signed patch byte for byte; the key is pinned for the origin, 0600', async () => {
    const r = await delegate('honest');
    assert.equal(r.code, 0, r.text);
    assert.match(r.text, /^signature: verified \(signed by http:\/\/127\.0\.0\.1:\d+’s key /m);
    assert.equal(readFileSync(r.file, 'utf8'), SIGNED_PATCH);
    const keysFile = join(journals.path, 'result-keys.json');
    assert.equal(statSync(keysFile).mode & 0o777, 0o600);
    assert.deepEqual(Object.keys(JSON.parse(readFileSync(keysFile, 'utf8')) as object), [agent.base]);
  });

  for (const name of [
    'dup-evil-after',
    'dup-identical',
    'streamed-other-patch',
    'final-extra',
    'chunk-changed',
    'signed-failed',
    'stream-message',
    'request-other',
    'other-context',
    'unsigned',
  ]) {
    it(`${name}: exits 16, says what did not match, saves nothing`, async () => {
      const c = CASES.find((x) => x.name === name);
      assert.ok(c);
      const r = await delegate(name);
      assert.equal(r.code, EXIT_UNVERIFIED, r.text);
      assert.match(r.text, /^signature: INVALID — /m);
      assert.match(r.text, c.why);
      assert.match(r.text, /^the result did not verify: nothing was saved$/m);
      assert.doesNotMatch(r.text, /changes\.patch saved/);
      assert.equal(existsSync(r.file), false);
    });
  }

  it('--json carries the check: status, what failed and why', async () => {
    const r = await delegate('chunk-extra', ['--json']);
    assert.equal(r.code, EXIT_UNVERIFIED, r.text);
    const last = JSON.parse(r.text.trim().split('\n').at(-1) ?? '{}') as {
      patch?: string;
      signature?: { status: string; failure?: string; detail: string };
    };
    assert.equal(last.patch, undefined);
    assert.equal(last.signature?.status, 'invalid');
    assert.equal(last.signature?.failure, 'artifact-differs');
    assert.match(last.signature?.detail ?? '', /as streamed differs/);
  });

  it('a key change: the same origin signing with another key (its card names it) fails until the pin is removed', async () => {
    assert.equal((await delegate('honest')).code, 0);
    const port = new URL(agent.base).port;
    await agent.close();
    agent = await startSigningAgent(scenarios, { port: Number(port) });
    const r = await delegate('honest');
    assert.equal(r.code, EXIT_UNVERIFIED, r.text);
    assert.match(
      r.text,
      /^signature: INVALID — The result envelope is signed with a key that is not pinned for this agent\.$/m,
    );
    assert.match(r.text, /remove its origin from .*result-keys\.json/);
    assert.equal(existsSync(r.file), false);
    const keysFile = join(journals.path, 'result-keys.json');
    const known = JSON.parse(readFileSync(keysFile, 'utf8')) as Record<string, unknown>;
    delete known[agent.base];
    writeFileSync(keysFile, JSON.stringify(known));
    const again = await delegate('honest');
    assert.equal(again.code, 0, again.text);
    assert.equal(readFileSync(again.file, 'utf8'), SIGNED_PATCH);
  });
});
