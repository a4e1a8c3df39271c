/*
 * An MPI program for tests/vm/clients-hpc.sh (two ranks in one guest) and
 * tests/vm/fabric.sh (a rank in each of 8 guests): a point-to-point
 * exchange between the ranks of each pair (0 and 1, 2 and 3, ...), an
 * all-to-all and collectives, every byte received checked against what
 * its sender must have put there.  Under Open MPI's UCX PML with UCX_TLS
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
/*
 * The largest size of more than two ranks, and of an all-to-all's block:
 * their messages cross a hub that gives every frame to every VM, each a
 * TCG guest on a share of the host's cores.
 */
#define SIZE_MAX_MANY   (64 << 10)
#define BLOCK_MAX       (64 << 10)

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

/*
 * All to all: the block each rank sends to each rank is its own pattern
 * for that destination, MPI_Alltoall's and then the same through
 * nonblocking sends and receives posted to every rank at once.
 */
static void alltoall(int round, size_t block)
{
    uint8_t *out = xmalloc(block * nranks), *in = xmalloc(block * nranks);
    MPI_Request *req = (MPI_Request *)xmalloc(2 * nranks * sizeof(*req));
    int r, pass;
    size_t i;

    for (r = 0; r < nranks; r++) {
        for (i = 0; i < block; i++) {
            out[r * block + i] = pattern(rank, round * 64 + r, i);
        }
    }
    for (pass = 0; pass < 2; pass++) {
        memset(in, 0, block * nranks);
        if (pass == 0) {
            MPI_Alltoall(out, (int)block, MPI_BYTE, in, (int)block, MPI_BYTE,
                         MPI_COMM_WORLD);
        } else {
            for (r = 0; r < nranks; r++) {
                MPI_Irecv(in + r * block, (int)block, MPI_BYTE, r, round + 2000,
                          MPI_COMM_WORLD, &req[r]);
            }
            for (r = 0; r < nranks; r++) {
                MPI_Isend(out + r * block, (int)block, MPI_BYTE, r,
                          round + 2000, MPI_COMM_WORLD, &req[nranks + r]);
            }
            MPI_Waitall(2 * nranks, req, MPI_STATUSES_IGNORE);
        }
        for (r = 0; r < nranks; r++) {
            for (i = 0; i < block; i++) {
                if (in[r * block + i] != pattern(r, round * 64 + rank, i)) {
                    fail(pass ? "MPI_Isend/MPI_Irecv to all" : "MPI_Alltoall",
                         block, r * block + i);
                }
            }
        }
    }
    free(out);
    free(in);
    free(req);
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
    double start;
    int len, round;
    size_t s;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (nranks < 2 || nranks % 2 || nranks > 64) {
        fprintf(stderr, "mpi-exchange: wants an even number of ranks "
                "from 2 to 64, has %d\n", nranks);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (rank == 0) {
        MPI_Get_library_version(name, &len);
        printf("mpi-exchange: %.*s\n", (int)strcspn(name, "\n"), name);
    }
    /* The checks' time, without the start-up's. */
    MPI_Barrier(MPI_COMM_WORLD);
    start = MPI_Wtime();
    for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        if (nranks > 2 && sizes[s] > SIZE_MAX_MANY) {
            break;
        }
        round = (int)s;
        exchange(round, sizes[s]);
        alltoall(round, sizes[s] < BLOCK_MAX ? sizes[s] : BLOCK_MAX);
        collectives(round, sizes[s]);
        if (rank == 0) {
            printf("mpi-exchange: %zu bytes: Sendrecv, Isend/Irecv, "
                   "Alltoall and Isend/Irecv to all (blocks of %zu), Bcast, "
                   "Allreduce verified on %d ranks\n", sizes[s],
                   sizes[s] < BLOCK_MAX ? sizes[s] : BLOCK_MAX, nranks);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        printf("mpi-exchange: all checks passed on %d ranks in %.2f s\n",
               nranks, MPI_Wtime() - start);
    }
    MPI_Finalize();
    return 0;
}
