// tests/sim/sim_tensor.hpp — the simulated device mesh: cutting a global tensor into per-device
// local tensors by a Spec (DTensor semantics, mesh dims 0..N-1 in order) and reassembling an output
// from its local tensors (mesh dims N-1..0). Tensors are xt::xarray<double>; bool and integer
// tensors are stored as doubles.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <xtensor/xarray.hpp>

#include "ctshard/core/spec.hpp"
#include "ctshard/core/tensor_shape.hpp"
#include "ctshard/cost/mesh_topology.hpp"

namespace ctshard::sim {

using Tensor = xt::xarray<double>;
using Shape = std::vector<std::size_t>;
using Rng = std::mt19937_64;

/// Values a random input takes: real in [-2, 2]; positive in [0.5, 2]; boolean 0/1; small_int
/// integers 0..3; index integers 0..bound-1 (embedding ids, gather indices).
enum class Domain : std::uint8_t { real, positive, boolean, small_int, index };

/// A device mesh; devices are numbered row-major over their coordinates (mesh dim 0 slowest).
struct Mesh {
  std::vector<std::int64_t> sizes;

  [[nodiscard]] std::size_t ndim() const noexcept { return sizes.size(); }
  [[nodiscard]] std::size_t size(std::size_t mesh_dim) const noexcept { return static_cast<std::size_t>(sizes[mesh_dim]); }
  [[nodiscard]] std::size_t num_devices() const noexcept;
  /// Coordinates of device `device` (one per mesh dim).
  [[nodiscard]] std::vector<std::size_t> coords(std::size_t device) const;
  /// "2", "3", "2x2".
  [[nodiscard]] std::string name() const;
  [[nodiscard]] MeshTopology topology() const;
};

[[nodiscard]] Shape shape_of(const Tensor& t);
[[nodiscard]] std::string to_string(const Shape& shape);
/// ctshard's TensorShape of a simulator shape, and back.
[[nodiscard]] TensorShape to_tensor_shape(const Shape& shape);
[[nodiscard]] Shape from_tensor_shape(const TensorShape& shape);

/// torch.chunk(n) on a dim of `size`: chunk i covers [begin, end) with chunk size ceil(size / n);
/// trailing chunks may be smaller or empty (DTensor pads missing chunks with empty tensors).
[[nodiscard]] std::pair<std::size_t, std::size_t> chunk_bounds(std::size_t size, std::size_t n, std::size_t i);

/// DTensor `_StridedShard(dim, split_factor)._split_tensor`: a dim of `size` is chunked into
/// `split_factor` blocks, each block into n chunks; device i holds chunk i of every block, in block
/// order. The [begin, end) ranges of device i, one per block.
[[nodiscard]] std::vector<std::pair<std::size_t, std::size_t>> strided_bounds(std::size_t size, std::size_t split_factor, std::size_t n,
                                                                              std::size_t i);

/// Elements [begin, end) of tensor dim `dim` (a copy).
[[nodiscard]] Tensor slice_dim(const Tensor& t, std::size_t dim, std::size_t begin, std::size_t end);
/// Concatenation along `dim`; every part has the same rank and the same sizes off `dim`.
/// Throws ctshard::error when the parts differ outside `dim` (checked before any element is read).
[[nodiscard]] Tensor concat(const std::vector<Tensor>& parts, std::size_t dim);

/// Local tensors of `global` placed by `spec` on `mesh`, one per device (row-major). Mesh dims are
/// applied in order 0..N-1 to the piece produced so far: Shard(d) = torch.chunk on dim d,
/// StridedShard(d, sf) = `strided_bounds` pieces of dim d concatenated,
/// Replicate = copy, Partial(sum) = random parts summing to the value, Partial(avg) = random parts
/// whose mean is the value, Partial(max) = parts <= the value with one random rank (per element)
/// holding it exactly, Partial(min) symmetrically. Real max/min parts spread from just below the
/// value to well past zero; Domain::positive parts stay positive; integer domains get integer
/// parts (boolean max/min parts stay 0/1). Throws
/// ctshard::error for a Shard or StridedShard on a dim the tensor lacks.
[[nodiscard]] std::vector<Tensor> cut(const Tensor& global, const Spec& spec, const Mesh& mesh, Rng& rng, Domain domain = Domain::real);

/// Shape of the local tensor that `spec` gives the device at `coords` for a global `shape`.
[[nodiscard]] Shape local_shape(const Shape& global, const Spec& spec, const Mesh& mesh, std::span<const std::size_t> coords);

/// Result of reassembling: the global value, or why the local tensors do not form one.
struct Reassembled {
  std::optional<Tensor> value;
  std::string error;
};

/// Inverse of `cut` for an output: mesh dims from last to first, Shard = concatenate (local sizes
/// must be the torch.chunk sizes of the total), StridedShard = interleave the blocks back (local
/// sizes must be the strided chunk sizes of the total), Partial(op) = reduce, Replicate = all copies must
/// agree (relative tolerance `rtol`), else an error naming the mesh dim.
[[nodiscard]] Reassembled reassemble(std::vector<Tensor> locals, const Spec& spec, const Mesh& mesh, double rtol);

/// Same shape and every element equal within `rtol` relative (absolute 1e-12 near zero); NaN
/// equals NaN, equal infinities are equal. On a mismatch `why` (when given) names the first
/// differing element.
[[nodiscard]] bool allclose(const Tensor& a, const Tensor& b, double rtol, std::string* why = nullptr);

/// Short text of a small tensor's values: "[[1, 2], [3, 4]]" (at most `max_elems` numbers).
[[nodiscard]] std::string format_values(const Tensor& t, std::size_t max_elems = 40);

}  // namespace ctshard::sim
