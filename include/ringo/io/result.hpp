// ringo/io/result.hpp - Result<T>: a value or a std::error_code, for the high-level I/O layer.
#pragma once

#include <cerrno>
#include <new>
#include <string>
#include <system_error>
#include <type_traits>
#include <utility>

namespace ringo {

/// The error of a kernel result: `-r` in the system category (for a negative `r`).
[[nodiscard]] inline std::error_code errno_code(int r) noexcept { return {r < 0 ? -r : r, std::system_category()}; }

/// A value of type T or the error that prevented it (GCC 12 has no std::expected). What the
/// high-level layer (files, sockets, streams) returns; the `op::` layer keeps the kernel's
/// exact int results. Test it (`if (r)`, `r.ok()`), then take the value (`*r`, `r->`,
/// `r.value()`) or the error (`r.error()`, `r.message()`); value() on an error throws
/// std::system_error with that error.
///
///     ringo::Result<std::size_t> n = co_await file.read_at(buf, 0);
///     if (!n)
///         std::fprintf(stderr, "read: %s\n", n.message().c_str());
template <class T>
class [[nodiscard]] Result {
    static_assert(!std::is_reference_v<T> && !std::is_same_v<std::remove_cv_t<T>, std::error_code>,
                  "ringo::Result<T>: T must be an object type other than std::error_code");

public:
    using value_type = T;

    /// A value (implicit, so `co_return value;` works in a function returning Result<T>).
    template <class U = T>
    requires std::is_constructible_v<T, U&&> &&
        (!std::is_same_v<std::remove_cvref_t<U>, Result>)&&(!std::is_same_v<std::remove_cvref_t<U>, std::error_code>)
            Result(U&& v) noexcept(std::is_nothrow_constructible_v<T, U&&>)
        : ok_(true) { // NOLINT
        ::new (static_cast<void*>(&v_)) T(std::forward<U>(v));
    }
    /// An error (implicit, so `co_return errno_code(r);` works). A zero error code is turned
    /// into EINVAL: a Result never claims failure without saying why.
    Result(std::error_code e) noexcept
        : ok_(false), e_(e ? e : std::make_error_code(std::errc::invalid_argument)) {} // NOLINT
    /// An error from a kernel result (`r` < 0, as `-errno`).
    static Result from_errno(int r) noexcept { return Result(errno_code(r)); }

    Result(const Result& o) requires std::is_copy_constructible_v<T> : ok_(o.ok_) {
        if (ok_)
            ::new (static_cast<void*>(&v_)) T(o.v_);
        else
            ::new (static_cast<void*>(&e_)) std::error_code(o.e_);
    }
    Result(Result&& o) noexcept(std::is_nothrow_move_constructible_v<T>) : ok_(o.ok_) {
        if (ok_)
            ::new (static_cast<void*>(&v_)) T(std::move(o.v_));
        else
            ::new (static_cast<void*>(&e_)) std::error_code(o.e_);
    }
    Result& operator=(Result o) noexcept(std::is_nothrow_move_constructible_v<T>) {
        if (this != &o) {
            destroy();
            ok_ = o.ok_;
            if (ok_)
                ::new (static_cast<void*>(&v_)) T(std::move(o.v_));
            else
                e_ = o.e_;
        }
        return *this;
    }
    ~Result() { destroy(); }

    [[nodiscard]] bool ok() const noexcept { return ok_; }
    explicit operator bool() const noexcept { return ok_; }
    /// The error; an empty error_code when there is a value.
    [[nodiscard]] std::error_code error() const noexcept { return ok_ ? std::error_code{} : e_; }
    /// The error's text ("Connection refused"), or "ok".
    [[nodiscard]] std::string message() const { return ok_ ? std::string("ok") : e_.message(); }

    /// The value; throws std::system_error when there is none.
    T& value() & {
        check();
        return v_;
    }
    const T& value() const& {
        check();
        return v_;
    }
    T&& value() && {
        check();
        return std::move(v_);
    }
    /// The value, or `fallback` when there is none.
    template <class U>
    T value_or(U&& fallback) const& {
        return ok_ ? v_ : static_cast<T>(std::forward<U>(fallback));
    }
    template <class U>
    T value_or(U&& fallback) && {
        return ok_ ? std::move(v_) : static_cast<T>(std::forward<U>(fallback));
    }
    /// The value, unchecked (test first).
    T& operator*() & noexcept { return v_; }
    const T& operator*() const& noexcept { return v_; }
    T&& operator*() && noexcept { return std::move(v_); }
    T* operator->() noexcept { return &v_; }
    const T* operator->() const noexcept { return &v_; }

private:
    void check() const {
        if (!ok_)
            throw std::system_error(e_);
    }
    void destroy() noexcept {
        if (ok_)
            v_.~T();
    }
    bool ok_;
    union {
        T v_;
        std::error_code e_;
    };
};

/// Success or the error that prevented it.
template <>
class [[nodiscard]] Result<void> {
public:
    using value_type = void;
    /// Success.
    Result() noexcept = default;
    /// An error (a zero code is turned into EINVAL, as for Result<T>).
    Result(std::error_code e) noexcept : e_(e ? e : std::make_error_code(std::errc::invalid_argument)) {} // NOLINT
    /// Success for `r` >= 0, else the error `-r` (a kernel result).
    static Result from_res(int r) noexcept { return r < 0 ? Result(errno_code(r)) : Result(); }

    [[nodiscard]] bool ok() const noexcept { return !e_; }
    explicit operator bool() const noexcept { return ok(); }
    [[nodiscard]] std::error_code error() const noexcept { return e_; }
    [[nodiscard]] std::string message() const { return ok() ? std::string("ok") : e_.message(); }
    /// Throws std::system_error on an error.
    void value() const {
        if (e_)
            throw std::system_error(e_);
    }

private:
    std::error_code e_{};
};

/// Result<T> of a kernel result that is a count or value on success: `r` itself (converted
/// to T) when `r` >= 0, else the error `-r`; for T = void, success or that error.
template <class T>
[[nodiscard]] Result<T> result_of(int r) noexcept {
    if constexpr (std::is_void_v<T>) {
        return Result<void>::from_res(r);
    } else {
        if (r < 0)
            return errno_code(r);
        return static_cast<T>(r);
    }
}

} // namespace ringo
