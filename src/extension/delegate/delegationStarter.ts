import * as vscode from 'vscode';
import type { AgentService } from '../agents/agentService';
import { requireTrustOrThrow } from '../trust';
import type { StartedBy } from '../../core/delegation/tree';
import type { CollectedContext } from './context';
import type { DelegationService } from './delegationService';
import type { StartChoice } from './startFlow';

/** Everything a delegation starts from: the agent, the task, what travels with it, what it may do, by when. */
export interface StartRequest extends StartChoice {
  readonly context: CollectedContext;
  /** Who starts it, when it is not the person at the keyboard (a chat agent). */
  readonly startedBy?: StartedBy;
  /** The delegation of this window it is started from within (the task tree). */
  readonly parentRequestId?: string;
}

/**
 * The one way a delegation starts, whoever asks (the palette's start flow, or a caller with no UI of
 * its own): it asks nothing and shows nothing, it refuses in Restricted Mode and for an agent that is
 * not approved, and it answers with the new delegation's id.
 */
export class DelegationStarter {
  constructor(
    private readonly agents: AgentService,
    private readonly service: DelegationService,
    /** Resolves once the delegation journals are loaded: nothing starts before. */
    readonly ready: Promise<void>,
  ) {}

  async start(request: StartRequest): Promise<string> {
    requireTrustOrThrow(vscode.l10n.t('Delegating'));
    await this.ready;
    const entry = this.agents.find(request.agentId);
    if (!entry)
      throw new Error(
        vscode.l10n.t('{0} is not among your agents any more. Add it again with Baton: Add Agent….', request.agentId),
      );
    if (request.parentRequestId && !this.service.journalView(request.parentRequestId))
      throw new Error(
        vscode.l10n.t(
          'No delegation {0} in this window to start a child of. Leave parentRequestId out, or pass the id of a delegation listed in the Delegations view.',
          request.parentRequestId,
        ),
      );
    return this.service.start(entry, request, request.context, {
      startedBy: request.startedBy,
      parentRequestId: request.parentRequestId,
    });
  }
}
