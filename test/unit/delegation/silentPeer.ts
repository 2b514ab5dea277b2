/**
 * Small A2A peers written with node:http for what a real server may do and the SDK's never does: answer
 * a stream with its headers and then nothing (`silent`), or answer chosen requests with a balancer's or
 * a gateway's "not now" (429/502/503/504 with Retry-After) before passing them to a real agent.
 */
import { createServer, request as httpRequest } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { AgentCard } from '@a2a-js/sdk';
import { normalizeCard } from '../../../src/node/a2a/clientFactory';
import type { PinnedEndpoint } from '../../../src/node/a2a/clientFactory';

export interface Peer {
  readonly port: number;
  readonly cardUrl: string;
  readonly card: AgentCard;
  readonly endpoint: PinnedEndpoint;
  /** The JSON-RPC methods (or HTTP+JSON paths) it was asked, in order. */
  readonly seen: string[];
  close(): Promise<void>;
}

function methodOf(req: IncomingMessage, body: string): string {
  try {
    const m = (JSON.parse(body) as { method?: unknown }).method;
    if (typeof m === 'string') return m;
  } catch {
    // Not JSON-RPC: the path says what it is.
  }
  return `${req.method ?? ''} ${req.url ?? ''}`;
}

async function listen(
  handle: (req: IncomingMessage, res: ServerResponse, body: string) => void,
  listenPort = 0,
): Promise<{ server: Server; port: number; close: () => Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => handle(req, res, body));
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((ok) => server.listen(listenPort, '127.0.0.1', ok));
  const port = (server.address() as AddressInfo).port;
  return {
    server,
    port,
    close: () =>
      new Promise<void>((ok) => {
        for (const s of sockets) s.destroy();
        server.close(() => ok());
      }),
  };
}

function cardJson(base: string, name: string): Record<string, unknown> {
  return {
    name,
    description: 'answers a stream with its headers, then nothing',
    version: '1',
    supportedInterfaces: [{ url: `${base}/rpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
    capabilities: { streaming: true, pushNotifications: false, extensions: [] },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [],
  };
}

/**
 * Answers `SendStreamingMessage` with 200 and SSE headers and then never sends an event; every other
 * method gets a JSON-RPC "task not found" (it knows no task).
 */
export async function startSilentPeer(): Promise<Peer> {
  const seen: string[] = [];
  let base = '';
  const l = await listen((req, res, body) => {
    if (req.url?.endsWith('agent-card.json')) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(cardJson(base, 'Silent agent')));
      return;
    }
    const method = methodOf(req, body);
    seen.push(method);
    if (method === 'SendStreamingMessage') {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      res.flushHeaders();
      return;
    }
    let id: unknown = null;
    try {
      id = (JSON.parse(body) as { id?: unknown }).id ?? null;
    } catch {
      // No id to echo.
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ jsonrpc: '2.0', id, error: { code: -32001, message: 'Task not found' } }));
  });
  base = `http://127.0.0.1:${l.port}`;
  return {
    port: l.port,
    cardUrl: `${base}/.well-known/agent-card.json`,
    card: normalizeCard(cardJson(base, 'Silent agent')),
    endpoint: { url: `${base}/rpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
    seen,
    close: l.close,
  };
}

export interface FlakyFront {
  readonly port: number;
  /** The requests it passed on (method, or HTTP+JSON method and path), in order. */
  readonly passed: string[];
  /** The requests it answered "not now", in order. */
  readonly refused: string[];
  /** Answer the next `times` requests whose method matches `method` with `status` (default 503). */
  fail(method: RegExp, times: number, status?: number): void;
  close(): Promise<void>;
}

/**
 * A front for an agent on `targetPort`, as a gateway whose store is down or a balancer with no instance
 * up answers: the chosen requests get `status` with `Retry-After: 1` and a JSON-RPC error body (the
 * gateway's words); the rest are passed on, streams included. `listenPort`: where it listens (a card
 * may have to name it before the agent starts).
 */
export async function startFlakyFront(targetPort: number, listenPort = 0): Promise<FlakyFront> {
  const passed: string[] = [];
  const refused: string[] = [];
  const rules: { method: RegExp; left: number; status: number }[] = [];
  const l = await listen((req, res, body) => {
    const method = methodOf(req, body);
    const rule = rules.find((r) => r.left > 0 && r.method.test(method));
    if (rule) {
      rule.left--;
      refused.push(method);
      let id: unknown = null;
      try {
        id = (JSON.parse(body) as { id?: unknown }).id ?? null;
      } catch {
        // No id to echo.
      }
      res.writeHead(rule.status, { 'content-type': 'application/json', 'retry-after': '1' });
      res.end(
        JSON.stringify({
          jsonrpc: '2.0',
          id,
          error: {
            code: -32603,
            message: "the gateway's task store is unavailable (test: paused); try again in a few seconds",
          },
        }),
      );
      return;
    }
    passed.push(method);
    const up = httpRequest(
      { host: '127.0.0.1', port: targetPort, path: req.url, method: req.method, headers: req.headers },
      (ur) => {
        res.writeHead(ur.statusCode ?? 502, ur.headers);
        ur.pipe(res);
      },
    );
    up.on('error', () => res.destroy());
    res.on('close', () => up.destroy());
    up.end(body);
  }, listenPort);
  return {
    port: l.port,
    passed,
    refused,
    fail: (method, times, status = 503) => void rules.push({ method, left: times, status }),
    close: l.close,
  };
}
