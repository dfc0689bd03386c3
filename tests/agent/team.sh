#!/bin/bash
# A team's project folder on a real Slurm (2 nodes in network namespaces), with real separate
# users (issue 66): a victim and an attacker in the project's group, an outsider in none. The
# workdir is the victim's, 2770, group the team's, no sticky bit (Gadi's /scratch/PROJECT). What
# the second security review reproduced, now refused or harmless:
#  - a group member renames .ddpjob and plants a sweep's next trial script: the trial refuses the
#    planted folder, naming it, and nothing of the attacker's runs as the victim;
#  - a link planted where a job's record was (links -> a file of the victim's): the job refuses
#    it, and the victim's file is untouched;
#  - a job's env: and setup: values: in no process's argv the outsider's ps shows, on the head
#    or the nodes, while the job runs (the node command travels in srun's environment);
#  - a rank's escape sequences shown as text by `ddpjob logs` on a terminal;
#  - .ddpjob renamed while workers run and links planted where their own files were: they write
#    in a private folder of the node's, and the agent copies into the record through its hold;
#  - links planted where Slurm writes a job's output file by name (NAME-JOBID.out, for the next
#    job ids): the output goes to the victim's own state folder instead, said by submit and
#    status, and the victim's file behind the links is untouched;
#  - and the team's folder is a normal place to work: a job there runs and completes.
. "$SRCDIR/tests/lib/tap.sh"
. "$SRCDIR/tests/cluster/slurm.sh"
victim=ddpjvic
attacker=ddpjatk
outsider=ddpjout
team=ddpjteam
users_down() {
    for u in $victim $attacker $outsider; do
        pkill -9 -u "$u" 2>/dev/null
        userdel "$u" 2>/dev/null
    done
    groupdel "$team" 2>/dev/null
}
at_exit 'users_down'
at_exit 'cluster_down'
if ! cluster_up 2 >"$T/cluster.log" 2>&1; then
    fail "a 2-node Slurm cluster starts" "$(tail -n 20 "$T/cluster.log")"
    exit 1
fi

# The users, their homes, and the team's folder, where all three can reach it.
users_down
base=$(mktemp -d /tmp/ddpjob-team.XXXXXX)
at_exit "rm -rf $base"
chmod 755 "$base"
groupadd "$team"
for u in $victim $attacker $outsider; do
    useradd -M -p '*' -d "$base/home-$u" -s /bin/bash "$u"
    mkdir -m 700 "$base/home-$u"
    chown "$u:" "$base/home-$u"
done
usermod -aG "$team" "$victim"
usermod -aG "$team" "$attacker"
work=$base/proj
mkdir -m 2770 "$work"
chown "$victim:$team" "$work"
chmod 2770 "$work"
echo "the victim's own" >"$base/home-$victim/precious"
outdir=$base/home-$victim/state/ddpjob/output
chown "$victim:" "$base/home-$victim/precious"

# as USER CMD...: CMD as USER on the cluster's head, from the team's folder (RC, OUT, ERR).
as() {
    local u=$1
    shift
    run cluster_in head runuser -u "$u" -- env -i PATH=/usr/bin:/bin HOME="$base/home-$u" \
        SLURM_CONF="$SLURM_CONF" XDG_STATE_HOME="$base/home-$u/state" \
        bash -c 'cd "$0" && exec "$@"' "$work" "$@"
}
# The job ids Slurm has left for JOB (an array's tasks too), empty once it is gone.
queued() { cluster_in head squeue -h -r -o %i 2>/dev/null | grep "^$1" ; }
wait_gone() { # JOB SECONDS
    local deadline=$((SECONDS + $2))
    while [ -n "$(queued "$1")" ] && [ "$SECONDS" -lt "$deadline" ]; do sleep 0.5; done
}

# 1. A normal job in the team's folder runs, its record private to the victim.
cat >"$work/plain.yaml" <<'SPEC'
name: plain
scheduler: slurm
nodes: 2
walltime: "00:05:00"
env: {WANDB_API_KEY: "sk-team-secret-0451"}
setup: export SETUP_TOKEN=setup-secret-7731
command: [sh, -c, 'echo "key ${#WANDB_API_KEY} setup ${#SETUP_TOKEN}"; printf "\033]0;pwned-title\007\033[31mred\033[0m\n"; sleep 10']
SPEC
chown "$victim:" "$work/plain.yaml"
# Slurm writes a job's output file by name, as its user, following links: the attacker plants
# plain-JOBID.out for the next job ids (they come in order), each a link to the victim's file.
as "$attacker" sbatch --parsable -o /dev/null --wrap true
last=$(tail -n 1 <<<"$OUT")
as "$attacker" bash -c 'for i in $(seq $(($1 + 1)) $(($1 + 40))); do ln -s "$2" "plain-$i.out"; done' \
    _ "$last" "$base/home-$victim/precious"
expect_eq "$RC" 0 "the attacker planted plain-JOBID.out links to the victim's file for the next 40 ids" "$ERR"
as "$victim" "$DDPJOB" submit plain.yaml
JOB=$(tail -n 1 <<<"$OUT")
expect_eq "$RC" 0 "the victim submits a 2-node job from the team's folder (2770, no sticky bit)" "$ERR"
expect_contains "$ERR" "ddpjob: note: $work (owner uid $(id -u "$victim"), mode 2770) is open to others: the scheduler, which follows links there, writes the job's output file into $outdir instead" \
    "submit says the output file goes to the victim's own folder, and why"
# While it runs: nothing of env: or setup: in any argv the outsider sees, on the head or a node.
running=
for _ in $(seq 120); do
    [ "$(cluster_in head squeue -h -j "$JOB" -o %T 2>/dev/null)" = RUNNING ] &&
        pgrep -u "$victim" -f ddpjob-agent >/dev/null && running=1 && break
    sleep 0.5
done
sleep 2
expect_eq "$running" 1 "the job runs"
seen=
for where in head n1 n2; do
    seen+=$(cluster_in "$where" runuser -u "$outsider" -- ps -eo args 2>/dev/null | grep -e 'sk-team-secre[t]' -e 'setup-secre[t]')
done
expect_eq "$seen" "" "no env: or setup: value in any process's argv, as the outsider's ps shows them (head, n1, n2)"
agents=$(pgrep -u "$victim" -f ddpjob-agent | head -n 1)
if [ -n "$agents" ] && ! runuser -u "$outsider" -- cat "/proc/$agents/environ" >/dev/null 2>&1; then
    pass "and the outsider cannot read the agents' environment, which carries them"
else
    fail "and the outsider cannot read the agents' environment, which carries them" "pid $agents"
fi
wait_gone "$JOB" 120
as "$victim" "$DDPJOB" status "$JOB"
expect_contains "$OUT" "plain (slurm job $JOB): completed, exit 0" "the job completes" "$ERR"
expect_contains "$OUT" "the scheduler's output file in $outdir (the workdir is open to others)" \
    "status says where the output file is"
expect_contains "$(cat "$outdir/plain-$JOB.out" 2>/dev/null)" "key 19 setup 17" \
    "and its workers had the env: and setup: values"
expect_eq "$(cat "$base/home-$victim/precious")" "the victim's own" \
    "the victim's file behind the planted plain-$JOB.out is untouched"
expect_eq "$(find "$work" -maxdepth 1 -name '*.out' ! -type l)" "" "no output file of the victim's in the team's folder"
rm -f "$work"/plain-*.out
# What a rank printed reaches a terminal as text: its escape sequences shown, never acted on.
as "$victim" script -qec "$DDPJOB logs plain --rank 0" /dev/null
expect_contains "$OUT" '^[]0;pwned-title^G^[[31mred^[[0m' "logs on a terminal shows a rank's escape sequences as text (ESC as ^[)" "$ERR"
expect_lacks "$OUT" $'\033' "... none reaches the terminal raw"
as "$victim" "$DDPJOB" logs plain --rank 0
expect_contains "$OUT" $'\033[31mred' "into a pipe, the bytes pass as they are"
record=$(ls -d "$work"/.ddpjob/jobs/plain.* | head -n 1)
as "$attacker" cat "$record/spec.yaml"
expect_eq "$RC" 1 "the attacker in the group cannot read the victim's record (its spec)"

# 2. A group member renames .ddpjob while a sweep runs and plants trial 1's script: trial 1
# refuses the planted folder and nothing of the attacker's runs as the victim.
cat >"$work/sweep.yaml" <<'SPEC'
name: teamsweep
scheduler: slurm
nodes: 1
walltime: "00:05:00"
sweep:
  grid: {n: [0, 1]}
  parallel: 1
command: [sh, -c, 'echo "trial {n} ran as $(id -un)"; sleep 6']
SPEC
chown "$victim:" "$work/sweep.yaml"
as "$victim" "$DDPJOB" submit sweep.yaml
ARRAY=$(tail -n 1 <<<"$OUT")
expect_eq "$RC" 0 "the victim submits a 2-trial sweep, one at a time" "$ERR"
sweep=$(ls -d "$work"/.ddpjob/sweeps/teamsweep.* 2>/dev/null | head -n 1)
sweep=${sweep##*/}
# Once trial 0 runs its workers (past its own check of its record), not as soon as Slurm says it
# runs: the attack is on trial 1.
for _ in $(seq 240); do
    grep -qs "trial 0 ran as" "$outdir"/teamsweep-*.out && break
    sleep 0.5
done
as "$attacker" bash -c '
    mv .ddpjob .ddpjob.gone &&
    mkdir -p ".ddpjob/sweeps/$1/trial-1" &&
    printf "#!/bin/bash\ntouch %s/pwned-\$(id -un)\n" "$2" >".ddpjob/sweeps/$1/trial-1/script" &&
    chmod -R a+rwx .ddpjob' _ "$sweep" "$base"
expect_eq "$RC" 0 "the attacker renamed .ddpjob and planted trial 1's record (the attack of the review)" "$ERR"
wait_gone "$ARRAY" 120
expect_eq "$(ls "$base" | grep pwned)" "" "trial 1 did not run the planted script"
outs=$(cat "$outdir"/teamsweep-*.out 2>/dev/null)
expect_contains "$outs" "ddpjob: refusing $work/.ddpjob/sweeps/$sweep/trial-1 on n" \
    "it refused the planted folder, naming it" "$(ls "$work")"
expect_contains "$outs" "not a folder of this user's own that others cannot write ($attacker, mode 2777)" \
    "... and its owner and mode"
expect_contains "$outs" "trial 0 ran as $victim" "trial 0, which had started, ran as the victim"
expect_lacks "$outs" "trial 1 ran" "and trial 1 ran nothing"
as "$victim" bash -c 'rm -rf .ddpjob.gone .ddpjob'
cluster_in head runuser -u "$attacker" -- rm -rf "$work/.ddpjob" 2>/dev/null

# 3. A link planted where a pending job's record was: links -> a file of the victim's. The job
# refuses the planted record when it starts; the victim's file is untouched.
cat >"$work/held.yaml" <<'SPEC'
name: held
scheduler: slurm
nodes: 1
walltime: "00:05:00"
command: [sh, -c, 'echo held ran']
slurm: {directives: ["--hold"]}
SPEC
chown "$victim:" "$work/held.yaml"
as "$victim" "$DDPJOB" submit held.yaml
HELD=$(tail -n 1 <<<"$OUT")
expect_eq "$RC" 0 "the victim submits a job, held (#SBATCH --hold) until the attack is in place" "$ERR"
# sbatch has no SBATCH_HOLD (this test once used it, and passed only while Slurm was slower to
# start the job than the attacker was to plant the record).
expect_eq "$(cluster_in head squeue -h -j "$HELD" -o '%T %r %Q' 2>&1)" "PENDING JobHeldUser 0" \
    "... and Slurm holds it" "$ERR"
rec=$(ls -d "$work"/.ddpjob/jobs/held.* | head -n 1)
as "$attacker" bash -c '
    mv .ddpjob .ddpjob.gone && mkdir -p "$1" && ln -s "$2" "$1/links" &&
    mkdir "$1/link-0" && ln -s "$2" "$1/link-0/started" && chmod -R a+rwx .ddpjob' \
    _ "$rec" "$base/home-$victim/precious"
expect_eq "$RC" 0 "the attacker planted a record whose links and started are links to the victim's file" "$ERR"
cluster_in head scontrol release "$HELD" 2>/dev/null
wait_gone "$HELD" 120
expect_eq "$(cat "$base/home-$victim/precious")" "the victim's own" "the victim's file is untouched"
out=$(cat "$outdir/held-$HELD.out" 2>/dev/null)
expect_contains "$out" "ddpjob: refusing $rec on n1: not a folder of this user's own that others cannot write ($attacker, mode 2777)" \
    "the job refused the planted record, naming it, its owner and mode" "$(ls "$work")"
expect_lacks "$out" "held ran" "and ran nothing"

as "$victim" bash -c 'rm -rf .ddpjob.gone .ddpjob'
cluster_in head runuser -u "$attacker" -- rm -rf "$work/.ddpjob" 2>/dev/null

# 4. A group member renames .ddpjob while a job's workers run, and plants at their rank folder's
# old path links to a file of the victim's where the workers' progress, metrics and error files
# were: the workers write into a private folder of the node's, the victim's file is untouched,
# and the record (renamed, but held by the agent) still gets the rank's logs and metrics.
cat >"$work/steps.yaml" <<'SPEC'
name: steps
scheduler: slurm
nodes: 1
walltime: "00:05:00"
command: [sh, -c, 'echo "progress file $DDPJOB_PROGRESS_FILE"; i=0; while [ $i -lt 24 ]; do i=$((i + 1)); echo $i >"$DDPJOB_PROGRESS_FILE"; echo "{\"epoch\": $i}" >>"$DDPJOB_METRICS_FILE"; sleep 0.5; done; echo "{}" >"$TORCHELASTIC_ERROR_FILE"; exit 3']
SPEC
chown "$victim:" "$work/steps.yaml"
as "$victim" "$DDPJOB" submit steps.yaml
STEPS=$(tail -n 1 <<<"$OUT")
expect_eq "$RC" 0 "the victim submits a job whose worker writes its progress, metrics and error files" "$ERR"
rec=$(ls -d "$work"/.ddpjob/jobs/steps.* | head -n 1)
rank_dir=
for _ in $(seq 240); do
    rank_dir=$(ls -d "$rec"/link-0/logs/*/attempt_0/rank_0 2>/dev/null) && [ -n "$rank_dir" ] && break
    sleep 0.5
done
# The attacker reads the run's id from the agents' argv; root finds it here for them.
as "$attacker" bash -c '
    mv .ddpjob .ddpjob.gone && mkdir -p "$1" &&
    for f in progress metrics.jsonl error.json; do ln -s "$2" "$1/$f"; done && chmod -R a+rwx .ddpjob' \
    _ "$rank_dir" "$base/home-$victim/precious"
expect_eq "$RC" 0 "while the worker runs, the attacker renamed .ddpjob and planted links where its files were" "$ERR"
wait_gone "$STEPS" 120
expect_eq "$(cat "$base/home-$victim/precious")" "the victim's own" "the victim's file is untouched"
out=$(cat "$outdir/steps-$STEPS.out" 2>/dev/null)
expect_contains "$out" "progress file /tmp/ddpjob-workers." "the worker's files are in a private folder of the node's" "$out"
moved=${rank_dir/\/.ddpjob\//\/.ddpjob.gone\/}
expect_eq "$(wc -l <"$moved/metrics.jsonl" 2>/dev/null)" 24 \
    "the renamed record got all 24 of the rank's metrics lines, through the agent's hold" \
    "$(ls -la "$moved" 2>&1)"
expect_contains "$(cat "$moved/stdout.log" 2>/dev/null)" "progress file" "... and its log"
