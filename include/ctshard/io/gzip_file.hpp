#pragma once
/// \file gzip_file.hpp
/// Whole files in and out, gzip-compressed or not (IOPDDL instances `.json.gz`, exported cost
/// graphs): a bounded reader that polls a deadline, and a whole-or-nothing writer.

#include <cstddef>
#include <string>

#include "ctshard/solve/budget.hpp"

namespace ctshard::io {

/// The most bytes an input file may hold once inflated (1 GiB): a gzip stream expands up to
/// ~1000x, so a 1 MB `.json.gz` could otherwise fill the machine. The largest public contest
/// instance here (A) inflates to 93 MB.
inline constexpr std::size_t max_input_bytes = std::size_t{1} << 30;

/// The text of a file, gunzipped when it is gzip-compressed, at most `max_bytes` of it (checked as
/// it inflates), polling `deadline` every MiB. Throws ctshard::error naming the path (unreadable,
/// corrupt, or longer than `max_bytes`), solve::time_limit_reached once the deadline passes.
std::string read_maybe_gzip(const std::string& path, std::size_t max_bytes = max_input_bytes, const solve::Deadline& deadline = {});

/// Writes `text` to `path`, gzip-compressed when the name ends in `.gz`, in pieces of at most
/// `chunk_bytes` (capped at 1 GiB: zlib takes 32-bit lengths), whole or not at all: into a
/// temporary file created exclusively beside `path` (output_file.hpp), renamed over `path` once
/// every write and the close succeeded. `path` may only name a regular file or nothing: a
/// symbolic link, FIFO, device or directory is refused. Throws ctshard::error naming `path`.
void write_maybe_gzip(const std::string& path, const std::string& text, std::size_t chunk_bytes = std::size_t{1} << 30);

}  // namespace ctshard::io
