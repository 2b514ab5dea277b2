import * as vscode from 'vscode';
import type { SecuritySchemeInfo } from '../../core/agentCard';
import { cardWarnings, type AgentEntry, type CardWarning, type RegistryState } from '../../core/agentRegistry';
import { isPlainHttp, sameOrigin, tryNormalizeOrigin } from '../../core/origin';
import type { AgentReviewView } from '../../core/protocol/panelProtocol';
import { proxyCheckText, type ProxyCheck } from '../../core/proxyCheck';
import { unlistedText } from './unlisted';

const MAX_VALUE = 200;

function show(v: unknown): string | undefined {
  if (v === undefined) return undefined;
  const s = typeof v === 'string' ? v : JSON.stringify(v);
  return s.length > MAX_VALUE ? s.slice(0, MAX_VALUE) + '…' : s;
}

function authDetail(s: SecuritySchemeInfo): string {
  switch (s.kind) {
    case 'http':
      return s.scheme.toLowerCase() === 'bearer'
        ? vscode.l10n.t('bearer token (Set Token for Origin…)')
        : vscode.l10n.t('HTTP {0}', s.scheme);
    case 'apiKey':
      return vscode.l10n.t('API key in {0} "{1}"', s.location, s.parameter);
    case 'oauth2':
      return vscode.l10n.t('OAuth 2 (not supported by Baton: use a token)');
    case 'openIdConnect':
      return vscode.l10n.t('OpenID Connect ({0})', s.openIdConnectUrl);
    case 'mtls':
      return vscode.l10n.t('mutual TLS');
    default:
      return s.description || vscode.l10n.t('unknown scheme');
  }
}

function warningText(w: CardWarning, cardOrigin: string): string {
  switch (w.kind) {
    case 'off-origin-interface':
      return vscode.l10n.t(
        'The card names {0} on another origin ({1}). Baton never sends the token stored for the card’s origin ({2}) there; only a token you store for {1} itself.',
        w.url,
        w.origin,
        cardOrigin,
      );
    case 'insecure-interface':
      return vscode.l10n.t(
        '{0} is plain http: requests travel unencrypted. Baton sends a token there only if you store one for that http origin; a token for an https origin never goes there.',
        w.url,
      );
    case 'invalid-signature':
      return vscode.l10n.t('The signature is invalid: {0}', w.reason);
    case 'unsigned-after-signed':
      return vscode.l10n.t('Earlier cards from this host were signed; this one is not.');
  }
}

const SOURCE: Record<AgentEntry['source'], () => string> = {
  user: () => vscode.l10n.t('added by you'),
  settings: () => vscode.l10n.t('from settings'),
  'gateway-index': () => vscode.l10n.t('from a gateway index'),
  'local-gateway': () => vscode.l10n.t('from the local gateway'),
};

/** The review page's view of an agent: the card as served now (what the user would approve). */
export function agentReviewView(state: RegistryState, e: AgentEntry, fetchedViaProxy?: ProxyCheck): AgentReviewView {
  const card = e.served?.card ?? e.approval?.card;
  const sig = e.served?.signature;
  const cardOrigin = tryNormalizeOrigin(e.origin) ?? e.origin;
  return {
    cardUrl: e.cardUrl,
    origin: cardOrigin,
    status: e.status,
    pendingReason: e.pendingReason,
    source: SOURCE[e.source](),
    name: card?.name ?? e.cardUrl,
    description: card?.description ?? '',
    provider: card?.provider?.organization,
    version: card?.version || undefined,
    digest: e.served?.digest,
    interfaces: (card?.interfaces ?? []).map((i, n) => ({
      url: i.url,
      origin: tryNormalizeOrigin(i.origin) ?? i.origin,
      binding: i.binding,
      protocolVersion: i.protocolVersion,
      preferred: n === 0,
      offOrigin: !sameOrigin(i.origin, e.origin),
      insecure: isPlainHttp(i.url),
    })),
    skills: (card?.skills ?? []).map((s) => ({ name: s.name, description: s.description, tags: s.tags })),
    // A card may offer schemes while requiring none (a loopback gateway that serves tokenless requests).
    auth: (card?.securitySchemes ?? []).map((s) => ({
      name: s.name,
      detail: card?.securityRequirements.length
        ? authDetail(s)
        : vscode.l10n.t('{0} — optional: the card requires no authentication', authDetail(s)),
    })),
    extensions: (card?.capabilities.extensions ?? []).map((x) => ({ uri: x.uri, required: x.required })),
    signature: !sig
      ? { status: 'unknown', detail: vscode.l10n.t('the card has not been fetched') }
      : sig.status === 'verified'
        ? {
            status: 'verified',
            detail:
              sig.firstUse && e.status !== 'approved'
                ? vscode.l10n.t('with the key the card carries; it is pinned for {0} when you approve', e.origin)
                : vscode.l10n.t('with the key pinned for {0}', e.origin),
          }
        : sig.status === 'invalid'
          ? { status: 'invalid', detail: sig.reason }
          : { status: 'unsigned', detail: vscode.l10n.t('the card carries no signature') },
    changes: e.changes.map((c) => ({ path: c.path, kind: c.kind, before: show(c.before), after: show(c.after) })),
    // One line per warning: a card's JSON-RPC and HTTP+JSON interfaces often share one plain-http URL.
    warnings: [
      ...new Set([
        // What was checked before the proxy got the fetch, and that the proxy chose the address.
        ...(fetchedViaProxy ? [proxyCheckText(fetchedViaProxy)] : []),
        ...cardWarnings(state, e).map((w) => warningText(w, cardOrigin)),
      ]),
    ],
    error: e.unlistedAt ? unlistedText(e) : e.lastError ? `${e.lastError.message}` : undefined,
    approvedEndpoint: e.approval?.endpoint.url,
  };
}
