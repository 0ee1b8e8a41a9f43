/* Safetensors files (https://github.com/huggingface/safetensors) as named
 * tensors plus string metadata: u64 little-endian N, N bytes of JSON mapping
 * each tensor name to {"dtype", "shape", "data_offsets": [begin, end]}
 * (offsets relative to the data section) plus an optional "__metadata__"
 * object of strings, then the data section. We write the header padded with
 * spaces to a multiple of 8 and the tensors back to back, as the reference
 * implementation does, so its strict reader accepts our files.
 *
 * Reading trusts nothing in the file: the whole header is checked before
 * the caller sees an entry, and data is read only when asked for. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nn/safetensors_file.h"

/* The safetensors reference reader refuses headers over 100 MB. */
#define HEADER_LIMIT (100u * 1000u * 1000u)

static const struct {
    const char *name;
    pt_dtype dtype;
} known_dtypes[] = {{"F32", PT_F32}, {"F64", PT_F64}, {"I32", PT_I32}, {"I64", PT_I64},
                    {"U8", PT_U8},   {"F16", PT_F16}, {"BF16", PT_BF16}};

/* Valid safetensors dtypes this library has no tensor type for. */
static const char *const unsupported_dtypes[] = {"F8_E4M3", "F8_E5M2", "F8_E8M0",
                                                 "F4", "F6_E2M3", "F6_E3M2", "I8", "I16", "U16",
                                                 "U32", "U64", "BOOL", "C64"};

const char *pt__st_dtype_tag(pt_dtype t) {
    for (size_t i = 0; i < sizeof known_dtypes / sizeof known_dtypes[0]; ++i)
        if (known_dtypes[i].dtype == t) return known_dtypes[i].name;
    return NULL;
}

static bool host_little_endian(void) {
    const uint16_t one = 1;
    unsigned char first;
    memcpy(&first, &one, 1);
    return first == 1;
}

/* The file is little-endian; on a big-endian host swap each element. */
static void to_file_order(void *data, size_t bytes, size_t elem) {
    if (host_little_endian() || elem == 1) return;
    unsigned char *p = data;
    for (size_t at = 0; at + elem <= bytes; at += elem)
        for (size_t i = 0; i < elem / 2; ++i) {
            unsigned char t = p[at + i];
            p[at + i] = p[at + elem - 1 - i];
            p[at + elem - 1 - i] = t;
        }
}

/* ==== Save ================================================================ */

static pt_status io_error(const char *fn, const char *path, const char *what) {
    return pt__error(PT_ERR_IO, fn, "%s: %s: %s", path, what, strerror(errno));
}

/* What a save writes: n tensors with their names, n_meta metadata pairs. */
typedef struct st_contents {
    int n, n_meta;
    const char *const *names;
    pt_tensor *const *tensors;
    const char *const (*meta)[2];
} st_contents;

static char *build_header(const st_contents *w, size_t *len, uint64_t *data_bytes) {
    cJSON *root = cJSON_CreateObject();
    uint64_t at = 0;
    bool ok = root != NULL;
    for (int i = 0; i < w->n && ok; ++i) {
        pt_tensor *t = w->tensors[i];
        uint64_t bytes = (uint64_t)pt_tensor_numel(t) * pt_dtype_size(t->dtype);
        cJSON *entry = cJSON_AddObjectToObject(root, w->names[i]);
        ok = entry && cJSON_AddStringToObject(entry, "dtype", pt__st_dtype_tag(t->dtype));
        cJSON *shape = ok ? cJSON_AddArrayToObject(entry, "shape") : NULL;
        cJSON *offsets = shape ? cJSON_AddArrayToObject(entry, "data_offsets") : NULL;
        ok = offsets != NULL;
        for (int d = 0; ok && d < t->ndim; ++d)
            ok = cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)t->shape[d]));
        ok = ok && cJSON_AddItemToArray(offsets, cJSON_CreateNumber((double)at));
        ok = ok && cJSON_AddItemToArray(offsets, cJSON_CreateNumber((double)(at + bytes)));
        at += bytes;
    }
    cJSON *meta = ok ? cJSON_AddObjectToObject(root, "__metadata__") : NULL;
    ok = meta != NULL;
    for (int k = 0; ok && k < w->n_meta; ++k) ok = cJSON_AddStringToObject(meta, w->meta[k][0], w->meta[k][1]);
    char *json = ok ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    if (!json) return NULL;
    size_t raw = strlen(json), padded = (raw + 7) / 8 * 8;
    char *header = malloc(padded ? padded : 8);
    if (header) {
        memcpy(header, json, raw);
        memset(header + raw, ' ', padded - raw);
        *len = padded;
        *data_bytes = at;
    }
    cJSON_free(json);
    return header;
}

static pt_status write_all(const char *fn, const char *path, FILE *f, const st_contents *w) {
    size_t header_len = 0;
    uint64_t data_bytes = 0;
    char *header = build_header(w, &header_len, &data_bytes);
    if (!header) return pt__error(PT_ERR_OUT_OF_MEMORY, fn, "%s: out of host memory for the header", path);
    unsigned char len_le[8];
    for (int i = 0; i < 8; ++i) len_le[i] = (unsigned char)((uint64_t)header_len >> (8 * i));
    pt_status s = PT_OK;
    if (fwrite(len_le, 1, 8, f) != 8 || fwrite(header, 1, header_len, f) != header_len)
        s = io_error(fn, path, "writing the header failed");
    free(header);
    for (int i = 0; i < w->n && !s; ++i) {
        pt_tensor *t = w->tensors[i];
        size_t elem = pt_dtype_size(t->dtype), bytes = (size_t)pt_tensor_numel(t) * elem;
        if (bytes == 0) continue;
        void *host = malloc(bytes);
        if (!host) {
            s = pt__error(PT_ERR_OUT_OF_MEMORY, fn, "%s: out of host memory for \"%s\" (%zu bytes)", path,
                          w->names[i], bytes);
            break;
        }
        s = pt_to_host(t, host, bytes); /* waits for the tensor's device */
        if (!s) {
            to_file_order(host, bytes, elem);
            if (fwrite(host, 1, bytes, f) != bytes) s = io_error(fn, path, "writing tensor data failed");
        }
        free(host);
    }
    /* The data reaches the disk before the rename makes it the real file. */
    if (!s && (fflush(f) != 0 || fsync(fileno(f)) != 0)) s = io_error(fn, path, "flushing the file to disk failed");
    return s;
}

pt_status pt__st_save(const char *fn, const char *path, int n, const char *const *names, pt_tensor *const *tensors,
                      int n_meta, const char *const (*meta)[2]) {
    const st_contents w = {.n = n, .n_meta = n_meta, .names = names, .tensors = tensors, .meta = meta};
    /* Write next to the target and rename: a crash never leaves half a file
     * under the real name. */
    size_t cap = strlen(path) + 48;
    char *tmp = malloc(cap);
    if (!tmp) return pt__error(PT_ERR_OUT_OF_MEMORY, fn, "out of host memory");
    pt_status s = PT_OK;
    pt__save_remove_stale(path);
    int fd = pt__save_temporary(path, tmp, cap);
    if (fd >= 0) pt__save_keep_owner(fd, path);
    FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (fd < 0) {
        s = io_error(fn, path, "cannot create a temporary file next to it");
    } else if (!f) {
        s = io_error(fn, path, "cannot open a stream on the temporary file");
        close(fd);
    }
    if (!s) s = write_all(fn, path, f, &w);
    if (f && fclose(f) != 0 && !s) s = io_error(fn, path, "closing the temporary file failed");
    if (!s && rename(tmp, path) != 0) s = io_error(fn, path, "renaming the temporary file into place failed");
    if (!s) pt__save_sync_folder(path);
    if (s && fd >= 0) unlink(tmp); /* every failure after the temporary existed */
    free(tmp);
    return s;
}

/* ==== Load ================================================================ */

static char *shape_text(int ndim, const int64_t *shape, char *buf, size_t cap) {
    return pt__shape_str(ndim, shape, buf, cap);
}

/* A JSON number that is a whole value in [0, 2^53]. */
static bool json_count(const cJSON *item, uint64_t *out) {
    if (!cJSON_IsNumber(item)) return false;
    double v = item->valuedouble;
    if (!(v >= 0 && v <= 9007199254740992.0) || v != (double)(uint64_t)v) return false;
    *out = (uint64_t)v;
    return true;
}

/* The JSON string starting at the quote h[at] as written (escapes kept, a
 * raw NUL shown as \u0000), cut to fit out; sets *close to its closing quote. */
static void string_text(const char *h, size_t len, size_t at, char *out, size_t cap, size_t *close) {
    size_t o = 0, i = at + 1;
    bool full = false;
    for (; i < len && h[i] != '"'; ++i) {
        char piece[8] = {h[i], 0};
        if (h[i] == '\0')
            memcpy(piece, "\\u0000", 7);
        else if (h[i] == '\\' && i + 1 < len)
            piece[1] = h[++i];
        size_t k = strlen(piece);
        if (!full && o + k + 4 <= cap) {
            memcpy(out + o, piece, k);
            o += k;
        } else if (!full) {
            memcpy(out + o, "...", 3);
            o += 3;
            full = true;
        }
    }
    out[o] = '\0';
    *close = i;
}

/* cJSON decodes "\u0000" (and copies a raw NUL byte) into C strings, which
 * then end there: "0.weight\u0000junk" would silently be read as "0.weight".
 * The header's JSON text [0, len) has parsed, so every '"' outside a string
 * opens one; any NUL in a string is refused, naming the string as written. */
static pt_status reject_nul_strings(const pt__st_file *c, size_t len) {
    const char *h = c->header;
    size_t start = 0;
    bool in_string = false;
    for (size_t i = 0; i < len; ++i) {
        char ch = h[i];
        if (!in_string) {
            in_string = ch == '"';
            start = i;
            continue;
        }
        bool nul = ch == '\0';
        if (ch == '"') {
            in_string = false;
        } else if (ch == '\\' && i + 1 < len) {
            nul = h[i + 1] == 'u' && i + 5 < len && memcmp(h + i + 2, "0000", 4) == 0;
            ++i; /* the escaped character */
        }
        if (!nul) continue;
        char text[200];
        size_t close;
        string_text(h, len, start, text, sizeof text, &close);
        size_t after = close + 1;
        while (after < len && h[after] && strchr(" \t\n\r", h[after])) ++after;
        bool key = after < len && h[after] == ':';
        return pt__st_bad(c, NULL,
                          "the %s \"%s\" (header byte %zu) holds a NUL character (\\u0000), which would silently cut "
                          "it short: write the file without it",
                          key ? "key" : "string", text, start);
    }
    return PT_OK;
}

static pt_status read_header(pt__st_file *c) {
    struct stat sb;
    if (fstat(fileno(c->f), &sb) != 0) return pt__st_bad(c, NULL, "cannot stat the file: %s", strerror(errno));
    c->file_size = (uint64_t)sb.st_size;
    if (c->file_size < 8)
        return pt__st_bad(c, NULL, "the file is %llu bytes, too short for the 8-byte header length",
                          (unsigned long long)c->file_size);
    unsigned char len_le[8];
    if (fread(len_le, 1, 8, c->f) != 8) return pt__st_bad(c, NULL, "cannot read the header length");
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = n << 8 | len_le[i];
    c->header_len = n;
    if (n > c->file_size - 8)
        return pt__st_bad(c, NULL, "header length %llu is larger than the rest of the file (%llu bytes)",
                          (unsigned long long)n, (unsigned long long)(c->file_size - 8));
    if (n > HEADER_LIMIT)
        return pt__st_bad(c, NULL, "header length %llu is over the format's limit of %u bytes", (unsigned long long)n,
                          HEADER_LIMIT);
    if (n < 2) return pt__st_bad(c, NULL, "header length %llu is too short for a JSON object", (unsigned long long)n);
    c->data_start = 8 + n;
    c->data_len = c->file_size - c->data_start;
    c->header = malloc((size_t)n);
    if (!c->header) return pt__error(PT_ERR_OUT_OF_MEMORY, c->fn, "%s: out of host memory for the header", c->path);
    if (fread(c->header, 1, (size_t)n, c->f) != (size_t)n)
        return pt__st_bad(c, NULL, "cannot read the %llu-byte header", (unsigned long long)n);
    const char *end = NULL;
    c->json = cJSON_ParseWithLengthOpts(c->header, (size_t)n, &end, false);
    if (!c->json) {
        long at = end && end >= c->header && end <= c->header + n ? (long)(end - c->header) : -1;
        return pt__st_bad(c, NULL, "the header is not valid JSON (error near byte %ld of %llu)", at,
                          (unsigned long long)n);
    }
    for (const char *p = end; p && p < c->header + n; ++p)
        if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r' && *p != '\0')
            return pt__st_bad(c, NULL, "the header has bytes after its JSON object (at byte %ld)",
                              (long)(p - c->header));
    if (!cJSON_IsObject(c->json)) return pt__st_bad(c, NULL, "the header is JSON but not an object");
    return reject_nul_strings(c, end ? (size_t)(end - c->header) : (size_t)n);
}

static pt_status parse_dtype(const pt__st_file *c, const char *name, const cJSON *item, pt_dtype *out) {
    if (!cJSON_IsString(item)) return pt__st_bad(c, name, "\"dtype\" is missing or not a string");
    for (size_t i = 0; i < sizeof known_dtypes / sizeof known_dtypes[0]; ++i)
        if (strcmp(item->valuestring, known_dtypes[i].name) == 0) {
            *out = known_dtypes[i].dtype;
            return PT_OK;
        }
    for (size_t i = 0; i < sizeof unsupported_dtypes / sizeof unsupported_dtypes[0]; ++i)
        if (strcmp(item->valuestring, unsupported_dtypes[i]) == 0)
            return pt__st_bad(c, name, "unsupported dtype %s (libportable reads F32, F64, I32, I64, U8, F16, BF16)",
                              item->valuestring);
    return pt__st_bad(c, name, "unknown dtype \"%.40s\"", item->valuestring);
}

static pt_status parse_entry(const pt__st_file *c, const cJSON *item, pt__st_entry *e) {
    const char *name = item->string;
    e->name = name;
    e->claimed = -1;
    if (!cJSON_IsObject(item)) return pt__st_bad(c, name, "pt__st_entry is not a JSON object");
    pt_status s = parse_dtype(c, name, cJSON_GetObjectItemCaseSensitive(item, "dtype"), &e->dtype);
    if (s) return s;
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(item, "shape");
    if (!cJSON_IsArray(shape)) return pt__st_bad(c, name, "\"shape\" is missing or not an array");
    int nd = cJSON_GetArraySize(shape);
    if (nd > PT_MAX_DIMS) return pt__st_bad(c, name, "shape has %d dims (libportable allows %d)", nd, PT_MAX_DIMS);
    e->ndim = nd;
    uint64_t numel = 1;
    const cJSON *dim;
    int d = 0;
    cJSON_ArrayForEach(dim, shape) {
        uint64_t v;
        if (!json_count(dim, &v)) return pt__st_bad(c, name, "shape[%d] is not a non-negative integer", d);
        if (v > 0 && numel > (UINT64_C(1) << 48) / v) return pt__st_bad(c, name, "shape has more than 2^48 elements");
        numel *= v;
        e->shape[d++] = (int64_t)v;
    }
    const cJSON *offsets = cJSON_GetObjectItemCaseSensitive(item, "data_offsets");
    if (!cJSON_IsArray(offsets) || cJSON_GetArraySize(offsets) != 2 ||
        !json_count(cJSON_GetArrayItem(offsets, 0), &e->begin) ||
        !json_count(cJSON_GetArrayItem(offsets, 1), &e->end))
        return pt__st_bad(c, name, "\"data_offsets\" must be an array of two non-negative integers");
    if (e->begin > e->end)
        return pt__st_bad(c, name, "data_offsets [%llu, %llu] end before they begin", (unsigned long long)e->begin,
                          (unsigned long long)e->end);
    if (e->end > c->data_len)
        return pt__st_bad(c, name, "data_offsets [%llu, %llu] run past the data section (%llu bytes: truncated file?)",
                          (unsigned long long)e->begin, (unsigned long long)e->end, (unsigned long long)c->data_len);
    uint64_t want = numel * pt_dtype_size(e->dtype);
    if (e->end - e->begin != want) {
        char sh[160];
        return pt__st_bad(c, name, "data_offsets [%llu, %llu] hold %llu bytes but %s %s needs %llu",
                          (unsigned long long)e->begin, (unsigned long long)e->end,
                          (unsigned long long)(e->end - e->begin), pt_dtype_name(e->dtype),
                          shape_text(e->ndim, e->shape, sh, sizeof sh), (unsigned long long)want);
    }
    return PT_OK;
}

static int by_begin(const void *a, const void *b) {
    const pt__st_entry *x = *(pt__st_entry *const *)a, *y = *(pt__st_entry *const *)b;
    return x->begin < y->begin ? -1 : x->begin > y->begin ? 1 : (x->end > y->end) - (x->end < y->end);
}

static int by_name(const void *a, const void *b) {
    return strcmp((*(pt__st_entry *const *)a)->name, (*(pt__st_entry *const *)b)->name);
}

static pt_status parse_entries(pt__st_file *c) {
    int count = cJSON_GetArraySize(c->json);
    c->entries = calloc(count > 0 ? (size_t)count : 1, sizeof *c->entries);
    if (!c->entries) return pt__error(PT_ERR_OUT_OF_MEMORY, c->fn, "%s: out of host memory", c->path);
    const cJSON *item;
    cJSON_ArrayForEach(item, c->json) {
        if (!item->string) return pt__st_bad(c, NULL, "the header has an entry without a name");
        if (strcmp(item->string, "__metadata__") == 0) {
            if (!cJSON_IsObject(item)) return pt__st_bad(c, NULL, "\"__metadata__\" is not an object");
            c->metadata = item;
            const cJSON *kv;
            cJSON_ArrayForEach(kv, item) {
                if (!cJSON_IsString(kv))
                    return pt__st_bad(c, NULL, "\"__metadata__\" value \"%.60s\" is not a string", kv->string);
            }
            continue;
        }
        pt_status s = parse_entry(c, item, &c->entries[c->n_entries]);
        if (s) return s;
        ++c->n_entries;
    }
    /* Names sorted once: duplicates are neighbours (n log n; comparing
     * every pair took hours for a header near the 100 MB limit), and
     * readers look names up by binary search (pt__st_find). */
    c->by_name = malloc((c->n_entries > 0 ? (size_t)c->n_entries : 1) * sizeof *c->by_name);
    if (!c->by_name) return pt__error(PT_ERR_OUT_OF_MEMORY, c->fn, "%s: out of host memory", c->path);
    for (int i = 0; i < c->n_entries; ++i) c->by_name[i] = &c->entries[i];
    qsort(c->by_name, (size_t)c->n_entries, sizeof *c->by_name, by_name);
    for (int i = 1; i < c->n_entries; ++i)
        if (strcmp(c->by_name[i - 1]->name, c->by_name[i]->name) == 0)
            return pt__st_bad(c, c->by_name[i]->name, "named twice in the header");
    /* No two tensors may share bytes. */
    pt__st_entry **order = malloc((c->n_entries > 0 ? (size_t)c->n_entries : 1) * sizeof *order);
    if (!order) return pt__error(PT_ERR_OUT_OF_MEMORY, c->fn, "%s: out of host memory", c->path);
    for (int i = 0; i < c->n_entries; ++i) order[i] = &c->entries[i];
    qsort(order, (size_t)c->n_entries, sizeof *order, by_begin);
    pt_status s = PT_OK;
    const pt__st_entry *last = NULL; /* the non-empty range reaching furthest so far */
    for (int i = 0; i < c->n_entries && !s; ++i) {
        const pt__st_entry *e = order[i];
        if (e->begin == e->end) continue;
        if (last && e->begin < last->end)
            s = pt__st_bad(c, e->name, "data_offsets [%llu, %llu] overlap those of \"%s\" [%llu, %llu]",
                           (unsigned long long)e->begin, (unsigned long long)e->end, last->name,
                           (unsigned long long)last->begin, (unsigned long long)last->end);
        if (!last || e->end > last->end) last = e;
    }
    free(order);
    return s;
}

/* path opened for reading if it is a regular file: a FIFO would block
 * the load for ever (O_NONBLOCK keeps even the open from waiting for a
 * writer), and a device such as /dev/zero has no size to check the header
 * against. */
static pt_status open_regular(const char *fn, const char *path, FILE **out) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return pt__error(PT_ERR_IO, fn, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    const bool stated = fstat(fd, &st) == 0;
    if (!stated || !S_ISREG(st.st_mode)) {
        const char *why = stated ? "not a regular file (a FIFO, device or folder)" : strerror(errno);
        close(fd);
        return pt__error(PT_ERR_IO, fn, "%s: %s; %s reads regular files only", path, why, fn);
    }
    *out = fdopen(fd, "rb");
    if (*out) return PT_OK;
    close(fd);
    return pt__error(PT_ERR_IO, fn, "%s: cannot open a stream on it: %s", path, strerror(errno));
}


pt_status pt__st_bad(const pt__st_file *c, const char *tensor, const char *fmt, ...) {
    char what[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (tensor) return pt__error(PT_ERR_IO, c->fn, "%s: tensor \"%s\": %s", c->path, tensor, what);
    return pt__error(PT_ERR_IO, c->fn, "%s: %s", c->path, what);
}

pt_status pt__st_open(pt__st_file *c, const char *fn, const char *path) {
    *c = (pt__st_file){.fn = fn, .path = path};
    pt_status s = open_regular(fn, path, &c->f);
    if (!s) s = read_header(c);
    if (!s) s = parse_entries(c);
    if (s) pt__st_close(c);
    return s;
}

void pt__st_close(pt__st_file *c) {
    if (c->f) fclose(c->f);
    cJSON_Delete(c->json);
    free(c->header);
    free(c->entries);
    free(c->by_name);
    *c = (pt__st_file){.fn = c->fn, .path = c->path};
}

pt__st_entry *pt__st_find(const pt__st_file *c, const char *name) {
    const pt__st_entry key = {.name = name}, *kp = &key;
    pt__st_entry **hit = bsearch(&kp, c->by_name, (size_t)c->n_entries, sizeof *c->by_name, by_name);
    return hit ? *hit : NULL;
}

const char *pt__st_meta(const pt__st_file *c, const char *key) {
    const cJSON *v = c->metadata ? cJSON_GetObjectItemCaseSensitive(c->metadata, key) : NULL;
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

pt_status pt__st_read_host(pt__st_file *c, const pt__st_entry *e, void **out) {
    size_t bytes = (size_t)(e->end - e->begin);
    void *host = malloc(bytes ? bytes : 1);
    if (!host)
        return pt__error(PT_ERR_OUT_OF_MEMORY, c->fn, "%s: out of host memory for \"%s\" (%zu bytes)", c->path,
                         e->name, bytes);
    if (bytes && (fseeko(c->f, (off_t)(c->data_start + e->begin), SEEK_SET) != 0 ||
                  fread(host, 1, bytes, c->f) != bytes)) {
        free(host);
        return pt__st_bad(c, e->name, "cannot read its %zu bytes of data (the file changed while loading?)", bytes);
    }
    to_file_order(host, bytes, pt_dtype_size(e->dtype));
    *out = host;
    return PT_OK;
}

pt_tensor *pt__st_read(pt__st_file *c, const pt__st_entry *e, pt_device *d) {
    void *host = NULL;
    if (pt__st_read_host(c, e, &host)) return NULL;
    pt_tensor *t = pt_from_data(d, e->dtype, e->ndim, e->shape, host);
    free(host);
    return t;
}
