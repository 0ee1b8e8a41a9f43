# Runs the conformance program on the null backend and checks what a backend
# that implements no op must produce (ctest conformance_null):
#   - the run completes (a summary line; exit 0, or 1 for the failures below),
#   - op cases are skips: at least one SKIP names the null backend's
#     "<op> is not implemented for <dtype>" reason,
#   - every FAIL, if any, is that same PT_ERR_UNSUPPORTED reason surfacing in
#     a step the runner does not yet report as a skip (downloading a view
#     needs COPY; the error cases' set-up needs FILL). Anything else fails.
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
if(NOT (rc EQUAL 0 OR rc EQUAL 1))
  message(FATAL_ERROR "conformance_null: exit status ${rc}, expected 0 or 1")
endif()

set(reason "null: [a-z_]+ is not implemented for (f32|f64|i32|i64|u8)")
string(REGEX MATCHALL "SKIP [^\n]*${reason}" op_skips "${out}")
list(LENGTH op_skips n_op_skips)
if(n_op_skips EQUAL 0)
  message(FATAL_ERROR "conformance_null: no case was skipped with the null backend's reason")
endif()

string(REGEX MATCHALL "FAIL [^\n]*" fails "${out}")
set(n_unsupported_fails 0)
foreach(line IN LISTS fails)
  if(NOT line MATCHES "${reason}")
    message(FATAL_ERROR "conformance_null: a failure other than an unsupported op:\n${line}")
  endif()
  math(EXPR n_unsupported_fails "${n_unsupported_fails} + 1")
endforeach()
if(NOT n_unsupported_fails EQUAL n_failed)
  message(FATAL_ERROR "conformance_null: ${n_failed} failures counted, ${n_unsupported_fails} FAIL lines")
endif()
if(rc EQUAL 1 AND n_failed EQUAL 0)
  message(FATAL_ERROR "conformance_null: exit 1 without a failure")
endif()
message("conformance_null: ${n_op_skips} op cases skipped as unsupported; "
        "${n_unsupported_fails} unsupported ops reported as failures by the runner")
