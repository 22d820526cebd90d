// Hardening of the `ctshard` tool: the instances of each fault kind found by the sanitizer build
// and the fuzzers, with the outcome asserted (a clean error, or the correct value), and the
// bounded readers (FX text, --args JSON, @FILE / stdin arguments).

#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "run_tool.hpp"

namespace {

using Catch::Matchers::Contains;

/// Writes `text` to a file in the temporary directory and returns its path.
std::string temp_file(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / ("ctshard_hardening_" + name);
  std::ofstream(path, std::ios::binary) << text;
  return path.string();
}

}  // namespace

TEST_CASE("hardening cli: an equation over two operands given one tensor is a clean error", "[cli][hardening]") {
  int status = 0;
  const std::string out = run_tool_status("table --op 'einsum:ij,jk->ik' --shapes 4x8 --mesh 2 --inputs R", status);
  CHECK(status == 1);
  CHECK(out == "error: ctshard: aten.einsum.default: takes 2 tensor inputs, got 1\n");
}

TEST_CASE("hardening cli: sizes whose products overflow int64 are refused", "[cli][hardening]") {
  int status = 0;
  // view sizes that agree with the input only modulo 2^64 (this never returned)
  std::string out =
      run_tool_status("table --op aten.view.default --shapes 4294967296 --mesh 2 --inputs R --args '[[4294967296, 4294967297]]'", status);
  CHECK(status == 1);
  CHECK(out == "error: ctshard: view: product of the target sizes: 4294967296 * 4294967297 overflows a 64-bit size\n");
  // a tensor of more than 2^63 elements (its byte count used to wrap into a negative cost)
  out = run_tool_status("cost --shape 3037000500x3037000500 --mesh 2 --from 'S(0)' --to R", status);
  CHECK(status == 1);
  CHECK(out == "error: ctshard: TensorShape: product of sizes: 3037000500 * 3037000500 overflows a 64-bit size\n");
  // the largest square that fits: 9223372030926249001 elements x 4 bytes, priced positive
  out = run_tool_status("cost --shape 3037000499x3037000499 --mesh 2 --from 'S(0)' --to R --json", status);
  REQUIRE(status == 0);
  const auto j = nlohmann::json::parse(out);
  CHECK(j["bytes"].get<double>() == Approx(3.6893488123704996e19));
  CHECK(j["cost_us"].get<double>() > 1.9e14);
  CHECK(j["cost_us"].get<double>() < 2.0e14);
  // a mesh of more than 2^63 devices
  out = run_tool_status("cost --shape 8 --mesh 999999999x999999999x999999999 --from RRR --to RRR", status);
  CHECK(status == 1);
  CHECK_THAT(out, Contains("MeshTopology: number of devices: 999999998000000001 * 999999999 overflows a 64-bit size"));
  // split into more outputs than a rule may have
  out = run_tool_status("table --op aten.split.Tensor --shapes 1099511627776 --mesh 2 --inputs R --args '[1]'", status);
  CHECK(status == 1);
  CHECK_THAT(out, Contains("more outputs than max_rule_operands (65536)"));
}

TEST_CASE("hardening cli: FX arguments nested 30,000 levels deep are a clean error", "[cli][hardening]") {
  const int n = 30000;
  std::string arg;
  for (int i = 0; i < n; ++i) arg += "a[";
  arg += "0";
  arg += std::string(static_cast<std::size_t>(n), ']');
  const std::string path =
      temp_file("deep_index.fx.txt", "def forward(self, a: \"f32[4]\"):\n    b = torch.ops.aten.add.Tensor(" + arg + ", a)\n    return b\n");
  int status = 0;
  const std::string out = run_tool_status("plan '" + path + "' --mesh 2", status);
  CHECK(status == 1);
  CHECK_THAT(out, Contains(":2: lists and indices nested too deeply (at most 64 levels)"));
  // the same with lists
  std::string lists = std::string(static_cast<std::size_t>(n), '[') + std::string(static_cast<std::size_t>(n), ']');
  const std::string path2 =
      temp_file("deep_list.fx.txt", "def forward(self, a: \"f32[4]\"):\n    b = torch.ops.aten.view.default(a, " + lists + ")\n    return b\n");
  CHECK_THAT(run_tool_status("plan '" + path2 + "' --mesh 2", status), Contains("lists and indices nested too deeply"));
  CHECK(status == 1);
}

TEST_CASE("hardening cli: table --args / --kwargs from a file or standard input", "[cli][hardening]") {
  int status = 0;
  const std::string inline_out =
      run_tool_status("table --op aten.view.default --shapes 32 --mesh 2 --inputs 'S(0)' --args '[[4, 8]]' --json", status);
  REQUIRE(status == 0);
  const std::string args = temp_file("args.json", "[[4, 8]]\n");
  CHECK(run_tool_status("table --op aten.view.default --shapes 32 --mesh 2 --inputs 'S(0)' --args @'" + args + "' --json", status) == inline_out);
  CHECK(status == 0);
  CHECK(run_tool_status("table --op aten.view.default --shapes 32 --mesh 2 --inputs 'S(0)' --args - --json < '" + args + "'", status) == inline_out);
  CHECK(status == 0);
  const auto j = nlohmann::json::parse(inline_out);
  CHECK(j["strategies"][j["choice"]["index"].get<std::size_t>()]["out"] == "S(0)");  // [32] S(0) viewed as [4, 8]: S(0)
  // kwargs from a file
  const std::string kwargs = temp_file("kwargs.json", "{\"keepdim\": true}");
  const std::string kw_inline = run_tool_status(
      "table --op aten.sum.dim_IntList --shapes 4x8 --mesh 2 --inputs 'S(0)' --args '[[1]]' --kwargs '{\"keepdim\": true}' --json", status);
  REQUIRE(status == 0);
  CHECK(run_tool_status("table --op aten.sum.dim_IntList --shapes 4x8 --mesh 2 --inputs 'S(0)' --args '[[1]]' --kwargs @'" + kwargs + "' --json",
                        status) == kw_inline);
  // an argument list larger than the command-line limit: 200,000 sizes of 1 (1.2 MB of text)
  std::string big = "[[32";
  for (int i = 0; i < 200000; ++i) big += ", 1";
  big += "]]";
  const std::string big_path = temp_file("big_args.json", big);
  const std::string big_out = run_tool_status("table --op aten.view.default --shapes 32 --mesh 2 --inputs R --args @'" + big_path + "'", status);
  CHECK(status == 1);
  CHECK_THAT(big_out, Contains("target rank 200001 exceeds max_tensor_dims"));
  // errors: missing file, both options on stdin, nesting past the limit, bad JSON (message cut)
  CHECK_THAT(run_tool_status("table --op mm --shapes 4x4,4x4 --mesh 2 --inputs 'R;R' --args @/nonexistent/args.json", status),
             Contains("error: ctshard table: --args: cannot open '/nonexistent/args.json'"));
  CHECK(status == 1);
  CHECK_THAT(run_tool_status("table --op mm --shapes 4x4,4x4 --mesh 2 --inputs 'R;R' --args - --kwargs - < /dev/null", status),
             Contains("--args and --kwargs cannot both read standard input"));
  const std::string deep = temp_file("deep.json", std::string(100000, '[') + std::string(100000, ']'));
  CHECK(run_tool_status("table --op mm --shapes 4x4,4x4 --mesh 2 --inputs 'R;R' --args @'" + deep + "'", status) ==
        "error: ctshard table: --args nests lists deeper than 64 levels\n");
  std::string bad_text(1002, '1');  // built in place: g++ 12 warns (-Wrestrict, bug 105329) on "[" + std::string(...)
  bad_text.front() = '[';
  bad_text.back() = 'x';
  const std::string bad = temp_file("bad.json", bad_text);
  const std::string bad_out = run_tool_status("table --op mm --shapes 4x4,4x4 --mesh 2 --inputs 'R;R' --args @'" + bad + "'", status);
  CHECK(status == 1);
  CHECK_THAT(bad_out, Contains("--args is not valid JSON ('[111"));
  CHECK(bad_out.size() < 600);
}

#include "ctshard/fx/reader.hpp"

TEST_CASE("hardening fx: the reader's resource limits give parse errors", "[fx][hardening]") {
  using ctshard::fx::parse_error;
  using ctshard::fx::parse_fx_graph;
  const std::string head = "def forward(self, a: \"f32[4]\"):\n";
  // a line longer than max_line_bytes
  std::string long_line = head + "    b = torch.ops.aten.view.default(a, [4" + std::string(ctshard::fx::max_line_bytes, ' ') + "])\n    return b\n";
  CHECK_THROWS_WITH(parse_fx_graph(long_line), Contains("<input>:2: line of 1048619 bytes (at most 1048576)"));
  // a signature spanning more than max_statement_lines lines
  std::string sig = "def forward(self,\n";
  for (std::size_t i = 0; i < ctshard::fx::max_statement_lines; ++i) sig += "\n";
  sig += "    a):\n    return a\n";
  CHECK_THROWS_WITH(parse_fx_graph(sig), Contains("<input>:1: the forward signature spans more than 100000 lines"));
  // a call with more than max_call_arguments arguments
  std::string call = head + "    b = torch.ops.aten.add.Tensor(a";
  for (std::size_t i = 0; i < ctshard::fx::max_call_arguments; ++i) call += ", 1";
  call += ")\n    return b\n";
  CHECK_THROWS_WITH(parse_fx_graph(call), Contains("more than 4096 arguments in one call"));
  // sparse huge getitem indices on many parents (2^20 + 82 nodes of budget, 65536 slots each):
  // the 17th parent passes the budget
  std::string items = "def forward(self, a: \"f32[4]\"):\n";
  for (int p = 0; p < 40; ++p) {
    items += "    s" + std::to_string(p) + " = torch.ops.aten.split.Tensor(a, 1)\n";
    items += "    g" + std::to_string(p) + ": \"f32[1]\" = s" + std::to_string(p) + "[65535]\n";
  }
  items += "    return a\n";
  CHECK_THROWS_WITH(parse_fx_graph(items), Contains("getitem indices make output lists of more than 1048658 entries in total"));
  // below the limits the same shapes read: 64 levels of nesting
  const std::string nested =
      head + "    b = torch.ops.aten.view.default(a, " + std::string(63, '[') + "4" + std::string(63, ']') + ")\n    return b\n";
  CHECK(parse_fx_graph(nested).nodes.size() == 3);
  const std::string too_nested =
      head + "    b = torch.ops.aten.view.default(a, " + std::string(65, '[') + "4" + std::string(65, ']') + ")\n    return b\n";
  CHECK_THROWS_AS(parse_fx_graph(too_nested), parse_error);
}
