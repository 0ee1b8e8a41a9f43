/* An application outside the libportable tree, built against an installed
 * copy (compiler flags, pkg-config, find_package) or the source tree
 * (add_subdirectory) by tests/packaging/check_install.sh. It runs on the
 * device named by argv[1] and checks a result, the version it runs with,
 * and a DLPack round trip through the installed <portable/dlpack.h>. */
#include <portable/dlpack.h>
#include <portable/portable.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s <device>\n", argv[0]);
        return 2;
    }
    pt_device *d = pt_device_get(argv[1]);
    if (!d || pt_set_default_device(d) != PT_OK) {
        fprintf(stderr, "app: %s\n", pt_last_error());
        return 1;
    }
    if (pt_version()->number != PT_VERSION_NUMBER) {
        fprintf(stderr, "app: headers %s, library %s\n", PT_VERSION_STRING, pt_version()->string);
        return 1;
    }
    pt_scope s = pt_scope_begin();
    int64_t shape[2] = {2, 3};
    pt_tensor *a = pt_reshape(pt_arange(pt_default_device(), PT_F32, 1, 7, 1), 2, shape);
    double sum = pt_item(pt_sum(pt_matmul(a, pt_transpose(a, 0, 1)), PT_ALL, false));
    /* a's memory handed out and taken back without a copy */
    pt_tensor *back = pt_from_dlpack(pt_to_dlpack(a), 0);
    bool shared = back && pt_tensor_shares_storage(a, back);
    pt_scope_end(s);
    /* A A^T for rows (1 2 3), (4 5 6): 14 + 32 + 32 + 77 = 155 */
    if (sum != 155.0 || !shared) {
        fprintf(stderr, "app: on %s sum %g (expected 155), shared %d: %s\n", argv[1], sum, shared,
                pt_last_error());
        return 1;
    }
    printf("app: libportable %s on %s: ok\n", pt_version()->string, pt_device_name(d));
    return 0;
}
