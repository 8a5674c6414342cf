# shellcheck shell=bash
# PgBouncer in transaction mode in front of a PostgreSQL server, on a private
# port with its own directory (docs/scale.md, "PgBouncer"). Sourced by
# scripts/test.sh (`make test`) and scripts/bench.sh (`make bench`); Debian's
# pgbouncer package is installed first when missing and we are root.
#
#   start_pgbouncer URL DIR POOL_SIZE FIRST_PORT
#       URL: postgres://user[:password]@host[:port]/database of the server;
#       DIR: the directory for its config, log and pid file (emptied first);
#       POOL_SIZE: default_pool_size (server connections per database and user);
#       FIRST_PORT: the first port tried (the next free one is taken).
#     Sets POOLER_URL (the same user, database `postgres`) and PGB_PID.
#   stop_pgbouncer
#     Stops the PgBouncer started above (by its pid), if any.
#   as_postgres_when_root
#     Sets AS_POSTGRES, the command prefix for initdb, pg_ctl and pgbouncer,
#     which refuse to run as root: as root, they run as the postgres user
#     (created by the package, or here).

PGB_PID=""

pgb_log() { printf '[pgbouncer] %s\n' "$*" >&2; }

pgb_port_open() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

as_postgres_when_root() {
    AS_POSTGRES=()
    if [ "$(id -u)" = 0 ]; then
        id postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres
        AS_POSTGRES=(runuser -u postgres --)
    fi
}

start_pgbouncer() {
    local url=$1 dir=$2 pool=$3 listen=$4
    if ! command -v pgbouncer >/dev/null 2>&1 && [ ! -x /usr/sbin/pgbouncer ]; then
        if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
            pgb_log "no pgbouncer: installing Debian's pgbouncer package"
            apt-get update -qq >&2
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pgbouncer >&2
        else
            pgb_log "pgbouncer is not installed (install Debian's pgbouncer package)"
            exit 1
        fi
    fi
    local bin
    bin=$(command -v pgbouncer || echo /usr/sbin/pgbouncer)
    local re='^postgres(ql)?://(([^:@/]*)(:([^@/]*))?@)?([^:/?]+)(:([0-9]+))?/'
    [[ "$url" =~ $re ]] || { pgb_log "cannot read host and port from $url"; exit 1; }
    local user=${BASH_REMATCH[3]:-postgres} password=${BASH_REMATCH[5]:-}
    local host=${BASH_REMATCH[6]} port=${BASH_REMATCH[8]:-5432}
    while pgb_port_open 127.0.0.1 "$listen"; do listen=$((listen + 1)); done
    as_postgres_when_root
    local as=("${AS_POSTGRES[@]}")
    rm -rf "$dir"
    mkdir -p "$dir"
    printf '"%s" "%s"\n' "$user" "$password" >"$dir/userlist.txt"
    # Every database through one wildcard entry; as many clients as the
    # replicas open.
    cat >"$dir/pgbouncer.ini" <<EOF_INI
[databases]
* = host=$host port=$port
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $listen
unix_socket_dir =
auth_type = trust
auth_file = $dir/userlist.txt
pool_mode = transaction
max_client_conn = 900
default_pool_size = $pool
server_idle_timeout = 30
ignore_startup_parameters = extra_float_digits,options
logfile = $dir/pgbouncer.log
pidfile = $dir/pgbouncer.pid
EOF_INI
    [ "$(id -u)" = 0 ] && chown -R postgres "$dir"
    "${as[@]}" "$bin" -d "$dir/pgbouncer.ini" >&2 || { cat "$dir/pgbouncer.log" >&2; exit 1; }
    local tries=0
    until pgb_port_open 127.0.0.1 "$listen"; do
        tries=$((tries + 1))
        [ $tries -lt 50 ] || { pgb_log "pgbouncer did not start"; cat "$dir/pgbouncer.log" >&2; exit 1; }
        sleep 0.1
    done
    PGB_PID=$(cat "$dir/pgbouncer.pid")
    pgb_log "PgBouncer $("$bin" --version | head -1 | awk '{print $2}') in transaction mode on 127.0.0.1:$listen, in front of $host:$port (pool $pool)"
    POOLER_URL="postgres://$user${password:+:$password}@127.0.0.1:$listen/postgres"
}

stop_pgbouncer() {
    if [ -n "$PGB_PID" ]; then
        kill "$PGB_PID" 2>/dev/null || true
        PGB_PID=""
    fi
}
