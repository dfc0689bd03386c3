/* shquote: spec values made safe for the generated job scripts.
 *
 * Everything a user writes in a spec reaches the script through shquote_append, so a value such
 * as `$(rm -rf ~)`, a backtick, a quote or a newline arrives in the program as those literal
 * characters and is never run. The output never spans lines: a value with a newline or other
 * control character becomes bash's $'...' form, so a command line made of them is bash's (see
 * shquote_for_any_shell). */
#ifndef DDPJOB_SHQUOTE_H
#define DDPJOB_SHQUOTE_H

#include <stdbool.h>
#include <stdio.h>

/* Writes `value` to f as one shell word (bare when it is made only of safe characters). */
void shquote_write(FILE *f, const char *value);

/* Returns a malloc'd quoted copy of value, or NULL when out of memory. */
char *shquote(const char *value);

/* A malloc'd command line that any login shell (sh and dash, bash, zsh, csh, fish) hands to bash
 * to run `command`, written in bash's own quoting ($'...' among it), exactly: the command
 * travels as base64, which no shell reads specially, and bash decodes it (coreutils' base64).
 * What an SSH server runs through the user's login shell is sent in this form. NULL when out of
 * memory. */
char *shquote_for_any_shell(const char *command);

/* The same for a command that must not show in anyone's `ps` (it carries the spec's env: and
 * setup:): the command line, which any login shell hands to bash, only reads the first line of
 * its stdin and runs it; that line is shquote_stdin_line(command), after which stdin is the
 * command's own (the job token's line, then the channel kept open). NULL when out of memory. */
char *shquote_stdin_runner(void);
/* `command` as that first line: base64 and a newline, malloc'd. */
char *shquote_stdin_line(const char *command);

/* True when value is a valid shell variable name ([A-Za-z_][A-Za-z0-9_]*). */
bool shquote_is_identifier(const char *value);

#endif
