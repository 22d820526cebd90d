// The dtype table (ctshard/core/dtype.hpp): every name finds its dtype, sizes as torch's
// `element_size()`, FX lookups only by the annotation names.

#include "ctshard/core/dtype.hpp"

#include <catch2/catch.hpp>

#include <set>
#include <string>
#include <string_view>

using namespace ctshard;

// The lookups are constant expressions.
static_assert(itemsize_of("float8_e4m3fnuz") == 1 && itemsize_of("f8e4m3fnuz") == 1);
static_assert(itemsize_of("float8_e5m2fnuz") == 1 && itemsize_of("f8e5m2fnuz") == 1);
static_assert(itemsize_of("float32") == 4 && itemsize_of("f32") == 4 && itemsize_of("float") == 4);
static_assert(itemsize_of("bfloat16") == 2 && itemsize_of("bf16") == 2);
static_assert(itemsize_of("half") == 2 && itemsize_of("double") == 8 && itemsize_of("long") == 8 && itemsize_of("int") == 4);
static_assert(itemsize_of("bool") == 1 && itemsize_of("b8") == 1);
static_assert(itemsize_of("cfloat") == 8 && itemsize_of("cdouble") == 16 && itemsize_of("complex32") == 4);
static_assert(!itemsize_of("") && !itemsize_of("float31") && !itemsize_of("torch.float32") && !itemsize_of("Float32"));
static_assert(fx_itemsize_of("f8e4m3fnuz") == 1 && fx_itemsize_of("c128") == 16);
static_assert(!fx_itemsize_of("float32") && !fx_itemsize_of("half") && !fx_itemsize_of(""));
static_assert(find_dtype("half")->torch_name == "float16" && find_dtype("f16") == find_dtype("float16"));
static_assert(find_dtype("long")->fx_name == "i64");
static_assert(find_fx_dtype("bool") == nullptr && find_fx_dtype("b8")->torch_name == "bool");
static_assert(detail::dtype_table_is_consistent());

TEST_CASE("dtype table: every name of every dtype finds it, and no name is shared", "[dtype]") {
  std::set<std::string_view> names;
  for (const DtypeInfo& d : dtypes) {
    INFO(d.torch_name);
    CHECK(find_dtype(d.torch_name) == &d);
    CHECK(find_dtype(d.fx_name) == &d);
    CHECK(find_fx_dtype(d.fx_name) == &d);
    CHECK(find_fx_dtype(d.torch_name) == nullptr);  // no torch name doubles as an FX name
    CHECK(itemsize_of(d.torch_name) == d.itemsize);
    CHECK(itemsize_of(d.fx_name) == d.itemsize);
    CHECK(fx_itemsize_of(d.fx_name) == d.itemsize);
    CHECK(names.insert(d.torch_name).second);
    CHECK(names.insert(d.fx_name).second);
    if (!d.alias.empty()) {
      CHECK(find_dtype(d.alias) == &d);
      CHECK(find_fx_dtype(d.alias) == nullptr);
      CHECK(names.insert(d.alias).second);
    }
    // FX's short name is the size in bits for the plain types: f32, i64, u8, c64, b8
    if (d.fx_name.size() <= 4 && !d.fx_name.starts_with("bf") && !d.fx_name.starts_with("f8")) {
      const std::string bits = std::to_string(d.itemsize * 8);
      CHECK(d.fx_name.substr(1) == bits);
    }
  }
  CHECK(dtypes.size() == 20);
}
