import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tempDir } from './helpers';
import { startRemote } from './remoteAgent';

const CLI = resolve(__dirname, '../../../src/gateway/cli.ts');

interface Launched {
  /** Its first stdout line (the info JSON). */
  readonly info: Record<string, unknown>;
  /** What it wrote to stderr so far. */
  stderr(): string;
  /** The first stderr line with `text` in it, once there is one. */
  stderrLine(text: string): Promise<string>;
  /** GET /baton/instance with the token of its state folder. */
  instance(): Promise<Record<string, unknown>>;
  /** Sends it a signal. */
  signal(sig: NodeJS.Signals): void;
  /** SIGTERM, then its exit code. */
  stop(): Promise<number | null>;
  /** Its exit code once it has exited by itself (null: a signal ended it). */
  exited(): Promise<number | null>;
}

/** Starts the real `baton-gateway` program with `args` and waits for its info line. */
async function launch(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Launched> {
  const child = spawn(process.execPath, ['--import', 'tsx', CLI, ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((ok) => child.once('exit', ok));
  const stop = (): Promise<number | null> => {
    if (child.exitCode === null) child.kill('SIGTERM');
    return exited;
  };
  let info: Record<string, unknown>;
  try {
    info = await new Promise<Record<string, unknown>>((ok, fail) => {
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        if (out.includes('\n')) ok(JSON.parse(out.split('\n')[0]) as Record<string, unknown>);
      });
      child.on('exit', (c) => fail(new Error(`exited ${c}: ${stderr}`)));
      setTimeout(() => fail(new Error(`no info line in 60 s: ${stderr}`)), 60_000).unref();
    });
  } catch (e) {
    await stop();
    throw e;
  }
  const findLine = (text: string): string | undefined => stderr.split('\n').find((l) => l.includes(text));
  return {
    info,
    stderr: () => stderr,
    stderrLine: (text) =>
      new Promise<string>((ok, fail) => {
        const found = findLine(text);
        if (found !== undefined) return ok(found);
        const onData = (): void => {
          const line = findLine(text);
          if (line === undefined) return;
          child.stderr.off('data', onData);
          ok(line);
        };
        child.stderr.on('data', onData);
        setTimeout(() => fail(new Error(`no "${text}" line in 60 s: ${stderr}`)), 60_000).unref();
      }),
    instance: async () => {
      const token = readFileSync(String(info.tokenFile), 'utf8').trim();
      const res = await fetch(`${String(info.url)}/baton/instance`, { headers: { Authorization: `Bearer ${token}` } });
      return (await res.json()) as Record<string, unknown>;
    },
    signal: (sig) => child.kill(sig),
    stop,
    exited: () => exited,
  };
}

/** Starts the real `baton-gateway` program and returns its first stdout line (the info JSON), then stops it. */
async function startAndStop(
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ info: Record<string, unknown>; file: Record<string, unknown>; code: number | null; stderr: string }> {
  const gw = await launch(args, env);
  const stateArg = args[args.indexOf('--state') + 1];
  const file = JSON.parse(readFileSync(join(stateArg, 'gateway.json'), 'utf8')) as Record<string, unknown>;
  const code = await gw.stop();
  return { info: gw.info, file, code, stderr: gw.stderr() };
}

describe('baton-gateway program: which agents it serves and which coding CLIs it looked for', () => {
  it('--no-agent leaves that agent out; gateway.json says which CLIs were found and which not', async () => {
    using dir = tempDir();
    const bin = join(dir.path, 'bin');
    mkdirSync(bin);
    writeFileSync(join(bin, 'claude'), '#!/bin/sh\necho "claude 1.0"\n');
    chmodSync(join(bin, 'claude'), 0o755);
    const r = await startAndStop(['--state', join(dir.path, 'state'), '--no-agent', 'lint-fix'], {
      PATH: `${bin}:/usr/bin:/bin`,
    });
    const agents = r.info.agents as string[];
    assert.ok(agents.includes('formatter'), JSON.stringify(agents));
    assert.ok(!agents.includes('lint-fix'), JSON.stringify(agents));
    assert.ok(agents.includes('claude'));
    const clis = r.file.codingClis as Array<{ id: string; found: boolean; binaries: string[] }>;
    assert.deepEqual(
      clis.map((c) => c.id),
      ['claude', 'codex', 'gemini', 'copilot', 'opencode'],
    );
    assert.deepEqual(
      clis.filter((c) => c.found).map((c) => c.id),
      ['claude'],
    );
    assert.ok(clis.every((c) => c.binaries.length > 0));
  });
});

describe('baton-gateway program: a port in use', () => {
  it('exits non-zero and says the port is in use and what to do', async () => {
    using dir = tempDir();
    const busy = createServer();
    await new Promise<void>((r) => busy.listen(0, '127.0.0.1', () => r()));
    const port = (busy.address() as AddressInfo).port;
    try {
      const child = spawn(
        process.execPath,
        ['--import', 'tsx', CLI, '--state', join(dir.path, 'state'), '--port', String(port), '--no-local-agents'],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let stderr = '';
      let stdout = '';
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      const code = await new Promise<number | null>((ok, fail) => {
        child.on('exit', ok);
        setTimeout(() => {
          child.kill('SIGKILL');
          fail(new Error(`still running after 60 s: ${stderr}`));
        }, 60_000).unref();
      });
      assert.notEqual(code, 0);
      assert.match(
        stderr,
        new RegExp(`127\\.0\\.0\\.1:${port} is already in use; stop what listens there or choose another port`),
      );
      assert.doesNotMatch(stderr, /Cannot read properties/);
      assert.equal(stdout, '', 'no info line: it never listened');
    } finally {
      await new Promise<void>((r) => busy.close(() => r()));
    }
  });
});

describe('baton-gateway program: retention settings', () => {
  it("applies the config file's retention section: the cap is reported and a pass is logged", async () => {
    using dir = tempDir();
    const config = join(dir.path, 'gateway.json');
    writeFileSync(config, JSON.stringify({ localAgents: false, retention: { maxStoreMb: 3, intervalSeconds: 1 } }));
    const gw = await launch(['--config', config, '--state', join(dir.path, 'state')]);
    try {
      const body = (await gw.instance()) as { store?: { kind?: string; maxBytes?: number; sizeBytes?: number } };
      assert.equal(body.store?.kind, 'sqlite');
      assert.equal(body.store?.maxBytes, 3 * 1024 * 1024);
      assert.ok((body.store?.sizeBytes ?? 0) > 0);
      assert.match(
        await gw.stderrLine('retention:'),
        /retention: compacted 0, deleted 0 finished task\(s\); store [\d.]+ MB \(cap 3\.0 MB\)/,
      );
    } finally {
      await gw.stop();
    }
  });
});

describe('baton-gateway program: its heap growth', () => {
  /** Starts the program with `env`, reads `memory` from GET /baton/instance and its stderr, stops it. */
  async function memoryOf(env: NodeJS.ProcessEnv): Promise<{ memory: Record<string, unknown>; stderr: string }> {
    using dir = tempDir();
    const gw = await launch(['--state', join(dir.path, 'state'), '--no-local-agents'], env);
    try {
      const body = (await gw.instance()) as { memory?: Record<string, unknown> };
      assert.ok(body.memory, JSON.stringify(body));
      return { memory: body.memory, stderr: gw.stderr() };
    } finally {
      await gw.stop();
    }
  }

  it('applies its heap growth at start and reports it with its memory; the environment can change or drop it', async () => {
    const plain = await memoryOf({ BATON_GATEWAY_HEAP_GROWING_PERCENT: '', NODE_OPTIONS: '' });
    assert.equal(plain.memory.heapGrowingPercent, 100);
    assert.ok(Number(plain.memory.rssBytes) > Number(plain.memory.heapUsedBytes), JSON.stringify(plain.memory));
    assert.ok(Number(plain.memory.heapTotalBytes) >= Number(plain.memory.heapUsedBytes));
    assert.equal((await memoryOf({ BATON_GATEWAY_HEAP_GROWING_PERCENT: '150' })).memory.heapGrowingPercent, 150);
    assert.equal((await memoryOf({ BATON_GATEWAY_HEAP_GROWING_PERCENT: '0' })).memory.heapGrowingPercent, null);
    const bad = await memoryOf({ BATON_GATEWAY_HEAP_GROWING_PERCENT: 'lots' });
    assert.equal(bad.memory.heapGrowingPercent, 100);
    assert.match(bad.stderr, /BATON_GATEWAY_HEAP_GROWING_PERCENT=lots is not a whole number from 0 to 300; using 100/);
  });
});

describe(
  'baton-gateway program: tokens, limits and retention read again on SIGHUP',
  { skip: process.platform === 'win32' && 'no SIGHUP on Windows' },
  () => {
    const ALICE = 'alice-token-0123456789abcdef';
    const BOB = 'bob-token-0123456789abcdef';
    const sha = (t: string): string => createHash('sha256').update(t).digest('hex');

    it('takes a member added, a token revoked, a new per-member limit and retention without a restart; a file that no longer reads changes nothing', async () => {
      using dir = tempDir();
      const config = join(dir.path, 'gateway.json');
      const write = (tokens: Array<{ principal: string; sha256: string }>, extra: Record<string, unknown> = {}): void =>
        writeFileSync(config, JSON.stringify({ localAgents: ['formatter'], tokens, ...extra }));
      write([{ principal: 'alice', sha256: sha(ALICE) }]);
      const gw = await launch(['--config', config, '--state', join(dir.path, 'state')]);
      const statusWith = (token: string): Promise<number> => listTasksStatus(gw, token);
      /** Sends SIGHUP and waits for its `nth` report line. */
      const hup = async (nth: number): Promise<string> => {
        gw.signal('SIGHUP');
        return waitUntil(
          () =>
            gw
              .stderr()
              .split('\n')
              .filter((l) => l.includes('SIGHUP:'))[nth - 1],
          'the reload line',
        );
      };
      try {
        const local = readFileSync(String(gw.info.tokenFile), 'utf8').trim();
        assert.equal(await statusWith(ALICE), 200);
        assert.equal(await statusWith(BOB), 401);
        // Bob joins, Alice's token is revoked.
        write([{ principal: 'bob', sha256: sha(BOB) }]);
        assert.match(
          await hup(1),
          /SIGHUP: tokens read again from .*: 1 accepted; new for bob; no longer accepted for alice$/,
        );
        assert.equal(await statusWith(BOB), 200);
        assert.equal(await statusWith(ALICE), 401);
        assert.equal(await statusWith(local), 200, 'the local principal’s own token stays');
        // A file that no longer reads: nothing changes, and the line says why.
        writeFileSync(config, '{"tokens": [');
        assert.match(
          await hup(2),
          /SIGHUP: cannot read .* again \(.*\); the tokens, agents, limits and retention stay as they were$/,
        );
        assert.equal(await statusWith(BOB), 200);
        // The limit of running tasks per member is taken too.
        write([{ principal: 'bob', sha256: sha(BOB) }], { limits: { maxRunningTasksPerPrincipal: 2 } });
        assert.match(await hup(3), /: 1 accepted; unchanged; running tasks per member: 2 \(was no limit\)$/);
        // Retention is taken too, and a pass runs with it at once (its interval is a minute).
        const passes = (): number =>
          gw
            .stderr()
            .split('\n')
            .filter((l) => /retention: compacted/.test(l)).length;
        const before = passes();
        write([{ principal: 'bob', sha256: sha(BOB) }], {
          limits: { maxRunningTasksPerPrincipal: 2 },
          retention: { finishedTaskHours: 24, maxStoreMb: 512 },
        });
        assert.match(
          await hup(4),
          /unchanged; retention: cap 512\.0 MB, finished tasks kept 24 h, events 60 min, every 60 s \(was cap 2048\.0 MB, finished tasks kept 168 h, events 60 min, every 60 s\), a pass runs now$/,
        );
        const line = await waitUntil(
          () =>
            passes() > before
              ? gw
                  .stderr()
                  .split('\n')
                  .findLast((l) => /retention: compacted/.test(l))
              : undefined,
          'a retention pass after the reload',
        );
        assert.match(line, /\(cap 512\.0 MB\)$/);
        const instance = (await (
          await fetch(`${String(gw.info.url)}/baton/instance`, { headers: { Authorization: `Bearer ${local}` } })
        ).json()) as { store?: { maxBytes?: number } };
        assert.equal(instance.store?.maxBytes, 512 * 1024 * 1024);
        // Per-task limits and delegation guards are taken, each said with what it was.
        const tightened = {
          limits: {
            maxRunningTasksPerPrincipal: 2,
            capabilities: { write: false },
            defaultDeadlineSeconds: 600,
            cancelGraceSeconds: 2,
          },
          retention: { finishedTaskHours: 24, maxStoreMb: 512 },
          maxDepth: 2,
          consent: { formatter: 'deny' },
        };
        write([{ principal: 'bob', sha256: sha(BOB) }], tightened);
        assert.match(
          await hup(5),
          /unchanged; task limits: capabilities no write, no shell, no network, deadline 10 min \(at most 240 min\), cancel grace 2 s \(was capabilities write, no shell, no network, deadline 30 min \(at most 240 min\), cancel grace 5 s\), for tasks started from now on; delegation guards: depth 2, 3 per task, 10 per 1 min, consent formatter deny \(40 s to answer\) \(was depth 1, 3 per task, 10 per 1 min, consent asked \(40 s to answer\)\)$/,
        );
        // Request limits are taken: a body larger than the new limit is refused from then on.
        const small = { ...tightened, limits: { ...tightened.limits, maxBodyBytes: 2048, headersTimeoutSeconds: 5 } };
        write([{ principal: 'bob', sha256: sha(BOB) }], small);
        assert.match(
          await hup(6),
          /unchanged; request limits: body 2048 bytes, JSON 64 deep and 10000 members, headers within 5 s, body within 1 min \(idle 10 s\) \(was body 8 MiB, JSON 64 deep and 10000 members, headers within 30 s, body within 1 min \(idle 10 s\)\), for requests from now on$/,
        );
        assert.equal(await listTasksStatus(gw, BOB, 4096), 413);
        assert.equal(await statusWith(BOB), 200, 'a small request still goes through');
        // Another setting changed: said to wait for the next start.
        write([{ principal: 'bob', sha256: sha(BOB) }], { ...small, pushAllowPrivateHosts: ['127.0.0.1'] });
        assert.match(await hup(7), /unchanged\. Other settings changed in the file take effect at the next start$/);
      } finally {
        assert.equal(await gw.stop(), 0);
      }
    });
  },
);

describe(
  'baton-gateway program: remote agents read again on SIGHUP',
  { skip: process.platform === 'win32' && 'no SIGHUP on Windows' },
  () => {
    it('serves an agent added to the file, retires one removed, and keeps gateway.json and the index up to date', async () => {
      using dir = tempDir();
      const remote = await startRemote(2, 'remote-token-0123456789', false);
      const config = join(dir.path, 'gateway.json');
      const write = (agents: Record<string, unknown>): void =>
        writeFileSync(config, JSON.stringify({ localAgents: ['formatter'], agents }));
      const state = join(dir.path, 'state');
      write({});
      const gw = await launch(['--config', config, '--state', state]);
      const lines = (): string[] =>
        gw
          .stderr()
          .split('\n')
          .filter((l) => l.includes('SIGHUP:'));
      const hup = async (nth: number): Promise<string> => {
        gw.signal('SIGHUP');
        return waitUntil(() => lines()[nth - 1], 'the reload line');
      };
      const infoAgents = (): unknown =>
        (JSON.parse(readFileSync(join(state, 'gateway.json'), 'utf8')) as { agents?: unknown }).agents;
      const indexed = async (): Promise<string[]> => {
        const card = (await (await fetch(`${String(gw.info.url)}/.well-known/agent-card.json`)).json()) as {
          skills?: Array<{ id?: string }>;
        };
        return (card.skills ?? []).map((k) => k.id ?? '');
      };
      const local = (): string => readFileSync(String(gw.info.tokenFile), 'utf8').trim();
      /** A first message to `agent` (JSON-RPC SendMessage), answered as JSON. */
      const send = async (
        agent: string,
      ): Promise<{ result?: { task?: { status?: { state?: string } } }; error?: { message?: string } }> => {
        const res = await fetch(`${String(gw.info.url)}/a2a/${agent}`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', Authorization: `Bearer ${local()}` },
          body: JSON.stringify({
            jsonrpc: '2.0',
            id: 1,
            method: 'SendMessage',
            params: { message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'go' }] } },
          }),
        });
        return (await res.json()) as {
          result?: { task?: { status?: { state?: string } } };
          error?: { message?: string };
        };
      };
      try {
        assert.deepEqual(infoAgents(), ['formatter']);
        write({ helper: { url: remote.url, auth: { bearer: 'remote-token-0123456789' } } });
        assert.match(await hup(1), /: 0 accepted; unchanged; agents added: helper$/);
        assert.deepEqual(infoAgents(), ['formatter', 'helper']);
        assert.deepEqual(await indexed(), ['formatter', 'helper']);
        assert.equal((await send('helper')).result?.task?.status?.state, 'TASK_STATE_COMPLETED');
        // Removed from the file: no new tasks, said in the line, gone from gateway.json and the index.
        write({});
        assert.match(
          await hup(2),
          /agents removed: helper \(no new tasks; the tasks they have go on and can be read\)$/,
        );
        assert.deepEqual(infoAgents(), ['formatter']);
        assert.deepEqual(await indexed(), ['formatter']);
        assert.match((await send('helper')).error?.message ?? '', /was removed from this gateway's configuration/);
        // Back with another URL: that waits for the next start, and the line says so.
        write({ helper: { url: `${remote.url}/other`, auth: { bearer: 'remote-token-0123456789' } } });
        assert.match(await hup(3), /other settings of helper changed and take effect at the next start/);
        assert.deepEqual(infoAgents(), ['formatter']);
      } finally {
        assert.equal(await gw.stop(), 0);
        await remote.close();
      }
    });

    it('without a config file a hangup stops it cleanly, as SIGTERM does; its signals are handled before it says it is up', async () => {
      using dir = tempDir();
      const state = join(dir.path, 'state');
      // The signal goes as soon as the info line is read: a supervisor may do just that.
      const gw = await launch(['--state', state, '--no-local-agents']);
      gw.signal('SIGHUP');
      assert.equal(await gw.exited(), 0, gw.stderr());
      assert.equal(existsSync(join(state, 'gateway.json')), false, 'gateway.json is removed by the clean stop');
    });
  },
);

/** `check`'s first answer that is not undefined (polled every 20 ms); rejects after 15 s saying what it waited for. */
describe('baton-gateway program: --watch-config', () => {
  const BOB = 'bob-token-0123456789abcdef';
  const sha = (t: string): string => createHash('sha256').update(t).digest('hex');

  it('reads the file again when it changes, without a signal; the same text again changes nothing', async () => {
    using dir = tempDir();
    const config = join(dir.path, 'gateway.json');
    const write = (tokens: Array<{ principal: string; sha256: string }>): void =>
      writeFileSync(config, JSON.stringify({ localAgents: ['formatter'], tokens }));
    write([]);
    const gw = await launch(['--config', config, '--state', join(dir.path, 'state'), '--watch-config']);
    try {
      const status = (): Promise<number> => listTasksStatus(gw, BOB);
      assert.equal(await status(), 401);
      const lines = (): string[] =>
        gw
          .stderr()
          .split('\n')
          .filter((l) => l.includes('config file changed:'));
      write([{ principal: 'bob', sha256: sha(BOB) }]);
      const line = await waitUntil(() => lines()[0], 'the line for the changed file');
      assert.match(line, /config file changed: tokens read again from .*gateway\.json: 1 accepted; new for bob$/);
      assert.equal(await status(), 200);
      // Written again as it was: read, found the same, and not taken again.
      write([{ principal: 'bob', sha256: sha(BOB) }]);
      await new Promise((r) => setTimeout(r, 2500));
      assert.equal(lines().length, 1, gw.stderr());
    } finally {
      assert.equal(await gw.stop(), 0);
    }
  });

  it('without --config it says what it needs', () => {
    const r = spawnSync(process.execPath, ['--import', 'tsx', CLI, '--watch-config'], { encoding: 'utf8' });
    assert.equal(r.status, 2);
    assert.match(r.stderr, /--watch-config needs --config FILE/);
  });
});

/** The HTTP status of an A2A call (ListTasks) to the formatter with `token`, its params padded by `pad` characters. */
async function listTasksStatus(gw: Launched, token: string, pad = 0): Promise<number> {
  const res = await fetch(`${String(gw.info.url)}/a2a/formatter`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', Authorization: `Bearer ${token}` },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ListTasks', params: pad ? { pad: 'x'.repeat(pad) } : {} }),
  });
  await res.arrayBuffer();
  return res.status;
}

async function waitUntil<T>(check: () => T | undefined, what: string): Promise<T> {
  const end = Date.now() + 15_000;
  for (;;) {
    const v = check();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
