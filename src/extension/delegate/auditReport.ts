import * as vscode from 'vscode';
import { formatAuditReport } from '../../node/auditReport';
import type { AuditRecord } from '../../node/journalStore';

/** The audit log's reading form: a read-only document, built anew each time it is opened. */
export const AUDIT_URI = vscode.Uri.from({ scheme: 'baton-audit', path: '/Baton audit log' });

export class AuditReportProvider implements vscode.TextDocumentContentProvider {
  private readonly _onDidChange = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this._onDidChange.event;

  constructor(
    private readonly read: () => Promise<AuditRecord[]>,
    private readonly file: string,
  ) {}

  changed(uri: vscode.Uri): void {
    this._onDidChange.fire(uri);
  }

  async provideTextDocumentContent(): Promise<string> {
    return formatAuditReport(await this.read(), this.file);
  }

  dispose(): void {
    this._onDidChange.dispose();
  }
}
