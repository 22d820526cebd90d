#pragma once
// Seeded random selection problems for the search property tests: an op's rules (from the
// built-in registry with random shapes, or synthetic rules with placeholders, Partials and
// optional full-mesh filters), input metas with uneven and size-1 dims, a mesh (1..max dims of
// sizes 1..4, random devices per host and cost model) and current specs with Partial and
// StridedShard placements.

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "ctshard/registry.hpp"
#include "op_call_builders.hpp"

namespace ctshard::test {

struct RandomCase {
  std::string label;  // what was generated, for failure messages
  OpRule rule;
  std::vector<TensorMeta> metas;
  MeshTopology mesh;
};

class CaseGenerator {
 public:
  explicit CaseGenerator(std::uint32_t seed) : rng_(seed) {}

  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  std::int64_t size() {
    static constexpr std::int64_t sizes[] = {1, 2, 3, 4, 5, 6, 8, 12, 16, 64};
    return sizes[uniform(0, 9)];
  }
  std::vector<std::int64_t> shape(int rank) {
    std::vector<std::int64_t> s;
    s.reserve(static_cast<std::size_t>(rank));
    for (int d = 0; d < rank; ++d) s.push_back(size());
    return s;
  }

  /// A mesh of `lo`..`hi` dims, sizes 1..max_size, random devices per host and cost model.
  MeshTopology mesh(int lo, int hi, int max_size = 4) {
    std::vector<std::int64_t> sizes;
    const int n = uniform(lo, hi);
    sizes.reserve(static_cast<std::size_t>(n));
    for (int d = 0; d < n; ++d) sizes.push_back(uniform(1, max_size));
    static constexpr std::int64_t dph[] = {1, 2, 4, 8};
    return MeshTopology::build(sizes, dph[uniform(0, 3)], {}, chance(0.5) ? CostModel::dtensor : CostModel::consistent);
  }

  /// A random current spec for a tensor of `rank` dims on an n-dim mesh.
  Spec spec(std::size_t n, std::size_t rank) {
    Spec s;
    for (std::size_t d = 0; d < n; ++d) {
      const int k = uniform(0, 99);
      if (k < 35 || rank == 0) {
        s.push_back(k < 25 || rank > 0 ? Replicate() : Partial(ReduceOp::sum));
      } else if (k < 70) {
        s.push_back(Shard(uniform(0, static_cast<int>(rank) - 1)));
      } else if (k < 90) {
        s.push_back(Partial(static_cast<ReduceOp>(uniform(0, 3))));
      } else {
        s.push_back(StridedShard(uniform(0, static_cast<int>(rank) - 1), uniform(2, 3)));
      }
    }
    return s;
  }

  /// A registry op with random shapes, or synthetic rules (about a third of the cases).
  RandomCase problem(int mesh_lo, int mesh_hi, int max_size = 4) {
    while (true) {
      RandomCase c;
      c.mesh = mesh(mesh_lo, mesh_hi, max_size);
      try {
        if (chance(0.35)) {
          synthetic(c);
        } else {
          registry_op(c);
        }
        return c;
      } catch (const error&) {  // arguments the factory rejects: draw again
      }
    }
  }

 private:
  void registry_op(RandomCase& c) {
    const int op = uniform(0, 13);
    const auto t = [](std::vector<std::int64_t> s) { return TensorMeta{TensorShape(std::span<const std::int64_t>(s)), 4}; };
    const std::int64_t m = size(), k = size(), n = size(), b = size();
    OpCall call;
    switch (op) {
      case 0: call = make_call("aten.mm.default", {t({m, k}), t({k, n})}, {tensor_arg(0), tensor_arg(1)}); break;
      case 1: call = make_call("aten.bmm.default", {t({b, m, k}), t({b, k, n})}, {tensor_arg(0), tensor_arg(1)}); break;
      case 2:
        call =
            make_call("aten.addmm.default", {t(chance(0.5) ? std::vector<std::int64_t>{n} : std::vector<std::int64_t>{m, n}), t({m, k}), t({k, n})},
                      {tensor_arg(0), tensor_arg(1), tensor_arg(2)});
        break;
      case 3:
      case 4: {
        const auto a = shape(uniform(1, 4));
        std::vector<std::int64_t> bs(a.begin() + uniform(0, static_cast<int>(a.size()) - 1), a.end());
        for (auto& x : bs) x = chance(0.2) ? 1 : x;
        call = make_call(op == 3 ? "aten.add.Tensor" : "aten.mul.Tensor", {t(a), t(bs)}, {tensor_arg(0), tensor_arg(1)});
        break;
      }
      case 5: {
        const auto a = shape(uniform(1, 4));
        call =
            make_call("aten.sum.dim_IntList", {t(a)}, {tensor_arg(0), ints_arg({uniform(0, static_cast<int>(a.size()) - 1)}), bool_arg(chance(0.5))});
        break;
      }
      case 6: {
        const auto a = shape(uniform(1, 4));
        call = make_call("aten.mean.dim", {t(a)}, {tensor_arg(0), ints_arg({uniform(0, static_cast<int>(a.size()) - 1)}), bool_arg(chance(0.5))});
        break;
      }
      case 7: {
        const auto a = shape(uniform(1, 3));
        call = make_call("aten.amax.default", {t(a)}, {tensor_arg(0), ints_arg({uniform(0, static_cast<int>(a.size()) - 1)}), bool_arg(chance(0.5))});
        break;
      }
      case 8: call = make_call("aten.view.default", {t({m, k, n})}, {tensor_arg(0), ints_arg({m * k, n})}); break;
      case 9: {
        const auto a = shape(uniform(1, 4));
        call = make_call("aten._softmax.default", {t(a)}, {tensor_arg(0), int_arg(uniform(0, static_cast<int>(a.size()) - 1)), bool_arg(false)});
        break;
      }
      case 10: {
        const auto a = shape(uniform(1, 3));
        auto bshape = a;
        const int dim = uniform(0, static_cast<int>(a.size()) - 1);
        bshape[static_cast<std::size_t>(dim)] = size();
        call = make_call("aten.cat.default", {t(a), t(bshape)}, {tensors_arg({0, 1}), int_arg(dim)});
        break;
      }
      case 11:
        call = make_call("aten.native_layer_norm.default", {t({b, m, n}), t({n}), t({n})},
                         {tensor_arg(0), ints_arg({n}), tensor_arg(1), tensor_arg(2), float_arg(1e-5)});
        break;
      case 12: call = make_call("aten.transpose.int", {t(shape(uniform(2, 4)))}, {tensor_arg(0), int_arg(0), int_arg(1)}); break;
      default: {
        OpArg reduce;
        reduce.kind = OpArg::Kind::string;
        reduce.text = chance(0.5) ? "sum" : "max";
        OpArg group;
        group.kind = OpArg::Kind::string;
        group.text = "0";
        call = make_call("_c10d_functional.all_reduce.default", {t(shape(uniform(1, 3)))}, {tensor_arg(0), reduce, group});
        break;
      }
    }
    c.rule = rule_for(call);
    c.metas = call.tensors;
    c.label = call.op;
  }

  void synthetic(RandomCase& c) {
    const std::size_t nout = static_cast<std::size_t>(uniform(1, 2)), nin = static_cast<std::size_t>(uniform(1, 3));
    RuleSet rules(nout, nin);
    std::vector<int> ranks;
    for (std::size_t k = 0; k < nout + nin; ++k) {
      ranks.push_back(uniform(0, 3));
      rules.set_rank(k, ranks.back());
    }
    const int rows = uniform(1, 7);
    for (int r = 0; r < rows; ++r) {
      std::vector<Placement> row;
      bool replicated = true;
      const bool placeholder_row = chance(0.3);
      for (std::size_t k = 0; k < nout + nin; ++k) {
        const int kind = uniform(0, 9);
        Placement p = Replicate();
        if (ranks[k] > 0 && kind < 4) p = placeholder_row ? ShardingPlaceholder(uniform(0, ranks[k] - 1)) : Shard(uniform(0, ranks[k] - 1));
        else if (kind < 6) p = Partial(static_cast<ReduceOp>(uniform(0, 3)));
        replicated = replicated && p.is_replicate();
        row.push_back(p);
      }
      if (!replicated) rules.add(row);
    }
    c.rule = OpRule{rules, static_cast<UnevenInputs>(uniform(0, 2))};
    if (chance(0.25)) {
      const int salt = uniform(0, 6);
      c.rule.filter = [salt](std::span<const Spec> operands, std::span<const TensorMeta>, MeshSizes) {
        auto h = static_cast<unsigned>(salt);  // unsigned: the hash wraps by definition
        for (const Spec& s : operands)
          for (const Placement& p : s) h = h * 31U + static_cast<unsigned>(p.kind) * 7U + static_cast<unsigned>(p.dim);
        return (h & 3) != 0;
      };
    }
    for (std::size_t i = 0; i < nin; ++i) {
      const auto s = shape(ranks[nout + i]);
      c.metas.push_back(TensorMeta{TensorShape(std::span<const std::int64_t>(s)), chance(0.2) ? std::size_t{2} : std::size_t{4}});
    }
    c.label = "synthetic " + std::to_string(rows) + " rows";
  }

  std::mt19937 rng_;
};

}  // namespace ctshard::test
