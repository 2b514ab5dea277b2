/**
 * Puts the `baton` CLI on the PATH of VS Code's integrated terminals (setting `baton.terminalCli`), so
 * that someone who installed the `.vsix` can type `baton agents` or `baton delegate …` there, against
 * the local gateway this window uses. Terminals opened before the change show VS Code's "relaunch"
 * hint, as for any extension that contributes to the terminal's environment.
 */
import { delimiter, join } from 'node:path';
import * as vscode from 'vscode';
import { writeCliLaunchers } from '../node/cliShim';

export function registerTerminalCli(
  context: vscode.ExtensionContext,
  gatewayStateDir: string,
  log: vscode.LogOutputChannel,
): vscode.Disposable {
  const apply = (): void => {
    const env = context.environmentVariableCollection;
    env.clear();
    if (!vscode.workspace.getConfiguration('baton').get<boolean>('terminalCli', true)) return;
    try {
      const dir = writeCliLaunchers(
        join(context.globalStorageUri.fsPath, 'bin'),
        process.execPath,
        vscode.Uri.joinPath(context.extensionUri, 'dist', 'baton.js').fsPath,
      );
      env.description = vscode.l10n.t('Puts the baton command on PATH, for the local gateway this window uses.');
      env.prepend('PATH', dir + delimiter);
      // The CLI finds this window's local gateway through its state folder, unless the user chose one.
      if (!process.env.BATON_STATE_DIR) env.replace('BATON_STATE_DIR', gatewayStateDir);
    } catch (e) {
      log.warn(`terminal: could not put baton on PATH: ${e instanceof Error ? e.message : String(e)}`);
    }
  };
  apply();
  return vscode.workspace.onDidChangeConfiguration((e) => {
    if (e.affectsConfiguration('baton.terminalCli')) apply();
  });
}
