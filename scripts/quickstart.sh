#!/bin/bash
# The README's first command: install, build, install ddpjob, and run the main job on this
# machine: the bundled train-synthetic example (the built-in workload, ddp-train, with two CPU
# workers on synthetic data, printing its epochs) under `ddpjob run`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
meson install -C build --quiet >/dev/null
for spec in share/examples/*.yaml; do
    ddpjob validate "$spec"
done
# Run where the checkpoints can land without touching the source tree.
run_dir=$(mktemp -d)
cp share/examples/train-synthetic.yaml "$run_dir"
cd "$run_dir"
echo "===== ddpjob run train-synthetic.yaml (in $PWD) ====="
exec ddpjob run train-synthetic.yaml
