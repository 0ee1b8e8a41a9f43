/* The embedding lookup's backward pass on the cpu at a GPT-2 table (V =
 * 50257 rows of D = 768) for N = 256 and 4096 positions, against PyTorch
 * CPU's in the same run: pt_backward of sum(pt_f_embedding(idx, W) * g)
 * against torch's .backward() of the same graph, each timed alone (the
 * forward pass built before the clock starts, the gradient dropped after
 * it stops, so every run writes a fresh [V, D]). The index draw is Zipf-like
 * (text's repeats; each side draws its own indices from the same
 * distribution, exponent 1.2). PyTorch runs in a python3 child (Debian's,
 * with torch) fed over a pipe, so the two alternate round by round under
 * the same load;
 * each round times `reps` runs and the median round counts. Prints a
 * markdown table with the ratio; without torch, libportable's column only.
 * No assertions: numbers are for people.
 *
 *   bench_embedding [rounds] [reps] */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "portable/portable.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The child: reads "setup V N D SEED" (answers "ready") and "run REPS"
 * (answers the seconds of REPS timed backward passes). */
static const char torch_worker[] =
    "import sys, time\n"
    "import numpy as np, torch, torch.nn.functional as F\n"
    "for line in sys.stdin:\n"
    "    w = line.split()\n"
    "    if w[0] == 'setup':\n"
    "        v, n, d, seed = map(int, w[1:])\n"
    "        rng = np.random.default_rng(seed)\n"
    "        idx = torch.tensor(np.minimum(rng.zipf(1.2, size=n) - 1, v - 1))\n"
    "        weight = torch.tensor(rng.uniform(-1, 1, size=(v, d)).astype(np.float32), requires_grad=True)\n"
    "        g = torch.tensor(rng.uniform(-1, 1, size=(n, d)).astype(np.float32))\n"
    "        print('ready', torch.get_num_threads(), flush=True)\n"
    "    elif w[0] == 'run':\n"
    "        total = 0.0\n"
    "        for _ in range(int(w[1])):\n"
    "            loss = (F.embedding(idx, weight) * g).sum()\n"
    "            t = time.perf_counter(); loss.backward(); total += time.perf_counter() - t\n"
    "            weight.grad = None\n"
    "        print(total, flush=True)\n";

typedef struct worker {
    pid_t pid;
    FILE *to, *from;
} worker;

static bool worker_start(worker *w) {
    int down[2], up[2];
    if (pipe(down) || pipe(up)) return false;
    w->pid = fork();
    if (w->pid < 0) return false;
    if (w->pid == 0) {
        dup2(down[0], 0);
        dup2(up[1], 1);
        close(down[1]);
        close(up[0]);
        execl("/usr/bin/python3", "python3", "-c", torch_worker, (char *)NULL);
        _exit(127);
    }
    close(down[0]);
    close(up[1]);
    w->to = fdopen(down[1], "w");
    w->from = fdopen(up[0], "r");
    return w->to && w->from;
}

/* Sends one line and reads the answer's first line into buf. */
static bool worker_ask(worker *w, const char *line, char *buf, size_t cap) {
    if (!w->to || fputs(line, w->to) < 0 || fflush(w->to)) return false;
    return fgets(buf, (int)cap, w->from) != NULL;
}

static void worker_stop(worker *w) {
    if (w->to) fclose(w->to); /* end of input: the child's loop ends */
    if (w->from) fclose(w->from);
    if (w->pid > 0) waitpid(w->pid, NULL, 0);
}

/* A Zipf-like draw over [0, v): rank r picked with weight 1 / (r + 1)^1.2
 * (inverse-transform sampling of the continuous tail, clamped to v - 1). */
static void zipf_indices(int64_t *idx, int64_t n, int64_t v, uint64_t *s) {
    for (int64_t i = 0; i < n; ++i) {
        *s = *s * 6364136223846793005ull + 1442695040888963407ull;
        const double u = ((double)(*s >> 11) + 0.5) / 9007199254740992.0;
        const double r = pow(u, -1.0 / 0.2) - 1.0; /* P(R >= r) = (1 + r)^-0.2 */
        idx[i] = r >= (double)(v - 1) ? v - 1 : (int64_t)r;
    }
}

/* Seconds of reps backward passes of sum(f_embedding(idx, weight) * g). */
static double pt_round(pt_tensor *idx, pt_tensor *weight, pt_tensor *g, int reps) {
    double total = 0;
    for (int r = 0; r < reps; ++r) {
        pt_scope s = pt_scope_begin();
        pt_tensor *loss = pt_sum(pt_mul(pt_f_embedding(idx, weight), g), PT_ALL, false);
        const double t = now();
        if (!loss || pt_backward(loss) != PT_OK) {
            fprintf(stderr, "bench_embedding: %s\n", pt_last_error());
            exit(1);
        }
        total += now() - t;
        pt_scope_end(s);
        pt_zero_grad(weight);
    }
    return total;
}

int main(int argc, char **argv) {
    const int rounds = argc > 1 ? atoi(argv[1]) : 7, reps = argc > 2 ? atoi(argv[2]) : 3;
    if (rounds < 1 || reps < 1) {
        fprintf(stderr, "usage: bench_embedding [rounds >= 1] [reps >= 1]\n");
        return 2;
    }
    pt_device *cpu = pt_cpu();
    if (!cpu) {
        fprintf(stderr, "bench_embedding: no cpu device: %s\n", pt_last_error());
        return 1;
    }
    worker w = {0};
    char line[256], answer[256];
    const bool torch = worker_start(&w);
    const int64_t v = 50257, d = 768, ns[2] = {256, 4096};
    printf("## Embedding backward on the cpu: V = %lld, D = %lld, f32, Zipf-drawn indices\n\n", (long long)v,
           (long long)d);
    printf("Median of %d alternated rounds of %d backward passes each (ms per pass).\n\n", rounds, reps);
    printf("| N | libportable (ms) | PyTorch CPU (ms) | PyTorch / libportable |\n|---|---|---|---|\n");
    double *mine = malloc(sizeof(double) * (size_t)rounds), *theirs = malloc(sizeof(double) * (size_t)rounds);
    float *wv = malloc(sizeof(float) * (size_t)(v * d));
    for (int k = 0; k < 2; ++k) {
        const int64_t n = ns[k], ws[2] = {v, d}, is[1] = {n}, gs[2] = {n, d};
        uint64_t seed = 2024 + (uint64_t)k;
        int64_t *iv = malloc(sizeof(int64_t) * (size_t)n);
        float *gv = malloc(sizeof(float) * (size_t)(n * d));
        zipf_indices(iv, n, v, &seed);
        for (int64_t i = 0; i < v * d; ++i) wv[i] = (float)((double)(i % 1999) / 1999.0 - 0.5);
        for (int64_t i = 0; i < n * d; ++i) gv[i] = (float)((double)(i % 997) / 997.0 - 0.5);
        pt_tensor *idx = pt_from_data(cpu, PT_I64, 1, is, iv), *weight = pt_from_data(cpu, PT_F32, 2, ws, wv);
        pt_tensor *g = pt_from_data(cpu, PT_F32, 2, gs, gv);
        if (!idx || !weight || !g || pt_set_requires_grad(weight, true) != PT_OK) {
            fprintf(stderr, "bench_embedding: %s\n", pt_last_error());
            return 1;
        }
        snprintf(line, sizeof line, "setup %lld %lld %lld %llu\n", (long long)v, (long long)n, (long long)d,
                 (unsigned long long)seed);
        bool have_torch = torch && worker_ask(&w, line, answer, sizeof answer) && strncmp(answer, "ready", 5) == 0;
        pt_round(idx, weight, g, 1); /* warm-up: first touches, thread start */
        snprintf(line, sizeof line, "run 1\n");
        if (have_torch) have_torch = worker_ask(&w, line, answer, sizeof answer);
        snprintf(line, sizeof line, "run %d\n", reps);
        for (int r = 0; r < rounds; ++r) {
            mine[r] = pt_round(idx, weight, g, reps) / reps;
            if (have_torch && worker_ask(&w, line, answer, sizeof answer)) theirs[r] = atof(answer) / reps;
            else have_torch = false;
        }
        qsort(mine, (size_t)rounds, sizeof(double), cmp_double);
        qsort(theirs, (size_t)rounds, sizeof(double), cmp_double);
        const double m = mine[rounds / 2], t = theirs[rounds / 2];
        if (have_torch)
            printf("| %lld | %.2f | %.2f | %.2f |\n", (long long)n, 1e3 * m, 1e3 * t, t / m);
        else
            printf("| %lld | %.2f | - (no torch: /usr/bin/python3 -c 'import torch' failed) | - |\n", (long long)n,
                   1e3 * m);
        pt_release(idx);
        pt_release(weight);
        pt_release(g);
        free(iv);
        free(gv);
    }
    worker_stop(&w);
    free(mine);
    free(theirs);
    free(wv);
    return 0;
}
