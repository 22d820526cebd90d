// One dtype table for the FX reader and `ctshard table --dtype` (ctshard/core/dtype.hpp): a dtype
// a graph can carry is one `table` accepts, by its FX name and by torch's names, with one size.

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "ctshard/core/dtype.hpp"
#include "ctshard/fx/reader.hpp"
#include "ctshard/report/op_catalog.hpp"
#include "run_tool.hpp"

namespace {

/// `table --json` of mm [8, 16] x [16, 4] with `dtype`; the document's itemsize, or -1 with the
/// tool's output in `out` when it is no JSON document.
long table_itemsize(const std::string& dtype, std::string& out) {
  int status = 0;
  out = run_tool_status("table --op mm --shapes 8x16,16x4 --mesh 2 --inputs 'S(0);R' --json --dtype '" + dtype + "'", status);
  if (status != 0) return -1;
  return nlohmann::json::parse(out).at("itemsize").get<long>();
}

}  // namespace

TEST_CASE("table --dtype: float8_e4m3fnuz, which graphs carry as f8e4m3fnuz, is one byte", "[dtype][table]") {
  std::string out;
  CHECK(table_itemsize("float8_e4m3fnuz", out) == 1);
  CHECK(table_itemsize("f8e4m3fnuz", out) == 1);
  CHECK(table_itemsize("float8_e5m2fnuz", out) == 1);
  CHECK(ctshard::fx::dtype_itemsize("f8e4m3fnuz") == 1);
  int status = 0;
  CHECK(run_tool_status("table --op mm --shapes 8x16,16x4 --mesh 2 --inputs 'S(0);R' --dtype float31", status) ==
        "error: ctshard: unknown dtype 'float31'\n");
  CHECK(status == 1);
}

TEST_CASE("dtypes: every FX annotation dtype is a table --dtype, and every torch name and alias too, with the same size", "[dtype][table]") {
  for (const ctshard::DtypeInfo& d : ctshard::dtypes) {
    INFO(d.torch_name << " / " << d.fx_name);
    // the FX reader: the annotation name, not torch's
    REQUIRE(ctshard::fx::is_known_dtype(d.fx_name));
    CHECK(ctshard::fx::dtype_itemsize(d.fx_name) == d.itemsize);
    const auto type = ctshard::fx::parse_tensor_type(std::string(d.fx_name) + "[4, 2]");
    REQUIRE(type.has_value());
    CHECK(type->nbytes() == 8 * d.itemsize);
    CHECK_FALSE(ctshard::fx::is_known_dtype(d.torch_name));
    // table / cost: every name
    std::vector<std::string> names{std::string(d.torch_name), std::string(d.fx_name)};
    if (!d.alias.empty()) names.emplace_back(d.alias);
    for (const std::string& name : names) {
      INFO(name);
      CHECK(ctshard::report::dtype_itemsize(name) == d.itemsize);
      std::string out;
      CHECK(table_itemsize(name, out) == static_cast<long>(d.itemsize));
      UNSCOPED_INFO(out);
    }
  }
  CHECK_THROWS_WITH(ctshard::report::dtype_itemsize("float31"), "ctshard: unknown dtype 'float31'");
  CHECK_THROWS_WITH(ctshard::fx::dtype_itemsize("float32"), "ctshard::fx: unknown dtype 'float32'");
}
