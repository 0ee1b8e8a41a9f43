/* Runs the NULL-argument cases generated from the public headers
 * (gen_null_args.py -> null_args_cases.c): every pointer parameter of every
 * public function, NULL with the others valid. The contract (DESIGN.md,
 * status.h): with no error pending, PT_ERR_INVALID_ARGUMENT with a message
 * that starts with the function's name and names the parameter; with an
 * earlier error pending, a tensor-returning function returns NULL and keeps
 * the first error. Parameters that accept NULL are listed once in
 * docs/api-notes.md. */
#include "check.h"
#include "null_args_fixture.h"

pt_tensor *T, *TS[2], *TS_OUT[2];
pt_device *D, *DS[2];
pt_module *M, *MS[1];
pt_optimizer *O;
int64_t SHAPE[2] = {2, 2}, SHAPE64[2];
int DIMS[2] = {0, 1}, INTS[2];
const char *NAMES[2];
const char *const CHOICES[2] = {"a", NULL};
unsigned char BUF[4096];
pt_device_props PROPS;
pt_memory_usage USAGE;
pt_conv2d_opts CONV;
pt_pool2d_opts POOL;
pt_window2d WINDOW;
pt_graph *G;
pt_graph_stats GSTATS;
pt_status returned;
pt_status hook(pt_tensor *leaf, void *user) {
    (void)leaf;
    (void)user;
    return PT_OK;
}

static void run(void) {
    D = pt_cpu();
    REQUIRE(D);
    DS[0] = DS[1] = D;
    T = pt_ones(D, PT_F32, 2, SHAPE);
    TS[0] = TS[1] = T;
    M = pt_linear_sized(2, 2);
    MS[0] = M;
    O = pt_sgd(M, 0.1, 0, 0);
    /* a graph of one op, for the graph calls' other arguments */
    pt_tensor *doubled = NULL;
    if (T && pt_graph_capture_begin(D) == PT_OK) {
        doubled = pt_add(T, T);
        G = pt_graph_capture_end(D);
    }
    CHECK(T && M && O && G);
    if (!T || !M || !O || !G) return;
    printf("%d NULL cases over %d public functions\n", null_case_count, null_function_count);
    CHECK(null_case_count > 100);
    for (int k = 0; k < null_case_count; ++k) {
        const null_case *c = &null_cases[k];
        char what[256];
        /* no error pending: this NULL is the error */
        pt_clear_error();
        returned = PT_OK;
        c->call();
        const char *msg = pt_last_error();
        bool named = strncmp(msg, c->function, strlen(c->function)) == 0 &&
                     msg[strlen(c->function)] == ':' && strstr(msg, c->param) != NULL;
        snprintf(what, sizeof what, "%s(%s = NULL): PT_ERR_INVALID_ARGUMENT naming both (got %s: \"%.120s\")",
                 c->function, c->param, pt_status_name(pt_last_status()), msg);
        check_report(pt_last_status() == PT_ERR_INVALID_ARGUMENT && named &&
                         (c->ret != RET_STATUS || returned == PT_ERR_INVALID_ARGUMENT),
                     __FILE__, __LINE__, what);
        /* an earlier error pending: a tensor op given a NULL tensor keeps it */
        if (c->ret == RET_TENSOR && c->tensor_input) {
            pt_set_error(PT_ERR_SHAPE, "earlier_call", "the first error");
            c->call();
            snprintf(what, sizeof what, "%s(%s = NULL) keeps the first error (got \"%.120s\")",
                     c->function, c->param, pt_last_error());
            check_report(pt_last_status() == PT_ERR_SHAPE &&
                             strcmp(pt_last_error(), "earlier_call: the first error") == 0,
                         __FILE__, __LINE__, what);
        }
    }
    pt_clear_error();
    pt_graph_free(G);
    pt_release(doubled);
    pt_optimizer_free(O);
    pt_module_free(M);
    pt_release(T);
}

int main(void) {
    run();
    return check_summary();
}
