/* Fuzz target: pt_optimizer_load on an arbitrary file.
 *
 * The input is written to a temporary file and loaded into an AdamW (with
 * the warm-up + cosine schedule) and an SGD with momentum, each of a
 * Sequential(Linear 4 -> 3, ReLU, Linear 3 -> 2) on the cpu that has taken
 * one step, so each has state a bad file must not disturb. Valid inputs
 * hold state.<i>.step (I64, 0-D) and the kind's tensors for i < 4 with the
 * parameters' shapes (tests/fuzz/corpus/optim_state has such files).
 *
 * What it checks, besides no crash, leak or sanitizer report: a load either
 * succeeds or fails with PT_ERR_IO (PT_ERR_OUT_OF_MEMORY for a huge claim)
 * and a message that starts with "pt_optimizer_load: <path>"; a failed
 * load leaves the optimizer as it was (pt_optimizer_save writes the same
 * bytes before and after); a successful one survives pt_optimizer_save and
 * a load into a fresh optimizer of the same kind bit for bit. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "portable/portable.h"

static char in_path[256], before_path[256], after_path[256], again_path[256];

static void die(const char *what, const char *detail) {
    fprintf(stderr, "fuzz_optim_state: contract broken: %s (%s)\n", what, detail ? detail : "");
    abort();
}

static void setup(void) {
    if (in_path[0]) return;
    const char *dir = getenv("TMPDIR");
    if (!dir || !dir[0]) dir = "/tmp";
    const long pid = (long)getpid();
    snprintf(in_path, sizeof in_path, "%s/fuzz_optim_state_%ld.in", dir, pid);
    snprintf(before_path, sizeof before_path, "%s/fuzz_optim_state_%ld.before", dir, pid);
    snprintf(after_path, sizeof after_path, "%s/fuzz_optim_state_%ld.after", dir, pid);
    snprintf(again_path, sizeof again_path, "%s/fuzz_optim_state_%ld.again", dir, pid);
    if (!pt_cpu()) die("no cpu device", pt_last_error());
}

static pt_module *net(void) {
    pt_manual_seed(3);
    pt_module *layers[3] = {pt_linear_sized(4, 3), pt_relu_module(), pt_linear_sized(3, 2)};
    return pt_sequential(3, layers);
}

static pt_optimizer *make(pt_module *m, bool adamw) {
    if (!adamw) return pt_sgd(m, 0.1, 0.9, 0.0);
    pt_optimizer *o = pt_adamw(m, 1e-2, 0.9, 0.95, 1e-8, 0.1);
    if (o && pt_optimizer_set_schedule(o, 2, 10, 1e-3) != PT_OK) die("set_schedule", pt_last_error());
    return o;
}

/* One step on a fixed batch, so the optimizer has state. */
static void one_step(pt_module *m, pt_optimizer *o) {
    static const float x[2 * 4] = {0.5f, -1, 0.25f, 2, -0.75f, 1, 0, -0.5f};
    pt_scope s = pt_scope_begin();
    pt_tensor *xt = pt_from_data(pt_cpu(), PT_F32, 2, (int64_t[]){2, 4}, x);
    pt_tensor *loss = pt_sum(pt_module_forward(m, xt), PT_ALL, false);
    if (pt_backward(loss) != PT_OK || pt_optimizer_step(o) != PT_OK) die("a training step failed", pt_last_error());
    pt_scope_end(s);
}

static long file_bytes(const char *path, unsigned char **out) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    *out = malloc(n > 0 ? (size_t)n : 1);
    if (!*out || fread(*out, 1, (size_t)n, f) != (size_t)n) n = -1;
    fclose(f);
    return n;
}

static bool same_file(const char *a, const char *b) {
    unsigned char *x = NULL, *y = NULL;
    long n = file_bytes(a, &x), m = file_bytes(b, &y);
    bool same = n >= 0 && n == m && memcmp(x, y, (size_t)n) == 0;
    free(x);
    free(y);
    return same;
}

static void load_one(bool adamw, bool map_cpu) {
    pt_module *m = net();
    pt_optimizer *o = m ? make(m, adamw) : NULL;
    if (!o) die("cannot make the optimizer", pt_last_error());
    one_step(m, o);
    if (pt_optimizer_save(o, before_path) != PT_OK) die("saving the optimizer failed", pt_last_error());
    pt_clear_error();
    pt_status s = pt_optimizer_load(o, in_path, map_cpu ? pt_cpu() : NULL);
    if (s != PT_OK) {
        const char *msg = pt_last_error();
        char prefix[300];
        snprintf(prefix, sizeof prefix, "pt_optimizer_load: %s", in_path);
        if (s != PT_ERR_IO && s != PT_ERR_OUT_OF_MEMORY) die("a load failed with a status other than IO/OOM", msg);
        if (pt_last_status() != s) die("the returned status differs from pt_last_status", msg);
        if (strncmp(msg, prefix, strlen(prefix)) != 0) die("the message does not start with the function and path", msg);
        if (pt_optimizer_save(o, after_path) != PT_OK || !same_file(before_path, after_path))
            die("a failed load changed the optimizer", msg);
    } else {
        /* Loaded: saved and loaded again into a fresh optimizer, the same state. */
        pt_module *m2 = net();
        pt_optimizer *o2 = m2 ? make(m2, adamw) : NULL;
        if (!o2 || pt_optimizer_save(o, after_path) != PT_OK || pt_optimizer_load(o2, after_path, NULL) != PT_OK ||
            pt_optimizer_save(o2, again_path) != PT_OK)
            die("a loaded state does not survive a save and a load", pt_last_error());
        if (!same_file(after_path, again_path)) die("a save/load round trip changed the state", NULL);
        pt_optimizer_free(o2);
        pt_module_free(m2);
        one_step(m, o); /* and it trains */
    }
    pt_clear_error();
    pt_optimizer_free(o);
    pt_module_free(m);
    unlink(before_path);
    unlink(after_path);
    unlink(again_path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    setup();
    FILE *f = fopen(in_path, "wb");
    if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0) die("cannot write the input file", in_path);
    bool map_cpu = size > 0 && (data[size - 1] & 1);
    load_one(true, map_cpu);
    load_one(false, map_cpu);
    unlink(in_path);
    return 0;
}
