/* libportable core — what the module code shares with the optimizers and
 * safetensors I/O: the state-dict view of a module tree. Nothing here is
 * exported. */
#ifndef PORTABLE_CORE_NN_INTERNAL_H
#define PORTABLE_CORE_NN_INTERNAL_H

#include "autograd/autograd_internal.h"
#include "portable/nn.h"

/* One parameter of a module tree, as the state dict lists it. */
typedef struct pt__param {
    const char *name;     /* "0.weight", owned by the module */
    pt_tensor **slot;     /* where the module keeps it (*slot NULL: lazy, not created yet) */
    pt_module *owner;     /* the layer that declares it */
    int ndim;             /* expected shape (the tensor's once it exists); -1 entries: not known yet (lazy) */
    int64_t shape[PT_MAX_DIMS];
    bool buffer;          /* state that takes no gradient (running statistics) */
    bool count;           /* an i64 buffer (num_batches_tracked) */
} pt__param;

/* Lists m's parameters in state-dict order into out (up to cap) and returns
 * the count (which may exceed cap). */
int pt__module_params(pt_module *m, pt__param *out, int cap);
/* The same into a malloc'd array (*out; free() it). -1 + error on failure. */
int pt__module_params_alloc(pt_module *m, pt__param **out, const char *fn);
/* Puts t (an owned, unregistered reference, consumed) in p's slot: releases
 * the old tensor and marks t as requiring grad unless p is a buffer (a lazy layer's input size
 * follows from its tensors). grad (owned, may be NULL) becomes t's gradient. */
void pt__module_install(const pt__param *p, pt_tensor *t, pt_tensor *grad);

/* ---- pt_save's files (save_file.c) ---- */
/* Creates "<path>.tmp<pid>.<random>" with O_CREAT | O_EXCL | O_NOFOLLOW
 * (a file or symlink planted under the name is never opened or followed;
 * another name is tried), mode 0666 less the umask. Returns the descriptor
 * (tmp holds the name), or -1 with errno set. */
int pt__save_temporary(const char *path, char *tmp, size_t cap);
/* Gives the temporary fd the mode and, where allowed, the owner and group of
 * the regular file at path that it will replace (nothing if none). */
void pt__save_keep_owner(int fd, const char *path);
/* Flushes the folder holding path so the rename survives a crash (best
 * effort: some file systems cannot sync a folder). */
void pt__save_sync_folder(const char *path);
/* Removes temporaries of earlier saves of path whose process has exited
 * (a killed save's), if they are the saver's own regular files. */
void pt__save_remove_stale(const char *path);

#endif
