# Runs the conformance program on a backend that implements no op (the null
# skeleton, or a fresh copy of it) and checks what it must produce (ctests
# conformance_null, conformance_null_old_abi, backend_skeleton):
#   - the run completes with a summary line and exit 0,
#   - op cases are skips: at least one SKIP names the backend's
#     "<op> is not implemented for <dtype>" reason,
#   - nothing fails (cases that never reach an op, such as uploads and
#     views, may pass).
#
#   cmake -DCONFORMANCE=<program> [-DBACKEND=<name>] -P check_conformance.cmake
# with PORTABLE_BACKEND=<name> and PORTABLE_PLUGIN_PATH set by the test
# (BACKEND defaults to null).
cmake_minimum_required(VERSION 3.20)

if(NOT BACKEND)
  set(BACKEND null)
endif()

execute_process(COMMAND ${CONFORMANCE} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")

string(REGEX MATCH "conformance\\(${BACKEND}:0\\): ([0-9]+) passed, ([0-9]+) failed, ([0-9]+) skipped"
       summary "${out}")
if(NOT summary)
  message(FATAL_ERROR "conformance ${BACKEND}: no summary line for ${BACKEND}:0 (exit ${rc})")
endif()
set(n_failed ${CMAKE_MATCH_2})
set(n_skipped ${CMAKE_MATCH_3})

set(reason "${BACKEND}: [a-z_]+ is not implemented for (f32|f64|i32|i64|u8)")
string(REGEX MATCHALL "SKIP [^\n]*${reason}" op_skips "${out}")
list(LENGTH op_skips n_op_skips)
if(n_op_skips EQUAL 0)
  message(FATAL_ERROR "conformance ${BACKEND}: no case was skipped with the ${BACKEND} backend's reason")
endif()

if(NOT rc EQUAL 0 OR NOT n_failed EQUAL 0)
  string(REGEX MATCHALL "FAIL [^\n]*" fails "${out}")
  message(FATAL_ERROR "conformance ${BACKEND}: ${n_failed} failures (exit ${rc}); a backend without "
                      "ops must make every op case a skip:\n${fails}")
endif()
message("conformance ${BACKEND}: ${n_op_skips} op cases skipped as unsupported, nothing failed")
