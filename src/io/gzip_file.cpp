// Whole-file reading (gunzipped when compressed, bounded) and whole-or-nothing writing
// (gzip-compressed by name): ctshard/io/gzip_file.hpp.

#include "ctshard/io/gzip_file.hpp"

#include <zlib.h>

#include <algorithm>
#include <cstdio>

#include "ctshard/error.hpp"
#include "ctshard/io/output_file.hpp"

namespace ctshard::io {

std::string read_maybe_gzip(const std::string& path, std::size_t max_bytes, const solve::Deadline& deadline) {
  gzFile f = gzopen(path.c_str(), "rb");  // reads plain files as they are
  if (f == nullptr) throw error("cannot open '" + path + "'");
  std::string text;
  char buf[1 << 16];
  int n = 0;
  std::size_t since_check = 0;
  bool too_long = false, late = false;
  while ((n = gzread(f, buf, sizeof buf)) > 0) {
    if (text.size() + static_cast<std::size_t>(n) > max_bytes) {
      too_long = true;
      break;
    }
    text.append(buf, static_cast<std::size_t>(n));
    if ((since_check += static_cast<std::size_t>(n)) >= (std::size_t{1} << 20)) {
      since_check = 0;
      if ((late = deadline.passed())) break;
    }
  }
  const bool failed = n < 0;
  gzclose(f);
  if (too_long)
    throw error("cannot read '" + path + "': it holds more than " + std::to_string(max_bytes) + " bytes (inflated), the input limit (at most " +
                std::to_string(max_input_bytes) + " bytes, and within --max-memory-mib)");
  if (late)
    throw solve::time_limit_reached("ctshard iopddl: reading '" + path + "' (" + std::to_string(text.size()) +
                                    " bytes read): the time limit was reached");
  if (failed) throw error("cannot read '" + path + "' (corrupt gzip data?)");
  return text;
}

void write_maybe_gzip(const std::string& path, const std::string& text, std::size_t chunk_bytes) {
  const bool gz = path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
  // whole or nothing: a temporary file created exclusively beside the target, renamed over it
  // once complete (only over a regular file)
  OutputFile out(path);
  // gzwrite takes an unsigned length and returns an int: large texts (a 3-D mesh's cost graph
  // reaches gigabytes) go in chunks that fit both
  const std::size_t chunk = std::clamp<std::size_t>(chunk_bytes, 1, std::size_t{1} << 30);
  if (!gz) {
    for (std::size_t at = 0; at < text.size(); at += chunk) out.write(text.data() + at, std::min(chunk, text.size() - at));
    out.commit();
    return;
  }
  gzFile f = gzdopen(out.release(), "wb");  // gzclose closes the descriptor
  if (f == nullptr) throw error("cannot write '" + path + "'");
  bool ok = true;
  for (std::size_t at = 0; at < text.size() && ok; at += chunk) {
    const auto len = static_cast<unsigned>(std::min(chunk, text.size() - at));
    ok = gzwrite(f, text.data() + at, len) == static_cast<int>(len);
  }
  ok = gzclose(f) == Z_OK && ok;
  if (!ok) throw error("cannot write '" + path + "'");
  out.commit();
}

}  // namespace ctshard::io
