#!/bin/bash
# The rendered PBS script run under bash with a PBS-style environment and a recording agent: it
# reads PBS_NODEFILE (repeated hosts), picks the first host as master, runs node 0's agent itself
# and starts the others through pbsdsh with the right vnode index and node rank, hands over the
# token in a 0600 file, and exits with a failing node's status. A stand-in pbsdsh on PATH runs the
# task here and records its -n; like OpenPBS's it always exits 0 and prints a task's non-zero
# status. tests/agent/pbs.sh runs the script on a real OpenPBS.
. "$SRCDIR/tests/lib/tap.sh"
cd "$T" || exit 1

make_bindir "$T/bin" "$T/rec"
mkdir -p "$T/path"
cat >"$T/path/pbsdsh" <<'SHIM'
#!/bin/bash
# pbsdsh -n VNODE -- PROGRAM ARGS...: run the task here, as TM would on that vnode.
[ "$1" = -n ] && [ "$3" = -- ] || { echo "pbsdsh stand-in: unexpected args: $*" >&2; exit 99; }
echo "$2" >>"$PBSDSH_LOG"
vnode=$2
shift 3
PBS_VNODENUM=$vnode "$@"
status=$?
[ "$status" -eq 0 ] || echo "pbsdsh: task 0x00000000 exit status $status"
exit 0
SHIM
chmod +x "$T/path/pbsdsh"

cat >job.yaml <<'SPEC'
name: nodefile-test
scheduler: pbs
nodes: 2
gpus_per_node: 2
env: {FROM_SPEC: "yes it is"}
setup: |
  export SETUP_RAN=1
command: [python3, train.py, --epochs, "5"]
SPEC
run "$DDPJOB" render job.yaml --bindir "$T/bin" -o job.pbs
expect_eq "$RC" 0 "render the PBS script"

printf 'gadi-gpu-0101.gadi.nci.org.au\n%.0s' 1 2 3 >nodefile
printf 'gadi-gpu-0207.gadi.nci.org.au\n%.0s' 1 2 3 >>nodefile
mkdir -p workdir
run_job() {
    (cd workdir && env PATH="$T/path:$PATH" PBSDSH_LOG="$T/pbsdsh.log" PBS_NODEFILE="$T/nodefile" \
        PBS_JOBID=140873987.gadi-pbs PBS_O_WORKDIR="$T/workdir" "$@" bash ../job.pbs)
}
rm -rf "$T/rec"/* "$T/pbsdsh.log"
run run_job
expect_eq "$RC" 0 "the job succeeds when every agent does"
expect_contains "$OUT" "master gadi-gpu-0101.gadi.nci.org.au," "the first host of the node file is the master"
expect_eq "$(sort "$T/pbsdsh.log" | tr '\n' ' ')" "3 " "pbsdsh -n gets node 1's first line (vnode index); node 0's agent runs in the script"
for rank in 0 1; do
    argv=$(cat "$T/rec/agent.$rank.argv" 2>/dev/null | tr '\n' ' ')
    expect_contains "$argv" "--node-rank $rank --nnodes 2 --nproc-per-node 2 --master-addr gadi-gpu-0101.gadi.nci.org.au --run-id 140873987.gadi-pbs " \
        "node $rank agent: rank, master, run id (the agent derives the port from PBS_JOBID)"
    expect_contains "$argv" "-- python3 train.py --epochs 5 " "node $rank agent: the workload after --"
    expect_eq "$(cat "$T/rec/agent.$rank.tokenmode" 2>/dev/null)" 600 "node $rank: the token file is private (0600)"
    env_file=$T/rec/agent.$rank.env
    expect_contains "$(cat "$env_file" 2>/dev/null)" "FROM_SPEC=yes it is" "node $rank: the spec's env reached the agent"
    expect_contains "$(cat "$env_file" 2>/dev/null)" "SETUP_RAN=1" "node $rank: setup ran on the node"
    expect_eq "$(cat "$T/rec/agent.$rank.pwd" 2>/dev/null)" "$T/workdir" "node $rank: runs in the submission directory"
done
expect_no_file "$T/workdir/.ddpjob/140873987.gadi-pbs/token" "the token file is removed at the end"
expect_lacks "$(cat "$T/job.pbs")" DDPJOB_TOKEN "the token is not in the script"

# A failing node fails the job with its status (which pbsdsh only prints), and the script names it.
rm -rf "$T/rec"/* "$T/pbsdsh.log"
run run_job AGENT_EXIT_1=7
expect_eq "$RC" 7 "a node's failure is the job's status"
expect_contains "$ERR" "node 1 (gadi-gpu-0207.gadi.nci.org.au): its agent ended with status 7" "the failing node is named"

# A node file with fewer hosts than the spec asks for stops before starting anything.
printf 'onlyhost\nonlyhost\n' >"$T/nodefile"
rm -rf "$T/rec"/* "$T/pbsdsh.log"
run run_job
expect_eq "$RC" 1 "too few nodes fails"
expect_contains "$ERR" "expected 2 nodes in $T/nodefile, found 1: onlyhost" "and says how many it found"
expect_no_file "$T/pbsdsh.log" "and no agent was started"

# An empty node file, and no PBS environment at all.
: >"$T/nodefile"
run run_job
expect_contains "$ERR" "no host names in node file" "an empty node file is named as such"
run env -u PBS_O_WORKDIR bash "$T/job.pbs"
expect_eq "$RC" 1 "outside PBS the script refuses to run"
expect_contains "$ERR" "PBS_O_WORKDIR: not inside a PBS job" "and says why"

# The agent itself derives the master port from PBS_JOBID, 10000 + 2 x (140873987 mod 10000) =
# 17974, and the store's, the next one: node 1 connects there.
printf 'a\nb\n' >"$T/nodefile-ab"
run env PBS_NODEFILE="$T/nodefile-ab" PBS_JOBID=140873987.gadi-pbs DDPJOB_TOKEN=t \
    "$AGENT" --node-rank 1 --master-addr 127.0.0.1 --rdzv-timeout 1 /bin/true
expect_contains "$ERR" "cannot connect to 127.0.0.1:17975" "the agent derives the rendezvous port from PBS_JOBID"

# With master_port set, the port is the spec's.
sed -i 's/^nodes: 2/nodes: 2\nmaster_port: 29555/' job.yaml
"$DDPJOB" render job.yaml --bindir "$T/bin" -o job.pbs
printf 'a\nb\n' >"$T/nodefile"
rm -rf "$T/rec"/*
run run_job
expect_contains "$(tr '\n' ' ' <"$T/rec/agent.1.argv")" "--master-addr a --master-port 29555" "master_port from the spec"
