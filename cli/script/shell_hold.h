/* shell_hold: how every script ddpjob writes reaches the job's own folders in a workdir others
 * may write (a team's project folder: group-writable, no sticky bit), as the bash function
 * ddpjob_hold_dir. One text, rendered into the job scripts (the batch_shell partial's
 * {{hold_dir_function}}), a sweep's array script and each pbsdsh task's shell.
 *
 *   ddpjob_hold_dir VAR DIR
 *
 * opens DIR and holds it (a descriptor of the shell's, inherited by what it starts on this host),
 * checks on that hold that it is a folder of this user's that group and others cannot write, and
 * sets VAR to a path through the hold (/dev/fd/N). A member of the group who renames .ddpjob and
 * plants a folder of their own under its name is refused, and what was held is reached whatever
 * is renamed after. On failure it calls ddpjob_fail MESSAGE, which the including script defines. */
#ifndef DDPJOB_SHELL_HOLD_H
#define DDPJOB_SHELL_HOLD_H

extern const char shell_hold_dir_function[];

#endif
