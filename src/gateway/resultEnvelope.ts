/**
 * The signed result envelope every terminal task carries (metadata `baton/resultEnvelope`), built from
 * exactly what a client will see (wire JSON of the request message, the folded artifacts GetTask
 * returns, the terminal status), so `verifyResultEnvelope` in src/node/signing.ts can check it.
 */
import { Artifact, SendMessageRequest, TaskStatus } from '@a2a-js/sdk';
import type { Task } from '@a2a-js/sdk';
import { createHash } from 'node:crypto';
import { canonicalize } from '../core/jcs';
import { requestDigest, resultDigest } from '../node/signing';
import type { ResultEnvelope } from '../node/signing';

/**
 * `artifactDigest` of src/node/signing.ts (`sha256:` of the RFC 8785 form of {artifactId, name, parts}),
 * hashed with node:crypto: core's pure SHA-256 takes ~40 ms for a 1 MiB patch on the gateway's event
 * loop. The unit tests check both give the same digest.
 */
export function fastArtifactDigest(a: { artifactId: string; name?: string; parts: readonly unknown[] }): string {
  return `sha256:${createHash('sha256')
    .update(canonicalize({ artifactId: a.artifactId, name: a.name ?? '', parts: a.parts }), 'utf8')
    .digest('hex')}`;
}

export type EnvelopeBody = Omit<ResultEnvelope, 'issuedAt'>;

/** The digest the caller can recompute from what it sent (`SendMessageRequest.toJSON`, tenant left out). */
export function sentRequestDigest(params: SendMessageRequest): string {
  return requestDigest(SendMessageRequest.toJSON(params) as Record<string, unknown>);
}

export function envelopeBody(
  task: Task,
  status: TaskStatus,
  requestDigestValue: string | null,
  executor: Readonly<Record<string, unknown>>,
  capabilities: Readonly<Record<string, boolean>> | null,
): EnvelopeBody {
  const statusWire = TaskStatus.toJSON(status) as Record<string, unknown>;
  return {
    taskId: task.id,
    contextId: task.contextId,
    state: String(statusWire.state),
    requestDigest: requestDigestValue,
    artifacts: task.artifacts.map((a) => {
      const wire = Artifact.toJSON(a) as { artifactId: string; name?: string; parts?: unknown[] };
      return {
        artifactId: a.artifactId,
        name: a.name,
        digest: fastArtifactDigest({ artifactId: wire.artifactId, name: wire.name ?? '', parts: wire.parts ?? [] }),
      };
    }),
    resultDigest: resultDigest(statusWire),
    executor,
    capabilities,
  };
}
