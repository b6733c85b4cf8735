# The compiler rule of ringo's README and docs/guide.md ("GCC 12: three patterns to avoid"),
# checked when a project configures ringo: through add_subdirectory (the top CMakeLists.txt
# includes this file) and through find_package (ringoConfig.cmake includes its installed copy).
#
# GCC before 13.1 mishandles three coroutine patterns that Clang 14 and GCC 13.1 compile right.
# Each was fixed on GCC's development branch for 13 (gcc/cp/ChangeLog-2022 and -2023):
#   - co_await in the condition of an if, while or switch, in a coroutine whose body declares
#     no local variable: the coroutine crashes or never resumes (PR 106188, PR 106713);
#   - a braced list inside co_await is rejected, "array used as initializer" (PR 103871);
#   - a temporary made from a capturing lambda inside co_await (a std::function argument, a
#     callable taken by value or by reference) is destroyed twice (PR 100611, PR 101367).
# tests/traps shows each one with the compiler of the build.
set(RINGO_GCC_COROUTINES_FIXED_IN 13.1)

option(RINGO_SILENCE_GCC_COROUTINE_WARNING "Do not warn that GCC < 13.1 mishandles three coroutine patterns" OFF)

# Warns once per configure when the project's C++ compiler is GCC older than 13.1.
function(ringo_check_compiler)
  get_property(done GLOBAL PROPERTY RINGO_COMPILER_CHECKED)
  if(done OR RINGO_SILENCE_GCC_COROUTINE_WARNING)
    return()
  endif()
  set_property(GLOBAL PROPERTY RINGO_COMPILER_CHECKED TRUE)
  # (A project that has not enabled C++ has no compiler to judge yet.)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "GNU" OR NOT CMAKE_CXX_COMPILER_VERSION
     OR CMAKE_CXX_COMPILER_VERSION VERSION_GREATER_EQUAL RINGO_GCC_COROUTINES_FIXED_IN)
    return()
  endif()
  message(WARNING
    "ringo: GCC ${CMAKE_CXX_COMPILER_VERSION} mishandles three coroutine patterns that GCC "
    "${RINGO_GCC_COROUTINES_FIXED_IN} and Clang compile right. With this compiler:\n"
    "  1. no co_await inside the condition of an if, while or switch: take the result\n"
    "     into a variable first (int r = co_await ringo::sleep_for(d); if (r == ...)).\n"
    "     A coroutine whose body declares no local variable crashes there or never\n"
    "     resumes (GCC Bugzilla PR 106188);\n"
    "  2. no braced list inside co_await: it does not compile (\"array used as\n"
    "     initializer\", PR 103871). Write co_await ringo::wait_signal(SIGINT, SIGTERM);\n"
    "  3. no capturing lambda made inside a co_await expression (converted to a\n"
    "     std::function parameter, or given to ringo::spawn_blocking): it is destroyed\n"
    "     twice (PR 100611, PR 101367). Name it first, then co_await f(std::move(fn)).\n"
    "See ringo's README (requirements) and docs/guide.md (\"GCC 12: three patterns to "
    "avoid\"); -DRINGO_SILENCE_GCC_COROUTINE_WARNING=ON hides this message.")
endfunction()
