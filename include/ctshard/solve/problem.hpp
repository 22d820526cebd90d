#pragma once
/// \file solve/problem.hpp
/// The solver's working copy of a cost graph: costs scaled to "fine" units (cost x scale, so the
/// dual's messages keep sub-unit precision in integers and every bound is exact integer
/// arithmetic), labels that can be removed, factored edges that carry their messages, and a
/// record of every eliminated node for the reconstruction of a full assignment.
///
/// Invariant: for every assignment of the live nodes, with every eliminated node at its best
/// label given its neighbours, scale * (objective of the original graph) equals
/// `constant + sum of live unary costs + sum of live edge costs` (the "base" form). Messages are
/// a reparametrization on top: theta'_u = theta_u + sum over incident edges of the edge's message
/// to u, theta'_e = D - (message to u) - (message to v); they never change the base form.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <numeric>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ctshard/solve/cost_graph.hpp"

namespace ctshard::solve::detail {

using fine_t = std::int64_t;
inline constexpr fine_t inf = forbidden;  ///< forbidden, in fine units too
inline constexpr std::uint32_t no_class = std::numeric_limits<std::uint32_t>::max();

[[nodiscard]] inline fine_t sat_add(fine_t a, fine_t b) noexcept { return (a >= inf || b >= inf) ? inf : a + b; }

__extension__ typedef __int128 wide_t;  ///< 128-bit intermediates: fine costs times usages
/// A 128-bit intermediate back in fine units, saturated at ±inf.
[[nodiscard]] inline fine_t saturate(wide_t x) noexcept { return x >= inf ? inf : (x <= -inf ? -inf : static_cast<fine_t>(x)); }

/// Sums of finite fine values stay below 2^57 in magnitude (choose_scale, push_passes_in_range);
/// a sum that took in a forbidden entry (inf, about 2^61) stays at or above 2^60 whatever finite
/// terms it also took in. Branch-free loops add without sat_add and map such sums back to inf
/// with clamp_forbidden.
inline constexpr fine_t forbidden_from = inf / 2;
[[nodiscard]] inline fine_t clamp_forbidden(fine_t x) noexcept { return x >= forbidden_from ? inf : x; }

// The min-plus kernels below: each loop is written once (`*_loop`) and, on x86 with GCC or
// Clang, also compiled into an AVX2 and an AVX-512 function (`[[gnu::target(...)]]`, the loop
// inlined into it), the widest the processor runs called (`__builtin_cpu_supports`, checked
// once): 64-bit minima only vectorize with AVX2 (GPT-2 fw+bw FSDP on 2x4, when these loops were
// ~1/3 of the solver's instructions: -7 % in time), and AVX-512 has them as one instruction
// (vpminsq, 8 lanes; GPT-2's 2x2x2 training step, where they are ~half of the solve: -20 % in
// time against AVX2). A dispatch by hand, not `target_clones`: Clang 14
// gives the clones' resolver an external definition in every translation unit (multiple
// definitions at link time), and the resolver needs the loader's ifunc support. Define
// CTSHARD_NO_AVX2_DISPATCH to build the baseline only (both vector widths off).
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__)) && !defined(CTSHARD_NO_AVX2_DISPATCH)
#define CTSHARD_AVX2_DISPATCH 1
#else
#define CTSHARD_AVX2_DISPATCH 0
#endif

/// out[i] = min(out[i], x + row[i]) for i < n: one row of a min-plus product. Branch-free: a
/// forbidden term gives a sum at or above forbidden_from (clamp_forbidden afterwards).
[[gnu::always_inline]] inline void min_plus_into_loop(fine_t* __restrict out, const fine_t* __restrict row, fine_t x, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i) out[i] = std::min(out[i], x + row[i]);
}

/// min(init, min over i < n of row[i] + g[i]): one entry of a min-plus product. Branch-free as
/// min_plus_into.
[[gnu::always_inline]] inline fine_t min_plus_reduce_loop(const fine_t* __restrict row, const fine_t* __restrict g, std::size_t n,
                                                          fine_t init) noexcept {
  fine_t m = init;
  for (std::size_t i = 0; i < n; ++i) m = std::min(m, row[i] + g[i]);
  return m;
}

/// acc[i] = min(acc[i] + t[i], inf) for i < n: sums of costs at most inf each stay at most inf
/// (about 2^61) without a branch; a forbidden term plus a negative one reads below inf until
/// clamp_forbidden.
[[gnu::always_inline]] inline void add_capped_loop(fine_t* __restrict acc, const fine_t* __restrict t, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i) acc[i] = std::min(acc[i] + t[i], inf);
}

#if CTSHARD_AVX2_DISPATCH
/// The widest kernels the processor runs, asked once: AVX-512 (F and VL: a 64-bit minimum is one
/// instruction, vpminsq), AVX2 (a compare and a blend per minimum), or the baseline.
enum class SimdLevel { baseline, avx2, avx512 };
inline SimdLevel simd_level() noexcept {
  static const SimdLevel level = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") ? SimdLevel::avx512
                                 : __builtin_cpu_supports("avx2")                                        ? SimdLevel::avx2
                                                                                                         : SimdLevel::baseline;
  return level;
}
// The three kernels compiled for one instruction set `isa`, named `*_<suffix>`: each the loop
// inlined into a function built for it.
// clang-format off
#define CTSHARD_MIN_PLUS_KERNELS(suffix, isa)                                                                                          \
  [[gnu::target(isa)]] inline void min_plus_into_##suffix(fine_t* __restrict out, const fine_t* __restrict row, fine_t x,             \
                                                          std::size_t n) noexcept {                                                    \
    min_plus_into_loop(out, row, x, n);                                                                                                \
  }                                                                                                                                    \
  [[gnu::target(isa)]] inline fine_t min_plus_reduce_##suffix(const fine_t* __restrict row, const fine_t* __restrict g, std::size_t n, \
                                                              fine_t init) noexcept {                                                  \
    return min_plus_reduce_loop(row, g, n, init);                                                                                      \
  }                                                                                                                                    \
  [[gnu::target(isa)]] inline void add_capped_##suffix(fine_t* __restrict acc, const fine_t* __restrict t, std::size_t n) noexcept {   \
    add_capped_loop(acc, t, n);                                                                                                        \
  }
// clang-format on
CTSHARD_MIN_PLUS_KERNELS(avx2, "avx2")
CTSHARD_MIN_PLUS_KERNELS(avx512, "avx512f,avx512vl")
#undef CTSHARD_MIN_PLUS_KERNELS
#endif

/// min_plus_into_loop, with AVX-512 or AVX2 where the processor has it.
inline void min_plus_into(fine_t* __restrict out, const fine_t* __restrict row, fine_t x, std::size_t n) noexcept {
#if CTSHARD_AVX2_DISPATCH
  switch (simd_level()) {
    case SimdLevel::avx512: return min_plus_into_avx512(out, row, x, n);
    case SimdLevel::avx2: return min_plus_into_avx2(out, row, x, n);
    case SimdLevel::baseline: break;
  }
#endif
  min_plus_into_loop(out, row, x, n);
}

/// min_plus_reduce_loop, with AVX-512 or AVX2 where the processor has it.
inline fine_t min_plus_reduce(const fine_t* __restrict row, const fine_t* __restrict g, std::size_t n, fine_t init) noexcept {
#if CTSHARD_AVX2_DISPATCH
  switch (simd_level()) {
    case SimdLevel::avx512: return min_plus_reduce_avx512(row, g, n, init);
    case SimdLevel::avx2: return min_plus_reduce_avx2(row, g, n, init);
    case SimdLevel::baseline: break;
  }
#endif
  return min_plus_reduce_loop(row, g, n, init);
}

/// add_capped_loop, with AVX-512 or AVX2 where the processor has it.
inline void add_capped(fine_t* __restrict acc, const fine_t* __restrict t, std::size_t n) noexcept {
#if CTSHARD_AVX2_DISPATCH
  switch (simd_level()) {
    case SimdLevel::avx512: return add_capped_avx512(acc, t, n);
    case SimdLevel::avx2: return add_capped_avx2(acc, t, n);
    case SimdLevel::baseline: break;
  }
#endif
  add_capped_loop(acc, t, n);
}

/// Floor division for possibly negative numerators (positive divisor).
[[nodiscard]] inline fine_t floor_div(fine_t a, fine_t b) noexcept {
  fine_t q = a / b;
  if ((a % b != 0) && (a < 0)) --q;
  return q;
}

/// A cost matrix shared between edges (and elimination records) until one of them replaces it;
/// read-only.
class SharedMatrix {
 public:
  SharedMatrix() = default;
  explicit SharedMatrix(std::vector<fine_t> v) : p_(std::make_shared<const std::vector<fine_t>>(std::move(v))) {}
  [[nodiscard]] const fine_t& operator[](std::size_t i) const noexcept { return (*p_)[i]; }
  [[nodiscard]] const fine_t* data() const noexcept { return p_->data(); }
  [[nodiscard]] std::size_t size() const noexcept { return p_ ? p_->size() : 0; }
  [[nodiscard]] const fine_t* begin() const noexcept { return p_->data(); }
  [[nodiscard]] const fine_t* end() const noexcept { return p_->data() + p_->size(); }
  void reset() noexcept { p_.reset(); }
  /// Whether both hold the same matrix object (not only equal costs).
  [[nodiscard]] bool same(const SharedMatrix& o) const noexcept { return p_ == o.p_; }

  /// A reference to a matrix object that does not keep its costs alive (the reductions' memo
  /// keys). Two references are the same while that object lives; once it is freed, a reference
  /// to it matches nothing. It keeps the object's control block, so no later matrix can have
  /// the same identity while the reference exists.
  class Ref {
   public:
    Ref() = default;
    explicit Ref(const SharedMatrix& m) : w_(m.p_) {}
    /// The same live matrix object (not only equal costs).
    [[nodiscard]] bool same(const Ref& o) const noexcept {
      return !w_.expired() && !o.w_.expired() && !w_.owner_before(o.w_) && !o.w_.owner_before(w_);
    }
    /// The matrix, while it lives (an empty matrix once it is freed).
    [[nodiscard]] SharedMatrix get() const {
      SharedMatrix m;
      m.p_ = w_.lock();
      return m;
    }

   private:
    std::weak_ptr<const std::vector<fine_t>> w_;
  };
  /// An identity for hashing: equal for the same matrix object.
  [[nodiscard]] std::uintptr_t identity() const noexcept { return reinterpret_cast<std::uintptr_t>(p_.get()); }

 private:
  std::shared_ptr<const std::vector<fine_t>> p_;
};

struct WNode {
  std::vector<fine_t> theta;          ///< base unary, finite
  std::vector<std::uint32_t> label;   ///< original label id of each current label
  std::vector<std::int64_t> usage;    ///< per current label (empty without limits)
  std::vector<std::uint32_t> edges;   ///< live incident edges
  std::vector<std::uint32_t> limits;  ///< live usage limits the node belongs to
  bool alive = true;
};

struct WEdge {
  std::uint32_t u = 0, v = 0;
  std::vector<std::uint32_t> rc, cc;  ///< class of each current label of u / v
  std::uint32_t rows = 0, cols = 0;
  SharedMatrix d;              ///< rows * cols base costs (inf allowed)
  std::vector<fine_t> mu, mv;  ///< messages to u / to v, per current label
  bool alive = true;
  /// Arc consistency may no longer hold (new or merged matrix, or an end lost labels since
  /// propagate last looked at the edge).
  bool arc_pending = true;
  /// compact_classes has run on this matrix (new and merged edges; an input edge once its
  /// labels first shrink). Later shrinks drop the classes no label uses any more
  /// (Problem::keep_labels) without looking for rows or columns that became equal.
  bool compact = false;
  /// Some class of the matrix may have no label left (Problem::keep_labels with
  /// ClassCleanup::deferred); Problem::tidy_classes drops them.
  bool untidy = false;

  [[nodiscard]] fine_t at(std::size_t a, std::size_t b) const noexcept { return d[std::size_t{rc[a]} * cols + cc[b]]; }
  [[nodiscard]] std::uint32_t other(std::uint32_t x) const noexcept { return x == u ? v : u; }
};

struct WLimit {
  std::vector<std::uint32_t> nodes;  ///< live member nodes
  std::int64_t limit = 0;            ///< minus the usage of members that left (fixed, or eliminated at their least usage)
  /// Enforced limits constrain the search (their members with a varying usage are never
  /// eliminated); the others only remove labels that no solution within them can use.
  bool enforced = false;
};

/// One factor of an eliminated node, kept for reconstruction: its cost given the node's label
/// (by class) and the neighbour's original label (by class). The edge's matrix is shared, not
/// copied: `at(own class, other class)` reads it in either orientation.
struct ElimFactor {
  std::uint32_t other = 0;
  std::vector<std::uint32_t> rc;              ///< per label of the eliminated node (at elimination)
  std::vector<std::uint32_t> class_of_label;  ///< per original label of `other` (no_class when absent then)
  std::uint32_t own = 0, cols = 0;            ///< classes of the eliminated node / of `other`
  SharedMatrix d;
  bool own_is_row = true;  ///< d is own x other (else other x own)
  [[nodiscard]] fine_t at(std::uint32_t r, std::uint32_t c) const noexcept {
    return own_is_row ? d[std::size_t{r} * cols + c] : d[std::size_t{c} * own + r];
  }
  /// The matrix as own x other, row-major (a copy only when it is stored the other way).
  [[nodiscard]] std::vector<fine_t> rows() const {
    std::vector<fine_t> out(std::size_t{own} * cols);
    for (std::uint32_t r = 0; r < own; ++r)
      for (std::uint32_t c = 0; c < cols; ++c) out[std::size_t{r} * cols + c] = at(r, c);
    return out;
  }
};

struct Elimination {
  std::uint32_t node = 0;
  std::vector<std::uint32_t> label;  ///< original label ids at elimination
  std::vector<fine_t> theta;         ///< base unary at elimination
  std::vector<ElimFactor> factors;   ///< 0, 1 or 2
};

/// The distinct classes of `cls` (each below `count`) in order of first use.
[[nodiscard]] inline std::vector<std::uint32_t> first_uses(const std::vector<std::uint32_t>& cls, std::uint32_t count) {
  std::vector<char> seen(count, 0);
  std::vector<std::uint32_t> out;
  for (auto c : cls)
    if (!seen[c]) {
      seen[c] = 1;
      out.push_back(c);
    }
  return out;
}

/// Groups equal items found by hashing: `sorted` lists items (indices into `hash`) by hash, then
/// by preference; within each run of equal hash, an item's leader is the first earlier item of
/// the run that leads itself and that `same` finds equal, else the item itself. Returns the
/// leader of every item (indexed by item; items not in `sorted` map to themselves). Hash
/// collisions only cost comparisons.
template <class Same>
[[nodiscard]] std::vector<std::uint32_t> leaders_of_equal(const std::vector<std::uint32_t>& sorted, const std::vector<std::uint64_t>& hash,
                                                          Same same) {
  std::vector<std::uint32_t> leader(hash.size());
  for (std::uint32_t i = 0; i < leader.size(); ++i) leader[i] = i;
  for (std::size_t i = 0; i < sorted.size();) {
    std::size_t j = i;
    while (j < sorted.size() && hash[sorted[j]] == hash[sorted[i]]) ++j;
    for (std::size_t k = i + 1; k < j; ++k)
      for (std::size_t m = i; m < k; ++m)
        if (leader[sorted[m]] == sorted[m] && same(sorted[m], sorted[k])) {
          leader[sorted[k]] = sorted[m];
          break;
        }
    i = j;
  }
  return leader;
}

/// Whether Problem::add_edge merges an edge's identical rows and columns into one class each
/// (Problem::compact_classes) or keeps its classes as given (they are compacted later, when the
/// edge's labels shrink or it is merged).
enum class EdgeClasses { compact, as_given };

class Problem {
 public:
  std::vector<WNode> nodes;
  std::vector<WEdge> edges;
  std::vector<WLimit> limits;
  std::vector<Elimination> eliminated;         ///< in elimination order
  std::vector<std::uint32_t> original_labels;  ///< per node, its label count in the input graph
  fine_t constant = 0;
  fine_t scale = 1;
  bool infeasible = false;  ///< some node lost every label
  /// Nodes whose labels, costs or edges changed since dominance last looked at them (it looks
  /// again at these and their neighbours only).
  std::vector<char> dirty;
  std::vector<std::uint8_t> dominance_checks;  ///< per node: how often dominance looked at it

  /// Builds the working copy of `g` at `scale` (costs multiplied). Forbidden unary labels are
  /// dropped at once. Every usage limit is copied (those of `limits_in` instead of g.limits when
  /// given: the solver's list, with the interval limit's steps it found broken); `enforced[k]`
  /// (when given) marks limit k as enforced. Edge entries above `pair_cap` (after scaling) become
  /// inf (fix_by_threshold's pairs, applied while the matrices are scaled rather than copied again).
  Problem(const CostGraph& g, fine_t scale_, const std::vector<char>* enforced = nullptr, const std::vector<UsageLimit>* limits_in = nullptr,
          fine_t pair_cap = inf)
      : scale(scale_) {
    const std::vector<UsageLimit>& glimits = limits_in != nullptr ? *limits_in : g.limits;
    const std::size_t n = g.num_nodes();
    nodes.resize(n);
    original_labels.resize(n);
    dirty.assign(n, 1);
    dominance_checks.assign(n, 0);
    constant = g.constant * scale;
    const bool use = !glimits.empty();
    for (std::size_t u = 0; u < n; ++u) {
      WNode& w = nodes[u];
      original_labels[u] = static_cast<std::uint32_t>(g.num_labels(u));
      w.theta.reserve(g.num_labels(u));
      for (std::size_t a = 0; a < g.num_labels(u); ++a) {
        w.theta.push_back(is_forbidden(g.unary[u][a]) ? inf : g.unary[u][a] * scale);
        w.label.push_back(static_cast<std::uint32_t>(a));
        if (use) w.usage.push_back(g.usage[u][a]);
      }
    }
    // shared input matrices are scaled once; per matrix, whether the cap changed an entry
    std::unordered_map<const void*, std::pair<SharedMatrix, bool>> scaled;
    for (const auto& e : g.edges) {
      WEdge w;
      w.u = e.u;
      w.v = e.v;
      w.rc = e.row_class;
      w.cc = e.col_class;
      w.rows = e.rows;
      w.cols = e.cols;
      const std::vector<cost_t>& m = e.costs();
      if (const auto it = e.shared ? scaled.find(e.shared.get()) : scaled.end(); it != scaled.end()) {
        w.d = it->second.first;
        w.untidy = it->second.second;
      } else {
        std::vector<fine_t> d(m.size());
        for (std::size_t i = 0; i < m.size(); ++i) {
          d[i] = is_forbidden(m[i]) ? inf : m[i] * scale;
          if (d[i] > pair_cap && d[i] < inf) {
            d[i] = inf;
            w.untidy = true;  // rows or columns may have become equal: compacted below
          }
        }
        w.d = SharedMatrix(std::move(d));
        if (e.shared) scaled.emplace(e.shared.get(), std::pair{w.d, w.untidy});
      }
      w.mu.assign(w.rc.size(), 0);
      w.mv.assign(w.cc.size(), 0);
      // classes as given: compacting every input edge costs ~7% of a solve (GPT-2 fw+bw) and
      // saves nothing measurable; an edge is compacted once its labels shrink or it is merged
      add_edge(std::move(w), EdgeClasses::as_given);
    }
    if (use) {
      for (std::size_t k = 0; k < glimits.size(); ++k) {
        const auto& l = glimits[k];
        WLimit wl;
        wl.limit = l.limit;
        wl.enforced = enforced != nullptr && k < enforced->size() && (*enforced)[k];
        std::vector<std::uint32_t> members = l.nodes;
        if (!std::is_sorted(members.begin(), members.end())) std::sort(members.begin(), members.end());
        members.erase(std::unique(members.begin(), members.end()), members.end());
        wl.nodes = members;
        limits.push_back(std::move(wl));
        for (auto u : members) nodes[u].limits.push_back(static_cast<std::uint32_t>(limits.size() - 1));
      }
    }
    for (std::uint32_t u = 0; u < n; ++u) {
      std::vector<char> keep(nodes[u].theta.size());
      for (std::size_t a = 0; a < keep.size(); ++a) keep[a] = nodes[u].theta[a] < inf;
      keep_labels(u, keep, ClassCleanup::deferred);
    }
    tidy_classes();
  }

  [[nodiscard]] std::size_t num_labels(std::uint32_t u) const noexcept { return nodes[u].theta.size(); }
  [[nodiscard]] std::size_t degree(std::uint32_t u) const noexcept { return nodes[u].edges.size(); }

  /// theta'_u: base unary plus incoming messages.
  void reparam_unary(std::uint32_t u, std::vector<fine_t>& out) const {
    const WNode& n = nodes[u];
    out.assign(n.theta.begin(), n.theta.end());
    for (auto ei : n.edges) {
      const WEdge& e = edges[ei];
      const auto& m = e.u == u ? e.mu : e.mv;
      for (std::size_t a = 0; a < out.size(); ++a) out[a] += m[a];
    }
  }

  /// Adds an edge, merging it into a live parallel edge when there is one (the merged edge is
  /// compacted); a new edge is compacted unless `as_given`. Returns its index.
  std::uint32_t add_edge(WEdge e, EdgeClasses classes = EdgeClasses::compact) {
    if (e.u == e.v) throw error("ctshard::solve: self edge");
    const std::uint32_t a = nodes[e.u].edges.size() <= nodes[e.v].edges.size() ? e.u : e.v;
    for (auto ei : nodes[a].edges) {
      WEdge& f = edges[ei];
      if ((f.u == e.u && f.v == e.v) || (f.u == e.v && f.v == e.u)) {
        merge_into(ei, std::move(e));
        return ei;
      }
    }
    const auto id = static_cast<std::uint32_t>(edges.size());
    dirty[e.u] = dirty[e.v] = 1;
    nodes[e.u].edges.push_back(id);
    nodes[e.v].edges.push_back(id);
    edges.push_back(std::move(e));
    if (classes == EdgeClasses::compact) compact_classes(id);
    return id;
  }

  /// Removes a live edge from the graph (its messages vanish).
  void drop_edge(std::uint32_t ei) {
    WEdge& e = edges[ei];
    e.alive = false;
    dirty[e.u] = dirty[e.v] = 1;
    for (auto x : {e.u, e.v}) {
      auto& inc = nodes[x].edges;
      inc.erase(std::find(inc.begin(), inc.end(), ei));
    }
    e.d.reset();
    std::vector<fine_t>().swap(e.mu);
    std::vector<fine_t>().swap(e.mv);
    std::vector<std::uint32_t>().swap(e.rc);
    std::vector<std::uint32_t>().swap(e.cc);
  }

  /// When Problem::keep_labels drops the classes of an edge's matrix that no label uses any more:
  /// at once, or `deferred` until tidy_classes (a node losing labels edge by edge, as in
  /// propagate, would otherwise copy its matrices once per removal: 45 s of page clearing on a
  /// 4,096-label graph on 2x2x2x2).
  enum class ClassCleanup { now, deferred };

  /// Keeps the labels of `u` whose `keep` entry is nonzero; returns the number removed. A node left
  /// without labels makes the problem infeasible. With ClassCleanup::deferred the edges of `u` keep
  /// their unused classes (marked `untidy`) until tidy_classes; every reader of a matrix that
  /// loops over classes must then skip those no label uses.
  std::size_t keep_labels(std::uint32_t u, const std::vector<char>& keep, ClassCleanup cleanup = ClassCleanup::now) {
    WNode& n = nodes[u];
    std::size_t kept = 0;
    for (std::size_t a = 0; a < keep.size(); ++a) kept += keep[a] ? 1 : 0;
    if (kept == keep.size()) return 0;
    if (kept == 0) infeasible = true;
    dirty[u] = 1;
    for (auto ei : n.edges) dirty[edges[ei].other(u)] = 1;
    const auto shrink = [&](auto& vec) {
      std::size_t j = 0;
      for (std::size_t a = 0; a < keep.size(); ++a)
        if (keep[a]) vec[j++] = vec[a];
      vec.resize(j);
    };
    shrink(n.theta);
    shrink(n.label);
    if (!n.usage.empty()) shrink(n.usage);
    for (auto ei : n.edges) {
      WEdge& e = edges[ei];
      e.arc_pending = true;  // the other end's labels may have lost their last finite partner
      const bool first = e.u == u;
      auto& cls = first ? e.rc : e.cc;
      shrink(cls);
      shrink(first ? e.mu : e.mv);
      if (cleanup == ClassCleanup::deferred) e.untidy = true;
      else if (e.compact) drop_unused_classes(ei, first ? Side::rows : Side::cols);
      else compact_classes(ei);
    }
    return keep.size() - kept;
  }

  /// What tidy_classes does with an edge compacted before: compact it again, or only drop the
  /// classes no label uses (as keep_labels does at once: no look at the whole matrix for rows or
  /// columns that became equal).
  enum class Recompact { yes, drop_unused };

  /// Compacts every live edge that keep_labels left `untidy` (its unused classes go, and the rows
  /// and columns that became equal merge; edges sharing a matrix and its outcome share the copy);
  /// an edge compacted before only drops its unused classes with Recompact::drop_unused.
  void tidy_classes(Recompact compacted = Recompact::yes) {
    memoise_compactions_ = true;
    for (std::uint32_t ei = 0; ei < edges.size(); ++ei) {
      WEdge& e = edges[ei];
      if (!e.untidy) continue;
      e.untidy = false;
      if (!e.alive) continue;
      if (e.compact && compacted == Recompact::drop_unused) {
        drop_unused_classes(ei, Side::rows);
        drop_unused_classes(ei, Side::cols);
      } else {
        compact_classes(ei);
      }
    }
    memoise_compactions_ = false;
    compactions_.clear();
  }

  /// Which side of an edge's matrix.
  enum class Side { rows, cols };

  /// Removes the classes of one side of edge `ei` that no label uses (renumbered in order,
  /// the matrix keeps the others). Cheaper than compact_classes, which also hashes the whole
  /// matrix to merge equal rows and columns: after reduced-cost fixing this ran ~1,700 times on
  /// GPT-2 fw+bw FSDP (2x4), ~1/8 of the solve's instructions as full compactions.
  void drop_unused_classes(std::uint32_t ei, Side side) {
    WEdge& e = edges[ei];
    auto& cls = side == Side::rows ? e.rc : e.cc;
    const std::uint32_t n = side == Side::rows ? e.rows : e.cols;
    used_.assign(n, 0);
    for (auto c : cls) used_[c] = 1;
    std::vector<std::uint32_t> kept;
    for (std::uint32_t c = 0; c < n; ++c)
      if (used_[c]) kept.push_back(c);
    if (kept.size() == n) return;
    std::vector<std::uint32_t> renumber(n, no_class);
    for (std::uint32_t i = 0; i < kept.size(); ++i) renumber[kept[i]] = i;
    for (auto& c : cls) c = renumber[c];
    const std::uint32_t R = e.rows, C = e.cols;
    std::vector<fine_t> d;
    if (side == Side::rows) {
      d.resize(kept.size() * C);
      for (std::size_t i = 0; i < kept.size(); ++i) std::copy_n(e.d.data() + std::size_t{kept[i]} * C, C, d.data() + i * C);
      e.rows = static_cast<std::uint32_t>(kept.size());
    } else {
      d.resize(std::size_t{R} * kept.size());
      for (std::size_t r = 0; r < R; ++r)
        for (std::size_t i = 0; i < kept.size(); ++i) d[r * kept.size() + i] = e.d[r * C + kept[i]];
      e.cols = static_cast<std::uint32_t>(kept.size());
    }
    e.d = SharedMatrix(std::move(d));
  }

  /// Renumbers the classes an edge uses and merges identical rows / columns of its matrix. Edges
  /// that share a matrix and use the same classes (repeated layers losing the same labels) share
  /// the result while tidy_classes runs (compactions_): one copy per distinct outcome, where a
  /// copy per edge cleared ~15 GB of pages on a 1,300-edge graph on 2x2x2x2.
  void compact_classes(std::uint32_t ei) {
    WEdge& e = edges[ei];
    std::vector<std::uint32_t> rows_in = first_uses(e.rc, e.rows), cols_in = first_uses(e.cc, e.cols);
    std::uint64_t key = reinterpret_cast<std::uintptr_t>(e.d.data());
    for (const auto* v : {&rows_in, &cols_in}) {
      key = key * 0x9E3779B97F4A7C15ull + v->size();
      for (auto c : *v) key = key * 0x9E3779B97F4A7C15ull + c;
    }
    const Compaction* found = nullptr;
    if (memoise_compactions_)
      for (auto [it, last] = compactions_.equal_range(key); it != last && found == nullptr; ++it)
        if (it->second.source.data() == e.d.data() && it->second.source_rows == e.rows && it->second.source_cols == e.cols &&
            it->second.rows_in == rows_in && it->second.cols_in == cols_in)
          found = &it->second;
    Compaction made;
    if (found == nullptr) {
      made = compaction(e, std::move(rows_in), std::move(cols_in));
      found = memoise_compactions_ ? &compactions_.emplace(key, std::move(made))->second : &made;
    }
    const auto renumber = [](std::vector<std::uint32_t>& cls, std::uint32_t count, const std::vector<std::uint32_t>& in,
                             const std::vector<std::uint32_t>& out) {
      std::vector<std::uint32_t> map(count, no_class);
      for (std::size_t i = 0; i < in.size(); ++i) map[in[i]] = out[i];
      for (auto& c : cls) c = map[c];
    };
    e.compact = true;
    if (found->identity) return;
    renumber(e.rc, e.rows, found->rows_in, found->row_out);
    renumber(e.cc, e.cols, found->cols_in, found->col_out);
    e.d = found->d;
    e.rows = found->rows;
    e.cols = found->cols;
  }

  /// Records node u (about to be eliminated) with its factors, for reconstruction.
  Elimination& record(std::uint32_t u) {
    Elimination el;
    el.node = u;
    el.label = nodes[u].label;
    el.theta = nodes[u].theta;
    eliminated.push_back(std::move(el));
    return eliminated.back();
  }

  /// The factor of edge `ei` seen from its endpoint `u`.
  [[nodiscard]] ElimFactor factor_from(std::uint32_t ei, std::uint32_t u) const {
    const WEdge& e = edges[ei];
    ElimFactor f;
    f.other = e.other(u);
    const bool first = e.u == u;
    const auto& own = first ? e.rc : e.cc;
    const auto& oth = first ? e.cc : e.rc;
    const std::uint32_t own_n = first ? e.rows : e.cols, oth_n = first ? e.cols : e.rows;
    f.rc = own;
    f.own = own_n;
    f.cols = oth_n;
    f.class_of_label.assign(original_labels[f.other], no_class);
    for (std::size_t b = 0; b < oth.size(); ++b) f.class_of_label[nodes[f.other].label[b]] = oth[b];
    f.d = e.d;
    f.own_is_row = first;
    return f;
  }

  /// Removes a node from its limits, charging each its usage: the label's when the node has one
  /// label, else the least (only for nodes that are not protected).
  void leave_limits(std::uint32_t u) {
    const WNode& n = nodes[u];
    if (n.usage.empty()) return;
    const std::int64_t least = n.usage.empty() ? 0 : *std::min_element(n.usage.begin(), n.usage.end());
    for (auto li : nodes[u].limits) {
      WLimit& l = limits[li];
      l.limit -= least;
      l.nodes.erase(std::find(l.nodes.begin(), l.nodes.end(), u));
    }
    nodes[u].limits.clear();
  }

  /// Whether u may not be eliminated: an enforced limit contains it and its usage differs
  /// between its labels.
  [[nodiscard]] bool is_protected(std::uint32_t u) const {
    const WNode& n = nodes[u];
    if (n.limits.empty() || n.usage.empty()) return false;
    if (std::none_of(n.limits.begin(), n.limits.end(), [&](std::uint32_t li) { return limits[li].enforced; })) return false;
    return std::any_of(n.usage.begin(), n.usage.end(), [&](std::int64_t x) { return x != n.usage[0]; });
  }

  /// scale x (objective of the reconstructed labelling) for a labelling of the live nodes, from
  /// the base form alone (see the file comment): cheap, and exact.
  [[nodiscard]] fine_t live_cost(const std::vector<std::uint32_t>& live) const {
    fine_t c = constant;
    for (std::uint32_t u = 0; u < nodes.size(); ++u)
      if (nodes[u].alive) c = sat_add(c, nodes[u].theta[live[u]]);
    for (const auto& e : edges)
      if (e.alive) c = sat_add(c, e.at(live[e.u], live[e.v]));
    return c;
  }

  /// Reconstructs a full assignment (original label ids) from the labels of the live nodes
  /// (`live[u]` = current label index for live u; ignored otherwise).
  [[nodiscard]] std::vector<std::uint32_t> reconstruct(const std::vector<std::uint32_t>& live) const {
    std::vector<std::uint32_t> out(nodes.size(), no_class);
    for (std::uint32_t u = 0; u < nodes.size(); ++u)
      if (nodes[u].alive) out[u] = nodes[u].label[live[u]];
    for (std::size_t k = eliminated.size(); k-- > 0;) {
      const Elimination& el = eliminated[k];
      fine_t best = inf;
      std::size_t arg = 0;
      bool any = false;
      for (std::size_t a = 0; a < el.label.size(); ++a) {
        fine_t c = el.theta[a];
        for (const auto& f : el.factors) {
          const std::uint32_t cls = f.class_of_label[out[f.other]];
          c = sat_add(c, cls == no_class ? inf : f.at(f.rc[a], cls));
        }
        if (!any || c < best) {
          best = c;
          arg = a;
          any = true;
        }
      }
      out[el.node] = el.label[arg];
    }
    return out;
  }

 private:
  std::vector<char> used_;  // keep_labels' scratch: the classes still in use on a shrunk side

  /// compact_classes' outcome for one matrix and the classes its labels use.
  struct Compaction {
    SharedMatrix source;                             ///< the matrix compacted (held: its address is the key)
    std::uint32_t source_rows = 0, source_cols = 0;  ///< its shape (one vector could be read as two shapes)
    std::vector<std::uint32_t> rows_in, cols_in;     ///< classes in use, in order of first use
    std::vector<std::uint32_t> row_out, col_out;     ///< the new class of each
    SharedMatrix d;                                  ///< the compacted matrix (unset when `identity`)
    std::uint32_t rows = 0, cols = 0;
    bool identity = false;  ///< nothing to renumber or merge
  };
  bool memoise_compactions_ = false;
  std::unordered_multimap<std::uint64_t, Compaction> compactions_;

  /// Merges the identical rows and columns of `e`'s matrix restricted to the classes in use
  /// (`rows_in`, `cols_in`, in order of first use): new classes are numbered in that order, a
  /// class equal to an earlier one takes its number (hashes first, so comparisons are rare).
  [[nodiscard]] static Compaction compaction(const WEdge& e, std::vector<std::uint32_t> rows_in, std::vector<std::uint32_t> cols_in) {
    const std::uint32_t R = e.rows, C = e.cols;
    std::vector<std::uint64_t> row_hash(R, 0), col_hash(C, 0);
    std::vector<char> col_used(C, 0), row_used(R, 0);
    for (auto c : cols_in) col_used[c] = 1;
    for (auto r : rows_in) row_used[r] = 1;
    for (auto r : rows_in)
      for (std::uint32_t c = 0; c < C; ++c)
        if (col_used[c]) {
          const auto x = static_cast<std::uint64_t>(e.d[std::size_t{r} * C + c]);
          row_hash[r] = row_hash[r] * 0x9E3779B97F4A7C15ull + x + c;
          col_hash[c] = col_hash[c] * 0x9E3779B97F4A7C15ull + x + r;
        }
    const auto same_row = [&](std::uint32_t a, std::uint32_t b) {
      if (row_hash[a] != row_hash[b]) return false;
      for (std::uint32_t c = 0; c < C; ++c)
        if (col_used[c] && e.d[std::size_t{a} * C + c] != e.d[std::size_t{b} * C + c]) return false;
      return true;
    };
    const auto same_col = [&](std::uint32_t a, std::uint32_t b) {
      if (col_hash[a] != col_hash[b]) return false;
      for (std::uint32_t r = 0; r < R; ++r)
        if (row_used[r] && e.d[std::size_t{r} * C + a] != e.d[std::size_t{r} * C + b]) return false;
      return true;
    };
    // sorted by hash, a class is compared only with the earlier classes of its hash (its run)
    const auto dedup = [](const std::vector<std::uint32_t>& in, const std::vector<std::uint64_t>& hash, const auto& same,
                          std::vector<std::uint32_t>& out) {
      std::vector<std::uint64_t> first_hash(in.size());
      std::vector<std::uint32_t> by_hash(in.size());
      for (std::uint32_t i = 0; i < by_hash.size(); ++i) {
        first_hash[i] = hash[in[i]];
        by_hash[i] = i;
      }
      std::sort(by_hash.begin(), by_hash.end(),
                [&](std::uint32_t x, std::uint32_t y) { return first_hash[x] != first_hash[y] ? first_hash[x] < first_hash[y] : x < y; });
      const std::vector<std::uint32_t> leader =  // position of the first equal class
          leaders_of_equal(by_hash, first_hash, [&](std::uint32_t x, std::uint32_t y) { return same(in[x], in[y]); });
      std::vector<std::uint32_t> reps;
      out.resize(in.size());
      for (std::uint32_t i = 0; i < in.size(); ++i) {
        if (leader[i] == i) {
          out[i] = static_cast<std::uint32_t>(reps.size());
          reps.push_back(in[i]);
        } else {
          out[i] = out[leader[i]];
        }
      }
      return reps;
    };
    Compaction k;
    const std::vector<std::uint32_t> row_rep = dedup(rows_in, row_hash, same_row, k.row_out);
    const std::vector<std::uint32_t> col_rep = dedup(cols_in, col_hash, same_col, k.col_out);
    k.source = e.d;
    k.source_rows = R;
    k.source_cols = C;
    k.rows_in = std::move(rows_in);
    k.cols_in = std::move(cols_in);
    k.rows = static_cast<std::uint32_t>(row_rep.size());
    k.cols = static_cast<std::uint32_t>(col_rep.size());
    if (row_rep.size() == R && col_rep.size() == C) {
      bool identity = true;
      for (std::uint32_t r = 0; r < R && identity; ++r) identity = row_rep[r] == r;
      for (std::uint32_t c = 0; c < C && identity; ++c) identity = col_rep[c] == c;
      if (identity) {
        k.identity = true;
        return k;
      }
    }
    std::vector<fine_t> d(row_rep.size() * col_rep.size());
    for (std::size_t r = 0; r < row_rep.size(); ++r)
      for (std::size_t c = 0; c < col_rep.size(); ++c) d[r * col_rep.size() + c] = e.d[std::size_t{row_rep[r]} * C + col_rep[c]];
    k.d = SharedMatrix(std::move(d));
    return k;
  }

  /// Adds `e` (between the same nodes as edge `into`) to edge `into`.
  void merge_into(std::uint32_t into, WEdge e) {
    WEdge& f = edges[into];
    dirty[f.u] = dirty[f.v] = 1;
    f.arc_pending = true;
    if (e.u != f.u) {  // transpose e
      std::vector<fine_t> t(e.d.size());
      for (std::uint32_t r = 0; r < e.rows; ++r)
        for (std::uint32_t c = 0; c < e.cols; ++c) t[std::size_t{c} * e.rows + r] = e.d[std::size_t{r} * e.cols + c];
      e.d = SharedMatrix(std::move(t));
      std::swap(e.rows, e.cols);
      std::swap(e.rc, e.cc);
      std::swap(e.mu, e.mv);
      std::swap(e.u, e.v);
    }
    const auto pair_classes = [](const std::vector<std::uint32_t>& a, const std::vector<std::uint32_t>& b, std::uint32_t nb,
                                 std::vector<std::uint32_t>& out, std::vector<std::pair<std::uint32_t, std::uint32_t>>& reps) {
      std::unordered_map<std::uint64_t, std::uint32_t> ids;
      out.resize(a.size());
      for (std::size_t i = 0; i < a.size(); ++i) {
        const std::uint64_t key = std::uint64_t{a[i]} * nb + b[i];
        auto [it, fresh] = ids.emplace(key, static_cast<std::uint32_t>(reps.size()));
        if (fresh) reps.emplace_back(a[i], b[i]);
        out[i] = it->second;
      }
    };
    std::vector<std::uint32_t> rc, cc;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> rreps, creps;
    pair_classes(f.rc, e.rc, e.rows, rc, rreps);
    pair_classes(f.cc, e.cc, e.cols, cc, creps);
    std::vector<fine_t> d(rreps.size() * creps.size());
    for (std::size_t r = 0; r < rreps.size(); ++r)
      for (std::size_t c = 0; c < creps.size(); ++c)
        d[r * creps.size() + c] =
            sat_add(f.d[std::size_t{rreps[r].first} * f.cols + creps[c].first], e.d[std::size_t{rreps[r].second} * e.cols + creps[c].second]);
    f.rc = std::move(rc);
    f.cc = std::move(cc);
    f.rows = static_cast<std::uint32_t>(rreps.size());
    f.cols = static_cast<std::uint32_t>(creps.size());
    f.d = SharedMatrix(std::move(d));
    for (std::size_t a = 0; a < f.mu.size(); ++a) f.mu[a] += e.mu[a];
    for (std::size_t b = 0; b < f.mv.size(); ++b) f.mv[b] += e.mv[b];
    compact_classes(into);
  }
};

}  // namespace ctshard::solve::detail
