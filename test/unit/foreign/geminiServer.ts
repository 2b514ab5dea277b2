/**
 * Gemini CLI's A2A server as a real peer (test/peers/geminiPeer.ts), reached through a byte-for-byte
 * TCP relay that records what arrives: one relayed connection per client connection, so a client that
 * closes its socket closes the server's too (the server ties a task's run to that socket).
 */
import * as net from 'node:net';
import type { AddressInfo } from 'node:net';
import { startGeminiPeer } from '../../peers/geminiPeer';
import type { GeminiPeer, GeminiPeerOptions } from '../../peers/geminiPeer';

export interface RecordedGeminiPeer {
  readonly peer: GeminiPeer;
  /** The server's root (JSON-RPC endpoint) through the relay, at 127.0.0.1, with its trailing slash. */
  readonly url: string;
  /** Every byte clients sent through the relay, as text. */
  readonly received: () => string;
  close(): Promise<void>;
}

export async function startRecordedGeminiPeer(options: GeminiPeerOptions = {}): Promise<RecordedGeminiPeer> {
  const peer = await startGeminiPeer(options);
  const upstream = new URL(peer.baseUrl);
  let received = '';
  const sockets = new Set<net.Socket>();
  const relay = net.createServer((c) => {
    const up = net.connect(Number(upstream.port), upstream.hostname);
    for (const s of [c, up]) {
      sockets.add(s);
      s.once('close', () => sockets.delete(s));
    }
    c.on('data', (d: Buffer) => (received += d.toString('utf8')));
    c.pipe(up);
    up.pipe(c);
    c.on('error', () => up.destroy());
    up.on('error', () => c.destroy());
  });
  await new Promise<void>((r) => relay.listen(0, '127.0.0.1', () => r()));
  return {
    peer,
    url: `http://127.0.0.1:${(relay.address() as AddressInfo).port}/`,
    received: () => received,
    close: async () => {
      relay.close();
      for (const s of sockets) s.destroy();
      await peer.stop();
    },
  };
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
