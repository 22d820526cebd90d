// Reader for PyTorch aten-level FX graph printouts; see ctshard/fx/reader.hpp for the accepted format.
//
// Structure: the text is split into lines; everything before `def forward(` is ignored; the
// signature becomes placeholders; each body line is first checked for balanced brackets and
// quotes and cut at `;` / `#` (scan_line), then parsed by a small recursive-descent Cursor.

#include "ctshard/fx/reader.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <system_error>
#include <unordered_map>
#include <unordered_set>

#include "../common/text_scan.hpp"

namespace ctshard::fx {

using text::is_digit;
using text::is_ident_char;
using text::is_ident_start;
using text::is_lower;
using text::is_quote;
using text::is_space;
using text::trim;

namespace {

constexpr std::size_t kMaxShownText = 200;                    // longer offending lines are cut in what()
constexpr std::int64_t kMaxGetitemIndex = max_getitem_index;  // larger indices do not fill Node::outputs
constexpr std::size_t kMaxNesting = max_nesting;              // deeper nested lists / indices are rejected
constexpr std::string_view kOpsPrefix = "torch.ops.";

// ---- character and text helpers ----------------------------------------------------------

// ---- character and text helpers ----------------------------------------------------------

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_lower(char c) { return c >= 'a' && c <= 'z'; }
bool is_ident_start(char c) { return is_lower(c) || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_ident_char(char c) { return is_ident_start(c) || is_digit(c); }
bool is_quote(char c) { return c == '\'' || c == '"'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

std::size_t indentation(std::string_view line) {
  std::size_t n = 0;
  while (n < line.size() && is_space(line[n])) ++n;
  return n;
}

bool is_identifier(std::string_view s) {
  if (s.empty() || !is_ident_start(s.front())) return false;
  for (char c : s)
    if (!is_ident_char(c)) return false;
  return true;
}

std::vector<std::string_view> split_lines(std::string_view text, std::string_view source) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.size() > max_line_bytes)
      throw parse_error(std::string(source), lines.size() + 1,
                        "line of " + std::to_string(line.size()) + " bytes (at most " + std::to_string(max_line_bytes) + ")",
                        std::string(line.substr(0, kMaxShownText)));
    lines.push_back(line);
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return lines;
}

std::string strip_ops_prefix(std::string_view name) {
  if (name.starts_with(kOpsPrefix)) name.remove_prefix(kOpsPrefix.size());
  return std::string(name);
}

// ---- errors --------------------------------------------------------------------------------

/// Where a piece of text comes from, for error messages.
struct Where {
  std::string_view source;
  std::size_t line;  // 1-based
  std::string_view text;
};

[[noreturn]] void fail(const Where& where, const std::string& problem) {
  throw parse_error(std::string(where.source), where.line, problem, std::string(where.text));
}

/// A problem inside a call's argument list that still rejects the whole file: the reader's
/// bounds (nesting, argument count) and references to unknown nodes. Every other problem there
/// makes only that node unreadable (Node::unreadable).
class hard_parse_error : public parse_error {
 public:
  using parse_error::parse_error;
};

[[noreturn]] void fail_hard(const Where& where, const std::string& problem) {
  throw hard_parse_error(std::string(where.source), where.line, problem, std::string(where.text));
}

std::string format_error(const std::string& source, std::size_t line, const std::string& problem, const std::string& text) {
  std::string message = source + ":" + std::to_string(line) + ": " + problem;
  if (!text.empty()) {
    message += " in: ";
    message += text.size() > kMaxShownText ? text.substr(0, kMaxShownText) + "..." : text;
  }
  return message;
}

char closing_of(char open) { return open == '(' ? ')' : open == '[' ? ']' : '}'; }

/// Index just past the string literal opening at `s[start]`, or npos if it is not terminated.
std::size_t skip_string(std::string_view s, std::size_t start) {
  const char quote = s[start];
  for (std::size_t i = start + 1; i < s.size(); ++i) {
    if (s[i] == '\\') ++i;
    else if (s[i] == quote) return i + 1;
  }
  return std::string_view::npos;
}

/// Net number of brackets left open at the end of `s` when `depth` were open before it (quotes
/// respected, a `#` comment ends the count, never negative).
std::size_t open_brackets(std::string_view s, std::size_t depth = 0) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (is_quote(c)) {
      i = skip_string(s, i);
      if (i == std::string_view::npos) return depth;
      --i;
    } else if (c == '#') {
      return depth;
    } else if (c == '(' || c == '[' || c == '{') {
      ++depth;
    } else if ((c == ')' || c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return depth;
}

/// Checks brackets and quotes of one logical line, drops a `#` comment and splits the rest at
/// top-level `;` into trimmed statements.
std::vector<std::string_view> scan_line(std::string_view s, const Where& where) {
  std::vector<std::string_view> statements;
  std::string open;  // stack of open brackets
  std::size_t begin = 0;
  std::size_t i = 0;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if (is_quote(c)) {
      const std::size_t end = skip_string(s, i);
      if (end == std::string_view::npos) fail(where, "unterminated string literal starting at column " + std::to_string(i + 1));
      i = end - 1;
    } else if (c == '#') {
      break;
    } else if (c == '(' || c == '[' || c == '{') {
      open.push_back(c);
    } else if (c == ')' || c == ']' || c == '}') {
      if (open.empty() || closing_of(open.back()) != c)
        fail(where, std::string("unbalanced brackets: unexpected '") + c + "' at column " + std::to_string(i + 1));
      open.pop_back();
    } else if (c == ';' && open.empty()) {
      statements.push_back(trim(s.substr(begin, i - begin)));
      begin = i + 1;
    }
  }
  if (!open.empty()) fail(where, std::string("unbalanced brackets: '") + open.back() + "' is never closed");
  statements.push_back(trim(s.substr(begin, i - begin)));
  return statements;
}

/// The names of a trailer statement `a = b = ... = None` (FX frees dead values this way), or
/// nullopt if `statement` has another form.
std::optional<std::vector<std::string_view>> none_trailer_names(std::string_view statement) {
  std::vector<std::string_view> names;
  while (true) {
    const std::size_t eq = statement.find('=');
    names.push_back(trim(statement.substr(0, eq)));
    if (!is_identifier(names.back())) return std::nullopt;
    if (eq == std::string_view::npos) break;
    statement.remove_prefix(eq + 1);
  }
  if (names.size() < 2 || names.back() != "None") return std::nullopt;
  names.pop_back();
  return names;
}

// ---- Cursor: recursive-descent scanning of one statement ----------------------------------

class Cursor {
 public:
  Cursor(std::string_view text, const Where& where) : s_(text), where_(where) {}

  bool done() {
    skip_ws();
    return pos_ >= s_.size();
  }
  /// Next non-blank character, or '\0' at the end.
  char peek() {
    skip_ws();
    return pos_ < s_.size() ? s_[pos_] : '\0';
  }
  bool eat(char c) {
    if (peek() != c) return false;
    ++pos_;
    return true;
  }
  void expect(char c) {
    if (!eat(c)) fail(std::string("expected '") + c + "'");
  }
  void expect_end() {
    if (!done()) fail("unexpected text");
  }
  std::size_t pos() const { return pos_; }
  void reset(std::size_t pos) { pos_ = pos; }
  std::string_view text_from(std::size_t start) const { return s_.substr(start, pos_ - start); }
  /// The whole statement being scanned.
  std::string_view full() const { return s_; }

  /// `[A-Za-z_][A-Za-z0-9_]*` or "" (nothing consumed).
  std::string_view ident() {
    skip_ws();
    const std::size_t start = pos_;
    if (pos_ < s_.size() && is_ident_start(s_[pos_]))
      while (pos_ < s_.size() && is_ident_char(s_[pos_])) ++pos_;
    return s_.substr(start, pos_ - start);
  }
  /// `ident(.ident)*` or "".
  std::string_view dotted() {
    skip_ws();
    const std::size_t start = pos_;
    if (ident().empty()) return {};
    while (pos_ + 1 < s_.size() && s_[pos_] == '.' && is_ident_start(s_[pos_ + 1])) {
      ++pos_;
      ident();
    }
    return text_from(start);
  }
  /// Consumes the identifier `word` if it comes next as a whole word.
  bool eat_word(std::string_view word) {
    const std::size_t start = pos_;
    if (ident() == word) return true;
    pos_ = start;
    return false;
  }
  /// Consumes `=` but not `==`.
  bool eat_assign() {
    if (peek() != '=' || (pos_ + 1 < s_.size() && s_[pos_ + 1] == '=')) return false;
    ++pos_;
    return true;
  }

  /// A '...' or "..." literal, unescaped.
  std::string string_literal() {
    if (!is_quote(peek())) fail("expected a string literal");
    const char quote = s_[pos_++];
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != quote) {
      char c = s_[pos_++];
      if (c == '\\' && pos_ < s_.size()) c = unescape(s_[pos_++], out);
      out.push_back(c);
    }
    if (pos_ >= s_.size()) fail("unterminated string literal");
    ++pos_;
    return out;
  }

  /// Skips a bracketed group starting at the next character, which must be an opening bracket.
  void skip_group() {
    const char open = peek();
    if (open != '(' && open != '[' && open != '{') fail("expected an opening bracket");
    skip_until("", true);
  }

  /// Advances to the next top-level character listed in `stops` (quotes and brackets
  /// respected). With `one_group`, stops right after the first bracket group closes instead.
  void skip_until(std::string_view stops, bool one_group = false) {
    std::size_t depth = 0;
    while (pos_ < s_.size()) {
      const char c = s_[pos_];
      if (depth == 0 && stops.find(c) != std::string_view::npos) return;
      if (is_quote(c)) {
        string_literal();
        continue;
      }
      ++pos_;
      if (c == '(' || c == '[' || c == '{') {
        ++depth;
      } else if (c == ')' || c == ']' || c == '}') {
        if (depth == 0) fail("unbalanced brackets");
        if (--depth == 0 && one_group) return;
      }
    }
    if (depth != 0) fail("unbalanced brackets");
  }

  /// Fails with `problem` alone (no position: it already says where).
  [[noreturn]] void fail_plain(const std::string& problem) const { ::ctshard::fx::fail(where_, problem); }

  [[noreturn]] void fail(const std::string& problem) const {
    if (pos_ >= s_.size()) ::ctshard::fx::fail(where_, problem + " at end of statement");
    ::ctshard::fx::fail(where_, problem + " near '" + std::string(s_.substr(pos_, 24)) + "'");
  }
  /// As fail, but the problem rejects the file even inside a call's arguments (hard_parse_error).
  [[noreturn]] void fail_hard(const std::string& problem) const {
    if (pos_ >= s_.size()) ::ctshard::fx::fail_hard(where_, problem + " at end of statement");
    ::ctshard::fx::fail_hard(where_, problem + " near '" + std::string(s_.substr(pos_, 24)) + "'");
  }

 private:
  void skip_ws() {
    while (pos_ < s_.size() && (is_space(s_[pos_]) || s_[pos_] == '\n')) ++pos_;
  }
  // Maps the character after a backslash; unknown escapes keep their backslash.
  static char unescape(char c, std::string& out) {
    switch (c) {
      case 'n': return '\n';
      case 't': return '\t';
      case 'r': return '\r';
      case '0': return '\0';
      case '\\':
      case '\'':
      case '"': return c;
      default: out.push_back('\\'); return c;
    }
  }

  std::string_view s_;
  std::size_t pos_ = 0;
  const Where& where_;
};

// ---- number literals ---------------------------------------------------------------------

/// Parses an int or float literal (optional sign, `inf`, `nan`, exponent) at the cursor.
Arg parse_number(Cursor& c) {
  const std::string_view text = c.full();
  const std::size_t start = c.pos();
  bool negative = false;
  std::size_t i = start;
  if (text[i] == '+' || text[i] == '-') negative = text[i++] == '-';
  c.reset(i);
  if (i < text.size() && is_ident_start(text[i])) {
    const std::string_view word = c.ident();
    if (word == "inf") return Arg::make_float(negative ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity());
    if (word == "nan") return Arg::make_float(std::numeric_limits<double>::quiet_NaN());
    c.reset(start);
    c.fail("malformed number");
  }
  const std::size_t digits = i;
  bool is_float = false;
  while (i < text.size() && is_digit(text[i])) ++i;
  if (i < text.size() && text[i] == '.') {
    is_float = true;
    ++i;
    while (i < text.size() && is_digit(text[i])) ++i;
  }
  const bool has_mantissa = i > digits && !(i == digits + 1 && is_float);
  if (has_mantissa && i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    std::size_t j = i + 1;
    if (j < text.size() && (text[j] == '+' || text[j] == '-')) ++j;
    if (j < text.size() && is_digit(text[j])) {
      is_float = true;
      i = j;
      while (i < text.size() && is_digit(text[i])) ++i;
    }
  }
  c.reset(start);
  if (has_mantissa && i < text.size() && (text[i] == 'j' || text[i] == 'J') && (i + 1 >= text.size() || !is_ident_char(text[i + 1]))) {
    c.reset(i + 1);  // an imaginary literal `2j`: opaque, as complex values are
    return Arg::make_opaque(std::string(text.substr(start, i + 1 - start)));
  }
  if (!has_mantissa || (i < text.size() && (is_ident_char(text[i]) || text[i] == '.'))) c.fail("malformed number");
  // from_chars accepts a leading '-' but not '+'.
  const char* first = text.data() + (text[start] == '+' ? start + 1 : start);
  const char* last = text.data() + i;
  Arg arg;
  std::errc ec{};
  if (is_float) {
    double value = 0.0;
    ec = std::from_chars(first, last, value).ec;
    arg = Arg::make_float(value);
  } else {
    std::int64_t value = 0;
    ec = std::from_chars(first, last, value).ec;
    arg = Arg::make_int(value);
  }
  if (ec == std::errc::result_out_of_range) c.fail("number out of range");
  if (ec != std::errc{}) c.fail("malformed number");
  c.reset(i);
  return arg;
}

// ---- the graph builder --------------------------------------------------------------------

bool is_def_forward(std::string_view line) {
  line = trim(line);
  if (!line.starts_with("def") || line.size() < 4 || !is_space(line[3])) return false;
  line = trim(line.substr(3));
  if (!line.starts_with("forward")) return false;
  line = trim(line.substr(7));
  return line.starts_with("(");
}

/// A string annotation: a tensor type, or a symbolic integer `Sym(expr)`.
struct Annotation {
  std::optional<TensorType> type;
  std::string sym_expr;  // non-empty for `Sym(expr)`
};

/// Parses an annotation; nullopt with `*problem` set when it is neither form.
std::optional<Annotation> parse_annotation(std::string_view text, std::string* problem) {
  const std::string_view t = trim(text);
  if (t.starts_with("Sym(") && t.ends_with(")")) {
    const std::string_view inner = trim(t.substr(4, t.size() - 5));
    try {
      SizeExpr::parse(inner);
    } catch (const std::invalid_argument& e) {
      *problem = e.what();
      return std::nullopt;
    }
    return Annotation{std::nullopt, std::string(inner)};
  }
  std::optional<TensorType> type = parse_tensor_type(t, problem);
  if (!type) return std::nullopt;
  return Annotation{std::move(type), ""};
}

/// `name: "annotation"` alone (a declaration of the pytree format), or nullopt.
std::optional<std::pair<std::string_view, std::string>> declaration_of(std::string_view statement, const Where& at) {
  Cursor c(statement, at);
  const std::string_view name = c.ident();
  if (name.empty() || !c.eat(':') || !is_quote(c.peek())) return std::nullopt;
  std::string annotation = c.string_literal();
  if (!c.done()) return std::nullopt;
  return std::make_pair(name, std::move(annotation));
}

class TextReader {
 public:
  TextReader(std::string_view text, std::string_view source) : source_(source), lines_(split_lines(text, source)) {
    graph_.source_name = std::string(source);
  }
  /// A nested submodule's builder: `lines` are the lines of its class body, the first of them
  /// line `line_offset + 1` of the source; `depth` counts the enclosing modules.
  TextReader(std::vector<std::string_view> lines, std::string_view source, std::size_t line_offset, std::size_t depth)
      : source_(source), lines_(std::move(lines)), line_offset_(line_offset), depth_(depth) {
    graph_.source_name = std::string(source);
  }

  Graph build() {
    const std::size_t def = find_forward();
    const std::size_t body = parse_signature(def);
    parse_body(body, indentation(lines_[def]));
    fill_multi_outputs();
    return std::move(graph_);
  }

 private:
  Where where(std::size_t index) const { return {source_, line_offset_ + index + 1, trim(lines_[index])}; }

  std::size_t find_forward() const {
    for (std::size_t i = 0; i < lines_.size(); ++i)
      if (is_def_forward(lines_[i])) return i;
    fail(Where{source_, line_offset_, ""}, "no 'def forward(self, ...)' line found");
  }

  // -- signature -> placeholders

  /// Parses `def forward(...):` (possibly over several lines); returns the first body line.
  std::size_t parse_signature(std::size_t def) {
    std::string text(lines_[def]);
    std::size_t end = def + 1;
    // Brackets are counted line by line, so a long signature is read in linear time. A line that
    // ends inside a string literal counts as closed (open_brackets), as it did for the whole text.
    std::size_t open = open_brackets(text);
    while (open > 0) {
      if (end >= lines_.size()) fail(where(def), "unterminated 'def forward(' signature");
      if (end - def >= max_statement_lines)
        fail(where(def), "the forward signature spans more than " + std::to_string(max_statement_lines) + " lines");
      const std::string_view line = lines_[end++];
      text += '\n';
      text += line;
      open = open_brackets(text.substr(text.size() - line.size() - 1), open);
    }
    const Where at = where(def);
    const std::vector<std::string_view> statements = scan_line(text, at);
    if (statements.size() != 1) fail(at, "unexpected ';' in the forward signature");
    Cursor c(statements.front(), at);
    c.eat_word("def");
    c.eat_word("forward");
    c.expect('(');
    parse_parameters(c, line_offset_ + def + 1);
    if (c.eat('-')) {  // return annotation `-> T`
      c.expect('>');
      c.skip_until(":");
    }
    c.expect(':');
    c.expect_end();
    return end;
  }

  void parse_parameters(Cursor& c, std::size_t line) {
    bool first = true;
    while (!c.eat(')')) {
      const std::string_view name = c.ident();
      if (name.empty()) c.fail("expected a parameter name");
      Annotation type;
      if (c.eat(':')) type = parse_parameter_type(c, name);
      if (c.eat_assign()) c.skip_until(",)");  // default value
      if (!(first && name == "self")) {
        add_placeholder(name, std::move(type), line, c);
        ++signature_placeholders_;
      }
      first = false;
      if (!c.eat(',')) {
        c.expect(')');
        break;
      }
    }
  }

  /// A string annotation must be a tensor type or `Sym(expr)`; any other annotation means
  /// untyped.
  Annotation parse_parameter_type(Cursor& c, std::string_view name) {
    if (!is_quote(c.peek())) {
      c.skip_until(",)=");
      return {};
    }
    const std::string annotation = c.string_literal();
    std::string problem;
    std::optional<Annotation> parsed = parse_annotation(annotation, &problem);
    if (!parsed) c.fail_plain("unsupported type annotation \"" + annotation + "\" of parameter '" + std::string(name) + "': " + problem);
    return std::move(*parsed);
  }

  void add_placeholder(std::string_view name, Annotation annotation, std::size_t line, const Cursor& c) {
    Node node;
    node.name = std::string(name);
    node.kind = "placeholder";
    node.target = node.name;
    node.line = line;
    node.sym_expr = std::move(annotation.sym_expr);
    const bool typed = annotation.type.has_value() || !node.sym_expr.empty();
    if (annotation.type) node.outputs.push_back(std::move(*annotation.type));
    add_node(std::move(node), typed, c);
  }

  // -- body

  void parse_body(std::size_t first, std::size_t def_indent) {
    bool returned = false;
    for (std::size_t i = first; i < lines_.size(); ++i) {
      const std::string_view text = trim(lines_[i]);
      if (text.empty() || text.front() == '#') continue;
      const Where at = where(i);
      if (returned && indentation(lines_[i]) <= def_indent && class_name_of(text)) {
        i = parse_submodule(i) - 1;
        continue;
      }
      if (returned) fail(at, "unexpected text after 'return'");
      if (indentation(lines_[i]) <= def_indent) fail(at, "expected an indented body line of forward (an assignment or 'return')");
      const std::vector<std::string_view> statements = scan_line(text, at);
      if (statements.front().empty()) fail(at, "expected an assignment or 'return'");
      if (declaration_of(statements.front(), at)) {
        parse_declarations(statements, at);
        continue;
      }
      returned = parse_statement(statements.front(), at);
      for (std::size_t k = 1; k < statements.size(); ++k) check_trailer(statements[k], k + 1 == statements.size(), at);
    }
    if (!returned) fail(Where{source_, line_offset_ + lines_.size(), ""}, "missing 'return' at the end of forward");
  }

  /// The class name of a `class NAME(...):` / `class NAME:` line, or nullopt.
  static std::optional<std::string_view> class_name_of(std::string_view text) {
    if (!text.starts_with("class") || text.size() < 6 || !is_space(text[5])) return std::nullopt;
    text = trim(text.substr(5));
    std::size_t n = 0;
    while (n < text.size() && is_ident_char(text[n])) ++n;
    if (n == 0 || !is_ident_start(text[0]) || !text.ends_with(":")) return std::nullopt;
    return text.substr(0, n);
  }

  /// Reads the nested submodule whose `class` line is `first` (its body: the following lines
  /// indented deeper) into Graph::submodules; a body that does not read is kept with
  /// Submodule::unreadable set. Returns the index of the first line after the body.
  std::size_t parse_submodule(std::size_t first) {
    const std::size_t indent = indentation(lines_[first]);
    std::size_t end = first + 1;
    for (; end < lines_.size(); ++end) {
      const std::string_view t = trim(lines_[end]);
      if (!t.empty() && t.front() != '#' && indentation(lines_[end]) <= indent) break;
    }
    Submodule sub;
    sub.name = std::string(*class_name_of(trim(lines_[first])));
    if (depth_ + 1 > max_submodule_depth) {
      sub.unreadable = "submodules nested more than " + std::to_string(max_submodule_depth) + " deep";
    } else {
      try {
        std::vector<std::string_view> body(lines_.begin() + static_cast<std::ptrdiff_t>(first) + 1,
                                           lines_.begin() + static_cast<std::ptrdiff_t>(end));
        sub.graph = TextReader(std::move(body), source_, line_offset_ + first + 1, depth_ + 1).build();
      } catch (const parse_error& e) {
        sub.unreadable = e.what();
        sub.graph = Graph{};
      }
    }
    sub.graph.source_name = std::string(source_) + ":" + sub.name;
    graph_.submodules.push_back(std::move(sub));
    return end;
  }

  /// Checks a statement after the first `;` of a body line: `a = b = None` naming known nodes,
  /// or nothing after a final `;`.
  void check_trailer(std::string_view statement, bool last, const Where& at) const {
    if (last && statement.empty()) return;
    const auto names = none_trailer_names(statement);
    if (!names) fail(at, "unexpected statement '" + std::string(statement) + "' (only '; a = b = None' may follow a node)");
    for (std::string_view name : *names)
      if (index_.find(std::string(name)) == index_.end()) fail(at, "unknown node '" + std::string(name) + "' in '" + std::string(statement) + "'");
  }

  /// A line of pytree-format declarations `a: "T"; b: "U"; ` (before the unpacking line).
  void parse_declarations(const std::vector<std::string_view>& statements, const Where& at) {
    for (std::size_t k = 0; k < statements.size(); ++k) {
      if (k + 1 == statements.size() && statements[k].empty()) break;
      auto declaration = declaration_of(statements[k], at);
      if (!declaration) fail(at, "unexpected statement '" + std::string(statements[k]) + "' (a declaration line holds only 'name: \"type\"' items)");
      const std::string name(declaration->first);
      if (unpacked_) fail(at, "declaration of '" + name + "' after the fx_pytree.tree_flatten_spec line");
      if (graph_.nodes.size() != signature_placeholders_) fail(at, "declaration of '" + name + "' after the first node");
      std::string problem;
      std::optional<Annotation> annotation = parse_annotation(declaration->second, &problem);
      if (!annotation) fail(at, "unsupported type annotation \"" + declaration->second + "\" of '" + name + "': " + problem);
      if (!declared_.emplace(name, declarations_.size()).second) fail(at, "duplicate declaration of '" + name + "'");
      declarations_.push_back({name, std::move(*annotation), at.line});
    }
  }

  /// `a, b, = fx_pytree.tree_flatten_spec(...)` (after `first` and its comma): the unpacked
  /// names replace the signature's parameters as the graph's placeholders.
  void parse_unpacking(Cursor& c, std::string_view first, const Where& at) {
    std::vector<std::string> names{std::string(first)};
    while (c.eat(',')) {
      const std::string_view name = c.ident();
      if (name.empty()) break;
      names.emplace_back(name);
    }
    if (!c.eat_assign()) c.fail("expected '='");
    const std::string_view callee = c.dotted();
    if (callee != "fx_pytree.tree_flatten_spec" || c.peek() != '(')
      c.fail("expected 'fx_pytree.tree_flatten_spec(...)' (the only tuple assignment of a graph)");
    c.skip_group();
    c.expect_end();
    if (unpacked_) fail(at, "a second fx_pytree.tree_flatten_spec line");
    if (graph_.nodes.size() != signature_placeholders_) fail(at, "the fx_pytree.tree_flatten_spec line must come before the first node");
    // The signature's parameters are the pytree containers, not nodes.
    for (const Node& n : graph_.nodes) index_.erase(n.name);
    graph_.nodes.clear();
    annotated_.clear();
    const std::unordered_set<std::string_view> unpacked(names.begin(), names.end());
    for (const Declaration& d : declarations_)
      if (unpacked.count(d.name) == 0) fail(at, "'" + d.name + "' is declared but not unpacked by fx_pytree.tree_flatten_spec");
    for (const std::string& name : names) {
      const auto d = declared_.find(name);
      if (d == declared_.end()) add_placeholder(name, Annotation{}, at.line, c);
      else add_placeholder(name, declarations_[d->second].annotation, declarations_[d->second].line, c);
    }
    signature_placeholders_ = graph_.nodes.size();
    unpacked_ = true;
  }

  /// Parses one body statement; returns true for `return`.
  bool parse_statement(std::string_view statement, const Where& at) {
    Cursor c(statement, at);
    const auto check_unpacked = [&] {
      if (!declarations_.empty() && !unpacked_)
        fail(at, "'" + declarations_.front().name + "' is declared, but no 'a, b, = fx_pytree.tree_flatten_spec(...)' line unpacks the inputs");
    };
    if (c.eat_word("return")) {
      check_unpacked();
      parse_return(c, at.line);
      return true;
    }
    Node node;
    node.name = std::string(c.ident());
    node.line = at.line;
    if (node.name.empty()) c.fail("expected an assignment 'name = ...' or 'return'");
    if (c.peek() == ',') {
      parse_unpacking(c, node.name, at);
      return false;
    }
    check_unpacked();
    const bool annotated = c.eat(':');
    if (annotated) {
      const std::string annotation = c.string_literal();
      std::string problem;
      std::optional<Annotation> parsed = parse_annotation(annotation, &problem);
      if (!parsed) c.fail_plain("unsupported type annotation \"" + annotation + "\": " + problem);
      node.sym_expr = std::move(parsed->sym_expr);
      if (parsed->type) node.outputs.push_back(std::move(*parsed->type));
    }
    if (!c.eat_assign()) c.fail("expected '='");
    if (!node.sym_expr.empty()) parse_sym_rhs(c, node);
    else parse_rhs(c, node);
    c.expect_end();
    add_node(std::move(node), annotated, c);
    return false;
  }

  /// The right-hand side of a symbolic integer: a torch.ops call as usual, anything else kept
  /// verbatim as the target.
  void parse_sym_rhs(Cursor& c, Node& node) {
    const std::size_t start = c.pos();
    const std::string_view callee = c.dotted();
    if (callee.starts_with(kOpsPrefix) && c.peek() == '(') {
      c.reset(start);
      parse_rhs(c, node);
      return;
    }
    c.reset(start);
    node.kind = "call_function";
    node.target = std::string(trim(c.full().substr(start)));
    if (node.target.empty()) c.fail("expected a value");
    c.reset(c.full().size());
  }

  /// `torch.ops.ns.op.overload(args)`, `y[i]` or `self.attr`.
  void parse_rhs(Cursor& c, Node& node) {
    const std::string_view callee = c.dotted();
    if (callee.empty()) c.fail("expected a call, 'node[index]' or 'self.attribute'");
    if (c.peek() == '(') {
      if (!callee.starts_with(kOpsPrefix)) c.fail("unknown callee '" + std::string(callee) + "' (expected a torch.ops.* operator)");
      node.kind = "call_function";
      node.target = strip_ops_prefix(callee);
      const std::size_t open = c.pos();
      try {
        parse_call_arguments(c, node);
      } catch (const hard_parse_error&) {
        throw;
      } catch (const parse_error& e) {
        mark_unreadable(c, node, open, e.problem());
      }
    } else if (callee.starts_with("self.")) {
      node.kind = "get_attr";
      node.target = std::string(callee.substr(5));
    } else if (c.peek() == '[' && is_identifier(callee)) {
      node.kind = "call_function";
      node.target = "getitem";
      node.args.push_back(node_reference(c, callee));
      c.expect('[');
      const Arg index = parse_value(c);
      if (index.kind != ArgKind::integer) c.fail("expected an integer index");
      node.args.push_back(index);
      c.expect(']');
    } else {
      c.fail("expected a call, 'node[index]' or 'self.attribute'");
    }
  }

  /// The call of `node` whose argument list opens at `open` cannot be read: keep the node with
  /// the problem and, as its arguments, the node references in the argument text (identifiers
  /// outside string literals, not after a '.', that name known nodes; each once).
  void mark_unreadable(Cursor& c, Node& node, std::size_t open, const std::string& problem) {
    nesting_ = 0;
    node.args.clear();
    node.kwargs.clear();
    node.unreadable = problem;
    c.reset(open);
    c.skip_group();
    const std::string_view text = c.full().substr(open, c.pos() - open);
    std::unordered_set<std::string_view> seen;
    for (std::size_t i = 0; i < text.size();) {
      if (is_quote(text[i])) {
        const std::size_t end = skip_string(text, i);
        i = end == std::string_view::npos ? text.size() : end;
        continue;
      }
      if (!is_ident_start(text[i]) || (i > 0 && (is_ident_char(text[i - 1]) || text[i - 1] == '.'))) {
        ++i;
        continue;
      }
      std::size_t j = i;
      while (j < text.size() && is_ident_char(text[j])) ++j;
      const std::string_view name = text.substr(i, j - i);
      if (index_.count(std::string(name)) != 0 && seen.insert(name).second) node.args.push_back(Arg::make_node(std::string(name)));
      i = j;
    }
  }

  void parse_call_arguments(Cursor& c, Node& node) {
    c.expect('(');
    while (!c.eat(')')) {
      if (node.args.size() + node.kwargs.size() >= max_call_arguments)
        c.fail_hard("more than " + std::to_string(max_call_arguments) + " arguments in one call");
      const std::size_t start = c.pos();
      const std::string_view key = c.ident();
      if (!key.empty() && c.eat_assign()) {
        if (node.kwarg(key) != nullptr) c.fail("duplicate keyword argument '" + std::string(key) + "'");
        node.kwargs.emplace_back(std::string(key), parse_value(c));
      } else {
        c.reset(start);
        if (!node.kwargs.empty()) c.fail("positional argument after keyword argument");
        node.args.push_back(parse_value(c));
      }
      if (!c.eat(',')) {
        c.expect(')');
        break;
      }
    }
  }

  void parse_return(Cursor& c, std::size_t line) {
    Node node;
    node.kind = "output";
    node.target = "output";
    node.line = line;
    Arg value = Arg::make_none();
    const std::size_t start = c.pos();
    const bool unflatten = c.dotted() == "pytree.tree_unflatten" && c.peek() == '(';
    if (!unflatten) c.reset(start);
    if (unflatten) {  // pytree format: `return pytree.tree_unflatten([a, b], self._out_spec)`
      c.expect('(');
      value = parse_value(c);
      c.expect(',');
      if (!c.dotted().starts_with("self.")) c.fail("expected 'self._out_spec'");
      c.expect(')');
      c.expect_end();
    } else if (!c.done()) {
      value = parse_value(c);
      if (c.eat(',')) {  // bare tuple `return a, b`
        std::vector<Arg> items{std::move(value)};
        while (!c.done()) {
          items.push_back(parse_value(c));
          if (!c.eat(',')) break;
        }
        value = Arg::make_list(std::move(items));
      }
      c.expect_end();
    }
    if (value.kind == ArgKind::list) {
      for (const Arg& item : value.items) graph_.outputs.push_back(item.is_node() ? item.text : "");
    } else {
      graph_.outputs.push_back(value.is_node() ? value.text : "");
    }
    node.args.push_back(std::move(value));
    node.name = unique_name("output");
    add_node(std::move(node), false, c);
  }

  // -- values

  Arg parse_value(Cursor& c) {
    const char next = c.peek();
    if (next == '[') return parse_sequence(c, ']');
    if (next == '(') {
      if (std::optional<Arg> complex = complex_literal(c)) return *complex;
      return parse_sequence(c, ')');
    }
    if (next == '{') return parse_braces(c);
    if (is_quote(next)) return Arg::make_string(c.string_literal());
    if (c.full().substr(c.pos(), 3) == "...") {
      c.reset(c.pos() + 3);
      return Arg::make_opaque("...");
    }
    if (is_digit(next) || next == '-' || next == '+' || next == '.') return parse_number(c);
    if (!is_ident_start(next)) c.fail("expected a value");

    const std::size_t start = c.pos();
    const std::string_view name = c.dotted();
    if (name == "True" || name == "False") return Arg::make_bool(name == "True");
    if (name == "None") return Arg::make_none();
    if (name == "inf" || name == "nan") {
      c.reset(start);
      return parse_number(c);
    }
    if (name == "Ellipsis") return Arg::make_opaque("...");
    const bool is_torch = name.starts_with("torch.");
    if (c.peek() == '(') {  // device(type='cuda', index=0), torch.device('cuda'), slice(...)
      if (!is_torch && name != "device" && name != "slice") c.fail("unknown call '" + std::string(name) + "(...)' in an argument");
      c.skip_group();
      return Arg::make_opaque(std::string(c.text_from(start)));
    }
    if (is_torch) return Arg::make_opaque(strip_ops_prefix(name));  // torch.float32, op refs
    if (name.find('.') != std::string_view::npos) c.fail("unknown name '" + std::string(name) + "' (only torch.* names are accepted)");
    Arg ref = node_reference(c, name);
    if (c.eat('[')) {
      if (++nesting_ > kMaxNesting) c.fail_hard("lists and indices nested too deeply (at most " + std::to_string(kMaxNesting) + " levels)");
      const Arg index = parse_value(c);
      if (index.kind != ArgKind::integer) c.fail("expected an integer index");
      ref.index = index.int_value;
      c.expect(']');
      --nesting_;
    }
    return ref;
  }

  Arg parse_sequence(Cursor& c, char close) {
    if (++nesting_ > kMaxNesting) c.fail_hard("lists and indices nested too deeply (at most " + std::to_string(kMaxNesting) + " levels)");
    c.expect(close == ']' ? '[' : '(');
    std::vector<Arg> items;
    while (!c.eat(close)) {
      items.push_back(parse_value(c));
      if (!c.eat(',')) {
        c.expect(close);
        break;
      }
    }
    --nesting_;
    return Arg::make_list(std::move(items));
  }

  /// `{k: v, ...}` (a dict) or `{a, b}` (a set, read as a list); `{}` is an empty dict.
  Arg parse_braces(Cursor& c) {
    if (++nesting_ > kMaxNesting) c.fail_hard("lists and indices nested too deeply (at most " + std::to_string(kMaxNesting) + " levels)");
    c.expect('{');
    Arg out = Arg::make_dict({});
    if (!c.eat('}')) {
      Arg first = parse_value(c);
      if (c.eat(':')) {
        out.items.push_back(std::move(first));
        out.items.push_back(parse_value(c));
        while (c.eat(',')) {
          if (c.peek() == '}') break;
          out.items.push_back(parse_value(c));
          c.expect(':');
          out.items.push_back(parse_value(c));
        }
      } else {
        out = Arg::make_list({std::move(first)});
        while (c.eat(',')) {
          if (c.peek() == '}') break;
          out.items.push_back(parse_value(c));
        }
      }
      c.expect('}');
    }
    --nesting_;
    return out;
  }

  /// A parenthesised complex literal `(1+2j)`, `(-0.5-1e-3j)` as Python prints one: opaque.
  static std::optional<Arg> complex_literal(Cursor& c) {
    const std::string_view rest = c.full().substr(c.pos(), 64);
    const std::size_t close = rest.find(')');
    if (close == std::string_view::npos) return std::nullopt;
    const std::string_view inner = rest.substr(1, close - 1);
    // [sign] real (+|-) imag j, with real / imag plain decimal numbers
    std::size_t i = 0;
    const auto number = [&] {
      const std::size_t begin = i;
      while (i < inner.size() && (is_digit(inner[i]) || inner[i] == '.')) ++i;
      if (i > begin && i < inner.size() && (inner[i] == 'e' || inner[i] == 'E')) {
        ++i;
        if (i < inner.size() && (inner[i] == '+' || inner[i] == '-')) ++i;
        while (i < inner.size() && is_digit(inner[i])) ++i;
      }
      return i > begin;
    };
    if (i < inner.size() && (inner[i] == '+' || inner[i] == '-')) ++i;
    if (!number() || i >= inner.size() || (inner[i] != '+' && inner[i] != '-')) return std::nullopt;
    ++i;
    if (!number() || i + 1 != inner.size() || (inner[i] != 'j' && inner[i] != 'J')) return std::nullopt;
    const std::string text(rest.substr(0, close + 1));
    c.reset(c.pos() + close + 1);
    return Arg::make_opaque(text);
  }

  Arg node_reference(const Cursor& c, std::string_view name) const {
    if (index_.find(std::string(name)) == index_.end()) c.fail_hard("unknown node reference '" + std::string(name) + "'");
    return Arg::make_node(std::string(name));
  }

  // -- nodes

  void add_node(Node node, bool annotated, const Cursor& c) {
    if (!index_.emplace(node.name, graph_.nodes.size()).second) c.fail("duplicate node name '" + node.name + "'");
    graph_.nodes.push_back(std::move(node));
    annotated_.push_back(annotated);
  }

  std::string unique_name(const std::string& base) const {
    std::string name = base;
    for (std::size_t n = 1; index_.count(name) != 0; ++n) name = base + "_" + std::to_string(n);
    return name;
  }

  /// Types the outputs of un-annotated nodes from their annotated getitem children. Throws
  /// parse_error when the slots this adds pass max_getitem_slots + the number of nodes.
  void fill_multi_outputs() {
    std::size_t added = 0;
    const std::size_t budget = max_getitem_slots + graph_.nodes.size();
    for (std::size_t i = 0; i < graph_.nodes.size(); ++i) {
      const Node& item = graph_.nodes[i];
      if (item.kind != "call_function" || item.target != "getitem" || !annotated_[i] || item.outputs.empty()) continue;
      const std::size_t parent = index_.at(item.args[0].text);
      const std::int64_t k = item.args[1].int_value;
      if (annotated_[parent] || k < 0 || k >= kMaxGetitemIndex) continue;
      std::vector<TensorType>& outputs = graph_.nodes[parent].outputs;
      const auto slot = static_cast<std::size_t>(k);
      if (outputs.size() <= slot) {
        added += slot + 1 - outputs.size();
        if (added > budget)
          fail(Where{source_, item.line, trim(lines_[item.line - 1 - line_offset_])},
               "getitem indices make output lists of more than " + std::to_string(budget) + " entries in total");
        outputs.resize(slot + 1);
      }
      if (!outputs[slot].known()) outputs[slot] = item.outputs.front();
    }
  }

  std::string_view source_;
  std::vector<std::string_view> lines_;
  Graph graph_;
  std::unordered_map<std::string, std::size_t> index_;  // node name -> position in graph_.nodes
  std::vector<bool> annotated_;                         // per node: had a type annotation
  std::size_t nesting_ = 0;                             // open lists in parse_sequence
  std::size_t line_offset_ = 0;                         // source line of lines_[0], minus 1 (nested submodules)
  std::size_t depth_ = 0;                               // enclosing modules of this one
  std::size_t signature_placeholders_ = 0;              // placeholders (first nodes of graph_)
  struct Declaration {
    std::string name;
    Annotation annotation;
    std::size_t line;
  };
  std::vector<Declaration> declarations_;                  // pytree format: `name: "T"` before the unpacking
  std::unordered_map<std::string, std::size_t> declared_;  // declared name -> position in declarations_
  bool unpacked_ = false;                                  // the fx_pytree.tree_flatten_spec line was read
};

}  // namespace

// ---- parse_error ------------------------------------------------------------------------

parse_error::parse_error(std::string source, std::size_t line, const std::string& problem, std::string text)
    : ctshard::error(format_error(source, line, problem, text)), source_(std::move(source)), line_(line), text_(std::move(text)), problem_(problem) {}

Graph parse_fx_graph(std::string_view text, std::string_view source_name) { return TextReader(text, source_name).build(); }

Graph read_fx_graph_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw parse_error(path, 0, "is a directory", "");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw parse_error(path, 0, "cannot open file", "");
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (in.bad()) throw parse_error(path, 0, "cannot read file", "");
  return parse_fx_graph(text, path);
}

}  // namespace ctshard::fx
