// The _spec literal validates its text before parsing: the columns where parse_spec stops.
#include "ctshard/core/spec.hpp"
using namespace ctshard::literals;
static_assert("S(0)R"_spec.size() == 2 && "(S(0), P(avg))"_spec[1] == ctshard::Partial(ctshard::ReduceOp::avg));
static_assert("_S(1, 4)"_spec[0] == ctshard::StridedShard(1, 4) && "P"_spec[0] == ctshard::Partial());
static_assert(ctshard::detail::spec_text_error_column("S(0)X") == 4);
static_assert(ctshard::detail::spec_text_error_column("S(64)") == 0);
static_assert(ctshard::detail::spec_text_error_column("_S(0, 0)") == 0);
static_assert(ctshard::detail::spec_text_error_column("") == 0);
static_assert(ctshard::detail::spec_text_error_column("RRRRRRRRR") == 8);
static_assert(ctshard::detail::spec_text_error_column("S?(0)") == 0);
static_assert(ctshard::detail::spec_text_error_column("(S(0)") == 5);
static_assert(ctshard::detail::spec_text_error_column("RRRRRRRR") == ctshard::detail::PlacementCursor::npos);
