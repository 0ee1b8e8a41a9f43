/* libportable CUDA backend — the generated kernels of fused chains
 * (fused.h), compiled once per (compute capability, chain structure) and
 * kept for the process in memory, found by the structure's bytes. Loaded with cudaLibraryLoadData: context-independent,
 * so one load serves every device of the architecture. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "fused.h"

typedef struct entry {
    struct entry *next;
    int major, minor;
    ptcu_fused_key key;
    cudaLibrary_t lib;
    cudaKernel_t kernel;
} entry;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static entry *entries;

static entry *find(int major, int minor, const ptcu_fused_key *key) {
    for (entry *e = entries; e; e = e->next)
        if (e->major == major && e->minor == minor && !memcmp(&e->key, key, sizeof *key)) return e;
    return NULL;
}

/* Compiles and loads source for major.minor into *e (lock held). */
static pt_status build(int major, int minor, const char *source, entry *e) {
    void *image = NULL;
    size_t size = 0;
    pt_status s = ptcu_compile(source, major, minor, &image, &size);
    if (s != PT_OK) return s;
    cudaError_t err = cudaLibraryLoadData(&e->lib, image, NULL, NULL, 0, NULL, NULL, 0);
    free(image);
    if (err != cudaSuccess)
        return ptcu_cuda_error(err, "fused: cudaLibraryLoadData of a generated kernel (%zu bytes) for sm_%d%d", size,
                               major, minor);
    err = cudaLibraryGetKernel(&e->kernel, e->lib, "ptcu_fused_kernel");
    if (err != cudaSuccess) {
        (void)cudaLibraryUnload(e->lib);
        return ptcu_cuda_error(err, "fused: cudaLibraryGetKernel(ptcu_fused_kernel)");
    }
    return PT_OK;
}

pt_status ptcu_fused_kernel(ptcu_device *d, const ptcu_fused_key *key, const pt_fused_chain *c, cudaKernel_t *out) {
    pthread_mutex_lock(&lock);
    entry *e = find(d->cc_major, d->cc_minor, key);
    pt_status s = PT_OK;
    if (!e) {
        char *source = ptcu_fused_source(c, &key->plan);
        e = source ? calloc(1, sizeof *e) : NULL;
        if (!e) {
            s = ptcu_fail(PT_ERR_OUT_OF_MEMORY, "fused: out of host memory for a kernel's source and cache entry");
        } else {
            e->key = *key;
            e->major = d->cc_major;
            e->minor = d->cc_minor;
            s = build(e->major, e->minor, source, e);
        }
        if (s == PT_OK) {
            e->next = entries;
            entries = e;
            ptcu_host->log(PT_LOG_DEBUG, "cuda: compiled a fused kernel%s%s (%zu bytes of source) for sm_%d%d with %s",
                           c->reduce ? " ending in a " : "", c->reduce ? pt_op_name(c->reduce->kind) : "",
                           strlen(source), d->cc_major, d->cc_minor, ptcu_compiler_identity());
        } else {
            free(e);
            e = NULL;
        }
        free(source);
    }
    if (e) *out = e->kernel;
    pthread_mutex_unlock(&lock);
    return s;
}

void ptcu_fused_forget(void) {
    pthread_mutex_lock(&lock);
    while (entries) {
        entry *e = entries;
        entries = e->next;
        (void)cudaLibraryUnload(e->lib);
        free(e);
    }
    pthread_mutex_unlock(&lock);
}
