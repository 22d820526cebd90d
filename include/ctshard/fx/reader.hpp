#pragma once
/// \file reader.hpp
/// Reader for PyTorch aten-level FX graph printouts (`GraphModule.print_readable()` and the
/// AOT-autograd / depyf dump format), used by the `ctshard plan` command-line tool.
///
/// Accepted input, in short:
/// - anything before the first `def forward(` line is ignored (imports, `b8: type` stubs, the
///   `class GraphModule(torch.nn.Module):` or `class <lambda>(...)` line); `def forward` may sit
///   at any indentation, its signature may span several lines;
/// - signature parameters after `self` become placeholders, typed by a string annotation such
///   as `primals_1: "f32[2304, 768]"`, a symbolic integer `primals_1: "Sym(s77)"`, or untyped
///   (`x`, `x: torch.Tensor`: empty outputs);
/// - AOT autograd's pytree (joint-graph) format: `def forward(self, primals, tangents):`, then
///   declarations `primals_1: "f32[8, 4]"; tangents_1: "f32[8, 4]"; ` (several per line separated
///   by `;`, or one per line), then the unpacking line
///   `primals_1, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)`.
///   The unpacked names (typed by their declarations, untyped when undeclared) are then the
///   graph's placeholders, in unpacking order, and the signature's parameters are not nodes; a
///   declaration of a name the unpacking line does not list, a declaration after it, or
///   declarations without one are errors. `return pytree.tree_unflatten([a, b], self._out_spec)`
///   returns `[a, b]`;
/// - body lines (indented deeper than `def`) are `name[: "type"] = rhs` assignments, where rhs is
///   a call `torch.ops.ns.op.overload(args)`, a getitem `y[i]` or an attribute `self.path`,
///   followed until the end by one `return value` line (`[a, b]`, `(a, b)`, `(a,)`, `a, b`, `a`).
///   A `;  a = b = None` trailer (whose names must be known nodes) and `# ...` comments are
///   dropped; blank lines and comment lines are skipped; text after the return is an error;
/// - a body line annotated `"Sym(expr)"` is a symbolic integer (Node::sym_expr = expr): its
///   right-hand side may be any balanced Python-like expression (`primals_1 * 16`,
///   `torch.sym_float(x)`, `torch.ops.aten.sym_size.int(x, 0)`); a `torch.ops.*` call is read as
///   usual (target and arguments), anything else is kept verbatim in Node::target with no
///   arguments and is not checked further. Such nodes may be used as arguments anywhere a node
///   may (`view(mul, [primals_1, 16, 48])`);
/// - arguments are any Python literal `print_readable` emits: numbers in any notation (`1e-05`,
///   `-1.5e+3`, `.5`, `inf`, `-inf`, `nan`), strings, `True` / `False` / `None`, lists and tuples
///   nested to any depth up to max_nesting, dicts (`{'BACKEND': 'AUTO', 0: x}`), sets (read as
///   lists), `...`, complex numbers (`2j`, `(1+2j)`: opaque), dtypes, devices, layouts, memory
///   formats and op references (opaque), and node references. A call whose argument list is
///   balanced but cannot be read (an unknown name or call, a malformed number, a syntax the reader
///   does not know) is kept as a node with Node::unreadable saying why, its arguments being the
///   node references found in the text: the planner falls back for that node only. The reader's
///   bounds (nesting, argument count, line length) and references to unknown nodes still reject
///   the file;
/// - after the forward's return, nested submodules as print_readable prints them
///   (`class sdpa_score0(torch.nn.Module):` at the indentation of `def forward`, its own
///   `def forward` deeper): each is read as a graph of its own (Graph::submodules; one that does
///   not read is kept with Submodule::unreadable set). Anything else after the return is an error;
/// - a tensor annotation reads `dtype[d0, d1, ...]` (an optional `[strides]` and device suffix,
///   as in `"f32[4, 8][8, 1]cuda:0"`, is accepted and ignored), each size a non-negative integer
///   or a size expression of symbols (`f32[s77, 768]`, `f16[1024*s77, 768]`,
///   `f32[s0 + 1, (s1//2)]`; grammar at SizeExpr), parsed into TensorType::dim_exprs.
/// Anything else raises parse_error; a malformed body line is never skipped.
///
/// Example:
/// \code
///   const ctshard::fx::Graph g = ctshard::fx::read_fx_graph_file("vit_b16_fw.fx.txt");
///   for (const ctshard::fx::Node& n : g.nodes)
///     if (n.kind == "call_function" && n.target == "aten.mm.default") { /* ... */ }
/// \endcode

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "ctshard/error.hpp"
#include "ctshard/graph/ir.hpp"

namespace ctshard::fx {

// The reader's vocabulary is the graph IR's (ctshard/graph/ir.hpp).
using graph::Arg;
using graph::ArgKind;
using graph::dtype_itemsize;
using graph::Graph;
using graph::is_known_dtype;
using graph::Node;
using graph::parse_tensor_type;
using graph::SizeExpr;
using graph::Submodule;
using graph::TensorType;

/// Raised for unreadable or malformed graph text. `what()` reads
/// `<source>:<line>: <problem> in: <offending line>` (the line trimmed, cut after 200
/// characters); problems not tied to a line (unreadable file, no `def forward`) read
/// `<source>:0: <problem>`. A ctshard::error, as every run-time error of the library's input.
class parse_error : public ctshard::error {
 public:
  /// Builds the message from its parts; `line` is 1-based (0 when no line applies).
  parse_error(std::string source, std::size_t line, const std::string& problem, std::string text);
  /// Name of the input (file path or the name given to parse_fx_graph).
  const std::string& source() const noexcept { return source_; }
  /// 1-based line number of the offending text (0 if the problem is not tied to a line).
  std::size_t line() const noexcept { return line_; }
  /// The offending source line, trimmed.
  const std::string& text() const noexcept { return text_; }
  /// The problem alone, without source, line and text ("malformed number near '1.2.3)'").
  const std::string& problem() const noexcept { return problem_; }

 private:
  std::string source_;
  std::size_t line_;
  std::string text_;
  std::string problem_;
};

/// Deepest nesting of lists, tuples, dicts and `node[index]` subscripts in one argument (`[[a[0]]]` is 3
/// levels); deeper input raises parse_error (the reader is recursive-descent).
inline constexpr std::size_t max_nesting = 64;
/// Deepest nesting of submodule classes (a submodule's own submodules count one more); a deeper
/// one is kept unread (Submodule::unreadable).
inline constexpr std::size_t max_submodule_depth = 16;
/// Longest line of graph text, in bytes (1 MiB); a longer line raises parse_error.
inline constexpr std::size_t max_line_bytes = std::size_t{1} << 20;
/// Most lines one statement (the `def forward(` signature) may span; more raise parse_error.
inline constexpr std::size_t max_statement_lines = 100000;
/// Most arguments (positional + keyword) of one call; more raise parse_error.
inline constexpr std::size_t max_call_arguments = 4096;
/// `y[k]` with k >= max_getitem_index does not type slot k of y's outputs (its own output type is
/// still read); a node's output list grows through getitem at most to this size.
inline constexpr std::int64_t max_getitem_index = 1 << 16;
/// Total output-list entries all getitem nodes of a graph may create, beyond one per node: the
/// slots filled in by `y[k]` lines make at most max_getitem_slots + (number of nodes) entries;
/// past that parse_error is raised (a few sparse huge indices would otherwise cost memory
/// quadratic in the text).
inline constexpr std::size_t max_getitem_slots = std::size_t{1} << 20;

/// Parses the text of an FX graph printout. `source_name` only appears in error messages and in
/// Graph::source_name. Throws parse_error on malformed input (unbalanced brackets or quotes, a
/// body line that is neither an assignment nor a return, a reference to an unknown node, a
/// duplicate node name, an unsupported type annotation, no `def forward`, no `return`, ...).
Graph parse_fx_graph(std::string_view text, std::string_view source_name = "<input>");

/// Reads and parses the file at `path` (which becomes Graph::source_name). Throws parse_error
/// when the file cannot be read, or as parse_fx_graph.
Graph read_fx_graph_file(const std::string& path);
}  // namespace ctshard::fx
