#include <iomanip>
#include <ostream>
#include <span>

#include "ctshard/report/commands.hpp"
#include "ctshard/report/op_catalog.hpp"
#include "ctshard/runtime.hpp"

namespace ctshard::report {

nlohmann::json cost_json(const CostOptions& o) {
  const MeshTopology mesh = MeshTopology::build(o.mesh, o.devices_per_host, {}, o.cost_model);
  const TensorMeta meta{TensorShape(std::span<const std::int64_t>(o.shape)), dtype_itemsize(o.dtype)};
  const Spec from = parse_spec(o.from), to = parse_spec(o.to);
  const RedistributePlan plan = redistribute_plan(from, to, meta, mesh);
  nlohmann::json j;
  j["shape"] = shape_text(o.shape);
  j["mesh"] = o.mesh;
  j["devices_per_host"] = o.devices_per_host;
  j["cost_model"] = to_string(o.cost_model);
  j["from"] = to_string(from);
  j["to"] = to_string(to);
  j["bytes"] = meta.bytes();
  j["steps"] = nlohmann::json::array();
  for (const auto& s : plan)
    j["steps"].push_back({{"mesh_dim", s.mesh_dim},
                          {"from", to_string(s.from)},
                          {"to", to_string(s.to)},
                          {"collective", std::string(to_string(s.collective))},
                          {"bytes", s.comm_bytes},
                          {"cost_us", cost_value(s.cost_us)}});
  j["cost_us"] = cost_value(plan.cost_us);
  return j;
}

void print_cost(const nlohmann::json& c, std::ostream& out) {
  out << c["from"].get<std::string>() << " -> " << c["to"].get<std::string>() << " on mesh " << c["mesh"].dump() << " (" << c["bytes"].get<double>()
      << " bytes)\n";
  for (const auto& s : c["steps"]) {
    out << "  mesh dim " << s["mesh_dim"].get<std::size_t>() << ": " << s["from"].get<std::string>() << " -> " << s["to"].get<std::string>() << "  "
        << s["collective"].get<std::string>() << "  " << s["bytes"].get<double>() << " bytes  ";
    if (s["cost_us"].is_string()) out << "inf";
    else out << std::fixed << std::setprecision(3) << s["cost_us"].get<double>() << std::defaultfloat;
    out << " us\n";
  }
  out << "total: ";
  if (c["cost_us"].is_string()) out << "inf";
  else out << std::fixed << std::setprecision(6) << c["cost_us"].get<double>() << std::defaultfloat;
  out << " us\n";
}

}  // namespace ctshard::report
