{{! What `ddpjob run SPEC` executes with bash: the spec's node setup on this machine, then one
    standalone agent, which becomes this process so that signals reach it directly. }}
set -eo pipefail
{{#has_modules}}
if ! type module >/dev/null 2>&1; then
    # shellcheck source=/dev/null
    . /etc/profile
fi
{{/has_modules}}
{{#modules}}
module load {{module}}
{{/modules}}
{{#setup}}
{{setup}}
{{/setup}}
{{#env}}
export {{key}}={{value}}
{{/env}}
{{#workdir}}
cd -- {{workdir}}
{{/workdir}}
{{! The spec's walltime counts from now here: the checkpoint signal can be tried on one machine. }}
exec {{agent}} --standalone --nproc-per-node {{procs_per_node}} --run-id {{name_quoted}} \
    --max-restarts {{max_restarts}} --rdzv-timeout {{rendezvous_timeout}} --hang-timeout {{hang_timeout}} \
    {{#walltime_s}}--deadline +{{walltime_s}} {{/walltime_s}}{{checkpoint_args}}{{report_args}}{{worker_args}} -- {{command}}
