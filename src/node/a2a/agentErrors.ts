/** Telling an error the agent itself sent from one the SDK raised on its own. */
import { A2AError } from '@a2a-js/sdk/errors';

/** The agent answered with an A2A error (it received the request and refused it). */
export function agentError(e: unknown): A2AError | undefined {
  if (e instanceof A2AError) return e;
  const cause = e instanceof Error ? (e as Error & { cause?: unknown }).cause : undefined;
  return cause instanceof A2AError ? cause : undefined;
}

/**
 * An error the agent itself sent (a JSON-RPC or REST error answer, or an error event in its stream).
 * The SDK's transports mark those with the `transport` they came over; the errors the SDK raises on
 * its own when an answer fails its validation or translation (`InvalidAgentResponseError`,
 * `RequestMalformedError`, an internal error with no request id) carry none: that answer arrived but
 * could not be read, which says nothing about what the agent did.
 */
export function remoteAgentError(e: unknown): A2AError | undefined {
  const ae = agentError(e);
  if (!ae || !('transport' in ae)) return undefined;
  const response = (ae as { errorResponse?: { id?: unknown } }).errorResponse;
  if (ae.name === 'JsonRpcTransportError' && response !== undefined && response.id === null) return undefined;
  return ae;
}
