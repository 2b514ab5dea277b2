/**
 * Gemini CLI's A2A server (`@google/gemini-cli-a2a-server`, installed by test/peers/setup.sh) run as a
 * real peer, with a stand-in for the Gemini API: a prompt containing `edit <file>` makes the model ask
 * for a `replace` tool call on that file (x = 1 → x = 2); once the tool's result comes back, or for any
 * other prompt, the model answers with text (`answer: <prompt>`).
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import * as net from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const BUNDLE = 'node_modules/@google/gemini-cli-a2a-server/dist/a2a-server.mjs';

/** The installed server's bundle, or undefined when it is not installed (the tests are skipped then). */
export function geminiServerPath(): string | undefined {
  const roots = [
    join(process.env.BATON_TEST_ENV ?? resolve(__dirname, '../../../.vscode-test'), 'peers/gemini-cli'),
    '/tmp/gem',
  ];
  for (const r of roots) if (existsSync(join(r, BUNDLE))) return join(r, BUNDLE);
  return undefined;
}

export interface GeminiPeer {
  /** The card URL as the gateway is configured with it (127.0.0.1; the card itself says localhost). */
  readonly cardUrl: string;
  /**
   * The JSON-RPC endpoint (127.0.0.1), through a byte-for-byte TCP relay that records what arrives: one
   * relayed connection per client connection, so a client closing its socket closes the server's too.
   */
  readonly url: string;
  /** Every request the server got through `url`, as raw HTTP text. */
  readonly received: () => string;
  /** The git repository the server works in. */
  readonly workspace: string;
  /** The last user text of each request the model got, and whether it carried a tool's result. */
  readonly modelCalls: Array<{ readonly text: string; readonly toolResult: boolean }>;
  log(): string;
  close(): Promise<void>;
}

type Json = Record<string, unknown>;

function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => res(port));
    });
    s.on('error', rej);
  });
}

function startModel(calls: GeminiPeer['modelCalls'], workspace: string): Promise<Server> {
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      const url = req.url ?? '';
      if (url.includes(':countTokens')) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ totalTokens: 10 }));
        return;
      }
      const j = (body ? JSON.parse(body) : {}) as { contents?: Array<{ parts?: Json[] }> };
      const contents = j.contents ?? [];
      const last = contents[contents.length - 1];
      const toolResult = (last?.parts ?? []).some((p) => p.functionResponse !== undefined);
      const userText = [...contents]
        .reverse()
        .flatMap((c) => c.parts ?? [])
        .map((p) => p.text)
        .find((t): t is string => typeof t === 'string');
      const text = toolResult ? '' : (userText ?? '');
      calls.push({ text, toolResult });
      const edit = /edit (\S+)/.exec(text);
      const parts: Json[] = toolResult
        ? [{ text: 'I changed x to 2.' }]
        : edit
          ? [
              {
                functionCall: {
                  name: 'replace',
                  args: {
                    file_path: join(workspace, edit[1]),
                    instruction: 'bump x',
                    old_string: 'export const x = 1;',
                    new_string: 'export const x = 2;',
                  },
                },
              },
            ]
          : [{ text: `answer: ${text}` }];
      const reply = {
        candidates: [{ content: { role: 'model', parts }, finishReason: 'STOP', index: 0 }],
        usageMetadata: { promptTokenCount: 5, candidatesTokenCount: 5, totalTokenCount: 10 },
      };
      if (url.includes('alt=sse')) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.end(`data: ${JSON.stringify(reply)}\n\n`);
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(reply));
    });
  });
  return new Promise((r) => server.listen(0, '127.0.0.1', () => r(server)));
}

/** Starts the server in a fresh git repository holding `a.ts` (`export const x = 1;`); ready when its card answers. */
export async function startGeminiPeer(bundle: string): Promise<GeminiPeer> {
  const root = mkdtempSync(join(tmpdir(), 'baton-gemini-'));
  const workspace = join(root, 'ws');
  const home = join(root, 'home');
  mkdirSync(workspace);
  mkdirSync(home);
  writeFileSync(join(workspace, 'a.ts'), 'export const x = 1;\n');
  const git = (...args: string[]): void => {
    execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', ...args], { cwd: workspace, stdio: 'ignore' });
  };
  git('init', '-q');
  git('add', '.');
  git('commit', '-q', '-m', 'init');
  const modelCalls: GeminiPeer['modelCalls'] = [];
  const model = await startModel(modelCalls, workspace);
  const port = await freePort();
  let out = '';
  const child: ChildProcess = spawn(process.execPath, [bundle], {
    cwd: workspace,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: home,
      GIT_AUTHOR_NAME: 't',
      GIT_AUTHOR_EMAIL: 't@t',
      GIT_COMMITTER_NAME: 't',
      GIT_COMMITTER_EMAIL: 't@t',
      CODER_AGENT_PORT: String(port),
      CODER_AGENT_WORKSPACE_PATH: workspace,
      GEMINI_API_KEY: 'dummy',
      GOOGLE_GEMINI_BASE_URL: `http://127.0.0.1:${(model.address() as AddressInfo).port}`,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.on('data', (c: Buffer) => (out += c.toString('utf8')));
  child.stderr?.on('data', (c: Buffer) => (out += c.toString('utf8')));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  let received = '';
  const relay = net.createServer((c) => {
    const up = net.connect(port, '127.0.0.1');
    c.on('data', (d: Buffer) => (received += d.toString('utf8')));
    c.pipe(up);
    up.pipe(c);
    c.on('error', () => up.destroy());
    up.on('error', () => c.destroy());
  });
  await new Promise<void>((r) => relay.listen(0, '127.0.0.1', () => r()));
  const url = `http://127.0.0.1:${(relay.address() as AddressInfo).port}/`;
  const cardUrl = `${url}.well-known/agent-card.json`;
  const close = async (): Promise<void> => {
    child.kill('SIGTERM');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 3000))]);
    if (child.exitCode === null) child.kill('SIGKILL');
    await new Promise((r) => model.close(r));
    relay.close();
    model.closeAllConnections();
    rmSync(root, { recursive: true, force: true });
  };
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) {
      await close();
      throw new Error(`the Gemini CLI A2A server exited at start:\n${out.slice(-2000)}`);
    }
    try {
      const r = await fetch(cardUrl);
      if (r.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await close();
      throw new Error(`the Gemini CLI A2A server did not start within 60 s:\n${out.slice(-2000)}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return { cardUrl, url, workspace, modelCalls, received: () => received, log: () => out, close };
}

/** The HTTP requests in a recorded byte stream (keep-alive connections carry several, one after another). */
export function httpRequests(raw: string): Array<{ head: string; headers: Record<string, string>; body: string }> {
  const out: Array<{ head: string; headers: Record<string, string>; body: string }> = [];
  let at = 0;
  for (;;) {
    const start = raw.slice(at).search(/(POST|GET) \S+ HTTP\/1\.1\r\n/);
    if (start < 0) break;
    const from = at + start;
    const end = raw.indexOf('\r\n\r\n', from);
    if (end < 0) break;
    const lines = raw.slice(from, end).split('\r\n');
    const headers: Record<string, string> = {};
    for (const l of lines.slice(1)) {
      const i = l.indexOf(':');
      if (i > 0) headers[l.slice(0, i).toLowerCase()] = l.slice(i + 1).trim();
    }
    const length = Number(headers['content-length'] ?? 0);
    const body = Buffer.from(raw.slice(end + 4), 'utf8')
      .subarray(0, length)
      .toString('utf8');
    out.push({ head: lines[0], headers, body });
    at = end + 4 + body.length;
  }
  return out;
}
