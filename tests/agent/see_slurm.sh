#!/bin/bash
# Seeing a job on a real Slurm. Why a job is pending (2 nodes in network namespaces, the backfill scheduler
# estimating starts): a job behind another that holds both nodes (Resources, the running job
# counted, Slurm's estimated start), the one behind it (Priority), a held job (JobHeldUser, how to
# release it) and a walltime over a partition's limit (PartitionTimeLimit); `status` says each in
# words, and `--json` carries it. Then a real failed job's report (2 nodes of 2 PyTorch ranks,
# rank 1 exits 3 after 40 steps), opened in a real headless Chromium. Last, an allocation held
# by `ddpjob dev` and runs in it (dev_cases.sh).
. "$SRCDIR/tests/lib/agents.sh"
. "$SRCDIR/tests/cluster/slurm.sh"
. "$SRCDIR/tests/lib/browser.sh"
at_exit 'cluster_down'
cd "$T" || exit 1

if ! cluster_up 2 >"$T/cluster.log" 2>&1; then
    fail "a 2-node Slurm cluster starts" "$(tail -n 20 "$T/cluster.log")"
    exit 1
fi
# A partition whose limit is 5 minutes, beside the default one.
sed -i 's/^PartitionName=debug .*/&\nPartitionName=short Nodes=n1,n2 MaxTime=5 State=UP/' "$CLUSTER/etc/slurm.conf"
if ! cluster_in head scontrol reconfigure >"$T/reconfigure.log" 2>&1; then
    fail "Slurm takes a second partition" "$(cat "$T/reconfigure.log")"
    exit 1
fi
pass "a 2-node Slurm cluster runs in network namespaces, with partitions debug and short (5 min)"

dj() { # ddpjob ARGS... on the head node, from $T: RC, OUT, ERR
    run cluster_ddpjob "$T" "$@"
}

squeue_is() { # ID ("": all jobs) FORMAT VALUE
    [ "$(cluster_in head squeue -h ${1:+-j "$1"} -o "$2" 2>/dev/null)" = "$3" ]
}

spec() { # NAME WALLTIME [QUEUE]
    cat >"$1.yaml" <<SPEC
name: $1
scheduler: slurm
nodes: 2
cpus_per_node: 2
walltime: "$2"
${3:+queue: $3}
command: [sleep, "300"]
SPEC
}
spec holder 00:10:00
spec behind 00:10:00
spec after 00:10:00
spec toolong 00:30:00 short

dj submit holder.yaml
HOLDER=$(tail -n 1 <<<"$OUT")
expect_within 60 "the first job runs on both nodes" \
    squeue_is "$HOLDER" %T RUNNING
dj submit behind.yaml
dj submit after.yaml
AFTER=$(tail -n 1 <<<"$OUT")
dj submit toolong.yaml

# The backfill scheduler estimates a start within its interval (1 s here).
run_until 60 "estimates the start" dj status behind
expect_contains "$OUT" "pending: waiting for 2 free nodes in partition debug (1 running job holds 2 nodes); Slurm estimates the start at " \
    "behind the job that holds both nodes: Resources, in words, with what holds them and Slurm's estimate"
dj status after
expect_contains "$OUT" "pending: waiting behind jobs of higher priority in partition debug (1 running job holds 2 nodes)" \
    "the next one: Priority"
dj status toolong
expect_contains "$OUT" "pending: its walltime is over partition short's limit (\`sinfo -p short -o %l\` shows it): it will not start unless the limit is raised; \`ddpjob cancel toolong\`" \
    "a walltime over the partition's limit: PartitionTimeLimit, and what to do"

cluster_in head scontrol uhold "$AFTER" >/dev/null 2>&1
expect_within 30 "Slurm holds the third job" \
    squeue_is "$AFTER" %r JobHeldUser
dj status after
expect_contains "$OUT" "pending: held by you: \`scontrol release $AFTER\` lets it start" "a held job: how to release it"
dj status after --json
expect_contains "$OUT" "\"pending\": \"held by you: \`scontrol release $AFTER\` lets it start\"" "--json carries the explanation"
dj status holder
if [[ $OUT == *"pending:"* ]]; then fail "a running job has no pending line" "$OUT"; else pass "a running job has no pending line"; fi

dj cancel holder
dj cancel behind
dj cancel after
dj cancel toolong
expect_within 60 "cancelled, all four leave the queue" \
    squeue_is "" %i ""

# The report of a real failed job: 2 nodes of 2 PyTorch ranks reporting their steps; rank 1
# exits 3 at step 40. Opened in a real headless Chromium.
cat >failing.yaml <<SPEC
name: failing
scheduler: slurm
nodes: 2
procs_per_node: 2
cpus_per_node: 2
walltime: "00:05:00"
env: {FAIL_RANK: "1", FAIL_STEP: "40"}
command: [/usr/bin/python3, "$SRCDIR/tests/agent/py/fail_after_steps.py"]
SPEC
dj submit failing.yaml
dj wait failing --timeout 180
expect_eq "$RC" 3 "the job whose rank 1 exits 3 ends with 3"
record=$(ls -d "$T"/.ddpjob/jobs/failing.*)
samples=$(grep -c '"steps"' "$record/link-0/history.jsonl" 2>/dev/null)
if [ "${samples:-0}" -ge 3 ]; then pass "node 0 kept the link's history: $samples samples of every rank's step"; else
    fail "node 0 kept the link's history" "$(cat "$record/link-0/history.jsonl" 2>&1)"; fi
expect_contains "$(cat "$record/link-0/history.jsonl")" '"event": "attempt_end", "attempt": 0, "rank": 1' \
    "and the attempt's end with the failed rank"
dj report failing -o "$T/failing.html"
expect_eq "$RC" 0 "report of the failed job exits 0"
dom=$(browser_dom "$T/failing.html")
expect_contains "$dom" '<li class="failed-rank" data-rank="1">rank 1 (node 0, host n1): exited with code 3' \
    "Chromium shows the failed rank, named, with its cause"
expect_eq "$(grep -c '<path class="rank[ a-z]*" data-rank=' <<<"$dom")" 4 "a line per rank, 4 of them"
expect_contains "$dom" '<path class="rank marked" data-rank="1"' "the failed rank's line is marked"
expect_contains "$dom" 'data-link="1"' "the chain's link"
expect_contains "$dom" '<tr class="attempt"><td>1</td><td>0</td>' "the attempt, in the table"
expect_contains "$dom" 'aria-label="loss"' "rank 0's metrics"
expect_eq "$(browser_errors)" "" "Chromium reports no error"
expect_screenshot "$T/failing.html" "$T/failing.png" "the screenshot is not blank"
# README's picture of a report is this one: SAVE_REPORT_PNG=docs/report.png keeps it.
[ -z "${SAVE_REPORT_PNG:-}" ] || cp "$T/failing.png" "$SAVE_REPORT_PNG"

# status --watch on a terminal (a pseudo-terminal from util-linux's script) against a running
# job of 60 steps: the ETA appears, the bars move, and it exits when the job ends, with its status.
# script runs its command with $SHELL, /bin/sh where that is unset (as under CI): bash is named.
sed -e 's/^name: failing/name: steady/' -e 's/^env: .*/env: {STEPS: "60"}/' failing.yaml >steady.yaml
dj submit steady.yaml
STEADY=$(tail -n 1 <<<"$OUT")
expect_within 60 "the 60-step job runs" squeue_is "$STEADY" %T RUNNING
XDG_STATE_HOME="$T/state" SHELL=/bin/bash SRC=$SRCDIR DJ=$DDPJOB timeout 180 script -q -e -f -c \
    '. "$SRC/tests/cluster/slurm.sh"; cluster_in head "$DJ" status steady --watch' "$T/watch.tty" >/dev/null 2>&1
expect_eq "$?" 0 "--watch exits when the job ends, with its status (0)"
watched=$(tr -d '\r' <"$T/watch.tty")
expect_contains "$watched" " of 60 steps; " "the steps done of the total (ddp-train and this script write total_steps)"
expect_contains "$watched" ": done in " "an ETA"
expect_contains "$watched" " of walltime left" "against the walltime left"
expect_contains "$watched" $'\033[H\033[J' "redrawn in place on a terminal"
fills=$(grep -o 'node 0    \[#*' <<<"$watched" | sort -u | wc -l)
if [ "$fills" -ge 3 ]; then pass "node 0's bar moved ($fills lengths)"; else fail "node 0's bar moved" "$(grep 'node 0 ' <<<"$watched" | sort -u)"; fi
expect_contains "$watched" "steady (slurm job $STEADY): completed" "its last frame: completed"
dj status steady --watch
expect_eq "$RC" 0 "--watch of an ended job exits at once, with its status"
expect_lacks "$OUT" $'\033' "plain text when not a terminal"
# Each node's last steps reach node 0 as it settles, after the last heartbeat's sample.
expect_contains "$OUT" "  60 of 60 steps"$'\n' "all 60 steps done, no ETA once ended"

# A job shorter than a heartbeat: its ranks' last steps are in its record all the same.
sed -e 's/^name: steady/name: brief/' -e 's/^env: .*/env: {STEPS: "3", STEP_SECONDS: "0.01"}/' steady.yaml >brief.yaml
dj submit brief.yaml
dj wait brief --timeout 120
dj status brief
expect_contains "$OUT" "): 3 (ranks 0-3)" "a short job's last steps, each rank's 3rd (not none)"

# logs: both streams, in the order they came, stderr's lines marked; --stdout or --stderr alone.
cat >streams.yaml <<'SPEC'
name: streams
scheduler: slurm
nodes: 1
walltime: "00:05:00"
command: 'for i in 1 2 3 4; do if [ $((i % 2)) = 1 ]; then echo "line $i out"; else echo "line $i err" >&2; fi; sleep 0.3; done'
SPEC
dj submit streams.yaml
dj wait streams --timeout 120
dj logs streams --rank 0
expect_eq "$OUT" $'line 1 out\n[stderr] line 2 err\nline 3 out\n[stderr] line 4 err' \
    "logs --rank 0: stdout and stderr interleaved as they came, stderr marked"
dj logs streams
expect_contains "$OUT" "[rank 0 stderr] line 2 err" "the whole job's: stderr lines marked with the rank"
dj logs streams --rank 0 --stdout
expect_eq "$OUT" $'line 1 out\nline 3 out' "--stdout: that stream alone"
dj logs streams --rank 0 --stderr
expect_eq "$OUT" $'line 2 err\nline 4 err' "--stderr: that stream alone, unmarked"

# Notifications: a real HTTP receiver inside head's namespace (the nodes reach it on head's
# address), and one that takes requests and never answers.
hook_port=18080 silent_port=18081
for mode in answer silent; do
    port=$hook_port flag=
    [ "$mode" = answer ] || port=$silent_port flag=--silent
    DDPJ_TESTCLUSTER=$CLUSTER cluster_in head /usr/bin/python3 "$SRCDIR/tests/agent/py/webhook_receiver.py" \
        10.77.0.1 "$port" "$T/$mode.received" ${flag:+"$flag"} >"$T/$mode.log" 2>&1 &
done
secret="hook-$RANDOM$RANDOM"
sed -e 's/^name: failing/name: told/' failing.yaml >told.yaml
printf 'notify: {webhook: "http://10.77.0.1:%s/%s", on: [failed, completed, slow]}\n' "$hook_port" "$secret" >>told.yaml
sed -e 's/^name: steady/name: unheard/' steady.yaml >unheard.yaml
printf 'notify: {webhook: "http://10.77.0.1:%s/%s"}\n' "$silent_port" "$secret" >>unheard.yaml
dj submit told.yaml
dj wait told --timeout 180
expect_eq "$RC" 3 "the told job fails with 3"
received=$(cat "$T/answer.received" 2>/dev/null)
expect_eq "$(grep -c . <<<"$received")" 1 "one message: the job's end"
expect_contains "$received" "\"text\":\"ddpjob: told (slurm job " "in words, naming the job"
expect_contains "$received" "\"event\":\"failed\",\"state\":\"failed\"" "its event and state"
expect_contains "$received" "\"cause\":\"rank 1 (node 0, host n1): exited with code 3\"" "and the cause"
told=$(ls -d "$T"/.ddpjob/jobs/told.*)
expect_contains "$(cat "$told/link-0/notify.log" 2>&1)" "failed sent (HTTP 200)" "the record logs it sent"
expect_eq "$(stat -c %a "$told/notify.json")" 600 "the webhook is kept in the record, 0600"
dj status told
leaks=$(cat "$told/script" "$T"/told-*.out 2>/dev/null; echo "$OUT$ERR")
expect_lacks "$leaks" "$secret" "the URL is in neither the script, the job's output nor status"

dj submit unheard.yaml
UNHEARD=$(tail -n 1 <<<"$OUT")
unheard_dir=$(ls -d "$T"/.ddpjob/jobs/unheard.*)
expect_within 180 "the unheard job's link ends" test -e "$unheard_dir/link-0/ended"
ended_at=$(cut -d' ' -f2 "$unheard_dir/link-0/ended")
expect_within 60 "and it leaves the queue" squeue_is "$UNHEARD" %i ""
late=$(($(date +%s) - ended_at))
# The message's deadline is 10 s; the rest is margin for a loaded machine.
if [ "$late" -le 40 ]; then pass "a receiver that never answers holds the job's end by the deadline at most ($late s)"; else
    fail "a receiver that never answers holds the job's end by the deadline at most" "$late s"; fi
expect_contains "$(cat "$T/silent.received" 2>&1)" "request held" "the silent receiver had the request"
expect_contains "$(cat "$unheard_dir/link-0/notify.log" 2>&1)" "completed not sent: no answer within 10 s" \
    "the record logs the failed message"
dj status unheard
expect_contains "$OUT" "completed, exit 0" "the job completed all the same"

# An allocation held for runs, on the same cluster (dev_cases.sh).
dev_ddpjob() { cluster_ddpjob "$T" "$@"; }
on_login() { cluster_in head "$@"; }
in_queue() { [ -n "$(cluster_in head squeue -h -j "$1" -t PD,R,CG 2>/dev/null)" ]; }
DEV_SCHED=slurm
DEV_WALLTIME=1
cd "$T" || exit 1
. "$SRCDIR/tests/agent/dev_cases.sh"
