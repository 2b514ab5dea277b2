/**
 * Why a part of a patch is refused or flagged, as data (a code and what it names) and as a sentence
 * made where it is shown: the review in the editor says it in the user's language, logs and the CLI
 * in English (`riskReasonText(m, english)`, the `reason` of a risk item).
 */
import type { Translate } from '../protocol/l10n';

export type RiskMessage =
  | {
      readonly code:
        | 'empty-path'
        | 'control-characters'
        | 'absolute'
        | 'traversal'
        | 'empty-segments'
        | 'git-dir'
        | 'ci-workflow'
        | 'no-path'
        | 'symlink'
        | 'submodule'
        | 'new-executable'
        | 'made-executable'
        | 'binary'
        | 'package-scripts-maybe';
    }
  /** A folder (as folded: `.vscode`) the path is under, or that the path replaces. */
  | { readonly code: SensitiveFolder | 'hook-folder' | 'replaces-folder'; readonly folder: string }
  /** A file name (as folded: `.gitattributes`). */
  | { readonly code: SensitiveName | 'hook-config'; readonly name: string }
  | { readonly code: 'odd-mode'; readonly mode: string }
  /** A Windows device name (`NUL`, `COM1`, …) the path uses. */
  | { readonly code: 'device-name'; readonly device: string }
  | { readonly code: 'package-scripts'; readonly scripts: readonly string[] };

/** Folders whose files can run code or change how the repository behaves, by what they do. */
export type SensitiveFolder = 'editor-folder' | 'devcontainer-folder';
/** Files that can, by what they do. */
export type SensitiveName = 'git-attributes' | 'git-modules' | 'direnv' | 'devcontainer-file';

/** One sentence (lower-case start: it follows the path, as in "x — the path is absolute…"). */
export function riskReasonText(m: RiskMessage, t: Translate): string {
  switch (m.code) {
    case 'empty-path':
      return t('the patch names an empty path');
    case 'control-characters':
      return t('the path contains control characters');
    case 'absolute':
      return t('the path is absolute: it would write outside the repository');
    case 'traversal':
      return t("the path contains '..': it would write outside the repository");
    case 'empty-segments':
      return t("the path has empty or '.' segments");
    case 'device-name':
      return t('the path uses {0}, a device name on Windows: there it would reach the device, not a file', m.device);
    case 'git-dir':
      return t("the path is inside git's own folder (.git): it could install hooks or change configuration");
    case 'ci-workflow':
      return t("the path is a CI workflow or action: it runs with the repository's secrets");
    case 'editor-folder':
      return t(
        'the path is under {0}/, which holds editor tasks, launch configurations and settings that can run code',
        m.folder,
      );
    case 'devcontainer-folder':
      return t('the path is under {0}/, which configures a dev container that runs code on open', m.folder);
    case 'hook-folder':
      return t('the path is under {0}/, a git hook folder: it runs on commit or push', m.folder);
    case 'replaces-folder':
      return t('the path replaces the {0} folder', m.folder);
    case 'git-attributes':
      return t('{0} can change how git filters, diffs and checks out files', m.name);
    case 'git-modules':
      return t('{0} can point submodules at other repositories', m.name);
    case 'direnv':
      return t('{0} is run by direnv when you enter the folder', m.name);
    case 'devcontainer-file':
      return t('{0} configures a dev container that runs code on open', m.name);
    case 'hook-config':
      return t('{0} configures git hooks that run on commit or push', m.name);
    case 'no-path':
      return t('the patch names no path for this file');
    case 'symlink':
      return t('the change creates or edits a symbolic link, which can point outside the repository');
    case 'submodule':
      return t('the change adds or moves a submodule (another repository)');
    case 'odd-mode':
      return t('the file mode {0} is not a regular file mode', m.mode);
    case 'new-executable':
      return t('the new file is executable');
    case 'made-executable':
      return t('the change makes the file executable');
    case 'binary':
      return t('binary changes cannot be reviewed as text');
    case 'package-scripts':
      return t('the change edits package.json scripts ({0}), which npm runs', m.scripts.join(', '));
    case 'package-scripts-maybe':
      return t('the change may edit package.json scripts, which npm runs');
  }
}
