/**
 * The signed result envelope every terminal task carries (metadata `baton/resultEnvelope`), built from
 * exactly what a client will see (wire JSON of the request message, the folded artifacts GetTask
 * returns, the terminal status), so `verifyResultEnvelope` in src/node/signing.ts can check it.
 */
import { Artifact, Message, TaskStatus } from '@a2a-js/sdk';
import type { Task } from '@a2a-js/sdk';
import { artifactDigest, requestDigest as messageDigest, resultDigest } from '../node/signing';
import type { ResultEnvelope } from '../node/signing';

export type EnvelopeBody = Omit<ResultEnvelope, 'v' | 'issuer' | 'issuedAt'>;

export function envelopeBody(
  task: Task,
  status: TaskStatus,
  request: Message | undefined,
  executor: ResultEnvelope['executor'],
  capabilities: Readonly<Record<string, boolean>>,
): EnvelopeBody {
  const statusWire = TaskStatus.toJSON(status) as Record<string, unknown>;
  return {
    taskId: task.id,
    contextId: task.contextId,
    state: String(statusWire.state),
    requestDigest: request ? messageDigest(Message.toJSON(request) as Record<string, unknown>) : '',
    artifacts: task.artifacts.map((a) => {
      const wire = Artifact.toJSON(a) as { artifactId: string; name?: string; parts?: unknown[] };
      return { artifactId: a.artifactId, name: a.name, digest: artifactDigest({ artifactId: wire.artifactId, name: wire.name ?? '', parts: wire.parts ?? [] }) };
    }),
    resultDigest: resultDigest(statusWire),
    executor,
    capabilities,
  };
}
