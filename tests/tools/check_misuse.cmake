# Mistakes users make get a compile error that says what is wrong in one line. Compiles
# tests/tools/misuse.cpp once with every call right (it must compile: the check itself works),
# then once per mistake, which must fail with its message.
#   cmake -DCXX=... -DINCLUDES="dir;dir" -DSOURCE=.../misuse.cpp -P check_misuse.cmake
set(flags -std=c++20 -fsyntax-only)
foreach(d ${INCLUDES})
  list(APPEND flags -I${d})
endforeach()
execute_process(COMMAND ${CXX} ${flags} ${SOURCE} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "misuse.cpp without a mistake does not compile:\n${out}")
endif()
# case number, then the text its error must contain
set(cases
  "1|when_all\\(v\\): pass std::move\\(v\\)"
  "2|when_all\\(ops\\): pass std::move\\(ops\\)"
  "3|when_any\\(v\\): pass std::move\\(v\\)"
  "4|the handler must take \\(net::TcpStream, net::SocketAddr\\), \\(net::TcpStream\\) or \\(int fd\\)")
foreach(c ${cases})
  string(FIND "${c}" "|" bar)
  string(SUBSTRING "${c}" 0 ${bar} k)
  math(EXPR from "${bar} + 1")
  string(SUBSTRING "${c}" ${from} -1 want)
  execute_process(COMMAND ${CXX} ${flags} -DMISUSE=${k} ${SOURCE} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(rc EQUAL 0)
    message(FATAL_ERROR "mistake ${k} of misuse.cpp compiled")
  endif()
  if(NOT out MATCHES "${want}")
    message(FATAL_ERROR "mistake ${k} of misuse.cpp failed to compile, but without the message '${want}':\n${out}")
  endif()
endforeach()
message(STATUS "every mistake in misuse.cpp drew its message")
