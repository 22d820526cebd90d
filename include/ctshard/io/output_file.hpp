#pragma once
/// \file output_file.hpp
/// Outputs that either appear whole or not at all, and never replace anything but a regular
/// file: a temporary file created exclusively (O_CREAT | O_EXCL, a unique name) beside the
/// target, every write and the close checked, then renamed over the target. The target may be
/// absent or a regular file; a symbolic link, FIFO, device node or directory is refused with an
/// error naming it (`--export-costgraph /dev/null` used to replace the device node with a file).
/// Standard output is checked too: `stdout_ok` flushes it and reports a failed write, which the
/// tool turns into a non-zero exit (`ctshard ... > /dev/full` exited 0).

#include <cstddef>
#include <string>

namespace ctshard::io {

/// Throws ctshard::error naming `path` unless it is absent or a regular file (lstat: a symbolic
/// link is refused, even to a regular file).
void check_output_target(const std::string& path);

/// A temporary file beside a target, created exclusively; removed unless committed.
class OutputFile {
 public:
  /// Checks the target (check_output_target) and creates `<dir>/.<name>.XXXXXX` with the
  /// permissions a new file would get (0666 less the umask; an existing target's mode is kept).
  /// Throws ctshard::error naming `path`.
  explicit OutputFile(std::string path);
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  /// Removes the temporary file unless commit() succeeded.
  ~OutputFile();

  /// The temporary file's descriptor (-1 once released or closed).
  [[nodiscard]] int fd() const noexcept { return fd_; }
  /// Gives the descriptor to a caller that closes it (zlib's gzdopen); it is no longer closed here.
  int release() noexcept;
  /// Writes all of `data` (retrying short writes and EINTR). Throws ctshard::error naming the
  /// target on failure (ENOSPC, EIO, ...).
  void write(const char* data, std::size_t size);
  /// Closes the descriptor (if still held; a failed close throws), checks the target again and
  /// renames the temporary file over it. Throws ctshard::error naming `path`.
  void commit();

  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  [[nodiscard]] const std::string& temp_path() const noexcept { return temp_; }

 private:
  std::string path_, temp_;
  int fd_ = -1;
  bool committed_ = false;
};

/// Writes `text` to `path` whole or not at all (OutputFile). Throws ctshard::error naming `path`.
void write_file(const std::string& path, const std::string& text);

/// Flushes standard output (std::cout and C stdio) and returns false when any write to it
/// failed (a full disk, `> /dev/full`, a closed descriptor).
bool stdout_ok();

}  // namespace ctshard::io
