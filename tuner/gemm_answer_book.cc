// GemmAnswerBook (gemm_answer_book.h).
#include "tuner/gemm_answer_book.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace xdeep::tuner {

GemmAnswerBook::GemmAnswerBook(size_t max_per_key)
    : max_per_key_(std::max<size_t>(1, max_per_key)) {}

void GemmAnswerBook::Put(Book& book, const Shape& shape, const GemmKernel& kernel, uint64_t stamp) {
  book.entries.insert_or_assign(shape, Entry{kernel, stamp});
}

void GemmAnswerBook::Trim(Book& book) const {
  if (book.entries.size() <= max_per_key_) return;
  // Stamps are unique: the max_per_key_-th newest is the oldest kept.
  std::vector<uint64_t> stamps;
  stamps.reserve(book.entries.size());
  for (const auto& [shape, e] : book.entries) stamps.push_back(e.stamp);
  const size_t drop = stamps.size() - max_per_key_;
  std::nth_element(stamps.begin(), stamps.begin() + drop, stamps.end());
  const uint64_t oldest_kept = stamps[drop];
  absl::erase_if(book.entries, [&](const auto& kv) { return kv.second.stamp < oldest_kept; });
}

size_t GemmAnswerBook::Merge(const std::string& key, const std::vector<GemmPoint>& answers) {
  Book& book = books_[key];
  size_t fresh = 0;
  for (const GemmPoint& p : answers) {
    if (!p.kernel.known() || p.m <= 0 || p.n <= 0 || p.k <= 0) continue;
    const Shape s{p.m, p.n, p.k, static_cast<int>(p.dtype), static_cast<int>(p.layout)};
    fresh += book.entries.contains(s) ? 0 : 1;
    Put(book, s, p.kernel, ++clock_);
  }
  book.merged = ++clock_;
  Trim(book);
  while (books_.size() > kMaxKeys) {
    auto oldest = std::min_element(books_.begin(), books_.end(), [](const auto& a, const auto& b) {
      return a.second.merged < b.second.merged;
    });
    books_.erase(oldest);
  }
  return fresh;
}

std::vector<GemmPoint> GemmAnswerBook::Answers(const std::string& key) const {
  std::vector<GemmPoint> out;
  auto it = books_.find(key);
  if (it == books_.end()) return out;
  std::vector<std::pair<uint64_t, GemmPoint>> stamped;
  stamped.reserve(it->second.entries.size());
  for (const auto& [s, e] : it->second.entries) {
    stamped.push_back({e.stamp, GemmPoint{s.m, s.n, s.k, static_cast<DType>(s.dtype), 0.0,
                                          static_cast<GemmLayout>(s.layout), e.kernel}});
  }
  std::sort(stamped.begin(), stamped.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  out.reserve(stamped.size());
  for (auto& [stamp, p] : stamped) out.push_back(p);
  return out;
}

size_t GemmAnswerBook::Size(const std::string& key) const {
  auto it = books_.find(key);
  return it == books_.end() ? 0 : it->second.entries.size();
}

std::vector<std::string> GemmAnswerBook::Keys() const {
  std::vector<std::string> keys;
  for (const auto& [key, book] : books_) keys.push_back(key);
  return keys;
}

std::string GemmAnswerBook::ToJson() const {
  nlohmann::json books = nlohmann::json::array();
  for (const auto& [key, book] : books_) {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& [s, e] : book.entries) {
      rows.push_back({s.m, s.n, s.k, s.dtype, s.layout, e.kernel.algo, e.kernel.tile_m,
                      e.kernel.tile_n, e.kernel.split_k, e.stamp});
    }
    books.push_back({{"key", key}, {"merged", book.merged}, {"answers", std::move(rows)}});
  }
  const nlohmann::json doc = {
      {"schema", "xdeep.gemm_answers/1"},
      {"columns",
       {"m", "n", "k", "dtype", "layout", "algo", "tile_m", "tile_n", "split_k", "stamp"}},
      {"books", std::move(books)}};
  return doc.dump() + "\n";
}

absl::StatusOr<GemmAnswerBook> GemmAnswerBook::FromJson(std::string_view text, size_t max_per_key,
                                                        std::string_view source_name) {
  auto bad = [&](std::string_view what) {
    return absl::DataLossError(absl::StrCat(std::string(source_name), ": ", std::string(what),
                                            "; remove the file, the next probes ask again"));
  };
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return bad("not JSON");
  if (doc.value("schema", std::string()) != "xdeep.gemm_answers/1") {
    return bad("unknown schema; expected \"xdeep.gemm_answers/1\"");
  }
  GemmAnswerBook out(max_per_key);
  auto books = doc.find("books");
  if (books == doc.end() || !books->is_array()) return bad("no \"books\" list");
  for (const nlohmann::json& b : *books) {
    auto rows = b.find("answers");
    if (!b.is_object() || !b.value("key", nlohmann::json()).is_string() || rows == b.end() ||
        !rows->is_array()) {
      return bad("a book without a key or answers");
    }
    Book& book = out.books_[b["key"].get<std::string>()];
    book.merged = b.value("merged", uint64_t{0});
    out.clock_ = std::max(out.clock_, book.merged);
    for (const nlohmann::json& r : *rows) {
      if (!r.is_array() || r.size() != 10 ||
          !std::all_of(r.begin(), r.end(), [](const auto& v) { return v.is_number_integer(); })) {
        return bad("an answer is not 10 integers");
      }
      const Shape s{r[0].get<int64_t>(), r[1].get<int64_t>(), r[2].get<int64_t>(), r[3].get<int>(),
                    r[4].get<int>()};
      const GemmKernel k{r[5].get<int>(), r[6].get<int>(), r[7].get<int>(), r[8].get<int>()};
      if (s.m <= 0 || s.n <= 0 || s.k <= 0 || s.dtype < 0 || s.dtype > 3 || s.layout < 0 ||
          s.layout > 2 || !k.known()) {
        return bad("an answer with a bad shape, precision, layout or kernel");
      }
      const uint64_t stamp = r[9].get<uint64_t>();
      out.Put(book, s, k, stamp);
      out.clock_ = std::max(out.clock_, stamp);
    }
    out.Trim(book);
  }
  return out;
}

absl::StatusOr<GemmAnswerBook> GemmAnswerBook::Load(const std::string& path, size_t max_per_key) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return GemmAnswerBook(max_per_key);
  std::ifstream in(path);
  if (!in) return absl::PermissionDeniedError(absl::StrCat(path, ": cannot read"));
  std::stringstream text;
  text << in.rdbuf();
  return FromJson(text.str(), max_per_key, path);
}

absl::Status GemmAnswerBook::Save(const std::string& path) const {
  const std::string part = path + ".part";
  {
    std::ofstream out(part, std::ios::trunc);
    out << ToJson();
    out.flush();
    if (!out) {
      std::remove(part.c_str());
      return absl::UnavailableError(absl::StrCat(part, ": cannot write"));
    }
  }
  std::error_code ec;
  std::filesystem::rename(part, path, ec);
  if (ec) {
    std::remove(part.c_str());
    return absl::UnavailableError(absl::StrCat(path, ": cannot replace: ", ec.message()));
  }
  return absl::OkStatus();
}

}  // namespace xdeep::tuner
