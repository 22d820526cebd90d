// The consistent cost model (CostModel::consistent): R09, worked numbers, the triangle inequality
// over random specs, and equality with a brute-force shortest path over every spec.
#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <queue>
#include <random>
#include <string>
#include <vector>

#include "ctshard/cost/redistribute_cost.hpp"

using namespace ctshard;
using Catch::Matchers::WithinRel;

namespace {
MeshTopology consistent_mesh(std::vector<std::int64_t> sizes, std::int64_t dph = 8) {
  return MeshTopology::build(sizes, dph, {}, CostModel::consistent);
}
double cost(const char* from, const char* to, const TensorMeta& meta, const MeshTopology& m) {
  return redistribute_cost(parse_spec(from), parse_spec(to), meta, m);
}

/// One mesh-dim step of the consistent model priced directly from the file comment's table.
double step_cost(const Spec& s, std::size_t d, Placement to, const TensorMeta& t, const MeshTopology& m) {
  const Placement from = s[d];
  if (m.sizes[d] == 1 || from.is_replicate()) return 0;
  double gb = t.bytes() / 1024.0 / 1024.0 / 1024.0;
  for (std::size_t e = 0; e < s.size(); ++e)
    if (s[e].is_any_shard()) gb /= static_cast<double>(m.sizes[e]);
  if (from.is_any_shard() && to.is_replicate()) return allgather_cost(gb * static_cast<double>(m.sizes[d]), m, d);
  if (from.is_any_shard() && to.is_any_shard()) return allgather_cost(gb, m, d);
  if (from.is_partial() && to.is_replicate()) return allreduce_cost(gb, m, d);
  if (from.is_partial() && to.is_any_shard()) return reduce_scatter_cost(gb, m, d);
  return infinite_cost;  // Shard -> Partial, Partial -> Partial(other): only through Replicate
}

/// Shortest-path distances from `a` over every spec of `placements`, by Dijkstra.
std::map<std::string, double> all_distances(const Spec& a, const std::vector<Placement>& placements, const TensorMeta& t, const MeshTopology& m) {
  std::map<std::string, double> dist{{to_string(a), 0.0}};
  using Entry = std::pair<double, std::string>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> queue;
  queue.emplace(0.0, to_string(a));
  while (!queue.empty()) {
    const auto [d0, key] = queue.top();
    queue.pop();
    if (d0 > dist[key]) continue;
    const Spec s = parse_spec(key);
    for (std::size_t d = 0; d < s.size(); ++d)
      for (const Placement& p : placements) {
        if (p == s[d]) continue;
        const double c = step_cost(s, d, p, t, m);
        if (std::isinf(c)) continue;
        Spec next = s;
        next[d] = p;
        const std::string k = to_string(next);
        const auto it = dist.find(k);
        if (it == dist.end() || d0 + c < it->second - 1e-12) {
          dist[k] = d0 + c;
          queue.emplace(d0 + c, k);
        }
      }
  }
  return dist;
}
}  // namespace

TEST_CASE("consistent cost: R09, no charge on a mesh dim of size 1", "[cost]") {
  const TensorMeta t{{8, 8}, 4};
  CHECK(cost("S(0)", "R", t, consistent_mesh({1})) == 0.0);
  CHECK(cost("P(sum)", "S(1)", t, consistent_mesh({1})) == 0.0);
  CHECK(cost("S(0)S(0)", "RS(0)", t, consistent_mesh({1, 2})) == 0.0);
  // DTensor's formula charges the 6.6 us base latency there (its runtime skips the collective)
  CHECK_THAT(redistribute_cost(parse_spec("S(0)"), parse_spec("R"), t, MeshTopology::build(std::vector<std::int64_t>{1})), WithinRel(6.6, 1e-12));
}

TEST_CASE("consistent cost: worked numbers on a 2x4 mesh, 4096x4096 f32, 4 devices per host", "[cost]") {
  const TensorMeta t{{4096, 4096}, 4};
  const auto m = consistent_mesh({2, 4}, 4);  // dim 1 intra-host (87.7 GB/s), dim 0 inter-host (19.294 GB/s)
  const auto dt = MeshTopology::build(std::vector<std::int64_t>{2, 4}, 4);
  // all-to-all without the +1.0 penalty, on the fewest bytes: DTensor 820.1 us
  CHECK(cost("S(0)R", "S(1)R", t, m) < redistribute_cost(parse_spec("S(0)R"), parse_spec("S(1)R"), t, dt));
  // gathers ordered slowest link first: 957.1 us, DTensor's greedy order 1904.6 us
  const RedistributePlan p = redistribute_plan(parse_spec("S(0)S(0)"), parse_spec("RR"), t, m);
  REQUIRE(p.size == 2);
  CHECK(p.steps[0].mesh_dim == 0);
  CHECK(p.steps[1].mesh_dim == 1);
  CHECK_THAT(p.cost_us, WithinRel(957.111, 1e-5));
  // Shard -> Partial is finite (an all-gather, then a free relabel); DTensor says inf
  CHECK(std::isfinite(cost("S(0)R", "P(sum)R", t, m)));
  CHECK(std::isinf(redistribute_cost(parse_spec("S(0)R"), parse_spec("P(sum)R"), t, dt)));
  // a partial all-reduced while the other dim holds a borrowed shard (hierarchical): cheaper than
  // the plain all-reduce
  const RedistributePlan h = redistribute_plan(parse_spec("P(sum)R"), parse_spec("RR"), t, m);
  CHECK(h.size == 3);
  CHECK(h.cost_us < allreduce_cost(t.bytes() / 1024.0 / 1024.0 / 1024.0, m, 0));
}

TEST_CASE("consistent cost: triangle inequality over random specs (StridedShard included)", "[cost]") {
  std::mt19937 rng(20261130);
  std::size_t checked = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    std::vector<std::int64_t> sizes(1 + rng() % 4);
    for (auto& s : sizes) s = 1 + static_cast<std::int64_t>(rng() % 4);
    const auto m = consistent_mesh(sizes, std::int64_t{1} << (rng() % 4));
    TensorMeta t;
    const std::size_t rank = 1 + rng() % 3;
    for (std::size_t d = 0; d < rank; ++d) t.shape.push_back(std::int64_t{1} << (rng() % 16));
    const auto random_spec = [&] {
      Spec s;
      for (std::size_t i = 0; i < sizes.size(); ++i) {
        const auto k = rng() % 9;
        const int dim = static_cast<int>(rng() % rank);
        s.push_back(k < 2   ? Replicate()
                    : k < 5 ? Shard(dim)
                    : k < 7 ? StridedShard(dim, 2 << (rng() % 2))  // _S(d, 2) or _S(d, 4)
                            : Partial(static_cast<ReduceOp>(rng() % 4)));
      }
      return s;
    };
    const Spec a = random_spec(), b = random_spec(), c = random_spec();
    const double ac = redistribute_cost(a, c, t, m), ab = redistribute_cost(a, b, t, m), bc = redistribute_cost(b, c, t, m);
    INFO(to_string(a) << " -> " << to_string(b) << " -> " << to_string(c));
    REQUIRE(std::isfinite(ac));
    REQUIRE(ac <= ab + bc + 1e-9 * (1.0 + ac));
    ++checked;
  }
  CHECK(checked == 20000);
}

TEST_CASE("consistent cost: equals the shortest path over every spec, StridedShard included (brute force)", "[cost]") {
  std::mt19937 rng(7);
  std::size_t compared = 0;
  for (int trial = 0; trial < 120; ++trial) {
    std::vector<std::int64_t> sizes(1 + rng() % 3);
    for (auto& s : sizes) s = 1 + static_cast<std::int64_t>(rng() % 4);
    const auto m = consistent_mesh(sizes, std::int64_t{1} << (rng() % 3));
    TensorMeta t;
    const std::size_t rank = 1 + rng() % 2;
    for (std::size_t d = 0; d < rank; ++d) t.shape.push_back(std::int64_t{1} << (6 + rng() % 12));
    std::vector<Placement> placements{Replicate()};
    for (std::size_t d = 0; d < rank; ++d) placements.push_back(Shard(static_cast<int>(d)));
    for (std::size_t d = 0; d < rank; ++d) placements.push_back(StridedShard(static_cast<int>(d), 2));
    for (int r = 0; r < 4; ++r) placements.push_back(Partial(static_cast<ReduceOp>(r)));
    const auto random_spec = [&] {
      Spec s;
      for (std::size_t i = 0; i < sizes.size(); ++i) s.push_back(placements[rng() % placements.size()]);
      return s;
    };
    const Spec a = random_spec();
    const auto dist = all_distances(a, placements, t, m);
    for (int j = 0; j < 10; ++j) {
      const Spec c = random_spec();
      INFO(to_string(a) << " -> " << to_string(c));
      CHECK_THAT(redistribute_cost(a, c, t, m), WithinRel(dist.at(to_string(c)), 1e-9) || Catch::Matchers::WithinAbs(0.0, 1e-12));
      ++compared;
    }
  }
  CHECK(compared == 1200);
}

TEST_CASE("consistent cost: StridedShard moves are the one-mesh-dim collectives of Shard", "[cost][strided]") {
  const TensorMeta t{{64, 64}, 4};
  const auto m = consistent_mesh({2, 4});  // one host: 87.7 GB/s, 0.6 us per hop
  const double gib = 64.0 * 64.0 * 4.0 / 1024.0 / 1024.0 / 1024.0;
  const auto gather = [](double g, double n) { return 6.6 + (n - 1) * 0.6 + g * (n - 1) / n / 87.7 * 1e6; };
  // all-gather of the same bytes as Shard; a local chunk from Replicate
  CHECK_THAT(cost("_S(0, 2)R", "RR", t, m), WithinRel(gather(gib, 2), 1e-12));
  CHECK(cost("RR", "_S(0, 2)R", t, m) == 0.0);
  // _S(0, 2) <-> S(0) on one mesh dim is a permutation of the local blocks: an all-to-all of the
  // local bytes (b(n-1)/n sent per rank), as S(0) -> S(1)
  CHECK_THAT(cost("_S(0, 2)R", "S(0)R", t, m), WithinRel(gather(gib / 2, 2), 1e-12));
  CHECK(cost("_S(0, 2)R", "S(0)R", t, m) == cost("S(0)R", "S(1)R", t, m));
  CHECK(cost("S(0)R", "_S(0, 4)R", t, m) == cost("S(0)R", "S(1)R", t, m));
  // Partial -> StridedShard: a reduce-scatter (of a permuted buffer), as Partial -> Shard
  CHECK(cost("P(sum)R", "_S(0, 2)R", t, m) == cost("P(sum)R", "S(0)R", t, m));
  // StridedShard -> Partial: through Replicate, finite
  CHECK(cost("_S(0, 2)R", "P(sum)R", t, m) == cost("S(0)R", "P(sum)R", t, m));
  // FSDP2 + TP: _S(0, 4)S(0) -> RR moves the bytes of S(0)S(0) -> RR
  CHECK(cost("_S(0, 4)S(0)", "RR", t, m) == cost("S(0)S(0)", "RR", t, m));
}
