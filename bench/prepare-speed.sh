#!/usr/bin/env bash
# prepare of the OLTP tables (issue 25, item 1): dbbench through the
# server's bulk load (--db-bulk-load=auto: one LOAD DATA LOCAL / COPY FROM
# STDIN per table, rows generated in dbbench), dbbench through multi-row
# INSERTs (--db-bulk-load=off, sysbench's statements), sysbench 1.0.20
# (/usr/share/sysbench/oltp_read_write.lua prepare), and the floor: the
# server loading the same rows from a file it reads itself (LOAD DATA
# INFILE / COPY FROM 'file') into the same table, then CREATE INDEX k_N,
# tables spread over THREADS client sessions as the tools spread them.
#
#   bench/prepare-speed.sh
#   TABLES=4 TABLE_SIZE=1000000 THREADS=4 ROUNDS=3 bench/prepare-speed.sh
#
# Each round runs the four ways in a rotated order on each engine; the
# database is dropped and created before every prepare. Wall time and the
# client's CPU (user + system of the command and its children, GNU time)
# per run; the summary prints medians and the ratios the issue sets
# (wall <= 0.6x sysbench, client CPU <= 0.5x sysbench, wall <= 1.15x the
# floor). The floor's files are written once per engine (rows of one
# dbbench prepare with the same --rand-seed, dumped in id order) before the
# rounds; its client CPU is the mariadb/psql clients' (they only send
# statements).
#
# Environment (defaults in brackets):
#   TABLES, TABLE_SIZE, THREADS   the prepare [4, 1000000, 4]
#   ROUNDS        rounds [3]
#   WAYS          the ways to run, a subset that includes sysbench and floor
#                 [dbbench-load dbbench-insert sysbench floor]; e.g. without
#                 dbbench-insert at 10M rows per table, where it adds ~25 min
#   ENGINES       [mariadb postgresql]
#   MYSQL_SOCKET  an existing MariaDB server's socket (user MYSQL_USER [root],
#                 no password, FILE privilege for the floor); with PGSQL_HOST
#                 (host or socket directory), PGSQL_PORT [5432] and PGSQL_USER
#                 [postgres, a superuser for COPY FROM a file]. Without them
#                 the script starts its own servers with scripts/servers.sh
#                 in the work directory and stops them on exit.
#   DBBENCH       the dbbench binary [target/release/dbbench, built if missing]
#   SYSBENCH      [sysbench]; SYSBENCH_SCRIPTS [/usr/share/sysbench]
#   WORK_PARENT   where the work directory goes (the floor's files) [/tmp]
set -euo pipefail
shopt -s inherit_errexit
cd "$(dirname "$0")/.."

TABLES=${TABLES:-4}
TABLE_SIZE=${TABLE_SIZE:-1000000}
THREADS=${THREADS:-4}
ROUNDS=${ROUNDS:-3}
ENGINES=${ENGINES:-mariadb postgresql}
DBBENCH=${DBBENCH:-target/release/dbbench}
SYSBENCH=${SYSBENCH:-sysbench}
SYSBENCH_SCRIPTS=${SYSBENCH_SCRIPTS:-/usr/share/sysbench}
WORK=$(mktemp -d "${WORK_PARENT:-/tmp}/dbbench-prepare-speed.XXXXXX")
# The servers read the floor's files: they must reach the directory.
chmod 755 "$WORK"
DB=prepare_speed
SEED=42
OWN_SERVERS=

cleanup() {
    [ -z "$OWN_SERVERS" ] || scripts/servers.sh down "$WORK/servers" >/dev/null 2>&1 || true
    rm -rf "$WORK"
}
trap cleanup EXIT

[ -x "$DBBENCH" ] || cargo build --release --quiet
command -v "$SYSBENCH" >/dev/null || { echo "prepare-speed.sh: $SYSBENCH not found (apt-get install sysbench)" >&2; exit 1; }

if [ -z "${MYSQL_SOCKET:-}" ] && [ -z "${PGSQL_HOST:-}" ]; then
    scripts/servers.sh up "$WORK/servers" >/dev/null
    OWN_SERVERS=1
    # shellcheck disable=SC1091
    . "$WORK/servers/env"
    MYSQL_SOCKET=$DBBENCH_TEST_MYSQL_SOCKET
    PGSQL_HOST=$DBBENCH_TEST_PGSQL_HOST
    PGSQL_PORT=$DBBENCH_TEST_PGSQL_PORT
fi
MYSQL_USER=${MYSQL_USER:-root}
PGSQL_PORT=${PGSQL_PORT:-5432}
PGSQL_USER=${PGSQL_USER:-postgres}

MY=(mysql --no-defaults -u"$MYSQL_USER" -S "${MYSQL_SOCKET:-}")
PG=(env PGOPTIONS='-c client_min_messages=warning' psql -X -q -v ON_ERROR_STOP=1 -h "${PGSQL_HOST:-}" -p "$PGSQL_PORT" -U "$PGSQL_USER")

conn_opts() {
    case $1 in
        mariadb) echo "--db-driver=mysql --mysql-socket=$MYSQL_SOCKET --mysql-user=$MYSQL_USER --mysql-db=$DB" ;;
        postgresql) echo "--db-driver=pgsql --pgsql-host=$PGSQL_HOST --pgsql-port=$PGSQL_PORT --pgsql-user=$PGSQL_USER --pgsql-db=$DB" ;;
    esac
}

fresh_db() {
    case $1 in
        mariadb) "${MY[@]}" -e "DROP DATABASE IF EXISTS $DB; CREATE DATABASE $DB" ;;
        postgresql)
            "${PG[@]}" -d postgres -c "DROP DATABASE IF EXISTS $DB"
            "${PG[@]}" -d postgres -c "CREATE DATABASE $DB"
            ;;
    esac
}

PREPARE_OPTS="--tables=$TABLES --table-size=$TABLE_SIZE --threads=$THREADS --rand-seed=$SEED"

# The floor: table t on session (t-1) % THREADS, as the tools spread them.
floor_session() {
    local engine=$1 session=$2 t
    for ((t = session + 1; t <= TABLES; t += THREADS)); do
        case $engine in
            mariadb)
                "${MY[@]}" "$DB" -e "CREATE TABLE sbtest$t(id INTEGER NOT NULL AUTO_INCREMENT, k INTEGER DEFAULT '0' NOT NULL, c CHAR(120) DEFAULT '' NOT NULL, pad CHAR(60) DEFAULT '' NOT NULL, PRIMARY KEY (id)) ENGINE = innodb;
                    LOAD DATA INFILE '$WORK/rows/sbtest$t.tsv' INTO TABLE sbtest$t (k, c, pad);
                    CREATE INDEX k_$t ON sbtest$t(k)"
                ;;
            postgresql)
                "${PG[@]}" -d "$DB" -c "CREATE TABLE sbtest$t(id SERIAL, k INTEGER DEFAULT '0' NOT NULL, c CHAR(120) DEFAULT '' NOT NULL, pad CHAR(60) DEFAULT '' NOT NULL, PRIMARY KEY (id))" \
                    -c "COPY sbtest$t (k, c, pad) FROM '$WORK/rows/sbtest$t.tsv'" -c "CREATE INDEX k_$t ON sbtest$t(k)"
                ;;
        esac
    done
}

floor() {
    local engine=$1 s pids=()
    for ((s = 0; s < THREADS && s < TABLES; s++)); do
        floor_session "$engine" "$s" &
        pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p"; done
}

# The floor's files: the rows of a dbbench prepare with the same seed.
write_rows() {
    local engine=$1 t
    mkdir -p "$WORK/rows"
    chmod 755 "$WORK/rows"
    fresh_db "$engine"
    # shellcheck disable=SC2046
    "$DBBENCH" oltp_read_write $(conn_opts "$engine") $PREPARE_OPTS prepare >/dev/null
    for ((t = 1; t <= TABLES; t++)); do
        case $engine in
            mariadb) "${MY[@]}" -N -B "$DB" -e "SELECT k, c, pad FROM sbtest$t ORDER BY id" >"$WORK/rows/sbtest$t.tsv" ;;
            postgresql) "${PG[@]}" -d "$DB" -c "\\copy (SELECT k, c, pad FROM sbtest$t ORDER BY id) TO '$WORK/rows/sbtest$t.tsv'" ;;
        esac
        chmod 644 "$WORK/rows/sbtest$t.tsv"
    done
}

export -f floor floor_session
export WORK DB TABLES THREADS
run_one() {
    local engine=$1 way=$2 out=$WORK/time
    fresh_db "$engine"
    local cmd
    case $way in
        # shellcheck disable=SC2046
        dbbench-load) cmd="$DBBENCH oltp_read_write $(conn_opts "$engine") $PREPARE_OPTS --db-bulk-load=auto prepare" ;;
        dbbench-insert) cmd="$DBBENCH oltp_read_write $(conn_opts "$engine") $PREPARE_OPTS --db-bulk-load=off prepare" ;;
        sysbench) cmd="$SYSBENCH $SYSBENCH_SCRIPTS/oltp_read_write.lua $(conn_opts "$engine") $PREPARE_OPTS prepare" ;;
        floor) cmd= ;;
    esac
    if [ "$way" = floor ]; then
        # MY/PG are arrays: pass them to the subshell as strings.
        /usr/bin/time -f "%e %U %S" -o "$out" bash -c "MY=(${MY[*]@Q}); PG=(${PG[*]@Q}); floor $engine" >/dev/null
    else
        # shellcheck disable=SC2086
        /usr/bin/time -f "%e %U %S" -o "$out" $cmd >/dev/null
    fi
    local wall user sys
    read -r wall user sys < <(tail -n1 "$out")
    # Every table holds TABLE_SIZE rows, or the run does not count.
    local t n
    for ((t = 1; t <= TABLES; t++)); do
        case $engine in
            mariadb) n=$("${MY[@]}" -N -B "$DB" -e "SELECT COUNT(*) FROM sbtest$t") ;;
            postgresql) n=$("${PG[@]}" -d "$DB" -tA -c "SELECT count(*) FROM sbtest$t") ;;
        esac
        [ "$n" = "$TABLE_SIZE" ] || { echo "prepare-speed.sh: $engine $way: sbtest$t holds $n rows, not $TABLE_SIZE" >&2; exit 1; }
    done
    local cpu
    cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f", u + s }')
    printf '%-11s %-15s round %d: wall %7.2f s  client CPU %6.2f s\n' "$engine" "$way" "$3" "$wall" "$cpu"
    echo "$engine $way $wall $cpu" >>"$WORK/results"
}

ALL_WAYS="dbbench-load dbbench-insert sysbench floor"
read -r -a WAYS <<<"${WAYS:-$ALL_WAYS}"
for way in "${WAYS[@]}"; do
    case " $ALL_WAYS " in *" $way "*) ;; *) echo "prepare-speed.sh: unknown way '$way' in WAYS (ways: $ALL_WAYS)" >&2; exit 1 ;; esac
done
for way in sysbench floor; do
    case " ${WAYS[*]} " in *" $way "*) ;; *) echo "prepare-speed.sh: WAYS must include sysbench and floor (the ratios' denominators)" >&2; exit 1 ;; esac
done
echo "prepare: $PREPARE_OPTS; $ROUNDS round(s); engines: $ENGINES; $(nproc) CPUs; load average $(cut -d' ' -f1-3 /proc/loadavg)"
for engine in $ENGINES; do
    write_rows "$engine"
    for ((r = 1; r <= ROUNDS; r++)); do
        for ((i = 0; i < ${#WAYS[@]}; i++)); do
            run_one "$engine" "${WAYS[$(((i + r - 1) % ${#WAYS[@]}))]}" "$r"
        done
    done
    fresh_db "$engine"
done

echo
echo "medians of $ROUNDS round(s), $PREPARE_OPTS"
awk '
    function median(list,   n, a, i, j, t) {
        n = split(list, a, " ")
        for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    { wall[$1 " " $2] = wall[$1 " " $2] " " $3; cpu[$1 " " $2] = cpu[$1 " " $2] " " $4; if (!($1 in seen)) { seen[$1] = 1; order[++ne] = $1 } }
    END {
        printf "%-11s %-15s %9s %9s %10s %10s %9s\n", "engine", "way", "wall s", "CPU s", "wall/sysb", "CPU/sysb", "wall/floor"
        split("dbbench-load dbbench-insert sysbench floor", ways, " ")
        for (e = 1; e <= ne; e++) {
            en = order[e]
            sw = median(wall[en " sysbench"]); sc = median(cpu[en " sysbench"]); fw = median(wall[en " floor"])
            for (w = 1; w <= 4; w++) {
                k = en " " ways[w]
                if (!(k in wall)) continue
                mw = median(wall[k]); mc = median(cpu[k])
                printf "%-11s %-15s %9.2f %9.2f %10.2f %10.2f %9.2f\n", en, ways[w], mw, mc, mw / sw, (sc > 0 ? mc / sc : 0), mw / fw
            }
        }
    }' "$WORK/results"
