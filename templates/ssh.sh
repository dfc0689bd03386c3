{{! What `ddpjob launch SPEC` runs on each host over SSH, as
      bash -c SCRIPT ddpjob-launch NODE_RANK NNODES MASTER_ADDR MASTER_PORT RUN_ID NPROC
    The job token comes as the first line on stdin (never on a command line or in a file), then
    the spec's node setup, then this node's agent. The head closing stdin (Ctrl-C there, or the
    connection dropped) stops the agent, which stops the job. }}
set -eo pipefail
IFS= read -r DDPJOB_TOKEN
export DDPJOB_TOKEN
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
{{agent}} --node-rank "$1" --nnodes "$2" --master-addr "$3" --master-port "$4" --run-id "$5" \
    --nproc-per-node "$6" --max-restarts {{max_restarts}} --rdzv-timeout {{rendezvous_timeout}} \
    --hang-timeout {{hang_timeout}} {{#walltime_s}}--deadline +{{walltime_s}} {{/walltime_s}}{{checkpoint_args}}{{report_args}}{{worker_args}} \
    -- {{command}} </dev/null &
agent=$!
# A background list's stdin would be /dev/null: the channel's is handed over explicitly.
{ while IFS= read -r _; do :; done; kill -TERM "$agent" 2>/dev/null; } <&0 &
watch=$!
set +e
wait "$agent"
status=$?
kill "$watch" 2>/dev/null
exit "$status"
