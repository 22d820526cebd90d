// Static tests of the opt-in type-level views (Boost.Mp11 lists, Boost.Hana tuples).
#include "ctshard/ext/hana.hpp"
#include "ctshard/ext/mp11.hpp"

#include <boost/hana/size.hpp>
#include <boost/mp11/algorithm.hpp>

namespace {
using namespace ctshard;
using namespace ctshard::literals;
using namespace boost::mp11;

constexpr auto mm1 = mesh_expansion_v<einsum_strategy_v<"mk,kn->mn", EinsumLinearity::none>, 1>;
using mm1_types = ext::table_mp_list<mm1>;
static_assert(mp_size<mm1_types>::value == 4);
static_assert(std::is_same_v<mp_at_c<mm1_types, 1>, mp_list<ext::spec_c<"P(sum)"_spec>, ext::spec_c<"S(1)"_spec>, ext::spec_c<"S(0)"_spec>>>);
static_assert(mp_at_c<mp_at_c<mm1_types, 3>, 2>::value == "S(1)"_spec);

constexpr auto bmm2 = mesh_expansion_v<einsum_strategy_v<"bmk,bkn->bmn", EinsumLinearity::none>, 2>;
static_assert(mp_size<ext::table_mp_list<bmm2>>::value == 25);
using bmm_row6 = ext::row_mp_list<bmm2, 6>;  // digits (1, 1): batch shard on both mesh dims
static_assert(std::is_same_v<mp_front<bmm_row6>, ext::spec_c<"S(0)S(0)"_spec>>);
// rows whose output is sharded on batch dim 0 on mesh dim 0
template <class Row>
using batch_first = std::bool_constant<mp_front<Row>::value[0] == Shard(0)>;
static_assert(mp_count_if<ext::table_mp_list<bmm2>, batch_first>::value == 5);

constexpr auto hana_rows = ext::to_hana_tuple<mm1>();
static_assert(decltype(boost::hana::size(hana_rows))::value == 4);
static_assert(std::remove_cvref_t<decltype(boost::hana::at_c<0>(boost::hana::at_c<2>(hana_rows)))>::value == "S(0)"_spec);
}  // namespace
