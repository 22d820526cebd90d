// Per-op FLOPs and bytes in the registry (registry/op_compute.hpp): the cost functions registered
// with the rules of the matmul family, convolutions and attention, the elementwise default, and
// how OpRegistry keeps a cost function through replace().

#include <catch2/catch.hpp>

#include <span>
#include <string>
#include <vector>

#include "ctshard/registry.hpp"
#include "ctshard/registry/builtin_registry.hpp"
#include "ctshard/registry/op_compute.hpp"

using namespace ctshard;

namespace {

TensorMeta meta(std::initializer_list<std::int64_t> sizes, std::size_t itemsize = 4) { return TensorMeta{TensorShape(sizes), itemsize}; }

OpCompute compute_of(const OpRegistry& r, const std::string& op, const std::vector<TensorMeta>& in, const std::vector<TensorMeta>& out) {
  return r.compute(op, in, out);
}

double bytes_of(const std::vector<TensorMeta>& in, const std::vector<TensorMeta>& out) {
  double b = 0;
  for (const auto& m : out) b += m.bytes();
  for (const auto& m : in) b += m.bytes();
  return b;
}

}  // namespace

static_assert(elementwise_compute(std::span<const TensorMeta>{}, std::span<const TensorMeta>{}).flops == 0);
static_assert(op_compute::trailing_numel(TensorMeta{TensorShape{64, 3, 7, 7}, 4}) == 3 * 7 * 7);
static_assert(op_compute::last_dim(TensorMeta{}) == 1);

TEST_CASE("op compute: the matmul family's FLOPs come from the registry", "[op_compute]") {
  const OpRegistry& r = builtin_registry();
  const std::int64_t m = 64, k = 128, n = 256, b = 8;
  {  // mm [m, k] x [k, n] = 2mkn
    const std::vector<TensorMeta> in{meta({m, k}), meta({k, n})}, out{meta({m, n})};
    const OpCompute c = compute_of(r, "aten.mm.default", in, out);
    CHECK(c.flops == 2.0 * m * k * n);
    CHECK(c.bytes == bytes_of(in, out));
    CHECK(c.bytes == 4.0 * (m * k + k * n + m * n));
  }
  {  // bmm [b, m, k] x [b, k, n] = 2bmkn
    const std::vector<TensorMeta> in{meta({b, m, k}), meta({b, k, n})}, out{meta({b, m, n})};
    CHECK(compute_of(r, "aten.bmm.default", in, out).flops == 2.0 * b * m * k * n);
  }
  {  // addmm(bias [n], [m, k], [k, n]) = 2mkn + mn
    const std::vector<TensorMeta> in{meta({n}), meta({m, k}), meta({k, n})}, out{meta({m, n})};
    CHECK(compute_of(r, "aten.addmm.default", in, out).flops == 2.0 * m * k * n + m * n);
  }
  {  // baddbmm(bias, [b, m, k], [b, k, n]) = 2bmkn + bmn
    const std::vector<TensorMeta> in{meta({b, m, n}), meta({b, m, k}), meta({b, k, n})}, out{meta({b, m, n})};
    CHECK(compute_of(r, "aten.baddbmm.default", in, out).flops == 2.0 * b * m * k * n + b * m * n);
  }
  {  // a call the formula does not fit (no output known) costs elementwise
    const std::vector<TensorMeta> in{meta({m, k}), meta({k, n})};
    CHECK(compute_of(r, "aten.mm.default", in, {}).flops == static_cast<double>(k * n));
    CHECK(compute_of(r, "aten.mm.default", in, {TensorMeta{}}).flops == static_cast<double>(k * n));
  }
  // dot and einsum have no cost function: one FLOP per element of the largest operand
  CHECK(r.find_compute("aten.dot.default") == nullptr);
  CHECK(compute_of(r, "aten.dot.default", {meta({m}), meta({m})}, {meta({})}).flops == m);
  for (const char* op : {"aten.mm.default", "aten.bmm.default", "aten.addmm.default", "aten.baddbmm.default"}) CHECK(r.find_compute(op) != nullptr);
}

TEST_CASE("op compute: convolutions and attention", "[op_compute]") {
  const OpRegistry& r = builtin_registry();
  {  // convolution: 2 x output elements x C_in x kh x kw (ResNet's stem: [8, 3, 224, 224] * [64, 3, 7, 7] -> [8, 64, 112, 112])
    const std::vector<TensorMeta> in{meta({8, 3, 224, 224}), meta({64, 3, 7, 7})}, out{meta({8, 64, 112, 112})};
    const OpCompute c = compute_of(r, "aten.convolution.default", in, out);
    CHECK(c.flops == 2.0 * (8.0 * 64 * 112 * 112) * (3 * 7 * 7));
    CHECK(c.bytes == bytes_of(in, out));
  }
  {  // convolution_backward(grad_output, input, weight): 4 x grad_output elements x C_in x kh x kw
    const std::vector<TensorMeta> in{meta({8, 64, 112, 112}), meta({8, 3, 224, 224}), meta({64, 3, 7, 7})};
    const std::vector<TensorMeta> out{meta({8, 3, 224, 224}), meta({64, 3, 7, 7}), meta({64})};
    CHECK(compute_of(r, "aten.convolution_backward.default", in, out).flops == 4.0 * (8.0 * 64 * 112 * 112) * (3 * 7 * 7));
  }
  const std::int64_t B = 2, H = 12, L = 197, S = 64, E = 64;
  const std::vector<TensorMeta> qkv{meta({B, H, L, E}), meta({B, H, S, E}), meta({B, H, S, E})};
  for (const char* op : {"aten._scaled_dot_product_efficient_attention.default", "aten._scaled_dot_product_flash_attention.default",
                         "aten._scaled_dot_product_cudnn_attention.default"}) {
    INFO(op);  // 4 B H L S E
    CHECK(compute_of(r, op, qkv, {meta({B, H, L, E})}).flops == 4.0 * B * H * L * S * E);
  }
  // backward (grad_out, query, key, value, ...): 2.5 x 4 B H L L E (its first two tensors are [B, H, L, E])
  const std::vector<TensorMeta> grads{meta({B, H, L, E}), meta({B, H, L, E}), meta({B, H, S, E}), meta({B, H, S, E})};
  for (const char* op : {"aten._scaled_dot_product_efficient_attention_backward.default", "aten._scaled_dot_product_flash_attention_backward.default",
                         "aten._scaled_dot_product_cudnn_attention_backward.default"}) {
    INFO(op);
    CHECK(compute_of(r, op, grads, {meta({B, H, L, E})}).flops == 2.5 * (4.0 * B * H * L * L * E));
  }
  // 3-d attention inputs do not fit: elementwise
  CHECK(compute_of(r, "aten._scaled_dot_product_flash_attention.default", {meta({H, L, E}), meta({H, S, E}), meta({H, S, E})}, {}).flops ==
        static_cast<double>(H * L * E));
  // every attention kernel in the registry has its cost function
  for (const std::string& op : r.names())
    if (op.find("scaled_dot_product") != std::string::npos) {
      INFO(op);
      CHECK(r.find_compute(op) != nullptr);
    }
}

TEST_CASE("op compute: the elementwise default, and cost functions survive replace() and the dtensor profile", "[op_compute]") {
  const OpRegistry& r = builtin_registry();
  const std::vector<TensorMeta> in{meta({4, 8}), meta({8})}, out{meta({4, 8})};
  CHECK(r.find_compute("aten.add.Tensor") == nullptr);
  CHECK(compute_of(r, "aten.add.Tensor", in, out).flops == 32);
  CHECK(compute_of(r, "aten.add.Tensor", in, out).bytes == 4.0 * (32 + 8 + 32));
  CHECK(compute_of(r, "no.such.op", in, out).flops == 32);  // no rule: elementwise too

  // the dtensor profile replaces the rules of attention and convolution, not their cost
  const OpRegistry dtensor = make_builtin_registry(RegistryOptions{.rule_set = RuleProfile::dtensor});
  for (const char* op : {"aten.mm.default", "aten.convolution.default", "aten.convolution_backward.default",
                         "aten._scaled_dot_product_flash_attention.default", "aten._scaled_dot_product_efficient_attention_backward.default"}) {
    INFO(op);
    CHECK(dtensor.find_compute(op) != nullptr);
  }

  OpRegistry own;
  own.add(
      {"my.matmul"},
      [](std::span<const TensorMeta>, std::span<const TensorMeta>) {
        return OpCompute{42, 7};
      },
      [](const OpCall&) { return OpRule{RuleSet(1, 2)}; });
  own.add({"my.relu"}, [](const OpCall&) { return OpRule{RuleSet(1, 1)}; });
  CHECK(own.compute("my.matmul", in, out).flops == 42);
  own.replace("my.matmul", [](const OpCall&) { return OpRule{RuleSet(1, 2)}; });
  CHECK(own.compute("my.matmul", in, out).bytes == 7);
  CHECK(own.compute("my.relu", in, out).flops == 32);
  own.set_compute("my.relu", [](std::span<const TensorMeta>, std::span<const TensorMeta>) { return OpCompute{1, 2}; });
  CHECK(own.compute("my.relu", in, out).flops == 1);
  own.set_compute("my.relu", {});
  CHECK(own.find_compute("my.relu") == nullptr);
  CHECK_THROWS_WITH(own.set_compute("my.gelu", {}), "ctshard::OpRegistry: cannot set the cost of 'my.gelu': not registered");
  CHECK_THROWS_WITH(own.add({"my.relu"}, [](const OpCall&) { return OpRule{RuleSet(1, 1)}; }), "ctshard::OpRegistry: op 'my.relu' registered twice");
}
