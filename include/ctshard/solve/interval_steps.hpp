#pragma once
/// \file solve/interval_steps.hpp
/// The time steps of per-node lifetimes (IOPDDL's intervals) without listing them: the distinct
/// interval ends cut time into segments, each node lives over a contiguous run of them, and a
/// per-node quantity summed per segment is one difference-array sweep. Every operation here is
/// O(n log n) in the nodes (sorting the ends) plus its output, never O(nodes x segments): the
/// explicit per-step limits of a staircase of intervals have (nodes / 2)^2 memberships, and
/// listing them took minutes before the time limit applied (docs/robustness.md).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

namespace ctshard::solve {

/// The segments of a set of half-open intervals [start, end) (see the file comment). Nodes with
/// an empty interval (start >= end) live over no segment.
class IntervalSteps {
 public:
  IntervalSteps() = default;

  /// Builds the segments of `intervals` (one per node). O(n log n).
  explicit IntervalSteps(const std::vector<std::pair<std::int64_t, std::int64_t>>& intervals) {
    const std::size_t n = intervals.size();
    points_.reserve(2 * n);
    for (const auto& [s, e] : intervals)
      if (s < e) {
        points_.push_back(s);
        points_.push_back(e);
      }
    std::sort(points_.begin(), points_.end());
    points_.erase(std::unique(points_.begin(), points_.end()), points_.end());
    lo_.assign(n, 0);
    hi_.assign(n, 0);
    const auto index = [&](std::int64_t x) {
      return static_cast<std::uint32_t>(std::lower_bound(points_.begin(), points_.end(), x) - points_.begin());
    };
    for (std::size_t u = 0; u < n; ++u) {
      const auto [s, e] = intervals[u];
      if (s < e) {
        lo_[u] = index(s);
        hi_[u] = index(e);
      }
    }
  }

  /// Number of nodes.
  [[nodiscard]] std::size_t nodes() const noexcept { return lo_.size(); }
  /// Number of segments (distinct ends minus one, 0 when no interval is non-empty).
  [[nodiscard]] std::size_t segments() const noexcept { return points_.size() < 2 ? 0 : points_.size() - 1; }
  /// The segments node u lives over: [first(u), last(u)) (empty for an empty interval).
  [[nodiscard]] std::uint32_t first(std::size_t u) const noexcept { return lo_[u]; }
  [[nodiscard]] std::uint32_t last(std::size_t u) const noexcept { return hi_[u]; }
  /// The time a segment starts at.
  [[nodiscard]] std::int64_t start_time(std::size_t segment) const noexcept { return points_[segment]; }

  /// Per segment, the sum over its live nodes of `value(u)` (T: an arithmetic type wide enough
  /// for the sums; the caller bounds them). O(n + segments).
  template <class T, class Value>
  [[nodiscard]] std::vector<T> sums(Value&& value) const {
    std::vector<T> diff(points_.size() + 1, T{});
    for (std::size_t u = 0; u < lo_.size(); ++u)
      if (lo_[u] < hi_[u]) {
        const T x = static_cast<T>(value(u));
        diff[lo_[u]] += x;
        diff[hi_[u]] -= x;
      }
    std::vector<T> out(segments(), T{});
    T run{};
    for (std::size_t i = 0; i < out.size(); ++i) {
      run += diff[i];
      out[i] = run;
    }
    return out;
  }

  /// The segments whose live set is maximal: some node starts where the segment starts and some
  /// node ends where it ends (every other segment's live set is a subset of a maximal one). With
  /// `distinct`, one segment per distinct live set (the first). O(n + segments).
  [[nodiscard]] std::vector<std::uint32_t> maximal_segments(bool distinct) const { return select(true, distinct, nullptr); }

  /// Every non-empty segment, or with `distinct` one per distinct live set. O(n + segments).
  [[nodiscard]] std::vector<std::uint32_t> live_segments(bool distinct) const { return select(false, distinct, nullptr); }

  /// Among `candidates` (ascending segment indices), one per distinct live set (the first).
  [[nodiscard]] std::vector<std::uint32_t> distinct_among(const std::vector<std::uint32_t>& candidates) const {
    return select(false, true, &candidates);
  }

  /// The live nodes of each of `segments` (ascending indices), each list ascending. O(n log
  /// segments + output): every node is appended to the selected segments of its run, in node
  /// order.
  [[nodiscard]] std::vector<std::vector<std::uint32_t>> live_sets(const std::vector<std::uint32_t>& segments) const {
    std::vector<std::vector<std::uint32_t>> out(segments.size());
    for (std::uint32_t u = 0; u < lo_.size(); ++u) {
      if (lo_[u] >= hi_[u]) continue;
      for (auto k = static_cast<std::size_t>(std::lower_bound(segments.begin(), segments.end(), lo_[u]) - segments.begin());
           k < segments.size() && segments[k] < hi_[u]; ++k)
        out[k].push_back(u);
    }
    return out;
  }

  /// Per segment, the number of live nodes.
  [[nodiscard]] std::vector<std::int64_t> live_counts() const {
    return sums<std::int64_t>([](std::size_t) { return std::int64_t{1}; });
  }

 private:
  std::vector<std::int64_t> points_;
  std::vector<std::uint32_t> lo_, hi_;

  /// A 64-bit hash of node u (splitmix64): live sets are hashed as the XOR of their members.
  static std::uint64_t node_hash(std::size_t u) noexcept {
    std::uint64_t z = static_cast<std::uint64_t>(u) + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

  /// Segments with a non-empty live set; `maximal`: only those that start and end a node;
  /// `distinct`: the first of each live set; `among`: only these (ascending).
  std::vector<std::uint32_t> select(bool maximal, bool distinct, const std::vector<std::uint32_t>* among) const {
    const std::size_t S = segments();
    std::vector<char> starts(points_.size(), 0), ends(points_.size(), 0);
    for (std::size_t u = 0; u < lo_.size(); ++u)
      if (lo_[u] < hi_[u]) {
        starts[lo_[u]] = 1;
        ends[hi_[u]] = 1;
      }
    // XOR of the members' hashes per segment, and the member count
    std::vector<std::uint64_t> x(points_.size() + 1, 0);
    std::vector<std::int64_t> count_diff(points_.size() + 1, 0);
    for (std::size_t u = 0; u < lo_.size(); ++u)
      if (lo_[u] < hi_[u]) {
        x[lo_[u]] ^= node_hash(u);
        x[hi_[u]] ^= node_hash(u);
        ++count_diff[lo_[u]];
        --count_diff[hi_[u]];
      }
    std::vector<std::uint32_t> picked;
    std::int64_t count = 0;
    std::size_t next = 0;
    for (std::size_t i = 0; i < S; ++i) {
      count += count_diff[i];
      if (among != nullptr) {
        if (next >= among->size()) break;
        if ((*among)[next] != i) continue;
        ++next;
      }
      if (count == 0) continue;
      if (maximal && !(starts[i] && ends[i + 1])) continue;
      picked.push_back(static_cast<std::uint32_t>(i));
    }
    if (!distinct || picked.size() < 2) return picked;
    // one per distinct live set: segments whose sets hash alike are compared member by member
    std::vector<std::uint64_t> key(picked.size());
    {
      std::uint64_t hh = 0;
      std::size_t k = 0;
      for (std::size_t i = 0; i < S && k < picked.size(); ++i) {
        hh ^= x[i];
        if (picked[k] == i) key[k++] = hh;
      }
    }
    std::unordered_map<std::uint64_t, std::vector<std::size_t>> by_key;
    std::vector<char> keep(picked.size(), 1);
    bool collision = false;
    for (std::size_t k = 0; k < picked.size(); ++k) {
      auto& v = by_key[key[k]];
      if (!v.empty()) collision = true;
      v.push_back(k);
    }
    if (!collision) return picked;
    // candidates that share a hash: their member lists decide
    std::vector<std::uint32_t> shared;
    for (const auto& [k, v] : by_key)
      if (v.size() > 1)
        for (auto i : v) shared.push_back(picked[i]);
    std::sort(shared.begin(), shared.end());
    const std::vector<std::vector<std::uint32_t>> sets = live_sets(shared);
    std::unordered_map<std::uint32_t, std::size_t> set_of;
    for (std::size_t i = 0; i < shared.size(); ++i) set_of.emplace(shared[i], i);
    for (const auto& [k, v] : by_key) {
      if (v.size() < 2) continue;
      for (std::size_t a = 1; a < v.size(); ++a)
        for (std::size_t b = 0; b < a; ++b)
          if (keep[v[b]] && sets[set_of.at(picked[v[a]])] == sets[set_of.at(picked[v[b]])]) {
            keep[v[a]] = 0;
            break;
          }
    }
    std::vector<std::uint32_t> out;
    for (std::size_t k = 0; k < picked.size(); ++k)
      if (keep[k]) out.push_back(picked[k]);
    return out;
  }
};

}  // namespace ctshard::solve
