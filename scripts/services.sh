#!/usr/bin/env bash
# Local MariaDB and RabbitMQ for fcctl's demo and tests: Debian packages, plain processes on
# loopback on non-default ports, data under .services/ (git-ignored). Idempotent.
#   scripts/services.sh up|down|status|env
# A user who already has servers sets FCCTL_TEST_MYSQL_URL and FCCTL_TEST_AMQP_URL: then `up`
# installs and starts nothing and `env` prints those.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
# A second, separate pair (e.g. for developing the fault suite beside a running suite):
# FCCTL_SERVICES_DIR plus the FCCTL_LOCAL_*_PORT variables below.
BASE="${FCCTL_SERVICES_DIR:-$ROOT/.services}"
MY_PORT=${FCCTL_LOCAL_MYSQL_PORT:-33306}
MQ_PORT=${FCCTL_LOCAL_AMQP_PORT:-35672}
MQ_DIST_PORT=${FCCTL_LOCAL_AMQP_DIST_PORT:-35673}
EPMD_PORT=${FCCTL_LOCAL_EPMD_PORT:-34369}
# The management API (loopback only): `doctor --isolation` and the tests read the broker's
# permissions, policies and bindings through it.
MQ_MGMT_PORT=${FCCTL_LOCAL_AMQP_MANAGEMENT_PORT:-35674}
# Debian's /usr/sbin wrappers switch to the `rabbitmq` user, which cannot enter a directory such as
# /root or a `mktemp -d` one (0700): the broker runs as the invoking user instead, through the
# scripts the wrappers call, with its own Erlang cookie ($HOME is its data directory).
RMQ_BIN=${FCCTL_RABBITMQ_BIN:-/usr/lib/rabbitmq/bin}
MY_DIR="$BASE/mariadb"
MQ_DIR="$BASE/rabbitmq"
MY_SOCK="$MY_DIR/mysqld.sock"
MQ_NODE="fcctl@localhost"
# The server's sql_mode (issue 35 §4): MySQL 8.0's default, the mode most of fcctl's users run, so
# that every test runs under ONLY_FULL_GROUP_BY and the zero-date rules. `sql-mode mariadb` switches
# the running server to MariaDB 10.11's own default (scripts/test.sh runs a second pass under it).
MYSQL8_SQL_MODE=ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION
MARIADB_SQL_MODE=STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_AUTO_CREATE_USER,NO_ENGINE_SUBSTITUTION
MY_SQL_MODE=${FCCTL_LOCAL_MYSQL_SQL_MODE:-$MYSQL8_SQL_MODE}
# Local development credentials only; never used for anything but these loopback servers.
MY_USER=fcctl
MY_PASS=fcctl-local
MQ_USER=fcctl
MQ_PASS=fcctl-local
MQ_VHOST=fcctl
# The invoking user runs both servers, and is MariaDB's socket-authenticated administrator.
ME=$(id -un)

log() { printf 'services: %s\n' "$*" >&2; }
# One line naming the cause, never a crash dump; exit 3 (environment).
die() { log "$*"; exit 3; }

# The URLs `env` prints for these local servers are not external ones (the fault suite restarts them).
external() { [ -n "${FCCTL_TEST_MYSQL_URL:-}" ] && [ -n "${FCCTL_TEST_AMQP_URL:-}" ] && [ "$FCCTL_TEST_MYSQL_URL" != "mysql://$MY_USER:$MY_PASS@127.0.0.1:$MY_PORT" ]; }

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

install_packages() {
  local missing=()
  command -v mariadbd >/dev/null 2>&1 || missing+=(mariadb-server mariadb-client)
  [ -x "$RMQ_BIN/rabbitmq-server" ] || missing+=(rabbitmq-server)
  # openssl: the TLS tests make their certificates with it (test/helpers/tls-broker.ts).
  command -v openssl >/dev/null 2>&1 || missing+=(openssl)
  # tmux: the tests look at the live terminal view in a real terminal.
  command -v tmux >/dev/null 2>&1 || missing+=(tmux)
  # promtool (in Debian's prometheus package) checks docs/prometheus/fcctl-alerts.yml and the .prom
  # files; the package's server binary runs the alert rules against real services on its own
  # loopback port (test/helpers/prometheus.ts); the package's service is kept from starting by the
  # policy-rc.d guard below.
  { command -v promtool && command -v prometheus; } >/dev/null 2>&1 || missing+=(prometheus)
  # node_exporter (Debian's prometheus-node-exporter): the tests run it on their own port, with the
  # textfile collector only, over fcctl's .prom files; its service is kept from starting likewise.
  [ -x /usr/bin/prometheus-node-exporter ] || command -v node_exporter >/dev/null 2>&1 || missing+=(prometheus-node-exporter)
  # systemd-analyze (Debian's systemd package, with the standard units) verifies docs/systemd/;
  # `verify --root` needs no systemd running.
  [ -x /usr/bin/systemd-analyze ] || missing+=(systemd)
  # strace emulates the units' system-call filter (test/ops/systemd-sandbox.test.ts: EPERM injected).
  [ -x /usr/bin/strace ] || missing+=(strace)
  # The Pushgateway (Debian's prometheus-pushgateway) receives the Kubernetes CronJobs' metrics
  # (test/ops/pushgateway.test.ts runs it on its own port); its service is kept from starting likewise.
  [ -x /usr/bin/prometheus-pushgateway ] || missing+=(prometheus-pushgateway)
  # chromium: the report's browser tests (test/report/) drive Debian's Chromium with playwright-core,
  # which never downloads a browser of its own.
  [ -x /usr/bin/chromium ] || missing+=(chromium)
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing ${missing[*]} from Debian packages"
  # Keep the packages' own init scripts from starting system-wide servers on default ports.
  local policy=/usr/sbin/policy-rc.d created=0
  if [ ! -e "$policy" ]; then printf '#!/bin/sh\nexit 101\n' >"$policy"; chmod +x "$policy"; created=1; fi
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >"$BASE/apt.log" 2>&1; then
    log "apt-get install failed once; running apt-get update and retrying"
    apt-get update -q >>"$BASE/apt.log" 2>&1
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >>"$BASE/apt.log" 2>&1 \
      || { [ $created = 1 ] && rm -f "$policy"; log "install failed, see $BASE/apt.log"; exit 3; }
  fi
  [ $created = 1 ] && rm -f "$policy"
  return 0
}

mariadb_running() { [ -S "$MY_SOCK" ] && mariadb-admin --socket="$MY_SOCK" -u"$ME" ping >/dev/null 2>&1; }

# A directory the servers keep their data in: created, and usable by the invoking user.
usable_dir() {
  mkdir -p "$1" 2>/dev/null && [ -w "$1" ] && [ -x "$1" ] || die "cannot create or write $1 as $ME: choose another FCCTL_SERVICES_DIR"
}

# Before a start: the port must be free (another process on it would be taken for our server).
port_free() {
  if port_open "$1"; then die "port $1 is already in use by another process, not this $2: stop it, or set $3 to another port"; fi
}

mariadb_up() {
  if mariadb_running; then log "mariadb already running on 127.0.0.1:$MY_PORT"; return 0; fi
  usable_dir "$MY_DIR"
  port_free "$MY_PORT" "MariaDB (socket $MY_SOCK)" FCCTL_LOCAL_MYSQL_PORT
  if [ ! -d "$MY_DIR/data/mysql" ]; then
    log "initializing mariadb data in $MY_DIR/data"
    mariadb-install-db --no-defaults --datadir="$MY_DIR/data" --user="$ME" \
      --auth-root-authentication-method=socket >"$MY_DIR/install.log" 2>&1 \
      || die "mariadb-install-db failed; see $MY_DIR/install.log"
  fi
  log "starting mariadb on 127.0.0.1:$MY_PORT"
  nohup mariadbd --no-defaults --user="$ME" --datadir="$MY_DIR/data" --socket="$MY_SOCK" \
    --port="$MY_PORT" --bind-address=127.0.0.1 --pid-file="$MY_DIR/mysqld.pid" \
    --log-error="$MY_DIR/error.log" --character-set-server=utf8mb4 --collation-server=utf8mb4_bin \
    --innodb-buffer-pool-size=256M --innodb-flush-log-at-trx-commit=2 --max-connections=500 \
    --skip-name-resolve --sql-mode="$MY_SQL_MODE" </dev/null >/dev/null 2>&1 &
  for _ in $(seq 1 120); do mariadb_running && port_open "$MY_PORT" && break; sleep 0.5; done
  mariadb_running || die "mariadb did not start: $(grep -m1 -E '\[ERROR\]' "$MY_DIR/error.log" 2>/dev/null | sed 's/^.*\[ERROR\] //' || true) (see $MY_DIR/error.log)"
  mariadb --socket="$MY_SOCK" -u"$ME" <<SQL
CREATE DATABASE IF NOT EXISTS fcctl_fc CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
CREATE DATABASE IF NOT EXISTS fcctl_sh CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
CREATE USER IF NOT EXISTS '$MY_USER'@'127.0.0.1' IDENTIFIED BY '$MY_PASS';
CREATE USER IF NOT EXISTS '$MY_USER'@'localhost' IDENTIFIED BY '$MY_PASS';
GRANT ALL PRIVILEGES ON *.* TO '$MY_USER'@'127.0.0.1' WITH GRANT OPTION;
GRANT ALL PRIVILEGES ON *.* TO '$MY_USER'@'localhost' WITH GRANT OPTION;
FLUSH PRIVILEGES;
SQL
}

mq_env() {
  export RABBITMQ_NODENAME="$MQ_NODE"
  export RABBITMQ_NODE_IP_ADDRESS=127.0.0.1
  export RABBITMQ_NODE_PORT="$MQ_PORT"
  export RABBITMQ_DIST_PORT="$MQ_DIST_PORT"
  export ERL_EPMD_PORT="$EPMD_PORT"
  export ERL_EPMD_ADDRESS=127.0.0.1
  export RABBITMQ_MNESIA_BASE="$MQ_DIR/mnesia"
  export RABBITMQ_LOG_BASE="$MQ_DIR/log"
  export RABBITMQ_PID_FILE="$MQ_DIR/rabbit.pid"
  export RABBITMQ_CONFIG_FILE="$MQ_DIR/rabbitmq"
  export RABBITMQ_ENABLED_PLUGINS_FILE="$MQ_DIR/enabled_plugins"
  export RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}"
  # The node's and the CLI's Erlang cookie: $HOME/.erlang.cookie, private to this directory.
  export HOME="$MQ_DIR"
  export ERL_CRASH_DUMP="$MQ_DIR/erl_crash.dump"
}

ctl() { mq_env; "$RMQ_BIN/rabbitmqctl" -n "$MQ_NODE" "$@"; }

mq_running() { port_open "$MQ_PORT" && ctl status >/dev/null 2>&1; }

# A node started before the management plugin was part of the setup gets it enabled in place.
mq_management() {
  port_open "$MQ_MGMT_PORT" && return 0
  log "enabling the management plugin on 127.0.0.1:$MQ_MGMT_PORT"
  (mq_env; "$RMQ_BIN/rabbitmq-plugins" -n "$MQ_NODE" enable --online rabbitmq_management >/dev/null 2>&1) || true
  for _ in $(seq 1 120); do port_open "$MQ_MGMT_PORT" && return 0; sleep 0.5; done
  die "the management API did not come up on 127.0.0.1:$MQ_MGMT_PORT; see $MQ_DIR/log"
}

# Why a start failed, in one line, from what the node wrote.
mq_start_failure() {
  local out="$BASE/rabbitmq.out" why
  why=$(grep -h -o -m1 -E 'eaddrinuse|eacces|failed_to_update_enabled_plugins_file|Permission denied|could not bind [^"]*' "$out" "$MQ_DIR"/log/*.log 2>/dev/null | head -n 1 || true)
  case "$why" in
    eaddrinuse*|could\ not\ bind*) die "rabbitmq did not start: one of ports $MQ_PORT, $MQ_DIST_PORT, $MQ_MGMT_PORT is in use (see $out)" ;;
    eacces*|Permission*|failed_to_update*) die "rabbitmq did not start: it cannot write its data under $MQ_DIR (see $out)" ;;
    *) die "rabbitmq did not start within 120 s (see $out and $MQ_DIR/log)" ;;
  esac
}

mq_up() {
  if mq_running; then
    log "rabbitmq already running on 127.0.0.1:$MQ_PORT"
    ctl list_vhosts 2>/dev/null | grep -qx "$MQ_VHOST" || mq_setup
    mq_management
    return 0
  fi
  usable_dir "$MQ_DIR/mnesia"
  usable_dir "$MQ_DIR/log"
  port_free "$MQ_PORT" "RabbitMQ node $MQ_NODE" FCCTL_LOCAL_AMQP_PORT
  port_free "$MQ_MGMT_PORT" "RabbitMQ node's management API" FCCTL_LOCAL_AMQP_MANAGEMENT_PORT
  port_free "$MQ_DIST_PORT" "RabbitMQ node's distribution port" FCCTL_LOCAL_AMQP_DIST_PORT
  printf '[rabbitmq_management].\n' >"$MQ_DIR/enabled_plugins"
  cat >"$MQ_DIR/rabbitmq.conf" <<CONF
listeners.tcp.default = 127.0.0.1:$MQ_PORT
management.tcp.ip = 127.0.0.1
management.tcp.port = $MQ_MGMT_PORT
loopback_users = none
log.console = false
log.file.level = warning
CONF
  log "starting rabbitmq on 127.0.0.1:$MQ_PORT as $ME"
  # Detached from the caller's streams (a caller that waits for its pipes to close would hang).
  (mq_env; cd "$MQ_DIR" && exec nohup "$RMQ_BIN/rabbitmq-server" </dev/null >"$BASE/rabbitmq.out" 2>&1) &
  for _ in $(seq 1 240); do port_open "$MQ_PORT" && break; sleep 0.5; done
  ctl await_startup --timeout 120 >/dev/null 2>&1 || mq_start_failure
  mq_setup
  mq_management
}

# The local user and fcctl's own vhost; idempotent.
mq_setup() {
  ctl list_users 2>/dev/null | grep -q "^$MQ_USER\b" || ctl add_user "$MQ_USER" "$MQ_PASS" >/dev/null
  ctl set_user_tags "$MQ_USER" administrator >/dev/null
  ctl set_permissions -p / "$MQ_USER" '.*' '.*' '.*' >/dev/null
  # fcctl's own vhost (seed 004 B-03: do not share the default vhost "/").
  ctl list_vhosts 2>/dev/null | grep -qx "$MQ_VHOST" || ctl add_vhost "$MQ_VHOST" >/dev/null
  ctl set_permissions -p "$MQ_VHOST" "$MQ_USER" '.*' '.*' '.*' >/dev/null
}

print_env() {
  if external; then
    printf "export FCCTL_TEST_MYSQL_URL='%s'\nexport FCCTL_TEST_AMQP_URL='%s'\n" "$FCCTL_TEST_MYSQL_URL" "$FCCTL_TEST_AMQP_URL"
    [ -n "${FCCTL_TEST_AMQP_MANAGEMENT_URL:-}" ] && printf "export FCCTL_TEST_AMQP_MANAGEMENT_URL='%s'\n" "$FCCTL_TEST_AMQP_MANAGEMENT_URL"
    return 0
  fi
  local my="mysql://$MY_USER:$MY_PASS@127.0.0.1:$MY_PORT"
  local mq="amqp://$MQ_USER:$MQ_PASS@127.0.0.1:$MQ_PORT/$MQ_VHOST"
  local mgmt="http://$MQ_USER:$MQ_PASS@127.0.0.1:$MQ_MGMT_PORT"
  printf "export FCCTL_TEST_MYSQL_URL='%s'\n" "$my"
  printf "export FCCTL_TEST_AMQP_URL='%s'\n" "$mq"
  printf "export FCCTL_TEST_AMQP_MANAGEMENT_URL='%s'\n" "$mgmt"
  printf "export FCCTL_FC_DATABASE_URL='%s/fcctl_fc'\n" "$my"
  printf "export FCCTL_SH_DATABASE_URL='%s/fcctl_sh'\n" "$my"
  printf "export FCCTL_AMQP_URL='%s'\n" "$mq"
  printf "export FCCTL_AMQP_MANAGEMENT_URL='%s'\n" "$mgmt"
}

case "${1:-}" in
  up)
    if external; then log "using FCCTL_TEST_MYSQL_URL / FCCTL_TEST_AMQP_URL; nothing to start"; exit 0; fi
    mkdir -p "$BASE"
    install_packages
    mariadb_up
    mq_up
    log "up"
    ;;
  down)
    my_pid=$(cat "$MY_DIR/mysqld.pid" 2>/dev/null || true)
    if [ -n "$my_pid" ] && kill "$my_pid" 2>/dev/null; then log "mariadb stopping"; fi
    if port_open "$MQ_PORT"; then ctl shutdown >/dev/null 2>&1 && log "rabbitmq stopped"; fi
    # The node started epmd on its own port: stop it too (nothing else registers there).
    if port_open "$EPMD_PORT" && command -v epmd >/dev/null 2>&1; then epmd -port "$EPMD_PORT" -kill >/dev/null 2>&1 && log "epmd stopped"; fi
    # Gone for good (not only off its port), so its directory can be removed right after.
    for _ in $(seq 1 120); do { [ -n "$my_pid" ] && kill -0 "$my_pid" 2>/dev/null; } || break; sleep 0.5; done
    ;;
  restart)
    # For the fault suite: a real server restart, as clients see one (every connection closed, the
    # port refused for a moment, then back with the same data).
    case "${2:-}" in
      mariadb)
        if external; then log "external servers: not restarting"; exit 2; fi
        mariadb-admin --socket="$MY_SOCK" -u"$ME" shutdown >/dev/null 2>&1 || true
        for _ in $(seq 1 60); do port_open "$MY_PORT" || break; sleep 0.25; done
        sleep "${3:-0}"
        mariadb_up ;;
      rabbitmq)
        if external; then log "external servers: not restarting"; exit 2; fi
        # The whole node: stop_app/start_app trips over its own listener (eaddrinuse) here.
        ctl shutdown >/dev/null 2>&1 || true
        for _ in $(seq 1 60); do port_open "$MQ_PORT" || break; sleep 0.25; done
        sleep "${3:-0}"
        mq_up ;;
      *) echo "usage: scripts/services.sh restart mariadb|rabbitmq [SECONDS_DOWN]" >&2; exit 2 ;;
    esac
    ;;
  status)
    rc=0
    if mariadb_running; then echo "mariadb: running on 127.0.0.1:$MY_PORT"; else echo "mariadb: stopped"; rc=3; fi
    if port_open "$MQ_PORT"; then echo "rabbitmq: running on 127.0.0.1:$MQ_PORT"; else echo "rabbitmq: stopped"; rc=3; fi
    exit $rc
    ;;
  env) print_env ;;
  sql-mode)
    # The running local server's global sql_mode, for the sessions opened from now on:
    # `mysql8` (the default at start) or `mariadb` (MariaDB's own default). Local server only: an
    # external server's mode is left as it is (said, not an error).
    if external; then log "external servers: sql_mode left as it is"; exit 0; fi
    case "${2:-}" in
      mysql8) mode=$MYSQL8_SQL_MODE ;;
      mariadb) mode=$MARIADB_SQL_MODE ;;
      *) echo "usage: scripts/services.sh sql-mode mysql8|mariadb" >&2; exit 2 ;;
    esac
    mariadb --socket="$MY_SOCK" -u"$ME" -e "SET GLOBAL sql_mode = '$mode'"
    log "sql_mode $2: $(mariadb --socket="$MY_SOCK" -u"$ME" -N -e 'SELECT @@GLOBAL.sql_mode')"
    ;;
  mq-ctl)
    # For the fault suite: rabbitmqctl against the local node (e.g. a memory alarm that blocks
    # publishers: mq-ctl set_vm_memory_high_watermark absolute 1). Local broker only.
    if external; then log "external servers: not touching them"; exit 2; fi
    shift
    ctl "$@"
    ;;
  add-vhost)
    # For tests that need an empty vhost (e.g. no delivery exchange): local broker only.
    [ -n "${2:-}" ] || { echo "usage: scripts/services.sh add-vhost NAME" >&2; exit 2; }
    ctl add_vhost "$2" >/dev/null 2>&1 || true
    ctl set_permissions -p "$2" "$MQ_USER" '.*' '.*' '.*' >/dev/null
    ;;
  delete-vhost)
    [ -n "${2:-}" ] || { echo "usage: scripts/services.sh delete-vhost NAME" >&2; exit 2; }
    ctl delete_vhost "$2" >/dev/null 2>&1 || true
    ;;
  *) echo "usage: scripts/services.sh up|down|status|env|restart mariadb|rabbitmq|add-vhost NAME|delete-vhost NAME" >&2; exit 2 ;;
esac
