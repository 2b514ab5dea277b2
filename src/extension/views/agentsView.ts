import * as vscode from 'vscode';
import { agentName, type AgentEntry, type AgentStatus } from '../../core/agentRegistry';
import type { AgentService } from '../agents/agentService';
import type { CodingCliInfo, GatewayStatus } from '../gateway/gatewaySupervisor';
import { Disposable } from '../lifecycle';
import { listingHost, unlistedText } from '../agents/unlisted';

type Group = { readonly kind: 'group'; readonly status: AgentStatus; readonly agents: readonly AgentEntry[] };
type Agent = { readonly kind: 'agent'; readonly entry: AgentEntry };
type Gateway = { readonly kind: 'gateway'; readonly status: GatewayStatus };
/** The coding CLIs the running local gateway looked for and did not find. */
type MissingClis = { readonly kind: 'missing-clis'; readonly clis: readonly CodingCliInfo[] };
export type AgentsNode = Group | Agent | Gateway | MissingClis;

const GROUPS: readonly { status: AgentStatus; label: () => string; icon: string }[] = [
  { status: 'approved', label: () => vscode.l10n.t('Approved'), icon: 'pass' },
  { status: 'pending', label: () => vscode.l10n.t('Pending review'), icon: 'circle-large-outline' },
  { status: 'unavailable', label: () => vscode.l10n.t('Unavailable'), icon: 'debug-disconnect' },
  { status: 'rejected', label: () => vscode.l10n.t('Rejected'), icon: 'circle-slash' },
];

const SOURCE: Record<AgentEntry['source'], () => string> = {
  user: () => vscode.l10n.t('added by you'),
  settings: () => vscode.l10n.t('from settings (baton.agents)'),
  'gateway-index': () => vscode.l10n.t('from a gateway’s index'),
  'local-gateway': () => vscode.l10n.t('from the local gateway'),
};

/** The Agents view: governed agents grouped by review state, and the local gateway's status. */
export class AgentsViewProvider extends Disposable implements vscode.TreeDataProvider<AgentsNode> {
  private readonly _onDidChangeTreeData = this._register(new vscode.EventEmitter<void>());
  readonly onDidChangeTreeData = this._onDidChangeTreeData.event;

  /** Approved agents whose card asks for a token none is stored for (by card URL): worked out with the rows. */
  private needsToken: ReadonlySet<string> = new Set();

  constructor(
    private readonly agents: AgentService,
    private readonly gateway: () => GatewayStatus,
    /** Whether a token is stored for an origin, and when the stored tokens change. */
    private readonly tokens: {
      readonly has: (origin: string) => Promise<boolean>;
      readonly onDidChange: vscode.Event<unknown>;
    },
  ) {
    super();
    this._register(agents.onDidChange(() => this._onDidChangeTreeData.fire()));
    this._register(tokens.onDidChange(() => this._onDidChangeTreeData.fire()));
  }

  /**
   * The approved agents (not the local gateway's, which get its token) whose card asks for a token and
   * for whose origin none is stored: their first message would be refused.
   */
  private async tokensMissing(): Promise<ReadonlySet<string>> {
    const tokens = this.tokens;
    const missing = await Promise.all(
      this.agents.approved().map(async (e) => {
        if (e.source === 'local-gateway' || !e.approval?.card.securityRequirements.length) return undefined;
        const origin = this.agents.tokenOrigin(e);
        return origin && !(await tokens.has(origin)) ? e.cardUrl : undefined;
      }),
    );
    return new Set(missing.filter((u): u is string => u !== undefined));
  }

  refresh(): void {
    this._onDidChangeTreeData.fire();
  }

  get count(): number {
    return this.agents.approved().length;
  }

  async getChildren(node?: AgentsNode): Promise<AgentsNode[]> {
    if (!node) {
      this.needsToken = await this.tokensMissing();
      const all = this.agents.agents;
      if (all.length === 0 && this.gateway().kind === 'stopped') return [];
      const groups: AgentsNode[] = GROUPS.map((g) => ({
        kind: 'group' as const,
        status: g.status,
        agents: all.filter((a) => a.status === g.status),
      })).filter((g) => g.agents.length > 0);
      const gw = this.gateway();
      const missing = gw.kind === 'running' ? (gw.info.codingClis ?? []).filter((c) => !c.found) : [];
      return [
        { kind: 'gateway', status: gw },
        ...(missing.length ? [{ kind: 'missing-clis' as const, clis: missing }] : []),
        ...groups,
      ];
    }
    return node.kind === 'group' ? node.agents.map((entry) => ({ kind: 'agent' as const, entry })) : [];
  }

  getTreeItem(node: AgentsNode): vscode.TreeItem {
    switch (node.kind) {
      case 'gateway': {
        const s = node.status;
        const item = new vscode.TreeItem(vscode.l10n.t('Local gateway'), vscode.TreeItemCollapsibleState.None);
        item.id = 'gateway';
        item.contextValue = s.kind === 'running' ? 'gateway.running' : 'gateway.stopped';
        item.description =
          s.kind === 'running'
            ? s.info.url
            : s.kind === 'starting'
              ? vscode.l10n.t('starting…')
              : s.kind === 'failed'
                ? vscode.l10n.t('failed')
                : vscode.l10n.t('stopped');
        item.iconPath = new vscode.ThemeIcon(
          s.kind === 'running'
            ? 'server-process'
            : s.kind === 'failed'
              ? 'error'
              : s.kind === 'starting'
                ? 'loading~spin'
                : 'circle-slash',
        );
        item.tooltip =
          s.kind === 'failed'
            ? s.error
            : s.kind === 'running'
              ? vscode.l10n.t(
                  'baton-gateway pid {0}{1}: built-in agents and detected coding CLIs',
                  s.info.pid,
                  s.reused ? vscode.l10n.t(' (reused)') : '',
                )
              : vscode.l10n.t('Start it to use the built-in agents and the coding CLIs on this machine.');
        return item;
      }
      case 'missing-clis': {
        const names = node.clis.map((c) => c.name).join(', ');
        const label =
          node.clis.length === 1
            ? vscode.l10n.t('{0} not found', names)
            : vscode.l10n.t('{0} coding CLIs not found', node.clis.length);
        const item = new vscode.TreeItem(label, vscode.TreeItemCollapsibleState.None);
        item.id = 'missing-clis';
        item.contextValue = 'missing-clis';
        item.description = vscode.l10n.t('set baton.cliPaths');
        item.iconPath = new vscode.ThemeIcon('info');
        const md = new vscode.MarkdownString();
        md.appendText(
          vscode.l10n.t(
            'The local gateway looked on PATH for {0} and did not find them, so it offers no agent for them.',
            names,
          ) + '\n\n',
        );
        md.appendText(node.clis.map((c) => `${c.name}: ${c.binaries.join(', ')}`).join('\n') + '\n\n');
        md.appendText(
          vscode.l10n.t(
            'Install one, or point Baton at its executable with the baton.cliPaths setting (e.g. "claude": "/opt/claude/bin/claude"), then restart the local gateway. Click to open the setting.',
          ),
        );
        item.tooltip = md;
        item.command = {
          command: 'workbench.action.openSettings',
          title: vscode.l10n.t('Open Settings'),
          arguments: ['baton.cliPaths'],
        };
        return item;
      }
      case 'group': {
        const g = GROUPS.find((x) => x.status === node.status);
        const item = new vscode.TreeItem(g?.label() ?? node.status, vscode.TreeItemCollapsibleState.Expanded);
        item.id = `group:${node.status}`;
        item.description = String(node.agents.length);
        item.iconPath = new vscode.ThemeIcon(g?.icon ?? 'circle');
        item.contextValue = `group.${node.status}`;
        return item;
      }
      case 'agent': {
        const e = node.entry;
        const card = e.approval?.card ?? e.served?.card;
        const item = new vscode.TreeItem(card?.name ?? e.cardUrl, vscode.TreeItemCollapsibleState.None);
        item.id = `agent:${e.cardUrl}`;
        const needsToken = e.status === 'approved' && this.needsToken.has(e.cardUrl);
        item.contextValue = `agent.${e.status}${needsToken ? '.needsToken' : ''}`;
        const signed = e.served?.signature.status;
        item.iconPath = needsToken
          ? new vscode.ThemeIcon('key', new vscode.ThemeColor('editorWarning.foreground'))
          : e.status === 'approved'
            ? new vscode.ThemeIcon(
                signed === 'verified' ? 'verified-filled' : 'pass',
                new vscode.ThemeColor('testing.iconPassed'),
              )
            : e.status === 'pending'
              ? new vscode.ThemeIcon(
                  e.pendingReason === 'card-changed' ? 'diff' : 'circle-large-outline',
                  new vscode.ThemeColor('editorWarning.foreground'),
                )
              : e.status === 'unavailable'
                ? new vscode.ThemeIcon('debug-disconnect', new vscode.ThemeColor('errorForeground'))
                : new vscode.ThemeIcon('circle-slash');
        // Two agents of one name (the same built-in agent of two gateways): the host tells them apart.
        const name = agentName(e);
        const twin = this.agents.agents.some((o) => o.origin !== e.origin && agentName(o) === name);
        const host = twin ? `${new URL(e.cardUrl).host} · ` : '';
        item.description =
          host +
          (e.unlistedAt
            ? vscode.l10n.t('removed by its gateway ({0})', listingHost(e))
            : e.status === 'pending' && e.pendingReason === 'card-changed'
              ? vscode.l10n.t('card changed — review again')
              : needsToken
                ? vscode.l10n.t('needs a token')
                : (card?.skills.map((s) => s.name).join(' · ') ?? ''));
        const md = new vscode.MarkdownString(undefined, true);
        md.isTrusted = false; // agent text: never trusted markdown
        md.supportHtml = false;
        md.appendMarkdown(`**${escapeMd(card?.name ?? e.cardUrl)}**\n\n`);
        if (card?.description) md.appendText(card.description + '\n\n');
        if (card?.skills.length)
          md.appendMarkdown(`${vscode.l10n.t('Skills')}: ${card.skills.map((s) => escapeMd(s.name)).join(', ')}\n\n`);
        const endpoint = e.approval?.endpoint.url ?? card?.preferredInterface?.url;
        if (endpoint) md.appendMarkdown(`${vscode.l10n.t('Endpoint')}: \`${endpoint.replace(/`/g, '')}\`\n\n`);
        md.appendMarkdown(`${vscode.l10n.t('Card')}: \`${e.cardUrl.replace(/`/g, '')}\` (${SOURCE[e.source]()})\n\n`);
        if (e.lastSeen)
          md.appendMarkdown(`${vscode.l10n.t('Last seen')}: ${new Date(e.lastSeen).toLocaleString()}\n\n`);
        if (e.unlistedAt) md.appendMarkdown(`$(error) ${escapeMd(unlistedText(e))}\n\n`);
        if (e.lastError) md.appendMarkdown(`$(error) ${escapeMd(e.lastError.message)}\n\n`);
        if (needsToken)
          md.appendMarkdown(
            `$(key) ${escapeMd(vscode.l10n.t('Its card asks for a token, and none is set for its host: set the one its owner gave you with Set Token… (right-click, or the key button).'))}\n\n`,
          );
        item.tooltip = md;
        // A click opens the agent's page: its review while pending, what was approved and pinned once approved.
        item.command = {
          command: 'baton.reviewAgent',
          title: e.status === 'approved' ? vscode.l10n.t('Show Agent') : vscode.l10n.t('Review Agent'),
          arguments: [node],
        };
        return item;
      }
    }
  }
}

function escapeMd(s: string): string {
  return s.replace(/[\\`*_{}[\]()#+\-.!|<>$]/g, (c) => `\\${c}`);
}
