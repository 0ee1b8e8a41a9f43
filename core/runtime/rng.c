/* The process-wide state of the counter-based random generator.
 *
 * The generator is Philox4x32-10 (portable/philox.h): a call drawing n
 * elements gets (seed, counter) and then advances the counter by n, which
 * covers every block the call uses for both f32 (n/4 blocks) and f64 (n/2).
 * Each backend computes element i from (seed, counter, i) alone, so the same
 * sequence of calls gives the same bits everywhere.
 *
 * A graph capture draws nothing from this state: its random ops get
 * counters relative to the capture's start (capture.c), and each replay
 * takes the whole step's draw from here at once (graph.c), so replays draw
 * exactly what eager steps would. */
#include <pthread.h>

#include "runtime/runtime.h"

#define PT__DEFAULT_SEED 0x5eedULL

static pthread_mutex_t rng_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t rng_seed = PT__DEFAULT_SEED;
static uint64_t rng_counter = 0;

uint64_t pt__rng_advance(uint64_t n, uint64_t *seed) {
    pthread_mutex_lock(&rng_lock);
    *seed = rng_seed;
    uint64_t c = rng_counter;
    rng_counter += n;
    pthread_mutex_unlock(&rng_lock);
    return c;
}

uint64_t pt__rng_take(uint64_t n, uint64_t *seed) {
    uint64_t c = pt__rng_advance(pt__capture_now ? 0 : n, seed);
    return pt__capture_now ? pt__capture_rng_take(n) : c;
}

void pt__rng_reseed(uint64_t seed) {
    pthread_mutex_lock(&rng_lock);
    rng_seed = seed;
    rng_counter = 0;
    pthread_mutex_unlock(&rng_lock);
}
