// Dead ends of the greedy plan (docs/semantics.md, "Dead ends"): a node with no finite row given
// its inputs. The built-in rules have an all-Replicate row everywhere but at the sum-reducing
// collectives, so these tests add ops whose tables have none (rows that demand a Partial, rows
// removed by shardability) and check the repaired plans' values, that the repair is as late as
// possible, the error when no finite plan exists, the JSON fields, and, on random graphs, that
// the plan is finite exactly when a brute-force search over every row of every table finds a
// finite plan.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ctshard/fx/reader.hpp"
#include "ctshard/graph/global_plan.hpp"
#include "ctshard/graph/greedy.hpp"
#include "ctshard/registry.hpp"
#include "ctshard/report/global_report.hpp"
#include "ctshard/report/plan_report.hpp"
#include "ctshard/solve/candidates.hpp"

using namespace ctshard;

namespace {

/// A one-input op whose only row is [P(op), P(op)]; its filter refuses a Replicate input, so its
/// table has no all-Replicate row (as the sum all-reduce's).
OpRule partial_only(const OpCall& call, ReduceOp op) {
  const int rank = static_cast<int>(call.tensors.at(0).shape.rank);
  RuleSet rules(1, 1);
  rules.set_rank(0, rank);
  rules.set_rank(1, rank);
  rules.add({Partial(op), Partial(op)});
  OpRule rule{rules, UnevenInputs::reject};
  rule.filter = [](std::span<const Spec> operands, std::span<const TensorMeta>, MeshSizes) {
    for (const Placement& p : operands[1])
      if (p.is_replicate()) return false;
    return true;
  };
  return rule;
}

/// Rows [S(0), S(0)] and [P(sum), P(sum)], no Replicate input: with dim 0 of size 1 the shard row
/// is unshardable and only the Partial row is left.
OpRule shard0_or_psum(const OpCall& call) {
  OpRule rule = partial_only(call, ReduceOp::sum);
  rule.rules.add({Shard(0), Shard(0)});
  return rule;
}

const OpRegistry& test_registry() {
  static const OpRegistry registry = [] {
    OpRegistry r = builtin_registry();
    r.add({"test.psum_only.default"}, [](const OpCall& c) { return partial_only(c, ReduceOp::sum); });
    r.add({"test.pmax_only.default"}, [](const OpCall& c) { return partial_only(c, ReduceOp::max); });
    r.add({"test.shard0_or_psum.default"}, shard0_or_psum);
    return r;
  }();
  return registry;
}

fx::Graph graph_of(const std::string& signature, const std::string& body) {
  return fx::parse_fx_graph("class GraphModule(torch.nn.Module):\n    def forward(self, " + signature + "):\n" + body, "<test graph>");
}

graph::PlanOptions options_of(std::vector<std::int64_t> mesh, const std::map<std::string, std::string>& place, CostModel model = CostModel::dtensor) {
  graph::PlanOptions o;
  o.mesh = std::move(mesh);
  o.cost_model = model;
  for (const auto& [name, spec] : place) o.placements[name] = parse_spec(spec);
  return o;
}

/// DTensor's price of one redistribution of a float32 tensor.
double price(const std::string& from, const std::string& to, std::vector<std::int64_t> shape, const std::vector<std::int64_t>& mesh,
             CostModel model = CostModel::dtensor) {
  const MeshTopology t = MeshTopology::build(std::span<const std::int64_t>(mesh.data(), mesh.size()), 8, {}, model);
  const TensorMeta meta{TensorShape(std::span<const std::int64_t>(shape.data(), shape.size())), 4};
  return redistribute_cost(parse_spec(from), parse_spec(to), meta, t);
}

const graph::PlannedNode& node(const graph::Plan& p, const std::string& name) {
  for (const auto& n : p.nodes)
    if (n.name == name) return n;
  FAIL("no node " << name);
  return p.nodes.front();
}

using Strings = std::vector<std::string>;

}  // namespace

TEST_CASE("dead end: a Partial-only consumer of a sharded value: the latest producer replicates, the rest stays DTensor's choice", "[plan][repair]") {
  const fx::Graph g = graph_of("x: \"f32[8, 4]\"",
                               "        relu: \"f32[8, 4]\" = torch.ops.aten.relu.default(x)\n"
                               "        neg: \"f32[8, 4]\" = torch.ops.aten.neg.default(relu)\n"
                               "        psum: \"f32[8, 4]\" = torch.ops.test.psum_only.default(neg)\n"
                               "        return (psum,)\n");
  const graph::PlanOptions o = options_of({2}, {{"x", "S(0)"}});
  const graph::Plan plain = graph::greedy_pass(g, o, test_registry(), nullptr, {});
  REQUIRE(std::isinf(plain.total_cost_us));  // DTensor's choices: S(0) all along, then S(0) -> P(sum)
  CHECK(std::isinf(node(plain, "psum").cost_us));

  const graph::Plan p = graph::plan_graph(g, o, test_registry());
  const double gather = price("S(0)", "R", {8, 4}, {2});
  REQUIRE(std::isfinite(gather));
  CHECK(p.total_cost_us == Approx(gather));
  CHECK(p.nodes_repaired == 1);
  // relu keeps DTensor's choice; neg, the last node after which a finite plan still exists, gathers
  const auto& relu = node(p, "relu");
  CHECK_FALSE(relu.repaired);
  CHECK(ctshard::graph::spec_texts(relu.inputs) == Strings{"S(0)"});
  CHECK(ctshard::graph::spec_texts(relu.outputs) == Strings{"S(0)"});
  CHECK(relu.cost_us == 0);
  const auto& neg = node(p, "neg");
  CHECK(neg.repaired);
  CHECK(ctshard::graph::spec_texts(neg.inputs) == Strings{"R"});
  CHECK(ctshard::graph::spec_texts(neg.outputs) == Strings{"R"});
  CHECK(neg.cost_us == Approx(gather));
  CHECK(neg.repair.find("leaves 'psum' with no finite row") != std::string::npos);
  CHECK(neg.repair.find("input 0 ('neg') S(0) -> P(sum)") != std::string::npos);
  const auto& psum = node(p, "psum");
  CHECK_FALSE(psum.repaired);
  CHECK(ctshard::graph::spec_texts(psum.inputs) == Strings{"P(sum)"});
  CHECK(psum.cost_us == 0);  // Replicate -> Partial is free

  // the consistent model prices S(0) -> P(sum) through Replicate: no dead end, no repair
  const graph::PlanOptions c = options_of({2}, {{"x", "S(0)"}}, CostModel::consistent);
  const graph::Plan q = graph::plan_graph(g, c, test_registry());
  CHECK(q.nodes_repaired == 0);
  CHECK(q.total_cost_us == Approx(price("S(0)", "P(sum)", {8, 4}, {2}, CostModel::consistent)));
  CHECK(q.total_cost_us == Approx(graph::greedy_pass(g, c, test_registry(), nullptr, {}).total_cost_us));
}

TEST_CASE("dead end: Partial(max) -> Partial(sum), the reduction itself replicates", "[plan][repair]") {
  const fx::Graph g = graph_of("x: \"f32[8, 4]\"",
                               "        amax: \"f32[8, 1]\" = torch.ops.aten.amax.default(x, [1], True)\n"
                               "        psum: \"f32[8, 1]\" = torch.ops.test.psum_only.default(amax)\n"
                               "        return (psum,)\n");
  for (const auto& mesh : {std::vector<std::int64_t>{2}, std::vector<std::int64_t>{2, 2}}) {
    INFO("mesh of " << mesh.size() << " dims");
    const std::string sharded = mesh.size() == 1 ? "S(1)" : "S(1)S(1)", replicated = mesh.size() == 1 ? "R" : "RR";
    const graph::PlanOptions o = options_of(mesh, {{"x", sharded}});
    REQUIRE(std::isinf(graph::greedy_pass(g, o, test_registry(), nullptr, {}).total_cost_us));  // amax -> P(max)...
    const graph::Plan p = graph::plan_graph(g, o, test_registry());
    CHECK(p.total_cost_us == Approx(price(sharded, replicated, {8, 4}, mesh)));
    CHECK(p.nodes_repaired == 1);
    CHECK(node(p, "amax").repaired);
    CHECK(ctshard::graph::spec_texts(node(p, "amax").outputs) == Strings{replicated});
    CHECK(node(p, "psum").cost_us == 0);
  }
}

TEST_CASE("dead end: a value two consumers need as different Partials is replicated", "[plan][repair]") {
  const fx::Graph g = graph_of("x: \"f32[8, 4]\"",
                               "        relu: \"f32[8, 4]\" = torch.ops.aten.relu.default(x)\n"
                               "        psum: \"f32[8, 4]\" = torch.ops.test.psum_only.default(relu)\n"
                               "        pmax: \"f32[8, 4]\" = torch.ops.test.pmax_only.default(relu)\n"
                               "        add: \"f32[8, 4]\" = torch.ops.aten.add.Tensor(psum, x)\n"
                               "        return (add, pmax)\n");
  const graph::PlanOptions o = options_of({2}, {{"x", "S(0)"}});
  const graph::Plan p = graph::plan_graph(g, o, test_registry());
  CHECK(p.nodes_repaired == 1);
  CHECK(ctshard::graph::spec_texts(node(p, "relu").outputs) == Strings{"R"});
  CHECK(ctshard::graph::spec_texts(node(p, "psum").outputs) == Strings{"P(sum)"});
  CHECK(ctshard::graph::spec_texts(node(p, "pmax").outputs) == Strings{"P(max)"});
  // add keeps DTensor's choice given P(sum) and S(0): its cost is what DTensor's choice prices
  const graph::Plan plain_after = graph::greedy_pass(g, o, test_registry(), nullptr, {{"relu", {{parse_spec("R"), parse_spec("R")}, false, "test"}}});
  CHECK(node(p, "add").inputs == node(plain_after, "add").inputs);
  CHECK(p.total_cost_us == Approx(price("S(0)", "R", {8, 4}, {2}) + node(plain_after, "add").cost_us));
}

TEST_CASE("dead end: the only row left by shardability needs a Partial", "[plan][repair]") {
  const fx::Graph g = graph_of("y: \"f32[1, 4]\"",
                               "        relu: \"f32[1, 4]\" = torch.ops.aten.relu.default(y)\n"
                               "        s: \"f32[1, 4]\" = torch.ops.test.shard0_or_psum.default(relu)\n"
                               "        return (s,)\n");
  const graph::PlanOptions o = options_of({2}, {{"y", "S(1)"}});
  REQUIRE(std::isinf(graph::greedy_pass(g, o, test_registry(), nullptr, {}).total_cost_us));
  const graph::Plan p = graph::plan_graph(g, o, test_registry());
  CHECK(p.total_cost_us == Approx(price("S(1)", "R", {1, 4}, {2})));
  CHECK(node(p, "relu").repaired);
  CHECK(ctshard::graph::spec_texts(node(p, "s").inputs) == Strings{"P(sum)"});
}

TEST_CASE("no finite plan: an error naming the node and why, and the JSON of a repaired plan", "[plan][repair]") {
  const fx::Graph g = graph_of("x: \"f32[8, 4]\"",
                               "        psum: \"f32[8, 4]\" = torch.ops.test.psum_only.default(x)\n"
                               "        return (psum,)\n");
  for (const auto& [mesh, spec] : {std::pair{std::vector<std::int64_t>{2}, "S(0)"}, std::pair{std::vector<std::int64_t>{2, 2}, "RS(0)"}}) {
    const graph::PlanOptions o = options_of(mesh, {{"x", spec}});
    try {
      (void)graph::plan_graph(g, o, test_registry());
      FAIL("no error for a graph with no finite plan");
    } catch (const error& e) {
      const std::string what = e.what();
      INFO(what);
      CHECK(what.find("no finite plan for <test graph>") != std::string::npos);
      CHECK(what.find("node 'psum' (test.psum_only.default) has no finite row") != std::string::npos);
      CHECK(what.find(std::string("input 0 ('x') ") + spec + " -> ") != std::string::npos);
      CHECK(what.find("the exact solver proves it") != std::string::npos);
    }
  }
  // a replicated input has a finite plan: nothing to repair
  CHECK(graph::plan_graph(g, options_of({2}, {}), test_registry()).total_cost_us == 0);

  const fx::Graph h = graph_of("x: \"f32[8, 4]\"",
                               "        relu: \"f32[8, 4]\" = torch.ops.aten.relu.default(x)\n"
                               "        psum: \"f32[8, 4]\" = torch.ops.test.psum_only.default(relu)\n"
                               "        return (psum,)\n");
  const graph::PlanOptions o = options_of({2}, {{"x", "S(0)"}});
  const auto j = report::plan_json(graph::plan_graph(h, o, test_registry()), o);
  CHECK(j["nodes_repaired"] == 1);
  REQUIRE(j["nodes"].size() == 2);
  CHECK(j["nodes"][0]["repaired"] == true);
  CHECK(j["nodes"][0]["repair"].get<std::string>().find("took the cheapest row") != std::string::npos);
  CHECK(j["nodes"][0]["inputs"] == nlohmann::json::array({"R"}));
  CHECK_FALSE(j["nodes"][1].contains("repaired"));  // as a fallback's `reason`: only where it applies
  CHECK_FALSE(j["nodes"][1].contains("repair"));
  CHECK(j["total_cost_us"].get<double>() == Approx(price("S(0)", "R", {8, 4}, {2})));
}

TEST_CASE("dead end: plan --global starts from the repaired greedy plan and is never worse", "[plan][repair][global]") {
  const fx::Graph g = graph_of("x: \"f32[8, 4]\"",
                               "        amax: \"f32[8, 1]\" = torch.ops.aten.amax.default(x, [1], True)\n"
                               "        relu: \"f32[8, 1]\" = torch.ops.aten.relu.default(amax)\n"
                               "        psum: \"f32[8, 1]\" = torch.ops.test.psum_only.default(relu)\n"
                               "        return (psum,)\n");
  const graph::PlanOptions o = options_of({2}, {{"x", "S(1)"}});
  const graph::Plan p = graph::plan_graph(g, o, test_registry());
  const graph::GlobalPlan gp = graph::global_plan(g, o, graph::GlobalOptions{}, test_registry());
  CHECK(gp.greedy.total_cost_us == Approx(p.total_cost_us));
  CHECK(gp.greedy.nodes.size() == p.nodes.size());  // the builder saw the final pass only
  CHECK(gp.result.optimal);
  CHECK(gp.plan.total_cost_us <= p.total_cost_us + 1e-9);
  CHECK(std::isfinite(gp.plan.total_cost_us));
}

namespace {

/// A random graph of unary / binary float ops on [4, 4] tensors (two pinned inputs), with the
/// Partial-only test ops among them.
struct RandomGraph {
  std::string text;
  std::map<std::string, std::string> place;
};

RandomGraph random_graph(std::mt19937& rng, std::size_t mesh_dims, std::size_t max_nodes) {
  static const std::vector<std::pair<std::string, int>> ops = {
      {"aten.relu.default", 1},      {"aten.neg.default", 1},           {"aten.add.Tensor", 2}, {"aten.mul.Tensor", 2}, {"test.psum_only.default", 1},
      {"test.pmax_only.default", 1}, {"test.shard0_or_psum.default", 1}};
  static const std::vector<std::string> specs = {"R", "R", "S(0)", "S(1)", "P(sum)", "P(max)"};
  const auto pick = [&](std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng); };
  RandomGraph g;
  std::vector<std::string> values = {"x", "y"};
  for (const char* input : {"x", "y"})
    for (std::size_t d = 0; d < mesh_dims; ++d) g.place[input] += specs[pick(specs.size())];
  std::string body;
  const std::size_t n = 2 + pick(max_nodes - 1);
  for (std::size_t i = 0; i < n; ++i) {
    const auto& [op, arity] = ops[pick(ops.size())];
    const std::string name = "n" + std::to_string(i);
    std::string args = values[pick(values.size())];
    if (arity == 2) args += ", " + values[pick(values.size())];
    body += "        " + name + ": \"f32[4, 4]\" = torch.ops." + op + "(" + args + ")\n";
    values.push_back(name);
  }
  body += "        return (" + values.back() + ",)\n";
  g.text = "class GraphModule(torch.nn.Module):\n    def forward(self, x: \"f32[4, 4]\", y: \"f32[4, 4]\"):\n" + body;
  return g;
}

/// The least total over every labelling with one row of each op's table (placeholders filled
/// with plain Shard, filters and shardability applied, as `plan --global --every-candidate`
/// offers them when no StridedShard is around); +inf when none is finite.
double brute_force(const fx::Graph& g, const graph::PlanOptions& o, const OpRegistry& registry) {
  const MeshTopology mesh = MeshTopology::build(std::span<const std::int64_t>(o.mesh.data(), o.mesh.size()), o.devices_per_host, {}, o.cost_model);
  const TensorMeta meta{TensorShape{4, 4}, 4};
  struct OpNode {
    std::vector<std::string> args;
    solve::CandidateSet rows;
  };
  std::vector<std::string> names;
  std::vector<OpNode> nodes;
  ShardKinds kinds;
  kinds.shard = true;
  for (const auto& n : g.nodes) {
    if (n.kind != "call_function") continue;
    OpCall call;
    call.op = n.target;
    OpNode node;
    for (const auto& a : n.args) {
      OpArg t;
      t.kind = OpArg::Kind::tensor;
      t.integer = static_cast<std::int64_t>(call.tensors.size());
      call.args.push_back(t);
      call.tensors.push_back(meta);
      node.args.push_back(a.text);
    }
    call.outputs.push_back(meta);
    const OpRule rule = (*registry.find(n.target))(call);
    node.rows = solve::enumerate_candidates(rule.rules, mesh, call.tensors, kinds, rule.uneven_inputs, rule.filter);
    names.push_back(n.name);
    nodes.push_back(std::move(node));
  }
  std::map<std::string, Spec> value;
  for (const auto& [name, spec] : o.placements) value[name] = spec;
  double best = INFINITY;
  std::function<void(std::size_t, double)> walk = [&](std::size_t i, double total) {
    if (total >= best) return;
    if (i == nodes.size()) {
      best = total;
      return;
    }
    const OpNode& node = nodes[i];
    for (std::size_t c = 0; c < node.rows.size(); ++c) {
      if (node.rows.needs_bypass[c] != 0) continue;
      double t = total;
      for (std::size_t k = 0; k < node.args.size() && std::isfinite(t); ++k)
        t += redistribute_cost(value.at(node.args[k]), node.rows.spec(c, 1 + k), meta, mesh);
      if (!std::isfinite(t)) continue;
      value[names[i]] = node.rows.spec(c, 0);
      walk(i + 1, t);
    }
    value.erase(names[i]);
  };
  walk(0, 0);
  return best;
}

}  // namespace

TEST_CASE("dead ends on random graphs (meshes 2, 2x2): the plan is finite exactly when some plan over every table's rows is", "[plan][repair]") {
  std::mt19937 rng(20261202);
  std::size_t dead_ends = 0, repaired = 0, impossible = 0, plans = 0;
  for (int trial = 0; trial < 1000; ++trial) {
    const bool two_dims = trial % 4 == 3;  // every fourth graph on a 2x2 mesh, with at most 3 op nodes
    const RandomGraph r = random_graph(rng, two_dims ? 2 : 1, two_dims ? 3 : 6);
    const fx::Graph g = fx::parse_fx_graph(r.text, "<random graph>");
    const graph::PlanOptions o = options_of(two_dims ? std::vector<std::int64_t>{2, 2} : std::vector<std::int64_t>{2}, r.place);
    INFO(r.text << "x=" << r.place.at("x") << " y=" << r.place.at("y"));
    const double optimum = brute_force(g, o, test_registry());
    const graph::Plan plain = graph::greedy_pass(g, o, test_registry(), nullptr, {});
    if (!std::isfinite(plain.total_cost_us)) ++dead_ends;
    ++plans;
    bool threw = false;
    graph::Plan p;
    try {
      p = graph::plan_graph(g, o, test_registry());
    } catch (const error& e) {
      threw = true;
      CHECK(std::string(e.what()).find("no finite plan") != std::string::npos);
    }
    CHECK(threw == !std::isfinite(optimum));
    if (threw) {
      ++impossible;
      continue;
    }
    CHECK(std::isfinite(p.total_cost_us));
    CHECK(p.total_cost_us >= optimum - 1e-9);
    double sum = 0;
    for (const auto& n : p.nodes) sum += n.cost_us;
    CHECK(p.total_cost_us == Approx(sum));
    if (std::isfinite(plain.total_cost_us)) {
      CHECK(p.nodes_repaired == 0);  // no dead end: the plan is the greedy pass itself
      CHECK(p.total_cost_us == plain.total_cost_us);
    } else {
      CHECK(p.nodes_repaired >= 1);
      ++repaired;
    }
  }
  WARN("random graphs: " << plans << " plans, " << dead_ends << " dead ends of the greedy pass, " << repaired << " repaired, " << impossible
                         << " with no finite plan (brute force agrees on each)");
  CHECK(plans == 1000);
  CHECK(dead_ends >= 200);  // the generator makes dead ends often enough to test the repair
  CHECK(repaired >= 50);
  CHECK(impossible >= 20);
}
