// EXPECT: rule row repeats an earlier row
// A rule listed twice expands to repeated rows (table_laws_hold would fail): one diagnostic.
#include "ctshard/ctshard.hpp"

struct repeated_rules {
  constexpr ctshard::RuleSet operator()() const {
    ctshard::RuleSet r(1, 1);
    r.add({ctshard::Shard(0), ctshard::Shard(0)});
    r.add({ctshard::Shard(0), ctshard::Shard(0)});
    return r;
  }
};
constexpr auto table = ctshard::mesh_expansion_v<ctshard::make_single_dim_strategy<repeated_rules>(), 2>;
int main() { return static_cast<int>(table.size()); }
