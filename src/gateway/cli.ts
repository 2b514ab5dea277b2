/**
 * `baton-gateway`: the A2A server that fronts Baton's local agents and proxies remote ones.
 */
import { parseArgs } from 'node:util';

const VERSION = '0.1.0';

function main(argv: string[]): number {
  const { values } = parseArgs({
    args: argv,
    options: { help: { type: 'boolean', short: 'h' }, version: { type: 'boolean', short: 'v' } },
    allowPositionals: true,
    strict: false,
  });
  if (values.version) {
    process.stdout.write(`baton-gateway ${VERSION}\n`);
    return 0;
  }
  process.stdout.write('usage: baton-gateway [--help] [--version]\n');
  return values.help ? 0 : 2;
}

process.exitCode = main(process.argv.slice(2));
