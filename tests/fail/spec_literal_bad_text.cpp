// EXPECT: invalid_placement_text
// A spec literal that is not DTensor short form must not compile (the reporter names the problem).
#include "ctshard/expand/mesh_expansion.hpp"

using namespace ctshard::literals;
constexpr auto bad = "S(0)X"_spec;
int main() { return bad.size(); }
