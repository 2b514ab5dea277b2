import * as vscode from 'vscode';
import type { PanelSnapshot, PanelSubject } from '../../core/protocol/panelProtocol';
import { agentReviewView } from '../agents/agentReview';
import type { AgentService } from '../agents/agentService';
import type { DelegationService } from '../delegate/delegationService';
import type { ReviewSessions } from '../review/reviewSessions';
import type { AgentsViewProvider } from '../views/agentsView';
import type { DelegationsViewProvider } from '../views/delegationsView';

export interface PanelSnapshotDeps {
  readonly agents: AgentService;
  readonly agentsView: AgentsViewProvider;
  readonly delegations: DelegationsViewProvider;
  readonly service: DelegationService;
  readonly reviews: ReviewSessions;
}

/** Builds what a panel shows: the counts for the overview, and its delegation or the agent it reviews. */
export function panelSnapshotter(
  deps: PanelSnapshotDeps,
): (refreshCount: number, subject: PanelSubject) => PanelSnapshot {
  const { agents, agentsView, delegations, service, reviews } = deps;
  function delegationView(id: string) {
    const view = service.panelView(id, reviews.get(id)?.view(), reviews.reviewing(id));
    const agentId = service.request(id)?.agent.id;
    const gone = agentId !== undefined && !agents.approved().some((a) => a.cardUrl === agentId);
    return view && gone ? { ...view, agentUnavailable: true } : view;
  }
  return (refreshCount, subject) => {
    const entry = subject.kind === 'agentReview' ? agents.find(subject.agentId) : undefined;
    return {
      title: vscode.l10n.t('Baton'),
      trusted: vscode.workspace.isTrusted,
      agents: agentsView.count,
      delegations: delegations.count,
      producedAt: new Date().toISOString(),
      refreshCount,
      agentReview: entry ? agentReviewView(agents.registry, entry, agents.viaProxy.get(entry.cardUrl)) : undefined,
      delegation: subject.kind === 'delegation' ? delegationView(subject.delegationId) : undefined,
    };
  };
}
