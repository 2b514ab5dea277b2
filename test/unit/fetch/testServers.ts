/**
 * Real servers for the fetch tests: a test CA and server certificate made with the openssl CLI at test
 * time, HTTPS/HTTP servers on 127.0.0.1 (port 0), a canary listener that counts connections, and a
 * CONNECT proxy. Everything binds 127.0.0.1 and is closed by the caller.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer as createHttpServer } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { connect, createServer as createNetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TestPki {
  readonly ca: string;
  readonly key: string;
  readonly cert: string;
}

/** A CA and a server certificate for localhost, agents.test, 127.0.0.1 and ::1 (valid one day). */
export function makeTestPki(): TestPki {
  const dir = mkdtempSync(join(tmpdir(), 'baton-pki-'));
  try {
    const run = (...args: string[]): void => {
      execFileSync('openssl', args, { cwd: dir, stdio: 'pipe', timeout: 30_000 });
    };
    run(
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-keyout',
      'ca.key',
      '-out',
      'ca.crt',
      '-days',
      '1',
      '-subj',
      '/CN=Baton Test CA',
    );
    run(
      'req',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-keyout',
      'server.key',
      '-out',
      'server.csr',
      '-subj',
      '/CN=localhost',
    );
    writeFileSync(
      join(dir, 'ext.cnf'),
      'subjectAltName=DNS:localhost,DNS:agents.test,IP:127.0.0.1,IP:::1\nbasicConstraints=CA:FALSE\n',
    );
    run(
      'x509',
      '-req',
      '-in',
      'server.csr',
      '-CA',
      'ca.crt',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-out',
      'server.crt',
      '-days',
      '1',
      '-extfile',
      'ext.cnf',
    );
    return {
      ca: readFileSync(join(dir, 'ca.crt'), 'utf8'),
      key: readFileSync(join(dir, 'server.key'), 'utf8'),
      cert: readFileSync(join(dir, 'server.crt'), 'utf8'),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export type Handler = (req: IncomingMessage, res: ServerResponse) => void;

export interface Running {
  readonly port: number;
  readonly requests: string[];
  close(): Promise<void>;
}

async function listen(server: Server, requests: string[]): Promise<Running> {
  const sockets = new Set<Socket>();
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  server.on('secureConnection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

export function startHttps(pki: TestPki, handler: Handler): Promise<Running> {
  const requests: string[] = [];
  const server = createHttpsServer({ key: pki.key, cert: pki.cert }, (req, res) => {
    requests.push(req.url ?? '');
    handler(req, res);
  });
  return listen(server, requests);
}

export function startHttp(handler: Handler): Promise<Running> {
  const requests: string[] = [];
  const server = createHttpServer((req, res) => {
    requests.push(req.url ?? '');
    handler(req, res);
  });
  return listen(server, requests);
}

export interface Canary {
  readonly port: number;
  connections(): number;
  close(): Promise<void>;
}

/** Accepts and closes every connection, counting them: a refused fetch must leave the count at zero. */
export async function startCanary(): Promise<Canary> {
  let count = 0;
  const server = createNetServer((s) => {
    count++;
    s.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    connections: () => count,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** A minimal HTTP CONNECT proxy that tunnels every request to 127.0.0.1 (whatever host is asked). */
export async function startConnectProxy(): Promise<Running & { tunnels: string[] }> {
  const tunnels: string[] = [];
  const server = createHttpServer((_req, res) => {
    res.writeHead(405).end();
  });
  server.on('connect', (req: IncomingMessage, client: Socket, head: Buffer) => {
    tunnels.push(req.url ?? '');
    const port = Number((req.url ?? '').split(':').pop());
    const upstream = connect(port, '127.0.0.1', () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
  });
  const running = await listen(server, []);
  return { ...running, tunnels };
}
