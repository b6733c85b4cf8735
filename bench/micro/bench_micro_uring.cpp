// Raw liburing baselines of the micro figure, with ringo's default ring flags:
//   bench_micro_uring nop --count N              one NOP at a time: submit, wait, reap
//   bench_micro_uring nop-batch --count N [--batch B]   B NOPs per submission
// Each submission is one io_uring_enter (submit B, wait for B), issued inline in the loop as
// ringo issues its own: see ../net/uring_enter.hpp for why not through io_uring_submit_and_wait.
#include <liburing.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "../net/uring_enter.hpp"

namespace {
double cpu_seconds() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}
[[noreturn]] void usage(const char* msg) {
    std::fprintf(stderr, "error: %s\nusage: bench_micro_uring nop|nop-batch --count N [--batch B]\n", msg);
    std::exit(2);
}
} // namespace

int main(int argc, char** argv) {
    if (argc < 2)
        usage("missing subcommand");
    std::string sub = argv[1];
    long count = -1, batch = 32;
    for (int i = 2; i + 1 < argc; i += 2) {
        std::string a = argv[i];
        long v = std::strtol(argv[i + 1], nullptr, 10);
        if (v <= 0)
            usage("values must be positive");
        if (a == "--count")
            count = v;
        else if (a == "--batch")
            batch = v;
        else
            usage("unknown option");
    }
    if (count <= 0 || (sub != "nop" && sub != "nop-batch"))
        usage("need nop|nop-batch --count N");
    if (sub == "nop")
        batch = 1;
    io_uring ring;
    io_uring_params p{};
    p.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_SUBMIT_ALL;
    if (int r = io_uring_queue_init_params(256, &ring, &p); r < 0) {
        std::printf("{\"bench\":\"%s\",\"impl\":\"liburing\",\"ok\":false,\"error\":\"setup failed: %d\"}\n", sub.c_str(), r);
        return 1;
    }
    unsigned enter_fd = static_cast<unsigned>(ring.ring_fd), enter_flags = IORING_ENTER_GETEVENTS;
    if (io_uring_register_ring_fd(&ring) == 1) {
        enter_fd = static_cast<unsigned>(ring.enter_ring_fd);
        enter_flags |= IORING_ENTER_REGISTERED_RING;
    }
    if (batch > 256)
        batch = 256;
    long errors = 0, ops = 0, enters = 0;
    double c0 = cpu_seconds();
    auto t0 = std::chrono::steady_clock::now();
    while (ops < count) {
        for (long b = 0; b < batch; ++b)
            io_uring_prep_nop(io_uring_get_sqe(&ring));
        // Publish the SQ tail (what io_uring_submit_and_wait does first), then one enter.
        const unsigned tail = ring.sq.sqe_tail;
        ring.sq.sqe_head = tail;
        io_uring_smp_store_release(ring.sq.ktail, tail);
        const int r =
            nb::enter_inline(enter_fd, static_cast<unsigned>(batch), static_cast<unsigned>(batch), enter_flags);
        ++enters;
        if (r != batch) { // SUBMIT_ALL and a CQ with room: only a failed enter gets here
            errors += batch;
            break;
        }
        unsigned head, seen = 0;
        io_uring_cqe* cqe;
        io_uring_for_each_cqe(&ring, head, cqe) {
            errors += (cqe->res != 0);
            ++seen;
        }
        io_uring_cq_advance(&ring, seen);
        ops += seen;
    }
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double cpu = cpu_seconds() - c0;
    io_uring_queue_exit(&ring);
    std::printf("{\"bench\":\"%s\",\"impl\":\"liburing\",\"variant\":\"plain\",\"count\":%ld,\"ops\":%ld,\"bytes\":0,"
                "\"seconds\":%.6f,\"cpu_seconds\":%.6f,\"ns_per_op\":%.3f,\"syscalls\":%ld,\"syscalls_per_op\":%.4f,"
                "\"errors\":%ld,\"ok\":%s}\n",
                sub.c_str(), count, ops, secs, cpu, secs * 1e9 / double(ops ? ops : 1), enters,
                double(enters) / double(ops ? ops : 1), errors, errors ? "false" : "true");
    return errors ? 1 : 0;
}
