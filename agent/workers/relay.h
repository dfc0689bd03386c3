/* relay: one worker stream (stdout or stderr) copied to the agent's own, a line at a time.
 *
 * Each complete line goes out as one write of PREFIX line\n (by default "[rank N] "; console.h),
 * so lines of ranks writing at once never tear into each other, or, for a stream kept off the
 * console, only to the log file; a line longer than RELAY_LINE_MAX is cut into lines of that
 * size, and a last line without a newline is completed at the end. With a log file, the raw
 * bytes are copied there too, and with an order file (shared by a worker's two relays) one line
 * per chunk copied, "o LEN" or "e LEN": the order the two streams' bytes arrived in, which
 * `ddpjob logs` interleaves them by. A relay can keep the last RELAY_TAIL_LINES lines that say
 * something (not blank, not a C++ backtrace frame) for the failure summary's stderr excerpt. */
#ifndef AGENT_RELAY_H
#define AGENT_RELAY_H

#include <stddef.h>

#define RELAY_LINE_MAX 65536
#define RELAY_TAIL_LINES 8
#define RELAY_TAIL_WIDTH 400
#define RELAY_PREFIX_MAX 128

typedef struct {
    int dest_fd, log_fd; /* log_fd -1: none; the relay closes it */
    int order_fd;        /* -1: none; closed by the relay that owns it */
    int owns_order;
    char stream; /* 'o' or 'e', in the order file */
    int rank;
    int console; /* lines go to dest_fd */
    char prefix[RELAY_PREFIX_MAX];
    char *line;
    size_t len;
    int keep_tail;
    char tail[RELAY_TAIL_LINES][RELAY_TAIL_WIDTH];
    size_t tail_count; /* lines ever kept; the newest is at (tail_count - 1) % RELAY_TAIL_LINES */
} relay_t;

int relay_init(relay_t *r, int dest_fd, int log_fd, int rank, const char *prefix, int console,
               int keep_tail);
/* The order file both of a worker's relays note their chunks in; `owns`: this one closes it. */
void relay_set_order(relay_t *r, int order_fd, char stream, int owns);
void relay_feed(relay_t *r, const char *data, size_t len);
/* Emits a pending partial line; called when the stream ends. */
void relay_flush(relay_t *r);
/* The kept lines, oldest first: *count of them, each a NUL-terminated string. */
const char *relay_tail_line(const relay_t *r, size_t i, size_t *count);
void relay_free(relay_t *r);

#endif
