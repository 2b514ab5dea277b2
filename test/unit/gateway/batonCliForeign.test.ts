// `baton` against agents nobody here wrote: a real A2A 0.3-era SDK server (@a2a-js/sdk 0.3.x) shaped
// like Gemini CLI's (card not beside its endpoint, `url` with a trailing slash naming `localhost`), and
// the current SDK's servers, called directly by card URL with no gateway configured. Follow-up
// commands run as new invocations (and some as separate processes) on the same journal folder.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo, Server, Socket } from 'node:net';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { TaskState } from '@a2a-js/sdk';
import { DelegationJournal } from '../../../src/core/delegation';
import type { JournalEntry, JournalTimelineEntry } from '../../../src/core/delegation';
import { batonMain, checkInterfaceUrl } from '../../../src/gateway/batonCli';
import { decodeEntry, encodeEntry, JournalStore } from '../../../src/node/journalStore';
import { startAgentServer } from '../delegation/agentServers';
import type { AgentServer } from '../delegation/agentServers';
import { startCutProxy, CUT_POINTS } from '../delegation/cutProxy';
import type { CutProxy } from '../delegation/cutProxy';
import { startLegacyServer } from '../delegation/legacyAgentServer';
import type { LegacyServer, LegacyTurn } from '../delegation/legacyAgentServer';
import { tempDir } from './helpers';

const CLI = join(__dirname, '../../../src/gateway/batonCli.ts');

function capture(): { stream: PassThrough; text: () => string } {
  const stream = new PassThrough();
  let buf = '';
  stream.on('data', (d: Buffer) => (buf += d.toString()));
  return { stream, text: () => buf };
}

async function run(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; text: string }> {
  const out = capture();
  const code = await batonMain(args, out.stream, env);
  return { code, text: out.text() };
}

function idOf(text: string): string {
  const id = /as ([0-9a-f-]{36})/.exec(text)?.[1];
  assert.ok(id, text);
  return id;
}

async function waitFor(what: string, ms: number, ok: () => boolean | Promise<boolean>): Promise<void> {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

async function entriesOf(dir: string, id: string): Promise<JournalEntry[]> {
  return (await new JournalStore(dir).load(id)).entries;
}

/** The only journal in the folder (a delegation started by another process). */
function onlyJournal(dir: string): string | undefined {
  const names = existsSync(dir) ? readdirSync(dir).filter((n) => /^[0-9a-f-]{36}\.jsonl$/.test(n)) : [];
  return names.length === 1 ? names[0].slice(0, -'.jsonl'.length) : undefined;
}

/** `baton delegate` as its own process. */
function delegateProcess(
  env: NodeJS.ProcessEnv,
  args: string[],
): { child: ChildProcess; done: Promise<{ code: number | null; out: string }> } {
  const child = spawn(process.execPath, ['--import', 'tsx', CLI, 'delegate', ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  const done = new Promise<{ code: number | null; out: string }>((ok) => child.on('exit', (code) => ok({ code, out })));
  return { child, done };
}

describe('baton with an A2A 0.3 agent shaped like Gemini CLI, no gateway configured', () => {
  const home = tempDir('baton-cli-foreign-');
  let server: LegacyServer;
  /** Turns of the `hold` task wait until the test lets them finish. */
  let released = false;
  let stopped = false;
  async function script(t: LegacyTurn): Promise<void> {
    if (t.text.includes('hold')) {
      t.task();
      t.status('working', 'started');
      while (!released && !stopped) await t.sleep(20);
      if (stopped) return;
      t.artifact('notes', 'notes.txt', 'held and released');
      t.status('completed', 'released', true);
      return;
    }
    if (!t.continuing) {
      t.task();
      t.status('working', 'thinking');
      t.status('input-required', 'which name?', true);
      return;
    }
    t.status('working', `naming it ${t.text}`);
    t.artifact('notes', 'notes.txt', `name: ${t.text}`);
    t.status('completed', 'named', true);
  }
  const envFor = (name: string): NodeJS.ProcessEnv => ({
    BATON_CLI_DIR: join(home.path, name, 'journals'),
    // An empty state folder: no local gateway either.
    BATON_STATE_DIR: join(home.path, name, 'state'),
  });

  before(async () => {
    server = await startLegacyServer({
      script,
      cardPath: '/agents/coder/card.json',
      cardUrl: (port) => `http://localhost:${port}/`,
    });
  });
  after(async () => {
    stopped = true;
    await server.close();
    home[Symbol.dispose]();
  });

  it('delegates by card URL; status, reply, cancel and watch from new invocations use the card kept with it', async () => {
    const env = envFor('followups');
    const first = await run(['delegate', server.cardUrl, 'name the thing'], env);
    assert.equal(first.code, 15, first.text);
    const id = idOf(first.text);
    // The card names localhost; the user gave 127.0.0.1: requests go where the user pointed.
    assert.match(first.text, new RegExp(`\\(http://127\\.0\\.0\\.1:${server.port}/\\)`));
    const [req] = await entriesOf(env.BATON_CLI_DIR ?? '', id);
    assert.equal(req.kind, 'request');
    assert.equal(req.request.agent.cardUrl, server.cardUrl);
    assert.equal(req.request.agent.card?.url, `http://localhost:${server.port}/`);
    assert.match(req.request.agent.cardDigest ?? '', /^sha256:[0-9a-f]{64}$|^[0-9a-f]{64}$/);

    const status = await run(['status', id], env);
    assert.equal(status.code, 15, status.text);
    assert.match(status.text, /input-required \(which name\?\)/);
    const reply = await run(['reply', id, 'Ada'], env);
    assert.equal(reply.code, 0, reply.text);
    assert.match(reply.text, /naming it Ada/);
    assert.match(reply.text, /^completed: named$/m);
    const again = await run(['status', id], env);
    assert.equal(again.code, 0, again.text);
    assert.match(again.text, /completed \(named\)/);

    // Another one, canceled and then watched from new invocations.
    const second = idOf((await run(['delegate', server.cardUrl, 'name another'], env)).text);
    const cancel = await run(['cancel', second], env);
    assert.equal(cancel.code, 11, cancel.text);
    assert.match(cancel.text, /^canceled: Canceled; the agent confirmed\.$/m);
    const watch = await run(['watch', second], env);
    assert.equal(watch.code, 11, watch.text);
    assert.ok(server.methods.includes('tasks/cancel'));
  });

  it('a journal written before the card URL was kept still works: its card is read beside the endpoint, without "//"', async () => {
    // An agent whose card is where older versions looked for it, with a trailing slash in its url.
    const plain = await startLegacyServer({ script, cardUrl: (port) => `http://127.0.0.1:${port}/` });
    try {
      const env = envFor('old-journal');
      const first = await run(['delegate', plain.cardUrl, 'name it'], env);
      assert.equal(first.code, 15, first.text);
      const id = idOf(first.text);
      // Rewrite the request as an older version wrote it: no card URL, no card.
      const file = join(env.BATON_CLI_DIR ?? '', `${id}.jsonl`);
      const lines = readFileSync(file, 'utf8').trimEnd().split('\n');
      const request = decodeEntry(JSON.parse(lines[0]));
      assert.equal(request.kind, 'request');
      const { cardUrl: _u, card: _c, ...agent } = request.request.agent;
      const old = encodeEntry({ ...request, request: { ...request.request, agent } });
      writeFileSync(file, [JSON.stringify(old), ...lines.slice(1)].join('\n') + '\n');
      const reply = await run(['reply', id, 'Lin'], env);
      assert.equal(reply.code, 0, reply.text);
      assert.match(reply.text, /^completed: named$/m);
    } finally {
      await plain.close();
    }
  });

  it('status of a delegation another process runs only reads; cancel is handed to that process, which cancels it', async () => {
    const env = envFor('two-processes');
    released = false;
    const owner = delegateProcess(env, [server.cardUrl, 'hold on']);
    const dir = env.BATON_CLI_DIR ?? '';
    let id = '';
    await waitFor('the other process has a task', 20_000, async () => {
      id = onlyJournal(dir) ?? '';
      return id !== '' && (await entriesOf(dir, id)).some((e) => e.kind === 'task');
    });
    await waitFor('the task is working', 5_000, async () => (await entriesOf(dir, id)).some((e) => e.kind === 'event'));
    const before = readFileSync(join(dir, `${id}.jsonl`));
    const lease = readFileSync(join(dir, `${id}.lease`), 'utf8');
    const t0 = Date.now();
    const status = await run(['status', id], env);
    assert.ok(Date.now() - t0 < 5_000, 'status answers at once');
    assert.equal(status.code, 0, status.text);
    assert.match(status.text, new RegExp(`: working task \\S+ — run by process ${owner.child.pid}`));
    assert.deepEqual(readFileSync(join(dir, `${id}.jsonl`)), before, 'status wrote nothing');
    assert.equal(readFileSync(join(dir, `${id}.lease`), 'utf8'), lease, 'and took no lease');
    assert.ok(JSON.parse(lease).pid === owner.child.pid, 'the lease is the other process');

    const cancel = await run(['cancel', id], env);
    assert.equal(cancel.code, 11, cancel.text);
    assert.match(cancel.text, /^canceled: Canceled; the agent confirmed\.$/m);
    const ended = await owner.done;
    assert.equal(ended.code, 11, ended.out);
    const journal = DelegationJournal.fromEntries(await entriesOf(dir, id));
    assert.equal(journal.decide()?.outcome, 'canceled');
    assert.equal(journal.cancelRequestedBy, 'user');
    assert.ok(!existsSync(join(dir, `${id}.lease`)), 'the owner gave its lease up when it ended');
  });

  it('after the process running a delegation dies, watch takes its lease over and follows the task to the end', async () => {
    const env = envFor('crash');
    released = false;
    const owner = delegateProcess(env, [server.cardUrl, 'hold still']);
    const dir = env.BATON_CLI_DIR ?? '';
    let id = '';
    await waitFor('the other process has a task', 20_000, async () => {
      id = onlyJournal(dir) ?? '';
      return id !== '' && (await entriesOf(dir, id)).some((e) => e.kind === 'event');
    });
    owner.child.kill('SIGKILL');
    await owner.done;
    assert.ok(existsSync(join(dir, `${id}.lease`)), 'a crash leaves its lease behind');
    const status = await run(['status', id], env);
    assert.equal(status.code, 0, status.text);
    released = true;
    const watch = await run(['watch', id], env);
    assert.equal(watch.code, 0, watch.text);
    assert.match(watch.text, /^completed: released$/m);
    const journal = DelegationJournal.fromEntries(await entriesOf(dir, id));
    assert.equal(journal.decide()?.outcome, 'completed');
    assert.ok(journal.hasFinalSnapshot);
  });

  it('status of an in-flight delegation whose agent never answers returns at once and contacts nobody', async () => {
    // An agent that accepts connections and never says a word.
    const seen: Socket[] = [];
    const mute: Server = createServer((s) => seen.push(s));
    await new Promise<void>((r) => mute.listen(0, '127.0.0.1', () => r()));
    const port = (mute.address() as AddressInfo).port;
    try {
      const env = envFor('mute');
      const dir = env.BATON_CLI_DIR ?? '';
      const first = await run(['delegate', server.cardUrl, 'name something'], env);
      const id = idOf(first.text);
      // Make it an in-flight delegation to the mute agent, as a process that died mid-task leaves it.
      const file = join(dir, `${id}.jsonl`);
      const lines = readFileSync(file, 'utf8').trimEnd().split('\n');
      const request = decodeEntry(JSON.parse(lines[0]));
      assert.equal(request.kind, 'request');
      const endpoint = `http://127.0.0.1:${port}/`;
      const agent = { ...request.request.agent, endpoint, card: { ...request.request.agent.card, url: endpoint } };
      const head = encodeEntry({ ...request, request: { ...request.request, agent } });
      const kept = lines.slice(1, 4).map((l) => decodeEntry(JSON.parse(l)));
      assert.deepEqual(
        kept.map((e) => e.kind),
        ['send', 'task', 'snapshot'],
      );
      writeFileSync(file, [JSON.stringify(head), ...kept.map((e) => JSON.stringify(encodeEntry(e)))].join('\n') + '\n');
      assert.equal(DelegationJournal.fromEntries(await entriesOf(dir, id)).decide(), undefined, 'in flight');
      const t0 = Date.now();
      const status = await run(['status', id], env);
      assert.ok(Date.now() - t0 < 3_000, `status took ${Date.now() - t0} ms`);
      assert.equal(status.code, 0, status.text);
      await new Promise((r) => setTimeout(r, 200));
      assert.equal(seen.length, 0, 'status connected to the agent');
    } finally {
      for (const s of seen) s.destroy();
      await new Promise<void>((r) => mute.close(() => r()));
    }
  });
});

describe('baton delegate <card-url> with no gateway configured (current SDK servers)', () => {
  const home = tempDir('baton-cli-direct-');
  const servers: AgentServer[] = [];
  after(async () => {
    for (const s of servers) await s.close();
    home[Symbol.dispose]();
  });

  for (const legacy of [false, true]) {
    it(`completes against an A2A ${legacy ? '0.3' : '1.0'} server, and sends it no token`, async () => {
      const server = await startAgentServer({
        legacy,
        script: async (t) => {
          t.task();
          t.status(TaskState.TASK_STATE_WORKING, 'on it');
          t.artifact('notes', 'notes.txt', 'done');
          t.status(TaskState.TASK_STATE_COMPLETED, 'all done');
        },
      });
      servers.push(server);
      const env = {
        BATON_CLI_DIR: join(home.path, String(legacy), 'journals'),
        BATON_STATE_DIR: join(home.path, String(legacy), 'state'),
        BATON_TOKEN: 'gateway-token-not-for-agents',
      };
      const r = await run(['delegate', `${server.base}/.well-known/agent-card.json`, 'do it'], env);
      assert.equal(r.code, 0, r.text);
      assert.match(r.text, /^completed: all done$/m);
      assert.deepEqual(server.seenAuth, []);
    });
  }

  it('an agent named by id still needs a gateway, and the error says how to name one', async () => {
    const env = { BATON_CLI_DIR: join(home.path, 'id', 'journals'), BATON_STATE_DIR: join(home.path, 'id', 'state') };
    await assert.rejects(
      run(['delegate', 'formatter', 'do it'], env),
      /no gateway .*--gateway URL.*card URL needs none/,
    );
  });
});

describe('the card interface check', () => {
  it('treats localhost, 127.0.0.1 and ::1 as one host only when both sides are loopback', () => {
    assert.equal(
      checkInterfaceUrl('http://localhost:4100/', 'http://127.0.0.1:4100/.well-known/agent-card.json'),
      'http://127.0.0.1:4100/',
    );
    assert.equal(
      checkInterfaceUrl('http://127.0.0.1:4100/rpc', 'http://localhost:4100/card.json'),
      'http://localhost:4100/rpc',
    );
    assert.equal(checkInterfaceUrl('http://[::1]:4100/', 'http://localhost:4100/card.json'), 'http://localhost:4100/');
    assert.throws(
      () => checkInterfaceUrl('http://localhost:4101/', 'http://127.0.0.1:4100/card.json'),
      /another origin .*only when both .* same scheme and port/,
    );
    assert.throws(
      () => checkInterfaceUrl('http://agent.example:4100/', 'http://127.0.0.1:4100/card.json'),
      /another origin \(http:\/\/agent\.example:4100\/\) \(localhost, 127\.0\.0\.1 and ::1 count as the same host only when both/,
    );
    assert.throws(
      () => checkInterfaceUrl('https://b.example/', 'https://a.example/card.json'),
      (e: Error) => /another origin/.test(e.message) && !/localhost/.test(e.message),
    );
  });
});

describe('baton prints every event the journal has, also those fetched after a broken stream', () => {
  let server: AgentServer;
  let proxy: CutProxy;
  const home = tempDir('baton-cli-cut-');
  before(async () => {
    // The proxy's port is chosen first, so the card can name it.
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', () => r()));
    const proxyPort = (probe.address() as AddressInfo).port;
    await new Promise<void>((r) => probe.close(() => r()));
    server = await startAgentServer({
      replay: true,
      cardBase: () => `http://127.0.0.1:${proxyPort}`,
      script: async (t) => {
        t.task();
        for (let i = 1; i <= 6; i++) {
          t.status(TaskState.TASK_STATE_WORKING, `step ${i}`);
          await t.sleep(2);
        }
        t.artifact('patch', 'changes.patch', 'diff --git a/x b/x\n');
        t.status(TaskState.TASK_STATE_COMPLETED, 'finished');
      },
    });
    proxy = await startCutProxy(server.port, 'SendStreamingMessage', proxyPort);
    proxy.setCutPoint(CUT_POINTS.midEvent);
  });
  after(async () => {
    await proxy.close();
    await server.close();
    home[Symbol.dispose]();
  });

  it('the stream is cut, the missed events come back by GetTask and replay, and all of them are printed', async () => {
    const env = { BATON_CLI_DIR: join(home.path, 'journals'), BATON_STATE_DIR: join(home.path, 'state') };
    const r = await run(
      ['delegate', `http://127.0.0.1:${proxy.port}/.well-known/agent-card.json`, 'go', '--json'],
      env,
    );
    assert.equal(r.code, 0, r.text);
    assert.equal(proxy.cuts, 1, 'the stream was cut');
    const printed = r.text
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const summary = printed.pop();
    assert.equal(summary?.outcome, 'completed');
    const id = String(summary?.requestId);
    const view = DelegationJournal.fromEntries(await entriesOf(env.BATON_CLI_DIR, id)).view(Date.now());
    const key = (e: JournalTimelineEntry | Record<string, unknown>): string =>
      `${String(e.kind)} ${String(e.at)} ${'text' in e ? String(e.text) : ''}${'name' in e ? String(e.name) : ''}`;
    assert.deepEqual(printed.map(key), view.timeline.map(key));
    for (let i = 1; i <= 6; i++)
      assert.ok(
        printed.some((e) => e.text === `step ${i}`),
        `step ${i} printed`,
      );
  });
});
