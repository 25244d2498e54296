# bash completion for clgrad. Nothing is listed here: the commands come from
# `clgrad --help` and each command's options (and the values a usage line spells out,
# as in [--precision float32|mixed|mixed-bf16]) from `clgrad CMD --help`, read as you
# complete, so that they always match the clgrad being run.

# The commands `clgrad --help` lists: "  NAME   summary" lines after "commands:".
_clgrad_commands()
{
    "$1" --help 2>/dev/null | sed -n '/^commands:$/,/^$/s/^  \([a-z][a-z0-9-]*\) .*/\1/p'
}

# What follows option $2 in the help text $1, where it first appears ("--out CKPT",
# "--dtype f32|f64"); nothing for a flag ("[--graph]").
_clgrad_option_argument()
{
    printf '%s\n' "$1" | grep -oE -- "(^|[[ ])$2 [^] ]+" | head -n 1 | sed 's/.* //'
}

_clgrad()
{
    local prog=${COMP_WORDS[0]} cur=${COMP_WORDS[COMP_CWORD]}
    COMPREPLY=()
    if [ "$COMP_CWORD" -eq 1 ]; then
        COMPREPLY=($(compgen -W "$(_clgrad_commands "$prog") --help --version" -- "$cur"))
        return 0
    fi
    local cmd=${COMP_WORDS[1]} prev=${COMP_WORDS[COMP_CWORD - 1]} help
    help=$("$prog" "$cmd" --help 2>/dev/null) || return 0
    if [[ $prev == --* ]]; then
        local arg words="" files=0 alt
        arg=$(_clgrad_option_argument "$help" "$prev")
        if [ -n "$arg" ]; then
            local IFS='|'
            for alt in $arg; do
                if [[ $alt =~ ^[a-z][a-z0-9-]*$ ]]; then
                    words="$words $alt"                   # a value spelled out
                elif [[ $alt =~ FILE|DIR|CKPT|PATH|CSV|\. ]]; then
                    files=1                               # a placeholder for a path
                fi
            done
            unset IFS
            COMPREPLY=($(compgen -W "$words" -- "$cur"))
            if [ "$files" -eq 1 ]; then
                compopt -o filenames 2>/dev/null
                COMPREPLY+=($(compgen -f -- "$cur"))
            fi
            return 0
        fi
    fi
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$(printf '%s\n--help\n' "$help" | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u)" \
                     -- "$cur"))
    else
        compopt -o filenames 2>/dev/null
        COMPREPLY=($(compgen -f -- "$cur"))             # model files, checkpoints, inputs
    fi
    return 0
}
complete -F _clgrad clgrad
