#pragma once
/// \file ext/hana.hpp
/// Boost.Hana view of a small strategy table (opt-in; needs Boost headers): a `hana::tuple` of rows,
/// each a `hana::tuple` of `ext::spec_c` (outputs first), for algorithms written with Hana.
/// Includes only the Hana headers it uses.

#include <cstddef>
#include <utility>

#include <boost/hana/tuple.hpp>

#include "ctshard/ext/mp11.hpp"

namespace ctshard::ext {

namespace detail {
template <auto& Table, std::size_t Row, std::size_t... Operand>
constexpr auto hana_row(std::index_sequence<Operand...>) {
  return boost::hana::make_tuple(typename spec_at<Table, Row, Operand>::type{}...);
}
template <auto& Table, std::size_t... Row>
constexpr auto hana_table(std::index_sequence<Row...>) {
  return boost::hana::make_tuple(hana_row<Table, Row>(std::make_index_sequence<Table.single_dim.width()>{})...);
}
}  // namespace detail

/// The table as `hana::tuple` of rows; compile error above max_type_level_rows rows.
template <auto& Table>
requires(Table.size() <= max_type_level_rows) constexpr auto to_hana_tuple() {
  return detail::hana_table<Table>(std::make_index_sequence<Table.size()>{});
}

}  // namespace ctshard::ext
