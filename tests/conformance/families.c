/* Shape families: which shapes and layouts each kind of op is run on.
 * Every family list covers scalar (0-D), empty (a 0 extent), one element,
 * odd sizes, transposed / narrowed / offset views and broadcasting; entries
 * marked big (just over a million elements) run for f32 only so the whole
 * suite stays short on slow devices (PoCL on 2 cores). */
#include "conformance.h"

#define S0 0, {0}
#define S1(a) 1, {a}
#define S2(a, b) 2, {a, b}
#define S3(a, b, c) 3, {a, b, c}
#define S4(a, b, c, d) 4, {a, b, c, d}

const unary_family unary_families[] = {
    {{S0, LAY_C}, false},
    {{S1(0), LAY_C}, false},
    {{S2(3, 0), LAY_C}, false},
    {{S1(1), LAY_C}, false},
    {{S2(7, 13), LAY_C}, false},
    {{S2(7, 13), LAY_T}, false},
    {{S2(7, 13), LAY_N}, false},
    {{S3(5, 6, 7), LAY_O}, false},
    {{S4(2, 3, 4, 5), LAY_T}, false},
    {{S2(7, 13), LAY_X}, false},
    {{S1(BIG_N), LAY_C}, true},
};
const int n_unary_families = sizeof unary_families / sizeof unary_families[0];

const binary_family binary_families[] = {
    {{S0, LAY_C}, {S0, LAY_C}, false},
    {{S1(0), LAY_C}, {S1(0), LAY_C}, false},
    {{S2(0, 13), LAY_C}, {S1(13), LAY_C}, false},
    {{S1(1), LAY_C}, {S1(1), LAY_C}, false},
    {{S2(7, 13), LAY_C}, {S2(7, 13), LAY_C}, false},
    {{S2(7, 1), LAY_C}, {S2(1, 13), LAY_C}, false},
    {{S1(13), LAY_C}, {S2(7, 13), LAY_C}, false},
    {{S2(7, 13), LAY_C}, {S0, LAY_C}, false},
    {{S0, LAY_C}, {S2(7, 13), LAY_T}, false},
    {{S2(7, 13), LAY_T}, {S2(7, 13), LAY_C}, false},
    {{S2(7, 13), LAY_C}, {S2(7, 13), LAY_N}, false},
    {{S2(7, 13), LAY_T}, {S2(7, 13), LAY_N}, false},
    {{S3(5, 6, 7), LAY_O}, {S2(6, 1), LAY_C}, false},
    {{S4(2, 3, 4, 5), LAY_T}, {S2(4, 1), LAY_N}, false},
    {{S2(7, 13), LAY_X}, {S2(7, 13), LAY_T}, false},
    {{S3(5, 6, 7), LAY_C}, {S2(6, 7), LAY_X}, false},
    {{S1(BIG_N), LAY_C}, {S1(BIG_N), LAY_C}, true},
    {{S2(1024, 1031), LAY_T}, {S1(1031), LAY_C}, true},
};
const int n_binary_families = sizeof binary_families / sizeof binary_families[0];

const where_family where_families[] = {
    {{S0, LAY_C}, {S0, LAY_C}, {S0, LAY_C}, false},
    {{S2(0, 13), LAY_C}, {S1(13), LAY_C}, {S0, LAY_C}, false},
    {{S2(7, 13), LAY_C}, {S2(7, 13), LAY_C}, {S2(7, 13), LAY_C}, false},
    {{S2(7, 1), LAY_C}, {S2(1, 13), LAY_C}, {S1(13), LAY_C}, false},
    {{S0, LAY_C}, {S2(7, 13), LAY_C}, {S0, LAY_C}, false},
    {{S2(7, 13), LAY_T}, {S2(7, 13), LAY_N}, {S2(7, 13), LAY_C}, false},
    {{S3(5, 6, 7), LAY_O}, {S2(6, 7), LAY_T}, {S3(5, 1, 7), LAY_C}, false},
    {{S2(7, 13), LAY_X}, {S2(7, 13), LAY_C}, {S2(7, 13), LAY_X}, false},
    {{S1(BIG_N), LAY_C}, {S1(BIG_N), LAY_C}, {S0, LAY_C}, true},
};
const int n_where_families = sizeof where_families / sizeof where_families[0];

const reduce_family reduce_families[] = {
    {{S0, LAY_C}, PT_ALL, false, false},
    {{S0, LAY_C}, 0, false, false},   /* a 0-D tensor accepts dim 0 and -1 */
    {{S0, LAY_C}, -1, true, false},
    {{S1(1), LAY_C}, PT_ALL, false, false},
    {{S1(1), LAY_C}, 0, false, false},
    {{S2(7, 13), LAY_C}, PT_ALL, false, false},
    {{S2(7, 13), LAY_C}, PT_ALL, true, false},
    {{S2(7, 13), LAY_C}, 0, false, false},
    {{S2(7, 13), LAY_C}, 1, false, false},
    {{S2(7, 13), LAY_C}, -1, true, false},
    {{S2(7, 13), LAY_C}, -2, true, false},
    {{S2(7, 13), LAY_T}, 0, false, false},
    {{S2(7, 13), LAY_T}, 1, true, false},
    {{S2(7, 13), LAY_N}, 1, false, false},
    {{S2(7, 13), LAY_N}, PT_ALL, false, false},
    {{S3(5, 6, 7), LAY_C}, 1, false, false},
    {{S3(5, 6, 7), LAY_C}, 0, true, false},
    {{S3(5, 6, 7), LAY_O}, 2, false, false},
    {{S3(5, 6, 7), LAY_T}, 1, false, false},
    {{S3(5, 6, 7), LAY_T}, PT_ALL, false, false},
    {{S2(7, 13), LAY_X}, 0, false, false},   /* reduces over a stride-0 dim */
    {{S2(7, 13), LAY_X}, 1, true, false},
    {{S3(5, 6, 7), LAY_X}, PT_ALL, false, false},
    {{S2(0, 4), LAY_C}, 1, false, false},  /* empty result, nothing reduced over empty */
    {{S2(3, 0), LAY_C}, 1, false, false},  /* reduces over an empty dim: max/argmax skip */
    {{S2(3, 0), LAY_C}, PT_ALL, false, false},
    {{S1(BIG_N), LAY_C}, PT_ALL, false, true},
    {{S2(1024, 1031), LAY_C}, 0, false, true},
    {{S2(1031, 1024), LAY_T}, 1, false, true},
};
const int n_reduce_families = sizeof reduce_families / sizeof reduce_families[0];

const reduce_family softmax_families[] = {
    {{S0, LAY_C}, 0, false, false},
    {{S1(1), LAY_C}, 0, false, false},
    {{S1(13), LAY_C}, 0, false, false},
    {{S2(7, 13), LAY_C}, 1, false, false},
    {{S2(7, 13), LAY_C}, 0, false, false},
    {{S2(7, 13), LAY_C}, -1, false, false},
    {{S2(7, 13), LAY_T}, 1, false, false},
    {{S2(7, 13), LAY_N}, -1, false, false},
    {{S3(5, 6, 7), LAY_C}, 1, false, false},
    {{S3(5, 6, 7), LAY_O}, 2, false, false},
    {{S2(7, 13), LAY_X}, 0, false, false},
    {{S2(3, 0), LAY_C}, 1, false, false},
    {{S2(0, 5), LAY_C}, 1, false, false},
    {{S2(1024, 1031), LAY_C}, 1, false, true},
};
const int n_softmax_families = sizeof softmax_families / sizeof softmax_families[0];

const matmul_family matmul_families[] = {
    {{S2(7, 13), LAY_C}, {S2(13, 5), LAY_C}, false},
    {{S2(1, 1), LAY_C}, {S2(1, 1), LAY_C}, false},
    {{S2(7, 13), LAY_T}, {S2(13, 5), LAY_C}, false},
    {{S2(7, 13), LAY_C}, {S2(13, 5), LAY_T}, false},
    {{S2(7, 13), LAY_T}, {S2(13, 5), LAY_T}, false},
    {{S2(7, 13), LAY_O}, {S2(13, 5), LAY_N}, false},
    {{S1(13), LAY_C}, {S1(13), LAY_C}, false},          /* dot: 0-D result */
    {{S1(13), LAY_C}, {S2(13, 5), LAY_C}, false},
    {{S2(7, 13), LAY_C}, {S1(13), LAY_C}, false},
    {{S3(3, 7, 13), LAY_C}, {S3(3, 13, 5), LAY_C}, false},
    {{S3(3, 7, 13), LAY_T}, {S3(3, 13, 5), LAY_T}, false},
    {{S3(3, 7, 13), LAY_O}, {S2(13, 5), LAY_C}, false},  /* broadcast b over the batch */
    {{S2(7, 13), LAY_C}, {S3(3, 13, 5), LAY_C}, false},  /* broadcast a over the batch */
    {{S4(2, 1, 4, 5), LAY_C}, {S3(3, 5, 6), LAY_C}, false},
    {{S4(2, 1, 4, 5), LAY_T}, {S4(1, 3, 5, 6), LAY_N}, false},
    {{S3(3, 7, 13), LAY_X}, {S3(3, 13, 5), LAY_C}, false},  /* batch stride 0 given as a view */
    {{S3(3, 7, 13), LAY_C}, {S3(3, 13, 5), LAY_X}, false},
    {{S3(2, 7, 13), LAY_C}, {S1(13), LAY_C}, false},
    {{S2(7, 0), LAY_C}, {S2(0, 5), LAY_C}, false},       /* K = 0: zeros */
    {{S2(0, 13), LAY_C}, {S2(13, 5), LAY_C}, false},     /* M = 0 */
    {{S3(0, 7, 13), LAY_C}, {S3(0, 13, 5), LAY_C}, false},
    {{S2(64, 300), LAY_C}, {S2(300, 96), LAY_C}, false},
    {{S2(257, 130), LAY_T}, {S2(130, 129), LAY_C}, false},
    /* x @ W^T with K past two 16-float vectors and a tail, M and N past whole tiles */
    {{S2(33, 70), LAY_C}, {S2(70, 37), LAY_T}, false},
    {{S2(1100, 64), LAY_C}, {S2(64, 1000), LAY_C}, true}, /* > 1M outputs */
};
const int n_matmul_families = sizeof matmul_families / sizeof matmul_families[0];
