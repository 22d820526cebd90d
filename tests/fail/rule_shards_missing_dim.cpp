// EXPECT: shards a tensor dim beyond its operand's rank
// Shard(5) of operands declared rank 2: one diagnostic, not a table that breaks its laws.
#include "ctshard/ctshard.hpp"

struct shard_beyond_rank {
  constexpr ctshard::RuleSet operator()() const {
    ctshard::RuleSet r(1, 1);
    r.set_rank(0, 2);
    r.set_rank(1, 2);
    r.add({ctshard::Shard(5), ctshard::Shard(5)});
    return r;
  }
};
constexpr auto table = ctshard::mesh_expansion_v<ctshard::make_single_dim_strategy<shard_beyond_rank>(), 2>;
int main() { return static_cast<int>(table.size()); }
