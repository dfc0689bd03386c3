{{! What every node runs before its agent starts, in every template: the spec's modules (with
    the module command from the login profile where the shell lacks it), its setup, its env. }}
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
