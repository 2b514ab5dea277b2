/**
 * The request the extension sends for what the user chose in the Delegate flow: the shared builder
 * (src/core/delegation/request.ts) fed from the task box, the chosen context and the repository.
 * Kept free of the `vscode` runtime so it can be compared with the `baton` CLI's request in unit tests.
 */
import type { DelegationRequest } from '../../core/delegation';
import type { RepositoryContext } from '../../core/delegation/context';
import type { StartedBy } from '../../core/delegation/tree';
import { buildDelegationRequest } from '../../core/delegation/request';
import type { CollectedContext } from './context';
import type { StartChoice } from './startFlow';

export interface ExtensionRequestInput {
  readonly requestId: string;
  readonly createdAt: number;
  readonly who: string;
  readonly agent: DelegationRequest['agent'];
  readonly choice: Pick<StartChoice, 'task' | 'capabilities'>;
  readonly context: Omit<CollectedContext, 'folder'>;
  readonly repository: RepositoryContext | undefined;
  /** Epoch ms. */
  readonly deadline: number | undefined;
  /** Who starts it, when it is not the person at the keyboard. */
  readonly startedBy?: StartedBy;
  /** The delegation it is started from within. */
  readonly parentRequestId?: string;
}

export function extensionDelegationRequest(input: ExtensionRequestInput): DelegationRequest {
  const { context } = input;
  return buildDelegationRequest({
    requestId: input.requestId,
    task: input.choice.task,
    selection: context.selection,
    files: context.files,
    diagnostics: context.diagnostics,
    unsaved: context.unsaved,
    repository: input.repository,
    capabilities: input.choice.capabilities,
    deadline: input.deadline,
    agent: input.agent,
    who: input.who,
    createdAt: input.createdAt,
    ...(input.startedBy ? { startedBy: input.startedBy } : {}),
    ...(input.parentRequestId ? { parentRequestId: input.parentRequestId } : {}),
  });
}
