# Turns a text file into a C++ header holding it as a raw string literal (used for the embedded
# default graph of `ctshard plan`). Usage: cmake -DIN=file -DOUT=header -DNAME=identifier -P embed_text.cmake
file(READ "${IN}" content)
file(WRITE "${OUT}" "#pragma once\n// Generated from ${IN}; do not edit.\ninline constexpr const char* ${NAME} = R\"ctshard_embed(${content})ctshard_embed\";\n")
