/* libportable OpenCL backend — SHA-256 (launch_sha256.c), standalone so the
 * unit test can compile it with the FIPS vectors. */
#ifndef PT_OCL_SHA256_H
#define PT_OCL_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct ocl_sha256 {
    uint32_t h[8];
    uint64_t bytes;
    unsigned char buf[64];
    size_t used;
} ocl_sha256;

void ocl_sha256_init(ocl_sha256 *s);
void ocl_sha256_update(ocl_sha256 *s, const void *data, size_t n);
void ocl_sha256_final(ocl_sha256 *s, unsigned char out[32]);

#endif
