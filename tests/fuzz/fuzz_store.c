/* libFuzzer target: request frames from a client that has the token, over loopback to a real
 * store server (started once, in this process). Each input goes down a fresh connection, then a
 * SET and GET of a random marker; the reply carrying the marker (or the connection closing, or
 * 10 ms without a reply, for an input that parks a WAIT or leaves a frame open) ends the input.
 * The server must survive every input:
 * ASan/UBSan abort on memory or arithmetic errors in its thread. */
#define _GNU_SOURCE
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "runtime/base/ddp_clock.h"
#include "runtime/base/ddp_file.h"
#include "runtime/base/ddp_net.h"
#include "runtime/job/store_proto.h"
#include "runtime/job/store_server.h"

static const char token[] = "fuzz-token";
static ddp_store_server_t *server;

/* A connection that has proven the token; -1 on failure. */
static int authenticated(int port)
{
    ddp_error_t err;
    int fd = ddp_net_connect("127.0.0.1", port, ddp_deadline_in(1000), &err);
    unsigned char hello[STORE_MAGIC_LEN + STORE_NONCE_LEN], answer[STORE_NONCE_LEN + STORE_MAC_LEN];
    unsigned char mac[1 + STORE_MAC_LEN];
    if (fd < 0)
        return -1;
    memset(answer, 1, STORE_NONCE_LEN);
    if (ddp_net_read_full(fd, hello, sizeof hello, ddp_deadline_in(1000), &err) == 0) {
        ddp_store_auth_mac(token, sizeof token - 1, "client", hello + STORE_MAGIC_LEN, answer,
                           answer + STORE_NONCE_LEN);
        if (ddp_net_write_full(fd, answer, sizeof answer, ddp_deadline_in(1000), &err) == 0 &&
            ddp_net_read_full(fd, mac, sizeof mac, ddp_deadline_in(1000), &err) == 0)
            return fd;
    }
    close(fd);
    return -1;
}

static void put_request(ddp_store_buf_t *b, int op, const void *val, size_t len)
{
    size_t mark;
    static const char key[] = "fuzz/marker";
    if (ddp_store_frame_begin(b, &mark) || ddp_store_put_u8(b, (uint8_t)op) ||
        ddp_store_put_str(b, key, sizeof key - 1) || (val && ddp_store_put_str(b, val, len)))
        abort();
    ddp_store_frame_end(b, mark);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ddp_error_t err;
    if (!server && !(server = ddp_store_server_start("127.0.0.1", 0, token, sizeof token - 1, 0,
                                                     NULL, NULL, &err)))
        abort();
    int fd = authenticated(ddp_store_server_port(server));
    if (fd < 0)
        abort(); /* the server stopped serving */
    unsigned char marker[16];
    ddp_random(marker, sizeof marker);
    ddp_store_buf_t tail = {0};
    put_request(&tail, STORE_SET, marker, sizeof marker);
    put_request(&tail, STORE_GET, NULL, 0);
    if (ddp_net_write_full(fd, data, size, ddp_deadline_in(10), &err) == 0 &&
        ddp_net_write_full(fd, tail.data, tail.len, ddp_deadline_in(10), &err) == 0) {
        static unsigned char seen[1 << 20];
        size_t have = 0;
        int64_t deadline = ddp_deadline_in(10);
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        while (have < sizeof seen && poll(&pfd, 1, ddp_ms_left(deadline)) > 0) {
            ssize_t n = recv(fd, seen + have, sizeof seen - have, MSG_DONTWAIT);
            if (n <= 0)
                break;
            have += (size_t)n;
            if (memmem(seen, have, marker, sizeof marker))
                break;
        }
    }
    ddp_store_buf_free(&tail);
    close(fd);
    return 0;
}
