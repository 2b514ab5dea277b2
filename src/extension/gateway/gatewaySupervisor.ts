import * as vscode from 'vscode';
import { Disposable } from '../lifecycle';
import { cliArgs, GatewayStartError, LocalGateway } from './localGateway';
import type { LocalGatewayInfo } from './localGateway';

export type { CodingCliInfo, LocalGatewayInfo } from './localGateway';

export type GatewayStatus =
  | { readonly kind: 'stopped' }
  | { readonly kind: 'starting' }
  | { readonly kind: 'running'; readonly info: LocalGatewayInfo; readonly reused: boolean }
  | { readonly kind: 'failed'; readonly error: string };

/** A shared gateway with no window's folders and no running task stops after this long. */
const IDLE_STOP_MS = 10 * 60_000;

/**
 * This window's side of the local gateway that every window shares: starts `baton-gateway` on demand
 * as a detached process bound to 127.0.0.1 (random port, bearer token in a 0600 file in its state
 * folder) or uses the one running, registers this window's folders with it, and lets go of them when
 * the window closes. The gateway survives a window reload, so local delegations do. It runs on VS
 * Code's own Node (`process.execPath` with ELECTRON_RUN_AS_NODE=1), where it stores tasks with
 * node:sqlite. Finding, starting and stopping it is `LocalGateway`'s (no `vscode`).
 */
export class GatewaySupervisor extends Disposable {
  private _status: GatewayStatus = { kind: 'stopped' };
  private readonly _onDidChange = this._register(new vscode.EventEmitter<GatewayStatus>());
  readonly onDidChange = this._onDidChange.event;
  private starting: Promise<LocalGatewayInfo> | undefined;
  private readonly gateway: LocalGateway;
  /** The folders this window registered with the gateway (let go of on dispose). */
  private registered: readonly string[] = [];

  constructor(
    extensionUri: vscode.Uri,
    readonly stateDir: string,
    private readonly log: vscode.LogOutputChannel,
  ) {
    super();
    this.gateway = new LocalGateway({
      stateDir,
      command: [process.execPath, vscode.Uri.joinPath(extensionUri, 'dist', 'gateway.js').fsPath],
      idleStopMs: IDLE_STOP_MS,
      log: (line) => log.info(line),
    });
  }

  get status(): GatewayStatus {
    return this._status;
  }

  private set(status: GatewayStatus): void {
    this._status = status;
    this._onDidChange.fire(status);
  }

  /** The token of the running gateway (read from its 0600 file; never logged). */
  token(info: LocalGatewayInfo): string {
    return this.gateway.token(info);
  }

  /** Answers a consent question of the local gateway; undefined once taken, else why not (the gateway's words). */
  answerConsent(info: LocalGatewayInfo, id: string, decision: 'allow' | 'deny'): Promise<string | undefined> {
    return this.gateway.answerConsent(info, id, decision);
  }

  /** The gateway of this state folder, if one answers as the gateway `gateway.json` names. */
  findRunning(): Promise<LocalGatewayInfo | undefined> {
    return this.gateway.findRunning();
  }

  /** Uses the running gateway (registering these folders with it), or starts one. */
  ensureRunning(roots: readonly string[], cliPaths: Readonly<Record<string, string>> = {}): Promise<LocalGatewayInfo> {
    this.starting ??= this.start(roots, cliArgs(cliPaths)).finally(() => (this.starting = undefined));
    return this.starting;
  }

  private async start(roots: readonly string[], clis: readonly string[]): Promise<LocalGatewayInfo> {
    this.set({ kind: 'starting' });
    try {
      // Registered again on every attach (the gateway counts each folder per request): let go of ours first.
      const previous = this.registered;
      this.registered = [];
      await this.gateway.detach(previous).catch(() => undefined);
      const { info, reused } = await this.gateway.attach(roots, clis);
      this.registered = roots;
      this.set({ kind: 'running', info, reused });
      return info;
    } catch (e) {
      const error =
        e instanceof GatewayStartError
          ? e.kind === 'exited'
            ? vscode.l10n.t('baton-gateway exited with code {0}. See {1}.', e.exitCode ?? '?', e.logFile)
            : vscode.l10n.t('baton-gateway did not start within 20 seconds. See {0}.', e.logFile)
          : (e as Error).message;
      this.set({ kind: 'failed', error });
      throw new Error(error);
    }
  }

  /** Asks the gateway to stop (it finishes stopping its tasks first); a process is never signalled. */
  async stop(): Promise<void> {
    this.registered = [];
    await this.gateway.stop();
    this.set({ kind: 'stopped' });
  }

  /**
   * The window closes: its folders are no longer served; the gateway goes on for the other windows.
   * Resolves once the gateway has let go of them (or within `timeoutMs`, whichever is first), so that
   * `deactivate` can wait for it: VS Code waits a few seconds for an extension's `deactivate`.
   */
  release(timeoutMs = 3000): Promise<void> {
    const roots = this.registered;
    this.registered = [];
    if (roots.length === 0) return Promise.resolve();
    const detached = this.gateway.detach(roots).catch((e: unknown) => this.log.warn(`gateway: ${String(e)}`));
    return Promise.race([detached, new Promise<void>((r) => setTimeout(r, timeoutMs).unref())]);
  }

  override dispose(): void {
    void this.release();
    super.dispose();
  }
}
