/* libportable core — safetensors files as named tensors plus string
 * metadata, without knowing what the tensors are for: the one writer and
 * the one checked reader that pt_save / pt_load (a module's parameters) and
 * pt_optimizer_save / pt_optimizer_load (an optimizer's state) share.
 * Nothing here is exported.
 *
 * Every error is PT_ERR_IO (or PT_ERR_OUT_OF_MEMORY) with a message that
 * starts "<fn>: <path>: ", fn being the public function the caller names. */
#ifndef PORTABLE_CORE_NN_SAFETENSORS_FILE_H
#define PORTABLE_CORE_NN_SAFETENSORS_FILE_H

#include <stdio.h>

#include "nn/nn_internal.h"

struct cJSON;

/* ---- Writing ---- */

/* Writes the n tensors (copied to the host first: waits for their devices)
 * under names, and the n_meta pairs meta[k][0] = meta[k][1] as the
 * "__metadata__" object, to path through a temporary file in the same
 * folder renamed into place (save_file.c): a failure leaves no temporary
 * and the old file as it was. */
pt_status pt__st_save(const char *fn, const char *path, int n, const char *const *names, pt_tensor *const *tensors,
                      int n_meta, const char *const (*meta)[2]);

/* ---- Reading ---- */

/* One tensor of the header, checked against the file. */
typedef struct pt__st_entry {
    const char *name;    /* in the parsed header */
    pt_dtype dtype;
    int ndim;
    int64_t shape[PT_MAX_DIMS];
    uint64_t begin, end; /* in the data section */
    int claimed;         /* -1 until the caller matches it with something (its own index) */
} pt__st_entry;

typedef struct pt__st_file {
    const char *fn, *path;
    FILE *f;
    uint64_t file_size, header_len, data_start, data_len;
    char *header;
    struct cJSON *json;
    const struct cJSON *metadata; /* "__metadata__", NULL when absent */
    pt__st_entry *entries;        /* in header order */
    pt__st_entry **by_name;       /* sorted by name */
    int n_entries;
} pt__st_file;

/* Opens path (a regular file only) and checks its whole header: length
 * against the file size, the JSON, every entry's dtype, shape and
 * data_offsets (in range, the size the shape needs, no overlaps), no name
 * twice, no NUL in a string, metadata values all strings. Nothing is read
 * from the data section. On failure f holds nothing: pt__st_close is
 * still allowed. */
pt_status pt__st_open(pt__st_file *f, const char *fn, const char *path);
void pt__st_close(pt__st_file *f);
/* The entry called name, or NULL (binary search). */
pt__st_entry *pt__st_find(const pt__st_file *f, const char *name);
/* The metadata value of key, or NULL when the file has none. */
const char *pt__st_meta(const pt__st_file *f, const char *key);
/* e's bytes (host order) into a malloc'd buffer (*out; free() it, at least
 * one byte even for an empty tensor). */
pt_status pt__st_read_host(pt__st_file *f, const pt__st_entry *e, void **out);
/* e as a new tensor on d (registered in the innermost scope). */
pt_tensor *pt__st_read(pt__st_file *f, const pt__st_entry *e, pt_device *d);
/* PT_ERR_IO "<fn>: <path>: [tensor "<tensor>": ]<what>". */
pt_status pt__st_bad(const pt__st_file *f, const char *tensor, const char *fmt, ...) PT_PRINTF(3, 4);
/* "F32", "I64", ...: the file's name of a dtype. */
const char *pt__st_dtype_tag(pt_dtype t);

#endif
