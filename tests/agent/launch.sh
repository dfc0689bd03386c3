#!/bin/bash
# `ddpjob launch` over real SSH: three hosts n1..n3, each Debian's sshd in its own network
# namespace (tests/cluster/sshd.sh), the client (libssh2) on a login host, logging in as an
# unprivileged user that its ~/.ssh/config names. A real PyTorch gloo
# job across them; a worker crash; Ctrl-C on the head; a dropped connection and a host cut off
# mid-job; hosts with an unknown or changed key, an
# address nobody answers at, and hosts without the agent: each named, and nothing left running
# on any host. Then the same hosts run a job in a Charliecloud image (the real ch-run).
. "$SRCDIR/tests/lib/agents.sh"
. "$SRCDIR/tests/cluster/sshd.sh"
. "$SRCDIR/tests/lib/images.sh"
sshd_suite_up 3 "three sshd hosts (n1, n2, n3) in network namespaces" || exit 1
# What the hosts' user runs must be where it can read it.
bindir=$SSHD_DIR/bin
cp "$AGENT" "$SRCDIR/tests/agent/py/env_ddp.py" "$bindir/"

spec() { # NAME COMMAND (a YAML flow list)
    cat >"$T/$1.yaml" <<YAML
name: $1
nodes: 3
procs_per_node: 1
env: {GLOO_SOCKET_IFNAME: eth0}
command: $2
YAML
}

# The job's processes on the hosts: whatever runs in their namespaces besides sshd itself.
host_leftovers() {
    local i pid
    for i in 1 2 3; do
        for pid in $(ip netns pids "$(sshd_ns "n$i")"); do
            [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = sshd ] || echo "n$i: $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)"
        done
    done
}

expect_hosts_clean() {
    local left
    for _ in $(seq 50); do
        left=$(host_leftovers)
        [ -z "$left" ] && break
        sleep 0.1
    done
    if [ -z "$left" ]; then pass "$1"; else fail "$1" "$left"; fi
}

launch() { # ARGS...: OUT, ERR, RC, TOOK (s)
    local start=$SECONDS
    run sshd_login timeout -s KILL 120 "$DDPJOB" launch "$@"
    TOOK=$((SECONDS - start))
}

# start_sleepy: the sleepy job in the background (LAUNCHER), once a worker runs on every host.
start_sleepy() {
    sshd_login timeout -s KILL 120 "$DDPJOB" launch "$T/sleepy.yaml" --hosts n1,n2,n3 --bindir "$bindir" \
        >"$T/sleepy.out" 2>"$T/sleepy.err" &
    LAUNCHER=$!
    for _ in $(seq 200); do [ "$(grep -c started "$T/sleepy.out")" = 3 ] && break; sleep 0.1; done
}

spec ddp "[/usr/bin/python3, $bindir/env_ddp.py]"
launch "$T/ddp.yaml" --hosts n1,n2:2,n3 --bindir "$bindir"
expect_eq "$RC" 0 "a PyTorch gloo job on 3 hosts (n2 with 2 workers) exits 0"
for r in 0 1 2 3; do
    expect_contains "$OUT" "[rank $r] host=" "rank $r ran"
done
expect_contains "$OUT" "n2: [rank 2] host=n2 RANK=2 LOCAL_RANK=1 WORLD_SIZE=4 LOCAL_WORLD_SIZE=2 GROUP_RANK=1 GROUP_WORLD_SIZE=3 MASTER_ADDR=n1" \
    "each line comes back behind its host; ranks, node ranks and the master are right"
expect_contains "$OUT" "sum=6 expected=6" "an all_reduce across the hosts adds up"
expect_hosts_clean "nothing left on any host after the job"

spec crash "[bash, -c, 'if [ \$RANK = 2 ]; then echo failing >&2; exit 3; fi; sleep 60']"
launch "$T/crash.yaml" --hosts n1,n2,n3 --bindir "$bindir"
expect_eq "$RC" 3 "a worker exiting 3 on n3: launch exits 3"
expect_contains "$ERR" "job failed (exit 3): rank 2 (node 2, host n3, local rank 0) exited with code 3" \
    "naming the rank, node and host"
if [ "$TOOK" -lt 20 ]; then pass "the whole job is torn down at once (${TOOK} s)"; else fail "teardown took ${TOOK} s"; fi
expect_hosts_clean "nothing left on any host after the crash"

# Ctrl-C on the head: every agent stops its workers, nothing is left.
spec sleepy "[bash, -c, 'echo started; sleep 60']"
start_sleepy
start=$SECONDS
pkill -INT -f "^$DDPJOB launch $T/sleepy.yaml"
if wait "$LAUNCHER"; then RC=0; else RC=$?; fi
expect_eq "$RC" 143 "Ctrl-C on the head stops the job: exit 143 (the agents' SIGTERM)"
expect_contains "$(cat "$T/sleepy.err")" "SIGINT: stopping the job on every host" "and says so"
if [ $((SECONDS - start)) -lt 15 ]; then pass "promptly ($((SECONDS - start)) s)"; else fail "it took $((SECONDS - start)) s"; fi
expect_hosts_clean "nothing left on any host after Ctrl-C"

# The spec's env: values travel to each host inside the node script, on the SSH channel's stdin
# (issue 66): in no process's argv on any host or the head, what any other user's ps shows.
cat >"$T/secret.yaml" <<YAML
name: secret
nodes: 3
procs_per_node: 1
env: {GLOO_SOCKET_IFNAME: eth0, HF_TOKEN: hf-launch-secret-9931}
command: [bash, -c, 'echo started \${#HF_TOKEN}; sleep 60']
YAML
sshd_login timeout -s KILL 120 "$DDPJOB" launch "$T/secret.yaml" --hosts n1,n2,n3 --bindir "$bindir" \
    >"$T/secret.out" 2>"$T/secret.err" &
LAUNCHER=$!
for _ in $(seq 200); do [ "$(grep -c started "$T/secret.out")" = 3 ] && break; sleep 0.1; done
expect_eq "$(grep -c 'started 21' "$T/secret.out")" 3 "a job whose env: holds a token runs on 3 hosts, each worker with it" \
    "$(cat "$T/secret.err")"
expect_eq "$(grep -l 'hf-launch-secre[t]' /proc/[0-9]*/cmdline 2>/dev/null)" "" \
    "the token is in no process's argv, on any host or the head"
pkill -INT -f "^$DDPJOB launch $T/secret.yaml"
wait "$LAUNCHER"
expect_hosts_clean "nothing left on any host after it"

# n2's connection dropped mid-job: its sshd session is killed.
start_sleepy
start=$SECONDS
for pid in $(ip netns pids "$(sshd_ns n2)"); do
    [ "$pid" = "$(cat "$SSHD_DIR/run/sshd-n2.pid")" ] || [ "$(cat "/proc/$pid/comm" 2>/dev/null)" != sshd ] || kill -9 "$pid"
done
if wait "$LAUNCHER"; then RC=0; else RC=$?; fi
if [ "$RC" -ne 0 ]; then pass "a dropped connection fails the job (exit $RC)"; else fail "a dropped connection fails the job" "exit 0"; fi
expect_contains "$(cat "$T/sleepy.err")" "ddpjob launch: node 1 (n2): n2 ($SSHD_USER@n2:22): connection lost" "naming the host"
if [ $((SECONDS - start)) -lt 20 ]; then pass "promptly ($((SECONDS - start)) s)"; else fail "it took $((SECONDS - start)) s"; fi
expect_hosts_clean "nothing left on any host after the dropped connection"

# n2 vanishes: its link is cut, nothing tells the head (no FIN), the agents find it lost.
start_sleepy
start=$SECONDS
ip -n "$(sshd_ns login)" link set v2 down
if wait "$LAUNCHER"; then RC=0; else RC=$?; fi
ip -n "$(sshd_ns login)" link set v2 up
if [ "$RC" -ne 0 ]; then pass "a host cut off fails the job (exit $RC)"; else fail "a host cut off fails the job" "exit 0"; fi
expect_contains "$(cat "$T/sleepy.err")" "ddpjob launch: node 1 (n2): n2 ($SSHD_USER@n2:22): connection lost" "naming the host"
took=$((SECONDS - start))
if [ "$took" -lt 40 ]; then pass "within the keepalive bound (${took} s), not TCP's 15 minutes"; else fail "it took ${took} s"; fi
expect_hosts_clean "nothing left on any host after the cut"

# A spare: n3 stands by (--spares 1), n2's agent is killed mid-job, n3 takes node 1's place, the
# job ends 0 (node 0's status), and the lost host is named.
spec spare "[bash, -c, 'echo started \$TORCHELASTIC_RESTART_COUNT; sleep 6']"
sshd_login timeout -s KILL 120 "$DDPJOB" launch "$T/spare.yaml" --hosts n1,n2,n3 --spares 1 \
    --bindir "$bindir" --agent-option=--max-restarts --agent-option=1 >"$T/spare.out" 2>"$T/spare.err" &
LAUNCHER=$!
for _ in $(seq 200); do [ "$(grep -c "started 0" "$T/spare.out")" = 2 ] && break; sleep 0.1; done
for pid in $(ip netns pids "$(sshd_ns n2)"); do
    [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = ddpjob-agent ] && kill -9 "$pid"
done
if wait "$LAUNCHER"; then RC=0; else RC=$?; fi
expect_eq "$RC" 0 "--spares 1: n2's agent killed, the job ends 0 on the spare" "$(cat "$T/spare.err")"
expect_contains "$(cat "$T/spare.err")" "n1: ddpjob-agent: node rank 1: n3 (slot 2) takes the place of n2 (slot 1)" \
    "node 0 names the lost host and the spare that took its place"
expect_contains "$(cat "$T/spare.out")" "n3: [rank 1] started 1" "the spare ran rank 1 in the next attempt"
expect_hosts_clean "nothing left on any host after the spare's job"
# The same with n2's link cut: its connection is lost to the head too, which (with spares) stops
# nothing; the agents replace it.
sshd_login timeout -s KILL 120 "$DDPJOB" launch "$T/spare.yaml" --hosts n1,n2,n3 --spares 1 \
    --bindir "$bindir" --agent-option=--max-restarts --agent-option=1 >"$T/spare.out" 2>"$T/spare.err" &
LAUNCHER=$!
for _ in $(seq 200); do [ "$(grep -c "started 0" "$T/spare.out")" = 2 ] && break; sleep 0.1; done
ip -n "$(sshd_ns login)" link set v2 down
if wait "$LAUNCHER"; then RC=0; else RC=$?; fi
ip -n "$(sshd_ns login)" link set v2 up
expect_eq "$RC" 0 "--spares 1: n2's link cut, the job ends 0 on the spare" "$(cat "$T/spare.err")"
expect_contains "$(cat "$T/spare.err")" "n1: ddpjob-agent: node rank 1: n3 (slot 2) takes the place of n2 (slot 1)" \
    "node 0 names the host cut off and the spare that took its place"
expect_contains "$(cat "$T/spare.err")" "ddpjob launch: node 1 (n2): n2 ($SSHD_USER@n2:22): connection lost" \
    "the head names the host it lost"
expect_hosts_clean "nothing left on any host after the spare's job with a cut link"

# ddp-train with a spare, through launch: 2 hosts x 2 workers and n3 standing by; n2 lost mid-
# training in each way the fault matrix has. Training resumes on n3 from its checkpoint, ends 0,
# and its final checkpoint is an uninterrupted run's (the same layout: REFERENCE_HOSTS).
cp "$TRAIN" "$bindir/"
CHAIN_EPOCHS=6
REFERENCE_HOSTS=("$(sshd_ns n1)" "$(sshd_ns n2)") REFERENCE_MASTER=$SSHD_NET.11
for loss in "agent killed" "link cut" "node frozen"; do
    ckpt=$bindir/ckpt-${loss// /-}
    mkdir -p "$ckpt"
    chmod 777 "$ckpt"
    cat >"$T/train-spare.yaml" <<YAML
name: train-spare
nodes: 2
spares: 1
procs_per_node: 2
max_restarts: 2
env: {OPENBLAS_CORETYPE: Haswell, OMP_NUM_THREADS: "1"}
command: [$bindir/ddp-train, train, --synthetic, --synthetic-size, "4096,512", --epochs, "$CHAIN_EPOCHS", --batch-size, "32", --seed, "7", --min-step-ms, "40", --checkpoint-dir, $ckpt]
YAML
    sshd_login timeout -s KILL 120 "$DDPJOB" launch "$T/train-spare.yaml" --hosts n1,n2,n3 --bindir "$bindir" \
        >"$T/train-spare.out" 2>"$T/train-spare.err" &
    LAUNCHER=$!
    for _ in $(seq 600); do [ -s "$ckpt/checkpoint.ddpt" ] && break; sleep 0.1; done
    frozen=
    case $loss in
    "agent killed")
        for pid in $(ip netns pids "$(sshd_ns n2)"); do
            [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = ddpjob-agent ] && kill -9 "$pid"
        done
        ;;
    "link cut") ip -n "$(sshd_ns login)" link set v2 down ;;
    "node frozen")
        frozen=$(ip netns pids "$(sshd_ns n2)")
        # shellcheck disable=SC2086
        kill -STOP $frozen
        ;;
    esac
    if wait "$LAUNCHER"; then RC=0; else RC=$?; fi
    ip -n "$(sshd_ns login)" link set v2 up
    # shellcheck disable=SC2086
    [ -z "$frozen" ] || kill -CONT $frozen
    # Let go, n2's agent finds the store gone and stops its workers (its --grace at most).
    for _ in $(seq 300); do [ -z "$(host_leftovers)" ] && break; sleep 0.1; done
    expect_eq "$RC" 0 "launch, ddp-train, $loss: the job ends 0 on the spare" "$(tail -n 5 "$T/train-spare.err")"
    expect_contains "$(cat "$T/train-spare.err")" "n1: ddpjob-agent: node rank 1: n3 (slot 2) takes the place of n2 (slot 1)" \
        "launch, ddp-train, $loss: n3 took node 1's place"
    expect_contains "$(cat "$T/train-spare.out")" "resuming from $ckpt/checkpoint.ddpt" "launch, ddp-train, $loss: training resumed from its checkpoint"
    expect_same_as_uninterrupted "$ckpt/checkpoint.ddpt" "launch, ddp-train, $loss: the final checkpoint equals an uninterrupted run's"
    expect_hosts_clean "launch, ddp-train, $loss: nothing left on any host"
done

# An elastic world from the spec (nodes: 2:3) on three hosts: n3's agent killed, the world goes on
# with two (a real PyTorch gloo job sees it), and the job ends 0.
cp "$SRCDIR/tests/agent/py/elastic_world.py" "$bindir/"
mkdir -p "$bindir/world"
chmod 777 "$bindir/world"
cat >"$T/elastic.yaml" <<YAML
name: elastic
nodes: 2:3
procs_per_node: 1
max_restarts: 2
env: {GLOO_SOCKET_IFNAME: eth0, WORLD_LOG: $bindir/world, STEPS: "25"}
command: [/usr/bin/python3, $bindir/elastic_world.py]
YAML
sshd_login timeout -s KILL 120 "$DDPJOB" launch "$T/elastic.yaml" --hosts n1,n2,n3 --bindir "$bindir" \
    >"$T/elastic.out" 2>"$T/elastic.err" &
LAUNCHER=$!
for _ in $(seq 300); do [ -s "$bindir/world/attempt0.rank2" ] && break; sleep 0.1; done
for pid in $(ip netns pids "$(sshd_ns n3)"); do
    [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = ddpjob-agent ] && kill -9 "$pid"
done
if wait "$LAUNCHER"; then RC=0; else RC=$?; fi
expect_eq "$RC" 0 "nodes: 2:3 in the spec: n3 lost, the job ends 0 with two" "$(cat "$T/elastic.err")"
expect_eq "$(cat "$bindir/world/attempt0.rank0" "$bindir/world/attempt1.rank0" 2>/dev/null)" \
    "rank 0 world 3 env 0/3 group 0/3 sum 3
rank 0 world 2 env 0/2 group 0/2 sum 1" "the world was 3 nodes, then 2 after the loss"
expect_contains "$(cat "$T/elastic.err")" "the world changes from 3 to 2 node(s) in attempt 1" "node 0 says so"
expect_hosts_clean "nothing left on any host after the elastic job"

# The preflight: n2 made to differ by its setup (a fake nvidia-smi with two GPUs on its PATH, and
# NCCL_SOCKET_IFNAME naming an interface it lacks). doctor reports it and starts nothing; a job
# whose spec says `preflight: strict` fails before any worker starts.
mkdir -p "$bindir/fakegpu"
cat >"$bindir/fakegpu/nvidia-smi" <<'SMI'
#!/bin/sh
printf 'NVIDIA H100 80GB HBM3, 81559, 550.54.15\n%.0s' 1 2
SMI
chmod 755 "$bindir/fakegpu" "$bindir/fakegpu/nvidia-smi"
differ_setup="setup: 'if [ \"\$(hostname)\" = n2 ]; then export PATH=$bindir/fakegpu:\$PATH NCCL_SOCKET_IFNAME=ib0; fi'"
spec differ "[bash, -c, 'echo started']"
echo "$differ_setup" >>"$T/differ.yaml"
launch "$T/differ.yaml" --hosts n1,n2,n3 --bindir "$bindir" --nproc-per-node 4
launch_out=$OUT launch_err=$ERR
run sshd_login timeout -s KILL 120 "$DDPJOB" doctor "$T/differ.yaml" --hosts n1,n2,n3 --bindir "$bindir"
expect_eq "$RC" 0 "doctor over SSH: exit 0"
expect_contains "$ERR" "n1: ddpjob-agent: preflight: 3 node(s); 3 fact(s) that must agree differ" "node 0 counts what differs"
expect_contains "$ERR" "n1:   gpus                 none on nodes 0, 2 (n1, n3); 2 x NVIDIA H100 80GB HBM3 (81559 MiB) on node 1 (n2)" \
    "the table shows the GPUs, naming the nodes that have each"
expect_contains "$ERR" "n1:   nvidia driver        none on nodes 0, 2 (n1, n3); 550.54.15 on node 1 (n2)" "the driver"
expect_contains "$ERR" "n1:   \$NCCL_SOCKET_IFNAME  (unset) on nodes 0, 2 (n1, n3); ib0 on node 1 (n2)" "and the NCCL environment"
expect_contains "$ERR" "n1:   kernel               $(uname -r) on every node" "what agrees is said once"
expect_contains "$ERR" "advice: NCCL_SOCKET_IFNAME=ib0 names no interface of node 1 (n2), which has eth0 10.80.0.12/24" \
    "advice: NCCL_SOCKET_IFNAME names an interface n2 lacks"
expect_contains "$ERR" "advice: GPUs, no InfiniBand device and NCCL_IB_DISABLE unset on node 1 (n2)" "advice: no InfiniBand"
expect_lacks "$OUT" "started" "doctor starts no worker"
expect_hosts_clean "nothing left on any host after doctor"
expect_contains "$launch_err" "n1: ddpjob-agent: preflight: the 3 nodes differ in 3 fact(s):" "a job's preflight (report) prints what differs"
expect_contains "$launch_err" "advice: fewer GPUs than workers on node 1 (n2)" "and advice: 2 GPUs for 4 workers"
expect_eq "$(grep -c started <<<"$launch_out")" 12 "and runs the job anyway"
echo 'preflight: strict' >>"$T/differ.yaml"
launch "$T/differ.yaml" --hosts n1,n2,n3 --bindir "$bindir"
expect_eq "$RC" 1 "preflight: strict with differing nodes: exit 1"
expect_contains "$ERR" "job failed (exit 1): preflight: strict, and the nodes differ in 3 fact(s) (node 0's output lists them): no worker was started" \
    "saying why"
expect_lacks "$OUT" "started" "no worker starts on any host"
expect_hosts_clean "nothing left on any host after the refusal"
run sshd_login timeout -s KILL 120 "$DDPJOB" doctor --hosts n1,n3 --bindir "$bindir"
expect_eq "$RC" 0 "doctor with no spec on two alike hosts: exit 0"
expect_contains "$ERR" "n1: ddpjob-agent: preflight: 2 node(s); 0 fact(s) that must agree differ" "nothing differs"
expect_contains "$ERR" "n1:   torch          $(/usr/bin/python3 -c 'import importlib.metadata as m; print(m.version("torch"))') on every node" \
    "without a spec: the hosts' python3 is asked for its version and torch's"

# setup-nodes from a head whose key no host knows yet (its own HOME): each host named as refusing
# it; --install-key logs in once with a key the hosts take and installs the head's key in the
# user's ~/.ssh/authorized_keys (one home shared by the hosts, as on a cluster); then every host
# takes the key login.
head=$T/head
mkdir -p "$head/.ssh"
ssh-keygen -q -t ed25519 -N '' -f "$head/.ssh/id_ed25519"
cp "$SSHD_DIR/client/.ssh/known_hosts" "$SSHD_DIR/client/.ssh/config" "$head/.ssh/"
run sshd_login env HOME="$head" "$DDPJOB" setup-nodes --hosts n1,n2,n3
expect_eq "$RC" 1 "setup-nodes: hosts that refuse the head's key: exit 1"
expect_contains "$OUT" "n2: no key login: n2 ($SSHD_USER@n2:22): login refused" "naming each host"
expect_contains "$OUT" "setup-nodes: 0 of 3 host(s) take a key login from this head" "and counting"
run sshd_login env HOME="$head" "$DDPJOB" setup-nodes --hosts n1,n2,n3 --install-key \
    --login-identity "$SSHD_DIR/client/.ssh/id_ed25519"
expect_eq "$RC" 0 "setup-nodes --install-key: exit 0"
expect_contains "$OUT" "n1: added $head/.ssh/id_ed25519.pub in ~/.ssh/authorized_keys
n1: key login works now" "the head's key is installed on n1 and the key login then works"
expect_contains "$OUT" "n2: key login works ($SSHD_USER@n2:22); nothing changed" "n2, sharing the home, needs nothing more"
expect_eq "$(grep -c ddpjob-test "$SSHD_DIR/home/$SSHD_USER/.ssh/authorized_keys"; grep -cF "$(cut -d' ' -f2 "$head/.ssh/id_ed25519.pub")" "$SSHD_DIR/home/$SSHD_USER/.ssh/authorized_keys")" "0
1" "the head's key was added once"
run sshd_login env HOME="$head" "$DDPJOB" setup-nodes --hosts n1,n2,n3
expect_eq "$RC" 0 "setup-nodes again: every host takes the key login"
grep -v '^n3,' "$head/.ssh/known_hosts" >"$T/kh-n3"
run sshd_login env HOME="$head" "$DDPJOB" setup-nodes --hosts n3 --install-key --known-hosts "$T/kh-n3" \
    --login-identity "$SSHD_DIR/client/.ssh/id_ed25519"
expect_contains "$OUT" "n3: no key login: n3 ($SSHD_USER@n3:22): unknown host key SHA256:" \
    "an unknown host key is refused, --install-key or not"
expect_lacks "$OUT" "added" "and nothing is installed there"
rm -rf "$SSHD_DIR/home/$SSHD_USER/.ssh"

# A fresh host that takes a password, as a rented one does: n3's sshd reloaded with password
# logins on and the user given a password. A wrong one is refused and nothing installed; the
# right one (DDPJOB_SSH_PASSWORD) installs the key once, after which no password is needed.
password=$(head -c 12 /dev/urandom | base64)
echo "$SSHD_USER:$password" | chpasswd
sed -i 's/^AuthenticationMethods publickey$/AuthenticationMethods publickey password/
        s/^PasswordAuthentication no$/PasswordAuthentication yes/' "$SSHD_DIR/sshd-n3.conf"
kill -HUP "$(cat "$SSHD_DIR/run/sshd-n3.pid")"
for _ in $(seq 50); do sshd_login bash -c 'exec 3<>/dev/tcp/n3/22' 2>/dev/null && break; sleep 0.1; done
run sshd_login env HOME="$head" DDPJOB_SSH_PASSWORD=wrong "$DDPJOB" setup-nodes --hosts n3 --install-key
expect_eq "$RC" 1 "setup-nodes --install-key with a wrong password: exit 1"
expect_contains "$OUT" "n3 ($SSHD_USER@n3:22): password login refused" "naming the host"
expect_eq "$(test -e "$SSHD_DIR/home/$SSHD_USER/.ssh/authorized_keys" && echo installed)" "" "and nothing is installed"
run sshd_login env HOME="$head" "$DDPJOB" setup-nodes --hosts n3 --install-key </dev/null
expect_eq "$RC" 1 "without a password and no terminal to ask on: exit 1"
expect_contains "$OUT" "a password is needed to install the key" "saying what is needed"
run sshd_login env HOME="$head" DDPJOB_SSH_PASSWORD="$password" "$DDPJOB" setup-nodes --hosts n3 --install-key
expect_eq "$RC" 0 "setup-nodes --install-key with the host's password: exit 0"
expect_contains "$OUT" "n3: added $head/.ssh/id_ed25519.pub in ~/.ssh/authorized_keys
n3: key login works now" "the head's key is installed and the key login then works"
run sshd_login env HOME="$head" "$DDPJOB" setup-nodes --hosts n3
expect_eq "$RC" 0 "afterwards no password is needed"
usermod -p '*' "$SSHD_USER"
rm -rf "$SSHD_DIR/home/$SSHD_USER/.ssh"

# Host keys: unknown, and changed.
grep -v '^n2,' "$SSHD_DIR/client/.ssh/known_hosts" >"$T/kh-missing"
launch "$T/ddp.yaml" --hosts n1,n2,n3 --bindir "$bindir" --known-hosts "$T/kh-missing"
expect_eq "$RC" 1 "a host whose key is unknown: exit 1"
expect_contains "$ERR" "node 1: n2 ($SSHD_USER@n2:22): unknown host key SHA256:" "naming the host and the key's fingerprint"
expect_contains "$ERR" "nothing was started" "before anything started"
ssh-keygen -q -t ed25519 -N '' -f "$T/other-key"
sed "s|^n2,\([^ ]*\) .*|n2,\1 $(cut -d' ' -f1-2 "$T/other-key.pub")|" "$SSHD_DIR/client/.ssh/known_hosts" >"$T/kh-changed"
launch "$T/ddp.yaml" --hosts n1,n2,n3 --bindir "$bindir" --known-hosts "$T/kh-changed"
expect_eq "$RC" 1 "a host whose key changed: exit 1"
expect_contains "$ERR" "node 1: n2 ($SSHD_USER@n2:22): the host key CHANGED" "naming the host"
launch "$T/ddp.yaml" --hosts n1,n2,n3 --bindir "$bindir" --known-hosts "$T/kh-changed" --accept-new-host-keys
expect_contains "$ERR" "the host key CHANGED" "--accept-new-host-keys never accepts a changed key"

# A key that differs under the HostName, while the alias is unknown; and a host known only with
# a key of another type: both are changed keys, --accept-new-host-keys or not (the password
# setup-nodes would send goes to no such host).
printf 'Host alias2\n    HostName n2\nHost *\n    User %s\n' "$SSHD_USER" >"$T/ssh-config-alias"
cp "$T/kh-changed" "$T/kh-alias"
launch "$T/ddp.yaml" --hosts n1,alias2,n3 --bindir "$bindir" --known-hosts "$T/kh-alias" \
    --ssh-config "$T/ssh-config-alias" --accept-new-host-keys
expect_contains "$ERR" "node 1: alias2 ($SSHD_USER@n2:22): the host key CHANGED" \
    "a key that differs under the HostName is a changed key, though the alias is not in known_hosts"
expect_eq "$(grep -c '^alias2 ' "$T/kh-alias")" 0 "and nothing is added under the alias"
ssh-keygen -q -t rsa -b 2048 -N '' -f "$T/rsa-key"
sed "s|^n2,\([^ ]*\) .*|n2,\1 $(cut -d' ' -f1-2 "$T/rsa-key.pub")|" "$SSHD_DIR/client/.ssh/known_hosts" >"$T/kh-rsa"
launch "$T/ddp.yaml" --hosts n1,n2,n3 --bindir "$bindir" --known-hosts "$T/kh-rsa" --accept-new-host-keys
expect_contains "$ERR" "node 1: n2 ($SSHD_USER@n2:22): the host key CHANGED (now SHA256:" \
    "a host known with an RSA key that offers an ed25519 one has changed"
expect_contains "$ERR" "of a type the host was not known with" "saying so"
expect_eq "$(wc -l <"$T/kh-rsa")" 3 "and known_hosts keeps its 3 lines"

# A 2-letter alias known on a line of its own (which libssh2 1.10 cannot read): its key is read
# all the same, so the right key lets the launch on, and a changed one stops it.
printf 'Host a2\n    HostName n2\nHost *\n    User %s\n' "$SSHD_USER" >"$T/ssh-config-short"
{ grep -v '^n2,' "$SSHD_DIR/client/.ssh/known_hosts"; echo "a2 $(cut -d' ' -f1-2 "$SSHD_DIR/keys/host-n2.pub")"; } >"$T/kh-short"
launch "$T/ddp.yaml" --hosts n1,a2,n3 --bindir "$bindir" --known-hosts "$T/kh-short" --ssh-config "$T/ssh-config-short"
expect_eq "$RC" 0 "a 2-letter alias on a known_hosts line of its own is known ($(tail -n 2 <<<"$ERR" | tr '\n' ' '))"
{ grep -v '^n2,' "$SSHD_DIR/client/.ssh/known_hosts"; echo "a2 $(cut -d' ' -f1-2 "$T/other-key.pub")"; } >"$T/kh-short"
launch "$T/ddp.yaml" --hosts n1,a2,n3 --bindir "$bindir" --known-hosts "$T/kh-short" --ssh-config "$T/ssh-config-short" \
    --accept-new-host-keys
expect_contains "$ERR" "node 1: a2 ($SSHD_USER@n2:22): the host key CHANGED" "and a changed key under it is refused"

# 16 aliases (of the 3 hosts) launched at once, each new, against a known_hosts of 20,000 lines:
# each thread appends its own line under the lock; none is lost and the file stays whole.
{
    for i in $(seq 16); do printf 'Host host%d\n    HostName n%d\n' "$i" $(((i - 1) % 3 + 1)); done
    printf 'Host *\n    User %s\n' "$SSHD_USER"
} >"$T/ssh-config-16"
for i in $(seq 20000); do echo "other$i.example ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOl4WqFf9XEcUQfjTZw0nAtG4wZb2ibCBkBC4N37yK$((i % 10))b"; done >"$T/kh-16"
cp "$T/kh-16" "$T/kh-16.before"
cat >"$T/sixteen.yaml" <<YAML
name: sixteen
nodes: 16
procs_per_node: 1
command: [/bin/true]
YAML
launch "$T/sixteen.yaml" --hosts "$(seq -s, -f 'host%g' 16)" --bindir "$bindir" --known-hosts "$T/kh-16" \
    --ssh-config "$T/ssh-config-16" --accept-new-host-keys
expect_eq "$RC" 0 "a job on 16 new aliases with --accept-new-host-keys runs ($(tail -n 3 <<<"$ERR" | tr '\n' ' '))"
expect_eq "$(head -n 20000 "$T/kh-16" | cmp - "$T/kh-16.before" && echo same)" same "known_hosts keeps its 20,000 lines as they were"
expect_eq "$(tail -n +20001 "$T/kh-16" | cut -d' ' -f1 | sort -V | tr '\n' ' ')" "$(seq -s' ' -f 'host%g' 16) " \
    "and gains one line for each of the 16 aliases"
launch "$T/sixteen.yaml" --hosts "$(seq -s, -f 'host%g' 16)" --bindir "$bindir" --known-hosts "$T/kh-16" \
    --ssh-config "$T/ssh-config-16"
expect_eq "$RC" 0 "and the next launch knows all 16 without --accept-new-host-keys ($(tail -n 3 <<<"$ERR" | tr '\n' ' '))"
expect_hosts_clean "nothing left on any host"

# Another process that holds known_hosts locked holds the launch up to its connect timeout, no
# longer.
bash -c 'exec 9>>"$1" && flock -x 9 && exec sleep 30' locker "$T/kh-16" &
locker=$!
sleep 0.5
launch "$T/sixteen.yaml" --hosts "$(seq -s, -f 'host%g' 16)" --bindir "$bindir" --known-hosts "$T/kh-16" \
    --ssh-config "$T/ssh-config-16" --connect-timeout 3
kill "$locker" 2>/dev/null
wait "$locker" 2>/dev/null
expect_contains "$ERR" "$T/kh-16: locked by another process until the deadline" \
    "a known_hosts another process keeps locked fails the launch at its connect timeout (${TOOK} s)"

# A user whose login shell is /bin/sh (dash) and an env: value written to break a bash quoting
# that dash would read: the value arrives as it is and nothing of it runs.
usermod -s /bin/sh "$SSHD_USER"
cat >"$T/quoting.yaml" <<YAML
name: quoting
nodes: 3
procs_per_node: 1
env: {HOSTILE: "it's & touch /tmp/ddpjob-dash-pwned #"}
command: [bash, -c, 'echo "hostile=\$HOSTILE"']
YAML
launch "$T/quoting.yaml" --hosts n1,n2,n3 --bindir "$bindir"
usermod -s /bin/bash "$SSHD_USER"
expect_eq "$RC" 0 "a job whose hosts' login shell is dash runs"
expect_contains "$OUT" "n3: [rank 2] hostile=it's & touch /tmp/ddpjob-dash-pwned #" "the env: value arrives unchanged"
expect_no_file /tmp/ddpjob-dash-pwned "and nothing of it ran (the hosts share this /tmp)"

# An address nobody answers at, within the deadline.
launch "$T/ddp.yaml" --hosts n1,10.80.0.99 --bindir "$bindir" --connect-timeout 3
expect_eq "$RC" 1 "a host that does not answer: exit 1"
expect_contains "$ERR" "node 1: 10.80.0.99: cannot connect to 10.80.0.99:22" "naming it"
if [ "$TOOK" -lt 10 ]; then pass "within the connect timeout (${TOOK} s of 3)"; else fail "took ${TOOK} s"; fi

# Hosts without the agent.
launch "$T/ddp.yaml" --hosts n1,n2,n3 --bindir /nonexistent
expect_eq "$RC" 127 "no ddpjob-agent on the hosts: exit 127"
expect_contains "$ERR" "its agent could not start (exit 127" "said as such"
if [ "$TOOK" -lt 20 ]; then pass "at once (${TOOK} s)"; else fail "took ${TOOK} s"; fi
expect_hosts_clean "nothing left on any host"

# A job in a Charliecloud image (the real ch-run) on the three hosts: every rank inside, a
# failure named as without a container, nothing left. The image is the hosts' user's folder
# (ch-run makes in it the mount points it lacks).
image=$SSHD_DIR/home/$SSHD_USER/image
image_root "$image"
chown -R "$SSHD_USER:" "$image"
cat >"$T/inside.yaml" <<YAML
name: inside
nodes: 3
procs_per_node: 1
workdir: $SSHD_DIR/home/$SSHD_USER
container: {runtime: charliecloud, image: $image}
command: 'cat /etc/ddpjob-image; echo "host=\$(hostname) RANK=\$RANK WORLD_SIZE=\$WORLD_SIZE"; [ "\$RANK" != "\${FAIL_RANK:-none}" ] || exit 3; [ -z "\${FAIL_RANK:-}" ] || exec sleep 60'
YAML
launch "$T/inside.yaml" --hosts n1,n2,n3 --bindir "$bindir"
expect_eq "$RC" 0 "a job in a Charliecloud image on 3 hosts exits 0"
expect_eq "$(grep -c "inside the test's image" <<<"$OUT")" 3 "every rank ran inside the image"
expect_contains "$OUT" "n3: [rank 2] host=n3 RANK=2 WORLD_SIZE=3" "with its host and ranks"
sed -i 's/^env: .*//; s/^nodes: 3/nodes: 3\nenv: {FAIL_RANK: "1"}/' "$T/inside.yaml"
launch "$T/inside.yaml" --hosts n1,n2,n3 --bindir "$bindir"
expect_eq "$RC" 3 "rank 1 exiting 3 in the image: launch exits 3"
expect_contains "$ERR" "job failed (exit 3): rank 1 (node 1, host n2, local rank 0) exited with code 3" \
    "naming the rank, node and host as without a container"
expect_hosts_clean "nothing of the container is left on any host"
