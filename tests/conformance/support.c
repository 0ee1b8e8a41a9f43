/* `conformance --support`: which op kinds the device under test runs in
 * which dtypes, as a Markdown grid (the backends' READMEs paste it):
 * rows are the kinds of include/portable/op_table.h, columns the dtypes of
 * include/portable/types.h, and each cell is what pt_device_supports()
 * answers: "yes" (PT_OK), "no" (PT_ERR_UNSUPPORTED: the backend lacks it)
 * or "-" (PT_ERR_DTYPE: the core never sends that kind in that dtype).
 * Nothing is run on the device. */
#include <stdio.h>

#include "conformance.h"

int print_support_grid(pt_device *d) {
    printf("\n| op kind |");
    FOR_EACH_DTYPE_IN(t, PT_DTYPES_ANY) printf(" %s |", pt_dtype_table_name(t));
    printf("\n| --- |");
    FOR_EACH_DTYPE_IN(t, PT_DTYPES_ANY) printf(" --- |");
    printf("\n");
    int problems = 0;
    char first[512] = "";
    for (pt_op_kind k = (pt_op_kind)0; k < PT_OP_COUNT; k = (pt_op_kind)(k + 1)) {
        printf("| %s |", pt_op_name(k));
        FOR_EACH_DTYPE_IN(t, PT_DTYPES_ANY) {
            pt_clear_error();
            pt_status s = pt_device_supports(d, k, t);
            const char *cell = s == PT_OK ? "yes" : s == PT_ERR_UNSUPPORTED ? "no" : s == PT_ERR_DTYPE ? "-" : "?";
            /* "-" must be exactly the pairs the op table says the core never sends */
            bool sent = pt_op_takes_dtype(k, t);
            if (cell[0] == '?' || (s == PT_ERR_DTYPE) == sent) {
                if (!problems++)
                    snprintf(first, sizeof first, "%s in %s: %s (op table: %s): %s", pt_op_name(k),
                             pt_dtype_table_name(t), pt_status_name(s),
                             sent ? "the core sends it" : "the core never sends it", pt_last_error());
                cell = "?";
            }
            printf(" %s |", cell);
        }
        printf("\n");
    }
    pt_clear_error();
    if (problems) {
        printf("\nsupport: %d cells marked ? have an answer that is not yes / no / -, first: %s\n", problems,
               first);
        return 1;
    }
    return 0;
}
