// An outcome the gateway records itself (it lost the remote agent mid-task) reaches `baton` signed like
// any other result: the CLI says the outcome is unknown (exit 14) with a verified signature, while the
// same result with its signature stripped on the way still fails as tampering (exit 16).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough, Readable } from 'node:stream';
import type { ReadableStream as WebStream } from 'node:stream/web';
import { batonMain, EXIT, EXIT_UNVERIFIED } from '../../../src/gateway/batonCli';
import { startGateway } from '../../../src/gateway/server';
import type { RunningGateway } from '../../../src/gateway/server';
import { DelegationJournal } from '../../../src/core/delegation';
import { normalizeCard } from '../../../src/node/a2a/clientFactory';
import { JournalStore } from '../../../src/node/journalStore';
import { checkResult, finalTaskOf, resultKeys, signedResultsOf } from '../../../src/node/resultCheck';
import { tempDir } from './helpers';
import { startRemote } from './remoteAgent';

function capture(): { stream: PassThrough; text: () => string } {
  const stream = new PassThrough();
  let buf = '';
  stream.on('data', (d: Buffer) => (buf += d.toString()));
  return { stream, text: () => buf };
}

/** Drops every `baton/resultEnvelope` from a JSON value. */
function stripEnvelopes(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(stripEnvelopes);
  if (v === null || typeof v !== 'object') return v;
  return Object.fromEntries(
    Object.entries(v as Record<string, unknown>)
      .filter(([k]) => k !== 'baton/resultEnvelope')
      .map(([k, x]) => [k, stripEnvelopes(x)]),
  );
}

/**
 * Someone on the way between the CLI and the gateway: passes everything on, and removes the signed
 * envelope from every answer about a task in `strip` (GetTask, a finished task's stream), as an
 * attacker hiding a signature would.
 */
async function startMiddle(): Promise<{
  url: string;
  target: string;
  readonly strip: Set<string>;
  close(): Promise<void>;
}> {
  const state = { url: '', target: '', strip: new Set<string>(), close: () => Promise.resolve() };
  const server: Server = createServer((req, res) => {
    void (async () => {
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      const body = Buffer.concat(chunks);
      const headers = new Headers();
      for (const [k, v] of Object.entries(req.headers))
        if (typeof v === 'string' && k !== 'host' && k !== 'content-length') headers.set(k, v);
      const upstream = await fetch(`${state.target}${req.url ?? '/'}`, {
        method: req.method,
        headers,
        ...(chunks.length ? { body } : {}),
      });
      const type = upstream.headers.get('content-type') ?? '';
      const out: Record<string, string> = {};
      upstream.headers.forEach((v, k) => {
        if (k !== 'content-length' && k !== 'content-encoding' && k !== 'transfer-encoding') out[k] = v;
      });
      res.writeHead(upstream.status, out);
      const asked = /"id":"([0-9a-f-]{36})"/.exec(body.toString())?.[1];
      const strip = asked !== undefined && state.strip.has(asked);
      if (strip && type.includes('application/json')) {
        res.end(JSON.stringify(stripEnvelopes(await upstream.json())));
        return;
      }
      if (strip && type.includes('text/event-stream')) {
        // A finished task's stream ends by itself: taken whole, each event stripped.
        const events = (await upstream.text()).replace(/^data: (.*)$/gm, (_, data: string) => {
          return `data: ${JSON.stringify(stripEnvelopes(JSON.parse(data)))}`;
        });
        res.end(events);
        return;
      }
      if (!upstream.body) return void res.end();
      Readable.fromWeb(upstream.body as WebStream).pipe(res);
    })().catch(() => res.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  state.close = () =>
    new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    });
  return state;
}

describe('baton command line: an unknown outcome the gateway records itself is signed', () => {
  const state = tempDir();
  const journals = tempDir('baton-cli-journals-');
  let gw: RunningGateway;
  let remote: Awaited<ReturnType<typeof startRemote>>;
  let middle: Awaited<ReturnType<typeof startMiddle>>;
  let env: NodeJS.ProcessEnv;
  before(async () => {
    remote = await startRemote(0, 'remote-token-for-the-unknown-test', false);
    middle = await startMiddle();
    gw = await startGateway({
      stateDir: state.path,
      // The cards name the way through the middle, so every call of the CLI goes through it.
      publicUrl: middle.url,
      remoteAgents: [
        {
          id: 'remote',
          name: 'Remote',
          description: 'proxied',
          url: remote.url,
          protocolBinding: 'JSONRPC',
          protocolVersion: '1.0',
          auth: { kind: 'bearer', token: 'remote-token-for-the-unknown-test' },
          skills: [],
        },
      ],
      log: () => undefined,
    });
    middle.target = `http://127.0.0.1:${gw.port}`;
    env = {
      BATON_GATEWAY: middle.url,
      BATON_TOKEN: gw.token,
      BATON_CLI_DIR: journals.path,
      BATON_STATE_DIR: state.path,
    };
  });
  after(async () => {
    await gw.close();
    await middle.close();
    for (const d of [state, journals]) d[Symbol.dispose]();
  });

  /** The task id of a delegation, once its journal has one. */
  async function taskOf(requestId: string): Promise<string> {
    const until = Date.now() + 15_000;
    while (Date.now() < until) {
      // Not there yet until the delegation has written its first entries.
      const entries = await new JournalStore(journals.path)
        .load(requestId)
        .then((l) => l.entries)
        .catch(() => []);
      const taskId = entries.length ? DelegationJournal.fromEntries(entries).taskId : undefined;
      if (taskId) return taskId;
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error(`delegation ${requestId} has no task`);
  }

  async function started(out: { text: () => string }): Promise<{ requestId: string; taskId: string }> {
    const until = Date.now() + 15_000;
    while (!/as [0-9a-f-]{36}/.test(out.text()) && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    const requestId = /as ([0-9a-f-]{36})/.exec(out.text())?.[1] ?? '';
    assert.ok(requestId, out.text());
    return { requestId, taskId: await taskOf(requestId) };
  }

  it('the remote goes away mid-task: unknown (exit 14) with a verified signature; stripped of it on the way, INVALID (exit 16)', async () => {
    const honest = capture();
    const stripped = capture();
    const runs = [
      batonMain(['delegate', 'remote', 'wait'], honest.stream, env),
      batonMain(['delegate', 'remote', 'wait'], stripped.stream, env),
    ];
    const tasks = [await started(honest), await started(stripped)];
    middle.strip.add(tasks[1].taskId);
    // Both run at the remote; then it goes away for good.
    await remote.close();
    const [code, strippedCode] = await Promise.all(runs);
    for (const t of tasks) void remote.executor.cancelTask(t.taskId); // their loops end
    const text = honest.text();
    assert.equal(code, EXIT.unknown, text);
    assert.match(text, /^unknown: unknown outcome: lost contact with the remote agent remote/m);
    assert.match(text, /^signature: verified /m);
    assert.doesNotMatch(text, /INVALID/);

    // The extension's result check on the same delegation says the same: verified; stripped, tampering.
    const loaded = await new JournalStore(journals.path).load(tasks[0].requestId);
    const final = finalTaskOf(loaded.entries);
    assert.ok(final);
    const card = normalizeCard(
      await (
        await fetch(`${middle.url}/a2a/remote/.well-known/agent-card.json`, { headers: { 'A2A-Version': '1.0' } })
      ).json(),
    );
    const input = {
      journal: DelegationJournal.fromEntries(loaded.entries),
      keys: await resultKeys([], card),
      signaturesPromised: signedResultsOf(card).promised,
      signer: middle.url,
    };
    const check = await checkResult({ ...input, final });
    assert.equal(check.status, 'verified', check.detail);
    const { ['baton/resultEnvelope']: envelope, ...unsigned } = final.metadata ?? {};
    assert.equal(typeof envelope, 'string');
    const bare = await checkResult({ ...input, final: { ...final, metadata: unsigned } });
    assert.ok(bare.status === 'invalid' && bare.failure === 'unsigned', bare.detail);

    // The same kind of result, its signature removed on the way: tampering, as before.
    assert.equal(strippedCode, EXIT_UNVERIFIED, stripped.text());
    assert.match(stripped.text(), /^unknown: unknown outcome: lost contact/m);
    assert.match(stripped.text(), /^signature: INVALID — .*this result carries no signature/m);
  });
});
