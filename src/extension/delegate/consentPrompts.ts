import * as vscode from 'vscode';
import { showError, showInfo, showWarning } from '../notify';
import {
  consentPromptText,
  consentUnanswerable,
  openConsents,
  type ConsentQuestion,
} from '../../core/delegation/consent';
import { errorMessage } from '../errors';
import type { GatewaySupervisor } from '../gateway/gatewaySupervisor';
import { Disposable } from '../lifecycle';
import type { DelegationService } from './delegationService';

/**
 * Asks the user about each consent question a gateway puts on the stream of a delegation this window
 * follows (an agent at the gateway wants to start a child): a notification with Allow and Deny,
 * answered on the local gateway's `POST /baton/consent/<id>` with its token. A question of a remote
 * gateway is shown with why it cannot be answered from here. Each question is asked once; decided or
 * expired ones (read from the journal, also after a reload) are not asked again. The decision reaches
 * the parent's timeline through its stream.
 */
export class ConsentPrompts extends Disposable {
  private readonly asked = new Set<string>();

  constructor(
    private readonly service: DelegationService,
    private readonly gateway: GatewaySupervisor,
    private readonly log: vscode.LogOutputChannel,
  ) {
    super();
    this._register(this.service.onDidChange((id) => this.check(id)));
  }

  /** Looks for open questions in one delegation, or in all of them (`*`). */
  check(id: string): void {
    const ids = id === '*' ? this.service.list().map((s) => s.requestId) : [id];
    for (const requestId of ids) {
      const found = this.service.consents(requestId);
      if (!found) continue;
      for (const q of openConsents(found.consents, Date.now())) {
        if (this.asked.has(q.id)) continue;
        this.asked.add(q.id);
        void this.ask(found.agentName, found.endpoint, q).catch((e: unknown) =>
          this.log.error(`consent ${q.id}: ${errorMessage(e)}`),
        );
      }
    }
  }

  private async ask(parentAgentName: string, endpoint: string, q: ConsentQuestion): Promise<void> {
    const text = consentPromptText(q, parentAgentName, vscode.l10n.t);
    const local = await this.gateway.findRunning();
    const why = consentUnanswerable(endpoint, local?.url);
    if (why || !local) {
      const reason =
        why === 'remote'
          ? vscode.l10n.t(
              'It cannot be answered from here: it runs at a remote gateway ({0}), which takes consent only from its own machine.',
              originOf(endpoint),
            )
          : vscode.l10n.t('It cannot be answered from here: the local gateway is not running.');
      void showWarning(`${text} ${reason}`);
      return;
    }
    this.log.info(`consent ${q.id}: asking about the delegation to ${q.agentName}`);
    const allow = vscode.l10n.t('Allow');
    const deny = vscode.l10n.t('Deny');
    const pick = await showInfo(text, allow, deny);
    // Dismissed: the gateway refuses the child once the question expires.
    if (pick === undefined) return;
    if (Date.now() >= q.expiresAt) {
      void showWarning(
        vscode.l10n.t(
          'The delegation to {0} was already refused: the question expired before you answered.',
          q.agentName,
        ),
      );
      return;
    }
    const decision = pick === allow ? 'allow' : 'deny';
    const failed = await this.gateway.answerConsent(local, q.id, decision).catch((e: unknown) => errorMessage(e));
    this.log.info(`consent ${q.id}: ${failed ? `not answered (${failed})` : decision}`);
    if (failed)
      void showError(vscode.l10n.t('Baton could not answer for the delegation to {0}: {1}', q.agentName, failed));
  }
}

function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return url;
  }
}
