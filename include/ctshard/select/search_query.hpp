#pragma once
/// \file select/search_query.hpp
/// One selection request: the global metas and current specs of an op's tensor inputs, validated
/// against the op and the mesh once, at the entry point, so the searches never re-check them.

#include <cstddef>
#include <span>
#include <string>

#include "ctshard/core/spec.hpp"
#include "ctshard/core/tensor_shape.hpp"
#include "ctshard/cost/mesh_topology.hpp"
#include "ctshard/error.hpp"

namespace ctshard {

/// The inputs of one call: per tensor input its global meta (shape, itemsize) and its current
/// spec. A view: the spans must outlive the query. Built only by `make`, so a query in hand is
/// valid (right number of inputs, one placement per mesh dim, no Shard of a missing tensor dim).
class SearchQuery {
 public:
  /// Validates and wraps. Throws ctshard::error when the counts differ from `num_inputs`, a spec's
  /// rank differs from the mesh's, or a spec shards a tensor dim its input lacks.
  [[nodiscard]] static SearchQuery make(std::span<const TensorMeta> metas, std::span<const Spec> specs, std::size_t num_inputs,
                                        const MeshTopology& mesh) {
    if (metas.size() != num_inputs || specs.size() != num_inputs)
      check_tensor_count("ctshard::StrategyEnumerator", num_inputs, num_inputs, metas.size() != num_inputs ? metas.size() : specs.size(),
                         " (" + std::to_string(metas.size()) + " shapes, " + std::to_string(specs.size()) + " specs)");
    for (std::size_t i = 0; i < specs.size(); ++i) {
      const Spec& spec = specs[i];
      if (spec.size() != mesh.size())
        throw error("ctshard::StrategyEnumerator: input spec '" + to_string(spec) + "' has " + std::to_string(spec.size()) + " placements for a " +
                    std::to_string(mesh.size()) + "-dim mesh");
      for (const Placement& pl : spec)
        if (pl.is_any_shard() && pl.dim >= metas[i].shape.rank)  // the message is built only on failure
          check_shard_dims(spec, metas[i].shape, "ctshard::StrategyEnumerator: input " + std::to_string(i));
    }
    return SearchQuery(metas, specs);
  }

  /// Tensor inputs.
  [[nodiscard]] std::size_t num_inputs() const noexcept { return specs_.size(); }
  /// Global meta and current spec of input `i` (unchecked).
  [[nodiscard]] const TensorMeta& meta(std::size_t i) const noexcept { return metas_[i]; }
  [[nodiscard]] const Spec& spec(std::size_t i) const noexcept { return specs_[i]; }
  [[nodiscard]] std::span<const TensorMeta> metas() const noexcept { return metas_; }
  [[nodiscard]] std::span<const Spec> specs() const noexcept { return specs_; }

 private:
  SearchQuery(std::span<const TensorMeta> metas, std::span<const Spec> specs) noexcept : metas_(metas), specs_(specs) {}
  std::span<const TensorMeta> metas_;
  std::span<const Spec> specs_;
};

}  // namespace ctshard
