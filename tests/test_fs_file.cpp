// fs::File (fs/file.hpp): opening with OpenOptions, positional reads and writes and their
// loops, read_to_end, metadata, sync, allocate, truncate, close, the registered fast paths,
// O_DIRECT with AlignedBuffer, the error of every call, cancellation, and what each call
// allocates. Runs as root: permission errors are tested in fs_ops's forked child.
#include <ringo/fs/file.hpp>
#include <ringo/fs/path.hpp>
#include <ringo/ringo.hpp>

#include <gtest/gtest.h>

#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "helpers.hpp"

#include "alloc_counter.hpp" // replaces operator new (not under TSan, whose runtime has its own)

namespace {

using namespace std::chrono_literals;
using ringo::Result;
using ringo::Task;
using ringo::fs::File;
using ringo::fs::OpenOptions;
namespace fs = ringo::fs;
namespace op = ringo::op;

using ringo_test::open_fds;
using ringo_test::slurp;
using ringo_test::spit;

std::string pattern(std::size_t n, unsigned seed = 1) {
    std::string s(n, '\0');
    std::uint32_t x = seed * 2654435761u + 1;
    for (auto& c : s) {
        x = x * 1664525u + 1013904223u;
        c = static_cast<char>(x >> 24);
    }
    return s;
}

std::span<std::byte> bytes(std::string& s) { return std::as_writable_bytes(std::span<char>(s.data(), s.size())); }
std::span<const std::byte> cbytes(const std::string& s) {
    return std::as_bytes(std::span<const char>(s.data(), s.size()));
}

template <class F>
auto run(F f) {
    ringo::Runtime rt;
    return rt.block_on(f());
}

TEST(FsOpenOptions, FlagsFollowTheFields) {
    EXPECT_EQ(*OpenOptions{}.flags(), O_RDONLY | O_CLOEXEC);
    EXPECT_EQ(*OpenOptions{.read = true}.flags(), O_RDONLY | O_CLOEXEC);
    EXPECT_EQ(*OpenOptions{.write = true}.flags(), O_WRONLY | O_CLOEXEC);
    EXPECT_EQ(*OpenOptions({.read = true, .write = true}).flags(), O_RDWR | O_CLOEXEC);
    EXPECT_EQ(*OpenOptions{.append = true}.flags(), O_WRONLY | O_APPEND | O_CLOEXEC);
    EXPECT_EQ(*OpenOptions({.write = true, .create = true, .truncate = true}).flags(),
              O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC);
    EXPECT_EQ(*OpenOptions({.write = true, .exclusive = true}).flags(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC);
    EXPECT_EQ(*OpenOptions({.read = true, .direct = true, .custom_flags = O_NOATIME}).flags(),
              O_RDONLY | O_DIRECT | O_NOATIME | O_CLOEXEC);
    Result<int> bad = OpenOptions{.read = true, .truncate = true}.flags();
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error(), std::errc::invalid_argument);
}

TEST(FsFile, CreateWriteReadAndTheFileHoldsIt) {
    ringo_test::TempDir dir;
    std::string path = dir.file("a");
    std::string data = pattern(10000);
    std::string back = run([&]() -> Task<std::string> {
        Result<File> f = co_await File::create(path, 0600);
        EXPECT_TRUE(f);
        EXPECT_TRUE(f->is_open());
        Result<std::size_t> n = co_await f->write_at(cbytes(data), 0);
        EXPECT_EQ(n.value_or(0), data.size());
        EXPECT_EQ((co_await f->write_at("tail", data.size())).value_or(0), 4u);
        // write-only: reading is EBADF
        std::string buf(16, '\0');
        Result<std::size_t> rd = co_await f->read_at(bytes(buf), 0);
        EXPECT_EQ(rd.error(), std::errc::bad_file_descriptor);
        Result<File> g = co_await File::open(path);
        EXPECT_TRUE(g);
        std::string out(data.size() + 10, '\0');
        Result<std::size_t> m = co_await g->read_at(out.data(), out.size(), 0);
        EXPECT_EQ(m.value_or(0), data.size() + 4);
        out.resize(m.value_or(0));
        Result<std::size_t> end = co_await g->read_at(bytes(buf), out.size()); // at the end: 0
        EXPECT_EQ(end.value_or(99), 0u);
        co_return out;
    });
    EXPECT_EQ(back, data + "tail");
    EXPECT_EQ(slurp(path), data + "tail");
    struct stat st {};
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    EXPECT_EQ(::fcntl(0, F_GETFD) >= 0, true); // nothing odd happened to stdin
}

TEST(FsFile, OpenErrors) {
    ringo_test::TempDir dir;
    std::string missing = dir.file("missing"), existing = dir.file("e");
    spit(existing, "x");
    auto errs = run([&]() -> Task<std::vector<std::error_code>> {
        std::vector<std::error_code> e;
        e.push_back((co_await File::open(missing)).error());
        e.push_back((co_await File::open(dir.path(), {.write = true})).error());
        e.push_back((co_await File::open(existing, {.write = true, .exclusive = true})).error());
        e.push_back((co_await File::open(existing, {.truncate = true})).error()); // nothing submitted
        e.push_back((co_await File::open(dir.file("no/such/dir/f"), {.write = true, .create = true})).error());
        e.push_back((co_await File::open(existing + "/below")).error());
        co_return e;
    });
    ASSERT_EQ(errs.size(), 6u);
    EXPECT_EQ(errs[0], std::errc::no_such_file_or_directory);
    EXPECT_EQ(errs[0].category(), std::system_category());
    EXPECT_EQ(errs[1], std::errc::is_a_directory);
    EXPECT_EQ(errs[2], std::errc::file_exists);
    EXPECT_EQ(errs[3], std::errc::invalid_argument);
    EXPECT_EQ(errs[4], std::errc::no_such_file_or_directory);
    EXPECT_EQ(errs[5], std::errc::not_a_directory);
    EXPECT_EQ(slurp(existing), "x"); // the refused truncate did not happen
}

// An error says what failed: value()'s exception and describe() name the call and its path.
TEST(FsFile, ErrorsNameTheCallAndThePath) {
    ringo_test::TempDir dir;
    std::string missing = dir.file("missing");
    run([&]() -> Task<void> {
        Result<File> f = co_await File::open(missing);
        EXPECT_EQ(std::string(f.context()), "open " + missing);
        try {
            (void)f.value();
            ADD_FAILURE() << "no exception";
        } catch (const std::system_error& e) {
            EXPECT_EQ(std::string(e.what()), "open " + missing + ": " + f.message());
        }
        Result<void> rm = co_await ringo::fs::remove(missing);
        EXPECT_EQ(std::string(rm.context()), "remove " + missing);
        Result<ringo::fs::Metadata> md = co_await ringo::fs::metadata(missing);
        EXPECT_EQ(std::string(md.context()), "stat " + missing);
        Result<void> mk = co_await ringo::fs::create_dir(dir.file("no/such/parent"));
        EXPECT_EQ(std::string(mk.context()), "create directory " + dir.file("no/such/parent"));
        // Passed on through another Result, the note stays (read_file opens first).
        Result<std::string> whole = co_await ringo::fs::read_file(missing);
        EXPECT_EQ(whole.error(), std::errc::no_such_file_or_directory);
        EXPECT_EQ(std::string(whole.context()), "open " + missing);
        // An open file's operations name the call.
        Result<File> wo = co_await File::create(dir.file("out"));
        EXPECT_TRUE(wo);
        std::byte buf[8];
        Result<std::size_t> r = co_await wo->read_at(buf, 0);
        EXPECT_EQ(r.error(), std::errc::bad_file_descriptor);
        EXPECT_STREQ(r.context(), "read");
        Result<void> rx = co_await wo->read_exact_at(buf, 0);
        EXPECT_EQ(rx.error(), std::errc::bad_file_descriptor);
        EXPECT_STREQ(rx.context(), "read");
        EXPECT_EQ(rx.describe(), "read: " + rx.message());
        Result<File> ro = co_await File::open(dir.file("out"));
        EXPECT_TRUE(ro);
        Result<std::size_t> w = co_await ro->write_at("x", 0);
        EXPECT_EQ(w.error(), std::errc::bad_file_descriptor);
        EXPECT_STREQ(w.context(), "write");
        Result<void> wx = co_await ro->write_all_at("x", 0);
        EXPECT_STREQ(wx.context(), "write");
        Result<void> eof = co_await ro->read_exact_at(buf, 0); // the file is empty
        EXPECT_EQ(eof.error(), ringo::fs::Error::unexpected_eof);
        EXPECT_STREQ(eof.context(), "read");
    });
}

TEST(FsFile, AppendWritesAtTheEndWhateverTheOffset) {
    ringo_test::TempDir dir;
    std::string path = dir.file("log");
    spit(path, "abc");
    run([&]() -> Task<void> {
        Result<File> f = co_await File::open(path, {.append = true});
        EXPECT_TRUE(f);
        EXPECT_TRUE(co_await f->write_all_at("def", 0));
        EXPECT_TRUE(co_await f->write_all_at(std::string_view("gh"), 1));
    });
    EXPECT_EQ(slurp(path), "abcdefgh");
}

TEST(FsFile, ReadExactAtFillsOrReportsUnexpectedEof) {
    ringo_test::TempDir dir;
    std::string path = dir.file("a");
    std::string data = pattern(5000);
    spit(path, data);
    auto r = run([&]() -> Task<std::pair<std::string, Result<void>>> {
        Result<File> f = co_await File::open(path);
        std::string buf(3000, '\0');
        Result<void> ok = co_await f->read_exact_at(bytes(buf), 1000);
        EXPECT_TRUE(ok) << ok.message();
        std::string more(3000, '\0');
        Result<void> eof = co_await f->read_exact_at(bytes(more), 4000);
        EXPECT_EQ(more.substr(0, 1000), data.substr(4000)); // what there was is in the buffer
        std::string none;
        EXPECT_TRUE(co_await f->read_exact_at(bytes(none), 99999)); // empty: nothing to do
        co_return std::pair{buf, eof};
    });
    EXPECT_EQ(r.first, data.substr(1000, 3000));
    ASSERT_FALSE(r.second);
    EXPECT_EQ(r.second.error(), fs::Error::unexpected_eof);
    EXPECT_EQ(r.second.error().category(), fs::error_category());
    EXPECT_EQ(r.second.error(), std::errc::io_error); // what code that knows only std::errc sees
    EXPECT_EQ(r.second.message(), "unexpected end of data");
    EXPECT_EQ(make_error_code(fs::Error::write_zero).message(), "write moved no bytes");
}

// A pipe delivers in pieces: read_exact_at reads again after every short read.
TEST(FsFile, ReadExactAtLoopsOverShortReads) {
    int p[2];
    ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
    std::string got = run([&]() -> Task<std::string> {
        File r{ringo::Fd(p[0])}, w{ringo::Fd(p[1])};
        auto writer = ringo::spawn([](File& w) -> Task<void> {
            for (const char* piece : {"ab", "cde", "f", "ghij"}) {
                co_await ringo::sleep_for(2ms);
                EXPECT_TRUE(co_await w.write_all_at(piece, 0));
            }
        }(w));
        std::string buf(10, '\0');
        Result<void> ok = co_await r.read_exact_at(bytes(buf), 0);
        EXPECT_TRUE(ok) << ok.message();
        co_await writer;
        co_return buf;
    });
    EXPECT_EQ(got, "abcdefghij");
}

TEST(FsFile, ReadToEnd) {
    ringo_test::TempDir dir;
    std::string big = dir.file("big"), empty = dir.file("empty");
    std::string data = pattern(300001);
    spit(big, data);
    spit(empty, "");
    run([&]() -> Task<void> {
        Result<File> f = co_await File::open(big);
        Result<std::string> all = co_await f->read_to_end();
        EXPECT_TRUE(all && *all == data);
        Result<std::string> tail = co_await f->read_to_end(300000);
        EXPECT_EQ(tail.value_or("?"), data.substr(300000));
        Result<std::string> past = co_await f->read_to_end(400000);
        EXPECT_EQ(past.value_or("?"), "");
        Result<File> e = co_await File::open(empty);
        EXPECT_EQ((co_await e->read_to_end()).value_or("?"), "");
        // /proc files report size 0: the string grows as reads find data
        Result<File> p = co_await File::open("/proc/self/status");
        Result<std::string> st = co_await p->read_to_end();
        EXPECT_TRUE(st && st->find("Name:") == 0);
        Result<File> d = co_await File::open(dir.path());
        EXPECT_EQ((co_await d->read_to_end()).error(), std::errc::is_a_directory);
    });
}

TEST(FsFile, MetadataAndSize) {
    ringo_test::TempDir dir;
    std::string path = dir.file("m");
    spit(path, pattern(12345));
    ASSERT_EQ(::chmod(path.c_str(), 0640), 0);
    struct stat st {};
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    run([&]() -> Task<void> {
        Result<File> f = co_await File::open(path);
        Result<fs::Metadata> m = co_await f->metadata();
        EXPECT_TRUE(m);
        EXPECT_EQ(m->size, 12345u);
        EXPECT_TRUE(m->is_file());
        EXPECT_FALSE(m->is_dir());
        EXPECT_EQ(m->permissions(), 0640u);
        EXPECT_EQ(m->mode, st.st_mode);
        EXPECT_EQ(m->ino, st.st_ino);
        EXPECT_EQ(m->dev, st.st_dev);
        EXPECT_EQ(m->blksize, static_cast<std::uint32_t>(st.st_blksize));
        EXPECT_EQ(m->nlink, 1u);
        auto mt = std::chrono::system_clock::to_time_t(m->mtime);
        EXPECT_EQ(mt, st.st_mtim.tv_sec);
        EXPECT_EQ((co_await f->size()).value_or(0), 12345u);
        Result<File> d = co_await File::open(dir.path());
        EXPECT_TRUE((co_await d->metadata())->is_dir());
    });
}

TEST(FsFile, SyncAllocateTruncate) {
    ringo_test::TempDir dir;
    std::string path = dir.file("s");
    spit(path, "0123456789");
    run([&]() -> Task<void> {
        Result<File> f = co_await File::open(path, {.read = true, .write = true});
        EXPECT_TRUE(co_await f->sync());
        EXPECT_TRUE(co_await f->datasync());
        EXPECT_TRUE(co_await f->allocate(0, 1 << 20));
        EXPECT_EQ((co_await f->size()).value_or(0), 1u << 20);
        EXPECT_TRUE(co_await f->truncate(4));
        EXPECT_EQ((co_await f->size()).value_or(0), 4u);
        EXPECT_EQ((co_await f->read_to_end()).value_or("?"), "0123");
        EXPECT_EQ((co_await f->allocate(0, 0)).error(), std::errc::invalid_argument);
        Result<File> ro = co_await File::open(path);
        EXPECT_EQ((co_await ro->truncate(1)).error(), std::errc::invalid_argument); // not open for writing
        EXPECT_EQ((co_await ro->allocate(0, 10)).error(), std::errc::bad_file_descriptor);
    });
}

TEST(FsFile, CloseReportsAndEveryCallAfterItIsEbadf) {
    ringo_test::TempDir dir;
    std::string path = dir.file("c");
    spit(path, "hello");
    int fds = open_fds();
    run([&]() -> Task<void> {
        Result<File> f = co_await File::open(path, {.read = true, .write = true});
        int raw = f->get();
        EXPECT_GE(raw, 0);
        EXPECT_TRUE(co_await f->close());
        EXPECT_FALSE(f->is_open());
        EXPECT_EQ(f->get(), -1);
        EXPECT_LT(::fcntl(raw, F_GETFD), 0);
        EXPECT_EQ((co_await f->close()).error(), std::errc::bad_file_descriptor);
        std::string buf(4, '\0');
        EXPECT_EQ((co_await f->read_at(bytes(buf), 0)).error(), std::errc::bad_file_descriptor);
        EXPECT_EQ((co_await f->write_at("x", 0)).error(), std::errc::bad_file_descriptor);
        EXPECT_EQ((co_await f->read_exact_at(bytes(buf), 0)).error(), std::errc::bad_file_descriptor);
        EXPECT_EQ((co_await f->write_all_at("x", 0)).error(), std::errc::bad_file_descriptor);
        EXPECT_EQ((co_await f->read_to_end()).error(), std::errc::bad_file_descriptor);
        EXPECT_EQ((co_await f->metadata()).error(), std::errc::bad_file_descriptor);
        EXPECT_EQ((co_await f->size()).error(), std::errc::bad_file_descriptor);
        EXPECT_EQ((co_await f->sync()).error(), std::errc::bad_file_descriptor);
        EXPECT_EQ((co_await f->datasync()).error(), std::errc::bad_file_descriptor);
        EXPECT_EQ((co_await f->allocate(0, 1)).error(), std::errc::bad_file_descriptor);
        EXPECT_EQ((co_await f->truncate(0)).error(), std::errc::bad_file_descriptor);
    });
    EXPECT_EQ(open_fds(), fds);
    EXPECT_EQ(slurp(path), "hello");
}

TEST(FsFile, TheDestructorClosesOnEveryPath) {
    ringo_test::TempDir dir;
    std::string path = dir.file("d");
    spit(path, "x");
    int fds = open_fds();
    {
        ringo::Runtime rt;
        int with_rt = open_fds();
        rt.block_on([](const std::string& p) -> Task<void> {
            for (int i = 0; i < 10; ++i) {
                Result<File> f = co_await File::open(p);
                EXPECT_TRUE(f);
                File moved = std::move(*f);
                File other;
                other = std::move(moved);
                EXPECT_TRUE(other.is_open());
            }
            try {
                Result<File> f = co_await File::open(p);
                throw std::runtime_error("boom");
            } catch (const std::runtime_error&) {
            }
        }(path));
        EXPECT_EQ(open_fds(), with_rt) << "closed through the ring before block_on returned";
    }
    // Outside a runtime: close(2).
    {
        File f(ringo::Fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC)));
        EXPECT_TRUE(f.is_open());
    }
    EXPECT_EQ(open_fds(), fds);
}

TEST(FsFile, TakeFdHandsTheDescriptorOver) {
    ringo_test::TempDir dir;
    std::string path = dir.file("t");
    spit(path, "abc");
    run([&]() -> Task<void> {
        Result<File> f = co_await File::open(path);
        int raw = f->get();
        EXPECT_EQ(f->fd().get(), raw);
        ringo::Fd fd = f->take_fd();
        EXPECT_EQ(fd.get(), raw);
        EXPECT_FALSE(f->is_open());
        EXPECT_EQ(f->ref().raw(), -1);
        std::string buf(3, '\0');
        EXPECT_EQ((co_await f->read_at(bytes(buf), 0)).error(), std::errc::bad_file_descriptor);
        EXPECT_EQ(co_await ringo::op::read(fd, buf.data(), 3, 0), 3); // still open, owned by fd
        EXPECT_EQ(buf, "abc");
    });
}

// A registered file slot and registered buffers: the fast path when asked.
TEST(FsFile, RegisteredFileAndBuffers) {
    RINGO_IO_URING_ONLY("registered files and buffers");
    ringo_test::TempDir dir;
    std::string path = dir.file("r");
    std::string data = pattern(8192);
    spit(path, data);
    ringo::Runtime rt;
    op::FileTable files(rt);
    ringo::buf::BufferTable buffers(rt);
    ASSERT_EQ(files.register_sparse(4), 0);
    fs::AlignedBuffer mem(8192);
    iovec iov{mem.data(), mem.size()};
    ASSERT_EQ(buffers.register_buffers(std::span<const iovec>(&iov, 1)), 0);
    rt.block_on(
        [](const std::string& p, const std::string& data, op::FileTable& files, fs::AlignedBuffer& mem) -> Task<void> {
            Result<File> f = co_await File::open(p, {.read = true, .write = true});
            EXPECT_EQ(f->registered_slot(), -1);
            EXPECT_TRUE(f->register_in(files, 2));
            EXPECT_EQ(f->registered_slot(), 2);
            EXPECT_TRUE(f->ref().fixed());
            // Proof that operations name the slot: close the descriptor behind the File's back;
            // the slot still holds the file.
            int raw = f->get();
            Result<fs::Metadata> m0 = co_await f->metadata();
            EXPECT_TRUE(m0);
            EXPECT_EQ(::close(raw), 0);
            std::string buf(100, '\0');
            EXPECT_EQ((co_await f->read_at(bytes(buf), 0)).value_or(0), 100u);
            EXPECT_EQ(buf, data.substr(0, 100));
            Result<std::size_t> n = co_await f->read_at_fixed(mem.span(0, 4096), 4096, 0);
            EXPECT_EQ(n.value_or(0), 4096u);
            EXPECT_EQ(std::memcmp(mem.data(), data.data() + 4096, 4096), 0);
            std::memcpy(mem.data() + 4096, "FIXED", 5);
            EXPECT_EQ((co_await f->write_at_fixed(mem.span(4096, 5), 10, 0)).value_or(0), 5u);
            // a buffer outside the registered one: EFAULT; a buffer index not registered: EFAULT
            std::string outside(16, '\0');
            EXPECT_EQ((co_await f->read_at_fixed(bytes(outside), 0, 0)).error(), std::errc::bad_address);
            EXPECT_EQ((co_await f->read_at_fixed(mem.span(0, 16), 0, 5)).error(), std::errc::bad_address);
            // close() empties the slot (the descriptor was closed already: EBADF)
            Result<void> c = co_await f->close();
            EXPECT_EQ(c.error(), std::errc::bad_file_descriptor);
            EXPECT_EQ(f->registered_slot(), -1);
            EXPECT_EQ(co_await op::read(op::Fixed{2}, buf.data(), 1, 0), -EBADF);
            // register_in errors: a closed File, a slot past the table's end
            EXPECT_EQ(f->register_in(files, 0).error(), std::errc::bad_file_descriptor);
            Result<File> g = co_await File::open(p);
            EXPECT_EQ(g->register_in(files, 99).error(), std::errc::invalid_argument);
            EXPECT_EQ(g->registered_slot(), -1);
        }(path, data, files, mem));
    EXPECT_EQ(slurp(path).substr(0, 20), data.substr(0, 10) + "FIXED" + data.substr(15, 5));
}

TEST(FsFile, RegisterInWithoutATableIsEnxio) {
    RINGO_IO_URING_ONLY("a registered file table");
    ringo_test::TempDir dir;
    std::string path = dir.file("n");
    spit(path, "x");
    ringo::Runtime rt;
    op::FileTable files(rt);
    rt.block_on([](const std::string& p, op::FileTable& files) -> Task<void> {
        Result<File> f = co_await File::open(p);
        EXPECT_EQ(f->register_in(files, 0).error(), std::errc::no_such_device_or_address);
    }(path, files));
}

TEST(FsAlignedBuffer, AlignedZeroedMoveOnly) {
    fs::AlignedBuffer a(10000);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a.data()) % 4096, 0u);
    EXPECT_EQ(a.size(), 10000u);
    EXPECT_EQ(a.alignment(), 4096u);
    for (std::byte b : a.span())
        ASSERT_EQ(b, std::byte{0});
    fs::AlignedBuffer b(100, 65536);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b.data()) % 65536, 0u);
    std::byte* p = a.data();
    fs::AlignedBuffer c(std::move(a));
    EXPECT_EQ(c.data(), p);
    EXPECT_TRUE(a.empty()); // NOLINT(bugprone-use-after-move)
    b = std::move(c);
    EXPECT_EQ(b.data(), p);
    EXPECT_EQ(b.span(9990, 100).size(), 10u);
    EXPECT_EQ(b.span(20000, 1).size(), 0u);
    fs::AlignedBuffer z(0);
    EXPECT_TRUE(z.empty());
    EXPECT_EQ(z.data(), nullptr);
    EXPECT_THROW(fs::AlignedBuffer(16, 3000), std::invalid_argument);
    EXPECT_THROW(fs::AlignedBuffer(16, 2), std::invalid_argument);
    static_assert(!std::is_copy_constructible_v<fs::AlignedBuffer>);
}

// O_DIRECT: aligned buffer, size and offset go through; an unaligned buffer is EINVAL. On a
// file system without O_DIRECT (tmpfs before 6.6) the open is EINVAL and the test is skipped.
TEST(FsFile, DirectIoWithAnAlignedBuffer) {
    std::string base = "/var/tmp";
    if (::access(base.c_str(), W_OK) != 0)
        base = std::filesystem::temp_directory_path().string();
    std::string tmpl = base + "/ringo-direct-XXXXXX";
    int tfd = ::mkstemp(tmpl.data());
    ASSERT_GE(tfd, 0);
    ::close(tfd);
    struct Out {
        std::error_code open_error;
        bool ran = false;
    };
    Out out = run([&]() -> Task<Out> {
        Out o;
        Result<File> f = co_await File::open(tmpl, {.read = true, .write = true, .direct = true});
        if (!f) {
            o.open_error = f.error();
            co_return o;
        }
        o.ran = true;
        fs::AlignedBuffer buf(8192);
        std::memset(buf.data(), 'D', 4096);
        std::memset(buf.data() + 4096, 'E', 4096);
        Result<void> w = co_await f->write_all_at(buf.span(), 4096);
        EXPECT_TRUE(w) << w.message();
        fs::AlignedBuffer in(4096);
        EXPECT_EQ((co_await f->read_at(in.span(), 8192)).value_or(0), 4096u);
        EXPECT_EQ(in.data()[0], std::byte{'E'});
        EXPECT_EQ(in.data()[4095], std::byte{'E'});
        // the alignment rule: a size or offset that is not a multiple of the block size is
        // EINVAL (over data: a hole may be read without the check). How far the address may be
        // misaligned depends on the device (its DMA alignment), so it is not tested.
        EXPECT_EQ((co_await f->read_at(in.data(), 100, 4096)).error(), std::errc::invalid_argument);
        EXPECT_EQ((co_await f->read_at(in.data(), 4096, 4097)).error(), std::errc::invalid_argument);
        co_return o;
    });
    std::string content = slurp(tmpl);
    ::unlink(tmpl.c_str());
    if (!out.ran) {
        ASSERT_EQ(out.open_error, std::errc::invalid_argument) << out.open_error.message();
        GTEST_SKIP() << base << " does not support O_DIRECT (open gave EINVAL)";
    }
    ASSERT_EQ(content.size(), 12288u);
    EXPECT_EQ(content.substr(0, 4096), std::string(4096, '\0'));
    EXPECT_EQ(content.substr(4096, 4096), std::string(4096, 'D'));
}

// In a cancelled task every File operation yields ECANCELED (nothing is submitted), close()
// still closes, and nothing stays open.
struct AfterCancel {
    std::vector<std::error_code> errors;
    Result<void> closed = std::make_error_code(std::errc::io_error);
    int raw = -1;
};

Task<void> ops_in_a_cancelled_task(const std::string* path, AfterCancel* out) {
    Result<File> f = co_await File::open(*path, {.read = true, .write = true});
    EXPECT_TRUE(f);
    out->raw = f->get();
    int slept = co_await ringo::sleep_for(10s); // cancelled here (not awaited in an if: see docs/fs.md)
    EXPECT_EQ(slept, -ECANCELED);
    std::string buf(8, '\0');
    out->errors.push_back((co_await f->read_at(bytes(buf), 0)).error());
    out->errors.push_back((co_await f->write_at("x", 0)).error());
    out->errors.push_back((co_await f->read_exact_at(bytes(buf), 0)).error());
    out->errors.push_back((co_await f->write_all_at("x", 0)).error());
    out->errors.push_back((co_await f->read_to_end()).error());
    out->errors.push_back((co_await f->metadata()).error());
    out->errors.push_back((co_await f->size()).error());
    out->errors.push_back((co_await f->sync()).error());
    out->errors.push_back((co_await f->datasync()).error());
    out->errors.push_back((co_await f->allocate(0, 1)).error());
    out->errors.push_back((co_await f->truncate(0)).error());
    out->errors.push_back((co_await File::open(*path)).error());
    out->errors.push_back((co_await fs::read_file(*path)).error());
    out->closed = co_await f->close();
}

TEST(FsFile, EveryOperationInACancelledTaskIsEcanceled) {
    ringo_test::TempDir dir;
    std::string path = dir.file("x");
    spit(path, "data");
    int fds = open_fds();
    AfterCancel out;
    {
        ringo::Runtime rt;
        rt.block_on([](const std::string* p, AfterCancel* o) -> Task<void> {
            auto h = ringo::spawn(ops_in_a_cancelled_task(p, o));
            while (o->raw < 0)
                co_await ringo::yield();
            h.cancel();
            co_await h;
        }(&path, &out));
        EXPECT_EQ(rt.stats().ops_in_flight, 0u);
    }
    ASSERT_EQ(out.errors.size(), 13u);
    for (std::size_t i = 0; i < out.errors.size(); ++i)
        EXPECT_EQ(out.errors[i], std::errc::operation_canceled) << "call " << i << ": " << out.errors[i].message();
    EXPECT_TRUE(out.closed) << out.closed.message();
    EXPECT_EQ(open_fds(), fds);
    EXPECT_EQ(slurp(path), "data");
}

// A read in flight when its task is cancelled: interrupted (a pipe with no writer data),
// ECANCELED, and the File closes with the frame.
TEST(FsFile, ReadInFlightIsInterruptedByCancel) {
    int p[2];
    ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
    int fds = open_fds();
    std::error_code e = run([&]() -> Task<std::error_code> {
        auto h = ringo::spawn([](int rd, int wr) -> Task<std::error_code> {
            File r{ringo::Fd(rd)}, w{ringo::Fd(wr)};
            std::string buf(4, '\0');
            co_return (co_await r.read_exact_at(bytes(buf), 0)).error();
        }(p[0], p[1]));
        co_await ringo::yield();
        co_await ringo::yield();
        h.cancel();
        co_return co_await h;
    });
    EXPECT_EQ(e, std::errc::operation_canceled);
    EXPECT_EQ(open_fds(), fds - 2);
}

// What each call allocates: the single-operation calls nothing; the looping calls one frame
// from ringo's frame pool each (no heap allocation once it is warm).
TEST(FsFile, AllocationsPerCall) {
#ifdef RINGO_TEST_NO_NEW_COUNT
    GTEST_SKIP() << "operator new is not counted under TSan";
#endif
    ringo_test::TempDir dir;
    std::string path = dir.file("alloc");
    spit(path, pattern(1 << 16));
    struct Counts {
        long single_heap = -1, loop_heap = -1;
        std::uint64_t single_frames = 1, loop_frames = 0;
    };
    Counts c = run([&]() -> Task<Counts> {
        Counts c;
        Result<File> f = co_await File::open(path, {.read = true, .write = true});
        std::string buf(4096, '\0');
        auto b = bytes(buf);
        // (Warm: on the epoll engine the first call that goes to the thread pool starts its
        // thread, which allocates once; the open itself may not have needed the pool.)
        EXPECT_TRUE(co_await f->datasync());
        long h0 = g_allocs.load();
        std::uint64_t f0 = ringo::detail::t_frames_allocated;
        for (int i = 0; i < 200; ++i) {
            EXPECT_EQ((co_await f->read_at(b, (i * 4096) % (1 << 16))).value_or(0), 4096u);
            EXPECT_EQ((co_await f->write_at(b.first(16), 0)).value_or(0), 16u);
            EXPECT_TRUE(co_await f->metadata());
            EXPECT_TRUE(co_await f->size());
            EXPECT_TRUE(co_await f->datasync());
        }
        c.single_heap = g_allocs.load() - h0;
        c.single_frames = ringo::detail::t_frames_allocated - f0;
        h0 = g_allocs.load();
        f0 = ringo::detail::t_frames_allocated;
        for (int i = 0; i < 200; ++i) {
            EXPECT_TRUE(co_await f->read_exact_at(b, 4096));
            EXPECT_TRUE(co_await f->write_all_at(b.first(16), 0));
        }
        c.loop_heap = g_allocs.load() - h0;
        c.loop_frames = ringo::detail::t_frames_allocated - f0;
        co_return c;
    });
    EXPECT_EQ(c.single_heap, 0);
    EXPECT_EQ(c.single_frames, 0u);
    EXPECT_EQ(c.loop_frames, 0u); // read_exact_at and write_all_at are awaited directly, no frame
    EXPECT_EQ(c.loop_heap, 0);
}

// The descriptor limit: in a child with RLIMIT_NOFILE lowered, opening files ends in EMFILE,
// reported, nothing crashes, and closing one makes room again.
TEST(FsFile, DescriptorLimitIsEmfile) {
    // The sanitizers' runtimes open descriptors of their own (UBSan reads /proc/self/maps to
    // check a vptr): under a limit of 64 they report false errors.
    if (!ringo::detail::frame_pool_enabled) // off exactly in the ASan and TSan builds
        GTEST_SKIP() << "a sanitizer build: its runtime needs descriptors under the limit";
    ringo_test::TempDir dir;
    std::string path = dir.file("lim");
    spit(path, "x");
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        int code = 0;
        {
            ringo::Runtime rt;
            rlimit rl{};
            ::getrlimit(RLIMIT_NOFILE, &rl);
            rl.rlim_cur = 64;
            if (::setrlimit(RLIMIT_NOFILE, &rl) != 0)
                ::_exit(10);
            code = rt.block_on([](const std::string& p) -> Task<int> {
                std::vector<File> open;
                for (int i = 0; i < 200; ++i) {
                    Result<File> f = co_await File::open(p);
                    if (!f) {
                        if (f.error() != std::errc::too_many_files_open)
                            co_return 1;
                        if (open.empty())
                            co_return 2;
                        open.pop_back(); // closed by the destructor, through the ring
                        co_await ringo::op::nop();
                        Result<File> again = co_await File::open(p);
                        co_return again ? 0 : 3;
                    }
                    open.push_back(std::move(*f));
                }
                co_return 4; // the limit never hit
            }(path));
        }
        ::_exit(code);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
}

} // namespace
