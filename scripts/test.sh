#!/usr/bin/env bash
# Every test Baton has: build + typecheck + lint, the unit suites (node's test runner), then the
# integration suites in a real VS Code (code-server + Chromium): from the folder, in Restricted Mode,
# and from the .vsix.
# Ends with one summary line: "N passed, N failed, N skipped".
#   bash scripts/test.sh            everything
#   bash scripts/test.sh unit       unit tests only
#   bash scripts/test.sh integration
set -uo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}
mkdir -p test-results
passed=0 failed=0 skipped=0 problems=()

bash scripts/ensure-deps.sh || { echo "0 passed, 1 failed, 0 skipped"; exit 1; }

step() { # name, command...
  local name=$1; shift
  echo "== $name"
  if "$@"; then return 0; fi
  problems+=("$name"); failed=$((failed + 1)); return 1
}

if [ "$what" != unit ]; then
  step build npm run --silent build
  step typecheck bash -c 'npx tsc --noEmit -p tsconfig.json && npx tsc --noEmit -p tsconfig.webview.json'
  step lint npx eslint --max-warnings 0 .
  step format npx prettier --check --log-level warn .
fi

if [ "$what" = all ] || [ "$what" = unit ]; then
  # The foreign agents some unit tests run as real peers (test/peers/); a failed install fails this step,
  # and the tests that need a peer then fail saying how to install it.
  step peers bash test/peers/setup.sh
  # Node 24, for the tests that run the gateway's store with node:sqlite (VS Code's runtime has it,
  # this Node 20 does not); a failed install fails this step, and those tests are reported as skipped.
  if n24=$(bash test/node24.sh); then export BATON_NODE24=$n24; else problems+=("node24"); failed=$((failed + 1)); fi
  echo "== unit"
  mapfile -t files < <(find test/unit -name '*.test.ts' | sort)
  node --import tsx --test --test-concurrency=2 --test-timeout=300000 --test-reporter=spec --test-reporter-destination=stdout \
    --test-reporter=tap --test-reporter-destination=test-results/unit.tap "${files[@]}"
  unit_rc=$?
  read -r p f s < <(node -e '
    const t = require("fs").readFileSync("test-results/unit.tap", "utf8");
    const n = (k) => Number((t.match(new RegExp("^# " + k + " (\\d+)$", "m")) || [0, 0])[1]);
    console.log(n("pass"), n("fail") + n("cancelled"), n("skipped") + n("todo"));')
  passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
  if [ "$unit_rc" -ne 0 ] && [ "$f" -eq 0 ]; then failed=$((failed + 1)); problems+=("unit runner exit $unit_rc"); fi
  [ "$f" -eq 0 ] || problems+=("unit: $f failed")
fi

if [ "$what" = all ] || [ "$what" = integration ]; then
  if step package bash -c 'npm run --silent package >test-results/package.log 2>&1 || { cat test-results/package.log; exit 1; }; tail -n 3 test-results/package.log'; then
    node scripts/build.mjs >/dev/null  # package builds the production bundles only; restore the suite in out/
  fi
  echo "== integration (real VS Code)"
  bash test/integration/run.sh | tee test-results/integration.log
  it_rc=${PIPESTATUS[0]}
  read -r p f s modes < <(node -e '
    const lines = require("fs").readFileSync("test-results/integration.log", "utf8").split("\n").filter((l) => l.startsWith("BATON:RESULT "));
    let p = 0, f = 0, s = 0; const modes = [];
    for (const l of lines) { const r = JSON.parse(l.slice(13)); modes.push(r.mode + ":" + r.code);
      for (const ph of r.phases) { p += ph.passes; f += ph.failures; s += ph.pending; } }
    console.log(p, f, s, modes.join(",") || "none");')
  passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
  if [ "$it_rc" -ne 0 ] && [ "$f" -eq 0 ]; then failed=$((failed + 1)); problems+=("integration harness exit $it_rc ($modes)"); fi
  [ "$f" -eq 0 ] || problems+=("integration: $f failed")
fi

[ ${#problems[@]} -eq 0 ] || printf 'problems: %s\n' "${problems[@]}"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
