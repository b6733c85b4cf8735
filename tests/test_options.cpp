#include <ringo/ringo.hpp>

#include <gtest/gtest.h>

#include <sys/socket.h>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <stdexcept>
#include <string>
#include <system_error>
#include <tuple>

#include "helpers.hpp"

using ringo::Runtime;
using ringo::RuntimeOptions;
namespace setup = ringo::uring::compat::setup;

namespace {

TEST(Options, DefaultsAskForSingleIssuerDeferTaskrun) {
    io_uring_params p = RuntimeOptions{}.to_params();
    EXPECT_TRUE(p.flags & setup::single_issuer);
    EXPECT_TRUE(p.flags & setup::defer_taskrun);
    EXPECT_TRUE(p.flags & setup::submit_all);
    EXPECT_FALSE(p.flags & setup::sqpoll);
    EXPECT_FALSE(p.flags & setup::iopoll);
    EXPECT_FALSE(p.flags & setup::coop_taskrun);
    EXPECT_FALSE(p.flags & setup::cqsize);
    EXPECT_TRUE(RuntimeOptions{}.ring_params().register_ring_fd);
    EXPECT_EQ(RuntimeOptions{}.ring_params().sq_entries, 256u);
}

TEST(Options, CqEntriesSetsCqsize) {
    io_uring_params p = RuntimeOptions{}.sq_entries(64).cq_entries(1024).to_params();
    EXPECT_TRUE(p.flags & setup::cqsize);
    EXPECT_EQ(p.cq_entries, 1024u);
    EXPECT_EQ(RuntimeOptions{}.sq_entries(64).ring_params().sq_entries, 64u);
}

TEST(Options, SqpollWithIdleAndCpu) {
    io_uring_params p = RuntimeOptions{}.sqpoll(true, 50, 1).to_params();
    EXPECT_TRUE(p.flags & setup::sqpoll);
    EXPECT_TRUE(p.flags & setup::sq_aff);
    EXPECT_EQ(p.sq_thread_idle, 50u);
    EXPECT_EQ(p.sq_thread_cpu, 1u);
    // SQPOLL excludes DEFER_TASKRUN: the options ask for COOP_TASKRUN instead.
    EXPECT_FALSE(p.flags & setup::defer_taskrun);
    EXPECT_TRUE(p.flags & setup::coop_taskrun);
    io_uring_params q = RuntimeOptions{}.sqpoll(true, 10).to_params();
    EXPECT_FALSE(q.flags & setup::sq_aff);
}

TEST(Options, Iopoll) { EXPECT_TRUE(RuntimeOptions{}.iopoll().to_params().flags & setup::iopoll); }

TEST(Options, SingleIssuerOff) {
    io_uring_params p = RuntimeOptions{}.defer_taskrun(false).single_issuer(false).to_params();
    EXPECT_FALSE(p.flags & setup::single_issuer);
    EXPECT_FALSE(p.flags & setup::defer_taskrun);
}

TEST(Options, CoopTaskrunReplacesDeferTaskrun) {
    io_uring_params p = RuntimeOptions{}.coop_taskrun().to_params();
    EXPECT_TRUE(p.flags & setup::coop_taskrun);
    EXPECT_TRUE(p.flags & setup::taskrun_flag);
    EXPECT_FALSE(p.flags & setup::defer_taskrun);
}

TEST(Options, AttachWqToAClosedDescriptorNamesTheOption) {
    RINGO_IO_URING_ONLY("an io_uring ring descriptor (attach_wq)");
    int fd;
    {
        Runtime gone;
        fd = ::dup(gone.ring_fd());
        ASSERT_GE(fd, 0);
    }
    ASSERT_EQ(::close(fd), 0); // now nothing is open at fd
    try {
        Runtime b{RuntimeOptions{}.attach_wq_fd(fd)};
        ADD_FAILURE() << "attach_wq to a closed descriptor set up a ring";
    } catch (const std::system_error& e) {
        EXPECT_EQ(e.code().value(), EBADF);
        EXPECT_NE(std::string(e.what()).find("attach_wq"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("fd " + std::to_string(fd)), std::string::npos) << e.what();
    }
}

TEST(Options, AttachWqToADescriptorThatIsNotARingNamesTheOption) {
    int p[2];
    ASSERT_EQ(::pipe(p), 0);
    try {
        Runtime b{RuntimeOptions{}.attach_wq_fd(p[0])};
        ADD_FAILURE() << "attach_wq to a pipe set up a ring";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("attach_wq"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("not an io_uring"), std::string::npos) << e.what();
    }
    ::close(p[0]);
    ::close(p[1]);
}

TEST(Options, SubmitAllOff) { EXPECT_FALSE(RuntimeOptions{}.submit_all(false).to_params().flags & setup::submit_all); }

TEST(Options, AttachWq) {
    RINGO_IO_URING_ONLY("io_uring setup flags (attach_wq)");
    Runtime a;
    io_uring_params p = RuntimeOptions{}.attach_wq(a).to_params();
    EXPECT_TRUE(p.flags & setup::attach_wq);
    EXPECT_EQ(p.wq_fd, static_cast<unsigned>(a.ring_fd()));
    Runtime b{RuntimeOptions{}.attach_wq(a)};
    EXPECT_TRUE(b.setup_flags() & setup::attach_wq);
    EXPECT_EQ(b.block_on([]() -> ringo::Task<int> { co_return co_await ringo::op::nop(); }()), 0);
}

TEST(Options, FlagsInForceAreReadable) {
    RINGO_IO_URING_ONLY("io_uring setup flags");
    Runtime rt;
    // This kernel (>= 6.1) accepts the defaults as asked.
    EXPECT_TRUE(rt.setup_flags() & setup::defer_taskrun);
    EXPECT_TRUE(rt.setup_flags() & setup::single_issuer);
    EXPECT_TRUE(rt.ring_fd_registered());
    EXPECT_TRUE(rt.features() & ringo::uring::compat::feat::nodrop);
    EXPECT_EQ(ringo_test::ring_of(rt).degradations(), 0u);
}

TEST(Options, RegisterRingFdOff) {
    Runtime rt{RuntimeOptions{}.register_ring_fd(false)};
    EXPECT_FALSE(rt.ring_fd_registered());
    EXPECT_EQ(rt.block_on([]() -> ringo::Task<int> { co_return co_await ringo::op::nop(); }()), 0);
}

TEST(Options, DegradesDeferTaskrunToCoopTaskrun) {
    RINGO_IO_URING_ONLY("io_uring setup flags");
    Runtime rt{RuntimeOptions{}.reject_setup_flags_for_testing(setup::defer_taskrun)};
    EXPECT_FALSE(rt.setup_flags() & setup::defer_taskrun);
    EXPECT_TRUE(rt.setup_flags() & setup::coop_taskrun);
    EXPECT_EQ(ringo_test::ring_of(rt).degradations(), 1u);
    EXPECT_EQ(rt.block_on([]() -> ringo::Task<int> { co_return co_await ringo::op::nop(); }()), 0);
}

TEST(Options, DegradesToNoTaskrunFlags) {
    RINGO_IO_URING_ONLY("io_uring setup flags");
    Runtime rt{RuntimeOptions{}.reject_setup_flags_for_testing(setup::defer_taskrun | setup::coop_taskrun)};
    EXPECT_FALSE(rt.setup_flags() & (setup::defer_taskrun | setup::coop_taskrun | setup::taskrun_flag));
    EXPECT_EQ(ringo_test::ring_of(rt).degradations(), 2u);
    EXPECT_EQ(rt.block_on([]() -> ringo::Task<int> { co_return co_await ringo::op::nop(); }()), 0);
}

TEST(Options, DegradesToPlainRing) {
    Runtime rt{RuntimeOptions{}.reject_setup_flags_for_testing(setup::defer_taskrun | setup::coop_taskrun |
                                                               setup::single_issuer)};
    EXPECT_FALSE(rt.setup_flags() & (setup::single_issuer | setup::submit_all));
    EXPECT_EQ(rt.block_on([]() -> ringo::Task<int> { co_return co_await ringo::op::nop(); }()), 0);
}

TEST(Options, SetupFailsWithClearErrorWhenNothingWorks) {
    try {
        Runtime rt{
            RuntimeOptions{}.engine(ringo::Engine::io_uring).sqpoll().reject_setup_flags_for_testing(setup::sqpoll)};
        FAIL() << "expected a setup error";
    } catch (const std::system_error& e) {
        EXPECT_EQ(e.code().value(), EINVAL);
        EXPECT_NE(std::string(e.what()).find("io_uring_setup"), std::string::npos);
        EXPECT_NE(std::string(e.what()).find("SQPOLL"), std::string::npos);
    }
    // With the engine left to choose (and not forced by RINGO_ENGINE), a parameter the kernel
    // rejects is still the caller's mistake: it throws too, rather than running on epoll
    // without what was asked for.
    if (!ringo_test::on_epoll()) {
        EXPECT_THROW(Runtime rt{RuntimeOptions{}.sqpoll().reject_setup_flags_for_testing(setup::sqpoll)},
                     std::system_error);
        EXPECT_THROW(Runtime rt{RuntimeOptions{}.sqpoll(true, 10, 4000)}, std::system_error) << "no CPU 4000";
    }
}

TEST(Options, AFallBackToEpollNamesTheOptionsNotInForce) {
    // io_uring refused (as a seccomp profile refuses it): the runtime runs on epoll, and its
    // reason says which io_uring-only options it runs without.
    for (int err : {EPERM, EACCES, ENOSYS, ENOMEM}) {
        Runtime rt{RuntimeOptions{}.sqpoll().fail_setup_for_testing(err)};
        if (ringo_test::on_epoll())
            continue; // (forced: no fall-back to look at)
        EXPECT_EQ(rt.engine(), ringo::Engine::epoll);
        EXPECT_NE(rt.engine_reason().find("not in force on the epoll engine: SQPOLL"), std::string::npos)
            << rt.engine_reason();
    }
    Runtime plain{RuntimeOptions{}.fail_setup_for_testing(EPERM)};
    EXPECT_EQ(plain.engine_reason().find("not in force"), std::string::npos) << plain.engine_reason();
    if (!ringo_test::on_epoll()) {
        EXPECT_NE(plain.engine_reason().find("seccomp"), std::string::npos) << plain.engine_reason();
    }
}

TEST(Options, SqpollRuntimeWorks) {
    RINGO_IO_URING_ONLY("an SQPOLL ring");
    std::unique_ptr<Runtime> rt;
    try {
        rt = std::make_unique<Runtime>(RuntimeOptions{}.sqpoll(true, 10));
    } catch (const std::system_error& e) {
        GTEST_SKIP() << "SQPOLL not permitted here: " << e.what();
    }
    EXPECT_TRUE(rt->setup_flags() & setup::sqpoll);
    int sum = rt->block_on([]() -> ringo::Task<int> {
        int s = 0;
        for (int i = 0; i < 100; ++i)
            s += co_await ringo::op::nop();
        co_return s;
    }());
    EXPECT_EQ(sum, 0);
}

TEST(Options, BadSizesThrowInvalidArgument) {
    EXPECT_THROW(Runtime{RuntimeOptions{}.sq_entries(0)}, std::invalid_argument);
    EXPECT_THROW(Runtime{RuntimeOptions{}.sq_entries(1u << 20)}, std::invalid_argument);
    EXPECT_THROW(Runtime{RuntimeOptions{}.sq_entries(64).cq_entries(32)}, std::invalid_argument);
    EXPECT_THROW(Runtime{RuntimeOptions{}.sq_entries(64).cq_entries(1u << 20)}, std::invalid_argument);
}

TEST(Options, LowMemlockLimitGivesSetupErrorNotCrash) {
    rlimit old{};
    ASSERT_EQ(::getrlimit(RLIMIT_MEMLOCK, &old), 0);
    rlimit low{0, old.rlim_max};
    ASSERT_EQ(::setrlimit(RLIMIT_MEMLOCK, &low), 0);
    // Kernels since 5.12 do not charge rings to RLIMIT_MEMLOCK; older ones refuse with
    // ENOMEM, which must surface as a system_error naming the limit.
    try {
        Runtime rt{RuntimeOptions{}.sq_entries(32768)};
        EXPECT_EQ(rt.block_on([]() -> ringo::Task<int> { co_return co_await ringo::op::nop(); }()), 0);
    } catch (const std::system_error& e) {
        EXPECT_NE(std::string(e.what()).find("RLIMIT_MEMLOCK"), std::string::npos);
    }
    ::setrlimit(RLIMIT_MEMLOCK, &old);
}

TEST(Options, RingTooLargeForMemoryLimitsGivesSetupErrorNamingTheProblem) {
    // What a kernel before 5.12 answers when the rings exceed RLIMIT_MEMLOCK (and a newer one
    // when the memory cgroup is exhausted): ENOMEM from setup, injected here, since this kernel
    // no longer charges rings to RLIMIT_MEMLOCK.
    try {
        Runtime rt{RuntimeOptions{}
                       .engine(ringo::Engine::io_uring)
                       .sq_entries(32768)
                       .cq_entries(65536)
                       .fail_setup_for_testing(ENOMEM)};
        FAIL() << "expected a setup error";
    } catch (const std::system_error& e) {
        const std::string what = e.what();
        EXPECT_EQ(e.code().value(), ENOMEM) << what;
        EXPECT_NE(what.find("out of memory for the rings"), std::string::npos) << what;
        EXPECT_NE(what.find("RLIMIT_MEMLOCK"), std::string::npos) << what;
        EXPECT_NE(what.find("sq_entries=32768"), std::string::npos) << what;
        EXPECT_NE(what.find("cq_entries=65536"), std::string::npos) << what;
        EXPECT_NE(what.find("fewer entries"), std::string::npos) << what;
    }
    // The injected error, not the size, made it fail: the same ring sets up without it.
    Runtime ok{RuntimeOptions{}.sq_entries(32768).cq_entries(65536)};
    EXPECT_EQ(ringo_test::ring_of(ok).sq_entries(), 32768u);
    // With the engine left to choose (and not forced by RINGO_ENGINE), the refused ring gives
    // the epoll engine, and the reason.
    if (!ringo_test::on_epoll()) {
        Runtime fallback{RuntimeOptions{}.sq_entries(32768).cq_entries(65536).fail_setup_for_testing(ENOMEM)};
        EXPECT_EQ(fallback.engine(), ringo::Engine::epoll);
        EXPECT_EQ(fallback.io_uring_refusal(), ENOMEM);
        EXPECT_NE(fallback.engine_reason().find("RLIMIT_MEMLOCK"), std::string::npos) << fallback.engine_reason();
    }
}

// Reads VmSize of this process in bytes (0 if unknown).
std::size_t address_space_in_use() {
    std::FILE* f = std::fopen("/proc/self/status", "r");
    if (!f)
        return 0;
    char line[256];
    std::size_t kb = 0;
    while (std::fgets(line, sizeof line, f))
        if (std::sscanf(line, "VmSize: %zu kB", &kb) == 1)
            break;
    std::fclose(f);
    return kb * 1024;
}

TEST(Options, RingTooLargeForAddressSpaceLimitGivesSetupErrorFromTheKernel) {
    RINGO_IO_URING_ONLY("the kernel refusing a ring");
    // A real refusal by the kernel: with RLIMIT_AS just above what the process maps now,
    // mapping a 32768-entry ring (about 3 MiB) fails with ENOMEM. In a child process, so the
    // limit does not touch the other tests.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    GTEST_SKIP() << "sanitizer runtimes reserve terabytes of address space: RLIMIT_AS cannot be lowered";
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
    GTEST_SKIP() << "sanitizer runtimes reserve terabytes of address space: RLIMIT_AS cannot be lowered";
#endif
#endif
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        ::close(fds[0]);
        struct Report {
            int code; // errno of the system_error; -1: no exception; -2: another exception
            char what[600];
        } rep{};
        std::size_t in_use = address_space_in_use();
        rlimit lim{in_use + (768u << 10), in_use + (768u << 10)};
        if (in_use == 0 || ::setrlimit(RLIMIT_AS, &lim) != 0) {
            rep.code = -3;
        } else {
            try {
                Runtime rt{RuntimeOptions{}.sq_entries(32768)};
                rep.code = -1;
            } catch (const std::system_error& e) {
                rep.code = e.code().value();
                std::snprintf(rep.what, sizeof rep.what, "%s", e.what());
            } catch (const std::exception& e) {
                rep.code = -2;
                std::snprintf(rep.what, sizeof rep.what, "%s", e.what());
            }
        }
        [[maybe_unused]] ssize_t w = ::write(fds[1], &rep, sizeof rep);
        ::_exit(0);
    }
    ::close(fds[1]);
    struct {
        int code;
        char what[600];
    } rep{};
    ssize_t got = ::read(fds[0], &rep, sizeof rep);
    ::close(fds[0]);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child crashed (status " << status << ")";
    ASSERT_EQ(got, static_cast<ssize_t>(sizeof rep));
    ASSERT_NE(rep.code, -3) << "could not read VmSize or lower RLIMIT_AS";
    ASSERT_NE(rep.code, -1) << "the ring was set up although it does not fit in RLIMIT_AS";
    EXPECT_EQ(rep.code, ENOMEM) << rep.what;
    EXPECT_NE(std::string(rep.what).find("out of memory for the rings"), std::string::npos) << rep.what;
    EXPECT_NE(std::string(rep.what).find("RLIMIT_AS"), std::string::npos) << rep.what;
}

TEST(Options, FlagNames) {
    EXPECT_EQ(ringo::uring::setup_flags_to_string(setup::single_issuer | setup::defer_taskrun),
              "SINGLE_ISSUER|DEFER_TASKRUN");
    EXPECT_EQ(ringo::uring::setup_flags_to_string(0), "none");
}

TEST(Probe, ReadsKernelOpcodes) {
    Runtime rt;
    namespace opc = ringo::uring::compat::opcode;
    EXPECT_TRUE(rt.supports(opc::nop));
    EXPECT_TRUE(rt.supports(opc::read));
    EXPECT_TRUE(rt.supports(opc::socket));
    EXPECT_GT(rt.probe().kernel_last_op(), opc::socket);
    EXPECT_FALSE(rt.supports(200));
}

TEST(Probe, UnsupportedOpcodeCompletesWithEopnotsupp) {
    Runtime rt;
    // IORING_OP_SOCKET (5.19) is newer than the probe, so ringo consults the probe for it.
    static_assert(ringo::uring::compat::opcode::socket > ringo::uring::Probe::always_present_last);
    rt.probe().set_supported(ringo::uring::compat::opcode::socket, false);
    auto before = rt.stats().sqes_submitted;
    int r =
        rt.block_on([]() -> ringo::Task<int> { co_return co_await ringo::op::socket(AF_INET, SOCK_STREAM, 0, 0); }());
    EXPECT_EQ(r, -EOPNOTSUPP);
    EXPECT_EQ(rt.stats().sqes_submitted, before); // nothing was submitted
    // Other operations are unaffected.
    EXPECT_EQ(rt.block_on([]() -> ringo::Task<int> { co_return co_await ringo::op::nop(); }()), 0);
}

TEST(Probe, OpcodesOlderThanTheProbeAreAllSupported) {
    RINGO_IO_URING_ONLY("the kernel's probe answers");
    // NOP .. EPOLL_CTL exist on every kernel that has the probe, which ringo requires.
    Runtime rt;
    for (unsigned op = 0; op <= ringo::uring::Probe::always_present_last; ++op)
        EXPECT_TRUE(rt.supports(static_cast<std::uint8_t>(op))) << "opcode " << op;
}

// One rule: a hidden opcode is refused whether the operation is awaited alone or in a group,
// also for the oldest opcodes (read is opcode 22, older than the probe).
TEST(Probe, HiddenOpcodeIsRefusedAloneAndInAGroupAlike) {
    Runtime rt;
    namespace opc = ringo::uring::compat::opcode;
    rt.probe().set_supported(opc::read, false);
    int p[2];
    ASSERT_EQ(::pipe(p), 0);
    ASSERT_EQ(::write(p[1], "abc", 3), 3);
    auto before = rt.stats().sqes_submitted;
    auto [alone, in_group, nop] = rt.block_on([&]() -> ringo::Task<std::tuple<int, int, int>> {
        char buf[8];
        int a = co_await ringo::op::read(p[0], buf, sizeof buf, 0);
        auto [g, n] = co_await ringo::when_all(ringo::op::read(p[0], buf, sizeof buf, 0), ringo::op::nop());
        co_return std::tuple{a, g, n};
    }());
    EXPECT_EQ(alone, -EOPNOTSUPP);
    EXPECT_EQ(in_group, -EOPNOTSUPP);
    EXPECT_EQ(nop, -EOPNOTSUPP); // the group is refused as a whole, before anything is submitted
    EXPECT_EQ(rt.stats().sqes_submitted, before);
    char left[8];
    EXPECT_EQ(::read(p[0], left, sizeof left), 3); // nothing read the pipe
    ::close(p[0]);
    ::close(p[1]);
}

} // namespace
