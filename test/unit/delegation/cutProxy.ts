/**
 * A TCP proxy on loopback that forwards to an agent server and cuts chosen streaming responses at a
 * chosen byte: the response is forwarded up to that point and both sockets are destroyed, as a
 * network failure would; or, in `stall` mode, nothing more is forwarded and both sockets stay open, as
 * a half-open connection behaves (after a laptop sleeps or the network changes). Each delegation (its
 * first message's `messageId`) is cut at most once.
 */
import type { AddressInfo, Socket } from 'node:net';
import { connect, createServer } from 'node:net';

/** Given the response text so far (headers included), where to cut it, or undefined to keep going. */
export type CutPoint = (response: string) => number | undefined;

function nth(hay: string, needle: string, n: number): number {
  let i = -1;
  for (let k = 0; k < n; k++) {
    i = hay.indexOf(needle, i + 1);
    if (i < 0) return -1;
  }
  return i;
}

export const CUT_POINTS: Record<'beforeFirstEvent' | 'midEvent' | 'midArtifact' | 'atFinalEvent', CutPoint> = {
  // Headers sent, no event yet.
  beforeFirstEvent: (r) => {
    const i = r.indexOf('\r\n\r\n');
    return i < 0 ? undefined : i + 4;
  },
  // Inside the third event's JSON.
  midEvent: (r) => {
    const i = nth(r, 'data:', 3);
    return i < 0 ? undefined : i + 20;
  },
  // Inside the second chunk of an artifact sent in appended chunks.
  midArtifact: (r) => {
    const i = nth(r, '"artifactUpdate"', 2);
    return i < 0 ? undefined : i + 10;
  },
  // Inside the final status event.
  atFinalEvent: (r) => {
    const i = r.indexOf('TASK_STATE_COMPLETED');
    return i < 0 ? undefined : i - 5;
  },
};

export interface CutProxy {
  readonly port: number;
  /** How many responses were cut. */
  readonly cuts: number;
  setCutPoint(cut: CutPoint | undefined): void;
  /** `cut` (default): reset both sockets at the cut point; `stall`: stop forwarding, keep them open. */
  setMode(mode: 'cut' | 'stall'): void;
  close(): Promise<void>;
}

/**
 * Requests whose body names `marker` and `messageIdPattern` are candidates for cutting (once per id).
 * `listenPort` is where the proxy listens (a free one by default; a card may have to name it first).
 */
export async function startCutProxy(
  targetPort: number,
  marker = 'SendStreamingMessage',
  listenPort = 0,
): Promise<CutProxy> {
  let cutPoint: CutPoint | undefined;
  let mode: 'cut' | 'stall' = 'cut';
  let cuts = 0;
  const cutIds = new Set<string>();
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    sockets.add(client);
    const upstream = connect(targetPort, '127.0.0.1');
    sockets.add(upstream);
    let request = '';
    let response = '';
    let forwarded = 0;
    let candidate: string | undefined;
    let dead = false;
    const kill = (): void => {
      if (dead) return;
      dead = true;
      client.destroy();
      upstream.destroy();
    };
    client.on('data', (buf) => {
      const s = buf.toString('latin1');
      if (/^(GET|POST|PUT|DELETE|HEAD|OPTIONS|PATCH) /.test(s)) {
        // A new request on this connection: the next response belongs to it.
        request = '';
        response = '';
        forwarded = 0;
        candidate = undefined;
      }
      request += s;
      upstream.write(buf);
    });
    upstream.on('data', (buf) => {
      if (dead) return;
      if (candidate === undefined && cutPoint && request.includes(marker)) {
        const id = /"messageId":"([^"]+)"/.exec(request)?.[1];
        candidate = id && !cutIds.has(id) ? id : '';
      }
      if (!candidate || !cutPoint) {
        client.write(buf);
        return;
      }
      response += buf.toString('latin1');
      const at = cutPoint(response);
      if (at === undefined) {
        client.write(buf);
        forwarded = response.length;
        return;
      }
      const cutAt = Math.max(at, forwarded);
      if (cutAt > forwarded) client.write(Buffer.from(response.slice(forwarded, cutAt), 'latin1'));
      cutIds.add(candidate);
      cuts++;
      // Let the partial bytes leave before the reset.
      dead = true;
      if (mode === 'stall') return; // swallow the rest; the sockets stay open until a side closes
      setImmediate(() => {
        client.destroy();
        upstream.destroy();
      });
    });
    client.on('close', kill);
    upstream.on('close', kill);
    client.on('error', kill);
    upstream.on('error', kill);
    client.on('close', () => sockets.delete(client));
    upstream.on('close', () => sockets.delete(upstream));
  });
  await new Promise<void>((r) => server.listen(listenPort, '127.0.0.1', () => r()));
  return {
    port: (server.address() as AddressInfo).port,
    get cuts() {
      return cuts;
    },
    setCutPoint: (c) => (cutPoint = c),
    setMode: (m) => (mode = m),
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
