import * as vscode from 'vscode';
import type { DiagnosticContext, FileContext, SelectionContext, TextRange } from '../../core/delegation/context';

/**
 * Explicit context only: what the user chose — the selection, the files, the diagnostics — and nothing
 * else. Paths are relative to the workspace folder's repository root.
 */
export interface CollectedContext {
  readonly folder: vscode.WorkspaceFolder | undefined;
  readonly selection?: SelectionContext;
  readonly files: FileContext[];
  readonly diagnostics: DiagnosticContext[];
  /** Files the user has open with unsaved changes: the agent's copy has the saved version. */
  readonly unsaved: string[];
}

/** The most Baton sends of one file; a larger file is refused with a message rather than truncated silently. */
export const MAX_CONTEXT_FILE_BYTES = 512 * 1024;

export function toRange(r: vscode.Range): TextRange {
  return {
    startLine: r.start.line,
    startCharacter: r.start.character,
    endLine: r.end.line,
    endCharacter: r.end.character,
  };
}

const SEVERITY: Record<vscode.DiagnosticSeverity, DiagnosticContext['severity']> = {
  [vscode.DiagnosticSeverity.Error]: 'error',
  [vscode.DiagnosticSeverity.Warning]: 'warning',
  [vscode.DiagnosticSeverity.Information]: 'information',
  [vscode.DiagnosticSeverity.Hint]: 'hint',
};

function relPath(folder: vscode.WorkspaceFolder, uri: vscode.Uri): string {
  return vscode.workspace
    .asRelativePath(uri, false)
    .split('\\')
    .join('/')
    .replace(new RegExp(`^${folder.name}/`), '');
}

function folderOf(uris: readonly vscode.Uri[]): vscode.WorkspaceFolder | undefined {
  const folders = new Set(uris.map((u) => vscode.workspace.getWorkspaceFolder(u)));
  if (folders.size > 1)
    throw new Error(
      vscode.l10n.t('The chosen files are in different workspace folders: delegate one folder at a time.'),
    );
  return [...folders][0] ?? vscode.workspace.workspaceFolders?.[0];
}

/** A file on disk inside one of the open workspace folders: the only files whose text Baton sends. */
export function isWorkspaceFile(uri: vscode.Uri): boolean {
  return uri.scheme === 'file' && vscode.workspace.getWorkspaceFolder(uri) !== undefined;
}

export function diagnosticContext(
  folder: vscode.WorkspaceFolder,
  uri: vscode.Uri,
  d: vscode.Diagnostic,
): DiagnosticContext {
  const code = typeof d.code === 'object' ? String(d.code.value) : d.code === undefined ? undefined : String(d.code);
  return {
    path: relPath(folder, uri),
    range: toRange(d.range),
    severity: SEVERITY[d.severity],
    message: d.message,
    source: d.source,
    code,
  };
}

export async function collectContext(opts: {
  editor?: vscode.TextEditor;
  useSelection?: boolean;
  files?: readonly vscode.Uri[];
  diagnostics?: readonly { uri: vscode.Uri; diagnostic: vscode.Diagnostic }[];
}): Promise<CollectedContext> {
  if (opts.useSelection && opts.editor && !isWorkspaceFile(opts.editor.document.uri)) {
    // Baton's own files (the audit log), output panes and files outside the open folders never travel.
    throw new Error(
      vscode.l10n.t(
        'Delegate Selection works on a file of the open folder, and {0} is not one. Select text in a file of this workspace first.',
        opts.editor.document.uri.scheme === 'file'
          ? vscode.workspace.asRelativePath(opts.editor.document.uri)
          : opts.editor.document.uri.scheme,
      ),
    );
  }
  const uris = [
    ...(opts.files ?? []),
    ...(opts.useSelection && opts.editor ? [opts.editor.document.uri] : []),
    ...(opts.diagnostics ?? []).map((d) => d.uri),
  ];
  const folder = folderOf(uris);
  const unsaved = folder
    ? vscode.workspace.textDocuments
        .filter((d) => d.isDirty && vscode.workspace.getWorkspaceFolder(d.uri) === folder)
        .map((d) => relPath(folder, d.uri))
    : [];
  let selection: SelectionContext | undefined;
  if (opts.useSelection && opts.editor && folder) {
    const sel = opts.editor.selection;
    const range = sel.isEmpty ? opts.editor.document.lineAt(sel.active.line).range : sel;
    selection = {
      path: relPath(folder, opts.editor.document.uri),
      range: toRange(range),
      text: opts.editor.document.getText(range),
      languageId: opts.editor.document.languageId,
    };
  }
  const files: FileContext[] = [];
  for (const uri of opts.files ?? []) {
    if (!folder) break;
    const stat = await vscode.workspace.fs.stat(uri);
    if (stat.type & vscode.FileType.Directory) {
      // A folder travels as its name: the agent works in a copy of the repository and can read it there.
      files.push({ path: relPath(folder, uri) + '/', text: '' });
      continue;
    }
    if (stat.size > MAX_CONTEXT_FILE_BYTES) {
      throw new Error(
        vscode.l10n.t(
          '{0} is {1} KB, more than Baton sends as context ({2} KB). Name it in the task instead: the agent can read it in its copy.',
          relPath(folder, uri),
          Math.round(stat.size / 1024),
          MAX_CONTEXT_FILE_BYTES / 1024,
        ),
      );
    }
    const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString());
    const text = doc ? doc.getText() : new TextDecoder().decode(await vscode.workspace.fs.readFile(uri));
    files.push({ path: relPath(folder, uri), text, languageId: doc?.languageId });
  }
  const diagnostics = folder ? (opts.diagnostics ?? []).map((d) => diagnosticContext(folder, d.uri, d.diagnostic)) : [];
  return { folder, selection, files, diagnostics, unsaved };
}

export function summarizeContext(c: CollectedContext): string {
  const parts: string[] = [];
  if (c.selection)
    parts.push(
      vscode.l10n.t(
        'selection in {0} (lines {1}–{2})',
        c.selection.path,
        c.selection.range.startLine + 1,
        c.selection.range.endLine + 1,
      ),
    );
  if (c.files.length) parts.push(c.files.length === 1 ? c.files[0].path : vscode.l10n.t('{0} files', c.files.length));
  if (c.diagnostics.length) parts.push(vscode.l10n.t('{0} problem(s)', c.diagnostics.length));
  return parts.join(', ');
}
