// examples/args.hpp - what the example programs share for their command lines and their
// set-up errors (header only, no I/O but stdout and stderr):
//   - numbers are decimal digits only (std::from_chars: no sign, space, base prefix or
//     trailing character), checked against their range and never wrapped;
//   - --help and -h print the usage on stdout and exit 0;
//   - anything wrong prints "<program>: <reason>" and the usage on stderr and exits 2;
//   - what setting the program up throws (a ring, a pool, a signalfd or a listener that
//     cannot be made) prints "<program>: <what>" on stderr and exits 1 (report_setup_errors).
//
//     args::Parser p("chat", usage_text, argc, argv);
//     while (std::optional<std::string_view> a = p.next()) {
//         if (*a == "--port")
//             port = p.number(*a, 0, 65535);    // the option's value, in range
//         else
//             p.unknown(*a);                    // exits 2
//     }
//     return args::report_setup_errors("chat", [&] { return ringo::block_on(serve(port)); });
#pragma once

#include <ringo/net/address.hpp>

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>

namespace args {

/// `s` as a decimal number from `lo` to `hi`, or nullopt: digits only (no sign, space, base
/// prefix or trailing character), and a value past `hi` (or past 2^64 - 1) is refused, not
/// wrapped.
inline std::optional<std::uint64_t> parse_unsigned(std::string_view s, std::uint64_t lo, std::uint64_t hi) noexcept {
    std::uint64_t v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc{} || end != s.data() + s.size() || v < lo || v > hi)
        return std::nullopt;
    return v;
}

/// Whether `a` is an option (`-x`, `--name`) rather than a word: "-" alone and a negative
/// number ("-1") are words, so that a number given in its place gets the number's error.
inline bool is_option(std::string_view a) noexcept { return a.size() > 1 && a[0] == '-' && (a[1] < '0' || a[1] > '9'); }

/// A number that may be given in order, without its option, or after it: the form
/// `ctrl_c_server [PORT [GRACE_MS]]` or `ctrl_c_server [--port PORT] [--grace-ms GRACE_MS]`.
struct Slot {
    std::string_view option; // "--port"
    std::string_view name;   // "PORT", as the usage names it
    std::uint64_t lo, hi;
    std::optional<std::uint64_t> value{};
};

/// One program's command line, taken an argument at a time.
class Parser {
public:
    Parser(const char* program, const char* usage, int argc, char** argv) noexcept
        : program_(program), usage_(usage), argc_(argc), argv_(argv) {}

    /// The next argument, or nullopt after the last. --help and -h print the usage on stdout
    /// and exit 0.
    std::optional<std::string_view> next() {
        if (i_ + 1 >= argc_)
            return std::nullopt;
        std::string_view a = argv_[++i_];
        if (a == "--help" || a == "-h") {
            std::fputs(usage_, stdout);
            std::exit(0);
        }
        return a;
    }

    /// The value after `option`, which next() has just returned; "<option> needs a value"
    /// when there is none.
    std::string_view value(std::string_view option) {
        if (i_ + 1 >= argc_)
            fail(std::string(option) + " needs a value");
        return argv_[++i_];
    }

    /// `v` as a number from `lo` to `hi`, or "<what> takes a whole number from LO to HI, not
    /// 'V'".
    std::uint64_t number(std::string_view what, std::string_view v, std::uint64_t lo, std::uint64_t hi) const {
        std::optional<std::uint64_t> n = parse_unsigned(v, lo, hi);
        if (!n)
            fail(std::string(what) + " takes a whole number from " + std::to_string(lo) + " to " + std::to_string(hi) +
                 ", not '" + std::string(v) + "'");
        return *n;
    }

    /// The value after `option` as a number from `lo` to `hi`.
    std::uint64_t number(std::string_view option, std::uint64_t lo, std::uint64_t hi) {
        return number(option, value(option), lo, hi);
    }

    /// Takes `a` (from next()) into one of `slots`: as the value of the slot whose option it
    /// is, or, for a word, as the next slot in order. False when `a` is an option of none of
    /// them (the caller's own, or unknown). A slot given twice, a bad number or a word more
    /// than there are slots is a usage error.
    bool take(std::string_view a, std::span<Slot> slots) {
        Slot* slot = nullptr;
        std::string_view v = a;
        const bool named = is_option(a);
        if (named) {
            for (Slot& s : slots) {
                if (s.option == a)
                    slot = &s;
            }
            if (!slot)
                return false;
            v = value(a);
        } else if (words_ < slots.size()) {
            slot = &slots[words_++];
        } else {
            unknown(a);
        }
        if (slot->value)
            fail(std::string(slot->name) + " is given twice");
        slot->value = number(named ? slot->option : slot->name, v, slot->lo, slot->hi);
        return true;
    }

    /// `ip` (the value of `option`) and `port` as a socket address, or "<option> wants an IPv4
    /// or IPv6 address, not 'IP'".
    ringo::net::SocketAddr address(std::string_view option, std::string_view ip, std::uint16_t port) const {
        std::optional<ringo::net::SocketAddr> a = ringo::net::SocketAddr::parse_ip(ip, port);
        if (!a)
            fail(std::string(option) + " wants an IPv4 or IPv6 address, not '" + std::string(ip) + "'");
        return *a;
    }

    /// "unknown option 'A'" or "unexpected argument 'A'": a usage error.
    [[noreturn]] void unknown(std::string_view a) const {
        fail((is_option(a) ? "unknown option '" : "unexpected argument '") + std::string(a) + "'");
    }

    /// "<program>: <why>" and the usage on stderr; exit status 2.
    [[noreturn]] void fail(const std::string& why) const {
        std::fprintf(stderr, "%s: %s\n%s", program_, why.c_str(), usage_);
        std::exit(2);
    }

private:
    const char* program_;
    const char* usage_;
    int argc_;
    char** argv_;
    int i_ = 0;             // the argument last taken
    std::size_t words_ = 0; // words taken into slots
};

/// Runs `f` (what sets the program up and runs it) and returns its exit status. What escapes
/// it (std::system_error for a ring, pool, signalfd or listening socket that cannot be made:
/// io_uring and epoll both refused, too few descriptors ...) is printed as "<program>:
/// <what>" on stderr with status 1, instead of ending in std::terminate.
template <class F>
int report_setup_errors(const char* program, F&& f) noexcept {
    try {
        return f();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s: %s\n", program, e.what());
    } catch (...) {
        std::fprintf(stderr, "%s: an unknown exception\n", program);
    }
    return 1;
}

} // namespace args
