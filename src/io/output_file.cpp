#include "ctshard/io/output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <vector>

#include "ctshard/error.hpp"

namespace ctshard::io {
namespace {

std::string reason() { return std::strerror(errno); }

/// What kind of file `st` describes, for messages.
const char* kind_of(const struct stat& st) {
  if (S_ISLNK(st.st_mode)) return "a symbolic link";
  if (S_ISDIR(st.st_mode)) return "a directory";
  if (S_ISFIFO(st.st_mode)) return "a FIFO";
  if (S_ISCHR(st.st_mode)) return "a character device";
  if (S_ISBLK(st.st_mode)) return "a block device";
  if (S_ISSOCK(st.st_mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

void check_output_target(const std::string& path) {
  if (path.empty()) throw error("cannot write '': the path is empty");
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return;
    throw error("cannot write '" + path + "': " + reason());
  }
  if (!S_ISREG(st.st_mode)) throw error("cannot write '" + path + "': it is " + kind_of(st) + "; only a regular file is replaced");
}

OutputFile::OutputFile(std::string path) : path_(std::move(path)) {
  check_output_target(path_);
  const auto slash = path_.rfind('/');
  const std::string dir = slash == std::string::npos ? std::string() : path_.substr(0, slash + 1);
  const std::string name = slash == std::string::npos ? path_ : path_.substr(slash + 1);
  if (name.empty() || name == "." || name == "..") throw error("cannot write '" + path_ + "': it names a directory");
  std::vector<char> templ(dir.begin(), dir.end());
  const std::string tail = "." + name + ".XXXXXX";
  templ.insert(templ.end(), tail.begin(), tail.end());
  templ.push_back('\0');
  fd_ = ::mkstemp(templ.data());  // O_CREAT | O_EXCL, mode 0600: never an existing file
  if (fd_ < 0) throw error("cannot write '" + path_ + "': cannot create a temporary file beside it: " + reason());
  temp_ = templ.data();
  // the mode a plain open(O_CREAT, 0666) would give, or the target's own
  mode_t mode = 0666;
  struct stat st {};
  if (::stat(path_.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
    mode = st.st_mode & 07777;
  } else {
    const mode_t mask = ::umask(0);
    ::umask(mask);
    mode &= ~mask;
  }
  (void)::fchmod(fd_, mode);
}

OutputFile::~OutputFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && !temp_.empty()) ::unlink(temp_.c_str());
}

int OutputFile::release() noexcept {
  const int fd = fd_;
  fd_ = -1;
  return fd;
}

void OutputFile::write(const char* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd_, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw error("cannot write '" + path_ + "': " + reason());
    }
    data += n;
    size -= static_cast<std::size_t>(n);
  }
}

void OutputFile::commit() {
  if (fd_ >= 0) {
    const int fd = release();
    if (::close(fd) != 0) throw error("cannot write '" + path_ + "': " + reason());
  }
  check_output_target(path_);  // it may have changed kind since
  if (std::rename(temp_.c_str(), path_.c_str()) != 0) throw error("cannot write '" + path_ + "': " + reason());
  committed_ = true;
}

void write_file(const std::string& path, const std::string& text) {
  OutputFile out(path);
  out.write(text.data(), text.size());
  out.commit();
}

bool stdout_ok() {
  std::cout.flush();
  bool ok = !std::cout.fail();
  if (std::fflush(stdout) != 0) ok = false;
  if (std::ferror(stdout) != 0) ok = false;
  return ok;
}

}  // namespace ctshard::io
