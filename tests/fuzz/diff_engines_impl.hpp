// tests/fuzz/diff_engines_impl.hpp - what the files of the differential fuzzer share (the model
// of a case, which diff_engines_known.cpp sees too, is diff_engines.hpp). The files, by role:
//   diff_engines_text.cpp     names of opcodes and fields, the classifiers' helpers, a case's text
//   diff_engines_gen.hpp      the generator's random numbers and state
//   diff_engines_gen.cpp      the generator: the grammar of opcodes (which fields each one gets)
//   diff_engines_gen_values.cpp  the grammar of argument values, good and bad
//   diff_engines_env.cpp      a child's environment, the arena and the case's objects in it
//   diff_engines_child.cpp    a child: runs the case on one engine, reports CQEs and effects
//   diff_engines_runner.cpp   the parent's side of a child (deadline, report), rerun and shrink
//   diff_engines_compare.cpp  comparison of the two reports and the verdict
//   diff_engines.cpp          reporting, the tally, the corpus, main
#pragma once

#include "diff_engines.hpp"

#include <ringo/uring/compat.hpp>
#include <ringo/uring/ring.hpp>

#include <netinet/in.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

// In the AddressSanitizer build: an allocation of gigabytes (a table sized by a huge descriptor
// number) fails at once instead of touching the memory; the child then dies with ASan's report,
// counted as a crash. (Elsewhere the children's address space is limited: see child_main.)
#if defined(__SANITIZE_ADDRESS__)
#define DIFF_ENGINES_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DIFF_ENGINES_ASAN 1
#endif
#endif

namespace diffeng {

namespace opc = ringo::uring::compat::opcode;
using ringo::uring::EngineKind;

// ------------------------------------------------------------------ names

struct OpName {
    std::uint8_t op;
    const char* name;
};
// Every opcode the epoll engine serves (its table `ways[]` in src/epoll/op_table.hpp).
inline constexpr OpName op_names[] = {
    {opc::nop, "nop"},
    {opc::readv, "readv"},
    {opc::writev, "writev"},
    {opc::fsync, "fsync"},
    {opc::poll_add, "poll_add"},
    {opc::poll_remove, "poll_remove"},
    {opc::sync_file_range, "sync_file_range"},
    {opc::sendmsg, "sendmsg"},
    {opc::recvmsg, "recvmsg"},
    {opc::timeout, "timeout"},
    {opc::timeout_remove, "timeout_remove"},
    {opc::accept, "accept"},
    {opc::async_cancel, "async_cancel"},
    {opc::connect, "connect"},
    {opc::fallocate, "fallocate"},
    {opc::openat, "openat"},
    {opc::close, "close"},
    {opc::statx, "statx"},
    {opc::read, "read"},
    {opc::write, "write"},
    {opc::fadvise, "fadvise"},
    {opc::send, "send"},
    {opc::recv, "recv"},
    {opc::openat2, "openat2"},
    {opc::epoll_ctl, "epoll_ctl"},
    {opc::shutdown, "shutdown"},
    {opc::renameat, "renameat"},
    {opc::unlinkat, "unlinkat"},
    {opc::mkdirat, "mkdirat"},
    {opc::symlinkat, "symlinkat"},
    {opc::linkat, "linkat"},
    {opc::socket, "socket"},
    {opc::ftruncate, "ftruncate"},
    {opc::bind, "bind"},
    {opc::listen, "listen"},
    {opc::splice, "splice"},
    {opc::tee, "tee"},
    {opc::madvise, "madvise"},
    {opc::fsetxattr, "fsetxattr"},
    {opc::setxattr, "setxattr"},
    {opc::fgetxattr, "fgetxattr"},
    {opc::getxattr, "getxattr"},
    {opc::epoll_wait, "epoll_wait"},
    {opc::pipe, "pipe"},
    {opc::futex_wait, "futex_wait"},
    {opc::futex_wake, "futex_wake"},
    {opc::link_timeout, "link_timeout"},
    {opc::send_zc, "send_zc"},
    {opc::sendmsg_zc, "sendmsg_zc"},
    {opc::waitid, "waitid"},
    {opc::futex_waitv, "futex_waitv"},
};
inline constexpr std::size_t op_count = sizeof op_names / sizeof op_names[0];

// The environment's descriptors, in the order each child makes them; descriptor i is number
// fd_base + i in both children.
inline const char* const env_fd_names[] = {
    "REG",          // regular file "data" (8192 bytes), O_RDWR
    "RO",           // regular file "ro" (100 bytes), O_RDONLY
    "DIRECT",       // regular file "direct" (8192 bytes), O_RDWR | O_DIRECT
    "DIR",          // the scratch directory, O_RDONLY | O_DIRECTORY
    "PIPE_R",       // read end of a pipe holding 20 bytes
    "PIPE_W",       // its write end
    "PIPE_R_EMPTY", // read end of an empty pipe (a read waits)
    "PIPE_W_EMPTY", // its write end
    "PIPE_R_FULL",  // read end of a full pipe (4096 bytes, its capacity)
    "PIPE_W_FULL",  // its write end (a write waits)
    "PIPE_R_NB",    // read end of an empty O_NONBLOCK pipe
    "PIPE_W_NB",    // its write end
    "UNIX_A",       // AF_UNIX stream socketpair end with 16 bytes queued
    "UNIX_B",       // the other end, nothing queued
    "TCP_C",        // loopback TCP client, connected and accepted, 15 bytes queued
    "TCP_S",        // the accepted server side, nothing queued
    "TCP_P",        // loopback TCP client connected, still in LISTEN's backlog
    "LISTEN",       // listening TCP socket (127.0.0.1, one connection pending)
    "TCP_NEW",      // fresh TCP socket, neither bound nor connected
    "UDP",          // UDP socket bound and connected to itself, one datagram queued
    "EVENTFD",      // eventfd with counter 5
    "TIMERFD",      // timerfd that expired once
    "TIMERFD_IDLE", // timerfd never armed (a read waits)
    "MEMFD",        // memfd of 5000 bytes
    "DEVNULL",      // /dev/null, O_RDWR
    "EPOLL",        // an epoll instance
    "EPOLL_READY",  // an epoll instance: PIPE_R (in) and UNIX_B (out) ready, PIPE_R_EMPTY not
};
inline constexpr int env_count = sizeof env_fd_names / sizeof env_fd_names[0];
inline constexpr int fd_base = 64;     // the first environment descriptor
inline constexpr int closed_fd = 300;  // a number no descriptor has
inline constexpr int report_fd = 1000; // a child's report pipe
inline constexpr std::uint64_t ud_base = 0x1000;
inline constexpr std::uint64_t ud_unknown = 0xdead0000;
inline constexpr std::uint64_t ud_cancel_all = 0xCA11CA11;

/// The processes a case with a waitid gets (forked by its child before the ring; "KID" has
/// exited, a zombie, "KID_LIVE" waits for its end): their pids, which the values "fd:KID" and
/// "fd:KID_LIVE" stand for; 0 when not forked.
extern int g_kid_pids[2];
void fork_kids();
void end_kids();

/// The index of environment descriptor `name` in env_fd_names, or -1.
int env_index(const std::string& name);

/// The elements an iov object expands to (rep=N: N elements, each `len` on from the last).
std::vector<std::pair<Val, std::uint64_t>> iov_elements(const Obj& o);

// ------------------------------------------------------------------ text form (diff_engines_text.cpp)

/// Strings in the text form: anything but letters, digits and . / _ - is %XX.
std::string escape(const std::string& s);
std::string case_text(const Case& c);
Case parse_case(const std::string& text, const std::string& origin);

// ------------------------------------------------------------------ generator (diff_engines_gen.cpp)

/// Case INDEX of SEED: its SQEs (at most max_sqes) and their objects.
Case generate(std::uint64_t seed, std::uint64_t index, unsigned max_sqes = 4);

// ------------------------------------------------------------------ options

struct Opts {
    double seconds = 10;
    std::uint64_t seed = 1;
    std::uint64_t max_cases = ~std::uint64_t{0};
    unsigned max_sqes = 4; // SQEs per case at most (1: every difference is one SQE's own)
    std::string replay, save, one_case, scratch;
    bool ci = false, verbose = false, strict_errno = false;
    int quiet_ms = 30;       // a side waits this long without a CQE, then cancels what is left
    int long_quiet_ms = 200; // the same when a difference of completion is checked again
    int cancel_ms = 250;     // how long a side waits for what the cancel ends
    int total_ms = 2000;     // a side's whole wait for CQEs before it cancels
    int deadline_ms = 5000;  // a child still running after this is killed: a hang
    int max_rss_mb = 1024;   // a child resident in more memory than this is killed: a crash
};

// ------------------------------------------------------------------ a child's world (diff_engines_env.cpp)

// The memory every case's objects live in, mapped once by the parent so that it has the same
// address in every child: pointers stored in objects (an iovec's base, a msghdr's name) are
// then the same bytes on both sides. After it: a PROT_NONE page and an unmapped page.
struct Arena {
    char* base = nullptr;
    std::size_t size = 8u << 20;
    char* protnone = nullptr;
    char* unmapped = nullptr;
};
extern Arena g_arena;
void map_arena();

std::uint64_t now_ns();
/// A 64-bit hash of bytes, eight at a time (the sanitizer builds are unoptimised, and a case
/// may leave megabytes to hash).
std::uint64_t fnv(const void* p, std::size_t n, std::uint64_t h = 0xcbf29ce484222325ull);
std::string hex(std::uint64_t v);
/// A child's set-up failed: reports it ("S what: errno") and exits.
[[noreturn]] void fail_setup(const std::string& what);
void need(bool ok, const char* what);
void remove_tree(const std::string& dir);
std::string read_small(const std::string& path);

// What the environment's sockets are bound to (ports differ from child to child).
struct EnvInfo {
    sockaddr_in listen{};
    sockaddr_in udp{};
};
/// The scratch directory and every environment descriptor, made afresh and in the same order
/// in each child.
EnvInfo make_env(const std::string& work);

// Where each object of a case lies in the arena.
struct Layout {
    std::map<std::string, std::pair<std::size_t, std::size_t>> at; // name -> offset, size
    std::size_t end = 0;
};
Layout lay_out(const Case& c);
std::uint64_t resolve(const Val& v, const Layout& l);
/// Writes the objects into the arena (which the child has to itself, copy-on-write).
void materialize(const Case& c, const Layout& l, const EnvInfo& env);
/// Every field at its place in the 64-byte SQE.
void fill_sqe(io_uring_sqe* s, const Sqe& q, const Layout& l, std::uint64_t user_data);

// ------------------------------------------------------------------ the child (diff_engines_child.cpp)

/// Runs the case on one engine and writes the report to report_fd. Never returns.
[[noreturn]] void child_main(const Case& c, EngineKind kind, const Opts& o, int quiet_ms, const std::string& work);

// ------------------------------------------------------------------ the parent (diff_engines_runner.cpp)

struct SqeOut {
    int phase = 0;
    unsigned n = 0;
    std::vector<std::pair<int, std::uint32_t>> cqes;
    [[nodiscard]] bool has_final() const { return phase != 0 && !cqes.empty(); }
    // The SQE's result: its last CQE's, but for a zero-copy send's notification
    // (IORING_CQE_F_NOTIF), which follows the result.
    [[nodiscard]] int final_res() const {
        if (cqes.size() >= 2 && (cqes.back().second & ringo::uring::compat::cqe_f_notif))
            return cqes[cqes.size() - 2].first;
        return cqes.empty() ? 0 : cqes.back().first;
    }
};

struct Side {
    enum class End { ok, crash, hang, setup } end = End::ok;
    int status = 0;
    std::string log; // the end of the child's stderr
    std::vector<SqeOut> out;
    std::map<std::string, std::string> eff;
    std::string harness;
};

/// Runs the case on one engine in a child; kills it at the hard deadline.
Side run_side(const Case& c, EngineKind kind, const Opts& o, int quiet_ms);

// ------------------------------------------------------------------ comparison (diff_engines_compare.cpp)

std::string errno_text(int res);
std::string outcome_text(const SqeOut& o);
std::vector<Diff> compare(const Case& c, const Side& u, const Side& e);

struct Verdict {
    std::vector<Diff> diffs;
    std::vector<std::string> cls; // per diff: a known class, "(follows)", "(unstable)", or "" (unknown)
    bool unknown_failure = false;
    bool unknown_errno = false;
    bool timing = false;   // differed at first, not when checked again with more time
    bool unstable = false; // an unexplained difference that did not come again
    [[nodiscard]] bool same() const { return diffs.empty(); }
};

void classify(const Case& c, Verdict& v);
/// The signatures of a verdict's unexplained differences, sorted.
std::vector<std::string> unknown_signatures(const Case& c, const Verdict& v);
/// A difference in one line: its kind, side, opcode and results (diff_engines.cpp).
std::string signature(const Case& c, const Diff& d);

// ------------------------------------------------------------------ running a case (diff_engines_runner.cpp)

struct Runner {
    Opts o;
    std::uint64_t runs = 0;

    std::pair<Side, Side> run_both(const Case& c, int quiet_ms);
    // Runs a case and judges it: a difference of completion is checked again with a longer
    // wait (a call may just have been slow), and a crash or hang of a case of several SQEs is
    // shrunk to the SQEs it needs.
    Verdict judge(Case& c, std::pair<Side, Side>* sides = nullptr);
    // The case without SQE k (user_data references and objects follow).
    static Case without(const Case& c, std::size_t k);
    // Drops SQEs one at a time while the same side still crashes (or hangs).
    void shrink(Case& c, const Diff& d);
};

} // namespace diffeng
