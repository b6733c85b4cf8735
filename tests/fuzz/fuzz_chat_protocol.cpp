// libFuzzer target for the chat example's line parser (examples/chat_protocol.hpp): any bytes
// as one line must parse without a crash, and the result must agree with the protocol's
// rules: a nick obeys valid_nick, a message carries no control character and fits the limit,
// an error has a reason, and the argument lies inside the line (or is a static reason).
#include "chat_protocol.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace {

void require(bool ok, const char* what, std::string_view line) {
    if (ok)
        return;
    std::fprintf(stderr, "chat_protocol: %s (line of %zu bytes)\n", what, line.size());
    std::abort();
}

bool inside(std::string_view part, std::string_view whole) {
    return part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size();
}

bool is_reason(std::string_view r) {
    namespace why = chat::reason;
    return r == why::too_long || r == why::control || r == why::unknown || r == why::nick_usage || r == why::bad_nick ||
           r == why::no_args;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    // A copy of exactly `size` bytes, so ASan sees a read past the line.
    std::string buf(reinterpret_cast<const char*>(data), size);
    std::string_view line = buf;
    std::string_view body = line;
    if (!body.empty() && body.back() == '\r')
        body.remove_suffix(1);
    bool has_control = false;
    for (char c : body)
        has_control = has_control || chat::is_control(c);

    chat::Command c = chat::parse_line(line);
    chat::Command again = chat::parse_line(line);
    require(c.kind == again.kind && c.arg == again.arg, "two parses of one line differ", line);

    switch (c.kind) {
    case chat::Kind::message:
        require(!c.arg.empty() && inside(c.arg, body), "a message outside its line", line);
        require(!has_control && body.size() <= chat::max_line, "a message that breaks a limit", line);
        require(body[0] != '/' ? c.arg == body : body.substr(0, 2) == "//" && c.arg == body.substr(1),
                "a message that is not the line (less one leading '/' of '//')", line);
        require(chat::message_line("nick", c.arg) == "nick: " + std::string(c.arg) + "\n", "message_line", line);
        break;
    case chat::Kind::nick:
        require(chat::valid_nick(c.arg) && c.arg.size() <= chat::max_nick, "a nick that breaks the rules", line);
        require(inside(c.arg, body) && body.substr(0, 5) == "/nick", "a nick from elsewhere than /nick", line);
        require(chat::same_nick(c.arg, c.arg), "same_nick is not reflexive", line);
        break;
    case chat::Kind::who:
    case chat::Kind::quit:
        require(c.arg.empty() && body.size() >= 4 && body[0] == '/', "a command with an argument", line);
        break;
    case chat::Kind::empty:
        require(body.find_first_not_of(" \t") == std::string_view::npos, "a line with text taken as empty", line);
        break;
    case chat::Kind::error: {
        require(is_reason(c.arg), "an error without one of the reasons", line);
        require((c.arg == chat::reason::too_long) == (body.size() > chat::max_line), "the length limit", line);
        require(c.arg != chat::reason::control || has_control, "a control character error without one", line);
        std::string reply = chat::error_line(c.arg);
        require(reply.size() > 9 && reply.back() == '\n' && reply.find('\n') == reply.size() - 1,
                "an error line that is not one line", line);
        break;
    }
    default: require(false, "an unknown kind", line);
    }
    // A line within the limit with a control character is always refused.
    if (has_control && body.size() <= chat::max_line)
        require(c.kind == chat::Kind::error && c.arg == chat::reason::control, "a control character let through", line);
    // Any nick the parser accepts can be asked for again: "/nick " + nick parses to that nick.
    if (chat::valid_nick(body)) {
        std::string cmd = "/nick " + std::string(body);
        chat::Command n = chat::parse_line(cmd);
        require(n.kind == chat::Kind::nick && n.arg == body, "a valid nick refused by /nick", line);
    }
    return 0;
}
