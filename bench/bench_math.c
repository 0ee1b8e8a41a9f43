/* Transcendental element-wise ops (cpu backend) against NumPy and PyTorch,
 * one thread, measured in one run.
 *
 * exp, log, tanh, sigmoid, sin and cos of 1M f32 elements (log of values in
 * [0.01, 100], the others of values in [-5, 5]), each call allocating its
 * result from the library's cache. NumPy's figure is the faster of np.exp(x)
 * (a fresh 4 MB result, page faults included) and np.exp(x, out=y) (none),
 * so allocation never counts against NumPy. NumPy has no sigmoid: its column
 * times 1/(1+np.exp(-x)) and the same four passes in place. PyTorch (torch.sigmoid etc.) where
 * installed, with torch.set_num_threads(1).
 *
 * The machine is shared and its speed drifts, so the contenders alternate:
 * each round times every op in libportable, then runs one python3 (PT_PYTHON,
 * else /usr/bin/python3)
 * that times the same ops in NumPy and PyTorch. A round's figure for an op is
 * the best of 3 repetitions of 10 calls (mean per call); the table shows the
 * best and the median over the rounds, and the ratios of the medians.
 *
 * One thread, pinned: the process binds itself to one core (the second if
 * there are two or more, like taskset -c 1) before anything starts, and
 * OMP_NUM_THREADS=1 and OPENBLAS_NUM_THREADS=1 are set for the cpu plugin
 * (loaded later, by pt_cpu) and for python. A benchmark prints numbers; it
 * asserts nothing. The heading names the vector ISA each contender ran.
 *
 *   bench_math [--rounds N] */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "portable/portable.h"

#define N_ELEMS (1 << 20)
#define MAX_ROUNDS 31

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void die(const char *what) {
    fprintf(stderr, "bench_math: %s: %s\n", what, pt_last_error());
    exit(1);
}

typedef struct op {
    const char *name;
    pt_tensor *(*fn)(pt_tensor *);
    int positive; /* input in [0.01, 100] instead of [-5, 5] */
    const char *numpy, *numpy_out, *torch; /* python statements on x (numpy_out: into y) */
} op;

static const op ops[] = {
    {"exp", pt_exp, 0, "np.exp(x)", "np.exp(x,out=y)", "torch.exp(x)"},
    {"log", pt_log, 1, "np.log(x)", "np.log(x,out=y)", "torch.log(x)"},
    {"tanh", pt_tanh, 0, "np.tanh(x)", "np.tanh(x,out=y)", "torch.tanh(x)"},
    {"sigmoid", pt_sigmoid, 0, "1/(1+np.exp(-x))",
     "np.negative(x,out=y);np.exp(y,out=y);np.add(y,1,out=y);np.reciprocal(y,out=y)",
     "torch.sigmoid(x)"},
    {"sin", pt_sin, 0, "np.sin(x)", "np.sin(x,out=y)", "torch.sin(x)"},
    {"cos", pt_cos, 0, "np.cos(x)", "np.cos(x,out=y)", "torch.cos(x)"},
};
#define N_OPS ((int)(sizeof ops / sizeof *ops))

/* The python side of one round: one line per op, "numpy_s torch_s" (torch -1
 * when not installed). Same inputs, same timing rule as ours. */
static const char *python_round =
    "import timeit,numpy as np\n"
    "try:\n import torch; torch.set_num_threads(1)\nexcept Exception: torch=None\n"
    "rng=np.random.default_rng(1)\n"
    "xs=[rng.uniform(-5,5,%d).astype(np.float32), rng.uniform(0.01,100,%d).astype(np.float32)]\n"
    "def t(f):\n return min(timeit.repeat(f,globals=globals(),number=10,repeat=3))/10\n"
    "y=np.empty(%d,np.float32)\n"
    "for ne,no,te,pos in %s:\n"
    " x=xs[pos]\n"
    " a=min(t(ne),t(no))\n"
    " if torch is not None:\n  x=torch.from_numpy(x); b=t(te)\n"
    " else: b=-1\n"
    " print(a,b)\n";

/* The python that runs NumPy and PyTorch: PT_PYTHON (a machine whose
 * PyTorch lives in a virtual environment), else Debian's. */
static const char *python(void) {
    const char *p = getenv("PT_PYTHON");
    return p && *p && strlen(p) < 1000 ? p : "/usr/bin/python3";
}

static void python_times(double *numpy, double *torch) {
    char list[1024] = "[", script[4096];
    for (int k = 0; k < N_OPS; ++k) {
        char item[256];
        snprintf(item, sizeof item, "(\"%s\",\"%s\",\"%s\",%d),", ops[k].numpy,
                 ops[k].numpy_out, ops[k].torch, ops[k].positive);
        strcat(list, item);
    }
    strcat(list, "]");
    snprintf(script, sizeof script, python_round, N_ELEMS, N_ELEMS, N_ELEMS, list);
    for (int k = 0; k < N_OPS; ++k) numpy[k] = torch[k] = -1;
    char path[64];
    snprintf(path, sizeof path, "/tmp/bench_math_%d.py", (int)getpid());
    FILE *f = fopen(path, "w");
    if (!f) return;
    fputs(script, f);
    fclose(f);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "%s %s 2>/dev/null", python(), path);
    FILE *p = popen(cmd, "r");
    if (p) {
        for (int k = 0; k < N_OPS; ++k)
            if (fscanf(p, "%lf %lf", &numpy[k], &torch[k]) != 2) break;
        pclose(p);
    }
    remove(path);
}

/* The widest SIMD level each peer runs: NumPy's dispatch (what
 * NPY_DISABLE_CPU_FEATURES left on; NumPy 2 names the target its f32 exp
 * runs, which is what the table measures) and PyTorch's ATen capability
 * (ATEN_CPU_CAPABILITY caps it), into isa as "NumPy X, PyTorch Y". */
static void python_isa(char *isa, size_t cap) {
    static const char *code =
        " -c \"\n"
        "try:\n from numpy._core._multiarray_umath import __cpu_features__ as f\n"
        "except ImportError:\n from numpy.core._multiarray_umath import __cpu_features__ as f\n"
        "n=[k for k in ('AVX512_SKX','AVX512F','AVX2','SSE2') if f.get(k)]\n"
        "try:\n from numpy.lib.introspect import opt_func_info as o\n"
        " n=[o(func_name='exp',signature='float32->float32')['exp']['float32->float32']['current']]\n"
        "except Exception: pass\n"
        "try:\n import torch,re; t=re.search('CPU capability usage: (.*)',torch.__config__.show()).group(1)\n"
        "except Exception: t='not installed'\n"
        "print('NumPy %s, PyTorch %s' % (n[0] if n else 'baseline', t))\" 2>/dev/null";
    char script[2048];
    snprintf(script, sizeof script, "%s%s", python(), code);
    snprintf(isa, cap, "unknown");
    FILE *p = popen(script, "r");
    if (!p) return;
    if (!fgets(isa, (int)cap, p)) snprintf(isa, cap, "unknown");
    isa[strcspn(isa, "\n")] = 0;
    pclose(p);
}

static double ours_time(const op *o, pt_tensor *x) {
    double best = 1e30;
    for (int rep = 0; rep < 3; ++rep) {
        double t0 = now();
        for (int i = 0; i < 10; ++i) {
            pt_tensor *y = o->fn(x);
            if (!y) die(o->name);
            pt_release(y);
        }
        double dt = (now() - t0) / 10;
        if (dt < best) best = dt;
    }
    return best;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Best and median of the rounds' figures; -1 when a contender never ran. */
static void summarise(double *v, int n, double *best, double *median) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    int first = 0;
    while (first < n && v[first] < 0) ++first;
    if (first == n) {
        *best = *median = -1;
        return;
    }
    *best = v[first];
    *median = v[first + (n - first) / 2];
}

static void pin_one_core(void) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cores >= 2 ? 1 : 0, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) perror("bench_math: sched_setaffinity");
    setenv("OMP_NUM_THREADS", "1", 1);
    setenv("OPENBLAS_NUM_THREADS", "1", 1);
}

int main(int argc, char **argv) {
    int rounds = 7;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) rounds = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: bench_math [--rounds N]\n");
            return 2;
        }
    }
    if (rounds < 1) rounds = 1;
    if (rounds > MAX_ROUNDS) rounds = MAX_ROUNDS;
    pin_one_core(); /* before the cpu plugin and its OpenMP runtime load */

    pt_device *cpu = pt_cpu();
    if (!cpu) die("pt_cpu");
    pt_device_props props;
    pt_device_info(cpu, &props);

    /* Inputs: the same distributions as the python side (not the same numbers). */
    float *h = malloc(sizeof(float) * N_ELEMS);
    if (!h) die("malloc");
    pt_tensor *x[2];
    uint64_t s = 12345;
    for (int pos = 0; pos < 2; ++pos) {
        for (int i = 0; i < N_ELEMS; ++i) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            double u = (double)(s >> 11) / 9007199254740992.0;
            h[i] = (float)(pos ? 0.01 + u * (100 - 0.01) : -5 + 10 * u);
        }
        int64_t n = N_ELEMS;
        x[pos] = pt_from_data(cpu, PT_F32, 1, &n, h);
        if (!x[pos]) die("pt_from_data");
    }
    free(h);
    for (int k = 0; k < N_OPS; ++k) pt_release(ops[k].fn(x[ops[k].positive])); /* warm-up */

    static double ours[N_OPS][MAX_ROUNDS], numpy[N_OPS][MAX_ROUNDS], torch[N_OPS][MAX_ROUNDS];
    for (int r = 0; r < rounds; ++r) {
        for (int k = 0; k < N_OPS; ++k) ours[k][r] = ours_time(&ops[k], x[ops[k].positive]);
        double np_[N_OPS], th[N_OPS];
        python_times(np_, th);
        for (int k = 0; k < N_OPS; ++k) {
            numpy[k][r] = np_[k];
            torch[k][r] = th[k];
        }
    }

    printf("## Transcendental ops on 1M f32 elements, one thread (cpu: %s, %d thread)\n\n",
           props.name, props.compute_units);
    /* The vector ISA each contender ran (PORTABLE_CPU_VECMATH, NPY_DISABLE_CPU_FEATURES and
     * ATEN_CPU_CAPABILITY cap them, to compare the AVX2 paths on an AVX-512 host). */
    char peers[160];
    python_isa(peers, sizeof peers);
    const char *vm = strstr(props.platform, "vecmath ");
    printf("ISA: libportable %.*s, %s.\n\n", vm ? (int)strcspn(vm, ";") : 7, vm ? vm : "unknown", peers);
    printf("Pinned to one core, OMP_NUM_THREADS=1; %d alternated rounds, ms per call "
           "(best / median); ratio = libportable's median / the peer's median (< 1: libportable "
           "faster). NumPy: the faster of a fresh result and out=; its sigmoid is 1/(1+np.exp(-x)), "
           "NumPy having none.\n\n",
           rounds);
    printf("| op | libportable ms | NumPy ms | PyTorch ms | libportable / NumPy | libportable / PyTorch |\n");
    printf("|---|---:|---:|---:|---:|---:|\n");
    for (int k = 0; k < N_OPS; ++k) {
        double ob, om, nb, nm, tb, tm;
        summarise(ours[k], rounds, &ob, &om);
        summarise(numpy[k], rounds, &nb, &nm);
        summarise(torch[k], rounds, &tb, &tm);
        char ncol[64] = "not installed", tcol[64] = "not installed", nr[32] = "-", tr[32] = "-";
        if (nm > 0) {
            snprintf(ncol, sizeof ncol, "%.3f / %.3f", nb * 1e3, nm * 1e3);
            snprintf(nr, sizeof nr, "%.2fx", om / nm);
        }
        if (tm > 0) {
            snprintf(tcol, sizeof tcol, "%.3f / %.3f", tb * 1e3, tm * 1e3);
            snprintf(tr, sizeof tr, "%.2fx", om / tm);
        }
        printf("| %s | %.3f / %.3f | %s | %s | %s | %s |\n", ops[k].name, ob * 1e3, om * 1e3,
               ncol, tcol, nr, tr);
    }
    printf("\n");
    pt_release(x[0]);
    pt_release(x[1]);
    return 0;
}
