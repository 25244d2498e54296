# `clgrad conformance` (tools/cmd_conformance.c), included by tests/CMakeLists.txt:
#   cli_conformance        the default device (or $CLG_DEVICE's) passes every case: a table
#                          ending "N passed / 0 failed", exit status 0;
#   cli_conformance_fault  the self-check: a fault injected into gelu's reference shows as
#                          FAIL rows and exit status 1;
#   cli_conformance_help   --help, as every subcommand has;
#   conformance_coverage   every public op (ops.h, tensor.h, ops.def: the rule is in
#                          tests/conformance_coverage.c) has a case; needs no device;
#   oclgrind_cli_conformance  every case under Oclgrind (label oclgrind) through
#                          tests/oclgrind/run.sh, which fails on any report;
#                          GEMM on the tiled engine (tuning would time every engine in the
#                          simulator, minutes); the long-axis cases at 700, past a lowered
#                          item_loops (256), so that they split as long ones do elsewhere.
if(CLGRAD_BUILD_TOOLS)
  set(_conf "\"$0\" conformance --device \"\${CLG_DEVICE:-default}\" --no-bench")
  add_test(NAME cli_conformance COMMAND sh -c
    "out=$(${_conf}); rc=$?; echo \"$out\"; [ $rc -eq 0 ] && echo \"$out\" | grep -q ' passed / 0 failed'"
    $<TARGET_FILE:clgrad_cli>)
  add_test(NAME cli_conformance_fault COMMAND sh -c
    "out=$(${_conf} --inject-fault gelu); rc=$?; echo \"$out\"; [ $rc -eq 1 ] && echo \"$out\" | grep -q '^  gelu .*FAIL' && echo \"$out\" | grep -q ' 0 passed / [1-9][0-9]* failed'"
    $<TARGET_FILE:clgrad_cli>)
  add_test(NAME cli_conformance_help COMMAND clgrad_cli conformance --help)
  set_tests_properties(cli_conformance_help PROPERTIES PASS_REGULAR_EXPRESSION "Usage: clgrad conformance" LABELS cli)
  set_tests_properties(cli_conformance cli_conformance_fault PROPERTIES
    ENVIRONMENT "${CLGRAD_UNIT_ENV}" TIMEOUT 600 LABELS "cli;device")
  add_executable(conformance_coverage ${CMAKE_CURRENT_SOURCE_DIR}/conformance_coverage.c)
  target_compile_definitions(conformance_coverage PRIVATE _POSIX_C_SOURCE=200809L)
  target_link_libraries(conformance_coverage PRIVATE clgrad_warnings)
  add_test(NAME conformance_coverage COMMAND conformance_coverage ${PROJECT_SOURCE_DIR} $<TARGET_FILE:clgrad_cli>)
  set_tests_properties(conformance_coverage PROPERTIES LABELS cli TIMEOUT 60)
  add_test(NAME oclgrind_cli_conformance COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/oclgrind/run.sh
    $<TARGET_FILE:clgrad_cli> conformance --no-bench --long 700)
  set_tests_properties(oclgrind_cli_conformance PROPERTIES
    ENVIRONMENT "CLG_CACHE_DIR=${CMAKE_BINARY_DIR}/oclgrind-cache;CLG_PARAMS=gemm=tiled,item_loops=256" TIMEOUT 900 LABELS oclgrind)
endif()
