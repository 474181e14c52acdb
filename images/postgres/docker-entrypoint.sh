#!/bin/sh
# Entrypoint of ferry.local/postgres:dev (busybox sh). Same conventions as the official image:
#   no arguments, or arguments starting with "-"  -> run the server with those extra arguments
#   "postgres" [ARGS]                             -> the same
#   anything else                                 -> exec it (e.g. "sh", "psql ...")
# On first start (no $PGDATA/PG_VERSION) the cluster is created with initdb: trust auth, superuser
# "postgres", data checksums, UTF8 encoding with the C locale (no locale files needed), plus
# $POSTGRES_INITDB_ARGS.
set -eu
if [ $# -eq 0 ] || [ "${1#-}" != "$1" ]; then set -- postgres "$@"; fi
if [ "$1" != postgres ]; then exec "$@"; fi
shift
: "${PGDATA:=/var/lib/postgresql/data/pgdata}"
if [ "$(id -u)" = 0 ]; then
  echo "docker-entrypoint.sh: postgres must not run as root; run as uid 999 (runAsUser: 999)" >&2
  exit 1
fi
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  mkdir -p "$PGDATA"
  chmod 700 "$PGDATA"
  # shellcheck disable=SC2086 # POSTGRES_INITDB_ARGS is split into words on purpose
  initdb -D "$PGDATA" --auth=trust -U postgres --data-checksums --encoding=UTF8 --locale=C \
    ${POSTGRES_INITDB_ARGS:-}
fi
exec postgres -D "$PGDATA" -c listen_addresses='*' "$@"
