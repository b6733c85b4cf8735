// The texts and categories of the I/O layer's errors: the IoError category, and what a
// failed Result says (its note made, its exception thrown, its description). Cold paths all:
// compiled once here rather than in every file that includes a header of the layer.
#include <ringo/io/error.hpp>
#include <ringo/io/result.hpp>

#include <cstdlib>
#include <new>
#include <string>
#include <string_view>
#include <system_error>

namespace ringo {

namespace {
class IoErrorCategory final : public std::error_category {
public:
    const char* name() const noexcept override { return "ringo"; }
    std::string message(int e) const override {
        switch (static_cast<IoError>(e)) {
        case IoError::unexpected_eof: return "unexpected end of data";
        case IoError::write_zero: return "write moved no bytes";
        case IoError::line_too_long: return "line longer than the limit";
        case IoError::too_large: return "more data than the limit";
        }
        return "unknown ringo error";
    }
    // To code that only knows std::errc: the first two are input/output errors, a line too
    // long or data over the limit is a message too long (EMSGSIZE).
    std::error_condition default_error_condition(int e) const noexcept override {
        if (static_cast<IoError>(e) == IoError::line_too_long || static_cast<IoError>(e) == IoError::too_large)
            return std::make_error_condition(std::errc::message_size);
        return std::make_error_condition(std::errc::io_error);
    }
};
} // namespace

const std::error_category& io_error_category() noexcept {
    static const IoErrorCategory c;
    return c;
}

namespace detail {

ErrorNote ErrorNote::made(const char* what, std::string_view detail) noexcept {
    const std::size_t n = std::char_traits<char>::length(what);
    // (malloc: an error path must not throw, and a program that replaces operator new
    // keeps its pairs; nothing else here allocates this way.)
    auto* h = static_cast<Heap*>(std::malloc(sizeof(Heap) + n + 1 + detail.size() + 1));
    if (!h)
        return ErrorNote(what);
    ::new (static_cast<void*>(h)) Heap{};
    char* t = h->text();
    std::char_traits<char>::copy(t, what, n);
    t[n] = ' ';
    std::char_traits<char>::copy(t + n + 1, detail.data(), detail.size());
    t[n + 1 + detail.size()] = '\0';
    ErrorNote e;
    e.p_ = reinterpret_cast<std::uintptr_t>(h) | heap_tag;
    return e;
}

void throw_result_error(const std::error_code& e, const ErrorNote& note) {
    if (const char* t = note.text())
        throw std::system_error(e, t);
    throw std::system_error(e);
}

std::string describe_error(const std::error_code& e, const ErrorNote& note) {
    std::string m = e.message();
    if (const char* t = note.text())
        return std::string(t) + ": " + m;
    return m;
}

} // namespace detail

} // namespace ringo
