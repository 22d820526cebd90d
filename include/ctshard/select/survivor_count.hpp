#pragma once
/// \file select/survivor_count.hpp
/// Counting rows without walking them: the position of a row among the surviving rows (the
/// `index` of `ctshard table`) and the filter counts of a whole table. Whether the completions of
/// a prefix pass the standard filters depends only on the prefix state (partial bits per
/// operand, per input its shards per tensor dim and flags; RowCursor), so completions are counted
/// once per distinct state and mesh dim (dynamic programming). The op's full-mesh filter sees
/// whole rows only: with one, surviving rows are walked (prefix-pruned), up to
/// max_enumerated_rows of them.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ctshard/select/cost_memo.hpp"
#include "ctshard/select/filled_table.hpp"
#include "ctshard/select/full_enumeration.hpp"
#include "ctshard/select/row_cursor.hpp"
#include "ctshard/select/row_search.hpp"
#include "ctshard/select/search_query.hpp"

namespace ctshard {

/// A table's rows by filter outcome (the `filtered` counts of `ctshard table`).
struct RowCounts {
  std::uint64_t rows = 0;           ///< S^N candidate rows
  std::uint64_t mixed_partial = 0;  ///< mixing Partial kinds other than sum+avg
  std::uint64_t unshardable = 0;    ///< an input target the shardability filter rejects
  std::uint64_t op_filter = 0;      ///< rejected by the op's full-mesh filter (when counted)
  std::uint64_t survivors = 0;      ///< surviving rows (when op_filter_counted)
  bool op_filter_counted = true;    ///< false: the op filter would need more than max_enumerated_rows rows walked
};

namespace detail {

/// Completions of a prefix that pass the standard filters, counted per distinct prefix state.
class SurvivorCounter {
 public:
  struct Count {
    std::uint64_t alive = 0;    ///< completions passing the standard filters
    std::uint64_t unmixed = 0;  ///< completions passing the mixed-partial filter
  };

  SurvivorCounter(const FilledTable& table, RowCursor& cursor) : t_(table), c_(cursor), memo_(table.mesh_ndim()), masks_(table.mesh_ndim()) {}

  /// Counts below the cursor's level-d prefix (which passes the standard filters).
  Count count(std::size_t d) {
    if (d == t_.mesh_ndim()) return {1, 1};
    const std::string k = key(d, false);
    if (const auto it = memo_[d].find(k); it != memo_[d].end()) return it->second;
    Count sum;
    for (std::size_t r = 0; r < t_.num_rules(); ++r) {
      c_.extend(d, static_cast<std::uint8_t>(r));
      if (c_.mixed(d + 1)) continue;
      if (!c_.alive(d + 1)) {
        sum.unmixed += unmixed(d + 1);
        continue;
      }
      const Count below = count(d + 1);
      sum.alive += below.alive;
      sum.unmixed += below.unmixed;
    }
    return memo_[d].emplace(k, sum).first->second;
  }

  /// Completions of the cursor's level-d prefix (not mixed) that do not mix Partial kinds.
  std::uint64_t unmixed(std::size_t d) {
    if (d == t_.mesh_ndim()) return 1;
    const std::string k = key(d, true);
    if (const auto it = masks_[d].find(k); it != masks_[d].end()) return it->second;
    std::uint64_t sum = 0;
    for (std::size_t r = 0; r < t_.num_rules(); ++r) {
      c_.extend(d, static_cast<std::uint8_t>(r));
      if (!c_.mixed(d + 1)) sum += unmixed(d + 1);
    }
    return masks_[d].emplace(k, sum).first->second;
  }

 private:
  /// The part of the level-d state that decides the filters of every completion.
  std::string key(std::size_t d, bool masks_only) const {
    std::string k;
    for (std::size_t op = 0; op < t_.width(); ++op) k.push_back(static_cast<char>(c_.mask(d, op)));
    if (masks_only) return k;
    const UnevenInputs uneven = t_.uneven();
    for (std::size_t i = 0; i < t_.num_inputs(); ++i) {
      const InputPrefix& s = c_.input(d, i);
      k.push_back(static_cast<char>(s.crowded));
      if (uneven == UnevenInputs::keep_existing_shards) k.push_back(static_cast<char>(s.touched));
      if (uneven == UnevenInputs::keep_current) k.push_back(s.match ? '1' : '0');
      for (std::size_t td = 0; td < max_tensor_dims; ++td) {
        const std::int64_t v = (s.crowded >> td & 1u) != 0 ? 0 : s.shards[td];  // a crowded dim stays crowded
        char bytes[sizeof v];
        std::memcpy(bytes, &v, sizeof v);
        k.append(bytes, sizeof v);
      }
    }
    return k;
  }

  const FilledTable& t_;
  RowCursor& c_;
  std::vector<std::unordered_map<std::string, Count>> memo_;
  std::vector<std::unordered_map<std::string, std::uint64_t>> masks_;
};

/// Surviving rows (op filter included) before `stop` (all of them without one), walking at most
/// `limit` rows that pass the standard filters; nullopt past the limit.
inline std::optional<std::uint64_t> walk_survivors(const FilledTable& table, RowCursor& cursor, const CompactRow* stop, std::uint64_t limit) {
  const std::size_t n = table.mesh_ndim();
  std::uint64_t seen = 0, survivors = 0;
  bool done = false, over = false;
  const auto dfs = [&](const auto& self, std::size_t d) -> void {
    for (std::size_t r = 0; r < table.num_rules() && !done && !over; ++r) {
      cursor.extend(d, static_cast<std::uint8_t>(r));
      if (!cursor.alive(d + 1)) continue;
      if (d + 1 < n) {
        self(self, d + 1);
        continue;
      }
      if (stop != nullptr && std::equal(stop->begin(), stop->begin() + static_cast<std::ptrdiff_t>(n), cursor.digits().begin())) {
        done = true;
        return;
      }
      if (++seen > limit) over = true;
      survivors += cursor.passes_filter() ? 1 : 0;
    }
  };
  dfs(dfs, 0);
  if (over) return std::nullopt;
  return survivors;
}

}  // namespace detail

/// Position of the surviving `row` among the surviving rows of `table` in enumeration order (the
/// `index` of `ctshard table`). nullopt when the op has a full-mesh filter and more than
/// max_enumerated_rows rows before `row` pass the standard filters.
[[nodiscard]] inline std::optional<std::uint64_t> survivor_index(const FilledTable& table, CostMemo& memo, const SearchQuery& query,
                                                                 const CompactRow& row) {
  RowCursor& cursor = memo.cursor();
  cursor.begin(table, query);
  if (table.has_filter()) return detail::walk_survivors(table, cursor, &row, max_enumerated_rows);
  detail::SurvivorCounter counter(table, cursor);
  std::uint64_t index = 0;
  for (std::size_t k = 0; k < table.mesh_ndim(); ++k) {
    for (std::uint8_t r = 0; r < row[k]; ++r) {
      cursor.extend(k, r);
      if (cursor.alive(k + 1)) index += counter.count(k + 1).alive;
    }
    cursor.extend(k, row[k]);
  }
  return index;
}

/// The rows of `table` by filter outcome (see RowCounts).
[[nodiscard]] inline RowCounts count_rows(const FilledTable& table, CostMemo& memo, const SearchQuery& query) {
  RowCursor& cursor = memo.cursor();
  cursor.begin(table, query);
  detail::SurvivorCounter counter(table, cursor);
  const detail::SurvivorCounter::Count all = counter.count(0);
  RowCounts c;
  c.rows = table.num_rows();
  c.mixed_partial = c.rows - all.unmixed;
  c.unshardable = all.unmixed - all.alive;
  c.survivors = all.alive;
  if (table.has_filter()) {
    c.op_filter_counted = all.alive <= max_enumerated_rows;
    if (c.op_filter_counted) {
      cursor.begin(table, query);
      c.survivors = *detail::walk_survivors(table, cursor, nullptr, max_enumerated_rows);
      c.op_filter = all.alive - c.survivors;
    }
  }
  return c;
}

}  // namespace ctshard
