// op/process.hpp: waitid on real child processes.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "op_helpers.hpp"

using ringo::Runtime;
using ringo::Task;
namespace op = ringo::op;
namespace compat = ringo::uring::compat;
using namespace ringo_test;

namespace {

// A child that waits until its pipe is written to (or closed), then exits with `code`.
struct Child {
    pid_t pid = -1;
    Pipe gate;
    explicit Child(int code) {
        pid = ::fork();
        if (pid == 0) {
            ::close(gate.w);
            char c;
            [[maybe_unused]] ssize_t n = ::read(gate.r, &c, 1);
            ::_exit(code);
        }
        gate.r.reset();
    }
    void release() { gate.w.reset(); }
    ~Child() {
        if (pid > 0) { // reap it if the test did not
            release();
            ::waitpid(pid, nullptr, 0);
        }
    }
};

bool have_waitid(const Runtime& rt) { return rt.supports(compat::opcode::waitid); }

TEST(WaitidOp, ReportsTheExitStatus) {
    Runtime rt;
    if (!have_waitid(rt))
        GTEST_SKIP() << "kernel lacks IORING_OP_WAITID (6.7)";
    Child child(7);
    ASSERT_GT(child.pid, 0);
    siginfo_t info{};
    rt.block_on([&]() -> Task<void> {
        auto w = ringo::spawn([](pid_t pid, siginfo_t* si) -> Task<int> {
            co_return co_await op::waitid(P_PID, static_cast<id_t>(pid), si, WEXITED);
        }(child.pid, &info));
        co_await op::nop(); // the wait is armed before the child may exit
        EXPECT_FALSE(w.is_finished());
        child.release();
        EXPECT_EQ(co_await w, 0);
    }());
    EXPECT_EQ(info.si_pid, child.pid);
    EXPECT_EQ(info.si_code, CLD_EXITED);
    EXPECT_EQ(info.si_status, 7);
    EXPECT_EQ(info.si_signo, SIGCHLD);
    child.pid = -1; // reaped
}

TEST(WaitidOp, ByPidfdAndKilledBySignal) {
    Runtime rt;
    if (!have_waitid(rt))
        GTEST_SKIP() << "kernel lacks IORING_OP_WAITID (6.7)";
    Child child(0);
    ASSERT_GT(child.pid, 0);
    Fd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, child.pid, 0)));
    ASSERT_GE(pidfd.get(), 0);
    ASSERT_EQ(::kill(child.pid, SIGKILL), 0);
    siginfo_t info{};
    rt.block_on([&]() -> Task<void> {
        EXPECT_EQ(co_await op::waitid(P_PIDFD, static_cast<id_t>(pidfd.get()), &info, WEXITED), 0);
    }());
    EXPECT_EQ(info.si_code, CLD_KILLED);
    EXPECT_EQ(info.si_status, SIGKILL);
    child.pid = -1;
}

TEST(WaitidOp, NohangThenWait) {
    Runtime rt;
    if (!have_waitid(rt))
        GTEST_SKIP() << "kernel lacks IORING_OP_WAITID (6.7)";
    Child child(3);
    ASSERT_GT(child.pid, 0);
    rt.block_on([&]() -> Task<void> {
        siginfo_t info{};
        info.si_pid = 12345;
        EXPECT_EQ(co_await op::waitid(P_PID, static_cast<id_t>(child.pid), &info, WEXITED | WNOHANG), 0);
        EXPECT_EQ(info.si_pid, 0); // still running
        child.release();
        EXPECT_EQ(co_await op::waitid(P_ALL, 0, &info, WEXITED), 0);
        EXPECT_EQ(info.si_pid, child.pid);
        EXPECT_EQ(info.si_status, 3);
    }());
    child.pid = -1;
}

TEST(WaitidOp, Errors) {
    Runtime rt;
    if (!have_waitid(rt))
        GTEST_SKIP() << "kernel lacks IORING_OP_WAITID (6.7)";
    rt.block_on([&]() -> Task<void> {
        siginfo_t info{};
        EXPECT_EQ(co_await op::waitid(P_PID, static_cast<id_t>(::getpid()), &info, WEXITED), -ECHILD); // not a child
        EXPECT_EQ(co_await op::waitid(P_PID, 1, &info, 0), -EINVAL); // no state asked for
        EXPECT_EQ(co_await op::waitid(P_PIDFD, static_cast<id_t>(closed_fd()), &info, WEXITED), -EBADF);
    }());
    Child child(1);
    ASSERT_GT(child.pid, 0);
    child.release();
    rt.block_on([&]() -> Task<void> {
        // The child is reaped, but its siginfo cannot be stored.
        EXPECT_EQ(
            co_await op::waitid(P_PID, static_cast<id_t>(child.pid), static_cast<siginfo_t*>(bad_address()), WEXITED),
            -EFAULT);
    }());
    child.pid = -1;
}

TEST(WaitidOp, CancelAWait) {
    Runtime rt;
    if (!have_waitid(rt))
        GTEST_SKIP() << "kernel lacks IORING_OP_WAITID (6.7)";
    Child child(0);
    ASSERT_GT(child.pid, 0);
    rt.block_on([&]() -> Task<void> {
        siginfo_t info{};
        auto w = op::waitid(P_PID, static_cast<id_t>(child.pid), &info, WEXITED);
        auto h = ringo::spawn([](op::Waitid& o) -> Task<int> { co_return co_await o; }(w));
        co_await op::nop();
        EXPECT_EQ(co_await op::async_cancel(op::user_data_of(w)), 1); // waitid cancel reports a count
        EXPECT_EQ(co_await h, -ECANCELED);
    }());
}

} // namespace
