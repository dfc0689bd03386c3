#!/bin/bash
# The baseline for launch overhead: N workers started from a plain shell loop with the
# environment set by hand, as a launcher with no overhead at all would.
n=$1
shift
port=${PORT:-$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("", 0)); print(s.getsockname()[1])')}
pids=()
for ((i = 0; i < n; i++)); do
    RANK=$i LOCAL_RANK=$i WORLD_SIZE=$n LOCAL_WORLD_SIZE=$n MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
        OMP_NUM_THREADS=1 "$@" &
    pids+=($!)
done
status=0
for p in "${pids[@]}"; do wait "$p" || status=$?; done
exit $status
