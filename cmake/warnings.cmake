# Warning flags for the project's own targets (never imposed on consumers of ctshard::ctshard).
add_library(ctshard_warnings INTERFACE)
if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  target_compile_options(ctshard_warnings INTERFACE -Wall -Wextra -Wpedantic -Wconversion
    -Wshadow -Wnon-virtual-dtor -Wold-style-cast -Werror)
endif()
