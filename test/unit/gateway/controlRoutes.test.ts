/**
 * The gateway's own controls (/baton/*): only its local token may use them; the folders it serves
 * change at run time and feed the same repository check as --root; a shutdown request is answered
 * before the gateway stops.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, realpathSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { TaskState } from '@a2a-js/sdk';
import { META } from '../../../src/core/batonProfile';
import { sha256HexOf } from '../../../src/gateway/config';
import { notReadyAfterMs, readiness } from '../../../src/gateway/readiness';
import type { Readiness } from '../../../src/gateway/readiness';
import { startGateway } from '../../../src/gateway/server';
import type { RunningGateway } from '../../../src/gateway/server';
import { bounded, clientFor, scriptedAgent, sendRequest, suiteGateway, tempDir, userMessage } from './helpers';
import { makeRepo } from '../workspace/repoFixtures';

const TEAM_TOKEN = 't'.repeat(40);

function call(gw: RunningGateway, method: string, path: string, token?: string, body?: unknown): Promise<Response> {
  return fetch(new URL(path, gw.url), {
    method,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

async function delegate(gw: RunningGateway, repo: string): Promise<TaskState | 'refused'> {
  const client = await clientFor(`${gw.url}/a2a/echo/.well-known/agent-card.json`, gw.token);
  try {
    const r = await client.sendMessage(sendRequest(userMessage('go', { [META.repository]: repo })));
    return 'status' in r ? (r.status?.state ?? 'refused') : 'refused';
  } catch {
    return 'refused';
  }
}

describe('gateway controls: who may use them', () => {
  const gw = suiteGateway({ tokens: [{ principal: 'team', sha256: sha256HexOf(TEAM_TOKEN) }] });

  it('no token is 401, a team token 403, the local token gets the instance', async () => {
    assert.equal((await call(gw, 'GET', '/baton/instance')).status, 401);
    const team = await call(gw, 'GET', '/baton/instance', TEAM_TOKEN);
    assert.equal(team.status, 403);
    assert.match(((await team.json()) as { error: { message: string } }).error.message, /local gateway's own token/);
    assert.equal((await call(gw, 'POST', '/baton/shutdown', TEAM_TOKEN)).status, 403);
    assert.equal((await call(gw, 'POST', '/baton/roots', TEAM_TOKEN, { add: ['/'] })).status, 403);
    const res = await call(gw, 'GET', '/baton/instance', gw.token);
    assert.equal(res.status, 200);
    const body = (await res.json()) as { instanceId: string; pid: number; version: string; roots: string[] };
    assert.equal(body.instanceId, gw.instanceId);
    assert.equal(body.pid, process.pid);
    assert.match(body.version, /^\d+\.\d+\.\d+/);
    assert.deepEqual(body.roots, []);
  });
});

describe('gateway readiness (GET /baton/ready)', () => {
  const gw = suiteGateway({ tokens: [{ principal: 'team', sha256: sha256HexOf(TEAM_TOKEN) }] });

  it('answers without a token, uncached: ready while its store takes heartbeats', async () => {
    const res = await call(gw, 'GET', '/baton/ready');
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('cache-control'), 'no-store');
    assert.deepEqual(await res.json(), { ready: true });
    assert.equal((await call(gw, 'HEAD', '/baton/ready')).status, 200);
    // Only this route: the rest of /baton still wants the local token.
    assert.equal((await call(gw, 'GET', '/baton/instance')).status, 401);
  });

  it('not ready once two heartbeats and a second have passed without one stored, or while stopping', () => {
    const at = (age: number, stopping = false): Readiness =>
      readiness({ stopping, lastBeatAt: 1_000_000, heartbeatMs: 5_000, now: 1_000_000 + age });
    assert.equal(notReadyAfterMs(5_000), 11_000);
    assert.deepEqual(at(0), { ready: true });
    assert.deepEqual(at(11_000), { ready: true });
    assert.deepEqual(at(11_001), { ready: false, reason: 'its task store has not answered for 11 s' });
    assert.deepEqual(at(0, true), { ready: false, reason: 'the gateway is stopping' });
  });
});

describe('gateway controls: the folders it serves', () => {
  const gw = suiteGateway({ localAgents: [scriptedAgent()] });

  it('a folder added at run time is served (symlinks resolved), counted per request, and refused once let go of', async () => {
    using dir = tempDir();
    const real = join(dir.path, 'real');
    mkdirSync(real);
    const repo = makeRepo(real, 'repo', { 'a.txt': 'a\n' });
    const linked = join(dir.path, 'linked');
    symlinkSync(real, linked);
    assert.equal(await delegate(gw, repo), 'refused', 'not served yet');

    const missing = await call(gw, 'POST', '/baton/roots', gw.token, { add: [join(dir.path, 'missing')] });
    assert.equal(missing.status, 400);
    assert.match(((await missing.json()) as { error: { message: string } }).error.message, /does not exist/);
    assert.equal((await call(gw, 'POST', '/baton/roots', gw.token, { add: ['relative/path'] })).status, 400);

    for (let i = 0; i < 2; i++) {
      const added = await call(gw, 'POST', '/baton/roots', gw.token, { add: [linked] });
      assert.deepEqual(((await added.json()) as { roots: string[] }).roots, [realpathSync(real)]);
    }
    assert.equal(await bounded(delegate(gw, join(linked, 'repo')), 'a delegation'), TaskState.TASK_STATE_COMPLETED);
    await call(gw, 'POST', '/baton/roots', gw.token, { remove: [linked] });
    assert.equal(await delegate(gw, repo), TaskState.TASK_STATE_COMPLETED, 'asked for twice, let go of once');
    const removed = await call(gw, 'POST', '/baton/roots', gw.token, { remove: [real] });
    assert.deepEqual(((await removed.json()) as { roots: string[] }).roots, []);
    assert.equal(await delegate(gw, repo), 'refused');
  });
});

describe('gateway controls: shutdown', () => {
  it('answers 202, then calls the program’s stop; by default it closes the gateway', async () => {
    using dir = tempDir();
    const asked: string[] = [];
    const gw = await startGateway({
      stateDir: join(dir.path, 'a'),
      log: () => undefined,
      onShutdownRequest: (why) => asked.push(why),
    });
    try {
      assert.equal((await call(gw, 'POST', '/baton/shutdown', gw.token)).status, 202);
      for (let i = 0; i < 50 && asked.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
      assert.deepEqual(asked, ['asked to shut down']);
    } finally {
      await gw.close();
    }

    const plain = await startGateway({ stateDir: join(dir.path, 'b'), log: () => undefined });
    assert.equal((await call(plain, 'POST', '/baton/shutdown', plain.token)).status, 202);
    let gone = false;
    for (let i = 0; i < 100 && !gone; i++) {
      gone = await call(plain, 'GET', '/baton/instance', plain.token).then(
        () => false,
        () => true,
      );
      if (!gone) await new Promise((r) => setTimeout(r, 50));
    }
    assert.ok(gone, 'the gateway closed');
    await plain.close();
  });
});
