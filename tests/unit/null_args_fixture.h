/* The valid arguments the generated NULL-argument cases pass beside the
 * NULL one (test_null_args.c makes them; gen_null_args.py names them). */
#ifndef PT_TEST_NULL_ARGS_FIXTURE_H
#define PT_TEST_NULL_ARGS_FIXTURE_H

#include <portable/dlpack.h>
#include <portable/portable.h>

extern pt_tensor *T, *TS[2], *TS_OUT[2];
extern pt_device *D, *DS[2];
extern pt_module *M, *MS[1];
extern pt_optimizer *O;
extern int64_t SHAPE[2], SHAPE64[2];
extern int DIMS[2], INTS[2];
extern const char *NAMES[2];
extern const char *const CHOICES[2];
extern unsigned char BUF[4096];
extern pt_device_props PROPS;
extern pt_memory_usage USAGE;
extern pt_conv2d_opts CONV;
extern pt_pool2d_opts POOL;
extern pt_window2d WINDOW;
extern pt_graph *G;
extern pt_graph_stats GSTATS;
extern pt_status returned;
pt_status hook(pt_tensor *leaf, void *user);

typedef enum { RET_STATUS, RET_TENSOR, RET_OTHER } null_case_ret;
typedef struct null_case {
    const char *function, *param;
    null_case_ret ret;
    int tensor_input; /* a pt_tensor * parameter: NULL keeps a pending error */
    void (*call)(void);
} null_case;
extern const null_case null_cases[];
extern const int null_case_count, null_function_count;

#endif
