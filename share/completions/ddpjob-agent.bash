# bash completion for ddpjob-agent: its options, and the words an option takes, come from its
# own --help (made from its one option table), so they never drift.
_ddpjob_agent() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]} i words
    # After the program (the first word that is not an option or an option's value), complete files.
    for ((i = 1; i < COMP_CWORD; i++)); do
        case ${COMP_WORDS[i]} in
        --) mapfile -t COMPREPLY < <(compgen -f -- "$cur"); return ;;
        esac
    done
    case $prev in
    --token-file | --log-dir | --log_dir | --error-file | --python) mapfile -t COMPREPLY < <(compgen -f -- "$cur"); return ;;
    --checkpoint-signal) mapfile -t COMPREPLY < <(compgen -W "USR1 USR2 TERM INT HUP" -- "$cur"); return ;;
    --*)
        # "  --preflight report|strict|only  ..." in --help: the words between the bars (not a
        # placeholder such as N).
        words=$("${COMP_WORDS[0]}" --help 2>/dev/null |
            sed -n "s/^  \(-., \)\{0,1\}${prev//_/-} \([A-Za-z0-9-]*|[a-z0-9|-]*\) .*/\2/p" |
            tr '|' '\n' | grep -v '^[A-Z]*$')
        if [ -n "$words" ]; then
            mapfile -t COMPREPLY < <(compgen -W "$words" -- "$cur")
            return
        fi
        ;;
    esac
    if [ "${cur#-}" != "$cur" ]; then
        mapfile -t COMPREPLY < <(compgen -W "$("${COMP_WORDS[0]}" --help 2>/dev/null | grep -o -- '--[a-z][a-z_-]*' | sort -u)" -- "$cur")
    else
        mapfile -t COMPREPLY < <(compgen -f -- "$cur")
    fi
}
complete -o filenames -F _ddpjob_agent ddpjob-agent
