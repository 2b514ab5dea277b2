/**
 * How to start an executable without a shell. Only Windows batch scripts (`.cmd`, `.bat`: what npm
 * installs for a CLI) need care: Node refuses to spawn them without a shell, and through cmd.exe an
 * argument is parsed three times (by cmd.exe, again where the script expands `%*`, then by the
 * program it calls), with `%VAR%` expanded even inside quotes. No escaping is right for all three,
 * so text that may come from a task (Copilot takes its prompt as an argument) never goes through
 * cmd.exe:
 * - an npm shim is unwrapped: it names the Node script it runs, which is started with node directly
 *   (no shell at all, the arguments reach the script byte for byte);
 * - any other batch script runs through cmd.exe only when every argument is made of characters that
 *   mean nothing to cmd.exe; otherwise the run is refused with what to do instead.
 */
import type { Host } from '../harness/host';
import { isWindows } from '../harness/host';
import { envValue, findExecutable } from '../harness/resolveExecutable';

export type LaunchPlan =
  | {
      readonly ok: true;
      readonly command: string;
      readonly args: readonly string[];
      /** The command line is already quoted for cmd.exe (Node must pass it as is). */
      readonly verbatim?: boolean;
      /** How it is started, in words, when that is not the executable itself. */
      readonly via?: string;
    }
  | { readonly ok: false; readonly reason: string };

/** Characters with no meaning to cmd.exe or a batch script's `%*`, even unquoted (space is quoted). */
const CMD_SAFE_ARG = /^[A-Za-z0-9_\-.,:=/\\+@ ]*$/;
/** A script path is quoted; inside quotes only these still mean something to cmd.exe. */
const CMD_UNSAFE_PATH = /["%!^\r\n]/;

export function planLaunch(command: string, args: readonly string[], host: Host): LaunchPlan {
  if (!isWindows(host) || !/\.(cmd|bat)$/i.test(command)) return { ok: true, command, args };
  const script = npmShimScript(command, host);
  if (script) {
    const node = nodeFor(command, host);
    if (node) return { ok: true, command: node, args: [script, ...args], via: `${node} ${script}` };
  }
  const name = host.path.basename(command);
  const unsafe = args.find((a) => !cmdSafe(a));
  if (unsafe !== undefined || CMD_UNSAFE_PATH.test(command))
    return {
      ok: false,
      reason:
        `${name} is a batch script that is not an npm shim, and cmd.exe would interpret its arguments ` +
        `(${unsafe === undefined ? 'its own path' : 'one of them holds the task text or a path'} has characters cmd.exe treats specially). ` +
        'Set baton.cliPaths to the CLI’s .exe, or install the CLI with npm so Baton can start its script with node directly',
    };
  const comspec = envValue(host.env, 'ComSpec', true) || 'cmd.exe';
  // /d: no AutoRun commands; /s: strip only the outer quotes, keep the rest of the line as written.
  const line = [command, ...args].map(cmdQuote).join(' ');
  return {
    ok: true,
    command: comspec,
    args: ['/d', '/s', '/c', `"${line}"`],
    verbatim: true,
    via: `cmd.exe /c ${name}`,
  };
}

function cmdSafe(arg: string): boolean {
  // A trailing backslash would escape the closing quote for the program's own parser.
  return CMD_SAFE_ARG.test(arg) && !arg.endsWith('\\');
}

function cmdQuote(arg: string): string {
  return arg === '' || /[ ()]/.test(arg) ? `"${arg}"` : arg;
}

/**
 * The Node script an npm `.cmd` shim runs (npm's cmd-shim writes `"%_prog%" "%dp0%\…\cli.js" %*`,
 * older npm `"%~dp0\node.exe" "%~dp0\…\cli.js" %*`), when the shim runs node on a script that exists.
 */
export function npmShimScript(shim: string, host: Host): string | undefined {
  const text = host.readText(shim);
  if (text === undefined || !/\bnode(\.exe)?\b/i.test(text)) return undefined;
  const m = /(?:"%_prog%"|"%~dp0\\node\.exe"|\bnode)\s+"%(?:~dp0|dp0%)\\?([^"%\r\n]+?\.[cm]?js)"\s+%\*/i.exec(text);
  if (!m) return undefined;
  const script = host.path.resolve(host.path.dirname(shim), m[1]);
  return host.isExecutableFile(script) ? script : undefined;
}

/** The node the shim itself would use: node.exe beside it, else node on PATH. */
function nodeFor(shim: string, host: Host): string | undefined {
  const beside = host.path.join(host.path.dirname(shim), 'node.exe');
  return host.isExecutableFile(beside) ? beside : findExecutable('node', host);
}
