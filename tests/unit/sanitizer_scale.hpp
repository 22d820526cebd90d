// Trial counts for the heaviest randomized property tests. Under AddressSanitizer (the sanitizer
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

}  // namespace ctshard::test
