// libFuzzer target: every registered rule called directly with a random OpCall (tensor count,
// ranks, sizes, itemsizes, positional and keyword arguments of every kind, lists nested a few
// levels, tensor references in and out of range), then, when the rule fits the call, the
// enumerator's choice on a random mesh from random current specs. Only ctshard::error may
// come out.
#include <fuzzer/FuzzedDataProvider.h>

#include <string>
#include <vector>

#include "ctshard/registry.hpp"

namespace {

using namespace ctshard;

std::int64_t fuzz_size(FuzzedDataProvider& in) {
  switch (in.ConsumeIntegralInRange<int>(0, 7)) {
    case 0: return 0;
    case 1: return 1;
    case 2: return in.ConsumeIntegralInRange<std::int64_t>(0, std::int64_t{1} << 40);
    case 3: return in.ConsumeIntegral<std::int64_t>();
    default: return in.ConsumeIntegralInRange<std::int64_t>(2, 16);
  }
}

OpArg fuzz_arg(FuzzedDataProvider& in, std::size_t tensors, int depth) {
  OpArg a;
  const int kind = in.ConsumeIntegralInRange<int>(0, depth > 3 ? 8 : 10);
  switch (kind) {
    case 0: a.kind = OpArg::Kind::none; break;
    case 1:
      a.kind = OpArg::Kind::tensor;
      a.integer = in.ConsumeIntegralInRange<std::int64_t>(-1, static_cast<std::int64_t>(tensors) + 1);
      break;
    case 2:
      a.kind = OpArg::Kind::integer;
      a.integer = in.ConsumeIntegralInRange<std::int64_t>(-4, 8);
      break;
    case 3:
      a.kind = OpArg::Kind::integer;
      a.integer = fuzz_size(in);
      break;
    case 4:
      a.kind = OpArg::Kind::floating;
      a.floating = in.ConsumeFloatingPoint<double>();
      break;
    case 5:
      a.kind = OpArg::Kind::boolean;
      a.integer = in.ConsumeBool() ? 1 : 0;
      break;
    case 6: {
      a.kind = OpArg::Kind::int_list;
      const int n = in.ConsumeIntegralInRange<int>(0, 9);
      for (int i = 0; i < n; ++i) a.ints.push_back(in.ConsumeBool() ? in.ConsumeIntegralInRange<std::int64_t>(-4, 8) : fuzz_size(in));
      break;
    }
    case 7: {
      a.kind = OpArg::Kind::tensor_list;
      const int n = in.ConsumeIntegralInRange<int>(0, 5);
      for (int i = 0; i < n; ++i) a.ints.push_back(in.ConsumeIntegralInRange<std::int64_t>(-1, static_cast<std::int64_t>(tensors) + 1));
      break;
    }
    case 8: {
      static const char* const texts[] = {"torch.float32", "torch.bfloat16", "torch.int64", "torch.bool", "sum",          "mean", "floor",
                                          "trunc",         "none",           "reflect",     "ij,jk->ik",  "bij,bjk->bik", ""};
      a.kind = in.ConsumeBool() ? OpArg::Kind::string : OpArg::Kind::other;
      a.text = in.ConsumeBool() ? std::string(texts[in.ConsumeIntegralInRange<int>(0, 12)]) : in.ConsumeRandomLengthString(16);
      break;
    }
    default: {
      // a list, or a dict (key, value, ... as the FX reader gives flex attention's kernel options)
      const bool dict = in.ConsumeBool();
      a.kind = dict ? OpArg::Kind::dict : OpArg::Kind::list;
      const int n = in.ConsumeIntegralInRange<int>(0, 4) * (dict ? 2 : 1);
      for (int i = 0; i < n; ++i) a.items.push_back(fuzz_arg(in, tensors, depth + 1));
      break;
    }
  }
  return a;
}

Placement fuzz_placement(FuzzedDataProvider& in, int rank) {
  const int dim = in.ConsumeIntegralInRange<int>(0, rank > 0 ? rank - 1 : 0);
  switch (in.ConsumeIntegralInRange<int>(0, 5)) {
    case 0: return Replicate();
    case 1: return rank > 0 ? Shard(dim) : Replicate();
    case 2: return rank > 0 ? StridedShard(dim, in.ConsumeIntegralInRange<int>(1, 4)) : Replicate();
    case 3: return Partial(ReduceOp::sum);
    case 4: return Partial(ReduceOp::avg);
    default: return Partial(in.ConsumeBool() ? ReduceOp::max : ReduceOp::min);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const OpRegistry& registry = builtin_registry();
  static const std::vector<std::string> names = registry.names();
  FuzzedDataProvider in(data, size);
  OpCall call;
  call.op = names[in.ConsumeIntegralInRange<std::size_t>(0, names.size() - 1)];
  const std::size_t tensors = in.ConsumeIntegralInRange<std::size_t>(0, 5);
  try {
    for (std::size_t t = 0; t < tensors; ++t) {
      TensorMeta m;
      m.itemsize = std::size_t{1} << in.ConsumeIntegralInRange<int>(0, 3);
      const int rank = in.ConsumeIntegralInRange<int>(0, 5);
      for (int d = 0; d < rank; ++d) m.shape.push_back(fuzz_size(in));
      call.tensors.push_back(m);
    }
  } catch (const error&) {
    return 0;  // a shape TensorShape refuses
  }
  const int nargs = in.ConsumeIntegralInRange<int>(0, 8);
  for (int i = 0; i < nargs; ++i) call.args.push_back(fuzz_arg(in, tensors, 0));
  static const char* const keys[] = {"dim",   "keepdim", "dtype", "correction", "output_mask", "self",
                                     "input", "weight",  "bias",  "index",      "src",         "value"};
  const int nkw = in.ConsumeIntegralInRange<int>(0, 3);
  for (int i = 0; i < nkw; ++i) call.kwargs.emplace_back(keys[in.ConsumeIntegralInRange<int>(0, 11)], fuzz_arg(in, tensors, 0));
  try {
    const OpRule rule = (*registry.find(call.op))(call);
    if (rule.rules.num_inputs() != call.tensors.size()) return 0;
    std::vector<std::int64_t> mesh_sizes(in.ConsumeIntegralInRange<std::size_t>(1, 3));
    for (auto& s : mesh_sizes) s = in.ConsumeIntegralInRange<std::int64_t>(1, 4);
    const MeshTopology mesh = MeshTopology::build(mesh_sizes, 8, {}, in.ConsumeBool() ? CostModel::consistent : CostModel::dtensor);
    std::vector<Spec> specs;
    for (const auto& t : call.tensors) {
      Spec s;
      for (std::size_t i = 0; i < mesh_sizes.size(); ++i) s.push_back(fuzz_placement(in, static_cast<int>(t.shape.rank)));
      specs.push_back(s);
    }
    StrategyEnumerator e(rule.rules, mesh, rule.uneven_inputs, rule.filter, rule.placeholder_fill);
    const Choice c = e.choose(call.tensors, specs);
    for (std::size_t k = 0; k < e.num_outputs() + e.num_inputs(); ++k) (void)e.spec_of(c, k);
  } catch (const error&) {}
  return 0;
}
