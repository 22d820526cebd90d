// libFuzzer target: `table --args` / `--kwargs` JSON. The first byte picks the op (from a set of
// ops with interesting arguments) and shapes; the rest is split at the first NUL into the
// --args text and the --kwargs text, parsed as the command line does (parse_arg_json) and run
// through choice_json. Only ctshard::error may come out.
#include <string>

#include "ctshard/report/commands.hpp"
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  struct Case {
    const char* op;
    std::vector<std::vector<std::int64_t>> shapes;
  };
  static const Case cases[] = {
      {"aten.view.default", {{4, 8}}},
      {"aten.sum.dim_IntList", {{4, 8}}},
      {"aten.cat.default", {{4, 6}, {4, 6}}},
      {"aten.split.Tensor", {{8, 4}}},
      {"aten.index.Tensor", {{8, 4}, {3}}},
      {"einsum:ij,jk->ik", {{4, 8}, {8, 2}}},
      {"aten.permute.default", {{2, 3, 4}}},
      {"aten.native_layer_norm.default", {{4, 8}, {8}, {8}}},
      {"aten.as_strided.default", {{4, 8}}},
      {"aten.convolution.default", {{2, 4, 8, 8}, {6, 4, 3, 3}}},
      {"aten.expand.default", {{1, 8}}},
      {"aten.new_zeros.default", {{4, 8}}},
      {"aten.scatter.value", {{4, 8}, {4, 8}}},
      {"aten.slice.Tensor", {{8, 4}}},
      {"aten.embedding.default", {{16, 8}, {4}}},
      {"aten._grouped_mm.default", {{8, 4}, {2, 4, 6}, {2}}},
  };
  const Case& c = cases[data[0] % (sizeof cases / sizeof cases[0])];
  const std::string_view rest = ctshard::fuzz::as_text(data + 1, size - 1);
  const std::size_t nul = rest.find('\0');
  const std::string args(rest.substr(0, nul));
  const std::string kwargs = nul == std::string_view::npos ? std::string("{}") : std::string(rest.substr(nul + 1));
  ctshard::report::TableOptions o;
  o.op = c.op;
  o.shapes = c.shapes;
  o.mesh = (data[0] & 0x80u) != 0 ? std::vector<std::int64_t>{2, 2} : std::vector<std::int64_t>{2};
  o.inputs.assign(c.shapes.size(), o.mesh.size() == 2 ? "RR" : "R");
  try {
    o.args = ctshard::report::parse_arg_json("--args", args);
    o.kwargs = ctshard::report::parse_arg_json("--kwargs", kwargs);
    (void)ctshard::report::json_text(ctshard::report::choice_json(o));
  } catch (const ctshard::error&) {}
  return 0;
}
