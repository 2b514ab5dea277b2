import * as vscode from 'vscode';
import {
  migratePanelState,
  parseWebviewMessage,
  type HostToWebviewMessage,
  type PanelRequestMethod,
  type PanelRequests,
  type PanelSnapshot,
  type PanelUiState,
  type WebviewToHostMessage,
} from '../../core/protocol/panelProtocol';
import { UpdateCoalescer } from '../../core/coalescer';
import { Disposable } from '../lifecycle';
import { newNonce, panelHtml, webviewRoots } from './webviewHtml';

export const PANEL_VIEW_TYPE = 'baton.delegation';

/** Requests that act on the delegation a panel shows. */
export type DelegationRequestMethod = Exclude<PanelRequestMethod, 'refresh' | 'runCommand'>;

/** What the panel needs from the rest of the extension. */
/** What a panel shows: a delegation, an agent under review, or (neither) the overview. */
export interface PanelSubject {
  readonly delegationId?: string;
  readonly agentCardUrl?: string;
}

export interface PanelHost {
  snapshot(refreshCount: number, subject: PanelSubject): PanelSnapshot;
  runCommand(command: PanelRequests['runCommand']['params']['command']): Promise<void>;
  act<M extends DelegationRequestMethod>(
    subject: PanelSubject,
    method: M,
    params: PanelRequests[M]['params'],
  ): Promise<PanelRequests[M]['result']>;
  readonly log: vscode.LogOutputChannel;
}

/** Observers (the integration tests use them through the extension's exported test API). */
export interface PanelEvents {
  readonly onDidReceive: vscode.Event<WebviewToHostMessage>;
  readonly onDidPost: vscode.Event<HostToWebviewMessage>;
}

/**
 * One delegation panel. The webview announces `ready` before the host sends anything: messages posted
 * earlier are held and flushed then (a webview whose script has not loaded drops them). The latest
 * snapshot is also re-sent whenever the panel becomes visible again, because a hidden webview may have
 * dropped posts.
 */
export class DelegationPanel extends Disposable {
  private _ready = false;
  private readonly _pending: HostToWebviewMessage[] = [];
  private _refreshCount = 0;
  private readonly coalescer: UpdateCoalescer<PanelSnapshot>;
  /** The delegation this panel shows; undefined for the overview panel. */
  readonly delegationId: string | undefined;
  /** The agent this panel reviews; undefined otherwise. */
  readonly agentCardUrl: string | undefined;

  get subject(): PanelSubject {
    return { delegationId: this.delegationId, agentCardUrl: this.agentCardUrl };
  }
  private readonly _onDidReceive = this._register(new vscode.EventEmitter<WebviewToHostMessage>());
  private readonly _onDidPost = this._register(new vscode.EventEmitter<HostToWebviewMessage>());
  private readonly _onDidDispose = this._register(new vscode.EventEmitter<void>());
  readonly onDidReceive = this._onDidReceive.event;
  readonly onDidPost = this._onDidPost.event;
  readonly onDidDispose = this._onDidDispose.event;

  constructor(
    readonly panel: vscode.WebviewPanel,
    private readonly extensionUri: vscode.Uri,
    private readonly host: PanelHost,
    readonly uiState: PanelUiState,
  ) {
    super();
    this.delegationId = uiState.delegationId;
    this.agentCardUrl = uiState.agentCardUrl;
    // Reset on restore too: a deserialized panel keeps the options it was saved with (vscode#197103).
    panel.webview.options = {
      enableScripts: true,
      enableCommandUris: false,
      enableForms: false,
      localResourceRoots: webviewRoots(extensionUri, vscode.Uri.joinPath),
    };
    panel.iconPath = vscode.Uri.joinPath(extensionUri, 'media', 'baton.svg');
    // However fast a delegation streams, the panel gets at most ~60 snapshots a second, and none while
    // hidden (a hidden webview drops posts): the latest is posted when it is shown again.
    this.coalescer = new UpdateCoalescer({
      produce: () => this.host.snapshot(this._refreshCount, this.subject),
      post: (snapshot) => this.post({ type: 'snapshot', snapshot }),
      clock: {
        now: () => Date.now(),
        setTimeout: (fn, ms) => setTimeout(fn, ms),
        clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
      },
      visible: false,
    });
    this._register({ dispose: () => this.coalescer.dispose() });
    this._register(panel.webview.onDidReceiveMessage((raw: unknown) => this.receive(raw)));
    this._register(
      panel.onDidChangeViewState((e) => {
        if (this._ready) this.coalescer.setVisible(e.webviewPanel.visible);
      }),
    );
    this._register(
      panel.onDidDispose(() => {
        this._onDidDispose.fire();
        this.dispose();
      }),
    );
    panel.webview.html = this.html();
  }

  get isReady(): boolean {
    return this._ready;
  }

  reveal(): void {
    this.panel.reveal(undefined, false);
  }

  /** Something this panel shows changed: a fresh snapshot goes out (coalesced). */
  postSnapshot(): void {
    this.coalescer.invalidate();
  }

  private html(): string {
    const webview = this.panel.webview;
    const asset = (...p: string[]) =>
      webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, 'dist', 'webview', ...p)).toString();
    return panelHtml({
      cspSource: webview.cspSource,
      scriptUri: asset('panel.js'),
      codiconCssUri: asset('codicon.css'),
      title: vscode.l10n.t('Baton Delegation'),
      nonce: newNonce(),
      language: vscode.env.language,
      l10nBundle: vscode.l10n.bundle,
    });
  }

  private post(message: HostToWebviewMessage): void {
    if (!this._ready) {
      this._pending.push(message);
      return;
    }
    void this.panel.webview.postMessage(message).then(
      (delivered) => {
        if (delivered) this._onDidPost.fire(message);
      },
      (err: unknown) => this.host.log.warn(`panel: postMessage failed: ${String(err)}`),
    );
  }

  private receive(raw: unknown): void {
    const parsed = parseWebviewMessage(raw);
    if (!parsed.ok) {
      this.host.log.warn(`panel: refused a message from the webview: ${parsed.error}`);
      return;
    }
    const message = parsed.value;
    this._onDidReceive.fire(message);
    if (message.type === 'ready') {
      this._ready = true;
      for (const m of this._pending.splice(0)) this.post(m);
      this.coalescer.setVisible(this.panel.visible);
      this.coalescer.replay();
      return;
    }
    void this.answer(message.id, message.method, message.params);
  }

  private async answer<M extends PanelRequestMethod>(
    id: number,
    method: M,
    params: PanelRequests[M]['params'],
  ): Promise<void> {
    try {
      switch (method) {
        case 'refresh': {
          this._refreshCount++;
          const snapshot = this.host.snapshot(this._refreshCount, this.subject);
          this.post({ type: 'response', id, ok: true, result: snapshot });
          return;
        }
        case 'runCommand': {
          const { command } = params as PanelRequests['runCommand']['params'];
          await this.host.runCommand(command);
          this.post({ type: 'response', id, ok: true, result: { ran: command } });
          return;
        }
        default: {
          const result = await this.host.act(
            this.subject,
            method as DelegationRequestMethod,
            params as PanelRequests[DelegationRequestMethod]['params'],
          );
          this.post({ type: 'response', id, ok: true, result });
          return;
        }
      }
    } catch (err) {
      const error = err instanceof Error ? err.message : String(err);
      this.host.log.error(`panel: ${method} failed: ${error}`);
      this.post({ type: 'response', id, ok: false, error });
    }
  }
}

/** Opens, tracks and restores delegation panels. */
export class DelegationPanelManager extends Disposable implements vscode.WebviewPanelSerializer<unknown> {
  private readonly _panels = new Set<DelegationPanel>();
  private readonly _onDidCreate = this._register(new vscode.EventEmitter<DelegationPanel>());
  readonly onDidCreate = this._onDidCreate.event;

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly host: PanelHost,
  ) {
    super();
    this._register(vscode.window.registerWebviewPanelSerializer(PANEL_VIEW_TYPE, this));
    this._register({ dispose: () => this._panels.forEach((p) => p.panel.dispose()) });
  }

  get panels(): readonly DelegationPanel[] {
    return [...this._panels];
  }

  /** Shows the panel of a delegation or an agent review (one per subject), or the overview panel. */
  open(subject: PanelSubject = {}, title?: string): DelegationPanel {
    const existing = this.panels.find(
      (p) => p.delegationId === subject.delegationId && p.agentCardUrl === subject.agentCardUrl,
    );
    if (existing) {
      existing.reveal();
      return existing;
    }
    const panel = vscode.window.createWebviewPanel(
      PANEL_VIEW_TYPE,
      title ?? vscode.l10n.t('Baton Delegation'),
      { viewColumn: vscode.ViewColumn.Active, preserveFocus: false },
      {
        enableScripts: true,
        enableCommandUris: false,
        localResourceRoots: webviewRoots(this.extensionUri, vscode.Uri.joinPath),
      },
    );
    return this.track(panel, { ...migratePanelState(undefined), ...subject });
  }

  /** Pushes a fresh snapshot to the panels showing this subject, the overview panels, or (no subject) all panels. */
  update(subject?: PanelSubject): void {
    for (const p of this._panels) {
      const overview = !p.delegationId && !p.agentCardUrl;
      if (
        !subject ||
        overview ||
        (subject.delegationId && p.delegationId === subject.delegationId) ||
        (subject.agentCardUrl && p.agentCardUrl === subject.agentCardUrl)
      )
        p.postSnapshot();
    }
  }

  /** Closes the panels of a subject (e.g. an agent that was removed). */
  close(subject: PanelSubject): void {
    for (const p of this.panels)
      if (
        (subject.delegationId && p.delegationId === subject.delegationId) ||
        (subject.agentCardUrl && p.agentCardUrl === subject.agentCardUrl)
      )
        p.panel.dispose();
  }

  async deserializeWebviewPanel(panel: vscode.WebviewPanel, state: unknown): Promise<void> {
    this.host.log.info('panel: restoring a delegation panel after reload');
    this.track(panel, migratePanelState(state));
  }

  private track(webviewPanel: vscode.WebviewPanel, uiState: PanelUiState): DelegationPanel {
    const panel = new DelegationPanel(webviewPanel, this.extensionUri, this.host, uiState);
    this._panels.add(panel);
    panel.onDidDispose(() => this._panels.delete(panel));
    this._onDidCreate.fire(panel);
    return panel;
  }
}
