/* The ten-line example of the README, built and run by the tests so it
 * stays true. */
#include <portable/portable.h>
#include <stdio.h>

int main(void) {
    pt_device *dev = pt_default_device();                 /* PORTABLE_BACKEND picks it */
    if (!dev) { fprintf(stderr, "%s\n", pt_last_error()); return 1; }
    pt_scope scope = pt_scope_begin();                    /* releases what is made inside */
    int64_t shape[2] = {512, 512};
    pt_tensor *a = pt_randn(dev, PT_F32, 2, shape);       /* lives on dev */
    pt_tensor *c = pt_matmul(a, pt_transpose(a, 0, 1));   /* queued on dev, returns at once */
    double norm = pt_item(pt_norm(c));                    /* waits, copies one value back */
    pt_scope_end(scope);
    if (norm != norm) { fprintf(stderr, "%s\n", pt_last_error()); return 1; }
    printf("%s: |A A^T| = %g\n", pt_device_name(dev), norm);
    return 0;
}
