// tests/sim/sim_harness.cpp — expansion, row simulation and missing-row search (see sim_harness.hpp).
#include "sim_harness.hpp"

#include <exception>
#include <set>
#include <sstream>

#include "ctshard/rules/placeholder_fill.hpp"
#include "ctshard/select/filters.hpp"

namespace ctshard::sim {

std::string to_string(const SimRow& row) {
  std::string s = "(";
  for (std::size_t i = 0; i < row.inputs.size(); ++i) {
    if (i) s += ", ";
    s += to_string(row.inputs[i]);
  }
  s += ") -> ";
  if (row.outputs.size() == 1) return s + to_string(row.outputs[0]);
  s += "(";
  for (std::size_t i = 0; i < row.outputs.size(); ++i) {
    if (i) s += ", ";
    s += to_string(row.outputs[i]);
  }
  return s + ")";
}

bool has_strided_shard(const SimRow& row) {
  for (const auto* specs : {&row.inputs, &row.outputs})
    for (const Spec& spec : *specs)
      for (const Placement& p : spec)
        if (p.is_strided_shard()) return true;
  return false;
}

Expansion expand(const OpRule& rule, const OpCall& call, const Mesh& mesh, const ShardKinds& kinds) {
  Expansion ex;
  const MeshTopology topo = mesh.topology();
  ex.filled = fill_placeholders(with_replicate_row(rule.rules), kinds, topo.dim_sizes());
  {
    const RuleSet global = fill_placeholders(with_replicate_row(rule.rules), kinds);
    std::set<std::string> plain;
    for (std::size_t r = 0; r < global.size(); ++r) {
      std::string key;
      for (const auto& p : global.row(r)) key += to_string(p) + "|";
      plain.insert(key);
    }
    for (std::size_t r = 0; r < ex.filled.size(); ++r) {
      std::string key;
      for (const auto& p : ex.filled.row(r)) key += to_string(p) + "|";
      ex.local_rule.push_back(plain.count(key) == 0);
    }
  }
  const std::size_t s = ex.filled.size(), n = mesh.ndim(), width = ex.filled.width(), nout = ex.filled.num_outputs();
  std::vector<std::size_t> digits(n, 0);
  std::vector<Spec> specs(width);
  while (true) {
    ++ex.total;
    for (std::size_t k = 0; k < width; ++k) {
      specs[k] = Spec{};
      for (std::size_t d = 0; d < n; ++d) specs[k].push_back(ex.filled.at(digits[d], k));
    }
    bool ok = true;
    for (const auto& spec : specs) ok = ok && has_compatible_partials(spec);
    if (!ok) {
      ++ex.mixed_partial;
    } else {
      for (std::size_t i = 0; i + nout < width && ok; ++i) ok = is_tensor_shardable(call.tensors.at(i).shape, specs[nout + i], topo);
      if (!ok) {
        ++ex.unshardable;
      } else if (rule.filter && !rule.filter(specs, call.tensors, topo.dim_sizes())) {
        ++ex.op_filter;
      } else {
        ex.rows.push_back(SimRow{{specs.begin(), specs.begin() + static_cast<std::ptrdiff_t>(nout)},
                                 {specs.begin() + static_cast<std::ptrdiff_t>(nout), specs.end()},
                                 digits});
      }
    }
    std::size_t d = n;
    while (d-- > 0) {
      if (++digits[d] < s) break;
      digits[d] = 0;
    }
    if (d == static_cast<std::size_t>(-1)) break;
  }
  return ex;
}

namespace {

/// Global inputs of one trial and the op's outputs on them.
struct GlobalRun {
  std::vector<Tensor> inputs, outputs;
};

GlobalRun run_global(const SampleCall& call, const RefOp& op, Rng& rng) {
  GlobalRun g;
  for (const auto& in : call.inputs) g.inputs.push_back(random_input(in, rng));
  g.outputs = op.run(ArgPack{g.inputs, call.args, call.kwargs});
  return g;
}

std::string coords_text(const std::vector<std::size_t>& c) {
  std::string s = "(";
  for (std::size_t i = 0; i < c.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(c[i]);
  }
  return s + ")";
}

/// Runs the op on every device from per-input local pieces ([input][device]) and checks outputs.
RowOutcome run_on_mesh(const SampleCall& call, const RefOp& op, const GlobalRun& g, const std::vector<const std::vector<Tensor>*>& pieces,
                       const std::vector<Spec>& in_specs, const std::vector<Spec>& out_specs, const Mesh& mesh) {
  if (g.outputs.size() != out_specs.size())
    return {false, "rule has " + std::to_string(out_specs.size()) + " outputs, the op returns " + std::to_string(g.outputs.size())};
  LocalContext ctx;
  ctx.mesh = &mesh;
  ctx.input_specs = in_specs;
  ctx.output_specs = out_specs;
  for (const auto& t : g.inputs) ctx.global_inputs.push_back(shape_of(t));
  for (const auto& t : g.outputs) ctx.global_outputs.push_back(shape_of(t));
  const std::size_t devices = mesh.num_devices();
  std::vector<std::vector<Tensor>> locals(out_specs.size(), std::vector<Tensor>(devices));
  for (std::size_t dev = 0; dev < devices; ++dev) {
    ctx.coords = mesh.coords(dev);
    ArgPack pack{{}, call.args, call.kwargs};
    ctx.local_inputs.clear();
    ctx.local_outputs.clear();
    for (const auto* p : pieces) {
      pack.tensors.push_back((*p)[dev]);
      ctx.local_inputs.push_back(shape_of((*p)[dev]));
    }
    try {
      for (std::size_t k = 0; k < out_specs.size(); ++k)
        ctx.local_outputs.push_back(local_shape(ctx.global_outputs[k], out_specs[k], mesh, ctx.coords));
      if (op.localise) op.localise(pack, ctx);
      auto outs = op.run(pack);
      if (outs.size() != out_specs.size()) return {false, "device " + coords_text(ctx.coords) + " returned a different number of outputs"};
      for (std::size_t k = 0; k < outs.size(); ++k) locals[k][dev] = std::move(outs[k]);
    } catch (const std::exception& e) {
      return {false, "device " + coords_text(ctx.coords) + ": local op failed: " + e.what()};
    }
  }
  for (std::size_t k = 0; k < out_specs.size(); ++k) {
    Reassembled r = reassemble(std::move(locals[k]), out_specs[k], mesh, sim_rtol);
    std::string which = out_specs.size() > 1 ? "output " + std::to_string(k) + ": " : std::string{};
    if (!r.value) return {false, which + "cannot reassemble: " + r.error};
    std::string why;
    if (!allclose(*r.value, g.outputs[k], sim_rtol, &why)) {
      std::string detail = which + "wrong value, " + why + "; expected " + format_values(g.outputs[k]);
      detail += ", got ";
      detail += format_values(*r.value);
      return {false, detail};
    }
  }
  return {};
}

std::uint64_t fnv1a(std::string_view s, std::uint64_t h = 1469598103934665603ull) {
  for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return h;
}

std::string row_key(std::span<const Placement> cells) {
  std::string k;
  for (const auto& p : cells) {
    k += to_string(p);
    k += '|';
  }
  return k;
}

}  // namespace

RowOutcome simulate_row(const SampleCall& call, const RefOp& op, const SimRow& row, const Mesh& mesh, std::uint64_t seed, int trials) {
  for (int t = 0; t < trials; ++t) {
    Rng rng(seed + static_cast<std::uint64_t>(t) * 0x9E3779B97F4A7C15ull);
    const GlobalRun g = run_global(call, op, rng);
    std::vector<std::vector<Tensor>> cuts;
    cuts.reserve(g.inputs.size());
    for (std::size_t i = 0; i < g.inputs.size(); ++i) cuts.push_back(cut(g.inputs[i], row.inputs.at(i), mesh, rng, call.inputs[i].domain));
    std::vector<const std::vector<Tensor>*> pieces;
    pieces.reserve(cuts.size());
    for (const auto& c : cuts) pieces.push_back(&c);
    RowOutcome r = run_on_mesh(call, op, g, pieces, row.inputs, row.outputs, mesh);
    if (!r.ok) {
      r.detail += "; global inputs";
      for (const auto& in : g.inputs) {
        r.detail += " ";
        r.detail += format_values(in, 12);
      }
      return r;
    }
  }
  return {};
}

RowOutcome simulate_group_row(const SampleCall& call, const GroupRefOp& op, const SimRow& row, const Mesh& mesh, std::uint64_t seed, int trials) {
  const auto g = static_cast<std::size_t>(call.program_ranks);
  if (g == 0) return {false, "not a collective sample (program_ranks 0)"};
  const std::size_t devices = mesh.num_devices();
  for (int t = 0; t < trials; ++t) {
    Rng rng(seed + static_cast<std::uint64_t>(t) * 0x9E3779B97F4A7C15ull);
    // [rank][input]: every program rank's own global inputs, and the collective over them
    std::vector<std::vector<Tensor>> inputs(g);
    std::vector<ArgPack> global_packs;
    for (std::size_t r = 0; r < g; ++r) {
      for (const auto& in : call.inputs) inputs[r].push_back(random_input(in, rng));
      global_packs.push_back(ArgPack{inputs[r], call.args, call.kwargs});
    }
    const std::vector<std::vector<Tensor>> expected = op.run(global_packs);
    if (expected.size() != g) return {false, "the reference returned " + std::to_string(expected.size()) + " ranks for " + std::to_string(g)};
    const std::size_t nout = expected[0].size();
    if (nout != row.outputs.size())
      return {false, "rule has " + std::to_string(row.outputs.size()) + " outputs, the op returns " + std::to_string(nout)};
    // [rank][input][device]
    std::vector<std::vector<std::vector<Tensor>>> pieces(g);
    for (std::size_t r = 0; r < g; ++r)
      for (std::size_t i = 0; i < call.inputs.size(); ++i) pieces[r].push_back(cut(inputs[r][i], row.inputs.at(i), mesh, rng, call.inputs[i].domain));
    // [rank][output][device]
    std::vector<std::vector<std::vector<Tensor>>> locals(g, std::vector<std::vector<Tensor>>(nout, std::vector<Tensor>(devices)));
    for (std::size_t dev = 0; dev < devices; ++dev) {
      std::vector<ArgPack> packs;
      for (std::size_t r = 0; r < g; ++r) {
        ArgPack p{{}, call.args, call.kwargs};
        for (std::size_t i = 0; i < call.inputs.size(); ++i) p.tensors.push_back(pieces[r][i][dev]);
        packs.push_back(std::move(p));
      }
      std::vector<std::vector<Tensor>> outs;
      try {
        outs = op.run(packs);
      } catch (const std::exception& e) {
        return {false, "device " + std::to_string(dev) + ": the collective over the ranks' pieces failed: " + e.what()};
      }
      for (std::size_t r = 0; r < g; ++r)
        for (std::size_t k = 0; k < nout; ++k) locals[r][k][dev] = std::move(outs.at(r).at(k));
    }
    for (std::size_t r = 0; r < g; ++r) {
      for (std::size_t k = 0; k < nout; ++k) {
        Reassembled re = reassemble(std::move(locals[r][k]), row.outputs[k], mesh, sim_rtol);
        const std::string which = "program rank " + std::to_string(r) + (nout > 1 ? ", output " + std::to_string(k) : std::string{}) + ": ";
        if (!re.value) return {false, which + "cannot reassemble: " + re.error};
        std::string why;
        if (!allclose(*re.value, expected[r][k], sim_rtol, &why))
          return {false, which + "wrong value, " + why + "; expected " + format_values(expected[r][k]) + ", got " + format_values(*re.value)};
      }
    }
  }
  return {};
}

std::size_t FamilyReport::checked() const {
  std::size_t n = 0;
  for (const auto& m : per_mesh) n += m.checked;
  return n;
}

std::size_t FamilyReport::failed() const {
  std::size_t n = 0;
  for (const auto& m : per_mesh) n += m.failed;
  return n;
}

std::size_t FamilyReport::strided_checked() const {
  std::size_t n = 0;
  for (const auto& m : per_mesh) n += m.strided_checked;
  return n;
}

std::size_t FamilyReport::strided_failed() const {
  std::size_t n = 0;
  for (const auto& m : per_mesh) n += m.strided_failed;
  return n;
}

std::size_t FamilyReport::local_checked() const {
  std::size_t n = 0;
  for (const auto& m : per_mesh) n += m.local_checked;
  return n;
}

std::size_t FamilyReport::local_failed() const {
  std::size_t n = 0;
  for (const auto& m : per_mesh) n += m.local_failed;
  return n;
}

std::string FamilyReport::summary() const {
  std::ostringstream os;
  os << "sim: " << family << ": rows checked " << checked() << ", failed " << failed() << ", missing " << missing << "; StridedShard rows checked "
     << strided_checked() << ", failed " << strided_failed();
  if (local_checked() > 0) os << "; local-size view rows checked " << local_checked() << ", failed " << local_failed();
  os << "\n";
  for (const auto& m : per_mesh) {
    os << "sim:   " << family << " on mesh " << m.mesh << ": rows checked " << m.checked << ", failed " << m.failed << " (StridedShard "
       << m.strided_checked << ", failed " << m.strided_failed;
    if (m.local_checked > 0) os << "; local-size view rows " << m.local_checked << ", failed " << m.local_failed;
    os << ")";
    if (m.known_unsound) os << " (+" << m.known_unsound << " known-unsound DTensor-fidelity rows failed)";
    if (m.sampled_out) os << " (" << m.sampled_out << " rows not sampled)";
    os << "\n";
  }
  return os.str();
}

std::string FamilyReport::full_text() const {
  std::string s = summary();
  auto list = [&s](const char* title, const std::vector<std::string>& items) {
    if (items.empty()) return;
    s += "sim: " + std::string(title) + " (" + std::to_string(items.size()) + "):\n";
    for (const auto& i : items) s += "  " + i + "\n";
  };
  list("FAILED rows", failures);
  list("known-unsound rows kept for DTensor fidelity", known_unsound);
  list("missing rows (valid on mesh 2, not in the rule)", missing_rows);
  list("notes", notes);
  return s;
}

namespace {

/// Candidate single-dim rows on mesh 2 that the simulator shows valid but the rule lacks.
void find_missing(const SampleCall& call, const RefOp& op, const Expansion& ex, std::uint64_t seed, int trials, FamilyReport& rep) {
  const Mesh mesh{{2}};
  std::vector<GlobalRun> runs;
  for (int t = 0; t < trials; ++t) {
    Rng rng(seed + 7919u * static_cast<std::uint64_t>(t));
    runs.push_back(run_global(call, op, rng));
  }
  const std::size_t nout = runs[0].outputs.size(), nin = call.inputs.size();
  if (nout != ex.filled.num_outputs() || nin != ex.filled.num_inputs()) return;  // reported by the row check
  // Options per operand: R, S(d) for every dim of size >= 2, P(sum|avg|max|min).
  std::vector<std::vector<Placement>> options;
  auto add_options = [&options](const Shape& shape) {
    std::vector<Placement> o{Replicate()};
    for (std::size_t d = 0; d < shape.size(); ++d)
      if (shape[d] >= 2) o.push_back(Shard(static_cast<int>(d)));
    for (ReduceOp r : {ReduceOp::sum, ReduceOp::avg, ReduceOp::max, ReduceOp::min}) o.push_back(Partial(r));
    options.push_back(std::move(o));
  };
  for (const auto& t : runs[0].outputs) add_options(shape_of(t));
  for (const auto& in : call.inputs) add_options(in.shape);
  std::set<std::string> present;
  for (std::size_t r = 0; r < ex.filled.size(); ++r) present.insert(row_key(ex.filled.row(r)));
  // Cuts per trial, input and option, reused by every candidate.
  std::vector<std::vector<std::vector<std::vector<Tensor>>>> cuts(runs.size());
  for (std::size_t t = 0; t < runs.size(); ++t) {
    Rng rng(seed ^ (0xABCDEFull + t));
    cuts[t].resize(nin);
    for (std::size_t i = 0; i < nin; ++i)
      for (const auto& p : options[nout + i]) {
        Spec s;
        s.push_back(p);
        cuts[t][i].push_back(cut(runs[t].inputs[i], s, mesh, rng, call.inputs[i].domain));
      }
  }
  std::size_t candidates = 1;
  for (const auto& o : options) candidates *= o.size();
  constexpr std::size_t max_candidates = 20000;
  if (candidates > max_candidates) {
    rep.notes.push_back(describe(call) + ": " + std::to_string(candidates) + " candidate rows, missing-row search skipped");
    return;
  }
  std::vector<std::size_t> digit(options.size(), 0);
  std::vector<Placement> cells(options.size());
  std::vector<std::vector<Placement>> found;
  for (std::size_t c = 0; c < candidates; ++c) {
    bool inputs_r = true;  // all inputs Replicate: trivially fine for R / P(avg|max|min) outputs, never interesting
    for (std::size_t k = 0; k < options.size(); ++k) {
      cells[k] = options[k][digit[k]];
      if (k >= nout) inputs_r = inputs_r && cells[k].is_replicate();
    }
    if (!inputs_r && !present.count(row_key(cells))) {
      std::vector<Spec> in_specs(nin), out_specs(nout);
      for (std::size_t k = 0; k < nout; ++k) out_specs[k].push_back(cells[k]);
      for (std::size_t i = 0; i < nin; ++i) in_specs[i].push_back(cells[nout + i]);
      bool valid = true;
      for (std::size_t t = 0; t < runs.size() && valid; ++t) {
        std::vector<const std::vector<Tensor>*> pieces;
        for (std::size_t i = 0; i < nin; ++i) pieces.push_back(&cuts[t][i][digit[nout + i]]);
        valid = run_on_mesh(call, op, runs[t], pieces, in_specs, out_specs, mesh).ok;
      }
      if (valid) found.push_back(cells);
    }
    for (std::size_t k = options.size(); k-- > 0;) {
      if (++digit[k] < options[k].size()) break;
      digit[k] = 0;
    }
  }
  // Drop restatements: an output that is P(avg|max|min) where the same row with that output R is
  // valid (or in the rule) only says "every rank holds the same value".
  std::set<std::string> valid = present;
  for (const auto& f : found) valid.insert(row_key(f));
  for (const auto& f : found) {
    bool redundant = false;
    for (std::size_t k = 0; k < nout && !redundant; ++k) {
      if (!f[k].is_partial() || f[k].reduce_op == ReduceOp::sum) continue;
      auto r = f;
      r[k] = Replicate();
      redundant = valid.count(row_key(r)) > 0;
    }
    if (redundant) continue;
    ++rep.missing;
    SimRow row{{}, {}, {}};
    for (std::size_t k = 0; k < nout; ++k) row.outputs.emplace_back().push_back(f[k]);
    for (std::size_t i = 0; i < nin; ++i) row.inputs.emplace_back().push_back(f[nout + i]);
    rep.missing_rows.push_back(describe(call) + ": " + to_string(row));
  }
}

}  // namespace

FamilyReport check_family(std::string_view family, const OpRegistry& registry, const CheckOptions& options) {
  FamilyReport rep;
  rep.family = std::string(family);
  for (const auto& m : options.meshes) rep.per_mesh.push_back(MeshCounts{m.name()});
  for (const auto& call : sample_calls()) {
    if (call.family != family) continue;
    ++rep.samples;
    const std::string name = describe(call);
    const RefOp* op = find_ref_op(call.op);
    const GroupRefOp* group_op = call.program_ranks > 0 ? find_group_ref_op(call.op) : nullptr;
    const RuleFactory* factory = registry.find(call.op);
    if (call.program_ranks > 0 && group_op == nullptr) {
      rep.failures.push_back(name + ": a collective sample without a collective reference");
      continue;
    }
    if ((op == nullptr && group_op == nullptr) || factory == nullptr) {
      rep.notes.push_back(name + ": skipped (" + (op == nullptr ? "no reference op" : "no rule registered") + ")");
      continue;
    }
    const OpCall op_call = to_op_call(call);
    OpRule rule;
    try {
      rule = (*factory)(op_call);
    } catch (const std::exception& e) {
      rep.failures.push_back(name + ": the rule factory threw: " + e.what());
      continue;
    }
    std::vector<std::string> known;
    if (options.known_unsound)
      for (const auto& cells : options.known_unsound(call)) known.push_back(row_key(cells));
    for (std::size_t mi = 0; mi < options.meshes.size(); ++mi) {
      const Mesh& mesh = options.meshes[mi];
      MeshCounts& counts = rep.per_mesh[mi];
      Expansion ex;
      try {
        ex = expand(rule, op_call, mesh);
      } catch (const std::exception& e) {
        rep.failures.push_back(name + " on mesh " + mesh.name() + ": expansion threw: " + e.what());
        continue;
      }
      const std::uint64_t base = fnv1a(mesh.name(), fnv1a(name));
      // Simulates `rows` (sampled evenly above max_rows_per_mesh, rows using a local-size view rule
      // always); `strided` counts them apart too.
      const auto run_rows = [&](const Expansion& expansion, const std::vector<const SimRow*>& rows, bool strided, std::uint64_t seed) {
        std::size_t stride = 1;
        if (rows.size() > options.max_rows_per_mesh) {
          stride = (rows.size() + options.max_rows_per_mesh - 1) / options.max_rows_per_mesh;
          rep.notes.push_back(name + " on mesh " + mesh.name() + ": " + std::to_string(rows.size()) + (strided ? " StridedShard" : "") +
                              " rows, every " + std::to_string(stride) + "th simulated");
        }
        for (std::size_t r = 0; r < rows.size(); ++r) {
          const SimRow& row = *rows[r];
          bool local = false;
          for (auto ri : row.rules) local = local || expansion.local_rule[ri];
          if (r % stride != 0 && !local) {
            ++counts.sampled_out;
            continue;
          }
          RowOutcome outcome;
          try {
            outcome = group_op != nullptr ? simulate_group_row(call, *group_op, row, mesh, seed + r, options.trials)
                                          : simulate_row(call, *op, row, mesh, seed + r, options.trials);
          } catch (const std::exception& e) {
            outcome = {false, std::string("simulation threw: ") + e.what()};
          }
          ++counts.checked;
          if (strided) ++counts.strided_checked;
          if (local) ++counts.local_checked;
          if (outcome.ok) continue;
          bool uses_known = false;
          for (auto ri : row.rules)
            for (const auto& k : known) uses_known = uses_known || row_key(expansion.filled.row(ri)) == k;
          const std::string text = name + " on mesh " + mesh.name() + ": " + to_string(row) + ": " + outcome.detail;
          if (uses_known) {
            ++counts.known_unsound;
            rep.known_unsound.push_back(text);
          } else {
            ++counts.failed;
            if (strided) ++counts.strided_failed;
            if (local) ++counts.local_failed;
            rep.failures.push_back(text);
          }
        }
      };
      std::vector<const SimRow*> plain_rows;
      for (const auto& row : ex.rows) plain_rows.push_back(&row);
      run_rows(ex, plain_rows, false, base);
      // StridedShard pass: placeholders filled with _S(d, sf), the rows that hold one simulated
      for (std::uint16_t sf : options.strided_split_factors) {
        ShardKinds kinds;
        kinds.add(StridedShard(0, sf));
        Expansion strided;
        try {
          strided = expand(rule, op_call, mesh, kinds);
        } catch (const std::exception& e) {
          rep.failures.push_back(name + " on mesh " + mesh.name() + ": StridedShard expansion threw: " + e.what());
          continue;
        }
        std::vector<const SimRow*> rows;
        for (const auto& row : strided.rows)
          if (has_strided_shard(row)) rows.push_back(&row);
        run_rows(strided, rows, true, base ^ (0x5eedull * sf));
      }
      if (options.find_missing && group_op == nullptr && mesh.ndim() == 1 && mesh.sizes[0] == 2) {
        try {
          find_missing(call, *op, ex, base ^ 0x5151u, options.trials + 2, rep);
        } catch (const std::exception& e) {
          rep.notes.push_back(name + ": missing-row search threw: " + e.what());
        }
      }
    }
  }
  return rep;
}

}  // namespace ctshard::sim
