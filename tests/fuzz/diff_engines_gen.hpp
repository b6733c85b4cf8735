// tests/fuzz/diff_engines_gen.hpp - the differential fuzzer's generator: its random numbers and
// its state while it makes a case. The grammar is in two files: diff_engines_gen.cpp, the
// opcodes and which fields each one gets; diff_engines_gen_values.cpp, the argument values,
// good and bad. A case is a function of its seed and index alone (the same seed gives the same
// cases on every run: a change of the grammar changes them, keep the order of the draws when
// the grammar stays).
#pragma once

#include "diff_engines_impl.hpp"

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace diffeng {

struct Rng {
    std::uint64_t s;
    std::uint64_t next() { // splitmix64
        std::uint64_t z = (s += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    std::uint64_t below(std::uint64_t n) { return n ? next() % n : 0; }
    bool pct(unsigned p) { return below(100) < p; }
    template <class T>
    T pick(std::initializer_list<T> l) {
        return *(l.begin() + below(l.size()));
    }
};

class Gen {
public:
    Gen(std::uint64_t seed, std::uint64_t index, unsigned max_sqes) : max(max_sqes) {
        r.s = seed * 0x2545F4914F6CDD1Dull + index;
        (void)r.next();
        r.s ^= index * 0x9E3779B97F4A7C15ull;
        c.origin = std::to_string(seed) + ":" + std::to_string(index);
    }

    Case make();

private:
    Rng r;
    Case c;
    unsigned max;
    int nobj = 0;
    int cur = 0;
    int nsqe = 0;
    bool waited = false;    // the SQE before was a futex wait
    bool linked = false;    // the SQE before has IOSQE_IO_LINK (or HARDLINK)
    std::string futex_word; // the case's futex word (a u32 object), once an SQE needs one
    std::uint64_t futex_value = 0;

    // Argument values (diff_engines_gen_values.cpp).
    std::string add(std::string kind, std::vector<std::pair<std::string, Val>> fields = {}, std::string text = {});
    Val bad_ptr();
    Val bad_fd();
    Val fd_from(std::initializer_list<const char*> good);
    Val dirfd();
    Val path(bool may_create = true);
    std::uint32_t length(std::uint32_t good);
    Val buffer(std::uint64_t len, bool source);
    Val offset();
    Val rw_flags();
    Val ioprio_rw();
    Val iovec(std::uint64_t count, std::uint64_t each, bool source);
    std::uint64_t iov_count();
    Val ud_target();
    Val timespec();
    Val sockaddr(std::initializer_list<const char*> kinds);
    Val msg_flags(bool send);
    Val msghdr(bool send);
    Val open_flags();
    Val file_index();
    Val xattr_name();
    Val futex_addr();
    Val futex_flags();
    Val futex_waitv(std::uint64_t n);
    Val zc_flags();
    Val waitid_options();

    // An SQE's fields by its opcode, and its flags (diff_engines_gen.cpp).
    void fill(Sqe& q);
    void sqe_flags(Sqe& q);
};

} // namespace diffeng
