#!/usr/bin/env bash
# A throwaway PostgreSQL server for the tests, listening on 127.0.0.1 only.
#   scripts/postgres.sh start   initdb in a temp dir, start it, print its postgresql:// URL
#   scripts/postgres.sh stop    stop it and delete the temp dir
# initdb refuses to run as root, so as root the server runs as the `postgres` user (or a
# created `openprogram-pg` system user). State lives in $OPENPROGRAM_PG_STATE
# (default: a file in ${TMPDIR:-/tmp} named after this checkout).
set -euo pipefail
cd "$(dirname "$0")/.."

state=${OPENPROGRAM_PG_STATE:-${TMPDIR:-/tmp}/openprogram-postgres-$(pwd | sha256sum | cut -c1-12).state}

find_bin() {
  local dir
  if command -v pg_ctl >/dev/null && command -v initdb >/dev/null; then
    dirname "$(readlink -f "$(command -v pg_ctl)")"
    return
  fi
  for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    [ -x "$dir/pg_ctl" ] && [ -x "$dir/initdb" ] && { echo "$dir"; return; }
  done
  echo "postgres.sh: no PostgreSQL found (install Debian's postgresql package)" >&2
  return 1
}

as_owner() {  # run a command as the server's owner
  if [ "$(id -u)" = 0 ]; then
    runuser -u "$owner" -- "$@"
  else
    "$@"
  fi
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

start() {
  if [ -f "$state" ]; then
    # shellcheck disable=SC1090
    source "$state"
    if as_owner "$bin/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
      echo "postgres.sh: a server is already running ($state); run 'scripts/postgres.sh stop'" >&2
      return 1
    fi
    rm -rf "$dir" "$state"  # left over by a run that never stopped it
  fi
  local bin dir port
  bin=$(find_bin)
  owner=$(id -un)
  if [ "$(id -u)" = 0 ]; then
    if id -u postgres >/dev/null 2>&1; then
      owner=postgres
    else
      id -u openprogram-pg >/dev/null 2>&1 || useradd --system --no-create-home openprogram-pg
      owner=openprogram-pg
    fi
  fi
  dir=$(mktemp -d "${TMPDIR:-/tmp}/openprogram-pg.XXXXXX")
  chmod 755 "$dir"
  [ "$(id -u)" = 0 ] && chown "$owner" "$dir"
  port=$(free_port)
  as_owner "$bin/initdb" -D "$dir/data" -U openprogram -A trust -E UTF8 --no-sync >"$dir/initdb.log" 2>&1 || {
    cat "$dir/initdb.log" >&2
    rm -rf "$dir"
    return 1
  }
  # max_connections: the 64-session benchmark loads hold one each, and a load can start
  # before the server has seen the last one's close (100, the default, was refused)
  as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=off -c full_page_writes=off -c max_connections=300" \
    start >/dev/null || {
    cat "$dir/server.log" >&2
    rm -rf "$dir"
    return 1
  }
  printf 'dir=%q\nowner=%q\nbin=%q\nport=%q\n' "$dir" "$owner" "$bin" "$port" >"$state"
  as_owner "$bin/createdb" -h 127.0.0.1 -p "$port" -U openprogram openprogram
  echo "postgresql://openprogram@127.0.0.1:$port/openprogram"
}

stop() {
  if [ ! -f "$state" ]; then
    echo "postgres.sh: no server to stop ($state)" >&2
    return 0
  fi
  # shellcheck disable=SC1090
  source "$state"
  as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
  rm -rf "$dir"
  rm -f "$state"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  *)
    echo "usage: scripts/postgres.sh start|stop" >&2
    exit 2
    ;;
esac
