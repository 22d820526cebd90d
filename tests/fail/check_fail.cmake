# One compile-fail case: SRC must not compile, its diagnostics must match the first line's
# `// EXPECT: <regex>`, and it must yield exactly one `error:` line (validation stops at the entry
# point; every case, on g++ and on clang++).
#   cmake -DCXX=<compiler> -DSRC=<case.cpp> -DINCLUDE=<include dir> -P check_fail.cmake
file(STRINGS ${SRC} expect_line LIMIT_COUNT 1 REGEX "^// EXPECT: ")
string(REPLACE "// EXPECT: " "" expect "${expect_line}")
execute_process(COMMAND ${CXX} -std=c++20 -fsyntax-only -I${INCLUDE} ${SRC}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(text "${out}${err}")
if(rc EQUAL 0)
  message(FATAL_ERROR "${SRC} compiled, but must not")
endif()
string(REGEX MATCHALL ": (fatal )?error: " found "${text}")
list(LENGTH found count)
if(NOT text MATCHES "${expect}")
  message(FATAL_ERROR "${SRC}: diagnostics do not match '${expect}':\n${text}")
endif()
if(NOT count EQUAL 1)
  message(FATAL_ERROR "${SRC}: ${count} error lines, expected exactly 1:\n${text}")
endif()
message(STATUS "${SRC}: 1 error line, matching '${expect}'")
