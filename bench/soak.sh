#!/usr/bin/env bash
# Soak benchmark: honest throughput while hostile connections try to
# exhaust the server. One fenceview (auth on) serves 64 honest clients
# (fenceload's grant cycles) for DURATION quietly, then for DURATION again
# while `fenceload -attack 200` runs beside them: slow RPC readers, slow
# event readers (a viewer key), floods of made-up secrets, made-up methods
# up to 64 KiB and login storms. It prints honest grants/s and p99 of both
# runs, and the server's peak RSS and goroutines of each.
#
#   bench/soak.sh                    # 60 s each
#   DURATION=10s ATTACK=50 bench/soak.sh
#
# Not a test: the numbers depend on the machine (and on who else uses it).
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-60s}
ATTACK=${ATTACK:-200}
# The attack comes from another loopback address: attackers are not at the
# honest clients' address, and the per-address limits would throttle both.
ATTACK_FROM=${ATTACK_FROM:-127.0.0.2}
CLIENTS=${CLIENTS:-64}

tmp=$(mktemp -d)
pid=""
sampler=""
cleanup() {
	[ -n "$sampler" ] && kill "$sampler" 2>/dev/null || true
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

go build -o "$tmp/fenceview" ./cmd/fenceview
go build -o "$tmp/fenceload" ./cmd/fenceload
head -c 32 /dev/urandom | base64 | tr -d '/+=\n' >"$tmp/token"
chmod 600 "$tmp/token"
token=$(cat "$tmp/token")
"$tmp/fenceview" --addr 127.0.0.1:0 --db "$tmp/soak.db" --admin-token-file "$tmp/token" 2>"$tmp/server.log" &
pid=$!
url=""
for _ in $(seq 100); do
	url=$(grep -o 'url=http://[^ ]*' "$tmp/server.log" | head -1 | sed 's/^url=//; s#/$##') || true
	[ -n "$url" ] && break
	sleep 0.1
done
[ -n "$url" ] || { cat "$tmp/server.log"; exit 1; }
key() { FENCEVIEW_ADMIN_TOKEN=$token "$tmp/fenceview" keys create --server "$url" --json "$@" | jq -r .secret; }
client=$(key --name honest --role client)
attacker=$(key --name attacker --role client --resource attack)
viewer=$(key --name nosy --role viewer --resource nothing/)

# sample PHASE: the server's goroutines and RSS every 200 ms, the peak of
# each kept in $tmp/PHASE.peak.
sample() {
	local g=0 r=0 peak_g=0 peak_r=0
	while kill -0 "$pid" 2>/dev/null; do
		g=$(curl -s -H "Authorization: Bearer $token" "$url/metrics" | awk '/^go_goroutines /{print $2}') || g=0
		r=$(awk '/^VmRSS/{print $2}' "/proc/$pid/status")
		[ "${g:-0}" -gt "$peak_g" ] && peak_g=$g
		[ "${r:-0}" -gt "$peak_r" ] && peak_r=$r
		echo "$peak_g $peak_r" >"$tmp/$1.peak"
		sleep 0.2
	done
}
honest() {
	"$tmp/fenceload" -url "$url" -key "$client" -clients "$CLIENTS" -duration "$DURATION" -mix grant -json "$tmp/$1.json" >"$tmp/$1.txt"
}

sample quiet & sampler=$!
honest quiet
kill "$sampler"; wait "$sampler" 2>/dev/null || true

sample attack & sampler=$!
attack_for=$(( ${DURATION%s} + 10 ))s
"$tmp/fenceload" -url "$url" -key "$attacker" -viewer-key "$viewer" -attack "$ATTACK" -attack-from "$ATTACK_FROM" -duration "$attack_for" >"$tmp/hostile.txt" &
attack=$!
sleep 5 # the attack is under way before the honest clients start
honest attack
wait "$attack"
kill "$sampler"; wait "$sampler" 2>/dev/null || true

row() {
	read -r g r <"$tmp/$1.peak"
	jq -r --arg name "$1" --arg g "$g" --arg r "$r" \
		'"| \($name) | \(.ops.cycle.opsPerSec | floor) | \(.ops.cycle.p99Ms) | \($r | tonumber / 1024 | floor) | \($g) | \(.errors) |"' "$tmp/$1.json"
}
echo
echo "| run | honest grants/s | p99 ms | server peak RSS MiB | peak goroutines | honest errors |"
echo "|---|---|---|---|---|---|"
row quiet
row attack
echo
cat "$tmp/hostile.txt"
