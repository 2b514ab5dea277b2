import * as vscode from 'vscode';
import { showError, showInfo, showWarning } from '../notify';
import { agentName } from '../../core/agentRegistry';
import { normalizeOrigin, tryNormalizeOrigin } from '../../core/origin';
import type { AgentService } from '../agents/agentService';
import { listingHost } from '../agents/unlisted';
import { errorMessage } from '../errors';
import type { GatewaySupervisor } from '../gateway/gatewaySupervisor';
import type { DelegationPanelManager } from '../panel/delegationPanel';
import type { BatonStorage } from '../storage';
import { requireTrust } from '../trust';
import { cardUrlOf } from './commandArgs';

export interface AgentCommandDeps {
  readonly agents: AgentService;
  readonly gateway: GatewaySupervisor;
  readonly panels: DelegationPanelManager;
  readonly storage: BatonStorage;
  readonly log: vscode.LogOutputChannel;
}

/** Adding, reviewing, removing and refreshing agents, their tokens, and the local gateway. */
export function registerAgentCommands(deps: AgentCommandDeps): vscode.Disposable[] {
  const { agents, gateway, panels, storage, log } = deps;
  return [
    // A gateway no longer serves agents it listed (read by Refresh Agents, or after it refused a
    // delegation): they are unavailable; say so once, and offer to take them off Baton's list.
    agents.onDidUnlist(({ agents: gone }) => {
      const remove = vscode.l10n.t('Remove from Baton');
      void showWarning(
        vscode.l10n.t(
          'The gateway at {0} no longer serves {1}: its operator removed it. Baton does not delegate to it.',
          listingHost(gone[0]),
          gone.map(agentName).join(', '),
        ),
        remove,
      ).then(async (pick) => {
        if (pick !== remove) return;
        for (const a of gone) {
          panels.close({ kind: 'agentReview', agentId: a.cardUrl });
          if (agents.find(a.cardUrl)) await agents.remove(a.cardUrl);
        }
      });
    }),
    vscode.commands.registerCommand('baton.addAgent', async (arg?: unknown) => {
      if (!requireTrust(vscode.l10n.t('Adding an agent'))) return undefined;
      // `{ value }` opens the box again with what the user typed (after an error), so a typo costs one edit.
      const prefill =
        typeof arg === 'object' && arg !== null && typeof (arg as { value?: unknown }).value === 'string'
          ? (arg as { value: string }).value
          : '';
      const input =
        typeof arg === 'string'
          ? arg
          : await vscode.window.showInputBox({
              title: vscode.l10n.t('Add Agent'),
              prompt: vscode.l10n.t(
                'An Agent Card URL, an agent’s base URL, or a gateway’s URL (its index adds each agent it fronts).',
              ),
              placeHolder: 'https://agents.example.com/.well-known/agent-card.json',
              value: prefill,
              ignoreFocusOut: true,
              validateInput: (v) => {
                try {
                  const u = new URL(v.trim());
                  return u.protocol === 'https:' || u.protocol === 'http:'
                    ? undefined
                    : vscode.l10n.t('Use an https:// URL.');
                } catch {
                  return vscode.l10n.t('Enter an absolute URL, e.g. https://agents.example.com');
                }
              },
            });
      if (!input) return undefined;
      const value = input.trim();
      const wasApproved = new Set(agents.approved().map((a) => a.cardUrl));
      try {
        const { entries: added, summary } = await vscode.window.withProgress(
          { location: { viewId: 'baton.agents' }, title: vscode.l10n.t('Fetching the agent card…') },
          () => agents.add(value),
        );
        const pending = added.filter((a) => a.status === 'pending');
        const already = added.filter((a) => wasApproved.has(a.cardUrl) && a.status === 'approved');
        // Part of what an index listed was left out (a limit, or a card that failed): say what was added, what was not, and what to do.
        if (summary) {
          const showLog = vscode.l10n.t('Show Log');
          void showWarning(summary, showLog).then((pick) => {
            if (pick === showLog) log.show();
          });
        }
        if (pending.length === 1)
          panels.open(
            { kind: 'agentReview', agentId: pending[0].cardUrl },
            vscode.l10n.t('Review: {0}', pending[0].served?.card.name ?? pending[0].cardUrl),
          );
        else if (pending.length > 1 && !summary) {
          void showInfo(
            already.length
              ? vscode.l10n.t(
                  'Added {0} agents for review ({1} were already approved). Review each one in the Agents view before use.',
                  pending.length,
                  already.length,
                )
              : vscode.l10n.t(
                  'Added {0} agents for review. Review each one in the Agents view before use.',
                  pending.length,
                ),
          );
        } else if (pending.length === 0 && added.length > 0 && !summary) {
          void showInfo(
            vscode.l10n.t(
              'Nothing new to review: {0} already approved.',
              added.map((a) => a.served?.card.name ?? a.cardUrl).join(', '),
            ),
          );
        }
        return added.map((a) => a.cardUrl);
      } catch (e) {
        const message = errorMessage(e);
        const edit = vscode.l10n.t('Edit URL');
        const settings = vscode.l10n.t('Open Settings');
        const actions = /baton\.privateHosts/.test(message) ? [settings, edit] : [edit];
        void showError(vscode.l10n.t('Could not add the agent: {0}', message), ...actions).then((pick) => {
          if (pick === settings)
            return vscode.commands.executeCommand('workbench.action.openSettings', 'baton.privateHosts');
          if (pick === edit) return vscode.commands.executeCommand('baton.addAgent', { value });
          return undefined;
        });
        return undefined;
      }
    }),
    vscode.commands.registerCommand('baton.reviewAgent', async (arg?: unknown) => {
      const cardUrl = cardUrlOf(arg) ?? (await pickAgent(agents, vscode.l10n.t('Review which agent?')));
      if (!cardUrl) return;
      const entry = agents.find(cardUrl);
      if (!entry) return;
      panels.open(
        { kind: 'agentReview', agentId: cardUrl },
        vscode.l10n.t('Review: {0}', entry.served?.card.name ?? cardUrl),
      );
    }),
    vscode.commands.registerCommand('baton.removeAgent', async (arg?: unknown) => {
      const cardUrl = cardUrlOf(arg) ?? (await pickAgent(agents, vscode.l10n.t('Remove which agent?')));
      if (!cardUrl) return;
      panels.close({ kind: 'agentReview', agentId: cardUrl });
      await agents.remove(cardUrl);
    }),
    /** Resolves with the card URLs of the agents it added (a gateway's index lists new ones). */
    vscode.commands.registerCommand('baton.refreshAgents', async (arg?: unknown): Promise<string[]> => {
      const cardUrl = cardUrlOf(arg);
      // One agent: its card, and whether the gateway index it came from still lists it. All: every
      // card, and the gateway indexes they came from, for agents added and removed there.
      const added = await vscode.window.withProgress({ location: { viewId: 'baton.agents' } }, () =>
        cardUrl
          ? Promise.all([agents.refresh(cardUrl), agents.recheckListing(cardUrl)]).then((): string[] => [])
          : agents.refreshAll(),
      );
      if (added.length) {
        const review = vscode.l10n.t('Review');
        const names = added.map((u) => agents.find(u)?.served?.card.name ?? u).join(', ');
        void showInfo(vscode.l10n.t('A gateway now lists {0}. Review before Baton uses it.', names), review).then(
          (pick) => (pick === review ? vscode.commands.executeCommand('baton.reviewAgent', added[0]) : undefined),
        );
      }
      const changed = agents.agents.filter((a) => a.status === 'pending' && a.pendingReason === 'card-changed');
      if (changed.length) {
        const review = vscode.l10n.t('Review');
        void showWarning(
          vscode.l10n.t(
            '{0} changed its card and needs review again before Baton uses it.',
            changed.map((a) => a.served?.card.name ?? a.cardUrl).join(', '),
          ),
          review,
        ).then((pick) =>
          pick === review ? vscode.commands.executeCommand('baton.reviewAgent', changed[0].cardUrl) : undefined,
        );
      }
      return added;
    }),
    /** Resolves true when a token was stored (false when removed, undefined when dismissed). */
    vscode.commands.registerCommand('baton.setToken', async (arg?: unknown): Promise<boolean | undefined> => {
      const fromAgent = cardUrlOf(arg);
      const entry = fromAgent ? agents.find(fromAgent) : undefined;
      const suggested = entry ? (agents.tokenOrigin(entry) ?? entry.origin) : undefined;
      const given =
        typeof arg === 'object' && arg !== null ? (arg as { origin?: unknown; token?: unknown }) : undefined;
      // An origin named by the caller (the delegation panel knows its agent's endpoint) is not asked for again.
      const knownOrigin = typeof given?.origin === 'string' && given.origin ? given.origin : undefined;
      const typed =
        knownOrigin ??
        (await vscode.window.showInputBox({
          title: vscode.l10n.t('Set Token for Origin'),
          prompt: vscode.l10n.t(
            'The token is sent only to this origin (scheme, host and port), as its agent card asks. Without a scheme, https is meant.',
          ),
          value: suggested,
          placeHolder: 'https://agents.example.com',
          // The user may switch to another window to copy it: the box stays.
          ignoreFocusOut: true,
          validateInput: (v) =>
            v.trim() && !tryNormalizeOrigin(v)
              ? vscode.l10n.t(
                  'Give an origin: https://host[:port], or http://host[:port] for an agent you allowed as private.',
                )
              : undefined,
        }));
      if (!typed) return undefined;
      const origin = normalizeOrigin(typed);
      const token = typeof given?.token === 'string' ? given.token : await askToken(origin);
      if (token === undefined) return undefined;
      if (token === '') await storage.deleteToken(origin);
      else await storage.setToken(origin, token);
      log.info(`tokens: ${token === '' ? 'removed' : 'stored'} the token for ${origin}`);
      return token !== '';
    }),
    vscode.commands.registerCommand('baton.startGateway', async () => {
      if (!requireTrust(vscode.l10n.t('Starting the local gateway'))) return;
      try {
        await vscode.window.withProgress(
          { location: { viewId: 'baton.agents' }, title: vscode.l10n.t('Starting the local gateway…') },
          () => addLocalGatewayAgents(deps),
        );
      } catch (e) {
        void showError(vscode.l10n.t('The local gateway did not start: {0}', errorMessage(e)));
      }
    }),
    vscode.commands.registerCommand('baton.stopGateway', async () => {
      await gateway.stop();
    }),
  ];
}

/**
 * Asks for the token of `origin` (masked; empty removes it); undefined when dismissed. The box is shown
 * at once, when called: called while a quick pick is open (a step of the start flow), it takes that
 * pick's place with the keyboard focus, rather than opening after the pick closed and focus went back
 * to where it was before (a view's tree, which then took the typing). It stays when the user switches
 * to another window to copy the token.
 */
export function askToken(origin: string): Promise<string | undefined> {
  const box = vscode.window.createInputBox();
  box.title = vscode.l10n.t('Token for {0}', origin);
  box.password = true;
  box.ignoreFocusOut = true;
  box.prompt = origin.startsWith('http:')
    ? vscode.l10n.t(
        '{0} is plain http: the token travels unencrypted to it, and only to it. Stored in VS Code’s secret storage. Leave empty to remove it.',
        origin,
      )
    : vscode.l10n.t('Stored in VS Code’s secret storage. Leave empty to remove it.');
  return new Promise<string | undefined>((resolve) => {
    let answer: string | undefined;
    box.onDidAccept(() => {
      answer = box.value;
      box.hide();
    });
    box.onDidHide(() => {
      resolve(answer);
      box.dispose();
    });
    box.show();
  });
}

/**
 * Starts the local gateway (or reuses the one running) and adds its agents: approved at once, since
 * Baton runs that gateway itself.
 */
export async function addLocalGatewayAgents(deps: Pick<AgentCommandDeps, 'agents' | 'gateway'>): Promise<void> {
  const { agents, gateway } = deps;
  const roots = (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath);
  const info = await gateway.ensureRunning(
    roots,
    vscode.workspace.getConfiguration('baton').get<Record<string, string>>('cliPaths', {}),
  );
  const host = new URL(info.url).host;
  agents.allowPrivateHost(host);
  // A restarted local gateway listens on a new port: its old entries are gone for good.
  for (const a of agents.agents)
    if (a.source === 'local-gateway' && a.origin !== new URL(info.url).origin) await agents.remove(a.cardUrl);
  const { entries: added } = await agents.add(info.url, 'local-gateway');
  // Baton started this gateway itself (its own program, its own token): its agents need no review.
  for (const a of added) if (a.status === 'pending' && a.served) await agents.approve(a.cardUrl, a.served.digest);
}

async function pickAgent(
  agents: AgentService,
  placeHolder: string,
  filter: (s: string) => boolean = () => true,
): Promise<string | undefined> {
  const items = agents.agents
    .filter((a) => filter(a.status))
    .map((a) => ({
      label: a.served?.card.name ?? a.cardUrl,
      description: a.status,
      detail: a.cardUrl,
      cardUrl: a.cardUrl,
    }));
  if (!items.length) {
    void showInfo(vscode.l10n.t('No agents yet. Use Baton: Add Agent… first.'));
    return undefined;
  }
  return (await vscode.window.showQuickPick(items, { placeHolder }))?.cardUrl;
}

/** Adds the agents named in the `baton.agents` setting that are not in the registry yet (pending review). */
export function addAgentsFromSettings(agents: AgentService, log: vscode.LogOutputChannel): void {
  const fromSettings = vscode.workspace.getConfiguration('baton').get<string[]>('agents', []);
  for (const url of fromSettings) {
    if (!agents.agents.some((a) => a.cardUrl === url || a.cardUrl.startsWith(url)))
      void agents
        .add(url, 'settings')
        .catch((e: unknown) => log.warn(`agents: ${url} from settings: ${errorMessage(e)}`));
  }
}
