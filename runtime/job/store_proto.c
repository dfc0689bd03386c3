#include "runtime/job/store_proto.h"

#include <stdlib.h>
#include <string.h>

#include "runtime/base/ddp_hmac.h"

int ddp_store_buf_reserve(ddp_store_buf_t *b, size_t extra)
{
    if (b->len + extra <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra)
        cap *= 2;
    unsigned char *data = realloc(b->data, cap);
    if (!data)
        return -1;
    b->data = data;
    b->cap = cap;
    return 0;
}

int ddp_store_put_u8(ddp_store_buf_t *b, uint8_t v)
{
    if (ddp_store_buf_reserve(b, 1))
        return -1;
    b->data[b->len++] = v;
    return 0;
}

static void store_u32_at(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

int ddp_store_put_u32(ddp_store_buf_t *b, uint32_t v)
{
    if (ddp_store_buf_reserve(b, 4))
        return -1;
    store_u32_at(b->data + b->len, v);
    b->len += 4;
    return 0;
}

int ddp_store_put_i64(ddp_store_buf_t *b, int64_t v)
{
    uint64_t u = (uint64_t)v;
    return ddp_store_put_u32(b, (uint32_t)(u >> 32)) || ddp_store_put_u32(b, (uint32_t)u) ? -1 : 0;
}

int ddp_store_put_str(ddp_store_buf_t *b, const void *s, size_t len)
{
    if (ddp_store_put_u32(b, (uint32_t)len) || ddp_store_buf_reserve(b, len))
        return -1;
    if (len)
        memcpy(b->data + b->len, s, len);
    b->len += len;
    return 0;
}

int ddp_store_frame_begin(ddp_store_buf_t *b, size_t *mark)
{
    *mark = b->len;
    return ddp_store_put_u32(b, 0);
}

void ddp_store_frame_end(ddp_store_buf_t *b, size_t mark)
{
    store_u32_at(b->data + mark, (uint32_t)(b->len - mark - 4));
}

void ddp_store_buf_free(ddp_store_buf_t *b)
{
    free(b->data);
    *b = (ddp_store_buf_t){0};
}

uint32_t ddp_store_load_u32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

uint8_t ddp_store_get_u8(ddp_store_reader_t *r)
{
    if (r->bad || r->end - r->p < 1) {
        r->bad = 1;
        return 0;
    }
    return *r->p++;
}

uint32_t ddp_store_get_u32(ddp_store_reader_t *r)
{
    if (r->bad || r->end - r->p < 4) {
        r->bad = 1;
        return 0;
    }
    uint32_t v = ddp_store_load_u32(r->p);
    r->p += 4;
    return v;
}

int64_t ddp_store_get_i64(ddp_store_reader_t *r)
{
    uint64_t hi = ddp_store_get_u32(r);
    uint64_t lo = ddp_store_get_u32(r);
    return (int64_t)(hi << 32 | lo);
}

size_t ddp_store_get_str(ddp_store_reader_t *r, const unsigned char **s, size_t max)
{
    uint32_t len = ddp_store_get_u32(r);
    if (r->bad || len > max || (size_t)(r->end - r->p) < len) {
        r->bad = 1;
        *s = NULL;
        return 0;
    }
    *s = r->p;
    r->p += len;
    return len;
}

void ddp_store_auth_mac(const void *token, size_t token_len, const char *role,
                        const unsigned char *server_nonce, const unsigned char *client_nonce,
                        unsigned char mac[STORE_MAC_LEN])
{
    unsigned char msg[16 + 2 * STORE_NONCE_LEN];
    size_t role_len = strlen(role);
    memcpy(msg, role, role_len);
    memcpy(msg + role_len, server_nonce, STORE_NONCE_LEN);
    memcpy(msg + role_len + STORE_NONCE_LEN, client_nonce, STORE_NONCE_LEN);
    ddp_hmac_sha256(token, token_len, msg, role_len + 2 * STORE_NONCE_LEN, mac);
}

int ddp_store_decode_request(const unsigned char *body, size_t len, ddp_store_request_t *req,
                             ddp_store_reader_t *rest)
{
    ddp_store_reader_t r = {.p = body, .end = body + len};
    *req = (ddp_store_request_t){.op = ddp_store_get_u8(&r)};
    switch (req->op) {
    case STORE_WAIT:
        if (rest)
            *rest = r;
        return r.bad ? -1 : 0;
    case STORE_PING:
        break;
    case STORE_SET:
    case STORE_SET_ON_CLOSE:
        req->key_len = ddp_store_get_str(&r, &req->key, STORE_MAX_KEY);
        req->val_len = ddp_store_get_str(&r, &req->val, STORE_MAX_VALUE);
        break;
    case STORE_GET:
    case STORE_GET_AGED:
    case STORE_DEL:
        req->key_len = ddp_store_get_str(&r, &req->key, STORE_MAX_KEY);
        break;
    case STORE_ADD:
        req->key_len = ddp_store_get_str(&r, &req->key, STORE_MAX_KEY);
        req->delta = ddp_store_get_i64(&r);
        break;
    case STORE_CAS:
        req->key_len = ddp_store_get_str(&r, &req->key, STORE_MAX_KEY);
        req->has_expected = ddp_store_get_u8(&r);
        req->expected_len = ddp_store_get_str(&r, &req->expected, STORE_MAX_VALUE);
        req->val_len = ddp_store_get_str(&r, &req->val, STORE_MAX_VALUE);
        break;
    default:
        return -1;
    }
    return r.bad || r.p != r.end ? -1 : 0;
}
