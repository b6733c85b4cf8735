# Every operation awaitable is [[nodiscard]]: creating one without co_await (which does nothing)
# draws a warning. Compiles tests/tools/discarded_ops.cpp once with every operation awaited (it
# must compile: the check itself works) and once per operation dropped (each must fail with
# the nodiscard diagnostic as an error).
#   cmake -DCXX=... -DINCLUDES="dir;dir" -DSOURCE=.../discarded_ops.cpp -DCASES=8 -P check_nodiscard.cmake
# Only the diagnostics in question are errors: headers found through -I (a newer liburing's
# kernel headers beside glibc's) may warn about other things.
set(flags -std=c++20 -fsyntax-only -Werror=unused-result -Werror=unused-value)
foreach(d ${INCLUDES})
  list(APPEND flags -I${d})
endforeach()
execute_process(COMMAND ${CXX} ${flags} ${SOURCE} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "discarded_ops.cpp with every operation awaited does not compile:\n${out}")
endif()
foreach(k RANGE 1 ${CASES})
  execute_process(COMMAND ${CXX} ${flags} -DDISCARD=${k} ${SOURCE} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(rc EQUAL 0)
    message(FATAL_ERROR "operation ${k} of discarded_ops.cpp was dropped without co_await and no warning came")
  endif()
  if(NOT out MATCHES "nodiscard")
    message(FATAL_ERROR "operation ${k} of discarded_ops.cpp failed to compile, but not for [[nodiscard]]:\n${out}")
  endif()
endforeach()
message(STATUS "all ${CASES} dropped operations drew the [[nodiscard]] warning")
