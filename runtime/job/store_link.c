#include "runtime/job/store_link.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "runtime/base/ddp_portable.h"

#define LINK_HEADER (1 + 8 + 4)
/* Read at most this much per call, so one busy link cannot starve the others. */
#define LINK_READ_CHUNK (1u << 20)

int store_link_put(store_link_t *l, store_link_kind_t kind, uint64_t id, const void *data,
                   size_t len)
{
    if (len > LINK_MAX_BODY || ddp_store_put_u8(&l->out, (uint8_t)kind) ||
        ddp_store_put_i64(&l->out, (int64_t)id) || ddp_store_put_u32(&l->out, (uint32_t)len) ||
        ddp_store_buf_reserve(&l->out, len))
        return -1;
    if (len)
        memcpy(l->out.data + l->out.len, data, len);
    l->out.len += len;
    return 0;
}

int store_link_put_data(store_link_t *l, uint64_t id, const void *data, size_t len)
{
    const unsigned char *p = data;
    while (len) {
        size_t n = len < LINK_MAX_BODY ? len : LINK_MAX_BODY;
        if (store_link_put(l, LINK_DATA, id, p, n))
            return -1;
        p += n;
        len -= n;
    }
    return 0;
}

int store_link_flush(store_link_t *l)
{
    while (l->out_sent < l->out.len) {
        ssize_t n = send(l->fd, l->out.data + l->out_sent, l->out.len - l->out_sent,
                         DDP_MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return errno == EAGAIN ? 0 : -1;
        }
        l->out_sent += (size_t)n;
    }
    l->out.len = l->out_sent = 0;
    return 0;
}

size_t store_link_unsent(const store_link_t *l)
{
    return l->out.len - l->out_sent;
}

int store_link_read(store_link_t *l)
{
    if (l->in_used) {
        memmove(l->in.data, l->in.data + l->in_used, l->in.len - l->in_used);
        l->in.len -= l->in_used;
        l->in_used = 0;
    }
    size_t got = 0;
    while (got < LINK_READ_CHUNK) {
        if (ddp_store_buf_reserve(&l->in, 65536))
            return -1;
        ssize_t n = recv(l->fd, l->in.data + l->in.len, l->in.cap - l->in.len, MSG_DONTWAIT);
        if (n == 0)
            return -1;
        if (n < 0)
            return errno == EAGAIN || errno == EINTR ? 0 : -1;
        l->in.len += (size_t)n;
        got += (size_t)n;
    }
    return 0;
}

int store_link_next(store_link_t *l, store_link_msg_t *m)
{
    ddp_store_reader_t r = {l->in.data + l->in_used, l->in.data + l->in.len, 0};
    if ((size_t)(r.end - r.p) < LINK_HEADER)
        return 0;
    m->kind = ddp_store_get_u8(&r);
    m->id = (uint64_t)ddp_store_get_i64(&r);
    m->len = ddp_store_get_u32(&r);
    if (m->kind < LINK_OPEN || m->kind > LINK_LOG || m->len > LINK_MAX_BODY)
        return -1;
    if ((size_t)(r.end - r.p) < m->len)
        return 0;
    m->data = r.p;
    l->in_used += LINK_HEADER + m->len;
    return 1;
}

void store_link_free(store_link_t *l)
{
    if (l->fd >= 0)
        close(l->fd);
    l->fd = -1;
    ddp_store_buf_free(&l->in);
    ddp_store_buf_free(&l->out);
    l->in_used = l->out_sent = 0;
}
