#!/bin/bash
# The rendered PBS script run for real under bash with a PBS-style environment whose node file
# names this host: it starts the real agent, which starts real PyTorch workers, and finishes.
# pbsdsh exists only inside PBS (Debian has no package), so a stand-in runs the task here, as
# PBS's task manager would on the named vnode.
. "$SRCDIR/tests/agent/lib.sh"
cd "$T" || exit 1
mkdir -p path workdir
cat >path/pbsdsh <<'SHIM'
#!/bin/bash
[ "$1" = -n ] && [ "$3" = -- ] || { echo "pbsdsh stand-in: unexpected args: $*" >&2; exit 99; }
vnode=$2
shift 3
PBS_VNODENUM=$vnode exec "$@"
SHIM
chmod +x path/pbsdsh

host=$(hostname)
cat >job.yaml <<SPEC
name: pbs-torch
scheduler: pbs
nodes: 1
procs_per_node: 3
walltime: "00:05:00"
env: {FROM_SPEC: "yes"}
command: [/usr/bin/python3, "$SRCDIR/tests/agent/py/p2p.py"]
SPEC
run "$DDPJOB" render job.yaml -o job.pbs
expect_eq "$RC" 0 "the PBS script renders with the built agent"
printf '%s\n%s\n' "$host" "$host" >nodefile

run env DDPJ_TESTMARK="$MARK" PATH="$T/path:$PATH" PBS_NODEFILE="$T/nodefile" PBS_JOBID=4242.pbs-server \
    PBS_O_WORKDIR="$T/workdir" timeout 120 bash job.pbs
expect_eq "$RC" 0 "the job finishes with status 0"
expect_contains "$OUT" "ddpjob: job 4242.pbs-server: 1 node(s), 3 worker(s) each, master $host:" \
    "the script picked this host as master"
for r in 1 2; do
    expect_contains "$OUT" "[rank $r] Rank $r has received data from rank 0: 1.0" "PyTorch rank $r received rank 0's tensor"
done
expect_contains "$ERR" "node 0 of 1 ($host): ranks 0-2 of 3" "one real agent ran the node's 3 workers"
expect_no_file "$T/workdir/.ddpjob/4242.pbs-server/token" "the token file is gone afterwards"
expect_no_file "$T/workdir/.ddpjob" "and so is the job's directory"

sed -i 's/p2p.py/no-such-script.py/' job.yaml
run "$DDPJOB" render job.yaml -o job.pbs
run env DDPJ_TESTMARK="$MARK" PATH="$T/path:$PATH" PBS_NODEFILE="$T/nodefile" PBS_JOBID=4243 \
    PBS_O_WORKDIR="$T/workdir" timeout 120 bash job.pbs
expect_eq "$RC" 2 "a failing workload fails the PBS job with the workers' status"
expect_contains "$ERR" "ddpjob: node 0 ($host) exited with status 2" "and the script names the node"
expect_no_leftovers "nothing left after the PBS jobs"
