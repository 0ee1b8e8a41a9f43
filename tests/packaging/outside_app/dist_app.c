/* An application linking libportable-dist (portable::dist, portable-dist.pc)
 * from outside the tree. It needs no MPI headers of its own and runs without
 * a launcher: the sample permutation every rank shares must be one of
 * 0..n-1, the same for the same seed, and a NULL group must be refused. */
#include <portable/dist.h>
#include <stdio.h>
#include <string.h>

int main(void) {
    enum { N = 100 };
    int64_t a[N], b[N];
    int seen[N];
    memset(seen, 0, sizeof seen);
    if (pt_dist_permutation(N, 42, a) != PT_OK || pt_dist_permutation(N, 42, b) != PT_OK) {
        fprintf(stderr, "dist_app: %s\n", pt_last_error());
        return 1;
    }
    for (int i = 0; i < N; ++i) {
        if (a[i] < 0 || a[i] >= N || seen[a[i]]++ || a[i] != b[i]) {
            fprintf(stderr, "dist_app: entry %d is %lld: not a repeatable permutation\n", i, (long long)a[i]);
            return 1;
        }
    }
    if (pt_dist_rank(NULL) != -1 || pt_dist_permutation(-1, 0, a) != PT_ERR_INVALID_ARGUMENT) {
        fprintf(stderr, "dist_app: bad arguments were accepted\n");
        return 1;
    }
    printf("dist_app: libportable-dist linked, permutation of %d ok\n", N);
    return 0;
}
