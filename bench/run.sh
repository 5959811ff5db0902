#!/usr/bin/env bash
# Peer comparison: starts Redis twice (no persistence; AOF with appendfsync
# always), PostgreSQL (fsync on) and fenceview, each on loopback with its
# data in one temporary directory, runs the same workload against them and
# an in-process SQLite baseline, prints the table, and stops everything it
# started on exit. Missing redis-server or postgresql is installed from
# Debian's packages (needs root).
#
#   bench/run.sh                         # 5s per cell, 1 round
#   bench/run.sh -duration 10s -rounds 3 # flags go to the bench command (go run . -h)
#   KEEP=1 bench/run.sh                  # keep the temporary directory (logs)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")

find_pg() {
	local d
	if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
		dirname "$(command -v initdb)"
		return
	fi
	for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
		if [ -x "$d/initdb" ]; then echo "$d"; return; fi
	done
}

need=()
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
command -v redis-cli >/dev/null 2>&1 || need+=(redis-tools)
[ -n "$(find_pg)" ] || need+=(postgresql)
if [ ${#need[@]} -gt 0 ]; then
	if [ "$(id -u)" != 0 ]; then
		echo "bench: missing ${need[*]}; install them (apt-get install ${need[*]}) or run as root" >&2
		exit 1
	fi
	echo "== apt-get install ${need[*]}"
	# Debian starts the packages' own services on install; this run starts
	# its own instances, so keep those from starting (policy-rc.d, 101).
	policy_added=
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
		chmod 755 /usr/sbin/policy-rc.d
		policy_added=1
	fi
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
	[ -z "$policy_added" ] || rm -f /usr/sbin/policy-rc.d
fi
pgbin=$(find_pg)

tmp=$(mktemp -d "${TMPDIR:-/tmp}/fenceview-bench.XXXXXX")
chmod 755 "$tmp"
pids=()
pg_started=
as_pg=()
cleanup() {
	local pid
	set +e
	for pid in "${pids[@]}"; do
		kill "$pid" 2>/dev/null
	done
	for pid in "${pids[@]}"; do
		wait "$pid" 2>/dev/null
	done
	if [ -n "$pg_started" ]; then
		"${as_pg[@]}" "$pgbin/pg_ctl" -D "$tmp/pg" -m fast -w stop >/dev/null 2>&1
	fi
	if [ -n "${KEEP:-}" ]; then
		echo "bench: kept $tmp"
	else
		rm -rf "$tmp"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

source "$here/ports.sh" # free_port

wait_for() { # description, command...
	local what=$1 i
	shift
	for i in $(seq 1 100); do
		if "$@" >/dev/null 2>&1; then return; fi
		sleep 0.1
	done
	echo "bench: $what did not start; logs in $tmp" >&2
	KEEP=1
	return 1
}

echo "== building fenceview and the bench command"
(cd "$root" && go build -o "$tmp/fenceview" ./cmd/fenceview)
(cd "$here" && go build -o "$tmp/bench" .)

echo "== starting Redis (no persistence) and Redis (AOF, appendfsync always)"
redis_port=$(free_port)
mkdir -p "$tmp/redis"
redis-server --bind 127.0.0.1 --port "$redis_port" --dir "$tmp/redis" \
	--save '' --appendonly no --daemonize no --logfile "$tmp/redis.log" &
redis_pid=$!
pids+=($redis_pid)
aof_port=$(free_port)
mkdir -p "$tmp/redis-aof"
redis-server --bind 127.0.0.1 --port "$aof_port" --dir "$tmp/redis-aof" \
	--save '' --appendonly yes --appendfsync always --daemonize no --logfile "$tmp/redis-aof.log" &
aof_pid=$!
pids+=($aof_pid)
wait_for "redis" redis-cli -p "$redis_port" ping
wait_for "redis (AOF)" redis-cli -p "$aof_port" ping

echo "== starting PostgreSQL ($("$pgbin/postgres" --version)), fsync on"
pg_port=$(free_port)
if [ "$(id -u)" = 0 ]; then
	# PostgreSQL refuses to run as root.
	as_pg=(runuser -u postgres --)
	chown postgres "$tmp"
fi
"${as_pg[@]}" "$pgbin/initdb" -D "$tmp/pg" -U postgres -A trust >"$tmp/initdb.log" 2>&1
pg_started=1 # before start: a start that times out may leave a server running
"${as_pg[@]}" "$pgbin/pg_ctl" -D "$tmp/pg" -w -l "$tmp/pg.log" \
	-o "-c listen_addresses=127.0.0.1 -p $pg_port -k $tmp -c fsync=on -c synchronous_commit=on -c max_connections=200" \
	start >/dev/null

# start_fenceview NAME [FLAG...]: starts a fenceview with its data in
# $tmp/NAME-data and its log in $tmp/NAME.log, and creates a client key on
# it; sets started_port, started_pid and started_key.
start_fenceview() {
	local name=$1
	shift
	started_port=$(free_port)
	mkdir -p "$tmp/$name-data"
	"$tmp/fenceview" -addr "127.0.0.1:$started_port" -db "$tmp/$name-data/fenceview.db" "$@" 2>"$tmp/$name.log" &
	started_pid=$!
	pids+=($started_pid)
	wait_for "$name" curl -fsS "http://127.0.0.1:$started_port/healthz"
	started_key=$("$tmp/fenceview" keys create --server "http://127.0.0.1:$started_port" --name bench --role client --json |
		sed -n 's/.*"secret":"\([^"]*\)".*/\1/p')
	[ -n "$started_key" ] || { echo "bench: could not create a client key on $name" >&2; exit 1; }
}

echo "== starting fenceview"
mkdir -p "$tmp/sqlite"
# Auth on, as in production: every request carries a client key, and the
# server checks it, its role and the lock's owner.
export FENCEVIEW_ADMIN_TOKEN=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
start_fenceview fenceview
fv_port=$started_port fv_pid=$started_pid
export FENCEVIEW_KEY=$started_key

echo "== starting a second fenceview with --signing=off (grants without a signature)"
start_fenceview fenceview-unsigned -signing off
un_port=$started_port un_pid=$started_pid
export FENCEVIEW_UNSIGNED_KEY=$started_key

echo "== $(nproc) CPUs, $(uname -sr), go $(go env GOVERSION), $(redis-server --version | cut -d' ' -f1-3)"
"$tmp/bench" \
	-fenceview "http://127.0.0.1:$fv_port" -fenceview-pid "$fv_pid" \
	-fenceview-unsigned "http://127.0.0.1:$un_port" -fenceview-unsigned-pid "$un_pid" \
	-redis "127.0.0.1:$redis_port" -redis-pid "$redis_pid" \
	-redis-aof "127.0.0.1:$aof_port" -redis-aof-pid "$aof_pid" \
	-postgres "host=127.0.0.1 port=$pg_port user=postgres dbname=postgres sslmode=disable" \
	-sqlite "$tmp/sqlite" \
	"$@"
