/* shquote: spec values made safe for the generated job scripts.
 *
 * Everything a user writes in a spec reaches the script through shquote_append, so a value such
 * as `$(rm -rf ~)`, a backtick, a quote or a newline arrives in the program as those literal
 * characters and is never run. The output never spans lines: a value with a newline or other
 * control character becomes bash's $'...' form. */
#ifndef DDPJOB_SHQUOTE_H
#define DDPJOB_SHQUOTE_H

#include <stdbool.h>
#include <stdio.h>

/* Writes `value` to f as one shell word (bare when it is made only of safe characters). */
void shquote_write(FILE *f, const char *value);

/* Returns a malloc'd quoted copy of value, or NULL when out of memory. */
char *shquote(const char *value);

/* True when value is a valid shell variable name ([A-Za-z_][A-Za-z0-9_]*). */
bool shquote_is_identifier(const char *value);

#endif
