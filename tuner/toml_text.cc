// CheckTomlText (see toml_text.h): one pass over the text that follows TOML's
// strings and comments closely enough to know where non-ASCII text may stand.
// It does not validate the syntax; toml++ does, on text this pass let through.
#include "tuner/toml_text.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace xdeep::tuner {
namespace {

// The code point starting at text[i] and its length in bytes; length 0 when
// the bytes there are not UTF-8.
struct CodePoint {
  char32_t value = 0;
  size_t length = 0;
};

CodePoint Decode(std::string_view text, size_t i) {
  const auto c = static_cast<unsigned char>(text[i]);
  if (c < 0x80) return {c, 1};
  size_t length = 0;
  char32_t value = 0;
  char32_t least = 0;
  if ((c & 0xE0) == 0xC0) {
    length = 2, value = c & 0x1F, least = 0x80;
  } else if ((c & 0xF0) == 0xE0) {
    length = 3, value = c & 0x0F, least = 0x800;
  } else if ((c & 0xF8) == 0xF0) {
    length = 4, value = c & 0x07, least = 0x10000;
  } else {
    return {};
  }
  if (i + length > text.size()) return {};
  for (size_t k = 1; k < length; ++k) {
    const auto next = static_cast<unsigned char>(text[i + k]);
    if ((next & 0xC0) != 0x80) return {};
    value = (value << 6) | (next & 0x3F);
  }
  // Overlong forms, UTF-16 surrogates and code points past U+10FFFF are not UTF-8.
  if (value < least || (value >= 0xD800 && value <= 0xDFFF) || value > 0x10FFFF) return {};
  return {value, length};
}

// Control characters TOML forbids everywhere (tab, LF and CR are allowed).
bool IsForbiddenControl(char32_t c) {
  return (c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7F;
}

bool IsAsciiSpace(char32_t c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

std::string CodePointName(char32_t c) { return absl::StrFormat("U+%04X", static_cast<uint32_t>(c)); }

enum class Context {
  kOutside,            // keys, values, punctuation: ASCII only
  kComment,            // '#' to the end of the line
  kBasic,              // "..."
  kLiteral,            // '...'
  kMultiLineBasic,     // """..."""
  kMultiLineLiteral,   // '''...'''
};

class Scanner {
 public:
  Scanner(std::string_view text, std::string_view source) : text_(text), source_(source) {}

  absl::Status Run() {
    while (pos_ < text_.size()) {
      const CodePoint cp = Decode(text_, pos_);
      if (cp.length == 0) {
        return Fail(absl::StrCat("byte ", pos_ + 1, " of the text is not UTF-8"),
                    "save the file as UTF-8 text");
      }
      if (IsForbiddenControl(cp.value)) {
        return Fail(cp.value == 0 ? std::string("a NUL byte (binary data)")
                                  : absl::StrCat("control character ", CodePointName(cp.value)),
                    "remove it; TOML allows only tabs and line breaks (write \\uXXXX inside a "
                    "string for anything else)");
      }
      if (auto st = Step(cp); !st.ok()) return st;
    }
    return absl::OkStatus();
  }

 private:
  // Steps over the code point at pos_ (and whatever it opens or escapes).
  absl::Status Step(CodePoint cp) {
    const char32_t c = cp.value;
    switch (context_) {
      case Context::kOutside:
        if (c >= 0x80) {
          return Fail(absl::StrCat("character ", CodePointName(c),
                                   " outside a quoted string or comment"),
                      "TOML allows non-ASCII text only inside \"strings\" and after #; quote "
                      "the key or value");
        }
        if (c == '[' && expression_start_ && !in_value_) return TableHeader();
        // toml++ reads a bare value (number, date, boolean) up to the next
        // blank, ',', ']', '}' or '#', quotes included: no string opens there.
        if ((c == '"' || c == '\'') && in_bare_value_) {
          return Fail("a quote inside a bare value",
                      "put a blank, ',' or a line break between a value and a quoted string");
        }
        if ((c == ']' || c == '}') && in_value_ &&
            (open_.empty() || open_.back().bracket != (c == ']' ? '[' : '{'))) {
          return Fail(absl::StrCat("'", std::string(1, static_cast<char>(c)), "' closes ",
                                   open_.empty() ? "nothing" : "a bracket of the other kind"),
                      "close arrays with ']' and inline tables with '}'");
        }
        if (c == '#' && AfterDateAndOneDigit()) {
          return Fail("a comment right after a date, a blank and one digit",
                      "write the time as HH:MM:SS (1979-05-27 07:32:00) or put a blank before #");
        }
        Advance(cp);
        Track(c);
        if (c == '#') context_ = Context::kComment;
        if (c == '"') context_ = OpenString('"', Context::kBasic, Context::kMultiLineBasic);
        if (c == '\'') context_ = OpenString('\'', Context::kLiteral, Context::kMultiLineLiteral);
        return absl::OkStatus();
      case Context::kComment:
        Advance(cp);
        if (c == '\n') {
          context_ = Context::kOutside;
          Track(c);
        }
        return absl::OkStatus();
      case Context::kBasic:
        if (c == '\\') return Escape(false);
        Advance(cp);
        if (c == '"' || c == '\n') context_ = Context::kOutside;
        if (c == '"' || c == '\n') Track(c);
        return absl::OkStatus();
      case Context::kLiteral:
        Advance(cp);
        if (c == '\'' || c == '\n') context_ = Context::kOutside;
        if (c == '\'' || c == '\n') Track(c);
        return absl::OkStatus();
      case Context::kMultiLineBasic:
        if (c == '\\') return Escape(true);
        if (c == '"') return CloseMultiLine('"');
        Advance(cp);
        return absl::OkStatus();
      case Context::kMultiLineLiteral:
        if (c == '\'') return CloseMultiLine('\'');
        Advance(cp);
        return absl::OkStatus();
    }
    return absl::OkStatus();
  }

  // Where the text outside strings stands: toml++ reads a '[' that starts
  // an expression (not inside a value) as a table header, and a bare value
  // (anything but a string, array or inline table) up to a terminator.
  void Track(char32_t c) {
    const bool terminator = c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == ',' ||
                            c == ']' || c == '}' || c == '#';
    if (in_bare_value_ && !terminator) return;  // '[', '{', '=' are part of it too
    in_bare_value_ = false;
    if (c == '\n') {
      if (open_.empty()) in_value_ = false;
      expression_start_ = !in_value_;
      return;
    }
    if (c == ' ' || c == '\t' || c == '\r' || c == '#') return;
    expression_start_ = false;
    if (!in_value_) {
      in_value_ = c == '=';
      return;
    }
    const bool in_table = !open_.empty() && open_.back().bracket == '{';
    const bool at_value = !in_table || open_.back().at_value;
    if (c == '[' || c == '{') {
      open_.push_back({static_cast<char>(c), c == '['});
    } else if ((c == ']' || c == '}') && !open_.empty()) {
      open_.pop_back();
    } else if (in_table && (c == '=' || c == ',')) {
      open_.back().at_value = c == '=';  // inline table: key = value, key = value
    } else if (at_value && c != '"' && c != '\'' && c != ',') {
      in_bare_value_ = true;
    }
  }

  // toml++ reads "YYYY-MM-DD D" as the start of a date-time and then takes
  // the next character into the value whatever it is, '#' included, so the
  // comment's first character is tested as a value terminator (undefined
  // behaviour for some non-ASCII ones). Such a time is never valid TOML.
  bool AfterDateAndOneDigit() const {
    if (pos_ < 12) return false;
    const std::string_view v = text_.substr(pos_ - 12, 12);
    if (v[4] != '-' || v[7] != '-' || v[10] != ' ' || v[11] < '0' || v[11] > '9') return false;
    // Ten characters of one bare value: none of toml++'s value terminators
    // ('[', '{', '(' and letters are part of it to toml++).
    return v.substr(0, 10).find_first_of(" \t\r\n,]}#") == std::string_view::npos;
  }

  // On the '[' of a table header. toml++ assumes (and asserts) that a name
  // follows the brackets and blanks; anything else is undefined behaviour there.
  absl::Status TableHeader() {
    AdvanceAscii(1);
    if (pos_ < text_.size() && text_[pos_] == '[') AdvanceAscii(1);
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t')) AdvanceAscii(1);
    expression_start_ = false;
    if (pos_ >= text_.size()) return absl::OkStatus();
    const char c = text_[pos_];
    const bool bare = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                      c == '_' || c == '-';
    if (bare || c == '"' || c == '\'' || c == ']') return absl::OkStatus();
    // Binary and non-ASCII bytes get their own message from Run() and Step().
    const auto byte = static_cast<unsigned char>(c);
    if ((byte < 0x20 && c != '\n' && c != '\r') || byte >= 0x7F) return absl::OkStatus();
    return Fail("a table header must start with a name",
                "write [name], [a.b] or [\"quoted name\"] on a line of its own");
  }

  // Just past an opening quote: two more open a multi-line string.
  Context OpenString(char quote, Context single, Context multi) {
    if (text_.substr(pos_, 2) != std::string(2, quote)) return single;
    AdvanceAscii(2);
    return multi;
  }

  // On a quote inside a multi-line string: three to five in a row close it
  // (up to two belong to the content), fewer are content.
  absl::Status CloseMultiLine(char quote) {
    size_t run = 0;
    while (pos_ + run < text_.size() && text_[pos_ + run] == quote) ++run;
    AdvanceAscii(run);
    if (run >= 3) {
      context_ = Context::kOutside;
      Track(static_cast<unsigned char>(quote));
    }
    return absl::OkStatus();
  }

  // On a backslash inside a basic string. toml++ asks whether the escaped
  // character, and in a multi-line string the first character after a
  // line-ending backslash, is whitespace: that test is unsafe on non-ASCII.
  absl::Status Escape(bool multi_line) {
    AdvanceAscii(1);
    if (pos_ >= text_.size()) return absl::OkStatus();
    const CodePoint escaped = Decode(text_, pos_);
    // Not UTF-8, or a control character: Run() reports it next.
    if (escaped.length == 0 || IsForbiddenControl(escaped.value)) return absl::OkStatus();
    if (escaped.value >= 0x80) {
      return Fail(absl::StrCat("character ", CodePointName(escaped.value), " after a backslash"),
                  "escape it as \\u or \\U with its hexadecimal code, or remove the backslash");
    }
    if (!multi_line || !IsAsciiSpace(escaped.value)) {
      // A line break ends a one-line string: Step() sees it next.
      if (escaped.value != '\n') Advance(escaped);
      return absl::OkStatus();
    }
    // A line-ending backslash: whitespace and line breaks up to the next text.
    while (pos_ < text_.size() && IsAsciiSpace(static_cast<unsigned char>(text_[pos_]))) {
      Advance({static_cast<unsigned char>(text_[pos_]), 1});
    }
    if (pos_ >= text_.size()) return absl::OkStatus();
    const CodePoint first = Decode(text_, pos_);
    if (first.length != 0 && first.value >= 0x80) {
      return Fail(absl::StrCat("character ", CodePointName(first.value),
                               " right after a line-ending backslash"),
                  "start the continued line with an ASCII character, or escape it as \\u or "
                  "\\U");
    }
    return absl::OkStatus();
  }

  void Advance(CodePoint cp) {
    if (cp.value == '\n') {
      ++line_;
      column_ = 1;
    } else {
      ++column_;
    }
    pos_ += cp.length;
  }
  // Quotes and backslashes: ASCII, never a line break.
  void AdvanceAscii(size_t n) {
    pos_ += n;
    column_ += static_cast<int>(n);
  }

  absl::Status Fail(std::string_view what, std::string_view fix) const {
    return absl::InvalidArgumentError(
        absl::StrCat(source_, ":", line_, ": column ", column_, ": ", std::string(what), "; ",
                     std::string(fix)));
  }

  std::string_view text_;
  std::string source_;
  size_t pos_ = 0;
  int line_ = 1;
  int column_ = 1;
  Context context_ = Context::kOutside;
  bool expression_start_ = true;  // only blanks since the last line break
  bool in_value_ = false;         // after a key's '=', until the value ends
  bool in_bare_value_ = false;    // inside a number, date, boolean or stray word
  // Arrays and inline tables open in the value; at_value: an inline table is
  // past a key's '=' (an array holds only values).
  struct Open {
    char bracket;
    bool at_value;
  };
  std::vector<Open> open_;
};

}  // namespace

absl::Status CheckTomlText(std::string_view text, std::string_view source) {
  if (text.size() > kMaxTomlTextBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        std::string(source), ":1: the text is ", text.size(), " bytes, more than the ", kMaxTomlTextBytes,
        " a TOML settings file may have; give the settings, not data"));
  }
  return Scanner(text, source).Run();
}

}  // namespace xdeep::tuner
