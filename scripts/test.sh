#!/usr/bin/env bash
# dbbench's test command (the README's and CI's):
#
#   scripts/test.sh [extra cargo test args...]
#
# Checks formatting (cargo fmt --check) and lints (cargo clippy -D warnings)
# first, installs the Debian packages it needs when missing (as root), builds
# the release binary, starts throwaway MariaDB and PostgreSQL servers in a temp
# dir (scripts/servers.sh), runs `cargo test --release` against them, and
# always stops the servers and removes the temp dir.  Exits with cargo test's
# status.
#
# Environment:
#   DBBENCH_SKIP_CARGO=1   skip build and tests: only install/up/smoke/down
#                          (to check this script's mechanics)
#   DBBENCH_TEST_TMPDIR    parent of the temp dir (default $TMPDIR or /tmp)
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$REPO"
# Debian puts the server binaries in /usr/sbin, not on a normal user's PATH.
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"

# chromium renders the HTML report in a test; python3-openpyxl reads the
# spreadsheet export back; fonts-dejavu-core gives the PNG charts (report
# --export-charts) their text; prometheus scrapes a live run (tests/metrics.rs);
# python3-venv holds kubernetes-validate from PyPI (tests/k8s.rs).
PACKAGES=(mariadb-server postgresql sysbench time chromium python3-openpyxl openssl fonts-dejavu-core prometheus python3-venv)
log() { echo "test.sh: $*" >&2; }
die() { echo "test.sh: error: $*" >&2; exit 1; }

# ------------------------------------------------------------ phase timing
PHASE="" PHASE_START=0
now() { date +%s.%N; }
phase() {   # end the current phase (printing its duration), start "$1"
    local t
    t=$(now)
    if [ -n "$PHASE" ]; then
        log "$(awk -v a="$PHASE_START" -v b="$t" -v p="$PHASE" 'BEGIN { printf "%-8s done in %6.1f s", p, b - a }')"
    fi
    PHASE=${1:-} PHASE_START=$t
    if [ -n "$PHASE" ]; then log "== $PHASE"; fi
}

# ------------------------------------------------------------ lint
# First, so that an unformatted or lint-failing change fails in seconds,
# before any package is installed or server started.
if [ "${DBBENCH_SKIP_CARGO:-}" != 1 ]; then
    if ! command -v cargo >/dev/null 2>&1 && [ -f "$HOME/.cargo/env" ]; then
        # shellcheck disable=SC1091
        . "$HOME/.cargo/env"
    fi
    command -v cargo >/dev/null 2>&1 || die "cargo not found; install Rust (https://rustup.rs)"
    phase lint
    cargo fmt --check >/dev/null || die "the code is not formatted as rustfmt.toml says: run cargo fmt (cargo fmt --check shows the difference)"
    LINT_LOCKED=()
    [ -f Cargo.lock ] && LINT_LOCKED=(--locked)
    cargo clippy --all-targets "${LINT_LOCKED[@]}" -- -D warnings ||
        die "cargo clippy --all-targets -- -D warnings failed: fix the warnings above"
fi

# ------------------------------------------------------------ packages
missing_tools() {
    local t
    for t in mariadbd mariadb-install-db mariadb-admin mariadb psql pg_isready sysbench timeout openssl; do
        command -v "$t" >/dev/null 2>&1 || echo "$t"
    done
    compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || echo initdb
    [ -x /usr/bin/time ] || echo /usr/bin/time
    [ -x /usr/bin/chromium ] || echo chromium
    [ -x /usr/bin/prometheus ] || echo prometheus
    /usr/bin/python3 -c 'import openpyxl' >/dev/null 2>&1 || echo python3-openpyxl
    /usr/bin/python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || echo python3-venv
    [ -e /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] || echo fonts-dejavu-core
}

phase packages
missing=$(missing_tools | tr '\n' ' ')
if [ -n "$missing" ]; then
    if [ "$(id -u)" -ne 0 ]; then
        die "missing ${missing% }; install with: sudo apt-get install -y ${PACKAGES[*]}"
    fi
    log "missing ${missing% }; installing ${PACKAGES[*]}"
    # Keep the packages' own system services from starting: we run private
    # instances, and idle system servers would only cost memory and CPU.
    # policy-rc.d is Debian's mechanism for this; only add it if none exists.
    POLICY=/usr/sbin/policy-rc.d
    if [ ! -e "$POLICY" ]; then
        printf '#!/bin/sh\n# temporary, from dbbench scripts/test.sh\nexit 101\n' >"$POLICY"
        chmod 755 "$POLICY"
        trap 'rm -f "$POLICY"' EXIT
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update
    apt-get install -y --no-install-recommends "${PACKAGES[@]}"
    if grep -q 'from dbbench scripts/test.sh' "$POLICY" 2>/dev/null; then rm -f "$POLICY"; fi
    trap - EXIT
    missing=$(missing_tools | tr '\n' ' ')
    [ -z "$missing" ] || die "still missing after apt-get install: ${missing% }"
fi

# ------------------------------------------------------------ build
TARGET_DIR=${CARGO_TARGET_DIR:-$REPO/target}
export DBBENCH_BIN=$TARGET_DIR/release/dbbench
LOCKED=()
[ -f Cargo.lock ] && LOCKED=(--locked)
if [ "${DBBENCH_SKIP_CARGO:-}" != 1 ]; then
    phase build
    # Built before the servers start: on small machines the compiler and the
    # servers would otherwise compete for CPU.
    cargo build --release "${LOCKED[@]}"
fi

# ------------------------------------------------------------ servers
phase servers
# Tests and benchmarks open many connections (up to thousands of clients).
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
SERVER_DIR=$(mktemp -d "${DBBENCH_TEST_TMPDIR:-${TMPDIR:-/tmp}}/dbbench-test.XXXXXX")
# As root, PostgreSQL runs as `postgres`, which must reach the dir (mktemp: 0700).
chmod 755 "$SERVER_DIR"

TEST_RC=0 CARGO_PID=""
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    [ "$TEST_RC" = 0 ] && TEST_RC=$rc
    if [ -n "$CARGO_PID" ]; then
        kill -TERM -- "-$CARGO_PID" 2>/dev/null || kill -TERM "$CARGO_PID" 2>/dev/null || true
    fi
    phase down
    "$REPO/scripts/servers.sh" down "$SERVER_DIR" || log "warning: stopping the servers failed"
    rm -rf "$SERVER_DIR"
    phase ""
    exit "$TEST_RC"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

"$REPO/scripts/servers.sh" up "$SERVER_DIR"
# shellcheck disable=SC1091
. "$SERVER_DIR/env"

# Smoke check, so that a broken server setup is reported as such and not as
# a pile of failing tests.
mariadb --no-defaults --socket="$DBBENCH_TEST_MYSQL_SOCKET" -u sbtest sbtest -e 'SELECT 1' >/dev/null ||
    die "cannot connect to MariaDB as sbtest via $DBBENCH_TEST_MYSQL_SOCKET; log: $SERVER_DIR/mariadb.err"
psql -X -q -h "$DBBENCH_TEST_PGSQL_HOST" -p "$DBBENCH_TEST_PGSQL_PORT" -U sbtest -d sbtest -c 'SELECT 1' >/dev/null ||
    die "cannot connect to PostgreSQL as sbtest via $DBBENCH_TEST_PGSQL_HOST:$DBBENCH_TEST_PGSQL_PORT; log: $SERVER_DIR/postgresql.log"
log "MariaDB: socket $DBBENCH_TEST_MYSQL_SOCKET, port $DBBENCH_TEST_MYSQL_PORT; PostgreSQL: $DBBENCH_TEST_PGSQL_HOST port $DBBENCH_TEST_PGSQL_PORT"

# Tells the integration tests that servers are provided, so they must fail
# (not skip) when they cannot use them.
export DBBENCH_TEST_REQUIRE_SERVERS=1

# ------------------------------------------------------------ tests
if [ "${DBBENCH_SKIP_CARGO:-}" = 1 ]; then
    log "DBBENCH_SKIP_CARGO=1: skipping cargo build and cargo test"
else
    phase test
    # In the background plus `wait`, so that a SIGTERM/SIGINT runs the
    # cleanup at once (bash defers traps until a foreground child exits);
    # in its own process group (setsid: a background job is not a group
    # leader, so setsid execs without forking and the pgid is $!), so that
    # the cleanup can stop cargo together with the test binaries it runs.
    # Tests that skip a check (a program missing, not root) append why to
    # this file (tests/common: skipped); the count is printed below, so a
    # green run says what it did not test.
    export DBBENCH_TEST_SKIP_LOG=$SERVER_DIR/skipped
    : > "$DBBENCH_TEST_SKIP_LOG"
    setsid cargo test --release "${LOCKED[@]}" "$@" &
    CARGO_PID=$!
    wait "$CARGO_PID" || TEST_RC=$?
    CARGO_PID=""
    SKIPPED=$(sort -u "$DBBENCH_TEST_SKIP_LOG" | grep -c . || true)
    if [ "$SKIPPED" = 0 ]; then
        log "skipped checks: none"
    else
        log "skipped checks: $SKIPPED (test: why)"
        sort -u "$DBBENCH_TEST_SKIP_LOG" | sed 's/^/test.sh:   /' >&2
    fi
    if [ "$TEST_RC" != 0 ]; then
        # The temp dir is about to go; show the server side of any failure.
        for f in "$SERVER_DIR/mariadb.err" "$SERVER_DIR/postgresql.log"; do
            [ -s "$f" ] || continue
            echo "---- last lines of $f ----" >&2
            tail -n 30 "$f" >&2
        done
        log "cargo test failed (exit $TEST_RC)"
    fi
fi
exit "$TEST_RC"
