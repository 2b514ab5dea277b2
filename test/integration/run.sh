#!/usr/bin/env bash
# Runs the integration suite in a real VS Code (code-server + Chromium): first from this folder
# (smoke, then a workbench reload that must restore the panel), then in Restricted Mode (Workspace
# Trust on, the folder not trusted), then against the packaged .vsix.
# Needs `npm run build` (suite in out/) and, for the .vsix run, `npm run package`.
set -uo pipefail
cd "$(dirname "$0")/../.."
bash test/integration/setup.sh || exit 2
# Foreign agents some suites run as real peers (Gemini CLI's A2A server).
bash test/peers/setup.sh || exit 2
rc=0
# BATON_IT_ONLY (some files of the suite, while working on them) runs from this folder only.
default_modes="dev restricted vsix"
[ -n "${BATON_IT_ONLY:-}" ] && default_modes=dev
for mode in ${BATON_IT_MODES:-$default_modes}; do
  node --import tsx test/integration/driver.ts --mode "$mode" "$@" || rc=$?
  [ $rc -eq 0 ] || break
done
exit $rc
