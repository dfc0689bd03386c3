/* console: which of a worker's streams reach the agent's console, and with what prefix: torchrun's
 * --redirects and --tee (STREAMS: 0 none, 1 stdout, 2 stderr, 3 both; or per local rank,
 * "0:1,1:2"), --local-ranks-filter ("0,2": only these local ranks on the console) and its
 * TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE (${rank}, ${local_rank}, ${role_name}; "" for no prefix).
 * A redirected stream goes to its log file only; a teed one to both, also where it is redirected
 * too, as torchrun's (`--redirect=3 --tee=3` shows both streams). The agent's log files always
 * hold both streams, so tee alone adds nothing beyond asking for them. */
#ifndef AGENT_CONSOLE_H
#define AGENT_CONSOLE_H

#include <stddef.h>

#include "runtime/base/ddp_error.h"

#define CONSOLE_STDOUT 1
#define CONSOLE_STDERR 2

/* The default prefix, "[rank N] ", as a template. */
#define CONSOLE_PREFIX_DEFAULT "[rank ${rank}] "

/* Checks a STREAMS value (what_option names it in the error). */
int console_check_streams(const char *spec, const char *what_option, ddp_error_t *err);
/* The streams spec names for local rank lr (0 when it names none for it). spec may be NULL. */
int console_streams_for(const char *spec, int lr);
/* Checks a --local-ranks-filter value: local ranks separated by commas. */
int console_check_filter(const char *spec, ddp_error_t *err);
/* Whether local rank lr passes the filter (NULL: every rank does). */
int console_filter_passes(const char *spec, int lr);
/* The prefix for a worker, from template (NULL: CONSOLE_PREFIX_DEFAULT), into buf. */
void console_prefix(const char *template, int rank, int local_rank, char *buf, size_t size);

#endif
