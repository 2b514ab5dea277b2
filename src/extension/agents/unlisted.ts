import * as vscode from 'vscode';
import { agentName, type AgentEntry } from '../../core/agentRegistry';

/** The host of the gateway index that listed an agent, for words about it (its URL when it has no host). */
export function listingHost(entry: AgentEntry): string {
  try {
    return new URL(entry.listedBy ?? entry.cardUrl).host;
  } catch {
    return entry.listedBy ?? entry.cardUrl;
  }
}

/** Why Baton does not delegate to an agent its gateway no longer lists (`AgentEntry.unlistedAt`). */
export function unlistedText(entry: AgentEntry): string {
  return vscode.l10n.t(
    '{0} is no longer served by the gateway at {1}: its operator removed it. Baton does not delegate to it; choose another agent, or Refresh Agents to check again.',
    agentName(entry),
    listingHost(entry),
  );
}
