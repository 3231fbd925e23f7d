#!/usr/bin/env bash
# Run the whole test suite with the real parts: an Xvfb display per test that needs one,
# a throwaway PostgreSQL server on 127.0.0.1, litellm over HTTP to a local server.
# Arguments are passed to pytest. With none, the whole suite runs on parallel workers
# (pytest-xdist; OPENPROGRAM_TEST_WORKERS of them, default: one per core). With --core
# first, the quick run: openprogram's own tests without displays, browsers, notebooks,
# PostgreSQL or the slow ones (real child processes and servers), on parallel workers.
set -uo pipefail
cd "$(dirname "$0")/.."

export LITELLM_LOCAL_MODEL_COST_MAP=True
# bytecode written and kept: with PYTHONDONTWRITEBYTECODE set, each worker compiles every
# module again on every run (40 s of CPU each for collecting the suite, against 21 s)
unset PYTHONDONTWRITEBYTECODE
cleanup=()
if [ -z "${OPENPROGRAM_TEST_POSTGRES:-}" ] && [ -x scripts/postgres.sh ]; then
  if url=$(scripts/postgres.sh start); then
    export OPENPROGRAM_TEST_POSTGRES="$url"
    cleanup+=("scripts/postgres.sh stop")
  else
    echo "test: could not start PostgreSQL; its tests will skip" >&2
  fi
fi

workers=(-n "${OPENPROGRAM_TEST_WORKERS:-auto}" --dist loadgroup)
if [ $# -eq 0 ]; then
  set -- "${workers[@]}"
elif [ "$1" = "--core" ]; then
  shift
  set -- tests/openprogram -q -m "not (x11 or browser or notebook or postgres or slow)" \
    "${workers[@]}" "$@"
fi
.venv/bin/python -m pytest "$@"
status=$?
for command in "${cleanup[@]}"; do $command || true; done
if [ "$status" = 5 ]; then
  # pytest's "no tests collected": nothing failed, but say so loudly (a selection with
  # -k/-m that matches nothing, say) rather than failing the whole run
  echo "test: WARNING: pytest collected no tests (exit 5); nothing was tested" >&2
  status=0
fi
exit "$status"
