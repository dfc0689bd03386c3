/* store_proto: the rendezvous store's wire format, shared by its server and its client.
 *
 * A connection opens with a mutual proof of the job token: the server sends a magic string and
 * a random nonce; the client answers with its own nonce and HMAC-SHA256(token, "client" |
 * nonces); the server answers with a verdict byte, STORE_ACCEPTED then HMAC-SHA256(token,
 * "server" | nonces), or STORE_REFUSED and the end of the connection (so that a client can tell
 * a refusal from a connection dropped under load, which it may try again). A peer with another
 * token learns nothing but the server's nonce, and a client never talks to another job's store.
 *
 * Then every message is a frame: a 4-byte big-endian length and that many bytes, at most
 * STORE_MAX_FRAME. A request is an op byte and its fields; a reply is a status byte and its
 * fields. Strings are a 4-byte length and bytes; integers are 8 bytes big-endian. Requests on one
 * connection are answered in order; a WAIT holds the connection until it is answered. */
#ifndef DDP_STORE_PROTO_H
#define DDP_STORE_PROTO_H

#include <stddef.h>
#include <stdint.h>

#define STORE_MAGIC "DDPJSTO1"
#define STORE_MAGIC_LEN 8
#define STORE_NONCE_LEN 32
#define STORE_MAC_LEN 32 /* DDP_SHA256_LEN */
#define STORE_ACCEPTED 0
#define STORE_REFUSED 1
#define STORE_MAX_KEY 1024
#define STORE_MAX_VALUE (1 << 20)
#define STORE_MAX_FRAME (STORE_MAX_VALUE + 2 * STORE_MAX_KEY + 64)
#define STORE_MAX_WAIT_KEYS 64

enum store_op {
    STORE_PING = 1,
    STORE_SET,
    STORE_GET,
    STORE_ADD,
    STORE_CAS,
    STORE_WAIT,
    STORE_DEL,
    STORE_SET_ON_CLOSE, /* key, value: set when this connection closes */
    /* key: its value, then the microseconds since it was set by the server's clock, so that
     * the reader learns when a value arrived without comparing two machines' clocks */
    STORE_GET_AGED,
};

enum store_status {
    STORE_OK = 0,
    STORE_NOT_FOUND,
    STORE_TIMEOUT,
    STORE_ERROR, /* followed by a message string */
};

/* A growable output buffer; `len` bytes are valid. */
typedef struct {
    unsigned char *data;
    size_t len, cap;
} ddp_store_buf_t;

int ddp_store_buf_reserve(ddp_store_buf_t *b, size_t extra);
int ddp_store_put_u8(ddp_store_buf_t *b, uint8_t v);
int ddp_store_put_u32(ddp_store_buf_t *b, uint32_t v);
int ddp_store_put_i64(ddp_store_buf_t *b, int64_t v);
int ddp_store_put_str(ddp_store_buf_t *b, const void *s, size_t len);
/* Starts a frame (reserves its length) and finishes it (fills the length in). */
int ddp_store_frame_begin(ddp_store_buf_t *b, size_t *mark);
void ddp_store_frame_end(ddp_store_buf_t *b, size_t mark);
void ddp_store_buf_free(ddp_store_buf_t *b);

/* A bounds-checked cursor over one received frame; `bad` is set by any read past the end. */
typedef struct {
    const unsigned char *p, *end;
    int bad;
} ddp_store_reader_t;

uint8_t ddp_store_get_u8(ddp_store_reader_t *r);
uint32_t ddp_store_get_u32(ddp_store_reader_t *r);
int64_t ddp_store_get_i64(ddp_store_reader_t *r);
/* Points *s at a string inside the frame (not NUL-terminated) no longer than `max`. */
size_t ddp_store_get_str(ddp_store_reader_t *r, const unsigned char **s, size_t max);

uint32_t ddp_store_load_u32(const unsigned char *p);

/* A request as the server reads it: its operation and arguments, the strings pointing into the
 * frame. WAIT is the server's own to read (its keys are many). */
typedef struct {
    uint8_t op;
    const unsigned char *key, *val, *expected; /* NULL where the operation takes none */
    size_t key_len, val_len, expected_len;
    int64_t delta;        /* ADD */
    uint8_t has_expected; /* CAS: compare with `expected` (else: swap only if absent) */
} ddp_store_request_t;

/* Decodes a request frame's body: 0, or -1 for a malformed one (an unknown operation, a string
 * over its limit, bytes missing or left over). For STORE_WAIT only req->op is set, and *rest
 * (when not NULL) is the reader just after it. */
int ddp_store_decode_request(const unsigned char *body, size_t len, ddp_store_request_t *req,
                             ddp_store_reader_t *rest);

/* HMAC-SHA256(token, role | server_nonce | client_nonce) into mac. */
void ddp_store_auth_mac(const void *token, size_t token_len, const char *role,
                        const unsigned char *server_nonce, const unsigned char *client_nonce,
                        unsigned char mac[STORE_MAC_LEN]);

#endif
