import * as vscode from 'vscode';
import { Disposable } from '../lifecycle';

/** The Agents view. Empty until agents can be added; its welcome content then offers *Add Agent*. */
export class AgentsViewProvider extends Disposable implements vscode.TreeDataProvider<vscode.TreeItem> {
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
