import * as vscode from 'vscode';
import { showWarning } from './notify';
import { errorMessage } from './errors';

/** Refuses `action` (a phrase such as "Applying a patch") in Restricted Mode, saying how to allow it. */
export function requireTrustOrThrow(action: string): void {
  if (!vscode.workspace.isTrusted)
    throw new Error(
      vscode.l10n.t(
        '{0} is disabled in Restricted Mode. Trust this workspace to let Baton delegate, run or apply anything.',
        action,
      ),
    );
}

/** Like `requireTrustOrThrow`, for a command: warns instead of throwing, and says whether to go on. */
export function requireTrust(action: string): boolean {
  try {
    requireTrustOrThrow(action);
    return true;
  } catch (e) {
    void showWarning(errorMessage(e));
    return false;
  }
}
