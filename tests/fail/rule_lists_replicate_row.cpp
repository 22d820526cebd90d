// EXPECT: rule_lists_replicate_row
// A rule that lists the all-Replicate row itself (the framework inserts it) must not expand.
#include "ctshard/expand/mesh_expansion.hpp"

struct bad_rules {
  constexpr ctshard::RuleSet operator()() const {
    ctshard::RuleSet r(1, 1);
    r.add({ctshard::Replicate(), ctshard::Replicate()});
    return r;
  }
};
constexpr auto strategy = ctshard::make_single_dim_strategy<bad_rules>();
constexpr auto table = ctshard::mesh_expansion_v<strategy, 1>;
int main() { return static_cast<int>(table.size()); }
