#!/usr/bin/env bash
# Cluster mode on one machine, with Go alone: a one-member etcd in process
# (internal/devetcd, nothing to install) and three fenceview nodes over it.
# Ctrl-C (or SIGTERM) stops them all.
#
#   scripts/cluster.sh    # etcd on 127.0.0.1:2379, nodes on 127.0.0.1:8081-8083
#
# The environment may move it: FENCEVIEW_CLUSTER_DIR (binaries, etcd's data
# and the nodes' databases; default .cluster), FENCEVIEW_CLUSTER_ETCD and
# FENCEVIEW_CLUSTER_ETCD_PEER (etcd's client and peer addresses),
# FENCEVIEW_CLUSTER_NODES (the nodes' listen addresses, space-separated).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${FENCEVIEW_CLUSTER_DIR:-.cluster}
etcd=${FENCEVIEW_CLUSTER_ETCD:-127.0.0.1:2379}
peer=${FENCEVIEW_CLUSTER_ETCD_PEER:-127.0.0.1:2380}
read -r -a nodes <<<"${FENCEVIEW_CLUSTER_NODES:-127.0.0.1:8081 127.0.0.1:8082 127.0.0.1:8083}"

mkdir -p "$dir"
go build -o "$dir/fenceview" ./cmd/fenceview
go build -o "$dir/devetcd" ./internal/devetcd

etcd_pid=
node_pids=()
# The nodes first, while etcd still answers (a leader resigns through it),
# then etcd.
stop() {
	trap - EXIT INT TERM
	if [ ${#node_pids[@]} -gt 0 ]; then
		kill -TERM "${node_pids[@]}" 2>/dev/null || true
		wait "${node_pids[@]}" 2>/dev/null || true
	fi
	if [ -n "$etcd_pid" ]; then
		kill -TERM "$etcd_pid" 2>/dev/null || true
		wait "$etcd_pid" 2>/dev/null || true
	fi
}
trap stop EXIT
trap 'stop; exit 130' INT TERM

# Wait until url answers 200, or fail after about 30 s.
ready() {
	for _ in $(seq 150); do
		if curl -fsS -o /dev/null "$1" 2>/dev/null; then
			return 0
		fi
		sleep 0.2
	done
	echo "cluster: $1 did not answer" >&2
	return 1
}

"$dir/devetcd" -dir "$dir/etcd" -client "$etcd" -peer "$peer" &
etcd_pid=$!
ready "http://$etcd/health"
i=0
for addr in "${nodes[@]}"; do
	i=$((i + 1))
	"$dir/fenceview" --addr "$addr" --db "$dir/node$i.db" --etcd "http://$etcd" &
	node_pids+=($!)
done
for addr in "${nodes[@]}"; do
	ready "http://$addr/healthz"
done
echo "cluster: ${#nodes[@]} nodes up: curl http://${nodes[0]}/v1/cluster ; kill a node and watch another lead"
wait
