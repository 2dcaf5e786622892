#!/usr/bin/env bash
# Client memory and throughput at thousands of clients: dbbench against
# sysbench 1.0.20 (issue 25, item 2).
#
#   bench/client-memory.sh
#
# For each engine (MariaDB, PostgreSQL) runs `oltp_point_select
# --threads=CLIENTS --time=TIME` with both tools against the same server
# and table, ALTERNATED round by round (the order flipped every round, so
# that drift of the machine does not favour one tool), and reports per run
# and as medians over the rounds:
#   - the client's peak RSS (GNU time %M), and per client
#   - QPS from the tool's own final `queries: N (X per sec.)` line
#   - the ratios dbbench/sysbench of the medians
# The target of issue 25 is peak RSS <= 0.5x sysbench's and QPS >= 1.2x.
#
# Starts its own servers (scripts/servers.sh in a temporary directory, with
# max_connections above CLIENTS: PostgreSQL's default of 100 refuses them)
# and stops them at the end, unless SERVERS_DIR names running ones.
#
# Environment (defaults in brackets):
#   DBBENCH [target/release/dbbench]   SYSBENCH [sysbench]
#   ENGINES [mariadb postgresql]
#   CLIENTS [4096]  ROUNDS [3]  TIME [15] seconds per run
#   TABLE_SIZE [10000]  (one table, prepared by sysbench)
#   DBBENCH_ARGS  extra options for dbbench's runs (e.g. --client-threads=2)
#   SERVERS_DIR  servers already started there by scripts/servers.sh (with
#                max_connections above CLIENTS)
#   RUN_SLACK [180]  seconds a run may exceed TIME before it is killed
#   INIT_TIMEOUT [300]  dbbench's --thread-init-timeout: 4096 PostgreSQL
#                connections (a backend process each) took more than the
#                default 30 s on the shared 2-vCPU machine
#   RESULTS  also write the per-run figures (TSV) to this file
#   KEEP [0]  1: keep the work dir (tool outputs, server logs)
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$REPO"
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"

DBBENCH=${DBBENCH:-target/release/dbbench}
SYSBENCH=${SYSBENCH:-sysbench}
ENGINES=${ENGINES:-mariadb postgresql}
CLIENTS=${CLIENTS:-4096}
ROUNDS=${ROUNDS:-3}
TIME=${TIME:-15}
TABLE_SIZE=${TABLE_SIZE:-10000}
read -r -a DBBENCH_EXTRA <<<"${DBBENCH_ARGS:-}"
SERVERS_DIR=${SERVERS_DIR:-}
RUN_SLACK=${RUN_SLACK:-180}
INIT_TIMEOUT=${INIT_TIMEOUT:-300}
RESULTS=${RESULTS:-}
KEEP=${KEEP:-0}

die() { echo "client-memory: error: $*" >&2; exit 1; }
log() { echo "client-memory: $*" >&2; }

resolve_bin() {
    if [[ "$1" == */* ]]; then
        [ -x "$1" ] || return 1
        echo "$(cd "$(dirname "$1")" && pwd -P)/$(basename "$1")"
    else
        command -v "$1"
    fi
}
DBBENCH_BIN=$(resolve_bin "$DBBENCH") || die "dbbench '$DBBENCH' not found (cargo build --release, or set DBBENCH)"
SYSBENCH_BIN=$(resolve_bin "$SYSBENCH") || die "sysbench '$SYSBENCH' not found (apt-get install -y sysbench)"
[ -x /usr/bin/time ] || die "/usr/bin/time not found (apt-get install -y time)"
declare -A BIN=([sysbench]=$SYSBENCH_BIN [dbbench]=$DBBENCH_BIN)

# A socket per client, and the server's side when it runs as the same user;
# PostgreSQL connections take more (the postgres crate's runtime per
# connection: at 2 per client PostgreSQL runs failed with EMFILE).
want_fds=$((CLIENTS * 4 + 256))
ulimit -n "$want_fds" 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
[ "$(ulimit -n)" = unlimited ] || [ "$(ulimit -n)" -ge $((CLIENTS + 64)) ] ||
    die "open files limit $(ulimit -n) is too low for $CLIENTS clients (raise ulimit -n)"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/dbbench-client-memory.XXXXXX")
chmod 711 "$WORK"   # the postgres user reaches its socket directory inside
OWN_SERVERS=0
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    if [ "$OWN_SERVERS" = 1 ]; then scripts/servers.sh down "$SERVERS_DIR" >/dev/null 2>&1 || true; fi
    if [ "$KEEP" = 1 ]; then log "work dir kept: $WORK"; else rm -rf "$WORK"; fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if [ -z "$SERVERS_DIR" ]; then
    SERVERS_DIR=$WORK/srv
    OWN_SERVERS=1
    # Only the engines asked for. (One pattern for both, `*" mariadb
    # "*" postgresql "*`, never matched "mariadb postgresql": the space
    # between them can be used once, so PostgreSQL was never started.)
    only=()
    want_mariadb=0 want_postgresql=0
    case " $ENGINES " in *" mariadb "*) want_mariadb=1 ;; esac
    case " $ENGINES " in *" postgresql "*) want_postgresql=1 ;; esac
    if [ "$want_mariadb$want_postgresql" = 10 ]; then only=(--only mariadb); fi
    if [ "$want_mariadb$want_postgresql" = 01 ]; then only=(--only postgresql); fi
    DBBENCH_MARIADB_OPTIONS="--max-connections=$((CLIENTS + 100))" \
        DBBENCH_POSTGRESQL_OPTIONS="-c max_connections=$((CLIENTS + 100))" \
        scripts/servers.sh up "$SERVERS_DIR" "${only[@]}" >"$WORK/servers.log" 2>&1 ||
        { cat "$WORK/servers.log" >&2; die "starting the servers failed"; }
fi
# shellcheck disable=SC1091
. "$SERVERS_DIR/env"

driver_args() {
    case $1 in
        mariadb) echo "--db-driver=mysql --mysql-socket=$DBBENCH_TEST_MYSQL_SOCKET --mysql-user=sbtest --mysql-db=sbtest" ;;
        postgresql) echo "--db-driver=pgsql --pgsql-host=$DBBENCH_TEST_PGSQL_HOST --pgsql-port=$DBBENCH_TEST_PGSQL_PORT --pgsql-user=sbtest --pgsql-db=sbtest" ;;
        *) die "unknown engine '$1' (ENGINES takes mariadb and postgresql)" ;;
    esac
}

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

[ -z "$RESULTS" ] || printf 'engine\tclients\tround\ttool\tpeak_rss_kib\tqps\n' >"$RESULTS"
SUMMARY=$WORK/summary.tsv
: >"$SUMMARY"

for engine in $ENGINES; do
    read -r -a DRV <<<"$(driver_args "$engine")"
    log "$engine: preparing 1 table of $TABLE_SIZE rows with sysbench"
    "$SYSBENCH_BIN" oltp_point_select "${DRV[@]}" --tables=1 cleanup >/dev/null 2>&1 || true
    "$SYSBENCH_BIN" oltp_point_select "${DRV[@]}" --tables=1 --table-size="$TABLE_SIZE" prepare \
        >"$WORK/prepare-$engine.log" 2>&1 || { cat "$WORK/prepare-$engine.log" >&2; die "prepare on $engine failed"; }
    for round in $(seq 1 "$ROUNDS"); do
        order=(dbbench sysbench)
        [ $((round % 2)) -eq 0 ] && order=(sysbench dbbench)
        for tool in "${order[@]}"; do
            out=$WORK/$engine-$CLIENTS-$round-$tool
            extra=()
            # sysbench 1.0.20 has no --thread-init-timeout (its wait is not bounded).
            [ "$tool" = dbbench ] && extra=(--thread-init-timeout="$INIT_TIMEOUT" "${DBBENCH_EXTRA[@]}")
            rc=0
            /usr/bin/time -o "$out.time" -f '%M' timeout -k 10 $((TIME + INIT_TIMEOUT + RUN_SLACK)) \
                "${BIN[$tool]}" oltp_point_select "${DRV[@]}" --tables=1 --table-size="$TABLE_SIZE" \
                --threads="$CLIENTS" --time="$TIME" "${extra[@]}" run >"$out.out" 2>&1 || rc=$?
            rss=$(tail -n 1 "$out.time")
            qps=$(awk '/queries:/ && /per sec/ { gsub(/[()]/, "", $3); print $3; exit }' "$out.out")
            # Exit 2: the run finished but was cut short (e.g. clients still
            # busy seconds after --time, which dbbench reports as stalled):
            # its figures are kept and marked '*' in the table.
            mark=""
            [ "$rc" -eq 2 ] && [ -n "$qps" ] && { mark="*"; rc=0; log "$engine $tool round $round: exit 2 ($(grep -m1 -o 'stalled:.*' "$out.out" || echo 'partial'))"; }
            if [ "$rc" -ne 0 ] || [ -z "$qps" ]; then
                log "$engine $tool round $round failed (exit $rc); its output:"
                tail -n 20 "$out.out" >&2
                die "a run failed: figures of a failed run are not reported"
            fi
            log "$engine round $round $tool: peak RSS $rss KiB, $qps QPS"
            printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$engine" "$CLIENTS" "$round" "$tool" "$rss" "$qps" "$mark" >>"$SUMMARY"
            [ -z "$RESULTS" ] || printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$engine" "$CLIENTS" "$round" "$tool" "$rss" "$qps" >>"$RESULTS"
        done
    done
    "$SYSBENCH_BIN" oltp_point_select "${DRV[@]}" --tables=1 cleanup >/dev/null 2>&1 || true
done

echo
echo "oltp_point_select, $CLIENTS clients, ${TIME} s runs, $ROUNDS rounds alternated; medians (per-run values in brackets)"
printf '%-11s %-9s %16s %14s %11s   %s\n' engine tool "peak RSS (MiB)" "KiB/client" QPS "runs: RSS MiB / QPS"
for engine in $ENGINES; do
    for tool in sysbench dbbench; do
        rss=$(awk -F'\t' -v e="$engine" -v t="$tool" '$1 == e && $4 == t { print $5 }' "$SUMMARY" | median)
        qps=$(awk -F'\t' -v e="$engine" -v t="$tool" '$1 == e && $4 == t { print $6 }' "$SUMMARY" | median)
        runs=$(awk -F'\t' -v e="$engine" -v t="$tool" '$1 == e && $4 == t { printf "%s%.0f / %.0f%s", sep, $5 / 1024, $6, $7; sep = ", " }' "$SUMMARY")
        printf '%-11s %-9s %16.0f %14.0f %11.0f   [%s]\n' "$engine" "$tool" "$(echo "$rss / 1024" | bc -l)" \
            "$(echo "$rss / $CLIENTS" | bc -l)" "$qps" "$runs"
        eval "M_${tool}_rss=$rss M_${tool}_qps=$qps"
    done
    # shellcheck disable=SC2154  # set by the eval above
    printf '%-11s %-9s %16s %14s %11s\n' "$engine" "ratio" "$(printf '%.2fx' "$(echo "$M_dbbench_rss / $M_sysbench_rss" | bc -l)")" "" \
        "$(printf '%.2fx' "$(echo "$M_dbbench_qps / $M_sysbench_qps" | bc -l)")"
done
echo "(ratio: dbbench/sysbench of the medians; issue 25's target: peak RSS <= 0.50x, QPS >= 1.20x;"
echo " *: the tool exited 2, the run cut short: clients still busy long after --time)"
