// ringo/io/result.hpp - Result<T>: a value or a std::error_code (and what failed), for the
// high-level I/O layer.
#pragma once

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>

namespace ringo {

/// The error of a kernel result: `-r` in the system category (for a negative `r`).
[[nodiscard]] inline std::error_code errno_code(int r) noexcept { return {r < 0 ? -r : r, std::system_category()}; }

namespace detail {

/// What a failed call was doing ("read", "connect to 127.0.0.1:7000"): the text that
/// Result::value()'s exception puts before the error's own message. A static text (an
/// operation's name: nothing allocated), or a text made on the error path and shared by the
/// copies of a Result (reference-counted, any thread). Empty: nothing to say.
class ErrorNote {
public:
    ErrorNote() noexcept = default;
    /// A text that outlives every Result: a string literal (null: none).
    ErrorNote(const char* static_text) noexcept // NOLINT
        : p_(reinterpret_cast<std::uintptr_t>(static_text) << 1) {}
    /// `what`, a space and `detail` ("connect to" "127.0.0.1:7000"), made now; `what` alone
    /// when memory runs out.
    static ErrorNote made(const char* what, std::string_view detail) noexcept;
    ErrorNote(const ErrorNote& o) noexcept : p_(o.p_) {
        if (Heap* h = heap())
            h->refs.fetch_add(1, std::memory_order_relaxed);
    }
    ErrorNote(ErrorNote&& o) noexcept : p_(std::exchange(o.p_, 0)) {}
    ErrorNote& operator=(ErrorNote o) noexcept {
        std::swap(p_, o.p_);
        return *this;
    }
    ~ErrorNote() {
        if (p_ & heap_tag) [[unlikely]]
            release(p_);
    }
    /// The text, or null.
    [[nodiscard]] const char* text() const noexcept {
        if (Heap* h = heap())
            return h->text();
        return reinterpret_cast<const char*>(p_ >> 1);
    }

private:
    // A made text: its count, and its characters after it. p_ holds a made text's address
    // with the low bit set (malloc aligns it), or a static text's address shifted left by
    // one (a static text may start at any address, and a user-space address on 64-bit
    // Linux never has the top bit set). The shift, rather than a tag in the top bit, lets
    // the compiler see that a note made from a static text owns nothing: a Result holding
    // one is destroyed without a test, and a success path that merges with such an error
    // path keeps no dead stores of its Result.
    static_assert(sizeof(std::uintptr_t) == 8, "ringo::detail::ErrorNote: 64-bit addresses");
    static constexpr std::uintptr_t heap_tag = 1;
    struct Heap {
        std::atomic<std::uint32_t> refs{1};
        char* text() noexcept { return reinterpret_cast<char*>(this + 1); }
    };
    // Drops a made text's count, freeing it with the last.
    [[gnu::cold, gnu::noinline]] static void release(std::uintptr_t p) noexcept {
        Heap* h = reinterpret_cast<Heap*>(p & ~heap_tag);
        if (h->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
            h->~Heap();
            std::free(h);
        }
    }
    [[nodiscard]] Heap* heap() const noexcept {
        return (p_ & heap_tag) ? reinterpret_cast<Heap*>(p_ & ~heap_tag) : nullptr;
    }
    std::uintptr_t p_ = 0;
};

/// The exception Result::value() throws: the error, with the note before its message
/// ("connect to 127.0.0.1:9: Connection refused").
[[noreturn, gnu::cold]] void throw_result_error(const std::error_code& e, const ErrorNote& note);

/// "note: message", or the message alone.
std::string describe_error(const std::error_code& e, const ErrorNote& note);

} // namespace detail

/// An error and what failed: what Result::failure() gives, and what a Result of any type is
/// made from, so an error passes on with its note (`if (!f) co_return f.failure();` in a
/// function returning another Result keeps "open /etc/missing"; `co_return f.error();`
/// keeps only the error code).
struct Failure {
    std::error_code code;   ///< the error
    detail::ErrorNote note; ///< what failed ("open /etc/missing"), or empty
};

template <class T>
class Result;

namespace detail {
/// std::invoke(f, v) for the one value and_then and transform pass, without `<functional>` (which
/// would add a tenth to what including a header of the I/O layer costs): a callable is called
/// with `v`; a pointer to a member function or data member is applied to `v`, or to what `v`
/// points to. (Unlike std::invoke, a std::reference_wrapper `v` is not unwrapped.)
template <class F, class V>
constexpr decltype(auto) invoke_on(F&& f, V&& v) {
    if constexpr (std::is_member_function_pointer_v<std::remove_cvref_t<F>>) {
        if constexpr (requires { (std::forward<V>(v).*f)(); })
            return (std::forward<V>(v).*f)();
        else
            return ((*std::forward<V>(v)).*f)();
    } else if constexpr (std::is_member_object_pointer_v<std::remove_cvref_t<F>>) {
        if constexpr (requires { std::forward<V>(v).*f; })
            return (std::forward<V>(v).*f);
        else
            return ((*std::forward<V>(v)).*f);
    } else {
        return std::forward<F>(f)(std::forward<V>(v));
    }
}

template <class R>
inline constexpr bool is_result_v = false;
template <class T>
inline constexpr bool is_result_v<Result<T>> = true;
} // namespace detail

/// A value of type T or the error that prevented it (GCC 12 has no std::expected). What the
/// high-level layer (files, sockets, streams) returns; the `op::` layer keeps the kernel's
/// exact int results. Its members are named as std::expected's (has_value, value, error,
/// value_or, and_then, transform, or_else, operator*, operator->), plus ok() and message().
///
/// Two ways to use it, as Asio gives both:
/// - test it (`if (r)`, `r.has_value()`), then take the value (`*r`, `r->`) or the error
///   (`r.error()`, `r.message()`);
/// - or call `r.value()`, which throws std::system_error when there is none, its what()
///   naming what failed: "connect to 127.0.0.1:9: Connection refused", "read from
///   10.0.0.2:5000: Connection reset by peer", "open /etc/missing: No such file or directory".
///
///     ringo::Result<std::size_t> n = co_await file.read_at(buf, 0);
///     if (!n)
///         std::fprintf(stderr, "%s\n", n.describe().c_str());   // "read: Bad file descriptor"
///     std::size_t got = (co_await file.read_at(buf, 0)).value(); // or: throws
template <class T>
class [[nodiscard]] Result {
    static_assert(!std::is_reference_v<T> && !std::is_same_v<std::remove_cv_t<T>, std::error_code>,
                  "ringo::Result<T>: T must be an object type other than std::error_code");

public:
    /// The value's type.
    using value_type = T;
    /// The error's type.
    using error_type = std::error_code;

    /// A value (implicit, so `co_return value;` works in a function returning Result<T>).
    template <class U = T>
    requires std::is_constructible_v<T, U&&> &&
        (!std::is_same_v<std::remove_cvref_t<U>, Result>)&&(!std::is_same_v<std::remove_cvref_t<U>, std::error_code>)
            Result(U&& v) noexcept(std::is_nothrow_constructible_v<T, U&&>)
        : ok_(true) { // NOLINT
        ::new (static_cast<void*>(&v_)) T(std::forward<U>(v));
    }
    /// An error (implicit, so `co_return errno_code(r);` works), with what failed when known.
    /// A zero error code is turned into EINVAL: a Result never claims failure without saying
    /// why.
    Result(std::error_code e, detail::ErrorNote note = {}) noexcept : ok_(false) { // NOLINT
        ::new (static_cast<void*>(&err_))
            Error{e ? e : std::make_error_code(std::errc::invalid_argument), std::move(note)};
    }
    /// An error from a kernel result (`r` < 0, as `-errno`).
    static Result from_errno(int r, detail::ErrorNote note = {}) noexcept {
        return Result(errno_code(r), std::move(note));
    }
    /// An error passed on from another Result (its failure()), its note kept.
    Result(Failure f) noexcept : Result(f.code, std::move(f.note)) {} // NOLINT

    /// A copy (for a copyable T).
    Result(const Result& o) requires std::is_copy_constructible_v<T> : ok_(o.ok_) {
        if (ok_)
            ::new (static_cast<void*>(&v_)) T(o.v_);
        else
            ::new (static_cast<void*>(&err_)) Error(o.err_);
    }
    /// Moves the value or the error out of `o`.
    Result(Result&& o) noexcept(std::is_nothrow_move_constructible_v<T>) : ok_(o.ok_) {
        if (ok_)
            ::new (static_cast<void*>(&v_)) T(std::move(o.v_));
        else
            ::new (static_cast<void*>(&err_)) Error(std::move(o.err_));
    }
    /// Assigns a copy or a move of another Result.
    Result& operator=(Result o) noexcept(std::is_nothrow_move_constructible_v<T>) {
        if (this != &o) {
            destroy();
            ok_ = o.ok_;
            if (ok_)
                ::new (static_cast<void*>(&v_)) T(std::move(o.v_));
            else
                ::new (static_cast<void*>(&err_)) Error(std::move(o.err_));
        }
        return *this;
    }
    ~Result() { destroy(); }

    /// True when it holds a value.
    [[nodiscard]] bool has_value() const noexcept { return ok_; }
    /// has_value().
    [[nodiscard]] bool ok() const noexcept { return ok_; }
    /// has_value(): `if (r)`, `if (!r) co_return r.failure();`.
    explicit operator bool() const noexcept { return ok_; }
    /// The error; an empty error_code when there is a value.
    [[nodiscard]] std::error_code error() const noexcept { return ok_ ? std::error_code{} : err_.code; }
    /// The error's text ("Connection refused"), or "ok".
    [[nodiscard]] std::string message() const { return ok_ ? std::string("ok") : err_.code.message(); }
    /// What failed ("connect to 127.0.0.1:9"), or "" (a value, or nothing known).
    [[nodiscard]] const char* context() const noexcept {
        const char* t = ok_ ? nullptr : err_.note.text();
        return t ? t : "";
    }
    /// What failed and why ("connect to 127.0.0.1:9: Connection refused"), as value()'s
    /// exception says it; "ok" for a value.
    [[nodiscard]] std::string describe() const {
        return ok_ ? std::string("ok") : detail::describe_error(err_.code, err_.note);
    }
    /// The error with what failed, to pass on as another Result (empty for a value).
    [[nodiscard]] Failure failure() const noexcept { return ok_ ? Failure{} : Failure{err_.code, err_.note}; }

    /// The value; throws std::system_error when there is none (see the class comment).
    T& value() & {
        check();
        return v_;
    }
    /// The value of a const Result; throws std::system_error when there is none.
    const T& value() const& {
        check();
        return v_;
    }
    /// The value moved out of a temporary Result; throws std::system_error when there is none.
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
    /// value_or() of a temporary Result: the value moved out, or `fallback`.
    T value_or(U&& fallback) && {
        return ok_ ? std::move(v_) : static_cast<T>(std::forward<U>(fallback));
    }
    /// The value, unchecked (test first).
    T& operator*() & noexcept { return v_; }
    /// The value of a const Result, unchecked.
    const T& operator*() const& noexcept { return v_; }
    /// The value moved out of a temporary Result, unchecked.
    T&& operator*() && noexcept { return std::move(v_); }
    /// The value's members, unchecked (test first).
    T* operator->() noexcept { return &v_; }
    /// The value's members of a const Result, unchecked.
    const T* operator->() const noexcept { return &v_; }

    /// f(value), a `Result<U>`, when there is a value; else this error as a `Result<U>`.
    template <class F>
    auto and_then(F&& f) & {
        return and_then_impl(*this, std::forward<F>(f));
    }
    template <class F>
    /// and_then() on a const Result.
    auto and_then(F&& f) const& {
        return and_then_impl(*this, std::forward<F>(f));
    }
    template <class F>
    /// and_then() on a temporary Result: the value is moved into `f`.
    auto and_then(F&& f) && {
        return and_then_impl(std::move(*this), std::forward<F>(f));
    }
    /// `Result<U>` of f(value) when there is a value (Result<void> for a void f); else this
    /// error.
    template <class F>
    auto transform(F&& f) & {
        return transform_impl(*this, std::forward<F>(f));
    }
    template <class F>
    /// transform() on a const Result.
    auto transform(F&& f) const& {
        return transform_impl(*this, std::forward<F>(f));
    }
    template <class F>
    /// transform() on a temporary Result: the value is moved into `f`.
    auto transform(F&& f) && {
        return transform_impl(std::move(*this), std::forward<F>(f));
    }
    /// This Result when it has a value; else f(error), a Result<T>.
    template <class F>
    Result or_else(F&& f) const& {
        if (ok_)
            return *this;
        return std::forward<F>(f)(err_.code);
    }
    template <class F>
    /// or_else() on a temporary Result: the value is moved out.
    Result or_else(F&& f) && {
        if (ok_)
            return std::move(*this);
        return std::forward<F>(f)(err_.code);
    }

private:
    template <class U>
    friend class Result;
    struct Error {
        std::error_code code;
        detail::ErrorNote note;
    };
    template <class Self, class F>
    static auto and_then_impl(Self&& self, F&& f) {
        using R = std::remove_cvref_t<std::invoke_result_t<F, decltype((std::forward<Self>(self).v_))>>;
        static_assert(detail::is_result_v<R>, "ringo::Result::and_then: the function must return a Result");
        if (self.ok_)
            return detail::invoke_on(std::forward<F>(f), std::forward<Self>(self).v_);
        return R(self.err_.code, self.err_.note);
    }
    template <class Self, class F>
    static auto transform_impl(Self&& self, F&& f) {
        using U = std::remove_cv_t<std::invoke_result_t<F, decltype((std::forward<Self>(self).v_))>>;
        if (!self.ok_)
            return Result<U>(self.err_.code, self.err_.note);
        if constexpr (std::is_void_v<U>) {
            detail::invoke_on(std::forward<F>(f), std::forward<Self>(self).v_);
            return Result<U>();
        } else {
            return Result<U>(detail::invoke_on(std::forward<F>(f), std::forward<Self>(self).v_));
        }
    }
    void check() const {
        if (!ok_)
            detail::throw_result_error(err_.code, err_.note);
    }
    void destroy() noexcept {
        if (ok_)
            v_.~T();
        else
            err_.~Error();
    }
    bool ok_;
    union {
        T v_;
        Error err_;
    };
};

/// Success or the error that prevented it (see Result<T>).
template <>
class [[nodiscard]] Result<void> {
public:
    /// No value: success only.
    using value_type = void;
    /// The error's type.
    using error_type = std::error_code;
    /// Success.
    Result() noexcept = default;
    /// An error (a zero code is turned into EINVAL, as for Result<T>), with what failed when
    /// known.
    Result(std::error_code e, detail::ErrorNote note = {}) noexcept // NOLINT
        : e_(e ? e : std::make_error_code(std::errc::invalid_argument)), note_(std::move(note)) {}
    /// An error passed on from another Result (its failure()), its note kept.
    Result(Failure f) noexcept : Result(f.code, std::move(f.note)) {} // NOLINT
    /// Success for `r` >= 0, else the error `-r` (a kernel result).
    static Result from_res(int r, detail::ErrorNote note = {}) noexcept {
        return r < 0 ? Result(errno_code(r), std::move(note)) : Result();
    }

    /// True on success.
    [[nodiscard]] bool has_value() const noexcept { return !e_; }
    /// has_value().
    [[nodiscard]] bool ok() const noexcept { return !e_; }
    /// has_value(): `if (r)`, `if (!r) co_return r.failure();`.
    explicit operator bool() const noexcept { return ok(); }
    /// The error code (a zero one on success).
    [[nodiscard]] std::error_code error() const noexcept { return e_; }
    /// The error's message, or "ok".
    [[nodiscard]] std::string message() const { return ok() ? std::string("ok") : e_.message(); }
    /// What failed, or "" (see Result<T>).
    [[nodiscard]] const char* context() const noexcept {
        const char* t = ok() ? nullptr : note_.text();
        return t ? t : "";
    }
    /// What failed and why, or "ok" (see Result<T>).
    [[nodiscard]] std::string describe() const { return ok() ? std::string("ok") : detail::describe_error(e_, note_); }
    /// The error with what failed, to pass on as another Result (empty on success).
    [[nodiscard]] Failure failure() const noexcept { return ok() ? Failure{} : Failure{e_, note_}; }
    /// Throws std::system_error on an error (see Result<T>).
    void value() const {
        if (e_)
            detail::throw_result_error(e_, note_);
    }
    /// Nothing: the counterpart of Result<T>'s `*r`, so generic code may write `*r`.
    void operator*() const noexcept {}

    /// f(), a `Result<U>`, on success; else this error as a `Result<U>`.
    template <class F>
    auto and_then(F&& f) const {
        using R = std::remove_cvref_t<std::invoke_result_t<F>>;
        static_assert(detail::is_result_v<R>, "ringo::Result::and_then: the function must return a Result");
        if (ok())
            return std::forward<F>(f)();
        return R(e_, note_);
    }
    /// `Result<U>` of f() on success (Result<void> for a void f); else this error.
    template <class F>
    auto transform(F&& f) const {
        using U = std::remove_cv_t<std::invoke_result_t<F>>;
        if (!ok())
            return Result<U>(e_, note_);
        if constexpr (std::is_void_v<U>) {
            std::forward<F>(f)();
            return Result<U>();
        } else {
            return Result<U>(std::forward<F>(f)());
        }
    }
    /// This Result on success; else f(error), a Result<void>.
    template <class F>
    Result or_else(F&& f) const {
        if (ok())
            return *this;
        return std::forward<F>(f)(e_);
    }

private:
    std::error_code e_{};
    detail::ErrorNote note_;
};

/// Result<T> of a kernel result that is a count or value on success: `r` itself (converted
/// to T) when `r` >= 0, else the error `-r`; for T = void, success or that error.
/// `note` says what failed (an operation's name: see detail::ErrorNote). Always inlined:
/// with a static note the compiler then sees that the error's Result owns nothing, and a
/// success keeps nothing of the note (neither stored nor tested).
template <class T>
[[nodiscard, gnu::always_inline]] inline Result<T> result_of(int r, detail::ErrorNote note = {}) noexcept {
    if (r < 0) [[unlikely]]
        return Result<T>(errno_code(r), std::move(note));
    if constexpr (std::is_void_v<T>)
        return Result<void>();
    else
        return Result<T>(static_cast<T>(r));
}

} // namespace ringo
