import * as vscode from 'vscode';
import { Disposable } from '../lifecycle';

/** The Delegations view. Empty until a delegation starts; its welcome content then offers *Delegate…*. */
export class DelegationsViewProvider extends Disposable implements vscode.TreeDataProvider<vscode.TreeItem> {
  private readonly _onDidChangeTreeData = this._register(new vscode.EventEmitter<void>());
  readonly onDidChangeTreeData = this._onDidChangeTreeData.event;

  get count(): number {
    return 0;
  }

  getTreeItem(element: vscode.TreeItem): vscode.TreeItem {
    return element;
  }

  getChildren(): vscode.TreeItem[] {
    return [];
  }
}
