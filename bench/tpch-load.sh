#!/usr/bin/env bash
# TPC-H generate + load: `dbbench tpch load` (rows generated and streamed
# into the server, tables in parallel, no files) against the two-step
# pipeline a user would otherwise script: `tpchgen-cli` (PyPI) writes the
# .tbl/.csv files, then each table is loaded with LOAD DATA LOCAL INFILE
# (MariaDB) or COPY FROM STDIN (PostgreSQL), one after another.
#
#   bench/tpch-load.sh
#
# Both sides build the same tables: the pipeline takes its DDL from the
# tables dbbench made (mysqldump --no-data; pg_dump --schema-only split into
# pre-data and post-data), so column types, engines and keys are identical.
# Keys follow each engine's usual choice: MariaDB/InnoDB primary keys before
# the load (rows arrive in key order into the clustered index), PostgreSQL
# after it (one sorted build per key). No secondary indexes, no foreign
# keys, no ANALYZE on either side. Wall time of the whole step is measured
# here (date +%s.%N); the pipeline's generate and load parts are shown too.
# The order of the two tools alternates between rounds; the database is
# dropped before every load and files are deleted after every pipeline.
#
# Environment (defaults in brackets):
#   SF            scale factor [1]
#   ROUNDS        rounds per engine and tool [1]
#   ENGINES       which servers [mariadb postgresql]
#   DBBENCH       the dbbench binary [target/release/dbbench, built if missing]
#   TPCHGEN_CLI   tpchgen-cli [installed with pip into a venv in the work dir]
#   WORK_PARENT   where the work directory goes [/tmp]
#   PIPELINE_MARIADB_CLAUSES  the pipeline's LOAD DATA clauses before LINES
#                 [FIELDS TERMINATED BY '|', what a user would write]; e.g.
#                 "CHARACTER SET binary FIELDS TERMINATED BY '|' ESCAPED BY ''",
#                 dbbench's own, shows how much of the difference is the
#                 overlap and how much the statement
# Servers: started with scripts/servers.sh in the work directory (MariaDB
# with MARIADB_OPTIONS [--innodb-buffer-pool-size=2G --innodb-log-file-size=1G]
# on top of servers.sh's, as a load-tuned DBT3 server would be), stopped on exit.
set -euo pipefail
# A failing load inside $(...) must stop the benchmark, not print a time.
shopt -s inherit_errexit
cd "$(dirname "$0")/.."

SF=${SF:-1}
ROUNDS=${ROUNDS:-1}
ENGINES=${ENGINES:-mariadb postgresql}
DBBENCH=${DBBENCH:-target/release/dbbench}
WORK=$(mktemp -d "${WORK_PARENT:-/tmp}/dbbench-tpch-load.XXXXXX")
# PostgreSQL runs as user postgres, which must reach its directory.
chmod 755 "$WORK"
DB=tpch_bench

cleanup() {
    scripts/servers.sh down "$WORK/servers" >/dev/null 2>&1 || true
    rm -rf "$WORK"
}
trap cleanup EXIT

[ -x "$DBBENCH" ] || cargo build --release --quiet
if [ -z "${TPCHGEN_CLI:-}" ]; then
    TPCHGEN_CLI=$(command -v tpchgen-cli || true)
    if [ -z "$TPCHGEN_CLI" ]; then
        echo "installing tpchgen-cli from PyPI into $WORK/venv ..." >&2
        python3 -m venv "$WORK/venv"
        # Pinned: the command line (`tpchgen-cli csv ...`, CSV with a header line) is 4.x's.
        "$WORK/venv/bin/pip" install --quiet "tpchgen-cli==4.0.0"
        TPCHGEN_CLI=$WORK/venv/bin/tpchgen-cli
    fi
fi

DBBENCH_MARIADB_OPTIONS="${MARIADB_OPTIONS:---innodb-buffer-pool-size=2G --innodb-log-file-size=1G} --local-infile=1" \
    scripts/servers.sh up "$WORK/servers" >/dev/null
# shellcheck disable=SC1091
. "$WORK/servers/env"
MY=(mysql --no-defaults -uroot -S "$DBBENCH_TEST_MYSQL_SOCKET" --local-infile=1)
PG=(env PGOPTIONS='-c client_min_messages=warning' psql -X -q -v ON_ERROR_STOP=1 -h "$DBBENCH_TEST_PGSQL_HOST" -p "$DBBENCH_TEST_PGSQL_PORT" -U postgres)
TABLES="region nation supplier customer part partsupp orders lineitem"

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

fresh_db() {
    case $1 in
        mariadb) "${MY[@]}" -e "DROP DATABASE IF EXISTS $DB; CREATE DATABASE $DB" ;;
        postgresql) "${PG[@]}" -d postgres -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB" ;;
    esac
}

conn_args() {
    case $1 in
        mariadb) echo "--db-driver=mysql --mysql-socket=$DBBENCH_TEST_MYSQL_SOCKET --mysql-user=root --mysql-db=$DB" ;;
        postgresql) echo "--db-driver=pgsql --pgsql-host=$DBBENCH_TEST_PGSQL_HOST --pgsql-port=$DBBENCH_TEST_PGSQL_PORT --pgsql-user=postgres --pgsql-db=$DB" ;;
    esac
}

keys_for() { [ "$1" = mariadb ] && echo before || echo after; }

# dbbench: one command, generation overlapped with loading.
run_dbbench() {
    fresh_db "$1"
    local t0 t1
    t0=$(now)
    # shellcheck disable=SC2046
    "$DBBENCH" tpch load --sf="$SF" --keys="$(keys_for "$1")" --indexes=no --foreign-keys=no --analyze=no $(conn_args "$1") >"$WORK/dbbench-$1.out"
    t1=$(now)
    echo "$(secs "$t0" "$t1")"
}

# The DDL the pipeline uses: dbbench's own tables, captured once per engine.
capture_ddl() {
    fresh_db "$1"
    # shellcheck disable=SC2046
    "$DBBENCH" tpch load --sf=0.01 --keys="$(keys_for "$1")" --indexes=no --foreign-keys=no --analyze=no $(conn_args "$1") >/dev/null
    case $1 in
        mariadb)
            # shellcheck disable=SC2086
            mysqldump --no-defaults -uroot -S "$DBBENCH_TEST_MYSQL_SOCKET" --no-data --skip-comments $DB $TABLES >"$WORK/ddl-mariadb.sql" ;;
        postgresql)
            local t=""
            for x in $TABLES; do t="$t -t $x"; done
            # shellcheck disable=SC2086
            pg_dump -h "$DBBENCH_TEST_PGSQL_HOST" -p "$DBBENCH_TEST_PGSQL_PORT" -U postgres --schema-only --section=pre-data --no-owner $t $DB >"$WORK/ddl-pg-pre.sql"
            # shellcheck disable=SC2086
            pg_dump -h "$DBBENCH_TEST_PGSQL_HOST" -p "$DBBENCH_TEST_PGSQL_PORT" -U postgres --schema-only --section=post-data --no-owner $t $DB >"$WORK/ddl-pg-post.sql" ;;
    esac
}

# The pipeline: files first, then one table after another. Prints "total gen load".
run_pipeline() {
    fresh_db "$1"
    local files="$WORK/files" t0 t1 t2
    rm -rf "$files"
    t0=$(now)
    case $1 in
        mariadb) "$TPCHGEN_CLI" -s "$SF" --output-dir="$files" >/dev/null ;;
        postgresql) "$TPCHGEN_CLI" csv -s "$SF" --output-dir="$files" >/dev/null ;;
    esac
    t1=$(now)
    case $1 in
        mariadb)
            "${MY[@]}" $DB <"$WORK/ddl-mariadb.sql"
            for x in $TABLES; do
                # dbgen's lines end in '|': the empty last field is dropped (a warning per row, as every such script sees).
                "${MY[@]}" $DB -e "LOAD DATA LOCAL INFILE '$files/$x.tbl' INTO TABLE $x ${PIPELINE_MARIADB_CLAUSES:-FIELDS TERMINATED BY '|'} LINES TERMINATED BY '\n'"
            done ;;
        postgresql)
            "${PG[@]}" -d $DB -f "$WORK/ddl-pg-pre.sql" >/dev/null
            for x in $TABLES; do
                "${PG[@]}" -d $DB -c "\\copy $x FROM '$files/$x.csv' WITH (FORMAT csv, HEADER true)"
            done
            "${PG[@]}" -d $DB -f "$WORK/ddl-pg-post.sql" >/dev/null ;;
    esac
    t2=$(now)
    rm -rf "$files"
    echo "$(secs "$t0" "$t2") $(secs "$t0" "$t1") $(secs "$t1" "$t2")"
}

# Row counts of all eight tables, one line.
rows_loaded() {
    local sql="SELECT concat_ws(' '" x
    for x in $TABLES; do sql="$sql, (SELECT count(*) FROM $x)"; done
    sql="$sql)"
    case $1 in
        mariadb) "${MY[@]}" -N $DB -e "$sql" ;;
        postgresql) "${PG[@]}" -d $DB -At -c "$sql" ;;
    esac
}

median() { sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

echo "TPC-H generate + load, scale factor $SF, $ROUNDS round(s), $(nproc) CPUs; $("$DBBENCH" --version)"
echo "tpchgen-cli: $("$TPCHGEN_CLI" --version 2>/dev/null || echo unknown)"
printf '\n%-11s %6s %12s %14s %10s %10s %8s\n' engine round "dbbench s" "pipeline s" "(gen s" "load s)" ratio
for engine in $ENGINES; do
    capture_ddl "$engine"
    : >"$WORK/d" ; : >"$WORK/p"
    for r in $(seq 1 "$ROUNDS"); do
        if [ $((r % 2)) -eq 1 ]; then
            d=$(run_dbbench "$engine"); nd=$(rows_loaded "$engine")
            read -r p pg pl < <(run_pipeline "$engine"); np=$(rows_loaded "$engine")
        else
            read -r p pg pl < <(run_pipeline "$engine"); np=$(rows_loaded "$engine")
            d=$(run_dbbench "$engine"); nd=$(rows_loaded "$engine")
        fi
        if [ "$nd" != "$np" ]; then
            echo "error: $engine: dbbench loaded rows ($TABLES) $nd, the pipeline $np" >&2
            exit 1
        fi
        echo "$d" >>"$WORK/d"; echo "$p" >>"$WORK/p"
        printf '%-11s %6s %12s %14s %10s %10s %8s\n' "$engine" "$r" "$d" "$p" "$pg" "$pl" "$(awk -v a="$d" -v b="$p" 'BEGIN { if (b > 0) printf "%.2f", a / b; else printf "n/a" }')"
    done
    dm=$(median <"$WORK/d"); pm=$(median <"$WORK/p")
    printf '%-11s %6s %12s %14s %10s %10s %8s\n' "$engine" median "$dm" "$pm" "" "" "$(awk -v a="$dm" -v b="$pm" 'BEGIN { if (b > 0) printf "%.2f", a / b; else printf "n/a" }')"
done
echo
echo "ratio = dbbench / pipeline (target <= 0.80); row counts of all eight tables checked equal after each load."
