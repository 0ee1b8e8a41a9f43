# Runs the conformance program on the null backend and checks what a backend
# that implements no op must produce (ctest conformance_null):
#   - the run completes with a summary line and exit 0,
#   - op cases are skips: at least one SKIP names the null backend's
#     "<op> is not implemented for <dtype>" reason,
#   - nothing fails (cases that never reach an op, such as uploads and
#     views, may pass).
#
#   cmake -DCONFORMANCE=<program> -P check_conformance.cmake
# with PORTABLE_BACKEND=null and PORTABLE_PLUGIN_PATH set by the test.
cmake_minimum_required(VERSION 3.20)

execute_process(COMMAND ${CONFORMANCE} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")

string(REGEX MATCH "conformance\\(null:0\\): ([0-9]+) passed, ([0-9]+) failed, ([0-9]+) skipped"
       summary "${out}")
if(NOT summary)
  message(FATAL_ERROR "conformance_null: no summary line for null:0 (exit ${rc})")
endif()
set(n_failed ${CMAKE_MATCH_2})
set(n_skipped ${CMAKE_MATCH_3})

set(reason "null: [a-z_]+ is not implemented for (f32|f64|i32|i64|u8)")
string(REGEX MATCHALL "SKIP [^\n]*${reason}" op_skips "${out}")
list(LENGTH op_skips n_op_skips)
if(n_op_skips EQUAL 0)
  message(FATAL_ERROR "conformance_null: no case was skipped with the null backend's reason")
endif()

if(NOT rc EQUAL 0 OR NOT n_failed EQUAL 0)
  string(REGEX MATCHALL "FAIL [^\n]*" fails "${out}")
  message(FATAL_ERROR "conformance_null: ${n_failed} failures (exit ${rc}); a backend without "
                      "ops must make every op case a skip:\n${fails}")
endif()
message("conformance_null: ${n_op_skips} op cases skipped as unsupported, nothing failed")
