#pragma once
/// \file solve/budget.hpp
/// The budgets of a whole request: one deadline (reading, candidate generation, cost-graph
/// build, reductions, search), the checked time limits it is made from, and a memory budget.
///
/// A time limit enters as a number of seconds (or milliseconds) from a user: NaN and negative
/// values are errors naming the field and the value; anything above `max_time_limit_s` (inf,
/// 1e300) is clamped to it, so `now + limit` never overflows the clock. Work that runs long
/// polls the deadline every few thousand steps (`DeadlinePoll`) and stops: the solver returns
/// its best answer so far with its gap, the cost-graph builder throws `time_limit_reached`,
/// which its caller turns into "the best plan so far" (docs/robustness.md, "One deadline").

#include <charconv>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

#include "ctshard/error.hpp"

namespace ctshard::solve {

/// A number as the shortest text that reads back to it ("0.1", "1e+300", "nan", "-inf"), for
/// messages that name a value.
[[nodiscard]] inline std::string number_text(double x) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, x);
  return std::string(buf, r.ptr);
}

/// The largest time limit, in seconds (10^6 s, about 11.6 days): larger limits, `inf` included,
/// are clamped to it.
inline constexpr double max_time_limit_s = 1e6;

/// Checks a user's time limit `seconds` (named `field` in the message, the caller included, e.g.
/// "ctshard iopddl: --time-limit-s"): returns it clamped to [0, max_time_limit_s]. Throws
/// ctshard::error naming the field and the value when it is NaN or negative.
[[nodiscard]] inline double checked_time_limit_s(double seconds, std::string_view field) {
  if (std::isnan(seconds) || seconds < 0) throw error(std::string(field) + " must be a number of seconds >= 0, got " + number_text(seconds));
  return seconds > max_time_limit_s ? max_time_limit_s : seconds;
}

/// Raised by work that polls a Deadline and finds it passed where no partial answer exists (the
/// cost-graph builder, the IOPDDL reader's limit construction). Not a ctshard::error: a handler of
/// bad input must not swallow it.
class time_limit_reached : public std::runtime_error {
 public:
  explicit time_limit_reached(const std::string& what) : std::runtime_error(what) {}
};

/// A point in time after which work stops; the default one never passes.
class Deadline {
 public:
  using clock = std::chrono::steady_clock;

  /// Never passes.
  Deadline() = default;
  /// At `at`.
  explicit Deadline(clock::time_point at) : at_(at), set_(true) {}

  /// `seconds` from now (checked_time_limit_s: NaN and negative values throw ctshard::error
  /// naming `field`; values above max_time_limit_s are clamped).
  [[nodiscard]] static Deadline after(double seconds, std::string_view field = "ctshard: time limit") {
    const double s = checked_time_limit_s(seconds, field);
    return Deadline(clock::now() + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(s)));
  }

  /// True when a time is set.
  [[nodiscard]] bool is_set() const noexcept { return set_; }
  /// The time (clock::time_point::max() when none is set).
  [[nodiscard]] clock::time_point at() const noexcept { return set_ ? at_ : clock::time_point::max(); }
  /// True once the time is past (reads the clock).
  [[nodiscard]] bool passed() const noexcept { return set_ && clock::now() > at_; }
  /// Seconds left (0 when passed; max_time_limit_s when none is set).
  [[nodiscard]] double remaining_s() const noexcept {
    if (!set_) return max_time_limit_s;
    const double s = std::chrono::duration<double>(at_ - clock::now()).count();
    return s > 0 ? s : 0;
  }
  /// The earlier of this deadline and `other`.
  [[nodiscard]] Deadline earlier(const Deadline& other) const noexcept {
    if (!other.set_) return *this;
    if (!set_) return other;
    return at_ <= other.at_ ? *this : other;
  }
  /// Throws time_limit_reached ("<what>: the time limit was reached") once passed.
  void check(std::string_view what) const {
    if (passed()) throw time_limit_reached(std::string(what) + ": the time limit was reached");
  }

 private:
  clock::time_point at_{};
  bool set_ = false;
};

/// Polls a deadline every `every` calls (the clock read costs ~20-30 ns; the work between two
/// reads should stay well below 1 % of the smallest limit).
class DeadlinePoll {
 public:
  explicit DeadlinePoll(const Deadline& d, std::size_t every = 1024) : d_(d), every_(every == 0 ? 1 : every) {}
  /// True once the deadline has passed (the clock is read on every `every`-th call; once
  /// passed, it stays passed).
  bool passed() {
    if (passed_) return true;
    if (++count_ < every_) return false;
    count_ = 0;
    passed_ = d_.passed();
    return passed_;
  }
  /// passed(), throwing time_limit_reached ("<what>: the time limit was reached") when true.
  void check(std::string_view what) {
    if (passed()) throw time_limit_reached(std::string(what) + ": the time limit was reached");
  }

 private:
  Deadline d_;
  std::size_t every_;
  std::size_t count_ = 0;
  bool passed_ = false;
};

/// Raised when a request needs more memory than its budget (`--max-memory-mib`). A
/// ctshard::error (bad input: the problem does not fit), distinguished so that code degrading
/// gracefully on other errors lets it through.
class memory_limit_reached : public error {
 public:
  explicit memory_limit_reached(const std::string& what) : error(what) {}
};

/// An amount of memory for messages: "512 bytes" below 1 MiB, else whole MiB rounded up
/// ("3 MiB"), so a small budget or graph never reads as "0 MiB".
[[nodiscard]] inline std::string memory_text(std::size_t bytes) {
  constexpr std::size_t mib = std::size_t{1} << 20;
  if (bytes < mib) return std::to_string(bytes) + " bytes";
  return std::to_string(bytes / mib + (bytes % mib != 0 ? 1 : 0)) + " MiB";
}

/// Bytes a request may hold (estimated by the code that allocates: the cost graph's matrices,
/// candidate rows, memo tables). `charge` before allocating; the default budget is unbounded.
class MemoryBudget {
 public:
  MemoryBudget() = default;
  explicit MemoryBudget(std::size_t limit_bytes) : limit_(limit_bytes) {}

  /// Counts `bytes` more; throws memory_limit_reached ("<what> needs ... more (... in use), above
  /// the memory budget of ...", amounts as memory_text) when the total would pass the limit (nothing is counted then).
  void charge(std::size_t bytes, std::string_view what) {
    if (bytes > limit_ || used_ > limit_ - bytes)
      throw memory_limit_reached(std::string(what) + " needs " + memory_text(bytes) + " more (" + memory_text(used_) +
                                 " in use), above the memory budget of " + memory_text(limit_) + " (--max-memory-mib)");
    used_ += bytes;
  }
  /// Counts `bytes` less (memory given back).
  void release(std::size_t bytes) noexcept { used_ -= bytes < used_ ? bytes : used_; }
  [[nodiscard]] std::size_t used() const noexcept { return used_; }
  [[nodiscard]] std::size_t limit() const noexcept { return limit_; }

 private:
  std::size_t limit_ = static_cast<std::size_t>(-1);
  std::size_t used_ = 0;
};

}  // namespace ctshard::solve
