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
a:not([href]) { color: inherit; text-decoration: none; cursor: text; }
#connecting { opacity: 0; animation: baton-appear 0s linear 400ms forwards; }
@keyframes baton-appear { to { opacity: 1; } }
code.url { word-break: normal; overflow-wrap: break-word; white-space: normal; }
.error { color: var(--vscode-errorForeground); }
.toggle { color: var(--vscode-textLink-foreground); margin-left: auto; }
.compact .stats { display: none; }
`;

export const delegationStyles = `
.tool-calls ol { list-style: none; padding: 0; margin: 0; display: flex; flex-direction: column; gap: 10px; }
.tool-call { padding: 8px 12px; border-radius: 4px; border: 1px solid var(--vscode-widget-border, var(--vscode-panel-border, transparent)); background: var(--vscode-sideBar-background, var(--vscode-editorWidget-background)); }
.tool-call.waiting { border-color: var(--vscode-editorWarning-foreground); }
.tool-head { display: flex; align-items: center; gap: 6px; }
.tool-status { color: var(--vscode-descriptionForeground); }
.tool-call.waiting .tool-status { color: var(--vscode-editorWarning-foreground); font-weight: 600; }
.tool-diff, .tool-command { font-family: var(--vscode-editor-font-family); font-size: var(--vscode-editor-font-size, 0.92em); margin: 8px 0 0; padding: 6px 8px; overflow-x: auto; background: var(--vscode-textCodeBlock-background); border-radius: 3px; }
.tool-diff span { display: block; white-space: pre; min-height: 1.2em; }
.tool-diff .add { color: var(--vscode-gitDecoration-addedResourceForeground, #388a34); }
.tool-diff .del { color: var(--vscode-gitDecoration-deletedResourceForeground, #c74e39); }
.tool-diff .hunk { color: var(--vscode-textLink-foreground); }
.tool-diff .meta { color: var(--vscode-descriptionForeground); }
.tool-args { display: grid; grid-template-columns: max-content 1fr; gap: 2px 12px; margin: 8px 0 0; }
.tool-args dt { color: var(--vscode-descriptionForeground); }
.tool-args dd { margin: 0; overflow-wrap: anywhere; }
.title { min-width: 0; }
.title h1 { white-space: nowrap; overflow: hidden; text-overflow: ellipsis; max-width: 70vw; }
.endpoint { font-family: var(--vscode-editor-font-family); font-size: 0.92em; }
.state { display: inline-flex; align-items: center; gap: 6px; padding: 3px 10px; border-radius: 11px; font-weight: 600; white-space: nowrap; border: 1px solid currentColor; }
.state.running { color: var(--vscode-progressBar-background); }
.state.ok { color: var(--vscode-testing-iconPassed, #388a34); }
.state.bad { color: var(--vscode-errorForeground); }
.state.warn { color: var(--vscode-editorWarning-foreground); }
.state.muted { color: var(--vscode-descriptionForeground); }
.facts { display: grid; grid-template-columns: repeat(auto-fit, minmax(210px, 1fr)); gap: 6px 18px; margin: 12px 0; }
.facts > div { display: flex; flex-direction: column; gap: 2px; }
/* A long line (the signed result names its key and signer): the whole row, not one narrow column. */
.facts > .wide { grid-column: 1 / -1; }
.facts .k { font-size: 0.85em; text-transform: uppercase; letter-spacing: 0.04em; color: var(--vscode-descriptionForeground); }
.chip { display: inline-block; padding: 0 7px; margin-right: 4px; border-radius: 9px; font-size: 0.9em; background: var(--vscode-badge-background); color: var(--vscode-badge-foreground); }
.chip.warn { background: var(--vscode-inputValidation-warningBackground); color: var(--vscode-foreground); border: 1px solid var(--vscode-inputValidation-warningBorder); }
.banner.bad { background: var(--vscode-inputValidation-errorBackground); border: 1px solid var(--vscode-inputValidation-errorBorder); }
.banner.warn { background: var(--vscode-inputValidation-warningBackground); border: 1px solid var(--vscode-inputValidation-warningBorder); }
.banner > div { flex: 1; }
.banner > .banner-actions { flex: none; display: flex; gap: 6px; }
.toolbar { align-items: center; margin: 12px 0; }
.add { color: var(--vscode-gitDecoration-addedResourceForeground); }
.del { color: var(--vscode-gitDecoration-deletedResourceForeground); }
h2 { font-size: 1em; font-weight: 600; margin: 14px 0 6px; }
.timeline { list-style: none; padding: 0; margin: 0; }
.entry { display: grid; grid-template-columns: 20px 80px minmax(0, 1fr); gap: 8px; padding: 5px 0; border-bottom: 1px solid var(--vscode-editorWidget-border, transparent); align-items: start; }
.entry time { color: var(--vscode-descriptionForeground); font-variant-numeric: tabular-nums; }
.entry.error .text { color: var(--vscode-errorForeground); }
.entry .md > :first-child { margin-top: 0; } .entry .md > :last-child { margin-bottom: 0; }
.entry .text, .reply .text { white-space: pre-wrap; }
.data-part { font-family: var(--vscode-editor-font-family, monospace); font-size: 0.95em; margin-top: 4px; }
.data-part summary { cursor: pointer; }
.data-children { padding-left: 14px; border-left: 1px solid var(--vscode-editorWidget-border, transparent); }
.data-key { color: var(--vscode-symbolIcon-propertyForeground, inherit); }
.data-string { color: var(--vscode-debugTokenExpression-string, inherit); word-break: break-all; }
.data-string-full { white-space: pre-wrap; word-break: break-all; margin: 2px 0 2px 14px; }
.patches ul { list-style: none; padding: 0; margin: 4px 0; }
.patch-choice { display: flex; align-items: center; gap: 8px; padding: 2px 0; }
.md, .text { overflow-wrap: anywhere; max-height: 60vh; overflow: auto; }
.render-note { font-size: 0.9em; font-style: italic; margin-top: 2px; }
.md pre { background: var(--vscode-textCodeBlock-background); padding: 8px; overflow: auto; }
.md code { font-family: var(--vscode-editor-font-family); }
.reply { margin: 12px 0; padding: 10px 12px; border: 1px solid var(--vscode-focusBorder); border-radius: 4px; }
.reply h3 { margin: 0 0 6px; font-size: 1em; display: flex; gap: 6px; align-items: center; }
.reply vscode-textarea { width: 100%; }
.sig.verified { color: var(--vscode-testing-iconPassed, #388a34); }
.sig.invalid { color: var(--vscode-errorForeground); }
.artifacts { list-style: none; padding: 0; }
.artifacts li { padding: 3px 0; display: flex; gap: 6px; align-items: center; }
.children { list-style: none; padding: 0; }
.children li { padding: 3px 0; display: flex; gap: 6px; align-items: center; flex-wrap: wrap; }
`;

export const reviewStyles = `
.review { margin: 10px 0 16px; }
.review .ok { color: var(--vscode-testing-iconPassed, #388a34); display: flex; gap: 6px; align-items: center; }
.refusals { margin: 10px 0; padding: 8px 12px; border-left: 3px solid var(--vscode-errorForeground); background: var(--vscode-inputValidation-errorBackground, transparent); }
.refusals h3 { margin: 0 0 4px; font-size: 1em; display: flex; gap: 6px; align-items: center; }
.refusals ul { margin: 4px 0; padding-left: 18px; }
.files { list-style: none; padding: 0; margin: 8px 0; border: 1px solid var(--vscode-widget-border, var(--vscode-panel-border, transparent)); border-radius: 4px; }
.file { padding: 6px 10px; border-bottom: 1px solid var(--vscode-widget-border, transparent); }
.file:last-child { border-bottom: none; }
.file.none .path { opacity: 0.65; }
.file-row { display: flex; gap: 8px; align-items: center; }
.file-row .path { color: var(--vscode-textLink-foreground); font-family: var(--vscode-editor-font-family); text-decoration: none; }
.status-letter { font-weight: 700; width: 14px; text-align: center; }
.status-letter.added { color: var(--vscode-gitDecoration-addedResourceForeground); }
.status-letter.deleted { color: var(--vscode-gitDecoration-deletedResourceForeground); }
.status-letter.modified { color: var(--vscode-gitDecoration-modifiedResourceForeground); }
.status-letter.renamed { color: var(--vscode-gitDecoration-renamedResourceForeground); }
.chip.bad { background: var(--vscode-inputValidation-errorBackground); color: var(--vscode-foreground); border: 1px solid var(--vscode-inputValidation-errorBorder); }
.chip.ok { background: transparent; color: var(--vscode-testing-iconPassed, #388a34); border: 1px solid var(--vscode-testing-iconPassed, #388a34); }
.file.applied .path, .hunks li.applied code { opacity: 0.75; }
.select-bar { display: flex; gap: 8px; align-items: center; margin: 8px 0 0; }
.risks, .hunks { list-style: none; margin: 4px 0 0 30px; padding: 0; }
.risk { display: flex; gap: 6px; align-items: center; padding: 2px 0; }
.risk.refuse:not(.allowed) { color: var(--vscode-errorForeground); }
.risk.flag { color: var(--vscode-editorWarning-foreground); }
.hunks li { display: flex; gap: 8px; align-items: center; padding: 1px 0; }
.hunks code { color: var(--vscode-descriptionForeground); }
`;

export const agentStyles = `
.description { color: var(--vscode-foreground); line-height: 1.5; max-width: 820px; }
ul.plain { list-style: none; padding: 0; margin: 4px 0 10px; }
ul.plain li { padding: 3px 0; }
.changes table { border-collapse: collapse; width: 100%; margin: 6px 0; }
.changes th, .changes td { text-align: left; padding: 4px 8px; border-bottom: 1px solid var(--vscode-widget-border, transparent); vertical-align: top; }
.changes tr.added td:last-child { color: var(--vscode-gitDecoration-addedResourceForeground); }
.changes tr.removed td:nth-child(2) { color: var(--vscode-gitDecoration-deletedResourceForeground); }
.changes tr.changed td:last-child { color: var(--vscode-gitDecoration-modifiedResourceForeground); }
.approve-bar { margin-top: 18px; padding-top: 12px; border-top: 1px solid var(--vscode-widget-border, transparent); align-items: center; flex-wrap: wrap; }
`;
