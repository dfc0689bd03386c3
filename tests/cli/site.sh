#!/bin/bash
# Site profiles: the bundled Gadi profile's rules, each broken rule reported with the value that
# fixes it, what it fills in, its warnings, and worst-case costs checked against NCI's own worked
# examples (opus.nci.org.au "Job Costs") and hand computations; a user's own profile and broken
# profiles.
. "$SRCDIR/tests/lib/tap.sh"
cd "$T" || exit 1

spec() { # FILE then the spec's lines on stdin, after a common head
    { printf 'name: s\nscheduler: pbs\nsite: gadi\nproject: vp91\n'; cat; } >"$1"
}

# NCI's examples: normal 8 CPUs 128 GB 5 h = 32 x 5 x 2 = 320 SU (charged on memory: 4 GiB per
# CPU); express 8 CPUs 16 GB 5 h = 8 x 5 x 6 = 240 SU; gpuvolta 1 GPU 12 CPUs 380 GB 5 h =
# 380 x 48 / 382 x 5 x 3 = 716.23 SU.
spec normal.yaml <<'S'
nodes: 1
cpus_per_node: 8
mem: 128GB
walltime: "05:00:00"
queue: normal
command: [true]
S
run "$DDPJOB" validate normal.yaml
expect_eq "$RC" 0 "a normal-queue spec is valid on gadi"
expect_contains "$OUT" "cost: at most 320.00 SU (normal: 2 SU per CPU-hour x 32.00 CPUs' worth of memory (4.00 GiB per CPU) x 5.00 h)" \
    "NCI's example: 8 CPUs with 128 GB for 5 h on normal cost 320 SU, charged on memory"
sed -e 's/queue: normal/queue: express/' -e 's/128GB/16GB/' normal.yaml >express.yaml
run "$DDPJOB" validate express.yaml
expect_contains "$OUT" "cost: at most 240.00 SU (express: 6 SU per CPU-hour x 8 CPUs x 5.00 h)" \
    "NCI's example: 8 CPUs with 16 GB for 5 h on express cost 240 SU"
spec gpu1.yaml <<'S'
nodes: 1
gpus_per_node: 1
cpus_per_node: 12
mem: 380GB
walltime: "05:00:00"
queue: gpuvolta
command: [true]
S
run "$DDPJOB" validate gpu1.yaml
expect_contains "$OUT" "cost: at most 716.23 SU" "NCI's example: 1 V100, 12 CPUs, 380 GB for 5 h on gpuvolta cost 716.23 SU"
# By hand: 2 gpuvolta nodes x 48 CPUs for 2 h at 3 SU = 576 SU (380 GB a node is 95.5 CPUs' worth).
run "$DDPJOB" validate "$SRCDIR/share/examples/gadi-pbs.yaml"
expect_contains "$OUT" "cost: at most 576.00 SU (gpuvolta: 3 SU per CPU-hour x 96 CPUs x 2.00 h)" \
    "the bundled Gadi example: 2 x 48 CPUs for 2 h on gpuvolta cost 576 SU"
run "$DDPJOB" render "$SRCDIR/share/examples/gadi-pbs.yaml" --bindir /x
expect_contains "$ERR" "cost: at most 576.00 SU" "render prints the cost too, beside the script"

# cpus_per_node is filled in from the GPUs, and the profile picks Gadi's job-wide resources.
grep -v cpus_per_node gpu1.yaml | sed 's/gpus_per_node: 1/gpus_per_node: 4/' >fill.yaml
run "$DDPJOB" render fill.yaml --bindir /x
expect_contains "$ERR" "fill.yaml:9:8: cpus_per_node: note: filled in as 48 (gpuvolta's 12 CPUs per GPU)" \
    "a missing cpus_per_node is filled in from gpuvolta's 12 CPUs per GPU"
expect_contains "$OUT" "#PBS -l ncpus=48
#PBS -l ngpus=4" "and the script asks for them in Gadi's job-wide form"

# Every broken rule at once, each with its fix; warnings for paths without storage flags and for
# InfiniBand turned off.
spec bad.yaml <<'S'
nodes: 2
gpus_per_node: 4
cpus_per_node: 12
mem: 500GB
walltime: "72:00:00"
queue: gpuvolta
workdir: /g/data/ab12/run
env: {NCCL_IB_DISABLE: "1"}
command: [python3, /scratch/xy99/train.py, /scratch/vp91/data]
pbs: {jobfs: 500GB}
S
run "$DDPJOB" validate bad.yaml
expect_eq "$RC" 1 "a spec that breaks gpuvolta's rules is invalid"
expect_contains "$ERR" "bad.yaml:7:16: cpus_per_node: 12 breaks gpuvolta's 12 CPUs per GPU: use 48" "CPUs per GPU, with the fix"
expect_contains "$ERR" "bad.yaml:8:6: mem: 500GB per node is more than gpuvolta's 382GB: use at most 382GB" "memory per node"
expect_contains "$ERR" "bad.yaml:14:14: pbs.jobfs: 500GB per node is more than gpuvolta's 400GB: use at most 400GB" "jobfs per node"
expect_contains "$ERR" "bad.yaml:9:11: walltime: 72:00:00 is over gpuvolta's limit for a job of 24 CPUs (up to 96): use at most 48:00:00" "walltime limit for the job's size"
expect_contains "$ERR" "bad.yaml:11:10: workdir: warning: uses /g/data/ab12, which the job cannot see without pbs.storage: [gdata/ab12]" \
    "a /g/data path without its storage flag is warned about"
expect_contains "$ERR" "bad.yaml:13:10: command: warning: uses /scratch/xy99, which the job cannot see without pbs.storage: [scratch/xy99]" \
    "so is another project's /scratch"
expect_lacks "$ERR" "/scratch/vp91" "the job's own project's /scratch needs no flag"
expect_contains "$ERR" "bad.yaml:12:24: env.NCCL_IB_DISABLE: warning: turns InfiniBand off on a site that has it" \
    "NCCL_IB_DISABLE=1 on a site with InfiniBand is warned about"
expect_contains "$ERR" "4 problems; nothing was written" "warnings are not problems"

spec multi.yaml <<'S'
nodes: 2
cpus_per_node: 12
walltime: "01:00:00"
command: [true]
S
run "$DDPJOB" validate multi.yaml
expect_contains "$ERR" "cpus_per_node: 12 on 2 nodes breaks normal's rule that a job of several nodes takes whole nodes: use 48" \
    "without queue:, the site's default queue's rules hold"
spec gpuless.yaml <<'S'
nodes: 1
gpus_per_node: 2
queue: normal
command: [true]
S
run "$DDPJOB" validate gpuless.yaml
expect_contains "$ERR" "gpus_per_node: 2, but normal has no GPUs: use a GPU queue (gpuvolta, dgxa100)" "GPUs on a CPU queue"
sed 's/queue: normal/queue: gpuvolt/' gpuless.yaml >typo.yaml
run "$DDPJOB" validate typo.yaml
expect_contains "$ERR" "typo.yaml:7:8: queue: \"gpuvolt\" is not a queue of site gadi (did you mean gpuvolta?); its queues: normal, express, hugemem, gpuvolta, dgxa100" \
    "an unknown queue is named, with a suggestion and the site's queues"
grep -v '^site:' normal.yaml | sed 's/cpus_per_node: 8/cpus_per_node: 96/' >nosite.yaml
run "$DDPJOB" validate --site gadi nosite.yaml
expect_contains "$ERR" "cpus_per_node: 96 is more than normal's 48 cores per node: use 48" "--site checks a spec that names no site"

# Every queue NCI lists is known, with its figures, each figure with its source; whether Gadi
# takes -J arrays is stated with its source.
profile=$SRCDIR/share/sites/gadi.yaml
for q in normalsr:104 expresssr:104 normalbw:28 expressbw:28 normalsl:32 hugemembw:28 megamem:48 megamembw:64; do
    spec "q-${q%%:*}.yaml" <<S
nodes: 1
cpus_per_node: ${q##*:}
mem: 100GB
walltime: "04:00:00"
queue: ${q%%:*}
command: [true]
S
    run "$DDPJOB" validate "q-${q%%:*}.yaml"
    expect_eq "$RC:$ERR" "0:" "queue ${q%%:*} is known: a node of ${q##*:} cores is valid there, without a remark"
done
unsourced=$(sed -n '/^queues:/,$p' "$profile" | grep -E '^    [a-z_]+: ' | grep -v '# \[' || true)
expect_eq "$unsourced" "" "every figure of every queue names its source"
expect_contains "$(grep -E '^arrays:' "$profile")" "# [arrays]" "whether -J arrays are taken is stated with its source"
expect_contains "$(sed -n '/^#  \[arrays\]/,/^#  \[/p' "$profile")" "Unverified" "and marked unverified"
spec copy.yaml <<'S'
nodes: 1
cpus_per_node: 2
mem: 4GB
walltime: "02:00:00"
queue: copyq
command: [true]
S
run "$DDPJOB" validate copy.yaml
expect_contains "$ERR" "nodes: 2 CPUs in all is more than copyq takes (1)" "copyq takes one CPU"
spec wide.yaml <<'S'
nodes: 11
cpus_per_node: 104
mem: 500GB
walltime: "48:00:00"
queue: normalsr
command: [true]
S
run "$DDPJOB" validate wide.yaml
expect_contains "$ERR" "walltime: 48:00:00 is over normalsr's limit for a job of 1144 CPUs (up to 2080): use at most 24:00:00" \
    "normalsr's walltime shrinks with the job's cores"

# No mem: on Gadi is its small default: a warning with the figure to write; no project: while the
# storage names one is a note; "10:00" (ten minutes) for a job sized for hours is a note.
printf 'name: s\nscheduler: pbs\nsite: gadi\nnodes: 2\nwalltime: "10:00"\npbs: {storage: [scratch/xy1, gdata/ab2]}\ncommand: [true]\n' >defaults.yaml
run "$DDPJOB" validate defaults.yaml
expect_eq "$RC" 0 "a spec without mem:, project: or an hours walltime is still valid"
expect_contains "$ERR" "defaults.yaml:1:1: mem: warning: not given, so site gadi gives the job its default of 500MB in all: write mem: 190GB (per node; what this job's share of a normal node holds)" \
    "no mem: on Gadi is warned about, with the figure to write"
expect_contains "$ERR" "defaults.yaml:6:16: pbs.storage: note: no project:, so the job is charged to your default project; its storage names xy1: write project: xy1 if that is the one to charge" \
    "no project: while the storage names one is noted"
expect_contains "$ERR" "defaults.yaml:5:11: walltime: note: \"10:00\" is 10 minutes; for 10 hours write \"10:00:00\"" \
    "a walltime of 10:00 on 2 nodes is noted as 10 minutes"
printf 'name: s\nscheduler: pbs\nsite: gadi\nproject: xy1\nnodes: 1\ncpus_per_node: 4\nmem: 16GB\nwalltime: "10:00"\ncommand: [true]\n' >short.yaml
run "$DDPJOB" validate short.yaml
expect_eq "$RC:$ERR" "0:" "a 10-minute walltime for one node of 4 CPUs, with mem: and project:, draws no remark"

# A user's own profile, found by name in ~/.config/ddpjob/sites; a missing or broken one.
mkdir -p home/.config/ddpjob/sites
cat >home/.config/ddpjob/sites/mysite.yaml <<'P'
name: mysite
charge_unit: credits
queues:
  gpu: {cores_per_node: 32, gpus_per_node: 4, mem_per_node: 256GB, charge_rate: 1.5}
P
printf 'name: m\nscheduler: pbs\nsite: mysite\nnodes: 2\ngpus_per_node: 4\ncpus_per_node: 32\nwalltime: "10:00:00"\nqueue: gpu\ncommand: [true]\n' >mine.yaml
run env HOME="$T/home" "$DDPJOB" validate mine.yaml
expect_contains "$OUT" "cost: at most 960.00 credits (gpu: 1.5 credits per CPU-hour x 64 CPUs x 10.00 h)" \
    "a user's own profile is found by name and costs the job in its own unit"
run env HOME="$T/home" "$DDPJOB" validate --site nosuch mine.yaml
expect_eq "$RC" 1 "an unknown site is a problem"
expect_contains "$ERR" "--site: site profile nosuch.yaml not found (looked in $T/home/.config/ddpjob/sites, the install and build trees)" \
    "and says where it was looked for"
printf 'name: broken\nqueues:\n  gpu: {cores_per_node: 32, gpu_per_node: 4}\n' >broken.yaml
run "$DDPJOB" validate --site ./broken.yaml mine.yaml
expect_contains "$ERR" "site profile ./broken.yaml:3:29: gpu_per_node: unknown queue field" "a broken profile is named with its file, line and field"

# A spec that names no site but looks like one's (the profile's recognise:): validate warns and
# says what to add; naming the site, or a Slurm spec, draws no such warning.
printf 'name: g\nscheduler: pbs\nnodes: 2\nqueue: gpuvolta\ngpus_per_node: 4\nwalltime: "01:00:00"\nworkdir: /scratch/ab12/run\nenv: {DATA: /g/data/ab12/set}\ncommand: [python3, train.py]\n' >looks.yaml
run "$DDPJOB" validate looks.yaml
expect_eq "$RC" 0 "a Gadi-looking spec without site: is still valid"
expect_contains "$ERR" "looks.yaml:1:1: site: warning: this spec looks like site gadi's (queue gpuvolta, path /scratch/ab12/run, path /g/data/ab12/set) but names no site" \
    "validate warns, naming what gave it away"
expect_contains "$ERR" "add \`site: gadi\`" "and says what to add"
printf 'site: gadi\nproject: ab12\ncpus_per_node: 48\n' >>looks.yaml
run "$DDPJOB" validate looks.yaml
expect_lacks "$ERR" "looks like site" "with site: gadi, no such warning"
printf 'name: s\nscheduler: slurm\nnodes: 1\nworkdir: /scratch/ab12/run\ncommand: [true]\n' >slurm.yaml
run "$DDPJOB" validate slurm.yaml
expect_lacks "$ERR" "looks like site" "a Slurm spec is no PBS site's"
printf 'name: lab\nrecognise: {pbs_server: [labpbs], colour: [red]}\nqueues:\n  workq: {cores_per_node: 2}\n' >"$T/home/.config/ddpjob/sites/lab.yaml"
run env HOME="$T/home" "$DDPJOB" validate --site lab mine.yaml
expect_contains "$ERR" "lab.yaml:2:35: colour: unknown field of recognise: (pbs_server, sge_qmaster, queues, pbs_fields, paths)" \
    "a profile's recognise: takes only the fields it knows"
