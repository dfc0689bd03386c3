#include "agent/workers/relay.h"

#include "agent/workers/output.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void write_all(int fd, const char *p, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return; /* our own output is gone (closed pipe): nothing sensible is left to do */
        }
        p += n;
        len -= (size_t)n;
    }
}

int relay_init(relay_t *r, int dest_fd, int log_fd, int rank, const char *prefix, int console,
               int keep_tail)
{
    memset(r, 0, sizeof *r);
    r->dest_fd = dest_fd;
    r->log_fd = log_fd;
    r->order_fd = -1;
    r->keep_tail = keep_tail;
    r->rank = rank;
    r->console = console;
    snprintf(r->prefix, sizeof r->prefix, "%s", prefix);
    r->line = malloc(sizeof r->prefix + RELAY_LINE_MAX + 1);
    return r->line ? 0 : -1;
}

/* Whether a stderr line says something about the failure. Blank lines and the frames of a C++
 * backtrace are not kept: PyTorch's NCCL watchdog ends a process that hit a CUDA error with the
 * error and then two backtraces, which would otherwise fill the whole excerpt. */
static int says_something(const char *text, size_t len)
{
    size_t lead = 0;
    while (lead < len && (text[lead] == ' ' || text[lead] == '\t'))
        lead++;
    if (lead == len)
        return 0;
    text += lead;
    len -= lead;
    size_t digits = 0;
    if (len > 7 && !memcmp(text, "frame #", 7))
        while (7 + digits < len && text[7 + digits] >= '0' && text[7 + digits] <= '9')
            digits++;
    if (digits && 7 + digits < len && text[7 + digits] == ':')
        return 0;
    static const char backtrace_head[] = "(most recent call first):";
    size_t head = sizeof backtrace_head - 1;
    return !(len > 22 + head && !memcmp(text, "Exception raised from ", 22) &&
             !memcmp(text + len - head, backtrace_head, head));
}

/* Writes the line held in r->line (after room for the prefix) and forgets it. */
static void emit(relay_t *r)
{
    size_t plen = strlen(r->prefix);
    char *start = r->line + sizeof r->prefix - plen;
    memcpy(start, r->prefix, plen);
    char *text = r->line + sizeof r->prefix;
    text[r->len] = '\n';
    if (r->console)
        output_write(r->dest_fd, r->rank, start, plen + r->len + 1);
    if (r->keep_tail && says_something(text, r->len)) {
        char *slot = r->tail[r->tail_count++ % RELAY_TAIL_LINES];
        size_t n = r->len < RELAY_TAIL_WIDTH - 1 ? r->len : RELAY_TAIL_WIDTH - 1;
        memcpy(slot, text, n);
        slot[n] = '\0';
    }
    r->len = 0;
}

void relay_set_order(relay_t *r, int order_fd, char stream, int owns)
{
    r->order_fd = order_fd;
    r->stream = stream;
    r->owns_order = owns;
}

void relay_feed(relay_t *r, const char *data, size_t len)
{
    if (r->log_fd >= 0) {
        write_all(r->log_fd, data, len);
        if (r->order_fd >= 0)
            dprintf(r->order_fd, "%c %zu\n", r->stream, len);
    }
    char *text = r->line + sizeof r->prefix;
    while (len > 0) {
        const char *nl = memchr(data, '\n', len);
        size_t take = nl ? (size_t)(nl - data) : len;
        if (take > RELAY_LINE_MAX - r->len)
            take = RELAY_LINE_MAX - r->len;
        memcpy(text + r->len, data, take);
        r->len += take;
        data += take;
        len -= take;
        if (len > 0 && *data == '\n') {
            data++;
            len--;
            emit(r);
        } else if (r->len == RELAY_LINE_MAX) {
            emit(r);
        }
    }
}

void relay_flush(relay_t *r)
{
    if (r->len)
        emit(r);
}

const char *relay_tail_line(const relay_t *r, size_t i, size_t *count)
{
    size_t kept = r->tail_count < RELAY_TAIL_LINES ? r->tail_count : RELAY_TAIL_LINES;
    if (count)
        *count = kept;
    if (i >= kept)
        return NULL;
    return r->tail[(r->tail_count - kept + i) % RELAY_TAIL_LINES];
}

void relay_free(relay_t *r)
{
    if (r->log_fd >= 0)
        close(r->log_fd);
    if (r->owns_order && r->order_fd >= 0)
        close(r->order_fd);
    free(r->line);
    r->line = NULL;
    r->log_fd = r->order_fd = -1;
}
