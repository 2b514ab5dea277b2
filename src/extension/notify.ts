import * as vscode from 'vscode';
import { notificationText } from '../core/notificationText';

/**
 * Baton's notifications, the one way the extension shows one (ESLint refuses `vscode.window.show*Message`
 * elsewhere): every text goes through `notificationText`, so what an agent wrote in it is never a link.
 */
type Items<T> = [options: vscode.MessageOptions, ...items: T[]] | T[];

function shown<T>(
  show: (message: string, ...rest: Items<T>) => Thenable<T | undefined>,
  text: string,
  rest: Items<T>,
): Thenable<T | undefined> {
  return show(notificationText(text), ...rest);
}

export function showInfo<T extends string | vscode.MessageItem>(
  text: string,
  ...rest: Items<T>
): Thenable<T | undefined> {
  // eslint-disable-next-line no-restricted-properties -- the one place notifications are shown
  return shown<T>(vscode.window.showInformationMessage, text, rest);
}

export function showWarning<T extends string | vscode.MessageItem>(
  text: string,
  ...rest: Items<T>
): Thenable<T | undefined> {
  // eslint-disable-next-line no-restricted-properties -- the one place notifications are shown
  return shown<T>(vscode.window.showWarningMessage, text, rest);
}

export function showError<T extends string | vscode.MessageItem>(
  text: string,
  ...rest: Items<T>
): Thenable<T | undefined> {
  // eslint-disable-next-line no-restricted-properties -- the one place notifications are shown
  return shown<T>(vscode.window.showErrorMessage, text, rest);
}
