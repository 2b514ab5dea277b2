/**
 * A child a gateway's agent asks to start waits for the user's consent. The gateway asks on the
 * parent task's stream: a status event whose metadata carries `META.consent` with the question
 * (`{id, parentAgentId, agentId, agentName, title, capabilities, expiresAt}`), then another with the
 * decision (`{id, decision}`: `allowed`, `denied` or `expired`). The local principal answers with
 * `POST /baton/consent/<id>` and `{"decision": "allow" | "deny"}`.
 *
 * Pure: the journal folds these reports (`consentOf`), the host asks the user about the open ones
 * (`openConsents`) with the words of `consentPromptText`.
 */
import { META } from '../batonProfile';
import { isRecord } from '../isRecord';
import type { Translate } from '../protocol/l10n';
import type { CapabilitySet } from '../protocol/delegationView';

/** A question the gateway asked, checked and bounded (it comes from the gateway, so it is untrusted). */
export interface ConsentQuestion {
  readonly id: string;
  /** The parent's agent at the gateway (its route id). */
  readonly parentAgentId: string;
  readonly agentId: string;
  readonly agentName: string;
  readonly title: string;
  readonly capabilities: CapabilitySet;
  /** Epoch ms: unanswered by then, the gateway refuses the child. */
  readonly expiresAt: number;
}

export type ConsentDecision = 'allowed' | 'denied' | 'expired';

/** What one status event says about consent. */
export type ConsentReport =
  | { readonly kind: 'question'; readonly question: ConsentQuestion }
  | { readonly kind: 'decision'; readonly id: string; readonly decision: ConsentDecision };

/** A question and, once the gateway reported it, its decision. */
export interface ConsentRecord {
  readonly question: ConsentQuestion;
  readonly decision?: ConsentDecision;
}

/** The most consent questions one journal keeps; later new ones are dropped. */
export const MAX_CONSENTS = 200;

/** Consent ids are the gateway's UUIDs; anything else cannot be put in a URL path safely. */
const ID_PATTERN = /^[A-Za-z0-9-]{1,100}$/;

function text(v: unknown, max: number): string | undefined {
  return typeof v === 'string' && v.length > 0 ? v.slice(0, max) : undefined;
}

/**
 * The consent question or decision a status event carries in its metadata, checked and bounded.
 * Undefined when it carries none or the report is malformed (no usable id, no expiry, an unknown decision).
 */
export function consentOf(metadata: Readonly<Record<string, unknown>> | undefined): ConsentReport | undefined {
  const v = metadata?.[META.consent];
  if (!isRecord(v)) return undefined;
  const id = typeof v.id === 'string' && ID_PATTERN.test(v.id) ? v.id : undefined;
  if (!id) return undefined;
  if (v.decision !== undefined) {
    const d = v.decision;
    return d === 'allowed' || d === 'denied' || d === 'expired' ? { kind: 'decision', id, decision: d } : undefined;
  }
  const expiresAt = typeof v.expiresAt === 'string' ? Date.parse(v.expiresAt) : NaN;
  if (!Number.isFinite(expiresAt)) return undefined;
  const agentId = text(v.agentId, 500) ?? '';
  const caps = isRecord(v.capabilities) ? v.capabilities : {};
  return {
    kind: 'question',
    question: {
      id,
      parentAgentId: text(v.parentAgentId, 200) ?? '',
      agentId,
      agentName: text(v.agentName, 200) ?? (agentId.slice(0, 200) || '?'),
      title: text(v.title, 200) ?? '',
      capabilities: { write: caps.write === true, shell: caps.shell === true, network: caps.network === true },
      expiresAt,
    },
  };
}

/**
 * Folds one report into `consents` (by id). A decision for a question never seen (its event was
 * dropped) is kept without a question only as a decision, so that the question, if it comes later
 * in a replay, is not asked again. At most `MAX_CONSENTS` ids are kept.
 */
export function foldConsent(
  consents: Map<string, { question?: ConsentQuestion; decision?: ConsentDecision }>,
  report: ConsentReport,
): void {
  const id = report.kind === 'question' ? report.question.id : report.id;
  const prev = consents.get(id);
  if (!prev && consents.size >= MAX_CONSENTS) return;
  if (report.kind === 'question') consents.set(id, { ...prev, question: prev?.question ?? report.question });
  else consents.set(id, { ...prev, decision: prev?.decision ?? report.decision });
}

/** The questions still open at `now`: not decided and not past their expiry. */
export function openConsents(consents: readonly ConsentRecord[], now: number): ConsentQuestion[] {
  return consents.filter((c) => c.decision === undefined && c.question.expiresAt > now).map((c) => c.question);
}

/** The capabilities a child asks for, in words ("write, shell"; "read only" when none). */
export function capabilityWords(c: CapabilitySet, t: Translate): string {
  const names = [c.write ? t('write') : '', c.shell ? t('shell') : '', c.network ? t('network') : ''].filter(Boolean);
  return names.length ? names.join(', ') : t('read only');
}

/** "<parent agent> wants to delegate to <child agent>: <title> (capabilities: …)". */
export function consentPromptText(q: ConsentQuestion, parentAgentName: string, t: Translate): string {
  const caps = capabilityWords(q.capabilities, t);
  return q.title
    ? t('{0} wants to delegate to {1}: {2} (capabilities: {3})', parentAgentName, q.agentName, q.title, caps)
    : t('{0} wants to delegate to {1} (capabilities: {2})', parentAgentName, q.agentName, caps);
}

/**
 * Whether this client may answer a delegation's consent questions: the consent route belongs to the
 * local gateway, so only a delegation whose endpoint has the local gateway's origin can be answered
 * from here. Undefined when it can; else why not, as a code the host puts in words.
 */
export function consentUnanswerable(
  endpoint: string,
  localGatewayUrl: string | undefined,
): 'no-local-gateway' | 'remote' | undefined {
  if (localGatewayUrl === undefined) return 'no-local-gateway';
  const origin = (u: string): string | undefined => {
    try {
      return new URL(u).origin;
    } catch {
      return undefined;
    }
  };
  const local = origin(localGatewayUrl);
  return local !== undefined && origin(endpoint) === local ? undefined : 'remote';
}
