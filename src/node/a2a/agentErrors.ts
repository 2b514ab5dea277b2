/** Telling an error the agent itself sent from one the SDK raised on its own. */
import { A2AError } from '@a2a-js/sdk/errors';
import { isRecord } from '../../core/isRecord';

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

/**
 * An agent's error in the journal's words: its message, and when the error says the agent refused
 * Baton's credentials, that too, so the editor can offer a new token (`isCredentialRefusal`). Seen
 * as an HTTP 401/403 over REST, and over JSON-RPC as an error body in the google.rpc form
 * (`{"error": {"code": 401, "status": "UNAUTHENTICATED", …}}`) that the SDK reads as an A2A error and
 * keeps only the message of.
 */
export function agentErrorText(ae: A2AError): string {
  const { statusCode, errorResponse } = ae as { statusCode?: unknown; errorResponse?: unknown };
  if ((statusCode === 401 || statusCode === 403) && !/\bHTTP 40[13]\b/.test(ae.message))
    return `${ae.message} (HTTP ${statusCode})`;
  const body = isRecord(errorResponse) && isRecord(errorResponse.error) ? errorResponse.error : undefined;
  const status =
    typeof body?.status === 'string' && /^(UNAUTHENTICATED|PERMISSION_DENIED)$/.test(body.status)
      ? body.status
      : body?.code === 401
        ? 'UNAUTHENTICATED'
        : body?.code === 403
          ? 'PERMISSION_DENIED'
          : undefined;
  return status && !ae.message.includes(status) ? `${ae.message} (${status})` : ae.message;
}
