// Trial counts, sweep strides and wall-clock limits for the heaviest tests. Under AddressSanitizer (the sanitizer
// build that scripts/test.sh runs beside the Release suite) such a test draws a tenth of its
// random problems: the same generators, the same properties and the same assertions, checked on
// fewer draws, so that the sanitizer build fits CI's time (one 8-dim-mesh search test takes 4 s
// in Release and 200 s under ASan + UBSan).
#pragma once

#include <cstddef>

namespace ctshard::test {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool under_sanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool under_sanitizer = true;
#else
inline constexpr bool under_sanitizer = false;
#endif
#else
inline constexpr bool under_sanitizer = false;
#endif

/// `n` in a normal build, `n / 10` (at least 1) under AddressSanitizer: for trial counts and for
/// the thresholds that grow with them.
constexpr std::size_t scaled(std::size_t n) { return under_sanitizer ? (n / 10 > 0 ? n / 10 : 1) : n; }

/// Every case in a normal build, every 10th under AddressSanitizer: for sweeps over a fixed list
/// (e.g. the reference cases through the tool, one process per case).
inline constexpr std::size_t sample_stride = under_sanitizer ? 10 : 1;

/// A wall-clock limit that a test asserts: `seconds` in a normal build, 20x under AddressSanitizer
/// (the speed claims themselves are measured in benchmarks, on the Release build).
constexpr double time_limit_s(double seconds) { return under_sanitizer ? 20 * seconds : seconds; }

}  // namespace ctshard::test
