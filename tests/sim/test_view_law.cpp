// tests/sim/test_view_law.cpp — the multi-mesh-dim law of views (`view_output_spec`,
// `regroup_mesh_dim`) proven by brute force on the simulated mesh: flatten, unflatten and splits
// of flattens, even and uneven sizes, on meshes of 2 and 3 dims. For every input spec built from
// R, S(d) and _S(d, 2) placements:
//   - soundness: the output spec the law gives is an exact local view (the view run per rank on
//     its local tensor, with its local output size, reassembles to the global view);
//   - the table: the enumerator's choice for that input is that row at cost 0 (the placeholder
//     fill lists the row, the full-mesh check keeps it);
//   - completeness (2-dim meshes, inputs sharding one group on both mesh dims): every output spec
//     of R / S(d) / _S(d, m) placements the simulator finds exact is the law's answer.
#include <catch2/catch.hpp>

#include <cstdint>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "../sanitizer_scale.hpp"
#include "ctshard/registry/builtin_registry.hpp"
#include "ctshard/select/enumerator.hpp"
#include "sim_harness.hpp"

using namespace ctshard;
using namespace ctshard::sim;

namespace {

struct ViewCase {
  Shape input;
  std::vector<std::int64_t> output;
};

SampleCall view_call(const ViewCase& v) {
  return SampleCall{"view", "aten.view.default", {{v.input, Domain::real, 0}}, {targ(0), ilist(v.output)}, {}};
}

/// Every spec on an `ndim`-dim mesh whose placements are R, S(d) for d < rank, and _S(d, 2) for
/// the dims of even size.
std::vector<Spec> input_specs(const Shape& shape, std::size_t ndim) {
  std::vector<Placement> options{Replicate()};
  for (std::size_t d = 0; d < shape.size(); ++d) options.push_back(Shard(static_cast<int>(d)));
  for (std::size_t d = 0; d < shape.size(); ++d)
    if (shape[d] % 2 == 0 && shape[d] >= 4) options.push_back(StridedShard(static_cast<int>(d), 2));
  std::vector<Spec> specs{Spec{}};
  for (std::size_t m = 0; m < ndim; ++m) {
    std::vector<Spec> next;
    for (const Spec& s : specs)
      for (const Placement& p : options) {
        Spec t = s;
        t.push_back(p);
        next.push_back(t);
      }
    specs = std::move(next);
  }
  return specs;
}

/// The output placements that could describe mesh dim m's shard of a group dim: S(o) and _S(o, k)
/// for the group's output dims o and the k dividing their size.
std::vector<Placement> group_output_options(const ViewDimMap& map, const ViewGroup& g) {
  std::vector<Placement> v;
  for (int o = g.output_first; o <= g.output_last; ++o) {
    const std::int64_t size = map.output[static_cast<std::size_t>(o)];
    if (size < 2) continue;
    v.push_back(Shard(o));
    for (std::int64_t k = 2; k < size; ++k)
      if (size % k == 0) v.push_back(StridedShard(o, static_cast<int>(k)));
  }
  return v;
}

struct LawCounts {
  std::size_t specs = 0, exact = 0, multi = 0, completeness_checked = 0, candidates = 0, spellings = 0, indivisible = 0;
  std::vector<std::string> failures, gaps;
};

bool exact_on_mesh(const SampleCall& call, const RefOp& op, const Spec& in, const Spec& out, const Mesh& mesh, std::uint64_t seed,
                   std::string* why = nullptr) {
  const RowOutcome o = simulate_row(call, op, SimRow{{out}, {in}, {}}, mesh, seed, 1);
  if (why != nullptr) *why = o.detail;
  return o.ok;
}

/// False when some mesh dim's StridedShard has a split factor that does not divide the local size
/// its dim has on some rank before that mesh dim (DTensor then cuts uneven blocks first; the law
/// requires the split factor to divide, as `regroup_shard` does).
bool split_factors_divide(const Shape& global, const Spec& in, const Mesh& mesh) {
  for (std::size_t m = 0; m < in.size(); ++m) {
    if (!in[m].is_strided_shard()) continue;
    Spec prefix;
    Mesh before;
    for (std::size_t k = 0; k < m; ++k) {
      prefix.push_back(in[k]);
      before.sizes.push_back(mesh.sizes[k]);
    }
    for (std::size_t dev = 0; dev < before.num_devices(); ++dev)
      if (local_shape(global, prefix, before, before.coords(dev))[static_cast<std::size_t>(in[m].dim)] % in[m].split_factor != 0) return false;
  }
  return true;
}

void check_law(const ViewCase& v, const Mesh& mesh, bool completeness, LawCounts& counts) {
  const SampleCall call = view_call(v);
  const RefOp& op = *find_ref_op(call.op);
  const OpCall op_call = to_op_call(call);
  const ViewDimMap map = view_dim_map(to_tensor_shape(v.input), v.output);
  const std::vector<ViewGroup> groups = view_groups_of(map);
  const OpRule rule = (*builtin_registry().find(call.op))(op_call);
  const MeshTopology topo = mesh.topology();
  StrategyEnumerator enumerator(rule.rules, topo, rule.uneven_inputs, rule.filter);
  const std::string name = describe(call) + " on mesh " + mesh.name();
  std::uint64_t seed = 17;
  for (const Spec& in : input_specs(v.input, mesh.ndim())) {
    ++counts.specs;
    ++seed;
    const std::optional<Spec> law = view_output_spec(map, in, topo.dim_sizes());
    // how many mesh dims shard each group
    std::vector<int> per_group(groups.size(), 0);
    for (const Placement& p : in)
      for (std::size_t k = 0; k < groups.size(); ++k)
        if (p.is_any_shard() && groups[k].input_first <= p.dim && p.dim <= groups[k].input_last) ++per_group[k];
    bool multi = false;
    for (int c : per_group) multi = multi || c >= 2;
    bool law_exact = false;
    if (law) {
      ++counts.exact;
      if (multi) ++counts.multi;
      std::string why;
      law_exact = exact_on_mesh(call, op, in, *law, mesh, seed, &why);
      if (!law_exact) counts.failures.push_back(name + ": (" + to_string(in) + ") -> " + to_string(*law) + " is not exact: " + why);
      const TensorMeta metas[] = {op_call.tensors[0]};
      const Spec current[] = {in};
      const Choice c = enumerator.choose(metas, current);
      const Spec chosen_out = enumerator.spec_of(c, 0), chosen_in = enumerator.spec_of(c, 1);
      if (chosen_in != in || chosen_out != *law || c.total_us != 0.0)
        counts.failures.push_back(name + ": for " + to_string(in) + " the table chooses (" + to_string(chosen_in) + ") -> " + to_string(chosen_out) +
                                  " at " + std::to_string(c.total_us) + " us, not (" + to_string(in) + ") -> " + to_string(*law) + " at 0");
    }
    if (!completeness || !multi) continue;
    if (!law && !split_factors_divide(v.input, in, mesh)) {
      ++counts.indivisible;
      continue;
    }
    // Completeness: every output spec that keeps each mesh dim's shard on the dims it can
    // describe; the simulator decides which are exact.
    ++counts.completeness_checked;
    std::vector<std::vector<Placement>> options;
    bool unmappable = false;
    for (const Placement& p : in) {
      if (!p.is_any_shard()) {
        options.push_back({p});
        continue;
      }
      int kept = -1;
      for (std::size_t o = 0; o < map.rank(); ++o)
        if (map[o].kind == ViewDimKind::input && map[o].first == p.dim) kept = static_cast<int>(o);
      if (kept >= 0) {
        options.push_back({p.is_strided_shard() ? StridedShard(kept, p.split_factor) : Shard(kept)});
        continue;
      }
      std::size_t k = 0;
      while (k < groups.size() && !(groups[k].input_first <= p.dim && p.dim <= groups[k].input_last)) ++k;
      if (k == groups.size()) {
        unmappable = true;
        break;
      }
      options.push_back(group_output_options(map, groups[k]));
    }
    if (unmappable) continue;
    std::vector<std::size_t> digit(options.size(), 0);
    std::vector<Spec> exact;
    while (true) {
      Spec out;
      for (std::size_t m = 0; m < options.size(); ++m) out.push_back(options[m][digit[m]]);
      ++counts.candidates;
      if (exact_on_mesh(call, op, in, out, mesh, seed)) exact.push_back(out);
      std::size_t m = options.size();
      while (m-- > 0) {
        if (++digit[m] < options[m].size()) break;
        digit[m] = 0;
      }
      if (m == static_cast<std::size_t>(-1)) break;
    }
    // Two exact outputs of one input describe the same pieces on every rank (other spellings,
    // e.g. _S(0, 3) of a local 4 chunks as 2, 2, 0 like _S(0, 2)); the law must find one.
    for (const Spec& e : exact)
      if (law && e != *law) ++counts.spellings;
    if (!exact.empty() && !law_exact)
      counts.gaps.push_back(name + ": (" + to_string(in) + ") -> " + to_string(exact.front()) + " is exact, the law gives " +
                            (law ? to_string(*law) : "none"));
  }
}

const std::vector<ViewCase>& flatten_cases() {
  static const std::vector<ViewCase> v{
      {{2, 2, 3}, {4, 3}},  // R11
      {{4, 6}, {24}},      {{2, 3, 4}, {24}}, {{2, 6}, {12}}, {{4, 2, 3}, {8, 3}},
      {{2, 5}, {10}},      {{3, 4}, {12}},    {{5, 2}, {10}}, {{3, 2}, {6}},  // uneven
  };
  return v;
}

const std::vector<ViewCase>& unflatten_cases() {
  static const std::vector<ViewCase> v{
      {{4, 3}, {2, 2, 3}}, {{24}, {2, 3, 4}}, {{12}, {2, 6}}, {{12}, {4, 3}},
      {{8, 3}, {4, 2, 3}}, {{10}, {2, 5}},    {{6}, {3, 2}},  {{12}, {3, 4}},  // uneven pieces
  };
  return v;
}

const std::vector<ViewCase>& composed_cases() {
  static const std::vector<ViewCase> v{
      {{2, 6}, {4, 3}}, {{6, 4}, {4, 6}}, {{4, 6}, {8, 3}}, {{2, 3, 4}, {3, 8}}, {{4, 3}, {3, 4}}, {{2, 3, 4}, {6, 4}}, {{6, 4}, {2, 3, 4}},
  };
  return v;
}

void run_law(const char* what, const std::vector<ViewCase>& cases) {
  LawCounts counts;
  // under AddressSanitizer (~100x slower) one mesh of 2 dims and one of 3, the same properties
  const std::vector<Mesh> two_dim =
      test::under_sanitizer ? std::vector<Mesh>{Mesh{{2, 3}}} : std::vector<Mesh>{Mesh{{2, 2}}, Mesh{{2, 3}}, Mesh{{3, 2}}, Mesh{{4, 2}}};
  const std::vector<Mesh> three_dim =
      test::under_sanitizer ? std::vector<Mesh>{Mesh{{2, 2, 2}}} : std::vector<Mesh>{Mesh{{2, 2, 2}}, Mesh{{2, 3, 2}}};
  for (const ViewCase& v : cases) {
    for (const Mesh& m : two_dim) check_law(v, m, true, counts);
    for (const Mesh& m : three_dim) check_law(v, m, true, counts);
  }
  std::cout << "sim: view law (" << what << "): " << counts.specs << " input specs on meshes 2x2, 2x3, 3x2, 4x2, 2x2x2, 2x3x2; " << counts.exact
            << " with an output (" << counts.multi << " sharding one group on several mesh dims), failed " << counts.failures.size()
            << "; completeness: " << counts.completeness_checked << " inputs, " << counts.candidates << " output specs simulated, "
            << counts.gaps.size() << " inputs with an exact output the law misses (" << counts.spellings << " other spellings of the law's outputs; "
            << counts.indivisible << " inputs whose split factor does not divide a local size left out)\n";
  for (const auto& f : counts.failures) FAIL_CHECK(f);
  for (const auto& g : counts.gaps) FAIL_CHECK(g);
  CHECK(counts.multi > 0);
}

}  // namespace

TEST_CASE("sim: view law — flattens sharded on several mesh dims are exact, complete and in the table", "[sim][view_law]") {
  run_law("flatten", flatten_cases());
}

TEST_CASE("sim: view law — unflattens sharded on several mesh dims are exact, complete and in the table", "[sim][view_law]") {
  run_law("unflatten", unflatten_cases());
}

TEST_CASE("sim: view law — splits of flattens sharded on several mesh dims are exact, complete and in the table", "[sim][view_law]") {
  run_law("split of a flatten", composed_cases());
}
