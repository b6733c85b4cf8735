// tests/fuzz/diff_engines_text.cpp - the differential fuzzer's names (opcodes, fields, kinds of
// difference), the helpers diff_engines_known.cpp's classifiers use, and the text form of a case
// (the corpus files, --print, the saved cases): printing and parsing.

#include "diff_engines_impl.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <sstream>
#include <stdexcept>
#include <string>

namespace diffeng {

int env_index(const std::string& name) {
    for (int i = 0; i < env_count; ++i)
        if (name == env_fd_names[i])
            return i;
    return -1;
}

const char* const field_names[f_count] = {"flags",   "ioprio", "fd",   "off", "addr", "len",
                                          "opflags", "bufidx", "pers", "fi",  "addr3"};

std::string opcode_name(std::uint8_t op) {
    for (const OpName& o : op_names)
        if (o.op == op)
            return o.name;
    return std::to_string(op);
}

const char* diff_kind_name(DiffKind k) {
    switch (k) {
    case DiffKind::crash: return "crash";
    case DiffKind::hang: return "hang";
    case DiffKind::pending: return "pending";
    case DiffKind::success_vs_error: return "success-vs-error";
    case DiffKind::value: return "value";
    case DiffKind::errno_only: return "errno";
    case DiffKind::flags: return "flags";
    case DiffKind::cqe_count: return "cqe-count";
    case DiffKind::effect: return "effect";
    }
    return "?";
}

// ------------------------------------------------------------------ helpers for classifiers

const Sqe* sqe_of(const Case& c, const Diff& d) {
    return d.sqe >= 0 && static_cast<std::size_t>(d.sqe) < c.sqes.size() ? &c.sqes[static_cast<std::size_t>(d.sqe)]
                                                                         : nullptr;
}

bool makes_fd(const Sqe& q) {
    return q.opcode == opc::openat || q.opcode == opc::openat2 || q.opcode == opc::socket || q.opcode == opc::accept ||
           q.opcode == opc::pipe;
}

bool has_opcode(const Case& c, std::uint8_t op) {
    return std::any_of(c.sqes.begin(), c.sqes.end(), [op](const Sqe& s) { return s.opcode == op; });
}

bool is_fd(const Val& v, const char* env) { return v.kind == Val::Kind::fd && v.name == env; }

bool is_bad_fd(const Val& v) {
    if (v.kind == Val::Kind::fd)
        return v.name == "CLOSED";
    if (v.kind != Val::Kind::num)
        return true;
    const auto n = static_cast<std::int32_t>(v.num);
    return n < 0 || n >= closed_fd;
}

// The elements an iov object expands to (rep=N: N elements, each `len` on from the last).
std::vector<std::pair<Val, std::uint64_t>> iov_elements(const Obj& o) {
    std::vector<std::pair<Val, std::uint64_t>> out;
    const std::uint64_t rep = o.num("rep", 1);
    if (o.iov.empty())
        return out;
    if (rep <= 1)
        return o.iov;
    const auto& [base, len] = o.iov.front();
    for (std::uint64_t k = 0; k < rep; ++k) {
        Val b = base;
        if (b.kind == Val::Kind::obj)
            b.num += k * len;
        out.emplace_back(b, len);
    }
    return out;
}

bool bad_iovec(const Case& c, const Val& arr, std::uint64_t count) {
    if (count > 1024)
        return true;
    if (count == 0)
        return false;
    if (arr.bad_pointer())
        return true;
    const Obj* o = c.obj(arr);
    if (!o || o->kind != "iov")
        return false;
    auto els = iov_elements(*o);
    if (els.size() < count)
        return true; // the kernel reads past the array
    for (std::uint64_t k = 0; k < count; ++k)
        if (els[k].second != 0 && els[k].first.bad_pointer())
            return true;
    return false;
}

// ------------------------------------------------------------------ text form

// Strings in the text form: anything but letters, digits and . / _ - is %XX.
std::string escape(const std::string& s) {
    std::string out;
    for (unsigned char ch : s) {
        if (std::isalnum(ch) || ch == '.' || ch == '/' || ch == '_' || ch == '-') {
            out += static_cast<char>(ch);
        } else {
            char b[4];
            std::snprintf(b, sizeof b, "%%%02X", ch);
            out += b;
        }
    }
    return out;
}
std::string unescape(const std::string& s) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '%' && i + 2 < s.size()) {
            out += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
            i += 2;
        } else {
            out += s[i];
        }
    }
    return out;
}

namespace {

std::string val_text(const Val& v) {
    switch (v.kind) {
    case Val::Kind::num: {
        const auto s = static_cast<std::int64_t>(v.num);
        if (s >= -1'000'000 && s <= 1'000'000)
            return std::to_string(s);
        char b[32];
        std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v.num));
        return b;
    }
    case Val::Kind::fd: return "fd:" + v.name;
    case Val::Kind::obj: return "@" + v.name + (v.num ? "+" + std::to_string(v.num) : "");
    case Val::Kind::ptr: return v.name;
    case Val::Kind::ud: return v.ud < 0 ? "ud:-" : "ud:" + std::to_string(v.ud);
    }
    return "?";
}

Val parse_val(const std::string& t) {
    if (t.rfind("fd:", 0) == 0)
        return Val::fd(t.substr(3));
    if (t.rfind("ud:", 0) == 0)
        return Val::user(t == "ud:-" ? -1 : std::stoi(t.substr(3)));
    if (!t.empty() && t[0] == '@') {
        auto plus = t.find('+');
        if (plus == std::string::npos)
            return Val::obj(t.substr(1));
        return Val::obj(t.substr(1, plus - 1), std::stoull(t.substr(plus + 1), nullptr, 0));
    }
    if (t == "unmapped" || t == "protnone" || t == "noncanon" || t == "edge")
        return Val::ptr(t);
    if (t == "null")
        return Val::n(0);
    if (!t.empty() && t[0] == '-')
        return Val::i(std::stoll(t, nullptr, 0));
    if (t.empty() || !std::isdigit(static_cast<unsigned char>(t[0])))
        throw std::invalid_argument("not a value: '" + t + "'");
    return Val::n(std::stoull(t, nullptr, 0));
}

std::string obj_text(const Obj& o) {
    std::string s = "obj " + o.name + " " + o.kind;
    if (!o.text.empty() || o.kind == "str" || o.kind == "sa")
        s += " text=" + (o.text.empty() ? std::string("%00") : escape(o.text));
    for (const auto& [k, v] : o.fields)
        s += " " + k + "=" + val_text(v);
    for (const auto& [b, l] : o.iov)
        s += " e=" + val_text(b) + "," + std::to_string(l);
    return s;
}

std::string sqe_text(const Sqe& q) {
    std::string s = "sqe " + opcode_name(q.opcode);
    for (int f = 0; f < f_count; ++f)
        if (!q.f[f].is_num(0))
            s += std::string(" ") + field_names[f] + "=" + val_text(q.f[f]);
    return s;
}

} // namespace

std::string case_text(const Case& c) {
    std::string s;
    for (const Obj& o : c.objs)
        s += obj_text(o) + "\n";
    for (const Sqe& q : c.sqes)
        s += sqe_text(q) + "\n";
    return s;
}

Case parse_case(const std::string& text, const std::string& origin) {
    Case c;
    c.origin = origin;
    std::istringstream in(text);
    std::string line;
    int lineno = 0;
    while (std::getline(in, line)) {
        ++lineno;
        try {
            std::istringstream ls(line);
            std::string word;
            if (!(ls >> word) || word[0] == '#')
                continue;
            if (word == "obj") {
                Obj o;
                ls >> o.name >> o.kind;
                std::string tok;
                while (ls >> tok) {
                    auto eq = tok.find('=');
                    if (eq == std::string::npos)
                        throw std::invalid_argument("expected key=value: " + tok);
                    std::string k = tok.substr(0, eq), v = tok.substr(eq + 1);
                    if (k == "text") {
                        o.text = v == "%00" ? std::string() : unescape(v);
                    } else if (k == "e") {
                        auto comma = v.rfind(',');
                        if (comma == std::string::npos)
                            throw std::invalid_argument("iov element needs base,len: " + v);
                        o.iov.emplace_back(parse_val(v.substr(0, comma)), std::stoull(v.substr(comma + 1), nullptr, 0));
                    } else {
                        o.fields.emplace_back(k, parse_val(v));
                    }
                }
                c.objs.push_back(std::move(o));
            } else if (word == "sqe") {
                Sqe q;
                std::string op;
                ls >> op;
                bool found = false;
                for (const OpName& n : op_names)
                    if (op == n.name) {
                        q.opcode = n.op;
                        found = true;
                    }
                if (!found)
                    q.opcode = static_cast<std::uint8_t>(std::stoul(op, nullptr, 0));
                std::string tok;
                while (ls >> tok) {
                    auto eq = tok.find('=');
                    if (eq == std::string::npos)
                        throw std::invalid_argument("expected field=value: " + tok);
                    std::string k = tok.substr(0, eq);
                    int f = 0;
                    while (f < f_count && k != field_names[f])
                        ++f;
                    if (f == f_count)
                        throw std::invalid_argument("unknown SQE field " + k);
                    q.f[f] = parse_val(tok.substr(eq + 1));
                }
                c.sqes.push_back(q);
            } else {
                throw std::invalid_argument("unknown line kind " + word);
            }
        } catch (const std::exception& e) {
            throw std::runtime_error(origin + ":" + std::to_string(lineno) + ": " + e.what());
        }
    }
    if (c.sqes.empty())
        throw std::runtime_error(origin + ": no sqe line");
    return c;
}

} // namespace diffeng
