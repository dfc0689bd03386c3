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
/* `len` bytes as base64 (RFC 4648) and a NUL into out, which holds 4 * ((len + 2) / 3) + 1
 * bytes; with `pad` the last group is filled with '=' (known_hosts keys, commands sent over SSH),
 * without it not (OpenSSH's SHA256 fingerprints). Returns the characters written. */
size_t ddp_base64(const void *bytes, size_t len, char *out, int pad);
/* 0 when equal; takes the same time wherever the first difference is. */
int ddp_equal_secret(const void *a, const void *b, size_t len);

#endif
