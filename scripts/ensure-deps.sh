#!/usr/bin/env bash
# Installs the project's npm dependencies when they are missing or package-lock.json changed since the
# last install. "Changed" is by content (its sha256 is kept in the stamp), not by date: a checkout, a
# merge or a second working tree gives the lock file a new date without changing what is installed.
set -euo pipefail
cd "$(dirname "$0")/.."
stamp=node_modules/.baton-deps
want=$(node -e 'process.stdout.write(require("crypto").createHash("sha256").update(require("fs").readFileSync("package-lock.json")).digest("hex"))')
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "installing npm dependencies (npm ci; a minute or two the first time)"
  npm ci --no-audit --no-fund --loglevel=error
  printf '%s' "$want" >"$stamp"
fi
