#!/usr/bin/env bash
# Cluster comparison: starts a one-member etcd (internal/devetcd, in
# process: nothing to install), a three-node fenceview cluster on it, a
# single-node fenceview, and runs the same workload against the single
# node, the cluster's leader, a follower (every request forwarded) and
# etcd's own concurrency.Mutex. Everything it started stops on exit.
#
#   bench/cluster.sh                          # 5s per cell, 1 round
#   bench/cluster.sh -duration 5s -rounds 3   # flags go to the bench command
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fenceview-cluster-bench.XXXXXX")
pids=()
cleanup() {
	set +e
	for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null; done
	for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null; done
	if [ -n "${KEEP:-}" ]; then echo "bench: kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

source "$here/ports.sh" # free_port

wait_for() { # url
	for _ in $(seq 1 300); do
		curl -fsS -o /dev/null "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "bench: $1 never answered" >&2
	exit 1
}

(cd "$root" && go build -o "$tmp/fenceview" ./cmd/fenceview && go build -o "$tmp/devetcd" ./internal/devetcd)
etcd_port=$(free_port)
peer_port=$(free_port)
"$tmp/devetcd" -dir "$tmp/etcd" -client "127.0.0.1:$etcd_port" -peer "127.0.0.1:$peer_port" >"$tmp/etcd.log" 2>&1 &
pids+=($!)
etcd="http://127.0.0.1:$etcd_port"
for _ in $(seq 1 300); do grep -q ready "$tmp/etcd.log" && break; sleep 0.1; done

single=$(free_port)
"$tmp/fenceview" --addr "127.0.0.1:$single" --db "$tmp/single.db" 2>"$tmp/single.log" &
pids+=($!)
nodes=()
for i in 1 2 3; do
	p=$(free_port)
	"$tmp/fenceview" --addr "127.0.0.1:$p" --db "$tmp/node$i.db" --etcd "$etcd" 2>"$tmp/node$i.log" &
	pids+=($!)
	nodes+=("http://127.0.0.1:$p")
	wait_for "http://127.0.0.1:$p/v1/cluster"
done
wait_for "http://127.0.0.1:$single/healthz"
wait_for "${nodes[0]}/healthz" # answers once there is a leader
leader=$(curl -fsS "${nodes[0]}/v1/cluster" | sed -n 's/.*"leader":{"id":"[^"]*","url":"\([^"]*\)".*/\1/p')
follower=${nodes[0]}
[ "$follower" != "$leader" ] || follower=${nodes[1]}

cd "$here"
go run . -fenceview "http://127.0.0.1:$single" -rpc=false \
	-fenceview-cluster "$leader" -fenceview-follower "$follower" -etcd "$etcd" "$@"
