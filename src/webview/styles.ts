/** Panel styles: only VS Code's theme variables, so the panel follows every theme (light, dark, high contrast). */
export const panelStyles = `
:root { color-scheme: light dark; }
body { padding: 0 20px 20px; color: var(--vscode-foreground); font-family: var(--vscode-font-family); font-size: var(--vscode-font-size); background: var(--vscode-editor-background); }
.header { display: flex; align-items: center; gap: 8px; padding: 14px 0 10px; border-bottom: 1px solid var(--vscode-panel-border, transparent); }
.header h1 { font-size: 1.35em; font-weight: 600; margin: 0; }
.spacer { flex: 1; }
.banner { display: flex; gap: 8px; align-items: center; margin: 12px 0; padding: 8px 12px; border-radius: 4px; }
.banner.warning { background: var(--vscode-inputValidation-warningBackground); border: 1px solid var(--vscode-inputValidation-warningBorder); }
.stats { display: grid; grid-template-columns: repeat(auto-fit, minmax(150px, 1fr)); gap: 10px; margin: 16px 0; }
.stat { display: grid; grid-template-columns: auto 1fr; grid-template-rows: auto auto; column-gap: 8px; padding: 10px 12px; border-radius: 4px; background: var(--vscode-sideBar-background, var(--vscode-editorWidget-background)); border: 1px solid var(--vscode-widget-border, transparent); }
.stat vscode-icon { grid-row: span 2; align-self: center; }
.stat-value { font-size: 1.3em; font-weight: 600; }
.stat-label { color: var(--vscode-descriptionForeground); }
.empty { max-width: 640px; margin: 24px 0; }
.empty h2 { font-size: 1.1em; font-weight: 600; margin: 0 0 6px; }
.empty p { color: var(--vscode-descriptionForeground); line-height: 1.5; }
.actions { display: flex; gap: 8px; margin-top: 14px; }
.footer { display: flex; gap: 16px; align-items: center; margin-top: 24px; font-size: 0.92em; }
.muted { color: var(--vscode-descriptionForeground); }
.error { color: var(--vscode-errorForeground); }
.toggle { color: var(--vscode-textLink-foreground); margin-left: auto; }
.compact .stats { display: none; }
`;
