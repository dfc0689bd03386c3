# Hosts as network namespaces for the cluster suites (source this file; tests/cluster/slurm.sh
# and tests/cluster/pbs.sh use it): a head namespace holding a bridge, and one namespace per node
# joined to it by a veth. The addresses exist inside the namespaces only (none on this host, no
# default route anywhere), and DIR/etc/hosts names every host for the namespaces to bind-mount.

# netns_make DIR NAMEOF NET HEAD NODES: NAMEOF is a function printing a host's namespace name;
# HEAD is the head's hostname, at NET.1; nodes n1..nNODES are at NET.(10+i).
netns_make() {
    local dir=$1 ns=$2 net=$3 head=$4 nodes=$5 i
    [ -d /run/netns ] || { mkdir -p /run/netns && touch "$dir/made-run-netns"; }
    ip netns add "$("$ns" "$head")" || return 1
    ip -n "$("$ns" "$head")" link set lo up
    ip -n "$("$ns" "$head")" link add br0 type bridge
    ip -n "$("$ns" "$head")" addr add "$net.1/24" dev br0
    ip -n "$("$ns" "$head")" link set br0 up
    printf '127.0.0.1 localhost\n%s.1 %s\n' "$net" "$head" >"$dir/etc/hosts"
    for i in $(seq "$nodes"); do
        ip netns add "$("$ns" "n$i")" || return 1
        ip -n "$("$ns" "$head")" link add "v$i" type veth peer name eth0 netns "$("$ns" "n$i")"
        ip -n "$("$ns" "$head")" link set "v$i" master br0 up
        ip -n "$("$ns" "n$i")" addr add "$net.$((10 + i))/24" dev eth0
        ip -n "$("$ns" "n$i")" link set eth0 up
        ip -n "$("$ns" "n$i")" link set lo up
        printf '%s.%d n%d\n' "$net" $((10 + i)) "$i" >>"$dir/etc/hosts"
    done
}

# netns_remove DIR NAMEOF HEAD NODES: kills whatever still runs in the namespaces and removes them.
netns_remove() {
    local dir=$1 ns=$2 head=$3 nodes=$4 host
    for host in "$head" $(seq -f 'n%g' "$nodes"); do
        ip netns pids "$("$ns" "$host")" 2>/dev/null | xargs -r kill -9 2>/dev/null
        ip netns del "$("$ns" "$host")" 2>/dev/null
    done
    if [ -e "$dir/made-run-netns" ]; then
        umount /run/netns 2>/dev/null
        rmdir /run/netns 2>/dev/null
    fi
}
