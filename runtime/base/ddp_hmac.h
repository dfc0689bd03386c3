/* ddp_hmac: SHA-256 and HMAC-SHA256 (FIPS 180-4, RFC 2104) for the store's challenge-response.
 *
 * Self-contained so the runtime (agent, process group, ddp-train) needs nothing beyond libc and
 * builds on a GPU machine that has only the CUDA toolkit. */
#ifndef DDP_HMAC_H
#define DDP_HMAC_H

#include <stddef.h>

#define DDP_SHA256_LEN 32

void ddp_sha256(const void *data, size_t len, unsigned char out[DDP_SHA256_LEN]);
void ddp_hmac_sha256(const void *key, size_t key_len, const void *msg, size_t msg_len,
                     unsigned char out[DDP_SHA256_LEN]);
/* `len` bytes as 2*len lowercase hex digits and a NUL (tokens, nonces, digests). */
void ddp_hex(const void *bytes, size_t len, char *out);
/* 0 when equal; takes the same time wherever the first difference is. */
int ddp_equal_secret(const void *a, const void *b, size_t len);

#endif
