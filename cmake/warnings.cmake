# Warning flags for the project's own targets (never imposed on consumers of ctshard::ctshard).
add_library(ctshard_warnings INTERFACE)
# CTSHARD_WERROR (default ON) adds -Werror; g++ 12 and clang 14 are both clean.
if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  target_compile_options(ctshard_warnings INTERFACE -Wall -Wextra -Wpedantic -Wconversion
    -Wshadow -Wnon-virtual-dtor -Wold-style-cast $<$<BOOL:${CTSHARD_WERROR}>:-Werror>)
endif()
