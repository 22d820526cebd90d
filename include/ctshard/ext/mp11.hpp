#pragma once
/// \file ext/mp11.hpp
/// Type-level view of a small strategy table as Boost.Mp11 lists (opt-in; needs Boost headers).
/// `table_mp_list<table>` is `mp_list<row_0, row_1, ...>`, each row an
/// `mp_list<spec_c<output>, spec_c<input_0>, ...>` whose elements carry the Spec as `::value`.
/// Meant for small tables (tens to a few thousand rows): type lists cost far more compile time
/// and memory than the value tables they mirror.

#include <cstddef>
#include <type_traits>
#include <utility>

#include <boost/mp11/algorithm.hpp>
#include <boost/mp11/list.hpp>

#include "ctshard/core/spec.hpp"
#include "ctshard/expand/mesh_expansion.hpp"

namespace ctshard::ext {

/// A spec as a type: `spec_c<"S(0)R"_spec>::value`.
template <Spec S>
using spec_c = std::integral_constant<Spec, S>;

/// Largest table the type-level view accepts (rows).
inline constexpr std::size_t max_type_level_rows = 4096;

namespace detail {
// g++ 12.2 ICEs (segfault) on `spec_c<Table.spec(Row, Operand)>` written directly in a pack
// expansion over a reference NTTP; reading the member inside a class template avoids it.
template <auto& Table, std::size_t Row, std::size_t Operand>
struct spec_at {
  static constexpr Spec value = Table.spec(Row, Operand);
  using type = spec_c<value>;
};

template <auto& Table, std::size_t Row, std::size_t... Operand>
auto row_list(std::index_sequence<Operand...>) -> boost::mp11::mp_list<typename spec_at<Table, Row, Operand>::type...>;

template <auto& Table, std::size_t... Row>
auto table_list(std::index_sequence<Row...>)
    -> boost::mp11::mp_list<decltype(row_list<Table, Row>(std::make_index_sequence<Table.single_dim.width()>{}))...>;
}  // namespace detail

/// Row `Row` of `Table` as `mp_list<spec_c<operand specs>...>` (outputs first).
template <auto& Table, std::size_t Row>
using row_mp_list = decltype(detail::row_list<Table, Row>(std::make_index_sequence<Table.single_dim.width()>{}));

/// The whole table as `mp_list` of rows. Compile error above max_type_level_rows rows.
template <auto& Table>
requires(Table.size() <= max_type_level_rows) using table_mp_list = decltype(detail::table_list<Table>(std::make_index_sequence<Table.size()>{}));

}  // namespace ctshard::ext
