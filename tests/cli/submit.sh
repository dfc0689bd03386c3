#!/bin/bash
# ddpjob submit: the script lands in the job directory, the submitter's job id is printed, and
# every way submitting can fail gives a clear error and exit 4. The happy path against a real
# sbatch runs in the Slurm end-to-end suite; here stand-ins play a submitter that succeeds,
# fails or talks nonsense.
. "$SRCDIR/tests/lib/tap.sh"
cd "$T" || exit 1

mkdir -p jobdir path empty
cat >job.yaml <<SPEC
name: sub-test
scheduler: slurm
nodes: 1
workdir: $T/jobdir
command: [hostname]
SPEC
stand_in() { # NAME BODY
    printf '#!/bin/bash\n%s\n' "$2" >"path/$1"
    chmod +x "path/$1"
}

# A PATH with the basic tools but no sbatch (Slurm's clients are installed on this machine).
mkdir -p "$T/tools"
for tool in bash sh env cat; do ln -s "$(command -v "$tool")" "$T/tools/$tool"; done
run env PATH="$T/tools" "$DDPJOB" submit job.yaml --bindir /opt/ddpjob/bin
expect_eq "$RC" 4 "no sbatch on PATH: exit 4"
expect_contains "$ERR" "sbatch: not found on PATH (is this a slurm login node?)" "and the error says sbatch is missing"
expect_file jobdir/sub-test.sbatch "the script is kept in the job directory for inspection"

stand_in sbatch 'echo "sbatch: error: Batch job submission failed: Invalid account or account/partition combination specified" >&2; exit 1'
run env PATH="$T/path:$PATH" "$DDPJOB" submit job.yaml
expect_eq "$RC" 4 "sbatch fails: exit 4"
expect_contains "$ERR" "sbatch failed (exit status 1) submitting $T/jobdir/sub-test.sbatch:
sbatch: error: Batch job submission failed: Invalid account" "and its stderr is shown"

stand_in sbatch 'echo "maintenance window"'
run env PATH="$T/path:$PATH" "$DDPJOB" submit job.yaml
expect_eq "$RC" 4 "no job id in sbatch's output: exit 4"
expect_contains "$ERR" 'sbatch printed no job id' "and says so"

stand_in sbatch 'printf "%s\n" "$PWD" "$@" >"$T/sbatch.args"; cat "${@: -1}" >"$T/sbatch.read"; echo "4242;cluster1"'
sed -i "s|\$T|$T|g" path/sbatch
run env PATH="$T/path:$PATH" "$DDPJOB" submit job.yaml
expect_eq "$RC" 0 "sbatch succeeds: exit 0"
expect_eq "$OUT" 4242 "the job id is printed"
# The script reaches sbatch through a descriptor opened and checked by submit: in a team's
# workdir another member could swap the file between its writing and sbatch's reading it.
expect_eq "$(sed 's|^/dev/fd/[0-9]*$|/dev/fd/N|' sbatch.args)" "$T/jobdir
--parsable
/dev/fd/N" "sbatch runs in the job directory with --parsable and the script, as a descriptor"
expect_eq "$(cmp jobdir/sub-test.sbatch sbatch.read && echo same)" same "which reads the script written"
expect_eq "$(stat -c %a jobdir/sub-test.sbatch)" 700 "the script is executable and private"
# The record is private (the spec's env: may hold secrets), unless the spec shares it with the
# job's group, which may then read it but never write it.
modes() { # RECORD: the modes of .ddpjob, .ddpjob/jobs, the record and its files
    stat -c %a jobdir/.ddpjob jobdir/.ddpjob/jobs "$1" "$1/job.json" "$1/spec.yaml" "$1/script" | tr '\n' ' '
}
record=$(ls -d jobdir/.ddpjob/jobs/sub-test.* | tail -n 1)
expect_eq "$(modes "$record")" "700 700 700 600 600 700 " "the record's folders are 0700 and its files 0600"
echo "share_record: group" >>job.yaml
run env PATH="$T/path:$PATH" XDG_STATE_HOME="$T/state" "$DDPJOB" submit job.yaml
record=$(ls -dt jobdir/.ddpjob/jobs/sub-test.* | head -n 1)
expect_eq "$RC:$(modes "$record")" "0:750 750 750 640 600 750 " "share_record: group: the group may read it (umask 022), not write it, bar the spec (its webhook's URL)"
# A team's workdir (2770, setgid, its group the team's): the record keeps the setgid bit, so the
# team's group owns it all and can read it.
mkdir -m 2770 "$T/teamdir"
chgrp users "$T/teamdir"
run env PATH="$T/path:$PATH" XDG_STATE_HOME="$T/state" "$DDPJOB" submit job.yaml --set workdir="$T/teamdir"
record=$(ls -dt "$T"/teamdir/.ddpjob/jobs/sub-test.* | head -n 1)
expect_eq "$RC:$(stat -c '%a %G' "$T/teamdir/.ddpjob" "$T/teamdir/.ddpjob/jobs" "$record" "$record/job.json" | tr '\n' ' ')" \
    "0:2750 users 2750 users 2750 users 640 users " "share_record: group in a setgid team's folder: the setgid bit kept, the team's group owns the record"
sed -i '/^share_record:/d' job.yaml

stand_in qsub 'echo 140873987.gadi-pbs'
run env PATH="$T/path:$PATH" "$DDPJOB" submit job.yaml --scheduler pbs
expect_eq "$OUT" 140873987.gadi-pbs "qsub's job id is printed"
expect_file jobdir/sub-test.pbs "the PBS script is written as NAME.pbs"

run env PATH="$T/empty:/usr/bin:/bin" "$DDPJOB" submit job.yaml --dry-run
expect_eq "$RC" 0 "--dry-run needs no submitter"
expect_contains "$OUT" "would run in $T/jobdir: sbatch --parsable sub-test.sbatch" "--dry-run shows the command"

sed -i 's/^nodes: 1/nodes: 0/' job.yaml
rm -f jobdir/*
run env PATH="$T/path:$PATH" "$DDPJOB" submit job.yaml
expect_eq "$RC" 1 "an invalid spec is not submitted: exit 1"
expect_eq "$(ls jobdir)" "" "and no script is written"

sed -i 's/^nodes: 0/nodes: 1/; s|^workdir: .*|workdir: /nonexistent/dir|' job.yaml
run "$DDPJOB" submit job.yaml --dry-run
expect_eq "$RC" 3 "a missing workdir: exit 3"
expect_contains "$ERR" "workdir /nonexistent/dir is not a directory" "names the directory"

# doctor --submit: the spec's own script, its agents told to compare the nodes and start nothing.
sed -i "s|^workdir: .*|workdir: $T/jobdir|" job.yaml
run "$DDPJOB" doctor job.yaml --submit --dry-run --bindir /opt/ddpjob/bin
expect_eq "$RC" 0 "doctor --submit --dry-run: exit 0"
expect_contains "$OUT" "would run in $T/jobdir: sbatch --parsable sub-test.sbatch" "it is submitted as the job would be"
expect_contains "$(cat jobdir/sub-test.sbatch)" "--preflight only" "with the agents in preflight-only mode"

# --after (job_after.h): a job that cannot be found, or a word that is no condition, is named and
# nothing is submitted (the real dependencies run in sweep_slurm.sh and sweep_pbs.sh).
stand_in sbatch 'echo "sbatch ran" >>"$(dirname "$0")/ran"; echo 42'
run env PATH="$T/path:$PATH" XDG_STATE_HOME="$T/state" "$DDPJOB" submit job.yaml --after no-such-job
expect_eq "$RC" 1 "--after a job there is no record of: exit 1"
expect_contains "$ERR" "job.yaml: after: " "... naming the spec and what it waits for" "$ERR"
run env PATH="$T/path:$PATH" XDG_STATE_HOME="$T/state" "$DDPJOB" submit job.yaml --after "no-such-job:maybe"
expect_eq "$RC" 1 "--after with a word that is no condition: exit 1"
expect_contains "$ERR" "ddpjob: job.yaml: after: --after no-such-job:maybe: expected JOB, JOB:ok, JOB:any or JOB:notok" \
    "... saying what it takes"
printf 'after: {ok: [no-such-job]}\n' >>job.yaml
run env PATH="$T/path:$PATH" XDG_STATE_HOME="$T/state" "$DDPJOB" submit job.yaml
expect_eq "$RC" 1 "the spec's after: names a job there is no record of: exit 1"
expect_no_file path/ran "... and sbatch never ran"
