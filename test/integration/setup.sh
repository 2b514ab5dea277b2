#!/usr/bin/env bash
# Installs what the real-VS-Code integration tests need, idempotently:
#   Debian: chromium (the browser the driver runs), libkrb5-dev (code-server's kerberos addon builds)
#   npm:    Node 24 (code-server needs it) and code-server, into $BATON_TEST_ENV (default .vscode-test/)
# Called by .ci/run and by `npm test`; a second call with everything present returns at once.
set -euo pipefail
# Under `npm run …` (npm test, npm run demo) npm exports npm_config_* and npm_* variables describing the
# *outer* npm: its user agent (with node/v20, which code-server's postinstall reads as the Node version),
# its prefix and its lifecycle event. The nested installs below are separate projects with their own
# Node, so they start from an environment without any of them.
clean_npm_env() {
  local v
  for v in $(compgen -e); do
    case "$v" in npm_*|NPM_CONFIG_*|INIT_CWD|NODE) unset "$v" ;; esac
  done
}
clean_npm_env
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=${BATON_TEST_ENV:-$(cd "$HERE/../.." && pwd)/.vscode-test}
CODE_SERVER_VERSION=${CODE_SERVER_VERSION:-4.139.1}
mkdir -p "$ROOT"

need_apt=()
command -v chromium >/dev/null || need_apt+=(chromium)
[ -e /usr/include/gssapi/gssapi.h ] || need_apt+=(libkrb5-dev)
command -v g++ >/dev/null || need_apt+=(g++)
command -v make >/dev/null || need_apt+=(make)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "setup: apt-get install ${need_apt[*]} (Debian packages; a minute or two)"
  if [ "$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

N24=$(dirname "$(dirname "$(bash "$HERE/../node24.sh")")")
[ -f "$N24/include/node/common.gypi" ] || { echo "setup: node headers missing in $N24" >&2; exit 1; }

CS="$ROOT/cs/node_modules/code-server"
# The marker is written only after a complete install: an interrupted one (native addons half built) is redone.
if [ ! -f "$ROOT/cs/.installed-$CODE_SERVER_VERSION" ]; then
  echo "setup: installing code-server@$CODE_SERVER_VERSION from npm (it builds native addons: 3 to 6 minutes the first time)"
  mkdir -p "$ROOT/cs"
  # code-server's postinstall checks npm's Node major, so install it with Node 24's npm; nodedir points
  # node-gyp at the headers shipped in the node package instead of a download.
  ( cd "$ROOT/cs" && { [ -f package.json ] || npm init -y >/dev/null; } &&
    PATH="$N24/bin:$PATH" npm_config_nodedir="$N24" npm install --no-audit --no-fund --loglevel=error "code-server@$CODE_SERVER_VERSION" )
  [ -f "$CS/out/node/entry.js" ] && [ -d "$CS/lib/vscode/node_modules" ] || { echo "setup: code-server did not install completely" >&2; exit 1; }
  touch "$ROOT/cs/.installed-$CODE_SERVER_VERSION"
fi
echo "setup: ready (node $("$N24/bin/node" -v), code-server $(node -p "require('$CS/package.json').version"), $(chromium --version 2>/dev/null | head -1))"
