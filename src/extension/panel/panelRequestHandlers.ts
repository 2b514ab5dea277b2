import * as vscode from 'vscode';
import { showInfo } from '../notify';
import type { PanelHandlers, SubjectOf } from '../../core/protocol/panelProtocol';
import type { AgentService } from '../agents/agentService';
import type { DelegationService } from '../delegate/delegationService';
import type { ReviewSession } from '../review/reviewSession';
import { showReview, type ReviewSessions } from '../review/reviewSessions';
import { requireTrustOrThrow } from '../trust';
import { showChildTask } from '../commands/delegationCommands';
import type { DelegationPanelManager } from './delegationPanel';

export interface DelegationRequestDeps {
  readonly service: DelegationService;
  readonly reviews: ReviewSessions;
  readonly panels: DelegationPanelManager;
}

/** What a delegation's panel asks about its delegation and the review of its changes. */
export function delegationRequestHandlers(deps: DelegationRequestDeps): PanelHandlers['delegation'] {
  const { service, reviews } = deps;
  const sessionOf = (subject: SubjectOf<'delegation'>): ReviewSession => {
    const session = reviews.get(subject.delegationId);
    if (!session) throw new Error(vscode.l10n.t('Open the review first (Review Changes).'));
    return session;
  };
  return {
    cancel: async (subject) => ({ confirmed: await service.cancel(subject.delegationId) }),
    reply: async (subject, p) => {
      requireTrustOrThrow(vscode.l10n.t('Replying to an agent'));
      await service.reply(subject.delegationId, p.text);
      return { sent: true };
    },
    answerToolCall: async (subject, p) => {
      requireTrustOrThrow(vscode.l10n.t('Answering a tool call'));
      await service.answerToolCall(subject.delegationId, p.callId, p.outcome);
      return { sent: true };
    },
    finish: async (subject) => {
      const id = subject.delegationId;
      await service.finish(id);
      return { state: service.panelView(id)?.state ?? 'completed' };
    },
    checkAgain: async (subject) => {
      const id = subject.delegationId;
      await service.checkAgain(id);
      return { state: service.panelView(id)?.state ?? 'unknown' };
    },
    provideToken: async (subject) => {
      const id = subject.delegationId;
      const endpoint = service.journalView(id)?.agent.endpoint;
      const stored =
        (await vscode.commands.executeCommand<boolean | undefined>(
          'baton.setToken',
          endpoint ? { origin: new URL(endpoint).origin } : undefined,
        )) === true;
      // With the token in place, ask the agent where the task is and follow it from there (while it
      // still reconnects, its next try takes the new token by itself).
      const state = service.panelView(id)?.state;
      if (stored && (state === 'auth-required' || state === 'unknown')) await service.checkAgain(id);
      return { stored };
    },
    delegateAgain: async (subject) => {
      const started = await vscode.commands.executeCommand<string | undefined>(
        'baton.delegateAgain',
        subject.delegationId,
      );
      return { started: started ?? null };
    },
    reviewChanges: async (subject, p) => {
      await showReview(deps, subject.delegationId, p.patch);
      return { opened: true };
    },
    reviewSelect: async (subject, p) => {
      sessionOf(subject).select(p.fileId, p.hunkId, p.selected);
      return { ok: true };
    },
    reviewSelectAll: async (subject, p) => {
      sessionOf(subject).selectAll(p.selected);
      return { ok: true };
    },
    reviewOverride: async (subject, p) => {
      sessionOf(subject).override(p.riskId, p.allow);
      return { ok: true };
    },
    reviewApply: async (subject, p) => {
      requireTrustOrThrow(vscode.l10n.t('Applying a patch'));
      return { applied: await sessionOf(subject).apply(p.threeWay) };
    },
    reviewReject: async (subject) => {
      sessionOf(subject).reject();
      return { ok: true };
    },
    reviewUndo: async (subject) => ({ restored: sessionOf(subject).undo() }),
    reviewMerge: async (subject, p) => {
      const session = sessionOf(subject);
      if (p.action === 'finish') session.finishMerge();
      else await session.abortMerge();
      return { ok: true };
    },
    showFullText: async (subject, p) => {
      const text = service.fullText(subject.delegationId, p.seq);
      if (text === undefined)
        throw new Error(
          vscode.l10n.t("Baton no longer keeps that text in memory; the delegation's journal still has it."),
        );
      // A plain-text editor: the agent's text is read, never rendered or run.
      await vscode.window.showTextDocument(
        await vscode.workspace.openTextDocument({ content: text, language: 'plaintext' }),
        { preview: true },
      );
      return { opened: true };
    },
    openChild: async (subject, p) => {
      // Only a child listed in this delegation's panel: the panel cannot open arbitrary delegations.
      const child = service.panelView(subject.delegationId)?.children?.find((c) => c.id === p.childId);
      if (!child) throw new Error(vscode.l10n.t('That child is no longer listed under this delegation.'));
      showChildTask(service, deps.panels, child.id);
      return { opened: child.local ? 'panel' : 'info' };
    },
    reviewOpen: async (subject, p) => {
      await sessionOf(subject).open(p.fileId);
      return { ok: true };
    },
  };
}

/** What an agent review panel asks about the agent it reviews. */
export function agentReviewRequestHandlers(agents: AgentService): PanelHandlers['agentReview'] {
  return {
    approveAgent: async (subject, p) => {
      requireTrustOrThrow(vscode.l10n.t('Approving an agent'));
      const cardUrl = subject.agentId;
      const r = await agents.approve(cardUrl, p.digest, {
        endpointUrl: p.endpointUrl,
        acknowledgeOffOrigin: p.acknowledgeOffOrigin,
      });
      if (!r.ok) throw new Error(r.message);
      const approved = agents.find(cardUrl)?.approval;
      void showInfo(
        vscode.l10n.t(
          'Approved {0}. Baton will only call {1}.',
          approved?.card.name ?? cardUrl,
          approved?.endpoint.url ?? '',
        ),
      );
      return { approved: true };
    },
    rejectAgent: async (subject) => {
      await agents.reject(subject.agentId);
      return { ok: true };
    },
  };
}
