/* Open MPI MPI_Allreduce timing, the other anchor for ddp-train's tcp backend.
 *   mpirun -np N allreduce_mpi BUDGET SIZE...   (rank 0 prints `bytes seconds_per_op`)
 * Out of place, float32 sum, like `ddp-train bench`; iterations per size as in allreduce.sh. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static long iterations(long budget, long size)
{
    long n = budget / size;
    return n < 5 ? 5 : n > 200 ? 200 : n;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    long budget = atol(argv[1]);
    for (int a = 2; a < argc; a++) {
        long size = atol(argv[a]), count = size / 4, n = iterations(budget, size);
        float *send = malloc((size_t)size), *recv = malloc((size_t)size);
        for (long i = 0; i < count; i++)
            send[i] = 1.0f;
        for (long i = 0; i < (n / 4 > 2 ? n / 4 : 2); i++)
            MPI_Allreduce(send, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        double start = MPI_Wtime();
        for (long i = 0; i < n; i++)
            MPI_Allreduce(send, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        double spent = (MPI_Wtime() - start) / (double)n, slowest;
        MPI_Reduce(&spent, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (rank == 0)
            printf("%ld %.9f\n", size, slowest);
        fflush(stdout);
        free(send);
        free(recv);
    }
    MPI_Finalize();
    return 0;
}
