// Result<T>: a value or an Error, for expected failures inside modules (parsers, loaders).
// [[nodiscard]] so a failure cannot be dropped silently. Truth means success — there is no
// inverted "failed()" accessor to get wrong.
#pragma once

#include <utility>
#include <variant>

#include "util/assert.h"
#include "util/error.h"

namespace orrery {

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::in_place_index<0>, std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Error error) : state_(std::in_place_index<1>, std::move(error)) {}  // NOLINT(google-explicit-constructor)

  [[nodiscard]] bool ok() const { return state_.index() == 0; }
  explicit operator bool() const { return ok(); }

  [[nodiscard]] T& value() & {
    ORRERY_ASSERT(ok(), "value() of a failed Result");
    return std::get<0>(state_);
  }
  [[nodiscard]] const T& value() const& {
    ORRERY_ASSERT(ok(), "value() of a failed Result");
    return std::get<0>(state_);
  }
  [[nodiscard]] T&& value() && {
    ORRERY_ASSERT(ok(), "value() of a failed Result");
    return std::get<0>(std::move(state_));
  }
  [[nodiscard]] const Error& error() const {
    ORRERY_ASSERT(!ok(), "error() of a successful Result");
    return std::get<1>(state_);
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  // The value, or the error thrown as an OrreryError (for use at module boundaries).
  T take_or_throw() && {
    if (!ok()) {
      throw OrreryError(std::get<1>(std::move(state_)));
    }
    return std::get<0>(std::move(state_));
  }

 private:
  std::variant<T, Error> state_;
};

}  // namespace orrery
