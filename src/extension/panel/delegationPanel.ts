import * as vscode from 'vscode';
import {
  dispatchPanelRequest,
  migratePanelState,
  panelStateFields,
  panelSubjectOf,
  parseWebviewMessage,
  routePanelRequest,
  sameSubject,
  type CommonRequests,
  type HostToWebviewMessage,
  type PanelCommand,
  type PanelHandlers,
  type PanelRequestMessage,
  type PanelRequestMethod,
  type PanelRequests,
  type PanelSnapshot,
  type PanelSubject,
  type PanelUiState,
  type WebviewToHostMessage,
} from '../../core/protocol/panelProtocol';
import { UpdateCoalescer } from '../../core/coalescer';
import { Disposable } from '../lifecycle';
import { newNonce, panelHtml, webviewRoots } from './webviewHtml';

export const PANEL_VIEW_TYPE = 'baton.delegation';

export type { PanelSubject };

/**
 * What the panels need from the rest of the extension. The requests a panel makes about its subject are
 * answered by the handlers registered with `DelegationPanelManager.registerHandlers`.
 */
export interface PanelHost {
  snapshot(refreshCount: number, subject: PanelSubject): PanelSnapshot;
  runCommand(command: PanelCommand): Promise<void>;
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
  /** What this panel shows, for as long as it is open. */
  readonly subject: PanelSubject;

  /** The delegation this panel shows; undefined for the overview and agent review panels. */
  get delegationId(): string | undefined {
    return this.subject.kind === 'delegation' ? this.subject.delegationId : undefined;
  }

  /** The agent this panel reviews; undefined otherwise. */
  get agentCardUrl(): string | undefined {
    return this.subject.kind === 'agentReview' ? this.subject.agentId : undefined;
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
    private readonly handlers: () => PanelHandlers | undefined,
    readonly uiState: PanelUiState,
  ) {
    super();
    this.subject = panelSubjectOf(uiState);
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
    void this.answer(message);
  }

  private async answer(message: PanelRequestMessage): Promise<void> {
    try {
      const result = await this.resultOf(message);
      this.post({ type: 'response', id: message.id, ok: true, result });
    } catch (err) {
      const error = err instanceof Error ? err.message : String(err);
      this.host.log.error(`panel: ${message.method} failed: ${error}`);
      this.post({ type: 'response', id: message.id, ok: false, error });
    }
  }

  /** A request of this panel's kind goes to that kind's handlers; any other is refused. */
  private async resultOf(message: PanelRequestMessage): Promise<PanelRequests[PanelRequestMethod]['result']> {
    const routed = routePanelRequest(this.subject, message);
    if (!routed.ok) throw new Error(routed.error);
    const request = routed.value;
    if (request.kind === 'any') return this.answerCommon(request.message);
    const handlers = this.handlers();
    if (!handlers) throw new Error(vscode.l10n.t('Baton is still starting. Try again in a moment.'));
    return request.kind === 'delegation'
      ? dispatchPanelRequest(handlers.delegation, request.subject, request.message)
      : dispatchPanelRequest(handlers.agentReview, request.subject, request.message);
  }

  private async answerCommon(
    message: PanelRequestMessage<CommonRequests>,
  ): Promise<CommonRequests[keyof CommonRequests]['result']> {
    if (message.method === 'refresh') {
      this._refreshCount++;
      return this.host.snapshot(this._refreshCount, this.subject);
    }
    const { command } = message.params;
    await this.host.runCommand(command);
    return { ran: command };
  }
}

/** Opens, tracks and restores delegation panels. */
export class DelegationPanelManager extends Disposable implements vscode.WebviewPanelSerializer<unknown> {
  private readonly _panels = new Set<DelegationPanel>();
  private readonly _onDidCreate = this._register(new vscode.EventEmitter<DelegationPanel>());
  readonly onDidCreate = this._onDidCreate.event;
  private _handlers: PanelHandlers | undefined;

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

  /** The handlers that answer the requests panels make about their subject (one map per kind of panel). */
  registerHandlers(handlers: PanelHandlers): vscode.Disposable {
    this._handlers = handlers;
    return {
      dispose: () => {
        if (this._handlers === handlers) this._handlers = undefined;
      },
    };
  }

  /** Shows the panel of a delegation or an agent review (one per subject), or the overview panel. */
  open(subject: PanelSubject = { kind: 'overview' }, title?: string): DelegationPanel {
    const existing = this.panels.find((p) => sameSubject(p.subject, subject));
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
    return this.track(panel, { ...migratePanelState(undefined), ...panelStateFields(subject) });
  }

  /** Pushes a fresh snapshot to the panels showing this subject, the overview panels, or (no subject) all panels. */
  update(subject?: PanelSubject): void {
    for (const p of this._panels)
      if (!subject || p.subject.kind === 'overview' || sameSubject(p.subject, subject)) p.postSnapshot();
  }

  /** Closes the panels of a subject (e.g. an agent that was removed); the overview stays open. */
  close(subject: PanelSubject): void {
    if (subject.kind === 'overview') return;
    for (const p of this.panels) if (sameSubject(p.subject, subject)) p.panel.dispose();
  }

  async deserializeWebviewPanel(panel: vscode.WebviewPanel, state: unknown): Promise<void> {
    this.host.log.info('panel: restoring a delegation panel after reload');
    this.track(panel, migratePanelState(state));
  }

  private track(webviewPanel: vscode.WebviewPanel, uiState: PanelUiState): DelegationPanel {
    const panel = new DelegationPanel(webviewPanel, this.extensionUri, this.host, () => this._handlers, uiState);
    this._panels.add(panel);
    panel.onDidDispose(() => this._panels.delete(panel));
    this._onDidCreate.fire(panel);
    return panel;
  }
}
