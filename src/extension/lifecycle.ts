import type * as vscode from 'vscode';

/**
 * Owns disposables. Anything registered after `dispose()` is disposed at once, so a late listener
 * (registered from an async callback that finished after teardown) never outlives its owner.
 */
export class Disposable implements vscode.Disposable {
  private readonly _toDispose = new Set<vscode.Disposable>();
  private _isDisposed = false;

  get isDisposed(): boolean {
    return this._isDisposed;
  }

  dispose(): void {
    if (this._isDisposed) return;
    this._isDisposed = true;
    const errors: unknown[] = [];
    for (const d of this._toDispose) {
      try {
        d.dispose();
      } catch (e) {
        errors.push(e);
      }
    }
    this._toDispose.clear();
    if (errors.length === 1) throw errors[0];
    if (errors.length > 1) throw new AggregateError(errors, 'several disposables failed');
  }

  protected _register<T extends vscode.Disposable>(value: T): T {
    if (this._isDisposed) {
      value.dispose();
    } else {
      this._toDispose.add(value);
    }
    return value;
  }
}
