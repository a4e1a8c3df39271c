/*
 * An MPI program for tests/vm/clients-hpc.sh: two ranks, a point-to-point
 * exchange and collectives, every byte received checked against what its
 * sender must have put there.  Under Open MPI's UCX PML with UCX_TLS
 * limited to the verbs transports, the messages travel as RDMA: small ones
 * eagerly as SENDs, large ones by rendezvous (RDMA READ or WRITE).
 *
 * Built on the host by scripts/build-clients (the guest has no compiler)
 * against Open MPI's C ABI (libmpi.so.40, which Open MPI 4.1 and 5.0
 * share), position independent so that no copy relocation fixes the size
 * of Open MPI's predefined objects at link time.
 *
 * Prints one line per check; exits 0 if every check of every rank passed,
 * else MPI_Abort()s with 1.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Sizes in bytes: eager, the largest eager-ish, and rendezvous. */
static const size_t sizes[] = { 8, 4096, 65536, 1 << 20, 8 << 20 };

/* The byte a rank puts at offset i of a message of round r. */
static uint8_t pattern(int rank, int round, size_t i)
{
    uint32_t x = (uint32_t)(i * 2654435761u) ^ (uint32_t)(rank * 40503 + round);

    return (uint8_t)(x ^ (x >> 13) ^ (x >> 24));
}

static int rank, nranks;

static void fail(const char *what, size_t size, size_t at)
{
    fprintf(stderr, "mpi-exchange: rank %d: %s, %zu bytes: wrong data at %zu\n",
            rank, what, size, at);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

static uint8_t *xmalloc(size_t size)
{
    uint8_t *p = malloc(size);

    if (!p) {
        fprintf(stderr, "mpi-exchange: rank %d: out of memory\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return p;
}

/* Point to point: each rank sends its pattern to the other and checks the
 * other's; MPI_Sendrecv and a nonblocking pair, so both orders happen. */
static void exchange(int round, size_t size)
{
    int peer = rank ^ 1;
    uint8_t *out = xmalloc(size), *in = xmalloc(size);
    MPI_Request req[2];
    size_t i;

    for (i = 0; i < size; i++) {
        out[i] = pattern(rank, round, i);
    }
    memset(in, 0, size);
    MPI_Sendrecv(out, (int)size, MPI_BYTE, peer, round,
                 in, (int)size, MPI_BYTE, peer, round,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (i = 0; i < size; i++) {
        if (in[i] != pattern(peer, round, i)) {
            fail("MPI_Sendrecv", size, i);
        }
    }
    memset(in, 0, size);
    MPI_Irecv(in, (int)size, MPI_BYTE, peer, round + 1000, MPI_COMM_WORLD,
              &req[0]);
    MPI_Isend(out, (int)size, MPI_BYTE, peer, round + 1000, MPI_COMM_WORLD,
              &req[1]);
    MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
    for (i = 0; i < size; i++) {
        if (in[i] != pattern(peer, round, i)) {
            fail("MPI_Isend/MPI_Irecv", size, i);
        }
    }
    free(out);
    free(in);
}

/* Collectives: a broadcast of rank 0's pattern, and a sum over the ranks
 * of per-rank integers whose result every rank can compute alone. */
static void collectives(int round, size_t size)
{
    size_t n = size / sizeof(int64_t), i;
    uint8_t *buf = xmalloc(size);
    int64_t *mine = (int64_t *)xmalloc(n * sizeof(int64_t));
    int64_t *sum = (int64_t *)xmalloc(n * sizeof(int64_t));
    int r;

    for (i = 0; i < size; i++) {
        buf[i] = rank == 0 ? pattern(0, round, i) : 0;
    }
    MPI_Bcast(buf, (int)size, MPI_BYTE, 0, MPI_COMM_WORLD);
    for (i = 0; i < size; i++) {
        if (buf[i] != pattern(0, round, i)) {
            fail("MPI_Bcast", size, i);
        }
    }
    for (i = 0; i < n; i++) {
        mine[i] = (int64_t)i * (rank + 1) + round;
    }
    MPI_Allreduce(mine, sum, (int)n, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    for (i = 0; i < n; i++) {
        int64_t want = 0;

        for (r = 0; r < nranks; r++) {
            want += (int64_t)i * (r + 1) + round;
        }
        if (sum[i] != want) {
            fail("MPI_Allreduce", size, i * sizeof(int64_t));
        }
    }
    free(buf);
    free(mine);
    free(sum);
}

int main(int argc, char **argv)
{
    char name[MPI_MAX_LIBRARY_VERSION_STRING];
    int len, round;
    size_t s;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (nranks != 2) {
        fprintf(stderr, "mpi-exchange: wants 2 ranks, has %d\n", nranks);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (rank == 0) {
        MPI_Get_library_version(name, &len);
        printf("mpi-exchange: %.*s\n", (int)strcspn(name, "\n"), name);
    }
    for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        round = (int)s;
        exchange(round, sizes[s]);
        collectives(round, sizes[s]);
        if (rank == 0) {
            printf("mpi-exchange: %zu bytes: Sendrecv, Isend/Irecv, Bcast, "
                   "Allreduce verified\n", sizes[s]);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        printf("mpi-exchange: all checks passed on %d ranks\n", nranks);
    }
    MPI_Finalize();
    return 0;
}
