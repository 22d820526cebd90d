// The training-step model of `plan --global --free-inputs` on a tiny joint MLP
// (tests/data/joint_mlp.fx.txt): gradients found from the AOT joint format, the DDP plan's
// gradient all-reduce priced as redistribute_cost(P(sum) -> R), memory by category against
// hand-computed bytes, an impossible budget's status and smallest footprint, and the proven
// optimum never worse than a hand plan within the budget.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "ctshard/fx/reader.hpp"
#include "ctshard/graph/global_plan.hpp"
#include "ctshard/registry.hpp"
#include "ctshard/solve/budget.hpp"
#include "run_tool.hpp"

using namespace ctshard;

namespace {

graph::Graph joint_mlp() { return fx::read_fx_graph_file(std::string(CTSHARD_TEST_DATA_DIR) + "/joint_mlp.fx.txt"); }

graph::PlanOptions mesh_2x2() {
  graph::PlanOptions o;
  o.mesh = {2, 2};
  return o;
}

graph::GlobalOptions training(graph::Optimizer opt = graph::Optimizer::adam) {
  graph::GlobalOptions g;
  g.free_inputs = true;
  g.training.optimizer = opt;
  g.time_limit_ms = 20000;
  return g;
}

const graph::PlannedNode& node(const graph::Plan& p, const std::string& name) {
  for (const auto& n : p.nodes)
    if (n.name == name) return n;
  FAIL("no node " << name);
  return p.nodes.front();
}

TensorMeta f32(std::vector<std::int64_t> dims) {
  TensorMeta m;
  m.shape = TensorShape(dims);
  m.itemsize = 4;
  return m;
}

}  // namespace

TEST_CASE("training step: an AOT joint graph's gradients, one per differentiable primal in primal order") {
  const auto grads = graph::training_gradients(joint_mlp());
  REQUIRE(grads == std::vector<std::pair<std::string, std::string>>{{"mm_4", "primals_1"}, {"mm_2", "primals_2"}});
}

TEST_CASE("training step: a partitioned backward graph's gradients, output k - 1 for primals_k") {
  // the joint graph's rule (the last #primals outputs) would pair primals_2 with output 2 (None)
  // and primals_3, the batch [64, 16], with output 3, the bias's gradient [16]
  const graph::Graph g = fx::read_fx_graph_file(std::string(CTSHARD_TEST_DATA_DIR) + "/backward_mlp.fx.txt");
  const auto grads = graph::training_gradients(g);
  REQUIRE(grads == std::vector<std::pair<std::string, std::string>>{{"mm_2", "primals_2"}});
  graph::PlanOptions o = mesh_2x2();
  o.placements = {{"primals_2", parse_spec("RR")}, {"primals_3", parse_spec("S(0)S(0)")}};
  const graph::GlobalPlan p = graph::global_plan(g, o, training(), builtin_registry());
  REQUIRE(p.training);
  REQUIRE(p.gradients == grads);
  CHECK(p.memory.parameters == 16 * 32 * 4.0);  // primals_2 whole; primals_3 is no parameter
  CHECK(p.memory.optimizer == 2 * 16 * 32 * 4.0);
}

TEST_CASE("training step: a gradient must have its parameter's shape") {
  graph::GlobalOptions o = training();
  o.training.gradients = {{"mm_4", "primals_2"}};  // [32, 16] for a [16, 32] weight
  CHECK_THROWS_WITH(graph::global_plan(joint_mlp(), mesh_2x2(), o, builtin_registry()),
                    "ctshard plan --global: the gradient 'mm_4' (f32[32, 16]) does not have the shape of its parameter 'primals_2' "
                    "(f32[16, 32])");
  o.training.gradients = {{"primals_1", "primals_1"}};
  CHECK_THROWS_WITH(graph::global_plan(joint_mlp(), mesh_2x2(), o, builtin_registry()),
                    Catch::Contains("the parameter 'primals_1' is named as its own gradient"));
}

TEST_CASE("training step: the DDP plan pays the gradient all-reduce and holds the hand-computed bytes") {
  const graph::Graph g = joint_mlp();
  graph::PlanOptions o = mesh_2x2();
  const Spec rr = parse_spec("RR"), dp = parse_spec("S(0)S(0)");
  o.placements = {{"primals_1", rr}, {"primals_2", rr}, {"primals_3", dp}, {"tangents_1", dp}};
  const graph::GlobalPlan p = graph::global_plan(g, o, training(), builtin_registry());
  REQUIRE(p.training);
  REQUIRE(p.result.optimal);
  const auto mesh = MeshTopology::build(std::span<const std::int64_t>(o.mesh.data(), o.mesh.size()), 8, {}, o.cost_model);
  // each weight gradient is a batch contraction: P(sum) on both mesh dims, all-reduced to R
  const Spec grad1 = node(p.plan, "mm_4").outputs.at(0), grad2 = node(p.plan, "mm_2").outputs.at(0);
  CHECK(to_string(grad1) == "P(sum)P(sum)");
  CHECK(to_string(grad2) == "P(sum)P(sum)");
  const double expected = redistribute_cost(grad1, rr, f32({32, 16}), mesh) + redistribute_cost(grad2, rr, f32({16, 32}), mesh);
  CHECK(expected > 0);
  CHECK(p.gradient_reduction_us == Approx(expected).epsilon(1e-12));
  // memory: weights (32*16 + 16*32) * 4 bytes replicated; adam's two states; saved for the
  // backward: the batch primals_3 (64*16*4 / 4 devices) and relu (64*32*4 / its shards)
  const double weights = (32 * 16 + 16 * 32) * 4.0;
  CHECK(p.memory.parameters == weights);
  CHECK(p.memory.gradients == weights);
  CHECK(p.memory.optimizer == 2 * weights);
  const Spec relu = node(p.plan, "relu").outputs.at(0);
  CHECK(p.memory.activations == 64 * 16 * 4 / 4.0 + 64 * 32 * 4.0 / static_cast<double>(num_shards(relu, mesh.sizes)));
}

TEST_CASE("training step: a sharded parameter of uneven size holds rank 0's chunk, the largest") {
  // the joint MLP with 33 hidden units: primals_1 [33, 16] at S(0)S(0) is chunked 33 -> 17 -> 9
  // rows on rank 0 (torch.chunk's ceil-sized chunks, as DTensor splits), not 33 / 4 = 8.25
  std::string text;
  {
    const graph::Graph even = joint_mlp();  // (read for its path: the same file as text)
    std::ifstream in(even.source_name);
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{{"[32, ", "[33, "}, {", 32]", ", 33]"}})
    for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) text.replace(at, from.size(), to);
  const graph::Graph g = fx::parse_fx_graph(text, "joint_mlp_33");
  graph::PlanOptions o = mesh_2x2();
  o.placements = {{"primals_1", parse_spec("S(0)S(0)")}, {"primals_2", parse_spec("S(1)S(1)")}};
  const graph::GlobalPlan p = graph::global_plan(g, o, training(), builtin_registry());
  REQUIRE(p.training);
  const double weights = (9 * 16 + 16 * 9) * 4.0;  // the average would be (33 * 16 * 2) * 4 / 4 = 1056
  CHECK(p.memory.parameters == weights);
  CHECK(p.memory.gradients == weights);
  CHECK(p.memory.optimizer == 2 * weights);
}

TEST_CASE("training step: the optimizer's states per parameter element") {
  const graph::Graph g = joint_mlp();
  const graph::GlobalPlan sgd = graph::global_plan(g, mesh_2x2(), training(graph::Optimizer::sgd), builtin_registry());
  const graph::GlobalPlan mom = graph::global_plan(g, mesh_2x2(), training(graph::Optimizer::sgd_momentum), builtin_registry());
  CHECK(sgd.memory.optimizer == 0);
  CHECK(mom.memory.optimizer == mom.memory.parameters);
  CHECK(mom.memory.parameters > 0);
  CHECK_THROWS_WITH(graph::parse_optimizer("lamb"), Catch::Contains("'lamb'"));
}

TEST_CASE("training step: an impossible budget is infeasible with the smallest footprint") {
  const graph::Graph g = joint_mlp();
  graph::GlobalOptions o = training();
  o.memory_budget_gib = 1024.0 / 1073741824.0;  // 1 KiB per device
  const graph::GlobalPlan p = graph::global_plan(g, mesh_2x2(), o, builtin_registry());
  CHECK(p.result.status == "infeasible");
  // every value sharded over the 4 devices: weights 4096 / 4 bytes, their gradients, adam's two
  // states, and the saved primals_3 (4096 / 4) and relu (8192 / 4)
  CHECK(p.min_memory_bytes == 1024 + 1024 + 2048 + 1024 + 2048);
  o.memory_budget_gib = p.min_memory_bytes / 1073741824.0;
  const graph::GlobalPlan q = graph::global_plan(g, mesh_2x2(), o, builtin_registry());
  CHECK(q.result.optimal);
  CHECK(q.memory.total() == p.min_memory_bytes);
}

TEST_CASE(
    "training step: a cost graph over the solver's share of the memory budget restricts the candidates: a plan of the full problem, the full "
    "problem's bound") {
  const graph::Graph g = joint_mlp();
  graph::PlanOptions mesh;
  mesh.mesh = {2, 2, 2, 2};
  graph::GlobalOptions o = training();
  o.memory_budget_gib = 20000.0 / 1073741824.0;  // binds: every input Replicate needs more
  const graph::GlobalPlan full = graph::global_plan(g, mesh, o, builtin_registry());
  REQUIRE(full.result.optimal);
  CHECK_FALSE(full.restricted.has_value());
  o.max_memory_mib = 2;  // the full graph's matrices take 2.3 MiB
  const graph::GlobalPlan r = graph::global_plan(g, mesh, o, builtin_registry());
  REQUIRE(r.restricted.has_value());
  CHECK(r.restricted->why == graph::RestrictedCandidates::Why::memory);
  CHECK(r.restricted->tied_mesh_dims == 2);
  CHECK(r.restricted->full_candidates == full.candidates);
  CHECK(r.restricted->full_bytes > std::size_t{1} << 20);
  CHECK(r.candidates < full.candidates);
  REQUIRE(r.result.feasible);
  CHECK(r.memory.total() <= 20000);
  // the bound is the full problem's: its constant plus each variable's least unary cost (compute
  // and feeds from fixed values; every input is free here, so the gradient terms are edges) ...
  graph::GlobalOptions fo = training();
  fo.memory_budget_gib = o.memory_budget_gib;
  const solve::CostGraph cg = graph::build_cost_graph(g, mesh, fo, builtin_registry());
  solve::cost_t least = cg.constant;
  for (const auto& u : cg.unary) least += *std::min_element(u.begin(), u.end());
  CHECK(r.lower_bound_us == Approx(static_cast<double>(least) / graph::units_per_us).margin(1e-9));
  // ... at most the full optimum, which is at most the restricted plan
  CHECK(r.lower_bound_us > 0);
  CHECK(r.lower_bound_us <= full.objective_us + 1e-9);
  CHECK(full.objective_us <= r.objective_us + 1e-9);
  CHECK(r.result.status == (r.objective_us <= r.lower_bound_us ? "optimal" : "restricted"));
  CHECK(r.optimality_gap == Approx((r.objective_us - r.lower_bound_us) / r.objective_us).margin(1e-9));
  // every input carries one placement on mesh dims 2 and 3 (the greedy plan's: all Replicate)
  for (const auto& [name, spec] : r.inputs) {
    INFO(name << " " << to_string(spec));
    CHECK(spec[2] == spec[3]);
  }
  // every row carries one placement on mesh dims 2 and 3, but the greedy plan's own rows
  for (std::size_t i = 0; i < r.plan.nodes.size(); ++i) {
    const graph::PlannedNode& n = r.plan.nodes[i];
    const graph::PlannedNode& greedy = r.greedy.nodes[i];
    if (n.inputs == greedy.inputs && n.outputs == greedy.outputs) continue;
    INFO(n.name);
    for (const auto* specs : {&n.inputs, &n.outputs})
      for (const Spec& x : *specs) CHECK(x[2] == x[3]);
  }
  // the plan is one of the full problem's: its input placements pinned, the full graph prices
  // a plan no dearer than it
  graph::PlanOptions pinned = mesh;
  pinned.placements = r.inputs;
  graph::GlobalOptions po = training();
  po.training.gradients = r.gradients;
  const graph::GlobalPlan check = graph::global_plan(g, pinned, po, builtin_registry());
  REQUIRE(check.result.optimal);
  CHECK(check.objective_us <= r.objective_us + 1e-9);
  CHECK(check.objective_us >= full.objective_us - 1e-9);
  // no restricted plan within a budget or a tie: "restricted_infeasible", not "infeasible" (the
  // full problem may have one) nor "restricted"
  graph::GlobalOptions tiny = o;
  tiny.memory_budget_gib = 1024.0 / 1073741824.0;
  const graph::GlobalPlan none = graph::global_plan(g, mesh, tiny, builtin_registry());
  REQUIRE(none.restricted.has_value());
  CHECK(none.result.status == "restricted_infeasible");
  CHECK_FALSE(none.result.feasible);
  CHECK(none.optimality_gap == 1.0);
  graph::PlanOptions tied_mesh = mesh;
  tied_mesh.placements = {{"tangents_1", parse_spec("RRS(0)R")}};  // mesh dims 2 and 3 differ
  graph::GlobalOptions tie = o;
  tie.ties = {{"primals_3", "tangents_1"}};
  tie.memory_budget_gib = 0;
  const graph::GlobalPlan untied = graph::global_plan(g, tied_mesh, tie, builtin_registry());
  REQUIRE(untied.restricted.has_value());
  CHECK(untied.result.status == "restricted_infeasible");
  tie.max_memory_mib = 0;
  const graph::GlobalPlan full_tie = graph::global_plan(g, tied_mesh, tie, builtin_registry());
  CHECK_FALSE(full_tie.restricted.has_value());
  CHECK(full_tie.result.optimal);
  CHECK(to_string(full_tie.inputs.at("primals_3")) == "RRS(0)R");
  // --every-candidate asks for the full graph: the budget is an error then
  o.every_candidate = true;
  CHECK_THROWS_AS(graph::global_plan(g, mesh, o, builtin_registry()), solve::memory_limit_reached);
}

TEST_CASE("training step: a deadline inside the cost-graph build still reports the greedy plan's memory") {
  const std::string path = std::string(CTSHARD_SHARED_DIR) + "/graphs/more/gpt_tp2_joint.fx.txt";
  if (!std::filesystem::exists(path)) {
    WARN("../shared/graphs/more not found: skipping");
    return;
  }
  const graph::Graph g = fx::read_fx_graph_file(path);
  graph::PlanOptions mesh;
  mesh.mesh = {2, 2, 2};
  graph::GlobalOptions o = training();
  const graph::GlobalPlan full = graph::global_plan(g, mesh, o, builtin_registry());
  REQUIRE(full.built);
  REQUIRE(full.greedy_memory.parameters > 0);
  // the build takes ~0.4 s here and the greedy plan ~10 ms: some limit below ends inside the build
  // on any machine (a limit the greedy plan misses throws; one the build fits is passed over)
  bool ended_in_build = false;
  for (double ms = 2; ms <= 1000 && !ended_in_build; ms *= 1.5) {
    o.time_limit_ms = ms;
    graph::GlobalPlan p;
    try {
      p = graph::global_plan(g, mesh, o, builtin_registry());
    } catch (const solve::time_limit_reached&) {
      continue;
    }
    if (p.built) continue;
    ended_in_build = true;
    INFO("time limit " << ms << " ms");
    CHECK(p.training);
    CHECK(p.result.status == "time_limit");
    CHECK(p.optimality_gap == 1.0);
    // read from the greedy plan's specs, the same figures the full build's table gives it
    CHECK(p.memory.parameters == full.greedy_memory.parameters);
    CHECK(p.memory.gradients == full.greedy_memory.gradients);
    CHECK(p.memory.optimizer == full.greedy_memory.optimizer);
    CHECK(p.memory.activations == Approx(full.greedy_memory.activations));
    CHECK(p.greedy_memory.total() == Approx(full.greedy_memory.total()));
  }
  CHECK(ended_in_build);
}

TEST_CASE("training step: the proven optimum is never worse than a hand plan within the budget") {
  const graph::Graph g = joint_mlp();
  graph::GlobalOptions o = training();
  o.hand_plans = true;
  o.memory_budget_gib = 12000.0 / 1073741824.0;
  const graph::GlobalPlan p = graph::global_plan(g, mesh_2x2(), o, builtin_registry());
  REQUIRE(p.result.optimal);
  CHECK(p.memory.total() <= 12000);
  REQUIRE(p.hand_plans.size() == 3);
  std::size_t within = 0;
  for (const graph::HandPlan& h : p.hand_plans) {
    INFO(h.name);
    CHECK(h.status == "optimal");
    CHECK(h.memory.parameters > 0);
    if (h.memory.total() > 12000) continue;
    ++within;
    CHECK(p.objective_us <= h.step_time_us);
  }
  CHECK(within >= 1);
  // DDP holds whole weights and states: above the budget here
  CHECK(p.hand_plans[0].name == "ddp");
  CHECK(p.hand_plans[0].memory.parameters == (32 * 16 + 16 * 32) * 4.0);
  CHECK(p.hand_plans[1].memory.parameters == (32 * 16 + 16 * 32) * 4.0 / 4);
}

TEST_CASE("training step: the caller's pins hold in every hand plan, so none beats the proven plan") {
  // before, the hand plans replaced the pins: FSDP sharded the pinned primals_1 and the batch,
  // and priced a plan the caller had ruled out
  graph::PlanOptions pins = mesh_2x2();
  pins.placements = {{"primals_1", parse_spec("RR")}, {"primals_3", parse_spec("S(0)R")}};
  graph::GlobalOptions o = training();
  o.hand_plans = true;
  const graph::GlobalPlan p = graph::global_plan(joint_mlp(), pins, o, builtin_registry());
  REQUIRE(p.result.optimal);
  REQUIRE(p.hand_plans.size() == 3);
  for (const graph::HandPlan& h : p.hand_plans) {
    INFO(h.name);
    CHECK(to_string(h.inputs.at("primals_1")) == "RR");
    CHECK(to_string(h.inputs.at("primals_3")) == "S(0)R");
    CHECK(p.objective_us <= h.step_time_us);
  }
  CHECK(to_string(p.hand_plans[1].inputs.at("primals_2")) == "S(0)S(0)");  // FSDP shards the free weight
}

TEST_CASE("training step: the command line's memory, hand_plans and optimizer fields") {
  const std::string graph = std::string(CTSHARD_TEST_DATA_DIR) + "/joint_mlp.fx.txt";
  const auto j = nlohmann::json::parse(
      run_tool("plan " + graph + " --global --free-inputs --mesh 2x2 --optimizer sgd_momentum --hand-plans --json --quiet --time-limit-ms 20000"));
  CHECK(j.at("training") == true);
  CHECK(j.at("optimizer") == "sgd_momentum");
  CHECK(j.at("memory").at("optimizer") == j.at("memory").at("parameters"));
  const double total = j.at("memory").at("total");
  CHECK(total * 1073741824.0 ==
        Approx(j.at("memory").at("parameters").get<double>() * 3 * 1073741824.0 + j.at("memory").at("activations").get<double>() * 1073741824.0));
  REQUIRE(j.at("hand_plans").size() == 3);
  CHECK(j.at("hand_plans")[2].at("name") == "megatron_tp_fsdp");
  // linear(16 -> 32) column-parallel, linear(32 -> 16) row-parallel on the last mesh dim
  CHECK(j.at("hand_plans")[2].at("input_placements").at("primals_1") == "S(0)S(0)");
  CHECK(j.at("hand_plans")[2].at("input_placements").at("primals_2") == "S(0)S(1)");
  // the text names the plan's input placements, not only the pins ("all Replicate" before)
  const std::string text = run_tool("plan " + graph + " --global --free-inputs --mesh 2x2 --optimizer sgd_momentum --quiet --time-limit-ms 20000");
  const auto& inputs = j.at("input_placements");
  CHECK_THAT(text, Catch::Contains("input placements: primals_1=" + inputs.at("primals_1").get<std::string>() + " primals_2=" +
                                   inputs.at("primals_2").get<std::string>() + " primals_3=" + inputs.at("primals_3").get<std::string>()));
  int status = 0;
  const std::string bad = run_tool_status("plan " + graph + " --global --free-inputs --optimizer lamb", status);
  CHECK(status != 0);
  CHECK(bad.find("unknown optimizer 'lamb'") != std::string::npos);
}

TEST_CASE("training step: without tangents, the backward is what no forward output depends on") {
  // one linear layer traced as `(params..., batch) -> (loss, grads...)` (make_fx of a step
  // calling torch.autograd.grad, as benchmarks/global/training_step.py writes): no tangents_*
  // input, so the forward is what the loss depends on; the backward (ones_like .. mm_1) reads the
  // loss and the batch arg1_1: those are the saved activations
  const graph::Graph g = fx::parse_fx_graph(R"(
class step(torch.nn.Module):
    def forward(self, arg0_1: "f32[4, 8]", arg1_1: "f32[16, 8]"):
        t: "f32[8, 4]" = torch.ops.aten.t.default(arg0_1)
        mm: "f32[16, 4]" = torch.ops.aten.mm.default(arg1_1, t)
        sum_1: "f32[]" = torch.ops.aten.sum.default(mm)
        ones_like: "f32[]" = torch.ops.aten.ones_like.default(sum_1, pin_memory = False)
        expand: "f32[16, 4]" = torch.ops.aten.expand.default(ones_like, [16, 4])
        t_1: "f32[4, 16]" = torch.ops.aten.t.default(expand)
        mm_1: "f32[4, 8]" = torch.ops.aten.mm.default(t_1, arg1_1)
        return (sum_1, mm_1)
)",
                                            "step");
  graph::PlanOptions o;
  o.mesh = {2};
  o.placements = {{"arg0_1", parse_spec("R")}, {"arg1_1", parse_spec("S(0)")}};
  graph::GlobalOptions go = training();
  go.training.gradients = {{"mm_1", "arg0_1"}};
  const graph::GlobalPlan p = graph::global_plan(g, o, go, builtin_registry());
  REQUIRE(p.training);
  CHECK(p.memory.parameters == 4 * 8 * 4);
  CHECK(p.memory.optimizer == 2 * 4 * 8 * 4);
  // the batch's local half (16 / 2 * 8 * 4 bytes) and the scalar loss (4 bytes, whole in any spec)
  CHECK(p.memory.activations == 16 / 2 * 8 * 4 + 4);
}
