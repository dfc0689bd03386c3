#!/bin/bash
# The README's first command: install, build, install ddpjob, and run the main job on this
# machine: the bundled local-ddp example (two PyTorch DDP workers over gloo) under `ddpjob run`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
meson install -C build --quiet >/dev/null
for spec in share/examples/*.yaml; do
    ddpjob validate "$spec"
done
cd share/examples
echo "===== ddpjob run local-ddp.yaml ====="
exec ddpjob run local-ddp.yaml
