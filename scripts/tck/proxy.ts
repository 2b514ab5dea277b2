/**
 * A passthrough in front of one A2A agent route (baton-gateway's `/a2a/<agent>`, or an agent at an
 * origin's root), so the A2A conformance kit (a2a-tck) can be run against it (scripts/tck.sh). It works
 * around three things the kit's client does that a server with one route per agent, or any 1.0 server,
 * cannot follow (docs/conformance.md, "Why a proxy"):
 *
 * 1. it reads the card at the ORIGIN's `/.well-known/agent-card.json` whatever path its URL has: that
 *    path (and the older `/.well-known/agent.json`) here answers the route's card,
 *    `<route>/.well-known/agent-card.json`;
 * 2. it sends no `A2A-Version`, which A2A §3.6.2 reads as 0.3, while it speaks 1.0: a request that names
 *    no version (neither the header nor the `A2A-Version` query parameter) gets `A2A-Version: 1.0`;
 * 3. its HTTP+JSON client builds `urljoin(interfaceUrl, "/message:send")`, which drops the interface
 *    URL's path: the binding's root paths (`/message:…`, `/tasks…`, `/extendedAgentCard`) get the
 *    route back in front.
 *
 * Everything else, bodies and answers (SSE streams too), passes through byte for byte. The server behind
 * it must put this proxy's URL in its card (baton-gateway's `--public-url`), so that the kit's requests
 * come back here.
 *
 *   node --import tsx scripts/tck/proxy.ts --upstream http://127.0.0.1:8787 --route /a2a/echo [--port 0]
 *
 * Prints one JSON line, `{"url": "http://127.0.0.1:<port>"}`, once it listens; stops on SIGINT/SIGTERM.
 */
import http from 'node:http';
import type { IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';

const CARD_PATH = /^\/\.well-known\/agent(-card)?\.json$/;
const REST_ROOT_PATH = /^\/(message:(send|stream)$|tasks($|[/:])|extendedAgentCard$)/;

/** The path and query a request for `url` (path and query, as the client sent it) goes to upstream. */
function upstreamPath(url: string, route: string): string {
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  const query = q < 0 ? '' : url.slice(q);
  if (CARD_PATH.test(path)) return `${route}/.well-known/agent-card.json${query}`;
  if (REST_ROOT_PATH.test(path)) return `${route}${url}`;
  return url;
}

/** The headers sent on: `Host` the upstream's, and `A2A-Version: 1.0` when the request names no version. */
function upstreamHeaders(url: string, headers: IncomingHttpHeaders, host: string): IncomingHttpHeaders {
  const out: IncomingHttpHeaders = { ...headers, host };
  const q = url.indexOf('?');
  const namesVersion = q >= 0 && new URLSearchParams(url.slice(q)).has('A2A-Version');
  if (out['a2a-version'] === undefined && !namesVersion) out['a2a-version'] = '1.0';
  return out;
}

function main(): void {
  const { values } = parseArgs({
    options: {
      upstream: { type: 'string' },
      route: { type: 'string', default: '' },
      port: { type: 'string', default: '0' },
    },
  });
  if (!values.upstream) throw new Error('usage: proxy.ts --upstream <origin> [--route /a2a/<agent>] [--port N]');
  const upstream = new URL(values.upstream);
  const route = values.route.replace(/\/+$/, '');
  if (route && !route.startsWith('/')) throw new Error(`--route must start with /: ${route}`);
  const server = http.createServer((req, res) => {
    const url = req.url ?? '/';
    const forward = http.request(
      {
        host: upstream.hostname,
        port: upstream.port,
        method: req.method,
        path: upstreamPath(url, route),
        headers: upstreamHeaders(url, req.headers, upstream.host),
        // A connection of its own for each request: a pooled one that the server is closing as it is
        // reused ends the request with "socket hang up", which the kit would count against the server.
        agent: false,
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.rawHeaders);
        answer.pipe(res);
      },
    );
    forward.on('error', (e) => {
      if (res.headersSent) return void res.destroy();
      res.writeHead(502, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: `proxy: ${upstream.origin} did not answer: ${e.message}` }));
    });
    req.pipe(forward);
    res.on('close', () => forward.destroy());
  });
  server.listen(Number(values.port), '127.0.0.1', () => {
    console.log(JSON.stringify({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }));
  });
  const stop = () => {
    server.closeAllConnections();
    server.close(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main();
