// The chat example's line protocol (examples/chat.cpp): what a client's line means, and the
// lines the server sends. Pure functions over strings, no I/O, so they can be tested and
// fuzzed alone (tests/fuzz/fuzz_chat_protocol.cpp).
//
// A client sends lines ending in "\n" (a "\r" before it is dropped). A line is:
//   /nick NAME   take the name NAME (see valid_nick)
//   /who         list who is in the room
//   /quit        leave
//   //text       the message "/text" (a doubled slash escapes a message starting with "/")
//   text         a message, sent to everyone else as "NAME: text\n"
//   (empty)      nothing
// Anything else starting with "/" is an unknown command. Every error is answered with one
// line "* error: <reason>\n" and the connection goes on. Lines the server makes itself start
// with "* " (a nick cannot start with "*", so no message can pass for one).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace chat {

/// The longest line the server takes, in bytes, without its "\n".
inline constexpr std::size_t max_line = 512;
/// The longest nick, in bytes.
inline constexpr std::size_t max_nick = 16;

enum class Kind {
    message, ///< arg: the text to broadcast
    nick,    ///< arg: the new nick (valid_nick holds)
    who,
    quit,
    empty, ///< a blank line: nothing to do
    error, ///< arg: the reason, to send back as error_line(arg)
};

/// A parsed line. `arg` points into the line given to parse_line (a message, a nick) or to a
/// static string (an error's reason): it lives as long as the line does.
struct Command {
    Kind kind = Kind::empty;
    std::string_view arg;
};

namespace reason {
inline constexpr std::string_view too_long = "line too long (at most 512 bytes)";
inline constexpr std::string_view control = "control characters are not allowed";
inline constexpr std::string_view unknown = "unknown command (try /nick NAME, /who, /quit, or //text)";
inline constexpr std::string_view nick_usage = "usage: /nick NAME";
inline constexpr std::string_view bad_nick = "a nick is 1 to 16 letters, digits, '_' or '-', starting with a letter";
inline constexpr std::string_view no_args = "this command takes no arguments";
} // namespace reason

/// A nick: 1 to max_nick bytes of ASCII letters, digits, '_' and '-', the first a letter.
[[nodiscard]] constexpr bool valid_nick(std::string_view s) noexcept {
    if (s.empty() || s.size() > max_nick)
        return false;
    auto letter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
    if (!letter(s[0]))
        return false;
    for (char c : s) {
        if (!letter(c) && !(c >= '0' && c <= '9') && c != '_' && c != '-')
            return false;
    }
    return true;
}

/// Nicks are unique regardless of case: "Bob" and "bob" are the same person.
[[nodiscard]] constexpr bool same_nick(std::string_view a, std::string_view b) noexcept {
    if (a.size() != b.size())
        return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        char x = a[i], y = b[i];
        if (x >= 'A' && x <= 'Z')
            x = static_cast<char>(x - 'A' + 'a');
        if (y >= 'A' && y <= 'Z')
            y = static_cast<char>(y - 'A' + 'a');
        if (x != y)
            return false;
    }
    return true;
}

/// True for a byte a message must not carry: ASCII controls but tab, and DEL. Bytes from
/// 0x80 up pass (UTF-8 text is not checked further).
[[nodiscard]] constexpr bool is_control(char c) noexcept {
    auto u = static_cast<unsigned char>(c);
    return (u < 0x20 && u != '\t') || u == 0x7f;
}

/// What a line means. `line` is one line without its "\n"; one trailing "\r" is ignored.
[[nodiscard]] constexpr Command parse_line(std::string_view line) noexcept {
    if (!line.empty() && line.back() == '\r')
        line.remove_suffix(1);
    if (line.size() > max_line)
        return {Kind::error, reason::too_long};
    for (char c : line) {
        if (is_control(c))
            return {Kind::error, reason::control};
    }
    if (line.find_first_not_of(" \t") == std::string_view::npos)
        return {Kind::empty, {}};
    if (line[0] != '/')
        return {Kind::message, line};
    if (line.size() > 1 && line[1] == '/')
        return {Kind::message, line.substr(1)};

    std::string_view rest = line.substr(1);
    std::size_t sp = rest.find_first_of(" \t");
    std::string_view name = rest.substr(0, sp);
    std::string_view args = sp == std::string_view::npos ? std::string_view{} : rest.substr(sp);
    std::size_t a = args.find_first_not_of(" \t");
    args = a == std::string_view::npos ? std::string_view{} : args.substr(a);
    std::size_t z = args.find_last_not_of(" \t");
    args = z == std::string_view::npos ? std::string_view{} : args.substr(0, z + 1);

    if (name == "nick") {
        if (args.empty())
            return {Kind::error, reason::nick_usage};
        if (!valid_nick(args))
            return {Kind::error, reason::bad_nick};
        return {Kind::nick, args};
    }
    if (name == "who" || name == "quit") {
        if (!args.empty())
            return {Kind::error, reason::no_args};
        return {name == "who" ? Kind::who : Kind::quit, {}};
    }
    return {Kind::error, reason::unknown};
}

// The lines the server sends, each with its "\n".

/// "NAME: text\n": a message as the others see it.
[[nodiscard]] inline std::string message_line(std::string_view nick, std::string_view text) {
    std::string s;
    s.reserve(nick.size() + text.size() + 3);
    s.append(nick).append(": ").append(text).push_back('\n');
    return s;
}

/// "* text\n": a line from the server (a notice, a join, a leave).
[[nodiscard]] inline std::string notice_line(std::string_view text) {
    std::string s;
    s.reserve(text.size() + 3);
    s.append("* ").append(text).push_back('\n');
    return s;
}

/// "* error: reason\n".
[[nodiscard]] inline std::string error_line(std::string_view reason) {
    return notice_line(std::string("error: ").append(reason));
}

} // namespace chat
