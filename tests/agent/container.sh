#!/bin/bash
# Workers in a container on one node: `ddpjob run` with the real enroot (built by the install
# step into /opt/enroot) and the real Charliecloud (Debian's ch-run), in images this test makes
# from the machine's own files: every rank runs inside (a marker only the image has), sees its
# torchrun variables and the spec's env, writes into the bound workdir and its progress file; a
# failure is named as without a container, and nothing of the container is left (no enroot,
# squashfuse or ch-run process). Then validate's errors for the container: block.
. "$SRCDIR/tests/lib/agents.sh"
. "$SRCDIR/tests/lib/images.sh"

enroot_bin=$(image_enroot_path) || { fail "enroot is installed in /opt/enroot (scripts/install-test-deps.sh builds it)" "no /opt/enroot/bin/enroot"; exit 1; }
command -v ch-run >/dev/null || { fail "Charliecloud's ch-run is installed (charliecloud-runtime)" "no ch-run"; exit 1; }
image_root "$T/root"
image_sqsh "$T/root" "$T/image.sqsh"
mkdir -p "$T/work"
export PATH=$enroot_bin:$PATH USER=${USER:-root}

# RUNTIME IMAGE [:ro]: a two-worker spec in RUNTIME's container.
container_spec() {
    cat >"$T/$1.yaml" <<YAML
name: in-$1
nodes: 1
procs_per_node: 2
workdir: $T/work
env: {GREETING: "hello from the spec", PYTHONPATH: /opt/inside}
container:
  runtime: $1
  image: $2
  mounts: ["$T/root/etc:/hostetc${3:-}"]
command: 'cat /etc/ddpjob-image; echo "rank=\$RANK/\$WORLD_SIZE master=\$MASTER_ADDR:\$MASTER_PORT local=\$LOCAL_RANK greeting=\$GREETING dir=\$(pwd) pythonpath=\$PYTHONPATH mounted=\$(ls /hostetc | grep -c ddpjob-image)"; echo 7 >"\$DDPJOB_PROGRESS_FILE"; echo "\$RANK" >"written-by-\$RANK"; [ "\$RANK" != "\${FAIL_RANK:-none}" ] || exit 3; [ -z "\${FAIL_RANK:-}" ] || exec sleep 60'
YAML
}

for runtime in enroot charliecloud; do
    if [ "$runtime" = enroot ]; then
        container_spec enroot "$T/image.sqsh" :ro
    else # ch-run binds read-write only; it is given the mount point the image lacks
        container_spec charliecloud "$T/root"
    fi
    rm -f "$T/work"/written-by-*
    run env DDPJ_TESTMARK="$MARK" "$DDPJOB" run "$T/$runtime.yaml"
    expect_eq "$RC" 0 "$runtime: a two-worker job in the image exits 0"
    expect_eq "$(grep -c '^\[rank [01]\] inside the test.s image' <<<"$OUT")" 2 "$runtime: both ranks ran inside the image"
    expect_contains "$OUT" "[rank 1] rank=1/2 master=127.0.0.1:" "$runtime: the torchrun variables reach the program"
    expect_contains "$OUT" "local=1 greeting=hello from the spec dir=$T/work pythonpath=/opt/inside mounted=1" \
        "$runtime: the spec's env (PYTHONPATH too), the workdir and the spec's mount"
    expect_file "$T/work/written-by-1" "$runtime: the program wrote into the bound workdir"
    run env DDPJ_TESTMARK="$MARK" FAIL_RANK=1 "$DDPJOB" run "$T/$runtime.yaml"
    expect_eq "$RC" 3 "$runtime: rank 1 exiting 3 is the job's status"
    expect_contains "$ERR" "job failed (exit 3): rank 1 (node 0, host $(hostname), local rank 1) exited with code 3" \
        "$runtime: the summary names rank 1 and its code, as without a container"
    expect_contains "$ERR" "rank 0 (node 0, host $(hostname), local rank 0) stopped by the agent" \
        "$runtime: and the other rank was stopped"
    expect_no_leftovers "$runtime: nothing of the job or its container is left running"
done
expect_eq "$(grep -c squashfuse /proc/mounts)" 0 "no squashfuse mount is left"

# A Slurm spec that names no runtime takes pyxis under sbatch; `ddpjob run` starts no srun, so
# it takes enroot, pyxis's own, and says so (it once took apptainer without a word).
sed -e '/^  runtime: enroot$/d' -e '1a scheduler: slurm' "$T/enroot.yaml" >"$T/no-runtime.yaml"
run env DDPJ_TESTMARK="$MARK" "$DDPJOB" run "$T/no-runtime.yaml"
expect_eq "$RC" 0 "a Slurm spec whose container names no runtime runs under ddpjob run" "$ERR"
expect_contains "$ERR" "container.runtime: note: not given, and pyxis (what the job's scheduler takes) runs only under srun: \`ddpjob run\` and \`launch\` run the image with enroot" \
    "saying it takes enroot, and why"
expect_eq "$(grep -c '^\[rank [01]\] inside the test.s image' <<<"$OUT")" 2 "both ranks ran inside the image"

# A slow rank inside the container is named as without one: rank 1 busy with a loop each step,
# rank 0 only sleeping (the busy time per step is the worker's process group's, from /proc).
run env DDPJ_TESTMARK="$MARK" "$AGENT" --standalone --nproc-per-node 2 --heartbeat 0.5 \
    --slow-window 4 --slow-factor 2 --container-runtime enroot --container-image "$T/image.sqsh" \
    sh -c 'i=0; while [ $i -lt 40 ]; do i=$((i + 1)); n=0; [ "$RANK" = 0 ] || while [ $n -lt 20000 ]; do n=$((n + 1)); done; sleep 0.2; echo $i >"$DDPJOB_PROGRESS_FILE"; done'
# On a loaded machine the first window may find it late but not yet busier (said as waiting);
# a later one then says "slower still: busy".
if grep -qE "rank 1 \(node 0, host $(hostname), local rank 1\) is slow(er still)?: busy " <<<"$ERR"; then
    pass "a slow rank inside the image is named, and busy"
else
    fail "a slow rank inside the image is named, and busy" "$ERR"
fi
# (A starved machine may make the sleeping rank late to its steps: never busy.)
expect_lacks "$ERR" "rank 0 (node 0, host $(hostname), local rank 0) is slow: busy" "and the other is never called busy"

# A restarted attempt starts its workers in the image again (enroot: no container name to meet).
sed 's/^procs_per_node: 2/procs_per_node: 2\nmax_restarts: 1/' "$T/enroot.yaml" >"$T/restart.yaml"
sed -i "s#^command: .*#command: 'cat /etc/ddpjob-image; echo \"attempt \$TORCHELASTIC_RESTART_COUNT\"; [ \"\$TORCHELASTIC_RESTART_COUNT\" = 1 ] || [ \"\$RANK\" = 0 ] || exit 4'#" "$T/restart.yaml"
run env DDPJ_TESTMARK="$MARK" "$DDPJOB" run "$T/restart.yaml"
expect_eq "$RC" 0 "a rank that fails in the first attempt, then succeeds: the restarted job exits 0"
expect_eq "$(grep -c "^\[rank 1\] inside the test's image" <<<"$OUT")" 2 "rank 1 ran inside the image in both attempts"
expect_contains "$OUT" "[rank 1] attempt 1" "the second attempt's"
expect_no_leftovers "nothing left after the restart"

# A GPU job whose container sees no GPU (none here, and no nvidia-smi in the image) fails at once,
# naming the image, the runtime and what it said.
sed 's/^procs_per_node: 2/procs_per_node: 1\ngpus_per_node: 1/' "$T/enroot.yaml" >"$T/gpu.yaml"
run env DDPJ_TESTMARK="$MARK" "$DDPJOB" run "$T/gpu.yaml"
expect_eq "$RC" 1 "a GPU job whose container sees no GPU fails"
expect_contains "$ERR" "container: a GPU job, but the image $T/image.sqsh (enroot) sees no GPU: nvidia-smi -L inside it exited 127" \
    "naming the image, the runtime and nvidia-smi's answer"
expect_lacks "$OUT" "inside the test's image" "before any worker started"

# A missing image or runtime fails the job at once, naming them.
sed "s#image: $T/image.sqsh#image: $T/missing.sqsh#" "$T/enroot.yaml" >"$T/missing.yaml"
run env DDPJ_TESTMARK="$MARK" "$DDPJOB" run "$T/missing.yaml"
expect_eq "$RC" 1 "a missing image fails the job"
expect_contains "$ERR" "container image $T/missing.sqsh (enroot): No such file or directory" "naming image, runtime and why"
run env DDPJ_TESTMARK="$MARK" PATH=/usr/bin:/bin "$DDPJOB" run "$T/enroot.yaml"
expect_eq "$RC" 1 "a runtime that is not installed fails the job"
expect_contains "$ERR" "container: the enroot runtime's program enroot is not on PATH here" "naming it"
expect_no_leftovers "nothing left after the failed starts"

# Out of memory inside the container, in a real memory cgroup (the agent's, which the runtime and
# the program inside share): named as without a container, with the group and its limit.
# shellcheck source=../lib/cgroup.sh
. "$SRCDIR/tests/lib/cgroup.sh"
in_cgroup_script "$T/in_cgroup"
if mem_cgroup_make "ddpjob-test-$$" 128M; then
    at_exit "cgroup_remove $CGROUP"
    cat >"$T/oom.yaml" <<YAML
name: oom
nodes: 1
procs_per_node: 2
workdir: $T/work
container: {runtime: enroot, image: $T/image.sqsh}
command: 'if [ "\$RANK" = 1 ]; then exec dd if=/dev/zero of=/dev/null bs=512M count=1; fi; exec sleep 60'
YAML
    run env DDPJ_TESTMARK="$MARK" "$T/in_cgroup" "$CGROUP" "$DDPJOB" run "$T/oom.yaml"
    expect_eq "$RC" 137 "a worker killed by the OOM killer inside the image: the job exits 128+9"
    expect_contains "$ERR" "job failed (exit 137): rank 1 (node 0, host $(hostname), local rank 1) killed by the out-of-memory killer: its memory cgroup's limit 128 MiB was reached (/ddpjob-test-$$" \
        "the summary names the OOM kill, the rank, the group and its limit, as without a container"
    expect_no_leftovers "nothing left after the OOM kill in the container"
else
    fail "a memory cgroup to run an agent in" "$CGROUP_WHY"
fi

# stage: jobfs copies the image to the node's local disk ($PBS_JOBFS, else $TMPDIR) once, before
# the workers, which run it from there; the copy is gone at the end. A folder that cannot take it
# fails the job, naming it.
mkdir -p "$T/jobfs"
sed 's/^container:/container:\n  stage: jobfs/' "$T/enroot.yaml" >"$T/staged.yaml"
run env DDPJ_TESTMARK="$MARK" TMPDIR="$T/jobfs" "$DDPJOB" run "$T/staged.yaml"
expect_eq "$RC" 0 "stage: jobfs: the job runs from the staged copy"
expect_contains "$ERR" "container: the image is staged to $T/jobfs/ddpjob-image." "said where"
expect_eq "$(grep -c "inside the test's image" <<<"$OUT")" 2 "both ranks ran inside it"
expect_eq "$(ls -A "$T/jobfs")" "" "the staged copy is removed at the end"
sed -i "s#stage: jobfs#stage: $T/no-such-folder#" "$T/staged.yaml"
run env DDPJ_TESTMARK="$MARK" "$DDPJOB" run "$T/staged.yaml"
expect_eq "$RC" 1 "staging into a folder that is not there fails the job"
expect_contains "$ERR" "container: staging into $T/no-such-folder: No such file or directory" "naming it"

# An image the runtime cannot start: the job fails with the runtime's own message.
echo "not a squashfs image" >"$T/corrupt.sqsh"
sed "s#image: $T/image.sqsh#image: $T/corrupt.sqsh#" "$T/enroot.yaml" >"$T/corrupt.yaml"
run env DDPJ_TESTMARK="$MARK" "$DDPJOB" run "$T/corrupt.yaml"
expect_eq "$RC" 1 "an image enroot cannot start fails the job"
expect_contains "$ERR" "| [ERROR] Invalid argument: $T/corrupt.sqsh" "the summary quotes enroot's own message"
expect_no_leftovers "nothing left after the failed container start"

# ddpjob doctor's facts (the agent's preflight only): the runtime's version, the image's size and
# a digest of its first MiB, and the python inside the image (this one has none).
run env DDPJ_TESTMARK="$MARK" "$AGENT" --standalone --preflight only --container-runtime enroot \
    --container-image "$T/image.sqsh" python3
expect_contains "$ERR" "container runtime  enroot 4." "doctor names the runtime and its version"
expect_contains "$ERR" "container image    $T/image.sqsh: $(stat -c %s "$T/image.sqsh") bytes, first MiB " \
    "and the image, its size and digest"
expect_contains "$ERR" "python3: not found" "the python is looked for inside the image"

# validate: each problem named at its place.
cat >"$T/bad.yaml" <<YAML
name: bad
scheduler: slurm
nodes: 1
container:
  runtime: docker
  image: /x.sqsh
command: [true]
YAML
run "$DDPJOB" validate "$T/bad.yaml"
expect_eq "$RC" 1 "an unknown runtime is refused"
expect_contains "$ERR" "bad.yaml:5:12: container.runtime: expected pyxis or enroot or apptainer or singularity or charliecloud, got \"docker\"" \
    "listing the known ones"
cat >"$T/bad.yaml" <<YAML
name: bad
scheduler: pbs
nodes: 1
container:
  runtime: enroot
  image: images/x.sif
  mounts: [data, "/a:/b:rw", "/a,b:/c"]
command: [true]
YAML
run "$DDPJOB" validate "$T/bad.yaml"
expect_contains "$ERR" "bad.yaml:6:10: container.image: \"images/x.sif\": give an absolute path" "a relative image"
expect_contains "$ERR" "container.mounts: \"data\": expected SRC[:DST[:ro]] with absolute paths" "a mount that is not SRC[:DST[:ro]]"
expect_contains "$ERR" "container.mounts: \"/a:/b:rw\": the only option after DST is ro" "an unknown mount option"
expect_contains "$ERR" "container.mounts: \"/a,b:/c\": expected" "a comma in a mount (pyxis's separator)"
sed -i 's#images/x.sif#/images/x.sif#' "$T/bad.yaml"
run "$DDPJOB" validate "$T/bad.yaml"
expect_contains "$ERR" "container.image: \"/images/x.sif\" is not what enroot runs: it takes a squashfs file (.sqsh or .squashfs)" \
    "an image of the wrong kind for the runtime"
sed -i 's/runtime: enroot/runtime: charliecloud/; s#/images/x.sif#/images/x#; s/^  mounts:.*/  stage: jobfs/' "$T/bad.yaml"
run "$DDPJOB" validate "$T/bad.yaml"
expect_contains "$ERR" "container.stage: charliecloud's image is a folder: only image files are staged" \
    "stage: with charliecloud"
sed -i 's/runtime: charliecloud/runtime: pyxis/; s#/images/x$#/images/x.sqsh#; /stage:/d' "$T/bad.yaml"
run "$DDPJOB" validate "$T/bad.yaml"
expect_contains "$ERR" "container.runtime: pyxis is srun's (--container-image); it starts the agent inside the image: this job is PBS's" \
    "pyxis under PBS"
run "$DDPJOB" run "$T/bad.yaml"
expect_contains "$ERR" "\`ddpjob run\` and \`launch\` start no srun" "pyxis under ddpjob run"
sed -i '/runtime: pyxis/d; /mounts:/d; s#/images/x.sqsh#/images/x.sif#; s/^scheduler: pbs/scheduler: pbs\nsite: gadi\nproject: ab12/' "$T/bad.yaml"
run "$DDPJOB" render "$T/bad.yaml" --bindir /opt/ddpjob/bin
expect_contains "$OUT" "--container-runtime singularity --container-image /images/x.sif" \
    "no runtime under the Gadi profile: its singularity"
sed -i 's/^site: gadi//; s/^scheduler: pbs/scheduler: slurm/; s#/images/x.sif#/images/x.sqsh#' "$T/bad.yaml"
run "$DDPJOB" render "$T/bad.yaml" --bindir /opt/ddpjob/bin
expect_contains "$OUT" "--container-image=/images/x.sqsh" "no runtime under Slurm: pyxis"
cat >"$T/train.yaml" <<YAML
name: train
scheduler: slurm
nodes: 1
container: {runtime: enroot, image: /images/x.sqsh}
train: {synthetic: true, epochs: 1, checkpoint_dir: /scratch/me/ckpt}
YAML
run "$DDPJOB" render "$T/train.yaml" --bindir /opt/ddpjob/bin
expect_contains "$OUT" "--container-image /images/x.sqsh --container-mount /scratch/me" \
    "a train: run's checkpoint folder is bound without being named (its parent, there before it)"
