/**
 * Whether an instance should be sent new requests, for a balancer's or an orchestrator's readiness
 * check (`GET /baton/ready`, no token). The index card (`GET /.well-known/agent-card.json`) answers
 * as long as the process serves, which is what a liveness check wants; this answers 503 while the
 * instance could only refuse work: its store has not taken a heartbeat for two of them and a second
 * (every request would get 503 and Retry-After meanwhile), or it is stopping (its streams are being
 * ended; a client resumes them on another instance).
 */

export interface Readiness {
  readonly ready: boolean;
  /** Why not, in words an operator reading a probe's output understands. */
  readonly reason?: string;
}

export interface ReadinessInput {
  readonly stopping: boolean;
  /** When the store last took this instance's heartbeat (ms since the epoch). */
  readonly lastBeatAt: number;
  readonly heartbeatMs: number;
  readonly now: number;
}

/** How long after its last stored heartbeat an instance stops being ready: two missed beats and a second. */
export function notReadyAfterMs(heartbeatMs: number): number {
  return 2 * heartbeatMs + 1000;
}

export function readiness(o: ReadinessInput): Readiness {
  if (o.stopping) return { ready: false, reason: 'the gateway is stopping' };
  const age = o.now - o.lastBeatAt;
  if (age > notReadyAfterMs(o.heartbeatMs))
    return { ready: false, reason: `its task store has not answered for ${Math.round(age / 1000)} s` };
  return { ready: true };
}
