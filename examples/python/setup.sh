#!/bin/sh
# Sets examples/python up against a development registry, from the
# repository's root, with the admin URL of a PostgreSQL database:
#
#   sh examples/python/setup.sh postgres://postgres@localhost/app
#
# It builds ./fencegate, makes gate.key (the HMAC key the registry will
# sign with and the database checks; kept if it exists), installs the gate
# in the database and enrolls the key, creates the table report
# (protected: written only through fencegate.apply) and the login role
# report_worker, which may insert into it, mapped to the identity "dev"
# of `fencegate serve --dev`. Running it again changes nothing.
set -eu
db=${1:?usage: sh examples/python/setup.sh postgres://ADMIN@HOST/DATABASE}
go build -o fencegate ./cmd/fencegate
[ -f gate.key ] || ./fencegate keys gen --id gate-report --alg hmac-sha256 --out gate.key
./fencegate gate install --db "$db"
./fencegate gate enroll --db "$db" --key gate.key --min-epoch 1
psql -X -q -v ON_ERROR_STOP=1 "$db" <<'SQL'
DO $$ BEGIN CREATE ROLE report_worker LOGIN; EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$;
GRANT fencegate_writer TO report_worker;
CREATE TABLE IF NOT EXISTS report (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, resource TEXT NOT NULL, value TEXT NOT NULL);
GRANT INSERT ON report TO report_worker;
SELECT fencegate.protect('report', 'enforce', 'examples/python/setup.sh');
SQL
./fencegate gate enroll --db "$db" --role report_worker --identity dev
echo "setup.sh: ready; next: ./fencegate serve --dev --key gate.key --data-dir dev-registry"
