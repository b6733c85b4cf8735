# Trap 2 of docs/guide.md: a braced list inside co_await (tests/traps/trap_braced_list.cpp),
# compiled (syntax only) with the compiler of the build.
#   cmake -DCXX=... -DCXX_ID=GNU -DCXX_VERSION=12.2.0 -DFIXED_IN=13.1 -DINCLUDES="dir;dir"
#         -DSOURCE=.../trap_braced_list.cpp -P check_braced_list.cmake
# The documented form must compile everywhere. The braced list must compile, except on GCC
# older than FIXED_IN, where it must fail with GCC's "array used as initializer" (GCC Bugzilla
# PR 103871): ctest then counts the test as skipped ("SKIPPED:", SKIP_REGULAR_EXPRESSION).
set(flags -std=c++20 -fsyntax-only)
foreach(d ${INCLUDES})
  list(APPEND flags -I${d})
endforeach()
execute_process(COMMAND ${CXX} ${flags} ${SOURCE} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the documented form, co_await ringo::wait_signal(SIGINT, SIGTERM), does not compile:\n${out}")
endif()
message(STATUS "ok: co_await ringo::wait_signal(SIGINT, SIGTERM) compiles with ${CXX_ID} ${CXX_VERSION}")

execute_process(COMMAND ${CXX} ${flags} -DRINGO_TRAP_BRACED_LIST ${SOURCE}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
set(known_bad OFF)
if(CXX_ID STREQUAL "GNU" AND CXX_VERSION VERSION_LESS FIXED_IN)
  set(known_bad ON)
endif()
if(rc EQUAL 0)
  message(STATUS "ok: co_await ringo::wait_signal({SIGINT, SIGTERM}) compiles with ${CXX_ID} ${CXX_VERSION}")
elseif(NOT known_bad)
  message(FATAL_ERROR "co_await ringo::wait_signal({SIGINT, SIGTERM}) does not compile with ${CXX_ID} "
                      "${CXX_VERSION}, which should have GCC Bugzilla PR 103871 fixed:\n${out}")
elseif(NOT out MATCHES "array used as initializer")
  message(FATAL_ERROR "the braced list failed to compile with GCC ${CXX_VERSION}, but not with the "
                      "known error of PR 103871 (\"array used as initializer\"):\n${out}")
else()
  message(STATUS "SKIPPED: known GCC bug: co_await ringo::wait_signal({SIGINT, SIGTERM}) is rejected by GCC "
                 "${CXX_VERSION} (\"array used as initializer\", GCC Bugzilla PR 103871; fixed in GCC ${FIXED_IN})")
endif()
