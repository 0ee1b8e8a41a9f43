/* f64 storage on an OpenCL device without cl_khr_fp64: run
 * with PORTABLE_OPENCL_FP64=0, which makes PoCL pose as such a device. A
 * module's f64 parameters made on the cpu are saved, loaded onto the OpenCL
 * device (host to device by bytes), saved again from there (device to host)
 * and must give the same file; casts f64 <-> f32/i32 there run through the
 * host and match the cpu's; f64 arithmetic stays PT_ERR_UNSUPPORTED. Exit 77
 * when there is no OpenCL device. */
#include "check.h"

static unsigned char *slurp(const char *path, long *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    *n = ftell(f);
    rewind(f);
    unsigned char *b = malloc((size_t)*n);
    if (b && fread(b, 1, (size_t)*n, f) != (size_t)*n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    return b;
}

/* x (any device) cast to t, read back as doubles. */
static void cast_values(pt_tensor *x, pt_dtype t, double *out, int n) {
    pt_tensor *c = pt_cast(x, t);
    CHECK_NOT_NULL(c);
    if (!c) return;
    pt_tensor *h = pt_to(c, pt_cpu()), *d = h ? pt_cast(h, PT_F64) : NULL;
    CHECK_NOT_NULL(d);
    if (d) CHECK_OK(pt_to_host(d, out, (size_t)n * sizeof(double)));
    pt_release(d);
    pt_release(h);
    pt_release(c);
}

int main(void) {
    pt_device *ocl = pt_device_get("opencl:0");
    if (!ocl) {
        printf("no OpenCL device: %s\n", pt_last_error());
        return 77;
    }
    const int64_t shape[2] = {2, 3};
    const double v[6] = {1.5, -2.25, 1e300, -0.0, 3.0e9, 123456789.125};
    pt_tensor *x = pt_from_data(ocl, PT_F64, 2, shape, v);
    CHECK_NOT_NULL(x);
    /* The device really is fp64-less here: f64 arithmetic is refused. */
    CHECK(pt_add(x, x) == NULL);
    CHECK_LAST(PT_ERR_UNSUPPORTED);
    pt_clear_error();

    /* Casts through the host, compared with the cpu's. */
    pt_tensor *xc = pt_from_data(pt_cpu(), PT_F64, 2, shape, v);
    const pt_dtype targets[3] = {PT_F32, PT_I32, PT_I64};
    for (int t = 0; t < 3; ++t) {
        double got[6], want[6];
        cast_values(x, targets[t], got, 6);
        cast_values(xc, targets[t], want, 6);
        for (int i = 0; i < 6; ++i) CHECK(got[i] == want[i]); /* exact, inf included */
    }
    /* ... and back to f64, from a transposed f32 view. */
    pt_tensor *f = pt_cast(x, PT_F32), *ft = f ? pt_transpose(f, 0, 1) : NULL;
    CHECK_NOT_NULL(ft);
    if (ft) {
        double got[6], want[6];
        pt_tensor *fc = pt_to(ft, pt_cpu());
        cast_values(ft, PT_F64, got, 6);
        cast_values(fc, PT_F64, want, 6);
        for (int i = 0; i < 6; ++i) CHECK(got[i] == want[i]); /* exact, inf included */
        pt_release(fc);
    }

    /* Save on the cpu, load onto the device, save from there: same bytes. */
    char p1[64], p2[64];
    snprintf(p1, sizeof p1, "/tmp/pt_nofp64_%ld_a.safetensors", (long)getpid());
    snprintf(p2, sizeof p2, "/tmp/pt_nofp64_%ld_b.safetensors", (long)getpid());
    pt_module *cpu_m = pt_linear(2), *ocl_m = pt_linear(2);
    const int64_t in_shape[2] = {1, 3};
    pt_tensor *in = pt_from_data(pt_cpu(), PT_F64, 2, in_shape, v);
    pt_tensor *y = pt_module_forward(cpu_m, in); /* makes f64 parameters on the cpu */
    CHECK_NOT_NULL(y);
    CHECK_OK(pt_save(cpu_m, p1));
    CHECK_OK(pt_load(ocl_m, p1, ocl));
    pt_tensor *w = pt_module_parameter(ocl_m, "weight");
    CHECK_NOT_NULL(w);
    if (w) {
        CHECK(pt_tensor_device(w) == ocl);
        CHECK_INT(pt_tensor_dtype(w), PT_F64);
    }
    CHECK_OK(pt_save(ocl_m, p2));
    long n1 = 0, n2 = 0;
    unsigned char *b1 = slurp(p1, &n1), *b2 = slurp(p2, &n2);
    CHECK(b1 && b2 && n1 == n2 && n1 > 0 && memcmp(b1, b2, (size_t)n1) == 0);
    free(b1);
    free(b2);
    remove(p1);
    remove(p2);
    pt_release(y);
    pt_release(in);
    pt_module_free(cpu_m);
    pt_module_free(ocl_m);
    pt_release(ft);
    pt_release(f);
    pt_release(xc);
    pt_release(x);
    return check_summary();
}
