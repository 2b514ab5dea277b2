/**
 * An HTTP answer that is no A2A answer, from what stands in front of an agent: a real nginx with a
 * small `client_max_body_size` in front of baton-gateway, and `baton delegate` sending more than it
 * takes. The SDK's client reported nginx's whole HTML page ("… 413 Request Entity Too Large. Response:
 * <html> <head><title>413 …"), which ended up in the delegation's outcome; it now says who answered and
 * what to do. Also the wording itself, on the pages real servers send.
 *
 * The end-to-end case needs nginx (Debian package nginx-light); skipped without it, except under CI.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { TaskState } from '@a2a-js/sdk';
import type { AgentExecutor, ExecutionEventBus, RequestContext } from '@a2a-js/sdk/server';
import { isCredentialRefusal, readableHttpError } from '../../../src/core/httpErrorText';
import { sha256HexOf } from '../../../src/gateway/config';
import { startGateway } from '../../../src/gateway/server';
import type { RunningGateway } from '../../../src/gateway/server';
import { tempDir } from './helpers';
import { remoteSdkAgent } from './pgFaultHelpers';
import { serveSdkAgent, statusEvent, taskEvent } from './sdkServer';

const CLI = resolve(__dirname, '../../../src/gateway/batonCli.ts');
const NGINX = ['/usr/sbin/nginx', '/usr/bin/nginx', '/usr/local/sbin/nginx'].find((p) => existsSync(p));
const skip = !NGINX && !process.env.CI ? 'needs nginx (Debian package nginx-light)' : false;

/** The page nginx 1.22 sends with a 413 (as the SDK's client quotes it). */
const NGINX_413 = `<html>
<head><title>413 Request Entity Too Large</title></head>
<body>
<center><h1>413 Request Entity Too Large</h1></center>
<hr><center>nginx/1.22.1</center>
</body>
</html>
`;
const APACHE_403 = `<!DOCTYPE HTML PUBLIC "-//IETF//DTD HTML 2.0//EN">
<html><head>
<title>403 Forbidden</title>
</head><body>
<h1>Forbidden</h1>
<p>You don't have permission to access this resource.</p>
<hr>
<address>Apache/2.4.57 (Debian) Server at agents.example Port 443</address>
</body></html>
`;

describe('readableHttpError: the SDK client’s report of an HTTP answer that is no A2A answer', () => {
  it('an HTML page becomes who answered and what to do', () => {
    assert.equal(
      readableHttpError(
        `HTTP error establishing stream for SendStreamingMessage: 413 Request Entity Too Large. Response: ${NGINX_413}`,
      ),
      'HTTP 413 Request Entity Too Large for SendStreamingMessage, answered by nginx/1.22.1 (a web server or proxy in front of the agent, not the agent): the request is larger than it accepts; send less (fewer or smaller files), or have its limit raised (nginx: client_max_body_size)',
    );
    const forbidden = readableHttpError(`HTTP error for SendMessage! Status: 403 Forbidden. Response: ${APACHE_403}`);
    assert.match(
      forbidden,
      /^HTTP 403 Forbidden for SendMessage, answered by Apache\/2\.4\.57 \(a web server or proxy/,
    );
    assert.match(forbidden, /saying “Forbidden”|: it wants a sign-in/);
    assert.doesNotMatch(forbidden, /<|DOCTYPE/);
    // A JSON error body (a gateway's 401) is said by its message, and is a credential refusal.
    const refused = readableHttpError(
      'HTTP error for GetTask! Status: 401 Unauthorized. Response: {"error":{"code":401,"status":"UNAUTHENTICATED","message":"missing or unknown bearer token"}}',
    );
    assert.equal(refused, 'HTTP 401 Unauthorized for GetTask: missing or unknown bearer token');
    assert.equal(isCredentialRefusal(refused), true);
    assert.equal(isCredentialRefusal('HTTP 404 Not Found for GetTask'), false);
    const unsigned = readableHttpError(
      'HTTP error for GetTask! Status: 404 Not Found. Response: <!doctype html><html><head><title>Page not found · Acme</title></head><body>…</body></html>',
    );
    assert.equal(
      unsigned,
      'HTTP 404 Not Found for GetTask, answered with a web page (from a web server or proxy in front of the agent, not the agent), saying “Page not found · Acme”: there is no A2A endpoint at this URL; check the agent’s URL (its card names it)',
    );
  });

  it('a plain body is kept on one line; anything else is left as it is', () => {
    assert.equal(
      readableHttpError('HTTP error for SendMessage! Status: 500 Internal Server Error. Response: boom\nat line 2'),
      'HTTP 500 Internal Server Error for SendMessage: boom at line 2',
    );
    assert.equal(readableHttpError('connect ECONNREFUSED 127.0.0.1:9'), 'connect ECONNREFUSED 127.0.0.1:9');
  });
});

function freePort(): Promise<number> {
  return new Promise((done) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as AddressInfo).port;
      srv.close(() => done(port));
    });
  });
}

class DoneExecutor implements AgentExecutor {
  execute(ctx: RequestContext, bus: ExecutionEventBus): Promise<void> {
    bus.publish(taskEvent(ctx, TaskState.TASK_STATE_WORKING));
    bus.publish(statusEvent(ctx.taskId, ctx.contextId, TaskState.TASK_STATE_COMPLETED));
    bus.finished();
    return Promise.resolve();
  }
  cancelTask(): Promise<void> {
    return Promise.resolve();
  }
}

describe('baton delegate through an nginx that refuses a large request (413)', () => {
  const dir = tempDir('baton-413-');
  const token = `team-${randomBytes(16).toString('hex')}`;
  let remote: { url: string; close(): Promise<void> } | undefined;
  let gateway: RunningGateway | undefined;
  let nginx: ChildProcess | undefined;
  let front = '';

  before(async () => {
    if (skip) return;
    remote = await serveSdkAgent(new DoneExecutor(), { liveCard: true });
    const port = await freePort();
    front = `http://127.0.0.1:${port}`;
    gateway = await startGateway({
      stateDir: join(dir.path, 'gateway'),
      publicUrl: front,
      tokens: [{ principal: 'team', sha256: sha256HexOf(token) }],
      localAgents: [],
      remoteAgents: [remoteSdkAgent(remote.url)],
      log: () => undefined,
    });
    const ng = join(dir.path, 'nginx');
    for (const t of ['body', 'proxy']) mkdirSync(join(ng, t), { recursive: true });
    const conf = join(ng, 'nginx.conf');
    writeFileSync(
      conf,
      [
        ...(process.getuid?.() === 0 ? ['user root;'] : []),
        'worker_processes 1;',
        `error_log ${join(ng, 'error.log')};`,
        'events {}',
        'http {',
        `  access_log off; client_body_temp_path ${join(ng, 'body')}; proxy_temp_path ${join(ng, 'proxy')};`,
        `  server { listen 127.0.0.1:${port}; client_max_body_size 2k;`,
        `    location / { proxy_pass http://127.0.0.1:${gateway.port}; } }`,
        '}',
        '',
      ].join('\n'),
    );
    nginx = spawn(
      NGINX ?? 'nginx',
      ['-p', ng, '-c', conf, '-e', join(ng, 'error.log'), '-g', `daemon off; pid ${join(ng, 'nginx.pid')};`],
      {
        stdio: 'ignore',
      },
    );
    const deadline = Date.now() + 20_000;
    for (;;) {
      const ok = await fetch(`${front}/a2a/remote/.well-known/agent-card.json`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) break;
      if (Date.now() > deadline)
        throw new Error(`nginx did not answer: ${readFileSync(join(ng, 'error.log'), 'utf8').slice(-500)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  });
  after(async () => {
    nginx?.kill('SIGTERM');
    await gateway?.close();
    await remote?.close();
    dir[Symbol.dispose]();
  });

  it('says nginx refused it as too large and what to do, not nginx’s page', { skip }, async () => {
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        CLI,
        'delegate',
        `${front}/a2a/remote/.well-known/agent-card.json`,
        `summarise this: ${'x'.repeat(4000)}`,
      ],
      {
        env: {
          ...process.env,
          BATON_TOKEN: token,
          BATON_PRIVATE_HOSTS: '127.0.0.1',
          BATON_CLI_DIR: join(dir.path, 'journals'),
          BATON_STATE_DIR: join(dir.path, 'state'),
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const code = await new Promise<number | null>((done) => child.on('exit', done));
    assert.equal(code, 10, out);
    assert.match(
      out,
      /failed: Could not reach the agent at http:\/\/127\.0\.0\.1:\d+\/a2a\/remote: HTTP 413 Request Entity Too Large for SendStreamingMessage, answered by nginx\/[\d.]+ \(a web server or proxy in front of the agent, not the agent\): the request is larger than it accepts; send less \(fewer or smaller files\), or have its limit raised \(nginx: client_max_body_size\)\. Nothing was sent\./,
    );
    assert.doesNotMatch(out, /<html>|<center>/);
  });
});
