/* libFuzzer target: a request frame's body, as the store server decodes it
 * (ddp_store_decode_request). What it accepts must lie inside the frame and within the limits;
 * ASan/UBSan abort on any read outside it. */
#include <stdint.h>
#include <stdlib.h>

#include "runtime/job/store_proto.h"

static void inside(const uint8_t *data, size_t size, const unsigned char *s, size_t len)
{
    if (s && (s < data || s + len > data + size))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ddp_store_request_t q;
    ddp_store_reader_t rest;
    if (ddp_store_decode_request(data, size, &q, &rest))
        return 0;
    if (q.key_len > STORE_MAX_KEY || q.val_len > STORE_MAX_VALUE ||
        q.expected_len > STORE_MAX_VALUE)
        abort();
    inside(data, size, q.key, q.key_len);
    inside(data, size, q.val, q.val_len);
    inside(data, size, q.expected, q.expected_len);
    return 0;
}
