#!/usr/bin/env bash
# Throwaway MariaDB and PostgreSQL servers for dbbench's tests and benchmarks.
#
#   scripts/servers.sh up   DIR [--only mariadb|postgresql]
#   scripts/servers.sh down DIR [--only mariadb|postgresql]
#
# `up` creates fresh data directories inside DIR (or reuses ones left by an
# earlier `up` whose servers were stopped), starts the servers on free
# loopback ports with unix sockets inside DIR, creates the test users and
# databases, and writes DIR/env (export lines for the tests).  `down` stops
# whatever runs from DIR; it is idempotent and bounded in time.
#
# Nothing here touches system-wide services or their ports/sockets: every
# file lives in DIR and the ports are picked free at start time.
set -euo pipefail

# Debian puts mariadbd in /usr/sbin, which is not on a normal user's PATH.
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"

# Extra mariadbd options, after the defaults below (benchmarks use this for
# a bigger buffer pool): DBBENCH_MARIADB_OPTIONS="--innodb-buffer-pool-size=2G".
# Extra postgres settings, after the defaults (e.g. more connections for
# bench/interval-accuracy.sh): DBBENCH_POSTGRESQL_OPTIONS="-c max_connections=4200".
# Bounds for every wait (seconds).
START_TIMEOUT=${DBBENCH_SERVER_START_TIMEOUT:-60}
STOP_TIMEOUT=${DBBENCH_SERVER_STOP_TIMEOUT:-30}
# How many times to retry a start with another port when the picked port was
# taken between picking and binding (a race with any other process).
PORT_ATTEMPTS=5

PROG=$(basename "$0")
die() { echo "$PROG: error: $*" >&2; exit 1; }
log() { echo "$PROG: $*" >&2; }

usage() {
    echo "usage: $PROG up|down DIR [--only mariadb|postgresql]" >&2
    exit 2
}

# ---------------------------------------------------------------- arguments
ACTION="" DIR="" ONLY=""
while [ $# -gt 0 ]; do
    case "$1" in
        --only) [ $# -ge 2 ] || usage; ONLY=$2; shift 2 ;;
        --only=*) ONLY=${1#--only=}; shift ;;
        -h|--help) usage ;;
        -*) usage ;;
        *)
            if [ -z "$ACTION" ]; then ACTION=$1
            elif [ -z "$DIR" ]; then DIR=$1
            else usage; fi
            shift ;;
    esac
done
case "$ACTION" in up|down) ;; *) usage ;; esac
[ -n "$DIR" ] || usage
case "$ONLY" in ""|mariadb|postgresql) ;; *) die "--only takes mariadb or postgresql, not '$ONLY'" ;; esac
want() { [ -z "$ONLY" ] || [ "$ONLY" = "$1" ]; }

if [ "$ACTION" = up ]; then mkdir -p "$DIR"; fi
[ -d "$DIR" ] || { [ "$ACTION" = down ] && exit 0; die "no such directory: $DIR"; }
DIR=$(cd "$DIR" && pwd -P)   # absolute: sockets and pid files are compared by path

IS_ROOT=0; [ "$(id -u)" -eq 0 ] && IS_ROOT=1

# ---------------------------------------------------------------- layout
MY_DATA=$DIR/mariadb
MY_SOCK=$DIR/mariadb.sock
MY_PID=$DIR/mariadb.pid
MY_LOG=$DIR/mariadb.err
MY_INSTALL_LOG=$DIR/mariadb-install.log
# A private --tmpdir: bootstraps and servers sharing /tmp clash on their
# temporary tables' file names (concurrent mariadb-install-db runs fail).
MY_TMP=$DIR/mariadb-tmp
# What identifies our mariadbd in /proc/PID/cmdline (joined with spaces).
MY_NEEDLE="--datadir=$MY_DATA "

PG_DATA=$DIR/postgresql
# PostgreSQL's socket directory.  As root the server runs as the `postgres`
# user, which must be able to create the socket and its lock file there; a
# dedicated subdirectory owned by that user avoids making DIR itself writable
# by others.  Clients get this path from DBBENCH_TEST_PGSQL_HOST.
PG_SOCKDIR=$DIR/pgsql-run
PG_LOG=$DIR/postgresql.log
PG_INIT_LOG=$DIR/postgresql-initdb.log
PG_CTL_LOG=$DIR/postgresql-ctl.log   # pg_ctl's own messages
# What identifies our postmaster in /proc/PID/cmdline (pg_ctl passes -D).
PG_NEEDLE="-D $PG_DATA "

ENV_FILE=$DIR/env

# ---------------------------------------------------------------- helpers

# Print the last lines of a log file, indented, for failure reports.
tail_log() {
    if [ -s "$1" ]; then
        echo "---- last lines of $1 ----" >&2
        tail -n 25 "$1" | sed 's/^/  | /' >&2
        echo "----" >&2
    fi
}

# True if something accepts TCP connections on 127.0.0.1:$1.
port_in_use() {
    # bash's /dev/tcp needs no extra package (python3, ss are not guaranteed
    # on a fresh machine); a refused connection means the port is free.
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# Pick a port that nobody listens on.  The range 20000-32767 lies below
# Linux's default ephemeral range (32768-60999), so outgoing connections do
# not grab it, and above the usual fixed service ports (3306, 5432, 13306,
# 15432...).  A remaining race is handled by retrying the start.
pick_port() {
    local p i
    for ((i = 0; i < 200; i++)); do
        p=$((20000 + (RANDOM * 32768 + RANDOM) % 12768))
        [ "$p" = "${AVOID_PORT:-}" ] && continue
        port_in_use "$p" || { echo "$p"; return 0; }
    done
    die "could not find a free TCP port on 127.0.0.1"
}

# True if pid $1 is alive and its command line mentions $2 (guards against
# killing an unrelated process that reused a stale pid).
pid_is() {
    local pid=$1 needle=$2
    [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
    tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$needle"
}

# Pid of a process whose command line mentions $1, if any.  Scans /proc
# directly: procps (pgrep) is not installed on minimal Debian images.
find_pid() {
    local d
    for d in /proc/[0-9]*; do
        pid_is "${d#/proc/}" "$1" && { echo "${d#/proc/}"; return 0; }
    done
    return 0
}

# Wait (bounded) for pid $1 to exit.
wait_pid_gone() {
    local pid=$1 limit=$2 i
    for ((i = 0; i < limit * 10; i++)); do
        [ -d "/proc/$pid" ] || return 0
        # A zombie child counts as gone.
        [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" = Z ] && return 0
        sleep 0.1
    done
    return 1
}

# Stop pid $1 (if it is a process mentioning $2): TERM, bounded wait, KILL.
kill_leftover() {
    local pid=$1 needle=$2 what=$3
    pid_is "$pid" "$needle" || return 0
    log "$what (pid $pid) still running: sending SIGTERM"
    kill -TERM "$pid" 2>/dev/null || true
    wait_pid_gone "$pid" "$STOP_TIMEOUT" && return 0
    log "$what (pid $pid) ignored SIGTERM for ${STOP_TIMEOUT}s: sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    wait_pid_gone "$pid" 10 || log "warning: $what (pid $pid) did not exit even after SIGKILL"
}

need_cmd() {
    command -v "$1" >/dev/null 2>&1 ||
        die "'$1' not found; install the Debian packages: apt-get install -y $2"
}

# Unix socket paths are limited to 107 bytes; fail clearly instead of with a
# cryptic bind error.
check_socket_path() {
    [ "${#1}" -lt 100 ] || die "socket path too long (${#1} bytes, max ~100): $1; use a shorter DIR"
}

# ---------------------------------------------------------------- MariaDB

my_client() {   # mariadb client as the server's root over the socket
    mariadb --no-defaults --socket="$MY_SOCK" --user=root --batch --skip-column-names "$@"
}

mariadb_up() {
    need_cmd mariadbd mariadb-server
    need_cmd mariadb-install-db mariadb-server
    need_cmd mariadb-admin mariadb-client
    need_cmd mariadb mariadb-client
    check_socket_path "$MY_SOCK"

    # As root, run the server as root: the `mysql` user would need access to
    # DIR and all its parents, while --user=root works in any directory.
    local user_opt=()
    [ "$IS_ROOT" = 1 ] && user_opt=(--user=root)

    if [ ! -d "$MY_DATA/mysql" ]; then
        rm -rf "$MY_DATA"
        log "initializing MariaDB data directory $MY_DATA"
        # 'normal' root auth: root@localhost without password, usable from
        # any OS user (the default unix_socket auth would only admit the OS
        # user that ran this script under the same name).
        mkdir -p "$MY_TMP"
        if ! mariadb-install-db --no-defaults "${user_opt[@]}" --datadir="$MY_DATA" --tmpdir="$MY_TMP" \
                --auth-root-authentication-method=normal --skip-test-db \
                --skip-name-resolve >"$MY_INSTALL_LOG" 2>&1; then
            tail_log "$MY_INSTALL_LOG"
            die "mariadb-install-db failed; log: $MY_INSTALL_LOG"
        fi
    fi

    local attempt port pid ready i
    for ((attempt = 1; attempt <= PORT_ATTEMPTS; attempt++)); do
        port=$(pick_port)
        rm -f "$MY_SOCK" "$MY_PID"
        : >"$MY_LOG"
        log "starting MariaDB on 127.0.0.1:$port, socket $MY_SOCK"
        # setsid: the server must outlive this script and must not receive a
        # terminal's Ctrl-C aimed at the test run (test.sh stops it itself).
        mkdir -p "$MY_TMP"
        setsid mariadbd --no-defaults "${user_opt[@]}" \
            --datadir="$MY_DATA" --tmpdir="$MY_TMP" --socket="$MY_SOCK" --pid-file="$MY_PID" \
            --port="$port" --bind-address=127.0.0.1 --skip-name-resolve \
            --log-error="$MY_LOG" \
            --max-connections=5000 --max-prepared-stmt-count=1000000 \
            --innodb-buffer-pool-size=256M --innodb-flush-log-at-trx-commit=2 \
            --skip-log-bin --performance-schema=OFF \
            ${DBBENCH_MARIADB_OPTIONS:-} \
            </dev/null >>"$MY_LOG" 2>&1 &
        pid=$!
        ready=0
        for ((i = 0; i < START_TIMEOUT * 5; i++)); do
            if mariadb-admin --no-defaults --socket="$MY_SOCK" --user=root \
                    --connect-timeout=2 ping >/dev/null 2>&1; then
                ready=1; break
            fi
            [ -d "/proc/$pid" ] || break   # died: no point waiting
            sleep 0.2
        done
        [ "$ready" = 1 ] && break
        if [ -d "/proc/$pid" ]; then
            kill_leftover "$pid" "$MY_NEEDLE" "MariaDB"
            tail_log "$MY_LOG"
            die "MariaDB did not become ready within ${START_TIMEOUT}s; log: $MY_LOG"
        fi
        wait "$pid" 2>/dev/null || true
        if grep -qiE 'address already in use|do you already have another' "$MY_LOG"; then
            log "port $port was taken meanwhile; retrying with another port"
            continue
        fi
        tail_log "$MY_LOG"
        die "MariaDB exited during startup; log: $MY_LOG"
    done
    [ "$ready" = 1 ] || die "MariaDB: no free port after $PORT_ATTEMPTS attempts; log: $MY_LOG"

    # Test accounts.  sbtest has no password (like sysbench's default) and
    # all privileges, so tests may create extra databases; sbpass exists for
    # wrong-password tests.  The anonymous accounts mariadb-install-db may
    # create would let unknown user names in; drop them.
    if ! my_client >>"$MY_LOG" 2>&1 <<'SQL'
CREATE DATABASE IF NOT EXISTS sbtest;
CREATE USER IF NOT EXISTS 'sbtest'@'localhost';
CREATE USER IF NOT EXISTS 'sbtest'@'127.0.0.1';
GRANT ALL PRIVILEGES ON *.* TO 'sbtest'@'localhost' WITH GRANT OPTION;
GRANT ALL PRIVILEGES ON *.* TO 'sbtest'@'127.0.0.1' WITH GRANT OPTION;
CREATE USER IF NOT EXISTS 'sbpass'@'localhost' IDENTIFIED BY 'secret';
CREATE USER IF NOT EXISTS 'sbpass'@'127.0.0.1' IDENTIFIED BY 'secret';
GRANT ALL PRIVILEGES ON sbtest.* TO 'sbpass'@'localhost';
GRANT ALL PRIVILEGES ON sbtest.* TO 'sbpass'@'127.0.0.1';
DROP USER IF EXISTS ''@'localhost';
SQL
    then
        tail_log "$MY_LOG"
        die "MariaDB: creating the sbtest database/users failed; log: $MY_LOG"
    fi
    local anon
    anon=$(my_client -e "SELECT Host FROM mysql.user WHERE User=''") || true
    while IFS= read -r h; do
        [ -n "$h" ] && my_client -e "DROP USER IF EXISTS ''@'$h'" >>"$MY_LOG" 2>&1
    done <<<"$anon"

    MY_PORT=$port
    log "MariaDB ready (pid $(cat "$MY_PID"), port $MY_PORT)"
}

mariadb_down() {
    local pid=""
    [ -f "$MY_PID" ] && pid=$(cat "$MY_PID" 2>/dev/null || true)
    # The pid file may be missing if startup failed early; find the server
    # by its unique datadir instead.
    pid_is "$pid" "$MY_NEEDLE" || pid=$(find_pid "$MY_NEEDLE")
    if pid_is "$pid" "$MY_NEEDLE"; then
        log "stopping MariaDB (pid $pid)"
        if [ -S "$MY_SOCK" ]; then
            timeout "$STOP_TIMEOUT" mariadb-admin --no-defaults --socket="$MY_SOCK" \
                --user=root --connect-timeout=5 --shutdown-timeout="$STOP_TIMEOUT" \
                shutdown >/dev/null 2>&1 || true
        fi
        wait_pid_gone "$pid" "$STOP_TIMEOUT" || true
        kill_leftover "$pid" "$MY_NEEDLE" "MariaDB"
    fi
    rm -f "$MY_SOCK" "$MY_SOCK.lock" "$MY_PID"
}

# ---------------------------------------------------------------- PostgreSQL

PG_BIN=""
# PostgreSQL refuses to run as root, so as root run its tools as `postgres`.
# An array prefix rather than a function, so it also works after `timeout`.
AS_PG=()
[ "$IS_ROOT" = 1 ] && AS_PG=(runuser -u postgres --)
find_pg_bin() {
    # Use the newest installed major version (Debian 12: 15).
    local d
    d=$(find /usr/lib/postgresql -mindepth 2 -maxdepth 2 -name bin -type d 2>/dev/null | sort -V | tail -n 1)
    if [ -z "$d" ] || [ ! -x "$d/initdb" ] || [ ! -x "$d/pg_ctl" ]; then
        die "PostgreSQL server binaries not found under /usr/lib/postgresql/*/bin; install the Debian package: apt-get install -y postgresql"
    fi
    PG_BIN=$d
}

pg_psql() {   # psql as the bootstrap superuser over the socket
    psql -X -q -v ON_ERROR_STOP=1 -h "$PG_SOCKDIR" -p "$PG_PORT" -U postgres -d "$1"
}

postgresql_up() {
    find_pg_bin
    need_cmd psql postgresql-client
    need_cmd pg_isready postgresql-client
    check_socket_path "$PG_SOCKDIR/.s.PGSQL.65535"

    mkdir -p "$PG_SOCKDIR"
    touch "$PG_LOG" "$PG_INIT_LOG"
    if [ "$IS_ROOT" = 1 ]; then
        getent passwd postgres >/dev/null ||
            die "system user 'postgres' missing (it comes with the Debian postgresql package)"
        # The postgres user must reach DIR (mktemp -d makes 0700 dirs).
        chmod 755 "$DIR"
        chown postgres: "$PG_SOCKDIR" "$PG_LOG" "$PG_INIT_LOG"
        [ -d "$PG_DATA" ] && chown -R postgres: "$PG_DATA"
        runuser -u postgres -- test -x "$DIR" -a -w "$PG_SOCKDIR" ||
            die "user 'postgres' cannot access $DIR (a parent directory is not world-searchable); use a DIR under /tmp"
    fi

    if [ ! -f "$PG_DATA/PG_VERSION" ]; then
        rm -rf "$PG_DATA"
        if [ "$IS_ROOT" = 1 ]; then
            # initdb as postgres needs to create PG_DATA itself.
            mkdir -m 700 "$PG_DATA" && chown postgres: "$PG_DATA"
        fi
        log "initializing PostgreSQL data directory $PG_DATA ($PG_BIN)"
        if ! "${AS_PG[@]}" "$PG_BIN/initdb" -D "$PG_DATA" -U postgres --auth=trust \
                --encoding=UTF8 --locale=C --no-sync >"$PG_INIT_LOG" 2>&1; then
            tail_log "$PG_INIT_LOG"
            die "PostgreSQL initdb failed; log: $PG_INIT_LOG"
        fi
        # Trust everyone on the socket and on 127.0.0.1 except sbpass, which
        # must give its password (for wrong-password tests).  First match wins.
        "${AS_PG[@]}" tee "$PG_DATA/pg_hba.conf" >/dev/null <<'HBA'
# TYPE  DATABASE  USER    ADDRESS        METHOD
local   all       sbpass                 scram-sha-256
host    all       sbpass  127.0.0.1/32   scram-sha-256
local   all       all                    trust
host    all       all     127.0.0.1/32   trust
HBA
    fi

    local attempt port pid ready=0 i
    for ((attempt = 1; attempt <= PORT_ATTEMPTS; attempt++)); do
        port=$(AVOID_PORT=${MY_PORT:-} pick_port)
        : >"$PG_LOG"
        log "starting PostgreSQL on 127.0.0.1:$port, socket dir $PG_SOCKDIR"
        # Settings go on the command line so a reused datadir gets the new
        # port.  fsync/synchronous_commit/full_page_writes off: throwaway data.
        # pg_ctl -w waits (bounded by -t) until the server accepts
        # connections and returns early if the postmaster dies.
        if "${AS_PG[@]}" "$PG_BIN/pg_ctl" -D "$PG_DATA" -l "$PG_LOG" -w -t "$START_TIMEOUT" \
                -o "-p $port -c listen_addresses=127.0.0.1 -c unix_socket_directories='$PG_SOCKDIR' -c max_connections=1200 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c shared_buffers=128MB ${DBBENCH_POSTGRESQL_OPTIONS:-}" \
                start >"$PG_CTL_LOG" 2>&1; then
            # Double-check over the socket the tests will use (bounded).
            for ((i = 0; i < START_TIMEOUT * 5; i++)); do
                pg_isready -q -h "$PG_SOCKDIR" -p "$port" -U postgres -d postgres -t 2 && { ready=1; break; }
                sleep 0.2
            done
        fi
        [ "$ready" = 1 ] && break
        pid=""
        [ -f "$PG_DATA/postmaster.pid" ] && pid=$(head -n 1 "$PG_DATA/postmaster.pid" 2>/dev/null || true)
        if pid_is "$pid" "$PG_NEEDLE"; then
            postgresql_down
            tail_log "$PG_CTL_LOG"; tail_log "$PG_LOG"
            die "PostgreSQL did not become ready within ${START_TIMEOUT}s; log: $PG_LOG"
        fi
        if grep -qiE 'could not bind|address already in use|could not create any TCP/IP sockets' "$PG_LOG"; then
            log "port $port was taken meanwhile; retrying with another port"
            continue
        fi
        tail_log "$PG_CTL_LOG"; tail_log "$PG_LOG"
        die "PostgreSQL exited during startup; log: $PG_LOG"
    done
    [ "$ready" = 1 ] || die "PostgreSQL: no free port after $PORT_ATTEMPTS attempts; log: $PG_LOG"
    PG_PORT=$port

    if ! pg_psql postgres >>"$PG_LOG" 2>&1 <<'SQL'
DO $$
BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'sbtest') THEN
    CREATE ROLE sbtest SUPERUSER LOGIN;
  END IF;
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'sbpass') THEN
    CREATE ROLE sbpass LOGIN PASSWORD 'secret';
  END IF;
END
$$;
SELECT 'CREATE DATABASE sbtest OWNER sbtest'
  WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = 'sbtest') \gexec
GRANT ALL ON DATABASE sbtest TO sbpass;
SQL
    then
        tail_log "$PG_LOG"
        die "PostgreSQL: creating the sbtest database/roles failed; log: $PG_LOG"
    fi
    # sbpass may create tables in sbtest's public schema (PG 15 revoked that
    # from PUBLIC by default).
    if ! echo "GRANT ALL ON SCHEMA public TO sbpass;" | pg_psql sbtest >>"$PG_LOG" 2>&1; then
        tail_log "$PG_LOG"
        die "PostgreSQL: granting schema rights failed; log: $PG_LOG"
    fi
    log "PostgreSQL ready (pid $(head -n 1 "$PG_DATA/postmaster.pid"), port $PG_PORT)"
}

postgresql_down() {
    [ -f "$PG_DATA/postmaster.pid" ] || return 0
    local pid
    pid=$(head -n 1 "$PG_DATA/postmaster.pid" 2>/dev/null || true)
    if pid_is "$pid" "$PG_NEEDLE"; then
        log "stopping PostgreSQL (pid $pid)"
        find_pg_bin
        # pg_ctl stop -t bounds its own wait; timeout guards against a hang.
        timeout $((STOP_TIMEOUT + 5)) \
            "${AS_PG[@]}" "$PG_BIN/pg_ctl" -D "$PG_DATA" -m fast -t "$STOP_TIMEOUT" -w stop \
            >/dev/null 2>&1 || true
        wait_pid_gone "$pid" 5 || true
        kill_leftover "$pid" "$PG_NEEDLE" "PostgreSQL"
    fi
    rm -f "$PG_DATA/postmaster.pid"
}

# ---------------------------------------------------------------- main

if [ "$ACTION" = down ]; then
    rc=0
    if want mariadb; then mariadb_down || rc=1; fi
    if want postgresql; then postgresql_down || rc=1; fi
    [ "$rc" = 0 ] || die "stopping servers in $DIR failed"
    exit 0
fi

# up: if anything fails, stop what this invocation started so no server is
# left behind (test.sh calls `down` too, but direct users might not).
STARTED=()
on_exit() {
    local rc=$?
    if [ "$rc" != 0 ] && [ "${#STARTED[@]}" -gt 0 ]; then
        log "startup failed: stopping the servers started so far"
        for s in "${STARTED[@]}"; do "${s}_down" || true; done
    fi
    exit "$rc"
}
trap on_exit EXIT
trap 'exit 130' INT TERM

# Refuse to start over servers that already run from DIR, before anything is
# started (the failure cleanup above must not stop those).
if want mariadb && [ -f "$MY_PID" ] && pid_is "$(cat "$MY_PID")" "$MY_NEEDLE"; then
    die "MariaDB from $DIR is already running (pid $(cat "$MY_PID")); run '$PROG down $DIR' first"
fi
if want postgresql && [ -f "$PG_DATA/postmaster.pid" ] &&
        pid_is "$(head -n 1 "$PG_DATA/postmaster.pid")" "$PG_NEEDLE"; then
    die "PostgreSQL from $DIR is already running; run '$PROG down $DIR' first"
fi

MY_PORT="" PG_PORT=""
if want mariadb; then STARTED+=(mariadb); mariadb_up; fi
if want postgresql; then STARTED+=(postgresql); postgresql_up; fi

{
    echo "# written by $PROG up $DIR; source this file"
    printf 'export DBBENCH_TEST_SERVER_DIR=%q\n' "$DIR"
    if [ -n "$MY_PORT" ]; then
        printf 'export DBBENCH_TEST_MYSQL_SOCKET=%q\n' "$MY_SOCK"
        printf 'export DBBENCH_TEST_MYSQL_HOST=%q\n' 127.0.0.1
        printf 'export DBBENCH_TEST_MYSQL_PORT=%q\n' "$MY_PORT"
    fi
    if [ -n "$PG_PORT" ]; then
        printf 'export DBBENCH_TEST_PGSQL_HOST=%q\n' "$PG_SOCKDIR"
        printf 'export DBBENCH_TEST_PGSQL_PORT=%q\n' "$PG_PORT"
    fi
} >"$ENV_FILE.tmp"
mv "$ENV_FILE.tmp" "$ENV_FILE"
chmod 644 "$ENV_FILE"
log "servers up; environment in $ENV_FILE"
