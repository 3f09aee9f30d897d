// Deadline parsing (see time_span.h).
#include "client/time_span.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <vector>

namespace xdeep::client {
namespace {

constexpr double kMaxSeconds = 1e6 * 3600;

bool Number(std::string_view s, double* out) {
  if (s.empty() || !(std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '.')) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size() && std::isfinite(*out);
}

bool WholeNumber(std::string_view s, long* out) {
  if (s.empty() || s.size() > 9) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size() && *out >= 0;
}

// Slurm's "[D-]HH[:MM[:SS]]" when a day is given, else "MM:SS" or "HH:MM:SS"
// (a lone number is hours here, not Slurm's minutes: that is --xdeep-deadline's
// documented unit).
bool SlurmTime(std::string_view s, double* seconds) {
  long days = 0;
  const size_t dash = s.find('-');
  const bool has_days = dash != std::string_view::npos;
  if (has_days) {
    if (!WholeNumber(s.substr(0, dash), &days)) return false;
    s.remove_prefix(dash + 1);
  } else if (s.find(':') == std::string_view::npos) {
    return false;
  }
  std::vector<long> fields;
  while (true) {
    const size_t colon = s.find(':');
    long v = 0;
    if (!WholeNumber(s.substr(0, colon), &v)) return false;
    fields.push_back(v);
    if (colon == std::string_view::npos) break;
    s.remove_prefix(colon + 1);
  }
  if (fields.size() > 3) return false;
  long h = 0, m = 0, sec = 0;
  if (has_days) {
    h = fields[0];
    if (fields.size() > 1) m = fields[1];
    if (fields.size() > 2) sec = fields[2];
  } else if (fields.size() == 2) {
    m = fields[0];
    sec = fields[1];
  } else {
    h = fields[0];
    m = fields[1];
    sec = fields[2];
  }
  if (m >= 60 || sec >= 60 || (has_days && h >= 24)) return false;
  *seconds = days * 86400.0 + h * 3600.0 + m * 60.0 + sec;
  return true;
}

bool WithUnit(std::string_view s, double* seconds) {
  static constexpr struct {
    std::string_view suffix;
    double scale;
  } kUnits[] = {{"min", 60}, {"d", 86400}, {"h", 3600}, {"m", 60}, {"s", 1}};
  for (const auto& u : kUnits) {
    if (s.size() > u.suffix.size() && s.ends_with(u.suffix)) {
      double v = 0;
      if (!Number(s.substr(0, s.size() - u.suffix.size()), &v)) return false;
      *seconds = v * u.scale;
      return true;
    }
  }
  return false;
}

}  // namespace

bool ParseSlurmTimeLimit(std::string_view text, double* seconds) {
  if (text == "INFINITE" || text == "UNLIMITED" || text == "infinite" || text == "unlimited") {
    *seconds = 0;
    return true;
  }
  long minutes = 0;
  if (WholeNumber(text, &minutes)) {
    *seconds = minutes * 60.0;
    return true;
  }
  return SlurmTime(text, seconds);
}

bool ParseTimeSpan(std::string_view text, double* seconds, std::string* error) {
  double s = 0, hours = 0;
  bool ok = false;
  if (Number(text, &hours)) {
    s = hours * 3600;
    ok = true;
  } else {
    ok = SlurmTime(text, &s) || WithUnit(text, &s);
  }
  if (!ok || !(s > 0) || s > kMaxSeconds) {
    *error = "'" + std::string(text) +
             "' is not a valid time; give hours (12, 1.5), a unit (90min, 2h, 3d) or Slurm's "
             "format (2:00:00, 1-12:00:00)";
    return false;
  }
  *seconds = s;
  return true;
}

}  // namespace xdeep::client
