// tests/sim/sim_cases.hpp — sample calls for the simulated-mesh check: op name, small global input
// shapes (some not divisible by the mesh, some size-1 dims, 0-d tensors), value domains and the
// op's non-tensor arguments, grouped by rule family.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ctshard/registry/op_call.hpp"
#include "sim_tensor.hpp"

namespace ctshard::sim {

struct SimInput {
  Shape shape;
  Domain domain = Domain::real;
  std::int64_t bound = 0;  ///< Domain::index only
};

/// One op call to simulate: `args` / `kwargs` as in ctshard::OpCall, a tensor argument holding its
/// index into `inputs`.
struct SampleCall {
  std::string family;  ///< "pointwise", "einsum", "collective", ...
  std::string op;      ///< aten overload name
  std::vector<SimInput> inputs;
  std::vector<OpArg> args;
  std::vector<std::pair<std::string, OpArg>> kwargs;
  /// Collectives: the size g of the program-level process group the call runs over (each of the
  /// g program ranks draws its own inputs; `simulate_group_row`). 0 for every other op.
  std::int64_t program_ranks = 0;
  /// Output shapes the call's graph annotation gives (OpCall::outputs); empty: none.
  std::vector<Shape> outputs{};
};

/// "aten.add.Tensor(4x5, 5)".
[[nodiscard]] std::string describe(const SampleCall& call);
/// The OpCall a rule factory sees for this sample (input metas with itemsize 4, args, kwargs).
[[nodiscard]] OpCall to_op_call(const SampleCall& call);
/// A random global tensor for one input.
[[nodiscard]] Tensor random_input(const SimInput& input, Rng& rng);

/// Every sample call, in family order.
[[nodiscard]] const std::vector<SampleCall>& sample_calls();

// Argument builders for sample calls.
[[nodiscard]] OpArg targ(std::int64_t index);
[[nodiscard]] OpArg tlist(std::vector<std::int64_t> indices);
[[nodiscard]] OpArg farg(double value);
[[nodiscard]] OpArg iarg(std::int64_t value);
[[nodiscard]] OpArg barg(bool value);
[[nodiscard]] OpArg ilist(std::vector<std::int64_t> values);
[[nodiscard]] OpArg sarg(std::string text);
[[nodiscard]] OpArg none_arg();

namespace detail {
using Kwargs = std::vector<std::pair<std::string, OpArg>>;
/// A call whose tensor inputs are its first arguments, in order, followed by `extra` arguments.
[[nodiscard]] SampleCall make_call(std::string family, std::string op, std::vector<SimInput> inputs, std::vector<OpArg> extra = {},
                                   Kwargs kwargs = {});
void add_layout_cases(std::vector<SampleCall>& calls);  ///< "view" and "tensor" families (sim_cases_layout.cpp)
void add_math_cases(std::vector<SampleCall>& calls);    ///< "math" and "nn" families (sim_cases_layout.cpp)
}  // namespace detail

}  // namespace ctshard::sim
