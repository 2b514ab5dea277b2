// `baton.privateHosts` entries may name one port (`host:port`): only that port is allowed.
import * as assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { safeFetch, SafeFetchError } from '../../../src/node/safeFetch';

describe('private hosts with a port', () => {
  let allowed: Server;
  let other: Server;
  let otherConnections = 0;
  const port = (s: Server) => (s.address() as AddressInfo).port;

  before(async () => {
    allowed = createServer((_q, r) => r.end('{"ok":true}'));
    other = createServer((_q, r) => r.end('{"ok":true}'));
    other.on('connection', () => otherConnections++);
    await Promise.all([
      new Promise<void>((ok) => allowed.listen(0, '127.0.0.1', ok)),
      new Promise<void>((ok) => other.listen(0, '127.0.0.1', ok)),
    ]);
  });
  after(() => {
    allowed.close();
    other.close();
  });

  it('allows http to exactly that host and port', async () => {
    const r = await safeFetch(`http://127.0.0.1:${port(allowed)}/x`, {
      allowPrivateHosts: [`127.0.0.1:${port(allowed)}`],
    });
    assert.equal(r.status, 200);
  });

  it('refuses the same host on another port, without connecting', async () => {
    await assert.rejects(
      safeFetch(`http://127.0.0.1:${port(other)}/x`, { allowPrivateHosts: [`127.0.0.1:${port(allowed)}`] }),
      (e: unknown) => e instanceof SafeFetchError && e.code === 'insecure-scheme',
    );
    assert.equal(otherConnections, 0);
  });

  it('a bare host name still allows every port of that host', async () => {
    const r = await safeFetch(`http://127.0.0.1:${port(other)}/x`, { allowPrivateHosts: ['127.0.0.1'] });
    assert.equal(r.status, 200);
  });
});
