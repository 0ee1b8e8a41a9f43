/* Safetensors: round trip, the file layout, every kind of corrupt file
 * (each must give PT_ERR_IO naming the file, the tensor and the problem, and
 * leave the module untouched), and interop with a file written by hand in
 * Python/NumPy (tests/nn/fixtures, made by make_safetensors_fixture.py) in
 * both directions. Hardening against hostile files: a header with 100k entries is
 * checked in n log n (its own CTest entry with a 60 s limit, which the old
 * quadratic duplicate check overran), a NUL inside a JSON string is
 * rejected, and pt_save's temporary file cannot be redirected by a planted
 * symlink.
 *
 *   test_safetensors SCRATCH_DIR                  everything but the big header
 *   test_safetensors SCRATCH_DIR many-entries     the 100k-entry header only
 *   test_safetensors SCRATCH_DIR readonly-save DIR (internal: the child of
 *                                                 test_save_readonly) */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nn_test.h"

#ifndef PT_NN_FIXTURE_SCRIPT
#define PT_NN_FIXTURE_SCRIPT "make_safetensors_fixture.py"
#endif
#ifndef PT_NN_PYTHON
#define PT_NN_PYTHON "python3"
#endif
#ifndef PT_NN_FIXTURE
#define PT_NN_FIXTURE "fixtures/mlp_4_3_2.safetensors"
#endif

static const char *scratch;
static char path_buf[4096];

static const char *scratch_path(const char *name) {
    snprintf(path_buf, sizeof path_buf, "%s/%s", scratch, name);
    return path_buf;
}

/* Sequential(Linear(3), ReLU, Linear(2)); materialised with a 4-feature
 * input when `run` is set. Parameters: 0.weight [3,4], 0.bias [3],
 * 2.weight [2,3], 2.bias [2] (92 bytes of f32). */
static pt_module *net(bool run, uint64_t seed) {
    pt_module *layers[3] = {pt_linear(3), pt_relu_module(), pt_linear(2)};
    pt_module *m = pt_sequential(3, layers);
    if (run) {
        pt_manual_seed(seed);
        int64_t xs[2] = {2, 4};
        pt_tensor *x = pt_rand(pt_cpu(), PT_F32, 2, xs);
        pt_release(pt_module_forward(m, x));
        pt_release(x);
    }
    return m;
}

/* All parameter bytes of m, in state-dict order (NULL parameters: none). */
static size_t snapshot(pt_module *m, float *out, size_t cap) {
    pt_tensor *ts[8];
    int n = pt_module_parameters(m, NULL, ts, 8);
    size_t at = 0;
    for (int i = 0; i < n; ++i) {
        if (!ts[i]) continue;
        size_t k = (size_t)pt_tensor_numel(ts[i]);
        if (at + k > cap || pt_to_host(ts[i], out + at, k * sizeof *out) != PT_OK) return 0;
        at += k;
    }
    return at;
}

static void write_file(const char *path, const void *bytes, size_t n) {
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(bytes, 1, n, f);
        fclose(f);
    }
}

/* A safetensors file from a header text and data_len bytes of data
 * (header_len_override: the length field to write instead of the real one). */
static void write_st(const char *path, const char *header, size_t data_len, uint64_t header_len_override) {
    size_t h = strlen(header);
    uint64_t n = header_len_override ? header_len_override : h;
    unsigned char *buf = calloc(1, 8 + h + data_len + 1);
    for (int i = 0; i < 8; ++i) buf[i] = (unsigned char)(n >> (8 * i));
    memcpy(buf + 8, header, h);
    for (size_t i = 0; i < data_len; ++i) buf[8 + h + i] = (unsigned char)(i * 7);
    write_file(path, buf, 8 + h + data_len);
    free(buf);
}

/* F16 and BF16 entries load as 16-bit parameters (the same bits), compute,
 * and save back as the same dtype and bits. */
static void test_half_round_trip(const char *tag, pt_dtype t) {
    const float w[8] = {0.5f, -1.25f, 2.0f, 0.1f, -3.0f, 7.5f, 0.25f, -0.5f}; /* weight [2, 3], bias [2] */
    uint16_t bits[8];
    if (t == PT_F16) pt_f32_to_f16(w, bits, 8);
    else pt_f32_to_bf16(w, bits, 8);
    char header[256];
    snprintf(header, sizeof header,
             "{\"0.weight\":{\"dtype\":\"%s\",\"shape\":[2,3],\"data_offsets\":[0,12]},"
             "\"0.bias\":{\"dtype\":\"%s\",\"shape\":[2],\"data_offsets\":[12,16]}}",
             tag, tag);
    size_t h = strlen(header);
    unsigned char buf[512];
    for (int i = 0; i < 8; ++i) buf[i] = (unsigned char)((uint64_t)h >> (8 * i));
    memcpy(buf + 8, header, h);
    memcpy(buf + 8 + h, bits, sizeof bits); /* little-endian host, as the format */
    char in_path[4096], out_path[4096];
    snprintf(in_path, sizeof in_path, "%s", scratch_path(t == PT_F16 ? "f16_in.safetensors" : "bf16_in.safetensors"));
    snprintf(out_path, sizeof out_path, "%s", scratch_path(t == PT_F16 ? "f16_out.safetensors" : "bf16_out.safetensors"));
    write_file(in_path, buf, 8 + h + sizeof bits);

    pt_module *layers[1] = {pt_linear(2)};
    pt_module *m = pt_sequential(1, layers);
    NN_CHECK(pt_load(m, in_path, pt_cpu()) == PT_OK, "%s file loads: %s", tag, pt_last_error());
    pt_tensor *pw = pt_module_parameter(m, "0.weight");
    uint16_t got[6] = {0};
    NN_CHECK(pw && pt_tensor_dtype(pw) == t && pt_to_host(pw, got, sizeof got) == PT_OK &&
                 memcmp(got, bits, sizeof got) == 0,
             "%s weight loads as %s with the file's bits", tag, pt_dtype_name(t));
    /* forward: x [1, 3] of ones -> row sums of w plus b, rounded once per op */
    int64_t xs[2] = {1, 3};
    pt_tensor *x = pt_ones(pt_cpu(), t, 2, xs);
    pt_tensor *y = pt_module_forward(m, x);
    pt_tensor *y64 = pt_cast(y, PT_F64);
    double yv[2] = {0};
    NN_CHECK(y64 && pt_tensor_dtype(y) == t && pt_to_host(y64, yv, sizeof yv) == PT_OK &&
                 fabs(yv[0] - (1.25 + 0.25)) < 0.02 && fabs(yv[1] - (4.6 - 0.5)) < 0.05,
             "%s forward: %g %g (want about 1.5 and 4.1): %s", tag, yv[0], yv[1], pt_last_error());
    NN_CHECK(pt_save(m, out_path) == PT_OK, "%s save: %s", tag, pt_last_error());
    pt_module *layers2[1] = {pt_linear(2)};
    pt_module *back = pt_sequential(1, layers2);
    NN_CHECK(pt_load(back, out_path, pt_cpu()) == PT_OK, "%s saved file loads: %s", tag, pt_last_error());
    pt_tensor *bb = pt_module_parameter(back, "0.bias");
    uint16_t gb[2] = {0};
    NN_CHECK(bb && pt_tensor_dtype(bb) == t && pt_to_host(bb, gb, sizeof gb) == PT_OK && memcmp(gb, bits + 6, 4) == 0,
             "%s bias survives save and load bit for bit", tag);
    FILE *f = fopen(out_path, "rb");
    char text[512] = {0};
    if (f) {
        size_t n = fread(text, 1, sizeof text - 1, f);
        (void)n;
        fclose(f);
    }
    char want[32];
    snprintf(want, sizeof want, "\"dtype\":\"%s\"", tag);
    NN_CHECK(strstr(text + 8, want) != NULL, "%s saved header names dtype %s", tag, tag);
    pt_release(y64);
    pt_release(y);
    pt_release(x);
    pt_module_free(m);
    pt_module_free(back);
}

static void test_round_trip(void) {
    pt_module *a = net(true, 1);
    const char *p = scratch_path("round_trip.safetensors");
    char path[4096];
    snprintf(path, sizeof path, "%s", p);
    NN_CHECK(pt_save(a, path) == PT_OK, "save");

    float va[64], vb[64];
    size_t na = snapshot(a, va, 64);
    NN_CHECK(na == 23, "23 parameter values, got %zu", na);

    /* Into a fresh lazy model: takes the file's shapes. */
    pt_module *b = net(false, 0);
    NN_CHECK(pt_load(b, path, pt_cpu()) == PT_OK, "load into a lazy model");
    NN_CHECK(snapshot(b, vb, 64) == na && memcmp(va, vb, na * sizeof *va) == 0, "values identical after the round trip");
    pt_tensor *w = pt_module_parameter(b, "0.weight");
    NN_CHECK(w && pt_requires_grad(w) && pt_tensor_ndim(w) == 2 && pt_tensor_shape(w)[1] == 4,
             "loaded parameters are [3, 4] leaves that require grad");

    /* Same forward. */
    int64_t xs[2] = {5, 4};
    pt_manual_seed(9);
    pt_tensor *x = pt_rand(pt_cpu(), PT_F32, 2, xs);
    pt_tensor *ya = pt_module_forward(a, x), *yb = pt_module_forward(b, x);
    float fa[10], fb[10];
    NN_CHECK(pt_to_host(ya, fa, sizeof fa) == PT_OK && pt_to_host(yb, fb, sizeof fb) == PT_OK &&
                 memcmp(fa, fb, sizeof fa) == 0,
             "reloaded model computes the same outputs");

    /* Into a materialised model with other values: replaced. */
    pt_module *c = net(true, 2);
    NN_CHECK(pt_load(c, path, NULL) == PT_OK, "load into a materialised model");
    float vc[64];
    NN_CHECK(snapshot(c, vc, 64) == na && memcmp(va, vc, na * sizeof *va) == 0, "values replaced");

    /* The layout, byte by byte where it is fixed. */
    FILE *f = fopen(path, "rb");
    unsigned char head[8];
    size_t got = f ? fread(head, 1, 8, f) : 0;
    uint64_t hl = 0;
    for (int i = 7; i >= 0; --i) hl = hl << 8 | head[i];
    char *json = calloc(1, hl + 1);
    got += f && json ? fread(json, 1, hl, f) : 0;
    struct stat sb;
    stat(path, &sb);
    NN_CHECK(got == 8 + hl && hl % 8 == 0, "header length %llu is a multiple of 8", (unsigned long long)hl);
    NN_CHECK(json && json[0] == '{' && strstr(json, "\"__metadata__\":{\"format\":\"pt\"}") != NULL,
             "JSON object with __metadata__ {format: pt}: %.120s", json ? json : "");
    NN_CHECK(json && strstr(json, "\"0.weight\":{\"dtype\":\"F32\",\"shape\":[3,4],\"data_offsets\":[0,48]}"),
             "0.weight entry: %.200s", json ? json : "");
    NN_CHECK((uint64_t)sb.st_size == 8 + hl + 92, "file is header + 92 data bytes (%lld)", (long long)sb.st_size);
    free(json);
    if (f) fclose(f);

    pt_release(ya);
    pt_release(yb);
    pt_release(x);
    pt_module_free(a);
    pt_module_free(b);
    pt_module_free(c);
}

/* One corrupt file: PT_ERR_IO, the message names the file and what was
 * wrong, and neither a materialised nor a lazy module changes. */
static void expect_rejected(const char *what, const char *file, const char *tensor, const char *problem) {
    pt_module *m = net(true, 3);
    float before[64], after[64];
    size_t n = snapshot(m, before, 64);
    pt_clear_error();
    pt_status s = pt_load(m, file, pt_cpu());
    const char *msg = pt_last_error();
    bool named = strstr(msg, file) != NULL && (!tensor || strstr(msg, tensor) != NULL) && strstr(msg, problem) != NULL;
    NN_CHECK(s == PT_ERR_IO && named, "%s: status %s, message \"%s\" (want the file, %s and \"%s\")", what,
             pt_status_name(s), msg, tensor ? tensor : "-", problem);
    NN_CHECK(snapshot(m, after, 64) == n && memcmp(before, after, n * sizeof *before) == 0, "%s: module unchanged",
             what);

    pt_module *lazy = net(false, 0);
    pt_tensor *ts[4];
    NN_CHECK(pt_load(lazy, file, pt_cpu()) == PT_ERR_IO && pt_module_parameters(lazy, NULL, ts, 4) == 4 && !ts[0] &&
                 !ts[1] && !ts[2] && !ts[3],
             "%s: a lazy module stays uncreated", what);
    pt_module_free(lazy);
    pt_module_free(m);
}

#define ENTRY(name, dtype, shape, b, e) \
    "\"" name "\":{\"dtype\":\"" dtype "\",\"shape\":" shape ",\"data_offsets\":[" #b "," #e "]}"
#define W0 ENTRY("0.weight", "F32", "[3,4]", 0, 48)
#define B0 ENTRY("0.bias", "F32", "[3]", 48, 60)
#define W2 ENTRY("2.weight", "F32", "[2,3]", 60, 84)
#define B2 ENTRY("2.bias", "F32", "[2]", 84, 92)

static void test_corrupt(void) {
    char file[4096];
#define CASE(name) snprintf(file, sizeof file, "%s", scratch_path(name))

    CASE("valid.safetensors");
    write_st(file, "{" W0 "," B0 "," W2 "," B2 "}", 92, 0);
    pt_module *m = net(false, 0);
    NN_CHECK(pt_load(m, file, pt_cpu()) == PT_OK, "a hand-made valid file loads: %s", pt_last_error());
    pt_module_free(m);

    CASE("truncated.safetensors");
    write_st(file, "{" W0 "," B0 "," W2 "," B2 "}", 80, 0);
    expect_rejected("truncated data", file, "2.weight", "past the data section");

    CASE("wrong_shape.safetensors");
    write_st(file, "{" ENTRY("0.weight", "F32", "[4,3]", 0, 48) "," B0 "," W2 "," B2 "}", 92, 0);
    expect_rejected("wrong shape", file, "0.weight", "does not match the module's parameter [3, 4]");

    CASE("unknown_dtype.safetensors");
    write_st(file, "{" W0 "," ENTRY("0.bias", "Q7", "[3]", 48, 60) "," W2 "," B2 "}", 92, 0);
    expect_rejected("unknown dtype", file, "0.bias", "unknown dtype");

    CASE("bf16.safetensors");
    write_st(file, "{" ENTRY("0.weight", "I16", "[3,4]", 0, 24) "," B0 "," W2 "," B2 "}", 92, 0);
    expect_rejected("I16", file, "0.weight", "unsupported dtype I16");

    CASE("overlap.safetensors");
    write_st(file, "{" W0 "," ENTRY("0.bias", "F32", "[3]", 40, 52) "," W2 "," B2 "}", 92, 0);
    expect_rejected("overlapping offsets", file, "0.bias", "overlap");

    CASE("garbage_header.safetensors");
    write_st(file, "{\"0.weight\": {\"dtype\": \"F32\", \"shape\": [3,4 ,,}", 92, 0);
    expect_rejected("garbage header", file, NULL, "not valid JSON");

    CASE("long_header.safetensors");
    write_st(file, "{" W0 "," B0 "," W2 "," B2 "}", 92, 1000000);
    expect_rejected("header length larger than the file", file, NULL, "larger than the rest of the file");

    CASE("tiny.safetensors");
    write_file(file, "\x10\x00\x00", 3);
    expect_rejected("shorter than 8 bytes", file, NULL, "too short");

    CASE("missing.safetensors");
    write_st(file, "{" W0 "," B0 "," W2 "}", 92, 0);
    expect_rejected("missing tensor", file, "2.bias", "missing from the file");

    CASE("unexpected.safetensors");
    write_st(file, "{" W0 "," B0 "," W2 "," B2 "," ENTRY("9.weight", "F32", "[0]", 92, 92) "}", 92, 0);
    expect_rejected("unexpected tensor", file, "9.weight", "unexpected");

    CASE("reversed.safetensors");
    write_st(file, "{" W0 "," ENTRY("0.bias", "F32", "[3]", 60, 48) "," W2 "," B2 "}", 92, 0);
    expect_rejected("begin after end", file, "0.bias", "end before they begin");

    CASE("size_mismatch.safetensors");
    write_st(file, "{" W0 "," ENTRY("0.bias", "F32", "[3]", 48, 56) "," W2 "," B2 "}", 92, 0);
    expect_rejected("offsets disagree with the shape", file, "0.bias", "needs 12");

    CASE("duplicate.safetensors");
    write_st(file, "{" W0 "," B0 "," W2 "," B2 "," B2 "}", 92, 0);
    expect_rejected("duplicate name", file, "2.bias", "named twice");

    CASE("wrong_dtype.safetensors");
    write_st(file, "{" ENTRY("0.weight", "F64", "[3,4]", 0, 96) "," ENTRY("0.bias", "F32", "[3]", 96, 108) "," ENTRY(
                       "2.weight", "F32", "[2,3]", 108, 132) "," ENTRY("2.bias", "F32", "[2]", 132, 140) "}",
             140, 0);
    expect_rejected("F64 for an F32 parameter", file, "0.weight", "dtype F64 does not match");

    CASE("not_object.safetensors");
    write_st(file, "[1, 2, 3]", 92, 0);
    expect_rejected("header not an object", file, NULL, "not an object");

    CASE("bad_metadata.safetensors");
    write_st(file, "{\"__metadata__\":{\"format\":1}," W0 "," B0 "," W2 "," B2 "}", 92, 0);
    expect_rejected("non-string metadata", file, NULL, "not a string");

    CASE("bad_shape.safetensors");
    write_st(file, "{" ENTRY("0.weight", "F32", "[3,-4]", 0, 48) "," B0 "," W2 "," B2 "}", 92, 0);
    expect_rejected("negative extent", file, "0.weight", "not a non-negative integer");

    CASE("does_not_exist.safetensors");
    unlink(file);
    expect_rejected("no such file", file, NULL, "cannot open");
#undef CASE
}

/* ==== Hardening against hostile files ===================================== */

/* Item 10: the header check must not compare every name with every other.
 * 100k entries (4 real ones, then empty ones) make the old quadratic
 * duplicate check take minutes; this program's CTest entry for them
 * (nn_safetensors_many_entries) has a 60 s limit. */
static char *many_header(int extra, const char *last) {
    size_t cap = 512 + (size_t)extra * 64;
    char *h = malloc(cap);
    if (!h) return NULL;
    size_t at = (size_t)snprintf(h, cap, "{" W0 "," B0 "," W2 "," B2);
    for (int i = 0; i < extra; ++i)
        at += (size_t)snprintf(h + at, cap - at, ",\"x%06d\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[92,92]}",
                               i);
    snprintf(h + at, cap - at, "%s}", last ? last : "");
    return h;
}

/* A sequential of n Linear(1, 1): 2n parameters "0.weight" .. "<n-1>.bias". */
static pt_module *chain(int n) {
    pt_module **ls = malloc((size_t)n * sizeof *ls);
    for (int i = 0; i < n; ++i) ls[i] = pt_linear_sized(1, 1);
    pt_module *m = pt_sequential(n, ls);
    free(ls);
    return m;
}

static void test_many_entries(void) {
    char file[4096];
    enum { EXTRA = 100000 };
    snprintf(file, sizeof file, "%s", scratch_path("many_unexpected.safetensors"));
    char *h = many_header(EXTRA, NULL);
    NN_CHECK(h != NULL, "header text");
    if (!h) return;
    write_st(file, h, 92, 0);
    free(h);
    expect_rejected("100k unexpected empty entries", file, "x000000", "unexpected");

    snprintf(file, sizeof file, "%s", scratch_path("many_duplicate.safetensors"));
    h = many_header(EXTRA, ",\"x050000\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[92,92]}");
    write_st(file, h, 92, 0);
    free(h);
    expect_rejected("100k entries, one name twice", file, "x050000", "named twice");
    unlink(file);
    unlink(scratch_path("many_unexpected.safetensors"));

    /* A module with 40k parameters saves and loads back (matching a file's
     * tensors with the module's parameters is n log n too). */
    enum { LAYERS = 20000 };
    pt_module *a = chain(LAYERS), *b = chain(LAYERS);
    NN_CHECK(a && b, "two chains of %d linears: %s", LAYERS, pt_last_error());
    if (!a || !b) return;
    snprintf(file, sizeof file, "%s", scratch_path("many_params.safetensors"));
    pt_manual_seed(11);
    NN_CHECK(pt_save(a, file) == PT_OK, "save 40k parameters");
    NN_CHECK(pt_load(b, file, NULL) == PT_OK, "load 40k parameters: %s", pt_last_error());
    const char *probe[3] = {"0.weight", "12345.bias", "19999.weight"};
    for (int k = 0; k < 3; ++k) {
        pt_tensor *x = pt_module_parameter(a, probe[k]), *y = pt_module_parameter(b, probe[k]);
        float vx = 0, vy = 1;
        NN_CHECK(x && y && pt_to_host(x, &vx, sizeof vx) == PT_OK && pt_to_host(y, &vy, sizeof vy) == PT_OK &&
                     vx == vy,
                 "%s survives the round trip (%g vs %g)", probe[k], vx, vy);
    }
    unlink(file);
    pt_module_free(a);
    pt_module_free(b);
}

/* Item 11: a NUL inside a JSON string (escaped or raw) would cut the name
 * short ("0.weight\u0000junk" read as "0.weight"): rejected, naming the
 * string as written. */
static void test_nul_in_strings(void) {
    char file[4096];
    snprintf(file, sizeof file, "%s", scratch_path("nul_key.safetensors"));
    write_st(file, "{" ENTRY("0.weight\\u0000junk", "F32", "[3,4]", 0, 48) "," B0 "," W2 "," B2 "}", 92, 0);
    expect_rejected("escaped NUL in a key", file, "0.weight\\u0000junk", "NUL");

    snprintf(file, sizeof file, "%s", scratch_path("nul_key_only.safetensors"));
    write_st(file, "{" W0 "," B0 "," W2 "," B2 "," ENTRY("2.bias\\u0000", "F32", "[0]", 92, 92) "}", 92, 0);
    expect_rejected("escaped NUL making a duplicate", file, "2.bias\\u0000", "NUL");

    snprintf(file, sizeof file, "%s", scratch_path("nul_dtype.safetensors"));
    write_st(file, "{" ENTRY("0.weight", "F32\\u0000junk", "[3,4]", 0, 48) "," B0 "," W2 "," B2 "}", 92, 0);
    expect_rejected("escaped NUL in a dtype", file, "F32\\u0000junk", "NUL");

    snprintf(file, sizeof file, "%s", scratch_path("nul_meta.safetensors"));
    write_st(file, "{\"__metadata__\":{\"a\\u0000b\":\"x\"}," W0 "," B0 "," W2 "," B2 "}", 92, 0);
    expect_rejected("escaped NUL in a metadata key", file, "a\\u0000b", "NUL");

    /* A raw NUL byte inside a key: the header is written by hand. */
    snprintf(file, sizeof file, "%s", scratch_path("raw_nul_key.safetensors"));
    const char *text = "{" W0 "," B0 "," W2 "," B2 "}";
    size_t hl = strlen(text);
    unsigned char *buf = calloc(1, 8 + hl + 92);
    for (int i = 0; i < 8; ++i) buf[i] = (unsigned char)((uint64_t)hl >> (8 * i));
    memcpy(buf + 8, text, hl);
    char *key = strstr((char *)buf + 8, "0.weight");
    key[1] = '\0'; /* "0\0weight" */
    write_file(file, buf, 8 + hl + 92);
    free(buf);
    expect_rejected("raw NUL byte in a key", file, NULL, "NUL");

    /* An escaped backslash before "u0000" is no NUL: that name is just
     * unknown to the module. */
    snprintf(file, sizeof file, "%s", scratch_path("backslash_u0000.safetensors"));
    write_st(file, "{" W0 "," B0 "," W2 "," B2 "," ENTRY("x\\\\u0000", "F32", "[0]", 92, 92) "}", 92, 0);
    expect_rejected("escaped backslash, then u0000", file, "x\\u0000", "unexpected");
}

/* Whether any entry of dir starts with prefix. */
static bool dir_has_prefix(const char *dir, const char *prefix) {
    DIR *d = opendir(dir);
    bool found = false;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL)
        found = found || strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    if (d) closedir(d);
    return found;
}

/* Item 12: pt_save's temporary file. The old name was <path>.tmp<pid>,
 * opened with fopen("wb"), which follows a symlink planted there: the data
 * went to the symlink's target, and the rename then put the symlink itself
 * at <path>. */
static void test_save_symlink(void) {
    char dir[4096], target[4096], planted[4200], victim[4096];
    snprintf(dir, sizeof dir, "%s", scratch_path("save_dir"));
    snprintf(victim, sizeof victim, "%s", scratch_path("victim_outside.txt"));
    mkdir(dir, 0755);
    snprintf(target, sizeof target, "%s/model.safetensors", dir);
    snprintf(planted, sizeof planted, "%s.tmp%ld", target, (long)getpid());
    unlink(target);
    unlink(planted);
    write_file(victim, "precious", 8);
    NN_CHECK(symlink(victim, planted) == 0, "plant a symlink at %s: %s", planted, strerror(errno));

    pt_module *m = net(true, 4);
    NN_CHECK(pt_save(m, target) == PT_OK, "save next to a planted symlink: %s", pt_last_error());
    char got[64] = {0};
    FILE *f = fopen(victim, "rb");
    size_t n = f ? fread(got, 1, sizeof got - 1, f) : 0;
    if (f) fclose(f);
    NN_CHECK(n == 8 && memcmp(got, "precious", 8) == 0, "the symlink's target outside the folder is untouched "
             "(%zu bytes: \"%.8s\")", n, got);
    struct stat sb;
    NN_CHECK(lstat(target, &sb) == 0 && S_ISREG(sb.st_mode), "%s is a regular file, not a symlink", target);
    NN_CHECK(lstat(planted, &sb) == 0 && S_ISLNK(sb.st_mode), "the planted symlink itself is left alone");
    pt_module *back = net(false, 0);
    NN_CHECK(pt_load(back, target, pt_cpu()) == PT_OK, "the saved file loads: %s", pt_last_error());
    pt_module_free(back);
    unlink(planted);

    /* No temporary is left behind, after success or failure. A directory
     * in the way makes the rename fail. */
    NN_CHECK(!dir_has_prefix(dir, "model.safetensors.tmp"), "no temporary left after a save");
    char blocked[4200];
    snprintf(blocked, sizeof blocked, "%s/dir.safetensors", dir);
    mkdir(blocked, 0755);
    pt_clear_error();
    pt_status s = pt_save(m, blocked);
    NN_CHECK(s == PT_ERR_IO && strstr(pt_last_error(), blocked) && strstr(pt_last_error(), "pt_save"),
             "save onto a directory: %s, \"%s\"", pt_status_name(s), pt_last_error());
    NN_CHECK(!dir_has_prefix(dir, "dir.safetensors.tmp"), "no temporary left after a failed rename");
    rmdir(blocked);

    /* A saved file gets the usual permissions (0666 less the umask), not
     * a private temporary's 0600. */
    mode_t mask = umask(022);
    umask(mask);
    NN_CHECK(stat(target, &sb) == 0 && (sb.st_mode & 0777) == (0666 & ~mask), "mode %o, want %o",
             (unsigned)(sb.st_mode & 0777), (unsigned)(0666 & ~mask));
    unlink(target);
    unlink(victim);
    rmdir(dir);
    pt_module_free(m);
}

/* A save into a read-only folder fails with PT_ERR_IO naming the path.
 * Runs in a child (this program again, as `nobody` when started as root,
 * since root writes through permission bits). */
static void test_save_readonly(const char *self) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", scratch_path("readonly_dir"));
    mkdir(dir, 0755);
    chmod(dir, 0555);
    pid_t pid = fork();
    if (pid == 0) {
        execl(self, self, scratch, "readonly-save", dir, (char *)NULL);
        _exit(127);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    int rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    if (rc == NN_SKIP)
        printf("note: read-only folder check skipped (cannot drop root)\n");
    else
        NN_CHECK(rc == 0, "the read-only-folder child passed (exit %d; its output is above)", rc);
    chmod(dir, 0755);
    rmdir(dir);
}

static int readonly_child(const char *dir) {
    if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) return NN_SKIP;
    if (!pt_cpu()) {
        printf("child: no cpu device: %s\n", pt_last_error());
        return 1;
    }
    char target[4200];
    snprintf(target, sizeof target, "%s/model.safetensors", dir);
    pt_module *m = net(true, 6);
    pt_status s = pt_save(m, target);
    NN_CHECK(s == PT_ERR_IO && strstr(pt_last_error(), target) && strstr(pt_last_error(), "pt_save") &&
                 strstr(pt_last_error(), "Permission denied"),
             "save into a read-only folder: %s, \"%s\"", pt_status_name(s), pt_last_error());
    NN_CHECK(!dir_has_prefix(dir, "model"), "nothing written in the read-only folder");
    pt_module_free(m);
    return nn_finish();
}

/* Runs the Python helper; returns its exit status (-1: could not run). */
static int run_python(const char *args, const char *out_file) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s' '%s' %s > '%s' 2>&1", PT_NN_PYTHON, PT_NN_FIXTURE_SCRIPT, args, out_file);
    int rc = system(cmd);
    return rc == -1 ? -1 : WEXITSTATUS(rc);
}

static bool python_ready(void) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s' -c 'import numpy' > /dev/null 2>&1", PT_NN_PYTHON);
    return access(PT_NN_FIXTURE_SCRIPT, R_OK) == 0 && system(cmd) == 0;
}

static void test_interop(void) {
    /* A file written by hand in Python (committed): loads, values exact. */
    pt_module *m = net(false, 0);
    NN_CHECK(pt_load(m, PT_NN_FIXTURE, pt_cpu()) == PT_OK, "the NumPy-written fixture loads: %s", pt_last_error());
    const char *names[4] = {"0.bias", "0.weight", "2.bias", "2.weight"}; /* name order: k */
    bool exact = true;
    for (int k = 0; k < 4; ++k) {
        pt_tensor *t = pt_module_parameter(m, names[k]);
        float v[16];
        int64_t n = pt_tensor_numel(t);
        exact = exact && t && n <= 16 && pt_to_host(t, v, sizeof v) == PT_OK;
        for (int64_t i = 0; exact && i < n; ++i) exact = v[i] == (float)(k + 1) + (float)i / 8.0f;
    }
    NN_CHECK(exact, "fixture values are (k + 1) + i / 8");
    int64_t xs[2] = {1, 4};
    pt_tensor *x = pt_ones(pt_cpu(), PT_F32, 2, xs);
    pt_tensor *y = pt_module_forward(m, x);
    float out[2];
    /* Hidden h_j = sum_i(2 + (4j + i)/8) + (1 + j/8); then y = W2 h + b2. */
    double h[3], want[2];
    for (int j = 0; j < 3; ++j) {
        h[j] = 1 + j / 8.0;
        for (int i = 0; i < 4; ++i) h[j] += 2 + (4 * j + i) / 8.0;
    }
    for (int o = 0; o < 2; ++o) {
        want[o] = 3 + o / 8.0;
        for (int j = 0; j < 3; ++j) want[o] += (4 + (3 * o + j) / 8.0) * h[j];
    }
    NN_CHECK(pt_to_host(y, out, sizeof out) == PT_OK && fabs(out[0] - want[0]) < 1e-3 && fabs(out[1] - want[1]) < 1e-3,
             "forward with the fixture: %g %g, want %g %g", out[0], out[1], want[0], want[1]);
    pt_release(y);
    pt_release(x);
    pt_module_free(m);

    if (!python_ready()) {
        printf("note: %s with NumPy not available: Python-side checks skipped\n", PT_NN_PYTHON);
        return;
    }
    /* The script still writes exactly the committed fixture. */
    char regen[4096], listing[4096];
    snprintf(regen, sizeof regen, "%s", scratch_path("regenerated.safetensors"));
    snprintf(listing, sizeof listing, "%s", scratch_path("python_read.txt"));
    char args[8300];
    snprintf(args, sizeof args, "write '%s'", regen);
    NN_CHECK(run_python(args, listing) == 0, "python writes the fixture");
    FILE *a = fopen(regen, "rb"), *b = fopen(PT_NN_FIXTURE, "rb");
    unsigned char ba[1024], bb[1024];
    size_t la = a ? fread(ba, 1, sizeof ba, a) : 0, lb = b ? fread(bb, 1, sizeof bb, b) : 1;
    NN_CHECK(la == lb && memcmp(ba, bb, la) == 0, "committed fixture matches the script's output");
    if (a) fclose(a);
    if (b) fclose(b);

    /* Python reads a file we wrote; its bit patterns must be ours. */
    pt_module *ours = net(true, 5);
    char mine[4096];
    snprintf(mine, sizeof mine, "%s", scratch_path("for_python.safetensors"));
    pt_save(ours, mine);
    snprintf(args, sizeof args, "read '%s'", mine);
    int rc = run_python(args, listing);
    NN_CHECK(rc == 0, "python accepts our file (exit %d; see %s)", rc, listing);
    FILE *f = fopen(listing, "r");
    char line[4096];
    int matched = 0;
    while (f && fgets(line, sizeof line, f)) {
        if (line[0] == '#') {
            printf("python: %s", line);
            continue;
        }
        char name[64], dtype[8], shape[32];
        int used = 0;
        if (sscanf(line, "%63s %7s %31s %n", name, dtype, shape, &used) != 3) continue;
        pt_tensor *t = pt_module_parameter(ours, name);
        float v[16];
        int64_t n = pt_tensor_numel(t);
        bool same = t && n <= 16 && strcmp(dtype, "F32") == 0 && pt_to_host(t, v, sizeof v) == PT_OK;
        char *p = line + used;
        for (int64_t i = 0; same && i < n; ++i) {
            uint32_t bits;
            memcpy(&bits, &v[i], 4);
            char *end;
            same = strtoul(p, &end, 16) == bits && end != p;
            p = end;
        }
        NN_CHECK(same, "python reads %s as we wrote it", name);
        matched += same;
    }
    if (f) fclose(f);
    NN_CHECK(matched == 4, "python listed all 4 tensors (%d matched)", matched);
    pt_module_free(ours);
    pt_clear_error();
}

int main(int argc, char **argv) {
    nn_begin();
    scratch = argc > 1 ? argv[1] : "/tmp";
    if (argc > 3 && strcmp(argv[2], "readonly-save") == 0) return readonly_child(argv[3]);
    if (!pt_cpu()) {
        printf("SKIP: no cpu device: %s\n", pt_last_error());
        return NN_SKIP;
    }
    if (argc > 2 && strcmp(argv[2], "many-entries") == 0) {
        test_many_entries();
        return nn_finish();
    }
    test_round_trip();
    test_half_round_trip("F16", PT_F16);
    test_half_round_trip("BF16", PT_BF16);
    test_corrupt();
    test_nul_in_strings();
    test_save_symlink();
    test_save_readonly("/proc/self/exe");
    test_interop();
    return nn_finish();
}
