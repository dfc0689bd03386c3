/* ddp-train hello: the tutorials' first message-passing program. Rank 0 sends each other rank a
 * tensor holding that rank's number; each receiver checks it. */
#include <stdio.h>
#include <string.h>

#include "runtime/train/commands/commands.h"

#define HELLO_COUNT 4

int cmd_hello(int argc, char **argv)
{
    session_options_t so = {0};
    if (session_parse(&argc, argv, &so) || session_no_arguments("hello", argc, argv))
        return 2;
    pg_t *pg = session_open("hello", &so);
    if (!pg)
        return 1;
    ddp_error_t err;
    int rank = pg_rank(pg), size = pg_size(pg), status = 0;
    float host[HELLO_COUNT];
    float *tensor = pg_alloc(pg, sizeof host, &err);
    if (!tensor) {
        fprintf(stderr, "ddp-train hello: rank %d: %s\n", rank, err.msg);
        return session_close("hello", pg, 1);
    }
    if (rank == 0) {
        for (int dst = 1; dst < size && !status; dst++) {
            for (int i = 0; i < HELLO_COUNT; i++)
                host[i] = (float)dst;
            status = pg_copy_in(pg, tensor, host, sizeof host, &err) ||
                     pg_send(pg, tensor, HELLO_COUNT, PG_FLOAT32, dst, &err);
            if (!status)
                printf("Rank 0 sent data to Rank %d\n", dst);
        }
        if (size == 1)
            printf("Rank 0 is alone in the world: nobody to send to\n");
    } else {
        status = pg_recv(pg, tensor, HELLO_COUNT, PG_FLOAT32, 0, &err) ||
                 pg_copy_out(pg, host, tensor, sizeof host, &err);
        for (int i = 0; i < HELLO_COUNT && !status; i++)
            if (host[i] != (float)rank)
                status = ddp_error_set(&err, "received %g at [%d], expected %d", host[i], i, rank);
        if (!status)
            printf("Rank %d has received data from rank 0\n", rank);
    }
    fflush(stdout);
    if (status)
        fprintf(stderr, "ddp-train hello: rank %d: %s\n", rank, err.msg);
    pg_free(pg, tensor);
    return session_close("hello", pg, status ? 1 : 0);
}
