/* term_text: what a job printed, shown on a terminal as text only. A rank's output (its logs, a
 * relayed `logs --on`) may hold escape sequences, its own or planted in its data, that a terminal
 * would act on (retitle the window, recolour it, move the cursor, answer back): on a terminal
 * every control character but tab and newline is shown as cat -v shows it (ESC as ^[); into a
 * file or a pipe the bytes pass as they are. */
#ifndef DDPJOB_TERM_TEXT_H
#define DDPJOB_TERM_TEXT_H

#include <stddef.h>
#include <stdio.h>

/* Writes len bytes of text to out, made safe where out is a terminal. */
void term_text_write(FILE *out, const char *text, size_t len);

#endif
