// `ctshard table` (command.hpp): one op's filtered strategy table with per-input costs and the
// chosen row.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include "command.hpp"
#include "ctshard/error.hpp"
#include "ctshard/report/commands.hpp"
#include "ctshard/report/rules_file.hpp"

namespace ctshard::tool {
namespace {

/// The text of --args / --kwargs: `@FILE` reads FILE, `-` reads standard input (for argument
/// lists beyond the system's command-line limit), anything else is the JSON itself. Throws
/// ctshard::error for an unreadable file or text past max_arg_text_bytes.
std::string json_option_text(const char* option, const std::string& text) {
  if (text != "-" && !text.starts_with("@")) return text;
  const std::string name = text == "-" ? std::string("standard input") : text.substr(1);
  std::ifstream file;
  if (text != "-") {
    if (std::filesystem::is_directory(name)) throw error(std::string("ctshard table: ") + option + ": '" + name + "' is a directory");
    file.open(name, std::ios::binary);
    if (!file) throw error(std::string("ctshard table: ") + option + ": cannot open '" + name + "'");
  }
  std::istream& in = text == "-" ? std::cin : file;
  std::string out;
  char buf[65536];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    out.append(buf, static_cast<std::size_t>(in.gcount()));
    if (out.size() > report::max_arg_text_bytes)
      throw error(std::string("ctshard table: ") + option + ": " + name + " is longer than " + std::to_string(report::max_arg_text_bytes) + " bytes");
  }
  if (in.bad()) throw error(std::string("ctshard table: ") + option + ": cannot read " + name);
  return out;
}

class TableCommand final : public Command {
 public:
  explicit TableCommand(CLI::App& app) {
    cmd_ = app.add_subcommand("table", "one op's filtered strategy table with per-input costs and the chosen row");
    cmd_->add_option("--op", options_.op, "mm, bmm, addmm, baddbmm, dot, einsum:EQ, pointwise:NAME, or an op name (ctshard ops)")->required();
    cmd_->add_option("--shapes", shapes_, "global shapes of the tensor inputs: 6x8,8x12 (0-d: scalar)")->required();
    cmd_->add_option("--mesh", mesh_, "mesh sizes: 2x4")->required();
    cmd_->add_option("--inputs", inputs_, "current spec of each input: \"S(0)R;RS(1)\"")->required();
    cmd_->add_option("--devices-per-host", options_.devices_per_host, "devices per host")->capture_default_str();
    cmd_->add_option("--dtype", dtype_, "element type: float32, bfloat16, ...; or one per tensor: float32,int64")->capture_default_str();
    linearity_opt_ = cmd_->add_option("--einsum-linearity", options_.einsum_linearity,
                                      "dtensor: einsum Partial rows exactly as DTensor (reference cases); sound: without DTensor's unsound "
                                      "all-Partial rows of batch-only einsums")
                         ->check(CLI::IsMember({"dtensor", "sound"}))
                         ->capture_default_str();
    sound_opt_ = cmd_->add_flag("--sound", sound_, "same as --einsum-linearity sound");
    passthrough_opt_ = add_partial_passthrough_option(cmd_, options_.partial_passthrough);
    add_rule_set_option(cmd_, options_.rule_set);
    add_cost_model_option(cmd_, cost_model_);
    cmd_->add_option("--args", args_,
                     "non-tensor arguments after the tensors, as a JSON array: '[[24, 8]]'; with \"$i\" for tensor i the array is "
                     "the whole argument list: '[\"$0\", 1, \"$1\"]'; @FILE reads the JSON from FILE, - from standard input")
        ->capture_default_str();
    cmd_->add_option("--kwargs", kwargs_, "keyword arguments as a JSON object: '{\"keepdim\": true}'; @FILE or - as for --args")
        ->capture_default_str();
    add_algo_option(cmd_, options_.algo,
                    "enumerate: list every surviving row (at most 2^20 candidate rows); search: the same document with the chosen row "
                    "only, found by exact search on any table");
    cmd_->add_option("--rules", rules_path_,
                     "JSON file of rules for the user's own ops ({\"rules\": [{\"op\": ..., \"rows\" or \"kind\": ...}]}, "
                     "docs/custom_rules.md); they join (or replace) the built-in rules");
    cmd_->add_flag("--json", json_, "machine-readable output");
  }
  bool chosen() const override { return static_cast<bool>(*cmd_); }
  int run() override {
    options_.shapes = report::parse_shapes(shapes_);
    options_.mesh = report::parse_mesh(mesh_);
    options_.inputs = report::split(inputs_, ';');
    options_.dtypes = report::split(dtype_, ',');
    if (sound_) options_.einsum_linearity = "sound";
    check_rule_set("table", options_.rule_set, options_.einsum_linearity, linearity_opt_->count() > 0 || sound_opt_->count() > 0,
                   options_.partial_passthrough, passthrough_opt_->count() > 0);
    if (args_ == "-" && kwargs_ == "-") throw error("ctshard table: --args and --kwargs cannot both read standard input");
    options_.args = report::parse_arg_json("--args", json_option_text("--args", args_));
    options_.kwargs = report::parse_arg_json("--kwargs", json_option_text("--kwargs", kwargs_));
    options_.cost_model = report::parse_cost_model(cost_model_);
    std::optional<OpRegistry> with_rules;
    if (!rules_path_.empty()) {
      with_rules = report::with_user_rules(report::registry_for(options_.einsum_linearity, options_.partial_passthrough, options_.rule_set),
                                           report::read_rules_file(rules_path_));
      options_.registry = &*with_rules;
    }
    const auto doc = report::table_json(options_);
    if (json_) std::cout << report::json_text(doc) << '\n';
    else report::print_table(doc, std::cout);
    return 0;
  }

 private:
  CLI::App* cmd_ = nullptr;
  CLI::Option *linearity_opt_ = nullptr, *sound_opt_ = nullptr, *passthrough_opt_ = nullptr;
  report::TableOptions options_;
  std::string shapes_, mesh_, inputs_, rules_path_, dtype_ = "float32", args_ = "[]", kwargs_ = "{}", cost_model_ = "dtensor";
  bool sound_ = false, json_ = false;
};

}  // namespace

std::unique_ptr<Command> add_table_command(CLI::App& app) { return std::make_unique<TableCommand>(app); }

}  // namespace ctshard::tool
