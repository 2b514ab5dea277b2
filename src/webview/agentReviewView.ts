import * as l10n from '@vscode/l10n';
import { html, nothing, type TemplateResult } from 'lit';
import type { AgentReviewRequests, AgentReviewView } from '../core/protocol/panelProtocol';
import { signatureLabel } from './l10n';

export interface AgentReviewActions {
  send<M extends keyof AgentReviewRequests>(method: M, params: AgentReviewRequests[M]['params']): void;
  readonly busy: boolean;
  /** Re-renders after a local, UI-only change. */
  redraw(): void;
}

let acknowledged = false;

/** A URL that wraps only after its separators (never mid-word) and shows whole on hover. */
function url(u: string | undefined): TemplateResult | typeof nothing {
  if (!u) return nothing;
  const pieces = u.split(/(?<=[/.?&=#:])/);
  return html`<code class="url" title=${u}>${pieces.map((p, i) => (i ? html`<wbr />${p}` : p))}</code>`;
}

export function agentReviewTemplate(r: AgentReviewView, a: AgentReviewActions, trusted: boolean): TemplateResult {
  const preferred = r.interfaces.find((i) => i.preferred) ?? r.interfaces[0];
  const needsAck = !!preferred?.offOrigin;
  const canApprove =
    trusted &&
    !!r.digest &&
    r.signature.status !== 'invalid' &&
    r.status !== 'unavailable' &&
    r.status !== 'approved' &&
    (!needsAck || acknowledged);
  const statusLabel =
    r.status === 'pending'
      ? r.pendingReason === 'card-changed'
        ? l10n.t('Card changed: review again')
        : l10n.t('Pending review')
      : r.status === 'approved'
        ? l10n.t('Approved')
        : r.status === 'rejected'
          ? l10n.t('Rejected')
          : l10n.t('Unavailable');
  return html`
    <header class="header">
      <vscode-icon name="organization" size="20"></vscode-icon>
      <div class="title">
        <h1>${r.name}</h1>
        <div class="muted">
          ${r.provider ? html`${r.provider} · ` : nothing}${r.version ? html`v${r.version} · ` : nothing}${r.source}
        </div>
      </div>
      <span class="spacer"></span>
      <span
        class="state ${r.status === 'approved' ? 'ok' : r.status === 'pending' ? 'warn' : 'bad'}"
        id="agent-status"
        data-status=${r.status}
        >${statusLabel}</span
      >
    </header>
    ${r.description ? html`<p class="description">${r.description}</p>` : nothing}
    ${
      r.error
        ? html`<div class="banner bad" role="alert">
            <vscode-icon name="error"></vscode-icon>
            <div>${r.error}</div>
          </div>`
        : nothing
    }
    ${
      r.changes.length
        ? html`<section class="changes" id="card-changes">
            <h2><vscode-icon name="diff"></vscode-icon> ${l10n.t('What changed since you approved it')}</h2>
            <table>
              <thead>
                <tr>
                  <th>${l10n.t('Field')}</th>
                  <th>${l10n.t('Before')}</th>
                  <th>${l10n.t('Now')}</th>
                </tr>
              </thead>
              <tbody>
                ${r.changes.map(
                  (c) =>
                    html`<tr class=${c.kind}>
                      <td><code>${c.path}</code></td>
                      <td><code>${c.before ?? '—'}</code></td>
                      <td><code>${c.after ?? '—'}</code></td>
                    </tr>`,
                )}
              </tbody>
            </table>
          </section>`
        : nothing
    }
    ${
      r.warnings.length
        ? html`<div class="banner warn" id="card-warnings">
            <vscode-icon name="warning"></vscode-icon>
            <div>
              <ul>
                ${r.warnings.map((w) => html`<li>${w}</li>`)}
              </ul>
            </div>
          </div>`
        : nothing
    }
    <section class="facts">
      <div>
        <span class="k">${l10n.t('Signature')}</span
        ><span class="sig ${r.signature.status}" id="card-signature"
          >${signatureLabel(r.signature.status)} <span class="muted">${r.signature.detail}</span></span
        >
      </div>
      <div>
        <span class="k">${l10n.t('Card digest')}</span
        ><code id="card-digest" title=${r.digest ?? ''}
          >${r.digest ? r.digest.slice(0, 23) + '…' : l10n.t('not fetched')}</code
        >
      </div>
      <div><span class="k">${l10n.t('Card URL')}</span>${url(r.cardUrl)}</div>
      ${r.approvedEndpoint ? html`<div><span class="k">${l10n.t('Pinned endpoint')}</span>${url(r.approvedEndpoint)}</div>` : nothing}
    </section>
    <h2>${l10n.t('Interfaces')}</h2>
    <ul class="plain">
      ${r.interfaces.map((i) => html`<li>${url(i.url)} <span class="chip">${i.binding}${i.protocolVersion ? ` ${i.protocolVersion}` : ''}</span>${i.preferred ? html` <span class="chip">${l10n.t('preferred')}</span>` : nothing}${i.offOrigin ? html` <span class="chip warn">${l10n.t("another origin than the card's")}</span>` : nothing}${i.insecure ? html` <span class="chip warn">http</span>` : nothing}</li>`)}
    </ul>
    <h2>${l10n.t('Skills')}</h2>
    <ul class="plain skills">
      ${r.skills.map((s) => html`<li><strong>${s.name}</strong> — ${s.description}${s.tags.length ? html` <span class="muted">${s.tags.join(', ')}</span>` : nothing}</li>`)}
    </ul>
    <h2>${l10n.t('Authentication')}</h2>
    ${
      r.auth.length
        ? html`<ul class="plain">
            ${r.auth.map((x) => html`<li><strong>${x.name}</strong>: ${x.detail}</li>`)}
          </ul>`
        : html`<p class="muted">${l10n.t('None declared.')}</p>`
    }
    ${
      r.extensions.length
        ? html`<h2>${l10n.t('Extensions')}</h2>
            <ul class="plain">
              ${r.extensions.map((x) => html`<li><code>${x.uri}</code>${x.required ? html` <span class="chip warn">${l10n.t('required')}</span>` : nothing}</li>`)}
            </ul>`
        : nothing
    }
    ${
      r.status !== 'approved'
        ? html`<div class="actions approve-bar">
            ${
              needsAck
                ? html`<vscode-checkbox
                    id="ack-off-origin"
                    ?checked=${acknowledged}
                    @change=${(e: Event) => {
                      acknowledged = (e.target as HTMLInputElement).checked;
                      a.redraw();
                    }}
                    >${l10n.t(
                      "Requests go to {0}, another origin than the card's ({1}). The token stored for {1} is never sent there; only a token you store for {2} is.",
                      preferred?.url ?? '',
                      r.origin,
                      preferred?.origin ?? '',
                    )}</vscode-checkbox
                  >`
                : nothing
            }
            <vscode-button
              id="approve"
              icon="pass"
              ?disabled=${!canApprove || a.busy}
              @click=${() => r.digest && a.send('approveAgent', { digest: r.digest, endpointUrl: preferred?.url, acknowledgeOffOrigin: needsAck && acknowledged })}
              >${l10n.t('Approve')}</vscode-button
            >
            <vscode-button
              id="reject-agent"
              secondary
              icon="circle-slash"
              ?disabled=${!trusted || a.busy || r.status === 'rejected'}
              @click=${() => a.send('rejectAgent', {})}
              >${l10n.t('Reject')}</vscode-button
            >
            ${!trusted ? html`<span class="muted">${l10n.t('Approving is disabled in Restricted Mode.')}</span>` : r.signature.status === 'invalid' ? html`<span class="error">${l10n.t('An invalid signature blocks approval.')}</span>` : nothing}
          </div>`
        : nothing
    }
  `;
}
