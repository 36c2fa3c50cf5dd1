// output/out_file.hpp — one output file whose every write is checked.
//
// Every output gaspp writes (EVE, -w and --dump-packets pcaps, stream dumps and their index,
// --decode-out rows, --stats-json) goes through OutFile: a failed open, write, flush or close (a
// full disk, an I/O error, a file system gone read-only) throws OutputError naming the file and
// the system's reason, so a run never ends with status 0 and a cut file. The command line turns
// OutputError into exit status 3.
//
//   OutFile f("out/eve.json", "w");
//   f.write(line.data(), line.size());
//   f.close();   // throws if anything buffered could not be written
#pragma once
#include <cstdio>
#include <stdexcept>
#include <string>

namespace gaspp {

struct OutputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class OutFile {
 public:
  OutFile() = default;
  // Opens `path` with fopen's `mode` ("w", "wb", "ab"); throws OutputError on failure.
  OutFile(const std::string& path, const char* mode);
  ~OutFile();  // closes without checking: call close() to know whether everything was written
  OutFile(OutFile&& o) noexcept;
  OutFile& operator=(OutFile&& o) noexcept;
  OutFile(const OutFile&) = delete;
  OutFile& operator=(const OutFile&) = delete;

  void write(const void* data, size_t n);
  void write(const std::string& s) { write(s.data(), s.size()); }
  void printf(const char* fmt, ...) __attribute__((format(printf, 2, 3)));
  // Flushes and closes; throws OutputError naming the file if any byte could not be written.
  void close();
  bool is_open() const { return f_ != nullptr; }
  const std::string& path() const { return path_; }

 private:
  [[noreturn]] void fail(const char* what, int err);
  std::string path_;
  std::FILE* f_ = nullptr;
};

// Checks that stdout took everything printed to it (a closed pipe, a full disk under `>`):
// throws OutputError("stdout: ...") otherwise.
void flush_stdout_checked();

}  // namespace gaspp
