# Sourced by bench/run.sh and bench/cluster.sh.

# A free loopback port: one nothing answers on.
free_port() {
	local p
	for p in $(shuf -i 20000-60000 -n 100); do
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return
		fi
	done
	echo "bench: no free port" >&2
	return 1
}
