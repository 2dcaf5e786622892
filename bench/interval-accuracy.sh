#!/usr/bin/env bash
# Accuracy of dbbench's --report-interval lines at many clients, checked
# against the database server's own counters (issue 20, item 5).
#
#   bench/interval-accuracy.sh
#
# For each engine (MariaDB, PostgreSQL) and each client count, runs
# oltp_point_select with --report-interval=1, stamps every output line as
# it arrives (seconds after "Threads started!", so a line for [ Ks ] is due
# at K), and meanwhile samples the server's count of point selects ten
# times a second INSIDE the server (a loop in one session, each sample with
# the server's own clock reading: a client that connects per sample took up
# to 6 s to get an answer at 512 busy clients).  Each interval's events
# (tps x 1 s) are compared with the server's count over the same second
# (the samples around its start and end, interpolated):
#   MariaDB     SHOW GLOBAL STATUS Com_stmt_execute (the workload runs only
#               prepared statements; the sampling query is not one)
#   PostgreSQL  pg_stat_statements.calls of the point select (updated as
#               each statement ends; pg_stat_database.xact_commit is
#               flushed by each backend at most once a second, so its
#               per-second deltas smear by up to a second)
# What separates the two counts by design: dbbench counts an event when it
# ends at the client, the server when the statement runs; at thousands of
# clients on 2 CPUs a client can take a second or more to be scheduled and
# see its answer, so some events end (and count) an interval after the
# server ran them.  The run's total events must equal the server's delta
# over the whole run exactly.
#
# Starts its own servers (scripts/servers.sh, in a temporary directory,
# with room for MAX_CLIENTS connections and pg_stat_statements) and stops
# them at the end.
#
# Environment (defaults in brackets):
#   DBBENCH [target/release/dbbench]
#   CLIENTS [512 1024 4096]   TIME [10] seconds per run
#   ENGINES [mariadb postgresql]
#   TABLE_SIZE [10000]  (one table)
#   SERVERS_DIR  use servers already started there by scripts/servers.sh
#                (PostgreSQL then needs pg_stat_statements preloaded and
#                max_connections above the largest client count)
#   KEEP [0]  1: keep the work dir (raw outputs)
#   RUN_OPTIONS []  more options for each run (e.g. --client-threads=2)
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$REPO"
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"

DBBENCH=${DBBENCH:-target/release/dbbench}
CLIENTS=${CLIENTS:-512 1024 4096}
TIME=${TIME:-10}
ENGINES=${ENGINES:-mariadb postgresql}
TABLE_SIZE=${TABLE_SIZE:-10000}
KEEP=${KEEP:-0}
SERVERS_DIR=${SERVERS_DIR:-}
read -r -a RUN_OPTIONS <<<"${RUN_OPTIONS:-}"

[ -x "$DBBENCH" ] || { echo "no $DBBENCH: cargo build --release" >&2; exit 1; }
MAX_CLIENTS=0
for n in $CLIENTS; do [ "$n" -gt "$MAX_CLIENTS" ] && MAX_CLIENTS=$n; done
# Stamps each line with its arrival time. At a real-time priority where
# allowed: at normal priority the reader waits for the CPU behind the
# thousands of clients and server processes, and the stamps measured its
# own delay.
STAMP=(bash -c 'while IFS= read -r line; do printf "%s %s\n" "$EPOCHREALTIME" "$line"; done')
if chrt -f 1 true 2>/dev/null; then
    STAMP=(chrt -f 1 "${STAMP[@]}")
else
    echo "# note: cannot run the line stamper at a real-time priority (chrt -f 1); under load its stamps include its own wait for the CPU" >&2
fi

WORK=$(mktemp -d /tmp/dbbench-interval-accuracy.XXXXXX)
chmod 711 "$WORK"   # the postgres user reaches its socket directory inside
OWN_SERVERS=0
cleanup() {
    if [ "$OWN_SERVERS" = 1 ]; then scripts/servers.sh down "$SERVERS_DIR" >/dev/null 2>&1 || true; fi
    if [ "$KEEP" = 1 ]; then echo "work dir kept: $WORK" >&2; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

if [ -z "$SERVERS_DIR" ]; then
    SERVERS_DIR=$WORK/srv
    OWN_SERVERS=1
    DBBENCH_MARIADB_OPTIONS="--max-connections=$((MAX_CLIENTS + 100))" \
        DBBENCH_POSTGRESQL_OPTIONS="-c max_connections=$((MAX_CLIENTS + 100)) -c shared_preload_libraries=pg_stat_statements" \
        scripts/servers.sh up "$SERVERS_DIR" >"$WORK/servers.log" 2>&1 ||
        { cat "$WORK/servers.log" >&2; exit 1; }
fi
# shellcheck disable=SC1091
. "$SERVERS_DIR/env"
# The bench needs more open files than the default soft limit at 4096
# clients (a socket each, plus the server's side when it runs as us).
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

driver_args() {
    case $1 in
        mariadb) echo "--db-driver=mysql --mysql-socket=$DBBENCH_TEST_MYSQL_SOCKET --mysql-user=sbtest --mysql-db=sbtest" ;;
        postgresql) echo "--db-driver=pgsql --pgsql-host=$DBBENCH_TEST_PGSQL_HOST --pgsql-port=$DBBENCH_TEST_PGSQL_PORT --pgsql-user=sbtest --pgsql-db=sbtest" ;;
    esac
}

# The server's count of point selects so far.
counter() {
    case $1 in
        mariadb)
            mariadb -N -B -S "$DBBENCH_TEST_MYSQL_SOCKET" -u sbtest sbtest \
                -e "SHOW GLOBAL STATUS LIKE 'Com_stmt_execute'" | awk '{print $2}' ;;
        postgresql)
            psql -At -h "$DBBENCH_TEST_PGSQL_HOST" -p "$DBBENCH_TEST_PGSQL_PORT" -U sbtest sbtest \
                -c "SELECT coalesce(sum(calls), 0)::bigint FROM pg_stat_statements WHERE query LIKE 'SELECT c FROM sbtest1 WHERE id=%'" ;;
    esac
}

# Samples the counter every 0.1 s for $2 seconds inside the server, into
# file $3: lines "S <unix time> <count>" (PostgreSQL: "NOTICE:  S ...").
# Runs in the background; SAMPLER_PID is the client's pid.
sampler() {
    local n=$(($2 * 10))
    case $1 in
        mariadb)
            # One compound statement, so the client must not split it at ';'.
            mariadb -N -B --unbuffered -S "$DBBENCH_TEST_MYSQL_SOCKET" -u sbtest sbtest >"$3" 2>&1 <<SQL &
DELIMITER //
BEGIN NOT ATOMIC
  DECLARE i INT DEFAULT 0;
  WHILE i < $n DO
    SELECT 'S', UNIX_TIMESTAMP(SYSDATE(6)), VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS
      WHERE VARIABLE_NAME = 'COM_STMT_EXECUTE';
    DO SLEEP(0.1);
    SET i = i + 1;
  END WHILE;
END //
SQL
            SAMPLER_PID=$! ;;
        postgresql)
            psql -Xq -h "$DBBENCH_TEST_PGSQL_HOST" -p "$DBBENCH_TEST_PGSQL_PORT" -U sbtest sbtest -c "
                DO \$\$ BEGIN FOR i IN 1..$n LOOP
                  RAISE NOTICE 'S % %', extract(epoch FROM clock_timestamp()),
                    (SELECT coalesce(sum(calls), 0)::bigint FROM pg_stat_statements
                      WHERE query LIKE 'SELECT c FROM sbtest1 WHERE id=%');
                  PERFORM pg_sleep(0.1);
                END LOOP; END \$\$" >"$3" 2>&1 &
            SAMPLER_PID=$! ;;
    esac
}

printf '# %s, oltp_point_select, 1 table of %s rows, --time=%s --report-interval=1, %s CPUs, load average before: %s\n' \
    "$(date -u +%FT%TZ)" "$TABLE_SIZE" "$TIME" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '# late: seconds after its tick that the line arrived; dbbench: events of the interval;\n'
printf '# server: statements the server counted in the same second (its own samples, interpolated)\n'
SUMMARY=$WORK/summary
for engine in $ENGINES; do
    read -r -a DRV <<<"$(driver_args "$engine")"
    if [ "$engine" = postgresql ]; then
        psql -q -h "$DBBENCH_TEST_PGSQL_HOST" -p "$DBBENCH_TEST_PGSQL_PORT" -U sbtest sbtest \
            -c "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" >/dev/null
    fi
    "$DBBENCH" oltp_point_select "${DRV[@]}" cleanup --tables=1 >/dev/null 2>&1 || true
    "$DBBENCH" oltp_point_select "${DRV[@]}" prepare --tables=1 --table-size="$TABLE_SIZE" >"$WORK/prepare-$engine.log" 2>&1
    for n in $CLIENTS; do
        out=$WORK/$engine-$n
        before=$(counter "$engine")
        # Long enough for connecting the clients, the run and its end.
        sampler "$engine" $((TIME + 60 + n / 50)) "$out.samples"
        sleep 0.5
        # Only stamps lines (no fork per line): the analysis is afterwards.
        "$DBBENCH" oltp_point_select "${DRV[@]}" run --tables=1 --table-size="$TABLE_SIZE" \
            --threads="$n" --time="$TIME" --report-interval=1 ${RUN_OPTIONS[@]+"${RUN_OPTIONS[@]}"} 2>"$out.err" |
            "${STAMP[@]}" >"$out.out"
        sleep 1.2
        # The sampler is this script's own client; its statement ends with
        # the session.
        kill "$SAMPLER_PID" 2>/dev/null || true
        wait "$SAMPLER_PID" 2>/dev/null || true
        after=$(counter "$engine")
        total=$(sed -nE 's/.*total number of events: +([0-9]+).*/\1/p' "$out.out" | tail -1)
        printf '\n%-10s %5s clients\n' "$engine" "$n"
        awk -v engine="$engine" -v n="$n" -v time="$TIME" -v total="${total:-?}" -v server_total=$((after - before)) \
            -v summary="$SUMMARY" '
            FILENAME ~ /samples$/ { sub(/^NOTICE: */, ""); if ($1 == "S" && NF >= 3) { ns++; st[ns] = $2 + 0; sc[ns] = $3 + 0 } ; next }
            /Threads started!/ { start = $1 + 0; next }
            / \[ *[0-9]+s \] thds:/ {
                t = $1 + 0; line = $0; sub(/^[^ ]+ \[ */, "", line); label = line + 0
                m = split($0, w, " "); tps = ""
                for (i = 1; i < m; i++) if (w[i] == "tps:") tps = w[i + 1] + 0
                nl++; L[nl] = label; T[nl] = t; E[nl] = tps
            }
            # The server counter at unix time x, interpolated between samples.
            function at(x,   i) {
                if (ns == 0 || x < st[1] || x > st[ns]) return -1
                for (i = 2; i <= ns; i++) if (st[i] >= x)
                    return sc[i - 1] + (sc[i] - sc[i - 1]) * (x - st[i - 1]) / (st[i] - st[i - 1] > 0 ? st[i] - st[i - 1] : 1)
                return sc[ns]
            }
            END {
                printf "%6s %7s %9s %9s %8s\n", "label", "late", "dbbench", "server", "diff%"
                labels = ""; maxlate = 0; sum = 0; k = 0; sumd = 0; sums = 0
                for (i = 1; i <= nl; i++) {
                    late = T[i] - start - L[i]; labels = labels " " L[i]
                    if (L[i] <= time && late > maxlate) maxlate = late
                    a = at(start + L[i] - 1); b = at(start + L[i])
                    if (a >= 0 && b >= 0) {
                        d = b - a
                        diff = d > 0 ? sprintf("%+.1f", 100 * (E[i] - d) / d) : "-"
                        printf "%6s %7.3f %9d %9.0f %8s\n", L[i] "s", late, E[i], d, diff
                        if (L[i] <= time && d > 0) { sum += (E[i] > d ? E[i] - d : d - E[i]) / d; k++; sumd += E[i]; sums += d }
                    } else printf "%6s %7.3f %9d %9s %8s\n", L[i] "s", late, E[i], "?", "-"
                }
                printf "labels:%s\n", labels
                printf "total events %s, server delta %s\n", total, server_total
                printf "%-10s %5s  lines %2d  max late %6.3fs  mean |diff| %5.1f%%  sum 1..%ds: dbbench %d server %.0f  total %s vs server %s\n", \
                    engine, n, nl, maxlate, k ? 100 * sum / k : 0, time, sumd, sums, total, server_total >> summary
            }' "$out.samples" "$out.out"
        grep -h 'WARNING.*late' "$out.err" || true
    done
    "$DBBENCH" oltp_point_select "${DRV[@]}" cleanup --tables=1 >/dev/null 2>&1 || true
done
printf '\n# summary (mean |diff| over the intervals 1..%s)\n' "$TIME"
cat "$SUMMARY"
