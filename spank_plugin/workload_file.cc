// Workload file checks (see workload_file.h).
#include "spank_plugin/workload_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace xdeep::spank {
namespace {

std::string KindOf(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

size_t FirstInvalidUtf8(const std::string& text) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char c = s[i];
    if (c == 0) return i;
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len = 0;
    unsigned min = 0;
    unsigned cp = 0;
    if ((c & 0xE0) == 0xC0) {
      len = 2, min = 0x80, cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3, min = 0x800, cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4, min = 0x10000, cp = c & 0x07;
    } else {
      return i;
    }
    if (i + len > n) return i;
    for (size_t k = 1; k < len; ++k) {
      if ((s[i + k] & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    // Overlong forms, UTF-16 surrogates and code points past U+10FFFF are not UTF-8.
    if (cp < min || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) return i;
    i += len;
  }
  return std::string::npos;
}

bool ReadWorkloadFile(const std::string& path, std::string* text, std::string* error) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; fstat then refuses it.
  const int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const int e = errno;
    if (e == ENOENT) {
      *error = "workload file " + path + " does not exist; check the path";
    } else {
      *error =
          "cannot read workload file " + path + ": " + std::strerror(e) + "; check its permissions";
    }
    return false;
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    *error = "workload " + path + " is " + KindOf(st.st_mode) +
             ", not a regular file; give a TOML file or a preset name";
    return false;
  }
  if (static_cast<size_t>(st.st_size) > kMaxWorkloadBytes) {
    close(fd);
    *error = "workload file " + path + " is " + std::to_string(st.st_size) +
             " bytes, more than the " + std::to_string(kMaxWorkloadBytes) +
             " a workload description may have; give the TOML description, not data";
    return false;
  }
  std::string out;
  char buffer[65536];
  for (;;) {
    const ssize_t got = read(fd, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      const int e = errno;
      close(fd);
      *error = "cannot read workload file " + path + ": " + std::strerror(e);
      return false;
    }
    if (got == 0) break;
    out.append(buffer, static_cast<size_t>(got));
    // The file may grow after fstat; the limit holds on what is read.
    if (out.size() > kMaxWorkloadBytes) {
      close(fd);
      *error = "workload file " + path + " grew past " + std::to_string(kMaxWorkloadBytes) +
               " bytes while being read; give the TOML description, not data";
      return false;
    }
  }
  close(fd);
  if (const size_t bad = FirstInvalidUtf8(out); bad != std::string::npos) {
    const bool nul = out[bad] == '\0';
    *error = "workload file " + path + (nul ? " holds binary data" : " is not UTF-8 text") +
             " (byte " + std::to_string(bad) + "); give a TOML text file" +
             (nul ? "" : " saved as UTF-8");
    return false;
  }
  *text = std::move(out);
  return true;
}

}  // namespace xdeep::spank
