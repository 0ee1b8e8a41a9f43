/* Sharded data: one permutation per epoch, the same on every rank (a
 * seeded Fisher-Yates), and each rank's interleaved share of it, like
 * torch.utils.data.DistributedSampler. */
#include "dist_internal.h"

/* splitmix64: a small, well-mixed generator; the same sequence everywhere. */
static uint64_t next(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

pt_status pt_dist_permutation(int64_t n, uint64_t seed, int64_t *out) {
    if (n < 0 || (n > 0 && !out))
        return pt_set_error(PT_ERR_INVALID_ARGUMENT, "pt_dist_permutation", "n is %lld and out is %s",
                            (long long)n, out ? "set" : "NULL");
    for (int64_t i = 0; i < n; ++i) out[i] = i;
    uint64_t state = seed;
    for (int64_t i = n - 1; i > 0; --i) {
        int64_t j = (int64_t)(next(&state) % (uint64_t)(i + 1));
        int64_t t = out[i];
        out[i] = out[j];
        out[j] = t;
    }
    return PT_OK;
}

int64_t pt_dist_shard(const pt_dist *g, int64_t n, uint64_t seed, int64_t *out, int64_t cap) {
    static const char fn[] = "pt_dist_shard";
    if (!g || n < 1 || cap < 0 || (cap > 0 && !out)) {
        pt_set_error(PT_ERR_INVALID_ARGUMENT, fn, "group %s, n %lld, cap %lld, out %s (n must be >= 1)",
                     g ? "set" : "NULL", (long long)n, (long long)cap, out ? "set" : "NULL");
        return -1;
    }
    int64_t *perm = malloc((size_t)n * sizeof *perm);
    if (!perm) {
        pt_set_error(PT_ERR_OUT_OF_MEMORY, fn, "out of host memory for %lld indices", (long long)n);
        return -1;
    }
    pt_dist_permutation(n, seed, perm);
    int64_t count = (n + g->size - 1) / g->size;
    for (int64_t k = 0; k < count && k < cap; ++k) out[k] = perm[(k * g->size + g->rank) % n];
    free(perm);
    return count;
}
