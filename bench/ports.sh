# Sourced by bench/run.sh and bench/cluster.sh.

# A free loopback port: one nothing answers on, below the kernel's
# ephemeral range, where the load's own outgoing connections take their
# ports (a port picked there can be taken by one before its server binds).
free_port() {
	local p lo=32768
	if [ -r /proc/sys/net/ipv4/ip_local_port_range ]; then
		read -r lo _ </proc/sys/net/ipv4/ip_local_port_range
	fi
	local top=$((lo - 1)) bottom=10000
	if [ "$top" -le "$bottom" ]; then # an unusual range: any unprivileged port
		bottom=1024 top=65535
	fi
	for p in $(shuf -i "$bottom-$top" -n 100); do
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return
		fi
	done
	echo "bench: no free port" >&2
	return 1
}
