// #SBATCH line reading (see batch_script.h).
#include "spank_plugin/batch_script.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

namespace xdeep::spank {
namespace {

// The header is all that matters; no real header is this long.
constexpr size_t kMaxHeaderBytes = 1 << 20;

std::vector<std::string> Words(const std::string& line) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (char c : line) {
    if (quote != 0) {
      if (c == quote) {
        quote = 0;
      } else {
        word += c;
      }
      continue;
    }
    if (c == '"' || c == '\'') {
      quote = c;
      in_word = true;
    } else if (c == ' ' || c == '\t' || c == '\r') {
      if (in_word) words.push_back(word);
      word.clear();
      in_word = false;
    } else if (c == '#' && !in_word) {
      break;  // a comment after the options
    } else {
      word += c;
      in_word = true;
    }
  }
  if (in_word) words.push_back(word);
  return words;
}

bool ReadHeader(int fd, bool positional, std::string* text, std::string* error) {
  std::string out;
  char buffer[65536];
  off_t offset = 0;
  while (out.size() < kMaxHeaderBytes) {
    const ssize_t got =
        positional ? pread(fd, buffer, sizeof buffer, offset) : read(fd, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      *error = std::strerror(errno);
      return false;
    }
    if (got == 0) break;
    out.append(buffer, static_cast<size_t>(got));
    offset += got;
  }
  *text = std::move(out);
  return true;
}

}  // namespace

BatchDirectives ParseBatchDirectives(const std::string& script) {
  BatchDirectives d;
  std::istringstream in(script);
  std::string line;
  while (std::getline(in, line)) {
    size_t start = line.find_first_not_of(" \t\r");
    if (start == std::string::npos) continue;
    if (line[start] != '#') break;  // the first command ends the directives
    // A directive starts its line: "#SBATCH" and a blank.
    if (start != 0 || line.size() < 8 || line.compare(0, 7, "#SBATCH") != 0 ||
        (line[7] != ' ' && line[7] != '\t'))
      continue;
    std::vector<std::string> words = Words(line.substr(8));
    if (!words.empty() && (words[0] == "hetjob" || words[0] == "packjob")) {
      d.heterogeneous = true;
      break;  // later components do not shape the first one
    }
    d.args.insert(d.args.end(), words.begin(), words.end());
  }
  return d;
}

bool ReadBatchScript(const std::string& path, BatchDirectives* out, std::string* error) {
  const int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  struct stat st {};
  if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    const std::string why = fd < 0 ? std::strerror(errno) : "not a regular file";
    if (fd >= 0) close(fd);
    *error = "cannot read the batch script " + path + " (" + why +
             ") for its #SBATCH lines; give a readable script file";
    return false;
  }
  std::string text, why;
  const bool ok = ReadHeader(fd, true, &text, &why);
  close(fd);
  if (!ok) {
    *error = "cannot read the batch script " + path + ": " + why;
    return false;
  }
  *out = ParseBatchDirectives(text);
  return true;
}

bool ReadStdinScript(BatchDirectives* out, std::string* error) {
  struct stat st {};
  if (fstat(0, &st) != 0 || !S_ISREG(st.st_mode)) {
    *error =
        "the batch script came through a pipe, which sbatch has already read and a tuned "
        "launch cannot read again; pass the script as a file (sbatch --xdeep-tune job.sh) or "
        "redirect it (sbatch --xdeep-tune < job.sh)";
    return false;
  }
  std::string text, why;
  if (!ReadHeader(0, true, &text, &why)) {
    *error = "cannot read the batch script on standard input: " + why;
    return false;
  }
  *out = ParseBatchDirectives(text);
  return true;
}

void RewindStdinScript() {
  struct stat st {};
  if (fstat(0, &st) == 0 && S_ISREG(st.st_mode)) lseek(0, 0, SEEK_SET);
}

}  // namespace xdeep::spank
