// Loaded by VS Code's extension host as `extensionTestsPath`: runs the mocha files of the phase the
// driver chose (it writes $BATON_TEST_CONTROL/phase.json before each workbench load) and resolves or
// rejects with the result. Counts are printed as one machine-readable line for the driver.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Mocha from 'mocha';
import * as vscode from 'vscode';
import { driver } from './util';

interface Phase {
  readonly name: string;
  readonly files: readonly string[];
  /** Ask the driver to reload the workbench once the tests passed, while Baton still runs. */
  readonly reloadAfter?: boolean;
  /** Several windows at once: this window runs the files of the entry for its folder. */
  readonly windows?: readonly { readonly role: string; readonly folder: string; readonly files: readonly string[] }[];
}

function readPhase(): Phase {
  const dir = process.env.BATON_TEST_CONTROL;
  if (!dir) throw new Error('BATON_TEST_CONTROL is not set: run the integration tests through test/integration/run.sh');
  return JSON.parse(readFileSync(join(dir, 'phase.json'), 'utf8')) as Phase;
}

export function run(): Promise<void> {
  const phase = readPhase();
  const mocha = new Mocha({ ui: 'bdd', color: false, timeout: 60_000, reporter: 'spec' });
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  const window = phase.windows?.find((w) => w.folder === folder);
  if (phase.windows && !window)
    throw new Error(`phase ${phase.name} has no window for the folder ${folder ?? '(none)'}`);
  if (window) process.env.BATON_WINDOW_ROLE = window.role;
  for (const f of window?.files ?? phase.files) mocha.addFile(join(__dirname, f));
  return new Promise<void>((resolve, reject) => {
    const runner = mocha.run((failures) => {
      const s = runner.stats;
      console.log(
        `BATON:MOCHA ${JSON.stringify({ phase: phase.name, passes: s?.passes ?? 0, failures: s?.failures ?? 0, pending: s?.pending ?? 0 })}`,
      );
      if (failures > 0) reject(new Error(`${failures} integration test(s) failed in phase ${phase.name}`));
      // Reload while the extension host is alive: a workbench that saves its state after Baton stopped
      // has no serializer for Baton's panels and drops them; a user's reload never looks like that.
      else if (phase.reloadAfter) void driver('reload');
      else resolve();
    });
  });
}
