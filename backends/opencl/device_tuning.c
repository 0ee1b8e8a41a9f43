/* libportable OpenCL backend — CLBlast tuning parameters for devices whose
 * tuning CLBlast's own database lacks (CLBlast 1.5.3 has none for recent
 * NVIDIA GPUs such as the H100, so it falls back to generic parameters).
 *
 * At device init (ocl_device_ready) every entry whose device-name part
 * occurs in the device's name is handed to CLBlastOverrideParameters. Two
 * sources, in this order (a later entry for the same kernel wins):
 *   1. ocl_tuning_table below, compiled in;
 *   2. the file named by PORTABLE_OPENCL_TUNING, one entry a line:
 *        <device name part>|<kernel>|<precision: 32 or 64>|NAME=VALUE,NAME=VALUE,...
 *      ('#' starts a comment line; device name part "*" matches every
 *      device), for trying measured values before they go into the table
 *      (and for tests/conformance/check_clblast_tuning.sh).
 * To fill the table: on the GPU, run CLBlast's tuner for the kernel
 * (clblast_tuner_xgemm --precision 32, and xgemm_direct, copy, pad,
 * transpose as needed) and copy the best parameters, with the device name
 * the tuner prints, into a row. CLBlast checks the parameter set: a missing
 * or unknown name is a warning naming the entry, never fatal (CLBlast then
 * keeps its generic parameters). */
#include <clblast_c.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

#define OCL_TUNING_MAX_PARAMS 24

typedef struct ocl_tuning_entry {
    const char *device; /* a part of CL_DEVICE_NAME */
    const char *kernel; /* CLBlast's kernel name: "Xgemm", "XgemmDirect", ... */
    int precision;      /* 32 or 64 */
    const char *params; /* "NAME=VALUE,NAME=VALUE,..." */
} ocl_tuning_entry;

/* Measured tunings, one row per device x kernel x precision; no guessed
 * values here. Each row says where it was measured. */
static const ocl_tuning_entry ocl_tuning_table[] = {
    /* NVIDIA H100 80GB HBM3, driver 580.159.04 (OpenCL 3.0 CUDA 13.0),
     * 2026-11-26, tests/gpu/tune_clblast.py: the best of 10 candidates at
     * n = 2048, 30.2 TFLOP/s against 22.5 and 24.8 for CLBlast's generic
     * parameters (first and last run): 1.22x.
     * bench/results/cuda-h100-2026-11-26-run2.md. */
    {"NVIDIA H100 80GB HBM3", "Xgemm", 32,
     "GEMMK=0,KREG=1,KWG=32,KWI=2,MDIMA=16,MDIMC=16,MWG=128,NDIMB=16,NDIMC=16,NWG=128,SA=1,SB=1,STRM=0,"
     "STRN=0,VWM=8,VWN=8"},
    /* PoCL 3.1 (pthread device) on the 2-core AMD EPYC VM (AVX2) that builds
     * this project, 2026-11-26: the direct GEMM (every product below
     * CLBlast's indirect threshold, which is all a digits or GPT-sized
     * training step has) with 8x8 work-items each holding 4x4 outputs in
     * vectors of 4, against CLBlast's generic direct parameters, over the
     * six products of the MLP example's step (64x64x256 ... 10x64x256):
     * 0.73 ms against 2.12 ms and 0.67 against 1.24 in two runs on the
     * loaded machine (of 9 candidates; bench/results/x86-2core-pocl-gemm-
     * 2026-11-26.md). */
    {"pthread-haswell-AMD EPYC", "XgemmDirect", 32,
     "WGD=32,MDIMCD=8,NDIMCD=8,MDIMAD=8,NDIMBD=8,KWID=2,VWMD=4,VWND=4,PADA=1,PADB=1"},
    {NULL, NULL, 0, NULL},
};

/* Parses params and hands them to CLBlast; the outcome is logged. */
static void ocl_tuning_apply_one(const ocl_device *d, const ocl_tuning_entry *e,
                                 const char *source) {
    const char *names[OCL_TUNING_MAX_PARAMS];
    size_t values[OCL_TUNING_MAX_PARAMS];
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", e->params);
    size_t n = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        char *end = NULL;
        unsigned long long v = eq ? strtoull(eq + 1, &end, 10) : 0;
        if (!eq || eq == tok || end == eq + 1 || *end != '\0' || n == OCL_TUNING_MAX_PARAMS) {
            ocl_log(PT_LOG_WARN,
                    "CLBlast tuning for %s %s (%d-bit) from %s: cannot read \"%s\" (want "
                    "NAME=VALUE, at most %d of them); entry ignored",
                    d->name, e->kernel, e->precision, source, tok, OCL_TUNING_MAX_PARAMS);
            return;
        }
        *eq = '\0';
        names[n] = tok;
        values[n++] = (size_t)v;
    }
    CLBlastPrecision p = e->precision == 64 ? CLBlastPrecisionDouble : CLBlastPrecisionSingle;
    CLBlastStatusCode st = CLBlastOverrideParameters(d->id, e->kernel, p, n, names, values);
    if (st == CLBlastSuccess)
        ocl_log(PT_LOG_INFO, "CLBlast tuning for %s %s (%d-bit) applied from %s: %zu parameters",
                d->name, e->kernel, e->precision, source, n);
    else
        ocl_log(PT_LOG_WARN,
                "CLBlast tuning for %s %s (%d-bit) from %s refused by CLBlastOverrideParameters "
                "(status %d%s); CLBlast keeps its own parameters",
                d->name, e->kernel, e->precision, source, (int)st,
                st == CLBlastInvalidOverrideKernel || st == CLBlastDatabaseError
                    ? ": unknown kernel name"
                : st == CLBlastMissingOverrideParameter ? ": the kernel's parameter set is incomplete"
                                                        : "");
}

/* A tuning file is a few lines; anything bigger is not one. */
#define OCL_TUNING_MAX_BYTES (1u << 20)

/* path opened for reading only if it is a regular file of at most
 * OCL_TUNING_MAX_BYTES: a FIFO would block the first OpenCL use for ever
 * (O_NONBLOCK keeps even the open from waiting for a writer), /dev/zero or
 * /dev/urandom would be read without end. NULL with a warning otherwise. */
static FILE *ocl_tuning_open(const char *path) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    const char *why = fd < 0                  ? strerror(errno)
                      : fstat(fd, &st) != 0   ? "cannot stat it"
                      : !S_ISREG(st.st_mode)  ? "not a regular file"
                      : st.st_size > OCL_TUNING_MAX_BYTES ? "larger than 1 MiB"
                                                          : NULL;
    FILE *f = why ? NULL : fdopen(fd, "r");
    if (!f) {
        ocl_log(PT_LOG_WARN, "PORTABLE_OPENCL_TUNING=%s: %s; no tuning loaded from it", path,
                why ? why : strerror(errno));
        if (fd >= 0) close(fd);
    }
    return f;
}

static void ocl_tuning_apply_file(const ocl_device *d, const char *path) {
    FILE *f = ocl_tuning_open(path);
    if (!f) return;
    char line[1400];
    int lineno = 0;
    /* bounded even if the file grows while it is read */
    while (ftell(f) <= (long)OCL_TUNING_MAX_BYTES && fgets(line, sizeof line, f)) {
        ++lineno;
        line[strcspn(line, "\r\n")] = '\0';
        if (line[0] == '#' || line[0] == '\0') continue;
        char *save = NULL;
        char *dev = strtok_r(line, "|", &save), *kernel = strtok_r(NULL, "|", &save);
        char *prec = strtok_r(NULL, "|", &save), *params = strtok_r(NULL, "|", &save);
        if (!dev || !kernel || !prec || !params || (strcmp(prec, "32") && strcmp(prec, "64"))) {
            ocl_log(PT_LOG_WARN,
                    "%s:%d: want <device name part>|<kernel>|<32 or 64>|NAME=VALUE,...; line "
                    "ignored",
                    path, lineno);
            continue;
        }
        if (strcmp(dev, "*") != 0 && !strstr(d->name, dev)) continue;
        char source[600];
        snprintf(source, sizeof source, "%s:%d", path, lineno);
        ocl_tuning_entry e = {dev, kernel, atoi(prec), params};
        ocl_tuning_apply_one(d, &e, source);
    }
    fclose(f);
}

void ocl_tuning_apply(const ocl_device *d) {
    for (const ocl_tuning_entry *e = ocl_tuning_table; e->device; ++e)
        if (strstr(d->name, e->device)) ocl_tuning_apply_one(d, e, "the built-in table");
    const char *path = getenv("PORTABLE_OPENCL_TUNING");
    if (path && *path) ocl_tuning_apply_file(d, path);
}
