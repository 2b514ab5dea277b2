/**
 * Why an agent cannot be approved (agentRegistry's `approveAgent`), as data and as a sentence made where
 * it is shown: the extension says it in the user's language, the refusal's `message` is English.
 */
import type { Translate } from './protocol/l10n';

export type ApprovalMessage =
  | { readonly code: 'unknown-agent'; readonly cardUrl: string }
  | { readonly code: 'unavailable' | 'no-card' | 'card-changed' | 'no-interface' }
  /** `detail`: the verifier's reason, shown as it is. */
  | { readonly code: 'invalid-signature'; readonly detail: string }
  | { readonly code: 'signature-required'; readonly origin: string }
  | { readonly code: 'endpoint-not-in-card'; readonly url: string }
  | { readonly code: 'endpoint-off-origin'; readonly origin: string; readonly target: string };

export function approvalRefusalText(m: ApprovalMessage, t: Translate): string {
  switch (m.code) {
    case 'unknown-agent':
      return t('No agent with card URL {0}.', m.cardUrl);
    case 'unavailable':
      return t('The agent card could not be fetched; refresh it before approving.');
    case 'no-card':
      return t('The agent card has not been fetched yet; refresh it before approving.');
    case 'card-changed':
      return t('The agent card changed after you opened the review. Review it again before approving.');
    case 'invalid-signature':
      return t("The card's signature is invalid ({0}); it cannot be approved.", m.detail);
    case 'signature-required':
      return t('Cards from {0} were signed before; this one is not, so it cannot be approved.', m.origin);
    case 'no-interface':
      return t('The card lists no interface to call (a gateway index card): add the agents it lists instead.');
    case 'endpoint-not-in-card':
      return t("{0} is not one of the card's interfaces.", m.url);
    case 'endpoint-off-origin':
      return t(
        'The card at {0} sends requests to {1}. Approve only if you trust that origin; no token stored for {0} is sent there.',
        m.origin,
        m.target,
      );
  }
}
