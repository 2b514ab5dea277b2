#!/usr/bin/env bash
# Installs the project's npm dependencies when they are missing or older than package-lock.json.
set -euo pipefail
cd "$(dirname "$0")/.."
stamp=node_modules/.baton-deps
if [ ! -f "$stamp" ] || [ package-lock.json -nt "$stamp" ]; then
  echo "installing npm dependencies (npm ci; a minute or two the first time)"
  npm ci --no-audit --no-fund --loglevel=error
  touch "$stamp"
fi
