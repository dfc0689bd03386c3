#include "cli/script/shell_hold.h"

/* stat and id are in /usr/bin, on the bare PATH a pbsdsh task starts with. */
const char shell_hold_dir_function[] =
    "ddpjob_hold_dir() {\n"
    "    local fd facts\n"
    "    exec {fd}<\"$2\" || ddpjob_fail \"cannot open the folder $2 on $(hostname)\"\n"
    "    facts=$(stat -L -c '%u %F %a' \"/dev/fd/$fd\") || ddpjob_fail \"cannot stat $2 on "
    "$(hostname)\"\n"
    "    if [ \"${facts% *}\" != \"$(id -u) directory\" ] || (((8#${facts##* } & 8#022) != 0)); "
    "then\n"
    "        ddpjob_fail \"refusing $2 on $(hostname): not a folder of this user's own that others "
    "cannot write ($(stat -L -c '%U, mode %a' \"/dev/fd/$fd\"))\"\n"
    "    fi\n"
    "    printf -v \"$1\" /dev/fd/%s \"$fd\"\n"
    "}\n";
