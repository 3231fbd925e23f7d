#!/usr/bin/env bash
# Write the lock files (requirements/*.lock, with hashes) from pyproject.toml, pinned to the
# versions installed in .venv: the ones the tests last passed with. scripts/setup.sh installs
# from them, so a fresh machine gets what was tested. Run after changing a dependency:
#   .venv/bin/pip install --group lock && scripts/lock.sh
set -euo pipefail
cd "$(dirname "$0")/.."
uv=.venv/bin/uv
[ -x "$uv" ] || { echo "lock: uv is missing: .venv/bin/pip install --group lock" >&2; exit 2; }
tested=$(mktemp)
trap 'rm -f "$tested"' EXIT
.venv/bin/python -m pip freeze --exclude-editable | grep -v " @ " > "$tested"
compile=("$uv" pip compile pyproject.toml --generate-hashes --python-version 3.11 --quiet
  --no-annotate --constraint "$tested" --custom-compile-command "scripts/lock.sh")
mkdir -p requirements
"${compile[@]}" --extra gui -o requirements/demo.lock
"${compile[@]}" --extra gui --extra postgres --extra otel --extra bench --extra ray --extra mcp \
  --group dev --group bench-apps -o requirements/dev.lock
echo "lock: wrote requirements/demo.lock and requirements/dev.lock"
