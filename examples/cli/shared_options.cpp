// Options several subcommands share, and the request deadline (command.hpp).
#include "command.hpp"

#include "ctshard/error.hpp"

namespace ctshard::tool {

solve::Deadline deadline_after(Clock::time_point started, double seconds) {
  return solve::Deadline(started + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds)));
}

void add_cost_model_option(CLI::App* cmd, std::string& model) {
  cmd->add_option("--cost-model", model,
                  "dtensor: DTensor's redistribute_cost (greedy order, +1 us per all-to-all, 6.6 us even on a size-1 mesh dim); "
                  "consistent: the cheapest sequence of the same collectives (additive, triangle inequality)")
      ->check(CLI::IsMember({"dtensor", "consistent"}))
      ->capture_default_str();
}

void add_algo_option(CLI::App* cmd, std::string& algo, const char* what) {
  cmd->add_option("--algo", algo, what)->check(CLI::IsMember({"search", "enumerate"}))->capture_default_str();
}

CLI::Option* add_partial_passthrough_option(CLI::App* cmd, std::string& passthrough) {
  return cmd
      ->add_option("--partial-passthrough", passthrough,
                   "ctshard: a Partial input passes through ops linear in it (clone, casts, activation backwards, "
                   "native_layer_norm_backward); dtensor: those ops take no Partial input, as in DTensor 2.13 (for plans "
                   "DTensor's own op dispatch executes)")
      ->check(CLI::IsMember({"ctshard", "dtensor"}))
      ->capture_default_str();
}

void add_rule_set_option(CLI::App* cmd, std::string& rule_set) {
  cmd->add_option("--rule-set", rule_set,
                  "ctshard: ctshard's rules (DTensor's semantics with sound extra rows, without DTensor's unsound ones); "
                  "dtensor: exactly DTensor 2.13's rows for every op it has a rule for, unsound ones included, following "
                  "the current inputs where DTensor's op-strategy functions do (for plans DTensor's own op dispatch "
                  "executes; implies --einsum-linearity dtensor --partial-passthrough dtensor)")
      ->check(CLI::IsMember({"ctshard", "dtensor"}))
      ->capture_default_str();
}

void check_rule_set(const std::string& command, const std::string& rule_set, const std::string& linearity, bool linearity_given,
                    const std::string& passthrough, bool passthrough_given) {
  if (rule_set != "dtensor") return;
  if (linearity_given && linearity != "dtensor")
    throw error("ctshard " + command + ": --rule-set dtensor implies --einsum-linearity dtensor (DTensor's rows); drop --einsum-linearity " +
                linearity);
  if (passthrough_given && passthrough != "dtensor")
    throw error("ctshard " + command + ": --rule-set dtensor implies --partial-passthrough dtensor (DTensor's rows); drop --partial-passthrough " +
                passthrough);
}

}  // namespace ctshard::tool
