#!/bin/bash
# From the laptop, part 2 (issue 56): a real Slurm cluster (2 nodes in network namespaces) whose
# head runs a real sshd, and a "laptop" namespace on the cluster's bridge whose scheduler
# commands are traps (tests/cluster/laptop.sh). The laptop has an installed ddpjob and the
# cluster has none: the first `submit --on` installs this version
# there, uploads the job's folder and submits a 2-node job through it. Then from the laptop:
# logs, wait, status (a failed rank named), cancel (nothing left running), fetch (the
# checkpoints and the records, only what changed), a second submit after one file changed
# (exactly that file sent), `logs -f` through a cut link (said, tried again, no line lost or
# twice), a bastion as jump host, and each failure named: an address nobody answers at, a key the host refuses, a
# changed host key, a folder the user cannot write (nothing submitted), a scheduler missing
# there.
. "$SRCDIR/tests/lib/tap.sh"
. "$SRCDIR/tests/cluster/slurm.sh"
. "$SRCDIR/tests/cluster/laptop.sh"
. "$SRCDIR/tests/cluster/oldroot.sh"
user=ddpjrem
R=$LAPTOP_DIR
users_down() {
    pkill -9 -u "$user" 2>/dev/null
    userdel "$user" 2>/dev/null
}
at_exit 'laptop_down'
at_exit 'users_down'
at_exit 'cluster_down'
if ! cluster_up 2 >"$T/cluster.log" 2>&1; then
    fail "a 2-node Slurm cluster starts" "$(tail -n 20 "$T/cluster.log")"
    exit 1
fi

# The cluster's user, whose login shell finds Slurm; sshd on the head (10.77.0.1).
home=$R/home
mkdir -p "$home" "$R/ro"
userdel "$user" 2>/dev/null
useradd -M -p '*' -d "$home" -s /bin/bash "$user"
chown "$user:" "$home"
# No PBS on its PATH (this machine's /etc/profile.d puts OpenPBS there for every login), nor
# /usr/local/bin, where the README's first command installs this machine's own ddpjob.
printf 'export SLURM_CONF=%s PATH=/usr/bin:/bin\n' "$SLURM_CONF" >"$home/.bash_profile"
chown "$user:" "$home/.bash_profile"
LAPNS=$(cluster_ns laptop)
# The head's login runs in a Debian 11 root (tests/cluster/oldroot.sh), as a cluster's login node
# is rarely the laptop's system: its sshd, bash, coreutils and Slurm client (20.11) are its own.
if oldroot_make >"$T/oldroot.log" 2>&1; then pass "a Debian 11 root for the login node (debootstrap, cached in $OLDROOT)"; else
    fail "a Debian 11 root for the login node" "$(tail -n 20 "$T/oldroot.log")"; exit 1; fi
export OLDROOT_BINDS=$LAPTOP_DIR
login() { cluster_in head "$SRCDIR/tests/cluster/oldroot-enter.sh" "$@"; }
laptop_suite_up head 10.77.0.1 "$user" "$LAPNS" "$(cluster_ns head)" 10.77.0.200 login || exit 1
expect_contains "$(login ldd --version 2>&1 | head -n 1)" "GLIBC 2.31" "the login node's C library is Debian 11's glibc 2.31"
expect_contains "$(login sbatch --version 2>&1)" "slurm-wlm 20.11" "... and its Slurm client 20.11"
run login "$LAPTOP_DDPJOB" --version
expect_eq "$RC" 1 "the laptop's own ddpjob does not start there"
expect_contains "$ERR" "version \`GLIBC_2.34' not found" "... its C library is older than the laptop's"
version=$LAPTOP_VERSION
laptop() { laptop_in "$LAPNS" "$CLUSTER/etc/hosts" "$@"; }

mkdir -p "$R/proj/data" "$R/proj/checkpoints"
laptop_job
head -c 100000 /dev/urandom >"$R/proj/data/shard0.bin"
echo "an old checkpoint, left home" >"$R/proj/checkpoints/old.ckpt"
spec() { laptop_spec slurm "$@"; }
spec lapjob '[sh, job.sh]'
spec lapfail '[sh, job.sh]' 'FAIL_RANK: "1"'
# Its end told to a real HTTP receiver in the head's namespace, by the cluster build's ddpjob on
# node 0 (libcurl linked statically).
hook_port=18090
DDPJ_TESTCLUSTER=$CLUSTER cluster_in head /usr/bin/python3 "$SRCDIR/tests/agent/py/webhook_receiver.py" \
    10.77.0.1 "$hook_port" "$T/hook.received" >"$T/hook.log" 2>&1 &
at_exit "kill $! 2>/dev/null"
printf 'notify: {webhook: "http://10.77.0.1:%s/lap", on: [failed]}\n' "$hook_port" >>"$R/proj/lapfail.yaml"
spec lapsleep '[sleep, "300"]'
spec lapticks "[sh, -c, 'for i in \$(seq 30); do echo tick \$i; sleep 1; done']"
chown -R root: "$R/proj"

laptop cluster add hpc --host head --remote-dir '~/jobs'
expect_rc 0 "cluster add hpc (the head's sshd)"
laptop cluster check hpc
expect_contains "$RC:$OUT" "0:hpc: logged in as $user at head:22" "cluster check logs in to the head" "$ERR"
expect_contains "$OUT" "scheduler: Slurm, sbatch at /usr/bin/sbatch" "... and finds Slurm there"
expect_contains "$OUT" "ddpjob: none installed" "... and no ddpjob"

# The first submit: this version installed there, the folder uploaded, the job submitted there.
laptop submit --on hpc lapjob.yaml
expect_rc 0 "submit --on hpc: a 2-node job submitted from the laptop"
JOB=$(tail -n 1 <<<"$OUT")
expect_contains "$ERR" "hpc: installed ddpjob $version in ~/.local/share/ddpjob/$version" "... this version installed there first"
expect_contains "$ERR" "hpc: uploaded 6 files" "... the folder uploaded (4 specs, the script, the data)"
expect_contains "$ERR" "left behind: 1 ignored" "... its checkpoints left behind"
expect_eq "$(cat "$R/trap.log" 2>/dev/null)" "" "the laptop ran no scheduler command"
expect_eq "$(cluster_in head squeue -h -j "$JOB" -o %u 2>/dev/null || cluster_in head sacct -X -n -j "$JOB" -o user%20 2>/dev/null)" \
    "$user" "Slurm has job $JOB, the cluster user's"
record=$(ls -d "$home/jobs/lapjob/.ddpjob/jobs/lapjob."* 2>/dev/null | head -n 1)
expect_contains "$(cat "$record/script" 2>/dev/null)" "$home/.local/share/ddpjob/$version/bin/ddpjob-agent" \
    "the job's script runs the agent installed there"
expect_contains "$(cat "$R/client/state/ddpjob/remote-jobs" 2>/dev/null)" "hpc	$JOB	lapjob	~/jobs/lapjob	$R/proj" \
    "the laptop's index notes where the job went"

installed=$home/.local/share/ddpjob/$version
for prog in ddpjob ddpjob-agent; do
    expect_contains "$(file "$installed/bin/$prog")" "statically linked" "the $prog installed there is the cluster build, static"
done
expect_eq "$(login "$installed/bin/ddpjob" --version 2>&1)" "ddpjob $version" "... and runs on the login node"

laptop wait "$JOB" --timeout 240
expect_rc 0 "wait (found through the index): the job completed"
laptop logs lapjob
expect_contains "$OUT" "rank 0 of 2 on n" "logs from the laptop: rank 0's line" "$ERR"
expect_contains "$OUT" "rank 1 of 2 on n" "... and rank 1's"
expect_contains "$OUT" "in $home/jobs/lapjob" "... run in the uploaded folder"
laptop status lapjob
expect_contains "$RC:$OUT" "0:" "status from the laptop" "$ERR"
expect_contains "$OUT" "completed" "... says completed"
laptop list
expect_rc 0 "list on the laptop"
expect_contains "$OUT" "== on cluster hpc (submitted from here with --on) ==" \
    "list on the laptop goes on to the cluster its jobs went to, naming it"
expect_contains "$OUT" "lapjob (slurm job $JOB): completed" "... and lists the job there with its state"
laptop list --here
expect_lacks "$RC:$OUT" "lapjob" "list --here: this machine's own jobs alone"

laptop report lapjob -o "$R/lapjob.html"
expect_rc 0 "report from the laptop"
expect_contains "$(cat "$R/lapjob.html" 2>/dev/null)" "</html>" "... its page written here (-o)"
laptop fetch lapjob
expect_rc 0 "fetch: the job's files brought back"
expect_contains "$(cat "$R/proj/checkpoints/rank1.ckpt" 2>/dev/null)" "step 10 of rank 1" "... its checkpoints"
expect_eq "$(find "$R/proj/.ddpjob/jobs" -path '*rank_0/stdout.log' | wc -l)" 1 "... and its record with the logs"
expect_eq "$(cat "$R/proj/checkpoints/old.ckpt")" "an old checkpoint, left home" "... beside what was here"
laptop fetch lapjob
expect_contains "$OUT" "hpc: fetched 0 files, 0 KiB;" "a second fetch gets nothing: nothing changed"

# One file changed: exactly that file sent.
echo "# changed" >>"$R/proj/job.sh"
laptop submit --on hpc lapjob.yaml
expect_rc 0 "a second submit"
expect_contains "$ERR" "hpc: uploaded 1 file, 1 KiB; 5 unchanged" "... uploads exactly the one file that changed"
expect_lacks "$ERR" "installed ddpjob" "... and installs nothing again"

# A failed rank, named from the laptop; wait's status is the job's.
laptop submit --on hpc lapfail.yaml
FAILED=$(tail -n 1 <<<"$OUT")
laptop wait --on hpc "$FAILED" --timeout 240
expect_rc 3 "wait --on: the failed job's own status (3)"
laptop status "$FAILED"
expect_contains "$OUT" "failed" "status from the laptop: failed" "$ERR"
expect_contains "$OUT" "rank 1" "... naming rank 1"
expect_contains "$(cat "$T/hook.received" 2>/dev/null)" "\"event\":\"failed\"" \
    "the cluster build's ddpjob on node 0 told the webhook the job failed"

# A job after another, from the laptop: --after goes to the cluster, whose records name the job.
laptop submit --on hpc lapjob.yaml --set name=lapafter --after lapfail:notok
expect_rc 0 "submit --on --after lapfail:notok (it failed: nothing to wait for)"
laptop submit --on hpc lapjob.yaml --set name=lapnever --after lapfail
expect_rc 1 "submit --on --after lapfail (ok): refused there, as lapfail failed"
expect_contains "$ERR" "lapfail has ended failed" "... saying why"

# Cancel from the laptop: nothing left running there.
laptop submit --on hpc lapsleep.yaml
run_until 60 "running" laptop status lapsleep
expect_contains "$OUT" "running" "status from the laptop: running"
laptop cancel lapsleep
expect_rc 0 "cancel from the laptop"
expect_within 60 "nothing of the cancelled job left running on the nodes" \
    sh -c '! pgrep -u "$1" -x sleep >/dev/null' _ "$user"
laptop list --on hpc
expect_contains "$OUT" "lapsleep" "list --on hpc: the cluster's jobs" "$ERR"

# Issue 70 from the laptop: a pipeline submitted there (its stages then submitted there, from
# the folder sent), and the Python package driving the cluster through on=: a sweep, its best,
# a job after it with the best's lr, a spec's problem with its line, a pipeline.
one_node() { # NAME COMMAND [MORE]: a one-rank spec in the laptop's folder
    printf 'name: %s\nscheduler: slurm\nnodes: 1\nprocs_per_node: 1\ncpus_per_node: 1\nwalltime: "00:05:00"\ncommand: %s\n%s' \
        "$1" "$2" "${3:-}" >"$R/proj/$1.yaml"
}
cp "$SRCDIR/tests/agent/py/sweep_trial.py" "$R/proj/"
one_node lapsweep '[python3, sweep_trial.py, "{lr}", "1"]' 'env: {TRIAL_SECONDS: "1"}
sweep: {grid: {lr: [0.2, 0.1]}, objective: {metric: loss, goal: min}}
'
one_node lapfollow '[sh, -c, "echo follow-up with lr $LR"]' 'env: {LR: "0"}
'
one_node lapbroken '[sh, -c, "true"]' 'nodez: 2
'
one_node lapfirst '[sh, -c, "echo first"]'
one_node lapsecond '[sh, -c, "echo after {first.record}"]'
printf 'name: lappipe\nstages:\n  first: {spec: lapfirst.yaml}\n  second: {spec: lapsecond.yaml, after: {ok: [first]}}\n' >"$R/proj/lappipe.yaml"
cp "$R/proj/lappipe.yaml" "$R/proj/lappipe2.yaml" && sed -i 's/^name: lappipe/name: lappipe2/' "$R/proj/lappipe2.yaml"
chown -R root: "$R/proj"
laptop submit --on hpc lappipe2.yaml
expect_rc 0 "submit --on hpc of a pipeline"
expect_contains "$ERR" "pipeline lappipe2: stage first submitted" "... its first stage submitted there"
laptop wait lappipe2 --timeout 300
expect_rc 0 "wait of the pipeline from the laptop (the index knows where it went): every stage completed"
laptop status lappipe2
expect_contains "$OUT" "pipeline lappipe2: completed, 2 of 2 stages ended" "status of it from the laptop" "$ERR"
expect_eq "$(cat "$R/trap.log" 2>/dev/null)" "" "the laptop ran no scheduler command"
run nsenter --net="/run/netns/$LAPNS" -- unshare --mount --propagation private sh -c \
    'mount --bind "$1" /etc/hosts && cd "$0" && shift && exec "$@"' "$R/proj" "$CLUSTER/etc/hosts" \
    env -u SLURM_CONF HOME="$R/client" XDG_STATE_HOME="$R/client/state" PATH=/usr/bin:/bin \
    DDPJOB="$LAPTOP_DDPJOB" PYTHONPATH="$SRCDIR/python" timeout 900 /usr/bin/python3 "$SRCDIR/tests/agent/py/laptop_client.py"
expect_eq "$RC" 0 "the Python client's script (on=\"hpc\") runs to its end" "$ERR"
for fact in "sweep: Sweep" "sweep wait: 0" "trials: ['completed', 'completed']" "best: {'lr': 0.1}" \
    "follow-up wait: 0" "follow-up logs: follow-up with lr 0.1" "spec error: 8 True" "pipeline: Pipeline" \
    "pipeline wait: 0" "pipeline stages: [('first', 'completed'), ('second', 'completed')]" "pipeline second: True"; do
    expect_contains "$OUT" "$fact" "ddpjob.py over on=: $fact" "$OUT"
done
# The folder as the uploads after this expect it.
rm -f "$R/proj/sweep_trial.py" "$R"/proj/lap{sweep,follow,broken,first,second,pipe,pipe2}.yaml

# Issue 68 from the laptop: an allocation held there (dev --on), runs in it with the folder sent
# first, a shell on a node (a command; a real terminal under script), a node's port reached here.
spec lapdev "[sh, -c, 'echo rank=\$RANK host=\$(hostname) says=\$(cat msg.txt)']"
echo first >"$R/proj/msg.txt"
laptop dev lapdev.yaml --on hpc --idle 3m --wait-for 180s
expect_rc 0 "dev --on hpc: the spec's 2 nodes held there, from the laptop"
expect_contains "$OUT" "lapdev: job " "... printing the allocation, its job and nodes"
expect_contains "$ERR" "hpc: uploaded " "... its folder sent first"
DEVJOB=$(grep -o 'job [0-9]*' <<<"$OUT" | head -n 1 | cut -d' ' -f2)
expect_contains "$(cat "$R/client/state/ddpjob/remote-jobs" 2>/dev/null)" "	lapdev	~/jobs/lapdev	$R/proj" \
    "... and the laptop's index notes it"
expect_eq "$(cluster_in head squeue -h -j "$DEVJOB" -o %T 2>/dev/null)" RUNNING "Slurm runs the allocation ($DEVJOB)"
laptop run --in lapdev
expect_rc 0 "run --in lapdev (found through the index): the run completed"
expect_contains "$OUT" "rank=1 host=n2 says=first" "... its ranks' lines come back to the laptop"
expect_contains "$ERR" "lapdev-run1: completed; lapdev stays held" "... named, the allocation held"
echo second >"$R/proj/msg.txt"
laptop run --in lapdev
expect_contains "$ERR" "hpc: uploaded 1 file" "an edit here: the second run sends exactly the file changed"
expect_contains "$OUT" "rank=0 host=n1 says=second" "... and runs it"
laptop run --in lapdev lapfail.yaml
expect_rc 3 "run --in lapdev lapfail.yaml (rank 1 exits 3): exit 3"
expect_contains "$ERR" "lapdev stays held" "... and the allocation stays"
laptop shell lapdev --node 1 -- sh -c 'echo "on $(hostname)"; exit 5'
expect_rc 5 "shell --node 1 -- COMMAND from the laptop: the command's status"
expect_contains "$OUT" "on n2" "... run on node 1 (n2)"
laptop run --on hpc lapjob.yaml
expect_rc 2 "run --on without --in: usage error"
expect_contains "$ERR" "run --in DEV --on hpc" "... naming what runs on a cluster"

# An interactive shell from the laptop under a real terminal: its size, Ctrl-C to the program.
LAPDJ=$R/lapdj
{ echo '#!/bin/bash'; declare -p LAPTOP_DIR LAPTOP_DDPJOB; declare -f laptop_exec
  printf 'laptop_exec %q %q "$@"\n' "$LAPNS" "$CLUSTER/etc/hosts"; } >"$LAPDJ"
chmod 755 "$LAPDJ"
nap=277.$$
rm -f "$T/lapshell.in" && mkfifo "$T/lapshell.in"
script -qec "stty rows 37 cols 101; $LAPDJ shell lapdev --node 1" /dev/null <"$T/lapshell.in" >"$T/lapshell.out" 2>&1 &
shell_pid=$!
exec 7>"$T/lapshell.in"
printf 'stty size; tty; sleep %s\n' "$nap" >&7
for _ in $(seq 300); do pgrep -f "sleep $nap" >/dev/null && break; sleep 0.2; done
if pgrep -f "sleep $nap" >/dev/null; then pass "the laptop's interactive shell runs a command typed into it"; else
    fail "the laptop's interactive shell runs a command typed into it" "$(cat "$T/lapshell.out")"; fi
printf '\003' >&7
for _ in $(seq 150); do pgrep -f "sleep $nap" >/dev/null || break; sleep 0.2; done
expect_eq "$(pgrep -f "sleep $nap")" "" "Ctrl-C on the laptop reached the program on the node"
printf 'echo after-$((3 * 3))\nexit 6\n' >&7
for _ in $(seq 300); do kill -0 "$shell_pid" 2>/dev/null || break; sleep 0.2; done
exec 7>&-
wait "$shell_pid"
expect_eq "$?" 6 "the shell's exit status came back to the laptop" "$(cat "$T/lapshell.out")"
expect_contains "$(cat "$T/lapshell.out")" "37 101" "the node's terminal has the laptop's window size (37 x 101)"
expect_contains "$(cat "$T/lapshell.out")" "after-9" "... and the shell went on after Ctrl-C"

# A port of node 0 reached from the laptop: a web server on that node's loopback alone.
web_port=18093
echo "served from node 0" >"$home/jobs/lapdev/page.txt"
chown "$user:" "$home/jobs/lapdev/page.txt"
laptop shell lapdev -- /usr/bin/python3 -m http.server --bind 127.0.0.1 "$web_port" &
web_pid=$!
"$LAPDJ" dev lapdev --port "$web_port" >"$T/fwd.out" 2>"$T/fwd.err" &
fwd_pid=$!
lap_page() {
    nsenter --net="/run/netns/$LAPNS" /usr/bin/python3 -c 'import sys, urllib.request
print(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode(), end="")' "http://127.0.0.1:$web_port/page.txt" 2>/dev/null
}
page=
for _ in $(seq 300); do page=$(lap_page) && [ -n "$page" ] && break; sleep 0.2; done
expect_eq "$page" "served from node 0" "localhost:$web_port on the laptop is port $web_port of node 0 (dev --port)" \
    "$(cat "$T/fwd.err")"
expect_contains "$(cat "$T/fwd.err")" "localhost:$web_port is port $web_port of node 0 (n1) of lapdev on hpc; Ctrl-C stops" \
    "... said so"
expect_eq "$(lap_page)" "served from node 0" "... a second connection through it"
expect_eq "$(cluster_in head ss -Hltn "sport = :$web_port" 2>/dev/null)" "" "... nothing listens on the login node for it"
# The laptop's ddpjob alone (the one there has the same words).
pkill -INT -f "^$LAPTOP_DDPJOB dev lapdev --port $web_port"
for _ in $(seq 150); do kill -0 "$fwd_pid" 2>/dev/null || break; sleep 0.2; done
kill -KILL "$fwd_pid" 2>/dev/null
wait "$fwd_pid"
expect_eq "$?" 0 "Ctrl-C ends the forward (exit 0)" "$(cat "$T/fwd.err")"
expect_eq "$(lap_page)" "" "nothing listens on the laptop's port after it"
pkill -TERM -f "^$LAPTOP_DDPJOB shell lapdev -- /usr/bin/python3"
wait "$web_pid" 2>/dev/null
gone=
for _ in $(seq 150); do pgrep -f "http.server --bind 127.0.0.1 $web_port" >/dev/null || { gone=1; break; }; sleep 0.2; done
expect_eq "$gone" 1 "the laptop's shell ended: its program on the node is gone too"

laptop dev stop lapdev
expect_rc 0 "dev stop lapdev from the laptop"
dev_gone() { ! cluster_in head squeue -h -j "$DEVJOB" -t R,PD 2>/dev/null | grep -q .; }
expect_within 60 "the allocation is gone from Slurm" dev_gone
rm "$R/proj/lapdev.yaml" "$R/proj/msg.txt"

# logs -f through a cut link: said, tried again, every line once.
laptop submit --on hpc lapticks.yaml
run_until 60 "running" laptop status lapticks
# Each in the background with a folder of its own for run's stderr.
(T=$T/follow && mkdir "$T" && laptop logs -f lapticks --rank 0; echo "$RC" >"$T.rc"
    printf '%s' "$OUT" >"$T.out"; printf '%s' "$ERR" >"$T.err") &
follow=$!
(T=$T/waiting && mkdir "$T" && laptop wait lapticks; echo "$RC" >"$T.rc"; printf '%s' "$ERR" >"$T.err") &
waiting=$!
sleep 6
ip -n "$(cluster_ns head)" link set vlap1 down
sleep 25
ip -n "$(cluster_ns head)" link set vlap1 up
wait "$follow" "$waiting"
expect_eq "$(cat "$T/waiting.rc")" 0 "wait through the same cut link: the job completed, exit 0" "$(cat "$T/waiting.err")"
expect_contains "$(cat "$T/waiting.err")" "hpc: the connection was lost" "... saying the link was lost, not that the job failed"
expect_eq "$(cat "$T/follow.rc")" 0 "logs -f through a cut link ends with the job, exit 0" "$(cat "$T/follow.err")"
expect_contains "$(cat "$T/follow.err")" "hpc: the connection was lost" "... saying the link was lost"
expect_contains "$(cat "$T/follow.err")" "the job there goes on: trying again in" "... and that it tries again"
expect_eq "$(grep -c '^tick ' "$T/follow.out")" 30 "... every line once (30 ticks)" "$(cat "$T/follow.out")"
expect_eq "$(grep -c '^tick 1$' "$T/follow.out")" 1 "... none twice"

# Through a jump host: a bastion (its own sshd) on the cluster's bridge and on a second link to a
# second laptop, which reaches nothing else (10.78.0.0/24).
BASTNS=$(cluster_ns bastion)
LAP2NS=$(cluster_ns laptop2)
ip netns add "$BASTNS"
ip netns add "$LAP2NS"
LAPTOP_NS+=("$BASTNS" "$LAP2NS")
ip -n "$(cluster_ns head)" link add vbast type veth peer name eth0 netns "$BASTNS"
ip -n "$(cluster_ns head)" link set vbast master br0 up
ip -n "$BASTNS" addr add 10.77.0.250/24 dev eth0
ip -n "$BASTNS" link add eth1 type veth peer name eth0 netns "$LAP2NS"
ip -n "$BASTNS" addr add 10.78.0.1/24 dev eth1
ip -n "$LAP2NS" addr add 10.78.0.2/24 dev eth0
for ns in "$BASTNS" "$LAP2NS"; do
    for dev in lo eth0 eth1; do ip -n "$ns" link set "$dev" up 2>/dev/null; done
done
bastion_in() {
    DDPJ_TESTCLUSTER=$CLUSTER nsenter --net="/run/netns/$BASTNS" -- unshare --uts --mount --propagation private \
        sh -c 'hostname bastion && mount --bind "$0" /etc/hosts && exec "$@"' "$CLUSTER/etc/hosts" "$@"
}
if laptop_sshd bastion 10.78.0.1 "$user" bastion_in; then pass "a bastion's sshd runs"; else fail "a bastion's sshd runs"; fi
printf '127.0.0.1 localhost\n10.78.0.1 bastion\n' >"$R/hosts2"
laptop2() { laptop_in "$LAP2NS" "$R/hosts2" "$@"; }
laptop cluster add hpcjump --host head --proxy-jump bastion --remote-dir '~/jobs'
expect_rc 0 "cluster add --proxy-jump bastion"
laptop2 status --on hpc lapjob
expect_rc 255 "the second laptop cannot reach the head itself"
laptop2 status --on hpcjump lapjob
expect_rc 0 "through the bastion it can: status"
expect_contains "$OUT" "completed" "... the job's state, from the head"
head -c 3000000 /dev/urandom >"$R/proj/data/shard1.bin"
laptop2 submit --on hpcjump lapjob.yaml
expect_rc 0 "submit --on through the jump host (SFTP and the command through its tunnel)"
expect_contains "$ERR" "hpcjump: uploaded 1 file, 2930 KiB; 6 unchanged" "... 3 MB of a new file sent through the tunnel"
expect_eq "$(cmp "$R/proj/data/shard1.bin" "$home/jobs/lapjob/data/shard1.bin" && echo same)" same "... whole"
rm "$R/proj/data/shard1.bin"
JUMPED=$(tail -n 1 <<<"$OUT")
laptop2 wait "$JUMPED" --timeout 240
expect_rc 0 "wait through the jump host: completed"
printf 'Host head\n    User %s\n    ProxyJump bastion\nHost bastion\n    User %s\n' "$user" "$user" >"$R/jump_config"
laptop2 status --on hpc lapjob --ssh-config "$R/jump_config"
expect_rc 0 "~/.ssh/config's ProxyJump is honoured too"
printf 'Host head\n    ProxyJump bastion,other\n' >"$R/chain_config"
laptop2 status --on hpc lapjob --ssh-config "$R/chain_config"
expect_rc 255 "a chain of jump hosts is refused"
expect_contains "$ERR" "a chain of jump hosts: this ddpjob takes one" "... saying so"

# Failures, each named.
laptop cluster add gone --host 10.77.0.99 --remote-dir '~/jobs'
start=$SECONDS
laptop submit --on gone lapjob.yaml
expect_rc 255 "an address nobody answers at: exit 255"
expect_contains "$ERR" "ddpjob submit: gone: 10.77.0.99: cannot connect to 10.77.0.99:22" "... naming the host and port"
if [ $((SECONDS - start)) -le 20 ]; then pass "... within its deadline ($((SECONDS - start)) s)"; else
    fail "... within its deadline" "$((SECONDS - start)) s"; fi
ssh-keygen -q -t ed25519 -N '' -f "$R/client/other_key"
laptop cluster add stranger --host head --identity "$R/client/other_key" --remote-dir '~/jobs'
laptop status --on stranger
expect_rc 255 "a key the host refuses: exit 255"
expect_contains "$ERR" "ddpjob: stranger: head (ddpjrem@head:22): login refused (public keys tried: $R/client/other_key)" \
    "... naming the cluster and the keys tried"
chmod 755 "$R/ro"
laptop cluster add ro --host head --remote-dir "$R/ro/jobs"
count_before=$(cluster_in head squeue -h | wc -l)
laptop submit --on ro lapjob.yaml
expect_rc 3 "a folder the user cannot write: exit 3"
expect_contains "$ERR" "permission denied" "... saying so"
expect_contains "$ERR" "nothing submitted" "... and that nothing was submitted"
expect_eq "$(cluster_in head squeue -h | wc -l)" "$count_before" "... and nothing was"
# A filesystem that fills up mid-upload: a 2 MiB ext4 image mounted where the head's sshd sees it.
truncate -s 2M "$T/full.img"
mkfs.ext4 -q -F "$T/full.img"
mkdir -p "$home/full"
# In the sshd's mount namespace and its root (the Debian 11 one).
sshd_in() { nsenter -t "$(cat "$R/run/sshd-head.pid")" -m -r "$@"; }
if sshd_in mount -o loop "$T/full.img" "$home/full"; then
    sshd_in chown "$user:" "$home/full"
    laptop cluster add full --host head --remote-dir "$home/full"
    head -c 3000000 /dev/urandom >"$R/proj/data/big.bin"
    laptop submit --on full lapjob.yaml
    expect_rc 3 "a filesystem that fills up mid-upload: exit 3"
    expect_contains "$ERR" "cannot write $home/full/lapjob/data/big.bin: the host refused" "... naming the file"
    expect_contains "$ERR" "(uploaded " "... what had been sent by then"
    expect_contains "$ERR" "nothing submitted" "... and that nothing was submitted"
    expect_eq "$(cluster_in head squeue -h | wc -l)" "$count_before" "... and nothing was"
    rm "$R/proj/data/big.bin"
    sshd_in umount "$home/full"
else
    fail "a loop-mounted 2 MiB filesystem on the head" "mount -o loop failed"
fi
cp "$R/client/.ssh/known_hosts" "$T/known_hosts.good"
sed -i "s|ssh-ed25519 .*|$(cut -d' ' -f1-2 "$R/client/other_key.pub")|" "$R/client/.ssh/known_hosts"
laptop status --on hpc lapjob
expect_rc 255 "a changed host key: refused, exit 255"
expect_contains "$ERR" "not what $R/client/.ssh/known_hosts:1 says" "... naming known_hosts' line"
ssh-keygen -q -H -f "$R/client/.ssh/known_hosts" >/dev/null 2>&1
laptop status --on hpc lapjob
expect_rc 255 "a changed host key in a hashed known_hosts: refused"
expect_contains "$ERR" "not what $R/client/.ssh/known_hosts:1 says" "... naming its line"
cp "$T/known_hosts.good" "$R/client/.ssh/known_hosts"
sed -i 's/^scheduler: slurm/scheduler: pbs/; s/^name: lapjob/name: lappbs/' "$R/proj/lapjob.yaml"
laptop submit --on hpc lapjob.yaml
expect_rc 4 "a scheduler missing there (qsub): exit 4, as submit's own"
expect_contains "$ERR" "qsub" "... naming it"
expect_lacks "$ERR" "qsub failed" "... as missing, not as failing"
expect_eq "$(cat "$R/trap.log" 2>/dev/null)" "" "the laptop never ran a scheduler command"

# Issue 66: what leaves the laptop, and where it lands. A second cluster user ($other), who
# shares a scratch folder with this one, must not get to read or swap what is sent.
other=ddpjrem2
userdel "$other" 2>/dev/null
useradd -M -p '*' -d /nonexistent -s /bin/bash "$other"
at_exit "pkill -9 -u $other; userdel $other 2>/dev/null"
scratch=$R/scratch
mkdir -m 1777 "$scratch"
expect_eq "$(stat -c %a "$home/jobs/lapjob/lapjob.yaml" "$home/jobs/lapjob/job.sh" "$home/jobs/lapjob" | tr '\n' ' ')" \
    "600 700 700 " "what submit --on sent is the user's alone there: files 0600 (0700 where executable), folders 0700"
expect_eq "$(stat -c %a "$R/lapjob.html")" 600 "report --on writes its page 0600, as a local report -o does"
spec lapsec '[sh, job.sh]'
# A remote_dir another user made first, open to all: refused, naming it, before anything is sent.
runuser -u "$other" -- bash -c 'umask 0 && mkdir -m 2777 "$1/remote"' _ "$scratch"
laptop cluster add shared --host head --remote-dir "$scratch/remote"
count_before=$(cluster_in head squeue -h | wc -l)
laptop submit --on shared lapsec.yaml
expect_rc 3 "submit --on into a remote_dir another user made (2777): refused, exit 3"
expect_contains "$ERR" "$scratch/remote (uid $(id -u "$other"), mode 2777): owned by another user: not trusted" \
    "... naming the folder, its owner and mode"
expect_contains "$ERR" "nothing submitted" "... and that nothing was submitted"
expect_eq "$(ls -A "$scratch/remote"):$(cluster_in head squeue -h | wc -l)" ":$count_before" "... nothing was sent there, nor submitted"
# A team's remote_dir (the user's, setgid and sticky: --remote-share group) where the other user
# made the job's folder first, open to all: refused too. Then without it: the group may read.
mkdir -m 3770 "$scratch/team"
chown "$user:users" "$scratch/team"
chmod 3770 "$scratch/team"
runuser -u "$other" -- mkdir -m 777 "$scratch/team/lapsec" 2>/dev/null || mkdir -m 777 "$scratch/team/lapsec"
chown "$other:" "$scratch/team/lapsec"
laptop cluster add team --host head --remote-dir "$scratch/team" --remote-share group
laptop submit --on team lapsec.yaml
expect_rc 3 "a team's remote_dir where another user made the job's folder first (0777): refused"
expect_contains "$ERR" "$scratch/team/lapsec (uid $(id -u "$other"), mode 2777): owned by another user" "... naming it"
expect_eq "$(ls -A "$scratch/team/lapsec")" "" "... and nothing was sent into it"
rm -rf "$scratch/team/lapsec"
laptop submit --on team lapsec.yaml
expect_rc 0 "the team's remote_dir (3770, the user's) taken with --remote-share group"
expect_eq "$(stat -c %a "$scratch/team/lapsec" "$scratch/team/lapsec/lapsec.yaml" "$scratch/team/lapsec/job.sh" | tr '\n' ' ')" \
    "2750 640 750 " "... the job's folder 2750, its files the group's to read (0640, 0750), none to write"
laptop wait "$(tail -n 1 <<<"$OUT")" --timeout 240
expect_rc 0 "... and the job runs there"
# Credentials in the job's folder never leave the laptop, whatever .ddpjobignore says.
mkdir -p "$R/proj/.ssh" "$R/proj/sub/.aws"
echo "PRIVATE KEY" >"$R/proj/.ssh/id_ed25519"
echo "machine x login y password z" >"$R/proj/.netrc"
echo "[default]" >"$R/proj/sub/.aws/credentials"
printf '!.ssh/\n!.netrc\n' >"$R/proj/.ddpjobignore"
laptop submit --on hpc lapsec.yaml
expect_rc 0 "a submit from a folder holding .ssh, .netrc and .aws"
expect_contains "$ERR" "3 of credentials (never sent)" "... leaves them behind, said"
expect_eq "$(find "$home/jobs/lapsec" \( -name .ssh -o -name .netrc -o -name .aws \) | wc -l)" 0 \
    "... none is there, though .ddpjobignore asked them back in"
rm -rf "$R/proj/.ssh" "$R/proj/sub" "$R/proj/.netrc" "$R/proj/.ddpjobignore"
# The home folder itself is never the folder sent.
laptop submit --on hpc lapsec.yaml --set workdir="$R/client"
expect_rc 1 "submit --on whose folder is the laptop's home: refused"
expect_contains "$ERR" "$R/client is your home folder: the upload would send all of it" "... saying why and the mend"
# A folder over --max-upload: refused before anything is sent.
spec lapbig '[sh, job.sh]'
laptop submit --on hpc lapbig.yaml --max-upload 50KB
expect_rc 1 "a folder of more than --max-upload 50KB: refused"
expect_contains "$ERR" "over --max-upload 50K: nothing sent" "... naming its size and the cap"
expect_eq "$(ls -d "$home/jobs/lapbig" 2>/dev/null)" "" "... and nothing was"
# --dry-run makes no connection: what would be sent is said, nothing is.
laptop submit --on gone lapbig.yaml --dry-run
expect_rc 0 "submit --on --dry-run to a cluster nobody answers at: exit 0, no connection made"
expect_contains "$OUT" "gone: would upload (what changed of) " "... saying what would be sent" "$ERR"
laptop submit --on hpc lapbig.yaml --dry-run
expect_eq "$RC:$(ls -d "$home/jobs/lapbig" 2>/dev/null)" "0:" "... and to a cluster that answers, nothing is sent there"
# An ~/.ssh/config others can write is not used (OpenSSH: "Bad owner or permissions").
chmod 666 "$R/jump_config"
laptop2 status --on hpc lapjob --ssh-config "$R/jump_config"
expect_contains "$RC:$ERR" "others can write it (mode 0666): not trusted" "an ~/.ssh/config at mode 666: refused, saying why"
