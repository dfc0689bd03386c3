# bash completion for ddpjob-agent: its options come from its own --help, so they never drift.
_ddpjob_agent() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]} i
    # After the program (the first word that is not an option or an option's value), complete files.
    for ((i = 1; i < COMP_CWORD; i++)); do
        case ${COMP_WORDS[i]} in
        --) mapfile -t COMPREPLY < <(compgen -f -- "$cur"); return ;;
        esac
    done
    case $prev in
    --token-file | --log-dir | --error-file | --python) mapfile -t COMPREPLY < <(compgen -f -- "$cur"); return ;;
    --nproc-per-node | --nproc_per_node) mapfile -t COMPREPLY < <(compgen -W "gpu auto" -- "$cur"); return ;;
    --checkpoint-signal) mapfile -t COMPREPLY < <(compgen -W "USR1 USR2 TERM INT HUP" -- "$cur"); return ;;
    --rdzv-backend | --rdzv_backend) mapfile -t COMPREPLY < <(compgen -W "c10d static" -- "$cur"); return ;;
    --preflight) mapfile -t COMPREPLY < <(compgen -W "report strict only" -- "$cur"); return ;;
    esac
    if [ "${cur#-}" != "$cur" ]; then
        mapfile -t COMPREPLY < <(compgen -W "$("${COMP_WORDS[0]}" --help 2>/dev/null | grep -o -- '--[a-z][a-z_-]*' | sort -u)" -- "$cur")
    else
        mapfile -t COMPREPLY < <(compgen -f -- "$cur")
    fi
}
complete -o filenames -F _ddpjob_agent ddpjob-agent
