import * as vscode from 'vscode';
import type { AgainPlan } from '../../core/delegation/again';
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
  /** The folder when no file names one (else the first workspace folder). */
  folder?: vscode.WorkspaceFolder;
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
  const folder = uris.length === 0 && opts.folder ? opts.folder : folderOf(uris);
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

/** The workspace folder a delegation's repository root (its sidecar's `folder`) is, or holds. */
export function folderForRoot(root: string | undefined): vscode.WorkspaceFolder | undefined {
  const folders = vscode.workspace.workspaceFolders ?? [];
  if (!root) return folders[0];
  // Windows paths compare without regard to case (a drive letter may be either).
  const norm = (p: string) => {
    const t = p.replace(/[\\/]+$/, '');
    return process.platform === 'win32' ? t.toLowerCase() : t;
  };
  const r = norm(root);
  return (
    folders.find((f) => norm(f.uri.fsPath) === r) ??
    folders.find((f) => norm(f.uri.fsPath).startsWith(`${r}/`) || norm(f.uri.fsPath).startsWith(`${r}\\`))
  );
}

/**
 * The context of Delegate Again (src/core/delegation/again.ts): the same files and selection read as
 * they are now, the diagnostics as they were. `missing` lists what is no longer there (left out).
 */
export async function collectAgainContext(
  plan: AgainPlan,
  folder: vscode.WorkspaceFolder,
): Promise<{ context: CollectedContext; missing: string[] }> {
  const missing: string[] = [];
  const exists = async (uri: vscode.Uri): Promise<boolean> => {
    try {
      await vscode.workspace.fs.stat(uri);
      return true;
    } catch {
      return false;
    }
  };
  const at = (path: string) => vscode.Uri.joinPath(folder.uri, ...path.replace(/\/$/, '').split('/'));
  const files: vscode.Uri[] = [];
  for (const path of plan.files) {
    if (await exists(at(path))) files.push(at(path));
    else missing.push(path);
  }
  const context = await collectContext({ files, folder });
  let selection: SelectionContext | undefined;
  const sel = plan.selection;
  if (sel && (await exists(at(sel.path)))) {
    const doc = await vscode.workspace.openTextDocument(at(sel.path));
    const range = doc.validateRange(
      new vscode.Range(sel.range.startLine, sel.range.startCharacter, sel.range.endLine, sel.range.endCharacter),
    );
    if (!range.isEmpty)
      selection = { path: sel.path, range: toRange(range), text: doc.getText(range), languageId: doc.languageId };
    else missing.push(sel.path);
  } else if (sel) missing.push(sel.path);
  return { context: { ...context, selection, diagnostics: [...plan.diagnostics] }, missing };
}
