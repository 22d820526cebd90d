// tests/sim/sim_harness.hpp — the simulated-mesh check itself: expand an op's rule the way the
// framework does, run every surviving row on a simulated mesh against the op on global inputs, and
// look for valid single-dim rows the rule lacks ("missing strategies").
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ctshard/registry/op_registry.hpp"
#include "ctshard/rules/placeholder_fill.hpp"
#include "ctshard/rules/regroup_on_mesh.hpp"
#include "sim_cases.hpp"
#include "sim_ops.hpp"
#include "sim_tensor.hpp"

namespace ctshard::sim {

/// One full-mesh strategy row: a spec per output and per input, and for each mesh dim the index of
/// the filled single-dim rule used there.
struct SimRow {
  std::vector<Spec> outputs, inputs;
  std::vector<std::size_t> rules;
};
/// DTensor's OpSpec text: `(S(0)R, RS(1)) -> S(0)S(1)`; several outputs print as a tuple.
[[nodiscard]] std::string to_string(const SimRow& row);

/// An op's rule expanded on one mesh: the single-dim rules after inserting the all-Replicate row
/// and filling placeholders with `kinds` (plain Shard unless told; the enumerator fills with the
/// kinds its inputs use), and the rows that survive the mixed-Partial filter,
/// `is_tensor_shardable` on every input and the op's own full-mesh filter.
struct Expansion {
  RuleSet filled;
  /// Per filled rule: true when only the mesh's local sizes call for it (a view row re-expressing a
  /// shard after earlier mesh dims split the same group; not in the fill without mesh sizes).
  std::vector<bool> local_rule;
  std::vector<SimRow> rows;
  std::size_t total = 0, mixed_partial = 0, unshardable = 0, op_filter = 0;
};
[[nodiscard]] Expansion expand(const OpRule& rule, const OpCall& call, const Mesh& mesh, const ShardKinds& kinds = plain_shard_kinds);

/// True when a spec of the row (input or output) holds a StridedShard.
[[nodiscard]] bool has_strided_shard(const SimRow& row);

/// Outcome of simulating one row; `detail` says why it failed (with the global inputs and the
/// first wrong element).
struct RowOutcome {
  bool ok = true;
  std::string detail;
};

/// Simulates `row` of `call` on `mesh` for `trials` random draws (seeded by `seed`): random global
/// inputs, cut by the input specs, the reference op on each device (arguments localised), outputs
/// reassembled by the output specs and compared with the op on the global inputs (rtol 1e-9).
[[nodiscard]] RowOutcome simulate_row(const SampleCall& call, const RefOp& op, const SimRow& row, const Mesh& mesh, std::uint64_t seed,
                                      int trials = 2);

/// Simulates `row` of a collective `call` on `call.program_ranks` program ranks x `mesh`
/// (docs/semantics.md "Collectives in graphs"): each program rank draws its own global inputs
/// and cuts them by the input specs; on every mesh device the collective `op` runs over the g
/// ranks' pieces of that device; each rank's outputs are reassembled by the output specs and
/// compared with `op` run over the ranks' global inputs (rtol 1e-9).
[[nodiscard]] RowOutcome simulate_group_row(const SampleCall& call, const GroupRefOp& op, const SimRow& row, const Mesh& mesh, std::uint64_t seed,
                                            int trials = 2);

inline constexpr double sim_rtol = 1e-9;

struct CheckOptions {
  std::vector<Mesh> meshes{Mesh{{2}}, Mesh{{3}}, Mesh{{2, 2}}};
  int trials = 2;
  std::size_t max_rows_per_mesh = 400;  ///< larger tables are sampled evenly (logged)
  bool find_missing = true;             ///< on the 1-D mesh 2, with trials + 2 draws per candidate
  /// Filled single-dim rows known to be unsound but kept for DTensor fidelity: a failing full-mesh
  /// row that uses one of them is reported under `known_unsound` instead of `failures`.
  std::function<std::vector<std::vector<Placement>>(const SampleCall&)> known_unsound;
  /// Split factors to fill placeholders with a second time (kinds = these StridedShards only, as
  /// when every sharded input is a `_S(d, sf)`); the rows that hold a StridedShard are simulated
  /// and counted apart. Empty: no StridedShard pass.
  std::vector<std::uint16_t> strided_split_factors{2};
};

struct MeshCounts {
  std::string mesh;
  std::size_t checked = 0, failed = 0, known_unsound = 0, sampled_out = 0;
  std::size_t strided_checked = 0, strided_failed = 0;  ///< rows with a StridedShard (also in checked / failed)
  std::size_t local_checked = 0, local_failed = 0;      ///< rows using a local-size view rule (also in checked / failed)
};

struct FamilyReport {
  std::string family;
  std::size_t samples = 0, missing = 0;
  std::vector<MeshCounts> per_mesh;
  std::vector<std::string> failures, known_unsound, missing_rows, notes;

  [[nodiscard]] std::size_t checked() const;
  [[nodiscard]] std::size_t failed() const;
  [[nodiscard]] std::size_t strided_checked() const;
  [[nodiscard]] std::size_t strided_failed() const;
  [[nodiscard]] std::size_t local_checked() const;
  [[nodiscard]] std::size_t local_failed() const;
  /// `sim: <family>: rows checked N, failed F, missing M; StridedShard rows checked S, failed G`
  /// (and `; local-size view rows checked L, failed H` when some row uses a local-size rule) plus
  /// one line per mesh.
  [[nodiscard]] std::string summary() const;
  /// Everything: summary, failures, known-unsound rows, missing rows, notes.
  [[nodiscard]] std::string full_text() const;
};

/// Runs every sample call of `family` against `registry` on every mesh of `options`.
[[nodiscard]] FamilyReport check_family(std::string_view family, const OpRegistry& registry, const CheckOptions& options);

}  // namespace ctshard::sim
