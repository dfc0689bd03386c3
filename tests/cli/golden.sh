#!/bin/bash
# The bundled examples render to the expected scripts (tests/golden), for every scheduler, and
# every rendered script passes bash -n and shellcheck. UPDATE_GOLDEN=1 rewrites the expectations.
. "$SRCDIR/tests/lib/tap.sh"

# expect_golden NAME TEXT: TEXT is tests/golden/NAME (UPDATE_GOLDEN=1: it becomes it).
expect_golden() {
    local golden=$SRCDIR/tests/golden/$1 diff_out
    if [ "${UPDATE_GOLDEN:-0}" = 1 ]; then
        printf '%s\n' "$2" >"$golden"
        skip "$1 matches tests/golden" "UPDATE_GOLDEN=1 rewrote it"
    elif diff_out=$(diff -u "$golden" <(printf '%s\n' "$2") 2>&1); then
        pass "$1 matches tests/golden"
    else
        fail "$1 matches tests/golden" "$diff_out"
    fi
}

# Every scheduler the seam has a row for: render's usage names them.
all_scheds=$("$DDPJOB" render --help | sed -n 's/.*--scheduler \([a-z|]*\)\].*/\1/p' | head -n 1 | tr '|' ' ')
expect_ne "$all_scheds" "" "render --help names the schedulers ($all_scheds)"
for spec in "$SRCDIR"/share/examples/*.yaml; do
    base=$(basename "$spec" .yaml)
    scheds=$all_scheds
    # A container's image is of its runtime's kind, so a container example renders for its own
    # scheduler only (pyxis is Slurm's; Gadi's Singularity takes a .sif).
    case $base in container-*) scheds=$(sed -n 's/^scheduler: //p' "$spec") ;; esac
    for sched in $scheds; do
        # Grid Engine needs the site's parallel environment, which no example names.
        pe=()
        [ "$sched" != sge ] || pe=(--set sge.pe=mpi)
        run "$DDPJOB" render "$spec" --scheduler "$sched" "${pe[@]}" --bindir /opt/ddpjob/bin
        expect_eq "$RC" 0 "$base renders for $sched"
        expect_golden "$base.$sched" "$OUT"
        printf '%s\n' "$OUT" >"$T/script"
        if msg=$(bash -n "$T/script" 2>&1); then pass "bash -n $base.$sched"; else fail "bash -n $base.$sched" "$msg"; fi
        if msg=$(shellcheck "$T/script" 2>&1); then pass "shellcheck $base.$sched"; else fail "shellcheck $base.$sched" "$msg"; fi
    done
done

# A sweep where the site takes no arrays: submit --dry-run writes each trial's script and shows
# the lanes it would submit, each trial after the one before it in its lane.
mkdir -p "$T/lanes"
printf 'name: noarrays\narrays: false\nqueues:\n  normal: {cores_per_node: 48}\n' >"$T/noarrays.yaml"
run "$DDPJOB" submit --dry-run "$SRCDIR/share/examples/sweep.yaml" --scheduler pbs --site "$T/noarrays.yaml" \
    --set "workdir=$T/lanes" --set project=ab12 --bindir /opt/ddpjob/bin
expect_eq "$RC" 0 "a sweep under a profile that takes no arrays: submit --dry-run" "$ERR"
expect_golden sweep-lanes.noarrays "$(printf '%s\n' "$OUT" | sed "s|$T|/T|g")"
for k in 0 5; do
    if msg=$(bash -n "$T/lanes/lr-sweep.t$k.pbs" 2>&1 && shellcheck "$T/lanes/lr-sweep.t$k.pbs" 2>&1); then
        pass "bash -n and shellcheck accept lane trial $k's script"
    else
        fail "bash -n and shellcheck accept lane trial $k's script" "$msg"
    fi
done
# Gadi's profile packs a sweep instead (pack: {nodes: 2}): one allocation's script, held for the
# trials, each trial's script a run in it.
mkdir -p "$T/packed"
run "$DDPJOB" submit --dry-run "$SRCDIR/share/examples/sweep.yaml" --scheduler pbs --site gadi \
    --set "workdir=$T/packed" --set "pbs.storage=[scratch/ab12]" --set project=ab12 --bindir /opt/ddpjob/bin
expect_eq "$RC" 0 "a sweep under Gadi's profile: submit --dry-run" "$ERR"
expect_golden sweep-packed.gadi "$(printf '%s\n' "$OUT" | sed "s|$T|/T|g")"
# expect_scripts_clean DIR FILE...: bash -n and shellcheck accept each of the packed sweep's files.
expect_scripts_clean() {
    local dir=$1 file msg
    for file in "${@:2}"; do
        if msg=$(bash -n "$dir/$file" 2>&1 && shellcheck "$dir/$file" 2>&1); then
            pass "bash -n and shellcheck accept the packed sweep's $file"
        else
            fail "bash -n and shellcheck accept the packed sweep's $file" "$msg"
        fi
    done
}
expect_scripts_clean "$T/packed" lr-sweep.pack1.pbs lr-sweep.t0.pbs
expect_contains "$(cat "$T/packed/lr-sweep.pack1.pbs")" "dev-hold --record \"\$ddpjob_record\" --idle 0 --parallel 2 --until-done" \
    "the allocation's holder runs the trials, 2 at once, until none is left"
expect_contains "$(cat "$T/packed/lr-sweep.t0.pbs")" 'DDPJOB_HELD_NODES' "a trial's script takes the nodes its holder gives it"
# A pack held an hour a link, with requeue: the allocation takes the trials' requeue, its holder
# goes on with the trials left in its next link, and a node that fails does not end it.
mkdir -p "$T/packwall"
run "$DDPJOB" submit --dry-run "$SRCDIR/share/examples/sweep.yaml" --pack 2 --set "workdir=$T/packwall" \
    --set 'sweep.pack.walltime="01:00:00"' --set requeue=3 --set 'checkpoint={signal: USR1, before: 120}' \
    --bindir /opt/ddpjob/bin
expect_eq "$RC" 0 "a sweep packed into an allocation held an hour a link: submit --dry-run" "$ERR"
script=$(cat "$T/packwall/lr-sweep.pack1.sbatch")
for line in "#SBATCH --time=01:00:00" "#SBATCH --requeue" "#SBATCH --no-kill" \
    'ddpjob_hold_args=(--continue-before 120)' 'scontrol requeue "$SLURM_JOB_ID"'; do
    expect_contains "$script" "$line" "the allocation's script: $line"
done
expect_contains "$(cat "$T/packwall/lr-sweep.t0.sbatch")" 'ddpjob_requeue=${DDPJOB_HELD_LINK:-0}' \
    "a trial's link is its holder's to say"
expect_scripts_clean "$T/packwall" lr-sweep.pack1.sbatch lr-sweep.t0.sbatch

# A spec rendered for the other scheduler says what it left out.
run "$DDPJOB" render "$SRCDIR/share/examples/gadi-pbs.yaml" --scheduler slurm --bindir /x
expect_contains "$ERR" "the pbs: block (storage, jobfs, launcher, directives) is left out of a Slurm script" \
    "rendering a PBS spec for Slurm notes the dropped pbs: block"
run "$DDPJOB" render "$SRCDIR/share/examples/slurm-2x8.yaml" --scheduler pbs --bindir /x
expect_contains "$ERR" "the slurm: block is left out of a PBS script" "and the other way round"
expect_lacks "$OUT" "mail-type" "slurm directives do not leak into PBS"

# The SSH launcher variant of the PBS script hands the node file and the node script it carries to
# `ddpjob launch`.
sed 's/launcher: pbsdsh/launcher: ssh/' "$SRCDIR/share/examples/gadi-pbs.yaml" >"$T/ssh.yaml"
run "$DDPJOB" render "$T/ssh.yaml" --bindir /opt/ddpjob/bin
expect_contains "$OUT" '/opt/ddpjob/bin/ddpjob launch --node-script "$ddpjob_node_script" --nodefile "$PBS_NODEFILE" \
    --nproc-per-node 4 --workdir "$ddpjob_workdir"' \
    "pbs.launcher: ssh starts the agents with ddpjob launch"
expect_lacks "$OUT" 'pbsdsh -n "' "and not with pbsdsh"
printf '%s\n' "$OUT" >"$T/script"
if msg=$(bash -n "$T/script" 2>&1 && shellcheck "$T/script" 2>&1); then pass "bash -n and shellcheck accept it"; else fail "bash -n and shellcheck accept it" "$msg"; fi
