// output/out_file.cpp — see out_file.hpp.
#include "output/out_file.hpp"

#include <cerrno>
#include <cstdarg>
#include <cstring>
#include <utility>

namespace gaspp {

OutFile::OutFile(const std::string& path, const char* mode) : path_(path) {
  f_ = std::fopen(path.c_str(), mode);
  if (!f_) fail("cannot open for writing", errno);
}

OutFile::~OutFile() {
  if (f_) std::fclose(f_);
}

OutFile::OutFile(OutFile&& o) noexcept : path_(std::move(o.path_)), f_(std::exchange(o.f_, nullptr)) {}

OutFile& OutFile::operator=(OutFile&& o) noexcept {
  if (this != &o) {
    if (f_) std::fclose(f_);
    path_ = std::move(o.path_);
    f_ = std::exchange(o.f_, nullptr);
  }
  return *this;
}

void OutFile::fail(const char* what, int err) {
  throw OutputError(path_ + ": " + what + (err ? std::string(": ") + std::strerror(err) : std::string()));
}

void OutFile::write(const void* data, size_t n) {
  if (n && std::fwrite(data, 1, n, f_) != n) fail("write failed", errno);
}

void OutFile::printf(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  const int r = std::vfprintf(f_, fmt, ap);
  va_end(ap);
  if (r < 0) fail("write failed", errno);
}

void OutFile::close() {
  if (!f_) return;
  errno = 0;
  const bool flushed = std::fflush(f_) == 0 && !std::ferror(f_);
  const int err = errno;
  const bool closed = std::fclose(f_) == 0;
  const int close_err = errno;
  f_ = nullptr;
  if (!flushed) fail("write failed", err);
  if (!closed) fail("close failed", close_err);
}

void flush_stdout_checked() {
  errno = 0;
  if (std::fflush(stdout) != 0 || std::ferror(stdout))
    throw OutputError(std::string("stdout: write failed") + (errno ? std::string(": ") + std::strerror(errno) : ""));
}

}  // namespace gaspp
