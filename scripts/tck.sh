#!/usr/bin/env bash
# Runs the A2A conformance kit (a2a-tck, https://github.com/a2aproject/a2a-tck) against baton-gateway
# (docs/conformance.md). Three routes are tested, each over JSON-RPC and HTTP+JSON, in the categories
# mandatory, capabilities, quality and features, and transport-equivalence once across both:
#   direct     the SDK echo agent (scripts/tck/echoAgent.ts) on its own, no gateway: the baseline
#   echo       the gateway's proxy route to that agent, /a2a/echo
#   formatter  the gateway's built-in formatter agent, /a2a/formatter
# Every route, the direct one too, is reached through scripts/tck/proxy.ts, which works around three
# things the kit's client does (docs/conformance.md, "Why a proxy"). Each run
# writes <label>.xml (JUnit) and <label>.txt (pytest's output) and prints one summary line.
#
#   bash scripts/tck.sh <a2a-tck checkout>        (or BATON_TCK_DIR=<checkout> bash scripts/tck.sh)
#
#   BATON_TCK_VENV=DIR        the kit's Python venv (default <checkout>/.venv; made when missing)
#   BATON_TCK_OUT=DIR         where results go (default test-results/tck)
#   BATON_TCK_ROUTES="direct echo formatter"   BATON_TCK_TRANSPORTS="jsonrpc rest"
#   BATON_TCK_CATEGORIES="mandatory capabilities quality features transport-equivalence"
#   BATON_TCK_AGENT=working   the agent behind the direct and echo routes leaves each task working, as the
#                             kit's own agent does (default echo: it completes each task)
#   TCK_STREAMING_TIMEOUT=2   the kit's own streaming timeout (seconds)
# Builds nothing: run `npm run build` first. Exits non-zero only when it could not run the kit (failed
# conformance tests are results, not errors).
set -uo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
die() { echo "tck: $*" >&2; exit 2; }

tck=${1:-${BATON_TCK_DIR:-}}
[ -n "$tck" ] || die "give the path of an a2a-tck checkout (argument or BATON_TCK_DIR)"
tck=$(cd "$tck" 2>/dev/null && pwd) || die "no such folder: ${1:-$BATON_TCK_DIR}"
[ -d "$tck/tests/mandatory" ] && [ -f "$tck/requirements.txt" ] || die "$tck is not an a2a-tck checkout (no tests/mandatory, requirements.txt)"
[ -f dist/gateway.js ] || die "dist/gateway.js is missing: run \`npm run build\` first"
[ -d node_modules/@a2a-js/sdk ] || die "node_modules is missing: run \`npm ci\` first"
venv=${BATON_TCK_VENV:-$tck/.venv}
out=${BATON_TCK_OUT:-$repo/test-results/tck}
routes=${BATON_TCK_ROUTES:-direct echo formatter}
transports=${BATON_TCK_TRANSPORTS:-jsonrpc rest}
categories=${BATON_TCK_CATEGORIES:-mandatory capabilities quality features transport-equivalence}
export TCK_STREAMING_TIMEOUT=${TCK_STREAMING_TIMEOUT:-2.0}

# The kit's Python packages: requirements.txt and pyproject.toml's dependencies, from the machine's pip
# configuration (its index or mirrors). The kit's own runner, run_tck.py, needs pytest-json-report; this
# script runs pytest directly, so a package the index does not have is skipped (and said so) rather
# than fatal. Installed once per set of requirements (a stamp in the venv).
if [ ! -x "$venv/bin/python" ]; then
  py=$(command -v python3) || die "python3 not found"
  echo "tck: making a Python venv at $venv"
  "$py" -m venv "$venv" || die "could not make a venv at $venv"
fi
mapfile -t reqs < <("$venv/bin/python" - "$tck" <<'PY'
import sys, pathlib
root = pathlib.Path(sys.argv[1])
seen = []
for line in (root / "requirements.txt").read_text().splitlines():
    line = line.split("#")[0].strip()
    if line and line not in seen: seen.append(line)
try:
    import tomllib  # Python 3.11+; older ones get requirements.txt only
    deps = tomllib.loads((root / "pyproject.toml").read_text())["project"]["dependencies"]
except (ImportError, FileNotFoundError, KeyError):
    deps = []
for dep in deps:
    if dep not in seen: seen.append(dep)
print("\n".join(seen))
PY
)
[ ${#reqs[@]} -gt 0 ] || die "could not read the kit's requirements"
stamp=$venv/.baton-tck-requirements
if [ "$(head -n 1 "$stamp" 2>/dev/null)" != "${reqs[*]}" ]; then
  echo "tck: installing the kit's ${#reqs[@]} requirements into $venv"
  skipped=()
  if ! "$venv/bin/pip" install -q "${reqs[@]}" >/dev/null 2>&1; then
    for r in "${reqs[@]}"; do "$venv/bin/pip" install -q "$r" >/dev/null 2>&1 || skipped+=("$r"); done
  fi
  [ ${#skipped[@]} -eq 0 ] || echo "tck: skipped (not installable from this machine's pip index): ${skipped[*]}"
  printf '%s' "${reqs[*]}" >"$stamp"
  [ ${#skipped[@]} -eq 0 ] || printf '\nskipped: %s' "${skipped[*]}" >>"$stamp"
else
  skipped_line=$(sed -n 's/^skipped: //p' "$stamp")
  [ -z "$skipped_line" ] || echo "tck: skipped earlier (not installable from this machine's pip index): $skipped_line"
fi
"$venv/bin/python" -c 'import pytest, pytest_asyncio, httpx, requests, jsonschema' 2>/dev/null \
  || die "the venv at $venv lacks what the kit's tests need (pytest, pytest-asyncio, httpx, requests, jsonschema)"

mkdir -p "$out"
work=$(mktemp -d "${TMPDIR:-/tmp}/baton-tck.XXXXXX")
pids=()
cleanup() {
  [ -z "${pytest_pid:-}" ] || kill "$pytest_pid" 2>/dev/null
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() { node -e 's=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }
start() { # name, command...: runs it in the background, logs in $work/<name>.log
  local name=$1; shift
  "$@" >"$work/$name.log" 2>&1 </dev/null &
  pids+=($!)
}
first_json() { # name, field, seconds: the field of the first JSON line the process printed
  local i
  for i in $(seq 1 $(($3 * 5))); do
    v=$(node -e 'for (const l of require("fs").readFileSync(process.argv[1], "utf8").split("\n")) {
        try { const v = JSON.parse(l)[process.argv[2]]; if (v) { console.log(v); process.exit(0); } } catch {} }
      process.exit(1)' "$work/$1.log" "$2" 2>/dev/null) && { echo "$v"; return 0; }
    sleep 0.2
  done
  echo "tck: $1 did not start:" >&2; cat "$work/$1.log" >&2; return 1
}

# The SDK echo agent behind its own proxy (the direct route), then one gateway per gateway route (a
# gateway has one public URL, and each route needs its own proxy's), each with a fresh state folder and a
# bearer token the kit sends.
agent="http://127.0.0.1:$(free_port)"
start proxy-direct node --import tsx scripts/tck/proxy.ts --upstream "$agent"
declare -A url
# The kit's --sut-url is the JSON-RPC endpoint (some of its tests post there, not to the card's URL).
url[direct]=$(first_json proxy-direct url 30)/rpc || exit 2
agent_args=()
[ "${BATON_TCK_AGENT:-echo}" = working ] && agent_args=(--stay-working)
[ "${BATON_TCK_AGENT:-echo}" = working ] || [ "${BATON_TCK_AGENT:-echo}" = echo ] || die "BATON_TCK_AGENT is echo or working"
start agent node --import tsx scripts/tck/echoAgent.ts "${agent_args[@]}" --port "${agent##*:}" --public-url "${url[direct]%/rpc}" \
  --hold-ms "$(node -e 'console.log(Math.round(process.argv[1] * 2500))' "$TCK_STREAMING_TIMEOUT")"
first_json agent origin 30 >/dev/null || exit 2
export BATON_TCK_TOKEN; BATON_TCK_TOKEN=$(node -e 'console.log(require("crypto").randomBytes(24).toString("base64url"))')
token=$BATON_TCK_TOKEN
mkdir -p "$work/repo" && printf 'const a = 1;\n' >"$work/repo/a.js"
git -C "$work/repo" init -q -b main && git -C "$work/repo" add -A \
  && git -C "$work/repo" -c user.name=tck -c user.email=tck@baton.invalid commit -qm init || die "could not make the test repository"
for route in $routes; do
  case $route in
    direct) continue ;;
    echo) agents="{\"echo\": {\"name\": \"SDK echo\", \"description\": \"The SDK echo agent\", \"url\": \"$agent/rpc\", \"protocolBinding\": \"JSONRPC\", \"protocolVersion\": \"1.0\"}}"; local_agents=false ;;
    formatter) agents='{}'; local_agents='["formatter"]' ;;
    *) die "unknown route $route (direct, echo, formatter)" ;;
  esac
  port=$(free_port)
  start "proxy-$route" node --import tsx scripts/tck/proxy.ts --upstream "http://127.0.0.1:$port" --route "/a2a/$route"
  proxy=$(first_json "proxy-$route" url 30) || exit 2
  url[$route]=$proxy/a2a/$route
  cat >"$work/gateway-$route.json" <<JSON
{ "host": "127.0.0.1", "port": $port, "roots": ["$work/repo"], "localAgents": $local_agents, "agents": $agents,
  "tokens": [{ "principal": "tck", "tokenEnv": "BATON_TCK_TOKEN" }] }
JSON
  start "gateway-$route" node dist/gateway.js --config "$work/gateway-$route.json" \
    --state "$work/state-$route" --builtin-threads 1 --public-url "$proxy"
  first_json "gateway-$route" url 60 >/dev/null || exit 2
done

problems=()
run() { # label, sut url, auth (yes|no), pytest path, markers (- for none), transports
  local label=$1 sut=$2 auth=$3 path=$4 markers=$5 tr=$6
  local args=(-m pytest "$path" "--sut-url=$sut" --test-scope=all --tb=short -v -rfEs -p no:cacheprovider
    --transport-strategy agent_preferred --transports "$tr" --enable-equivalence-testing "--junitxml=$out/$label.xml")
  [ "$markers" = - ] || args+=(-m "$markers")
  rm -f "$out/$label.xml"
  local auth_env=(-u A2A_AUTH_TYPE -u A2A_AUTH_TOKEN)
  [ "$auth" = yes ] && auth_env=(A2A_AUTH_TYPE=bearer "A2A_AUTH_TOKEN=$token")
  # In the background and waited for, so that Ctrl-C or a TERM stops the script (and, through cleanup, pytest) at once.
  (cd "$tck" && exec env "${auth_env[@]}" PYTHONDONTWRITEBYTECODE=1 "$venv/bin/python" "${args[@]}") >"$out/$label.txt" 2>&1 &
  pytest_pid=$!
  wait $pytest_pid
  local rc=$?
  # pytest: 0 all passed, 1 some failed; anything else means the kit did not run through.
  if [ ! -f "$out/$label.xml" ] || { [ $rc -ne 0 ] && [ $rc -ne 1 ]; }; then
    problems+=("$label: pytest exit $rc, see $out/$label.txt"); echo "$label: did not run (pytest exit $rc)"; return
  fi
  "$venv/bin/python" - "$out/$label.xml" "$label" <<'PY'
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
n = {k: sum(int(s.get(k, 0)) for s in suites) for k in ("tests", "failures", "errors", "skipped")}
failed = n["failures"] + n["errors"]
print(f'{sys.argv[2]}: {n["tests"] - failed - n["skipped"]} passed, {failed} failed, {n["skipped"]} skipped')
PY
}

for route in $routes; do
  auth=yes; [ "$route" = direct ] && auth=no
  for category in $categories; do
    [ "$category" = transport-equivalence ] && continue
    case $category in
      mandatory) path=tests/mandatory/ ;; capabilities) path=tests/optional/capabilities/ ;;
      quality) path=tests/optional/quality/ ;; features) path=tests/optional/features/ ;;
      *) die "unknown category $category" ;;
    esac
    for tr in $transports; do
      markers=-
      # As the kit's run_tck.py selects them.
      [ "$category" = mandatory ] && markers='mandatory or mandatory_protocol' && [ "$tr" = jsonrpc ] && markers+=' or mandatory_jsonrpc'
      run "$route-$tr-$category" "${url[$route]}" $auth "$path" "$markers" "$tr"
    done
  done
  case " $categories " in *" transport-equivalence "*)
    run "$route-transport-equivalence" "${url[$route]}" $auth tests/optional/multi_transport/ transport_equivalence "${transports// /,}" ;;
  esac
done

echo "tck: results in $out"
if [ ${#problems[@]} -gt 0 ]; then printf 'tck: %s\n' "${problems[@]}" >&2; exit 1; fi
