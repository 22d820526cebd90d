#pragma once
// Character classes and trimming shared by the graph IR's parsers (size expressions, tensor
// annotations) and the FX reader. Private to the compiled library (not installed).

#include <string_view>

namespace ctshard::text {

inline bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }
inline bool is_digit(char c) { return c >= '0' && c <= '9'; }
inline bool is_lower(char c) { return c >= 'a' && c <= 'z'; }
inline bool is_ident_start(char c) { return is_lower(c) || (c >= 'A' && c <= 'Z') || c == '_'; }
inline bool is_ident_char(char c) { return is_ident_start(c) || is_digit(c); }
inline bool is_quote(char c) { return c == '\'' || c == '"'; }

inline std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

}  // namespace ctshard::text
