/* Fuzz target: pt_load on an arbitrary file.
 *
 * The input is written to a temporary file (pt_load reads paths only) and
 * loaded into two small module trees on the cpu: Sequential(Linear(3),
 * ReLU, Linear(2)) not run yet (lazy: takes the file's shapes and dtype)
 * and the same with its parameters made (Linear 4 -> 3 -> 2, f32). Valid
 * inputs for them hold 0.weight [3, 4], 0.bias [3], 2.weight [2, 3],
 * 2.bias [2] (tests/fuzz/corpus/safetensors has such files).
 *
 * What it checks, besides no crash, leak or sanitizer report: a load either
 * succeeds or fails with PT_ERR_IO (PT_ERR_OUT_OF_MEMORY for a huge claim)
 * and a message that starts with "pt_load: <path>"; a failed load leaves
 * the module as it was; a successful one gives parameters of the shapes
 * above that survive pt_save and a second load bit for bit. A lazy linear
 * takes its input size from the file, any size >= 1 (torch's LazyLinear
 * loads the same way): only its output size is the module's. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "portable/portable.h"

static char in_path[256], out_path[256];

static void die(const char *what, const char *detail) {
    fprintf(stderr, "fuzz_safetensors: contract broken: %s (%s)\n", what, detail ? detail : "");
    abort();
}

static void setup(void) {
    if (in_path[0]) return;
    const char *dir = getenv("TMPDIR");
    if (!dir || !dir[0]) dir = "/tmp";
    snprintf(in_path, sizeof in_path, "%s/fuzz_safetensors_%ld.in", dir, (long)getpid());
    snprintf(out_path, sizeof out_path, "%s/fuzz_safetensors_%ld.out", dir, (long)getpid());
    if (!pt_cpu()) die("no cpu device", pt_last_error());
}

static pt_module *lazy_net(void) {
    pt_module *layers[3] = {pt_linear(3), pt_relu_module(), pt_linear(2)};
    return pt_sequential(3, layers);
}

static pt_module *sized_net(void) {
    pt_module *layers[3] = {pt_linear_sized(4, 3), pt_relu_module(), pt_linear_sized(3, 2)};
    return pt_sequential(3, layers);
}

enum { N_PARAMS = 4, MAX_VALUES = 23 };

/* The parameters' bytes in state-dict order (unmade ones: none); the
 * count of bytes, or -1 when reading failed. */
static long snapshot(pt_module *m, unsigned char *out, size_t cap) {
    pt_tensor *ts[N_PARAMS];
    if (pt_module_parameters(m, NULL, ts, N_PARAMS) != N_PARAMS) die("the nets have 4 parameters", pt_last_error());
    size_t at = 0;
    for (int i = 0; i < N_PARAMS; ++i) {
        if (!ts[i]) continue;
        size_t bytes = (size_t)pt_tensor_numel(ts[i]) * pt_dtype_size(pt_tensor_dtype(ts[i]));
        if (at + bytes > cap || pt_to_host(ts[i], out + at, bytes) != PT_OK) return -1;
        at += bytes;
    }
    return (long)at;
}

static void load_one(pt_module *m, bool lazy, bool map_cpu) {
    static const int64_t want[N_PARAMS][2] = {{3, 4}, {3, 0}, {2, 3}, {2, 0}};
    unsigned char before[MAX_VALUES * 8], after[MAX_VALUES * 8], again[MAX_VALUES * 8];
    long nb = snapshot(m, before, sizeof before);
    pt_clear_error();
    pt_status s = pt_load(m, in_path, map_cpu ? pt_cpu() : NULL);
    if (s != PT_OK) {
        const char *msg = pt_last_error();
        char prefix[300];
        snprintf(prefix, sizeof prefix, "pt_load: %s", in_path);
        if (s != PT_ERR_IO && s != PT_ERR_OUT_OF_MEMORY) die("pt_load failed with a status other than IO/OOM", msg);
        if (pt_last_status() != s) die("the returned status differs from pt_last_status", msg);
        if (strncmp(msg, prefix, strlen(prefix)) != 0) die("the message does not start with pt_load: <path>", msg);
        long na = snapshot(m, after, sizeof after);
        if (na != nb || (nb > 0 && memcmp(before, after, (size_t)nb) != 0))
            die("a failed load changed the module", msg);
        pt_tensor *ts[N_PARAMS];
        pt_module_parameters(m, NULL, ts, N_PARAMS);
        for (int i = 0; lazy && i < N_PARAMS; ++i)
            if (ts[i]) die("a failed load made a lazy module's parameters", msg);
        pt_clear_error();
        return;
    }
    /* Loaded: the module's shapes, and a save/load round trip keeps every bit. */
    pt_tensor *ts[N_PARAMS];
    pt_module_parameters(m, NULL, ts, N_PARAMS);
    for (int i = 0; i < N_PARAMS; ++i) {
        int nd = want[i][1] ? 2 : 1;
        const int64_t *sh = ts[i] ? pt_tensor_shape(ts[i]) : NULL;
        bool in_ok = nd == 1 || (lazy ? sh && sh[1] >= 1 : sh && sh[1] == want[i][1]);
        if (!sh || pt_tensor_ndim(ts[i]) != nd || sh[0] != want[i][0] || !in_ok)
            die("a loaded parameter has another shape than the module's", NULL);
        pt_dtype t = pt_tensor_dtype(ts[i]);
        bool lazy_float = t == PT_F64 || t == PT_F16 || t == PT_BF16; /* a lazy layer takes the file's float type */
        if (t != PT_F32 && (!lazy || !lazy_float)) die("a loaded parameter has a dtype the module cannot have", NULL);
    }
    long na = snapshot(m, after, sizeof after);
    if (na < 0) die("reading the loaded parameters failed", pt_last_error());
    if (pt_save(m, out_path) != PT_OK) die("saving what was loaded failed", pt_last_error());
    pt_module *back = lazy_net();
    if (pt_load(back, out_path, NULL) != PT_OK) die("loading what was saved failed", pt_last_error());
    if (snapshot(back, again, sizeof again) != na || memcmp(after, again, (size_t)na) != 0)
        die("a save/load round trip changed the values", NULL);
    pt_module_free(back);
    unlink(out_path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    setup();
    FILE *f = fopen(in_path, "wb");
    if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0) die("cannot write the input file", in_path);
    bool map_cpu = size > 0 && (data[size - 1] & 1);
    pt_module *lazy = lazy_net(), *sized = sized_net();
    if (!lazy || !sized) die("cannot make the nets", pt_last_error());
    load_one(lazy, true, map_cpu);
    load_one(sized, false, map_cpu);
    pt_module_free(lazy);
    pt_module_free(sized);
    unlink(in_path);
    return 0;
}
