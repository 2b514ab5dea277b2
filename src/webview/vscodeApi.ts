import type { PanelUiState, WebviewToHostMessage } from '../core/protocol/panelProtocol';

/** The handle VS Code gives a webview script; it may be acquired once only. */
export interface VsCodeApi {
  postMessage(message: WebviewToHostMessage): void;
  getState(): unknown;
  setState(state: PanelUiState): void;
}

declare function acquireVsCodeApi(): VsCodeApi;

let api: VsCodeApi | undefined;
export function vscodeApi(): VsCodeApi {
  api ??= acquireVsCodeApi();
  return api;
}
