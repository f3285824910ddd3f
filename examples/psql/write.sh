#!/bin/sh
# A worker in plain sh and psql that writes to PostgreSQL under a
# fencegate lock:
#
#   fencegate lock jobs/report --registry URL --token TOKEN -- sh write.sh VALUE
#
# PG_DSN is the libpq connection string of the worker's own login role
# (granted fencegate_writer, mapped by fencegate gate enroll --role). The
# write is one transaction: fencegate.apply first, the INSERT after; a
# rejection (SQLSTATE class FG, "fencegate: STALE_OWNER: …") stops psql
# and rolls everything back.
set -u
value=$1
fg=${FENCEGATE_BIN:-fencegate}
digest=sha256:$(printf '{"resource": "%s", "value": "%s"}' "$FENCEGATE_RESOURCE" "$value" | sha256sum | cut -d' ' -f1)
envelope=$("$fg" envelope --seq 1 --payload-digest "$digest") || { echo "no envelope: do not write"; exit 3; }
if err=$(psql -X -q -v ON_ERROR_STOP=1 -v envelope="$envelope" -v digest="$digest" -v value="$value" \
  -v resource="$FENCEGATE_RESOURCE" "$PG_DSN" 2>&1 >/dev/null <<'SQL'
BEGIN;
SELECT fencegate.apply(:'envelope', :'digest');
INSERT INTO report (resource, value) VALUES (:'resource', :'value');
COMMIT;
SQL
); then
  outcome=ACCEPTED
else
  outcome=$(printf '%s\n' "$err" | sed -n 's/.*fencegate: \([A-Z_]*\):.*/\1/p' | head -n 1)
  [ -n "$outcome" ] || { printf '%s\n' "$err" >&2; exit 2; }
fi
echo "outcome $outcome"
"$fg" envelope settle --seq 1 --outcome "$outcome" >/dev/null 2>&1
[ "$outcome" = ACCEPTED ]
