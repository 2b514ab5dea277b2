#!/usr/bin/env bash
# Installs the foreign agents some unit tests run as real peers, idempotently, into
# ${BATON_TEST_ENV:-.vscode-test}/peers/<name>/ from the lock files under test/peers/<name>/:
#   gemini-cli   @google/gemini-cli-a2a-server (Gemini CLI's A2A server; about 500 MB, half a minute)
# Nothing here runs at Baton's own install; scripts/test.sh calls it before the unit tests.
# A second call with everything present returns at once.
set -euo pipefail
# Under `npm run …` npm exports npm_* variables describing the outer npm (its prefix, user agent and
# lifecycle event); the installs below are separate projects, so they start from an environment without them.
clean_npm_env() {
  local v
  for v in $(compgen -e); do
    case "$v" in npm_*|NPM_CONFIG_*|INIT_CWD|NODE) unset "$v" ;; esac
  done
}
clean_npm_env
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=${BATON_TEST_ENV:-$(cd "$HERE/../.." && pwd)/.vscode-test}

install_peer() { # name
  local name=$1 src="$HERE/$1" dest="$ROOT/peers/$1"
  local want
  want=$(node -e 'process.stdout.write(require("crypto").createHash("sha256").update(require("fs").readFileSync(process.argv[1])).digest("hex").slice(0, 16))' "$src/package-lock.json")
  # The marker (named after the lock file's content) is written only after a complete install:
  # an interrupted one, or one from another lock file, is redone.
  if [ -f "$dest/.installed-$want" ]; then return 0; fi
  echo "peers: installing $name from test/peers/$name/package-lock.json into $dest (npm ci --ignore-scripts)"
  rm -rf "$dest"
  mkdir -p "$dest"
  cp "$src/package.json" "$src/package-lock.json" "$dest/"
  ( cd "$dest" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error )
  touch "$dest/.installed-$want"
}

install_peer gemini-cli
[ -f "$ROOT/peers/gemini-cli/node_modules/@google/gemini-cli-a2a-server/dist/a2a-server.mjs" ] ||
  { echo "peers: gemini-cli did not install completely (no dist/a2a-server.mjs)" >&2; exit 1; }
echo "peers: ready (gemini-cli-a2a-server $(node -p "require('$ROOT/peers/gemini-cli/node_modules/@google/gemini-cli-a2a-server/package.json').version"))"
