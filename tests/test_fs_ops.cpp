// ringo::fs by path (fs/path.hpp): read_file, write_file, copy (contents, sizes around the
// chunk size, short reads, modes, errors, a full file system, cancellation midway), remove,
// remove_dir, rename, create_dir, create_dirs, exists, metadata, symlink_metadata, and a
// permission error in a child that dropped root's privileges.
#include <ringo/fs/file.hpp>
#include <ringo/fs/path.hpp>
#include <ringo/ringo.hpp>

#include <gtest/gtest.h>

#include <dirent.h>
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "helpers.hpp"

namespace {

using namespace std::chrono_literals;
using ringo::Result;
using ringo::Task;
using ringo::fs::File;
namespace fs = ringo::fs;

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

template <class F>
auto run(F f) {
    ringo::Runtime rt;
    return rt.block_on(f());
}

mode_t mode_of(const std::string& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 ? st.st_mode & 07777 : 0;
}

TEST(FsPath, ReadFileAndWriteFile) {
    ringo_test::TempDir dir;
    std::string a = dir.file("a"), b = dir.file("b");
    std::string data = pattern(200000);
    run([&]() -> Task<void> {
        EXPECT_TRUE(co_await fs::write_file(a, data));
        EXPECT_EQ((co_await fs::read_file(a)).value_or("?"), data);
        EXPECT_TRUE(co_await fs::write_file(a, "short")); // replaces: emptied first
        EXPECT_EQ((co_await fs::read_file(a)).value_or("?"), "short");
        EXPECT_TRUE(co_await fs::write_file(b, std::string_view()));
        EXPECT_EQ((co_await fs::read_file(b)).value_or("?"), "");
        EXPECT_EQ((co_await fs::read_file(dir.file("missing"))).error(), std::errc::no_such_file_or_directory);
        EXPECT_EQ((co_await fs::read_file(dir.path())).error(), std::errc::is_a_directory);
        EXPECT_EQ((co_await fs::write_file(dir.path(), "x")).error(), std::errc::is_a_directory);
        EXPECT_EQ((co_await fs::write_file(dir.file("no/dir"), "x")).error(), std::errc::no_such_file_or_directory);
    });
    EXPECT_EQ(slurp(a), "short");
    EXPECT_EQ(mode_of(b) & 0600, 0600u);
}

// Sizes around the chunk: empty, one byte, a chunk less one, a chunk, a chunk and one, many
// chunks and a tail, with the default 4 x 128 KiB and a small 3 x 4 KiB.
TEST(FsCopy, CopiesEverySizeExactly) {
    ringo_test::TempDir dir;
    std::string src = dir.file("src"), dst = dir.file("dst");
    for (fs::CopyOptions o : {fs::CopyOptions{}, fs::CopyOptions{4096, 3}}) {
        std::size_t c = o.chunk;
        for (std::size_t n :
             {std::size_t{0}, std::size_t{1}, c - 1, c, c + 1, 4 * c + 7, 9 * c + c / 2, std::size_t{3} << 20}) {
            std::string data = pattern(n, static_cast<unsigned>(n));
            spit(src, data);
            Result<std::uint64_t> r =
                run([&]() -> Task<Result<std::uint64_t>> { co_return co_await fs::copy(src, dst, o); });
            ASSERT_TRUE(r) << n << ": " << r.message();
            EXPECT_EQ(*r, n);
            EXPECT_TRUE(slurp(dst) == data) << "size " << n << " chunk " << c;
        }
    }
}

TEST(FsCopy, PreservesTheSourceModeAndReplacesTheTarget) {
    ringo_test::TempDir dir;
    std::string src = dir.file("src"), dst = dir.file("dst");
    spit(src, "#!/bin/sh\n");
    spit(dst, std::string(100000, 'o'));
    ASSERT_EQ(::chmod(dst.c_str(), 0600), 0);
    mode_t old = ::umask(022);
    for (mode_t m : {mode_t{0755}, mode_t{0640}, mode_t{0777}, mode_t{0400}}) {
        ASSERT_EQ(::chmod(src.c_str(), m), 0);
        Result<std::uint64_t> r = run([&]() -> Task<Result<std::uint64_t>> { co_return co_await fs::copy(src, dst); });
        EXPECT_EQ(r.value_or(0), 10u);
        EXPECT_EQ(mode_of(dst), m) << std::oct << m; // the umask does not apply
        EXPECT_EQ(slurp(dst), "#!/bin/sh\n");
        ASSERT_EQ(::chmod(dst.c_str(), 0600), 0);
    }
    ::umask(old);
}

// A destination that is not a regular file (a character device like /dev/null) takes the bytes
// and keeps its own mode: copy() once gave it the source's, so copying a 0600 file to /dev/null
// as root left /dev/null unusable by everyone else. The device is made here (root only).
TEST(FsCopy, LeavesTheModeOfADeviceAlone) {
    ringo_test::TempDir dir;
    std::string src = dir.file("src"), dev = dir.file("null");
    spit(src, "private");
    ASSERT_EQ(::chmod(src.c_str(), 0600), 0);
    if (::mknod(dev.c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0)
        GTEST_SKIP() << "mknod: " << std::strerror(errno) << " (needs root)";
    ASSERT_EQ(::chmod(dev.c_str(), 0666), 0);
    Result<std::uint64_t> r = run([&]() -> Task<Result<std::uint64_t>> { co_return co_await fs::copy(src, dev); });
    EXPECT_EQ(r.value_or(0), 7u) << r.message();
    EXPECT_EQ(mode_of(dev), 0666u) << std::oct << mode_of(dev);
}

// A FIFO delivers what its writer wrote, piece by piece: every read is short, and copy fills
// its chunk before writing it.
TEST(FsCopy, ShortReadsFromAFifo) {
    ringo_test::TempDir dir;
    std::string fifo = dir.file("fifo"), dst = dir.file("dst");
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    std::string data = pattern(30000);
    std::thread writer([&] {
        int fd = ::open(fifo.c_str(), O_WRONLY | O_CLOEXEC);
        for (std::size_t i = 0; i < data.size(); i += 1000) {
            ASSERT_EQ(::write(fd, data.data() + i, 1000), 1000);
            std::this_thread::sleep_for(1ms);
        }
        ::close(fd);
    });
    Result<std::uint64_t> r = run(
        [&]() -> Task<Result<std::uint64_t>> { co_return co_await fs::copy(fifo, dst, {.chunk = 4096, .depth = 1}); });
    writer.join();
    ASSERT_TRUE(r) << r.message();
    EXPECT_EQ(*r, data.size());
    EXPECT_TRUE(slurp(dst) == data);
}

TEST(FsCopy, Errors) {
    ringo_test::TempDir dir;
    std::string src = dir.file("src"), link = dir.file("link");
    spit(src, "keep me");
    ASSERT_EQ(::symlink(src.c_str(), link.c_str()), 0);
    int fds = open_fds();
    auto errs = run([&]() -> Task<std::vector<std::error_code>> {
        std::vector<std::error_code> e;
        e.push_back((co_await fs::copy(dir.file("missing"), dir.file("x"))).error());
        e.push_back((co_await fs::copy(dir.path(), dir.file("x"))).error());
        e.push_back((co_await fs::copy(src, src)).error());
        e.push_back((co_await fs::copy(src, link)).error()); // the same file through a link
        e.push_back((co_await fs::copy(src, dir.file("no/such/x"))).error());
        e.push_back((co_await fs::copy(src, dir.path())).error());
        e.push_back((co_await fs::copy(src, dir.file("y"), {.chunk = 0})).error());
        e.push_back((co_await fs::copy(src, dir.file("y"), {.depth = 0})).error());
        co_return e;
    });
    ASSERT_EQ(errs.size(), 8u);
    EXPECT_EQ(errs[0], std::errc::no_such_file_or_directory);
    EXPECT_EQ(errs[1], std::errc::is_a_directory);
    EXPECT_EQ(errs[2], std::errc::invalid_argument);
    EXPECT_EQ(errs[3], std::errc::invalid_argument);
    EXPECT_EQ(errs[4], std::errc::no_such_file_or_directory);
    EXPECT_EQ(errs[5], std::errc::is_a_directory);
    EXPECT_EQ(errs[6], std::errc::invalid_argument);
    EXPECT_EQ(errs[7], std::errc::invalid_argument);
    EXPECT_EQ(slurp(src), "keep me");
    EXPECT_EQ(open_fds(), fds);
}

// A full file system: a 1 MiB tmpfs. write_all_at and copy report ENOSPC after writing what
// fits, and nothing stays open. Needs root (mount); skipped with a message otherwise.
TEST(FsErrors, FullFileSystemIsEnospc) {
    ringo_test::TempDir dir;
    std::string mnt = dir.file("mnt");
    ASSERT_EQ(::mkdir(mnt.c_str(), 0755), 0);
    if (::mount("ringo-test", mnt.c_str(), "tmpfs", 0, "size=1m") != 0)
        GTEST_SKIP() << "cannot mount a tmpfs (" << std::strerror(errno) << "): needs root";
    struct Unmount {
        std::string p;
        ~Unmount() { ::umount2(p.c_str(), MNT_DETACH); }
    } unmount{mnt};
    std::string big = dir.file("big");
    spit(big, pattern(3 << 20));
    int fds = open_fds();
    struct Out {
        std::error_code write_all, copy, small;
        std::uint64_t size_after = 0;
    };
    Out out = run([&]() -> Task<Out> {
        Out o;
        std::string data = pattern(2 << 20);
        Result<File> f = co_await File::create(mnt + "/w");
        EXPECT_TRUE(f);
        o.write_all = (co_await f->write_all_at(data, 0)).error(); // a short write, then ENOSPC
        o.size_after = (co_await f->size()).value_or(0);
        EXPECT_TRUE(co_await f->close());
        EXPECT_TRUE(co_await fs::remove(mnt + "/w"));
        o.copy = (co_await fs::copy(big, mnt + "/c")).error();
        EXPECT_TRUE(co_await fs::remove(mnt + "/c"));
        o.small = (co_await fs::write_file(mnt + "/s", "fits")).error(); // room again
        co_return o;
    });
    EXPECT_EQ(out.write_all, std::errc::no_space_on_device) << out.write_all.message();
    EXPECT_GT(out.size_after, 0u);
    EXPECT_LT(out.size_after, 2u << 20);
    EXPECT_EQ(out.copy, std::errc::no_space_on_device) << out.copy.message();
    EXPECT_FALSE(out.small) << out.small.message();
    EXPECT_EQ(open_fds(), fds);
}

std::string big_sparse_file(const ringo_test::TempDir& dir, std::uint64_t size) {
    std::string p = dir.file("huge");
    int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(::ftruncate(fd, static_cast<off_t>(size)), 0);
    EXPECT_EQ(::pwrite(fd, "end", 3, static_cast<off_t>(size - 3)), 3);
    ::close(fd);
    return p;
}

// What with_timeout yields for a Task's value says whether the deadline passed.
template <class T>
bool deadline_passed(const T& t) {
    if constexpr (requires { t.timed_out(); })
        return t.timed_out();
    else
        return !t.has_value();
}

// A copy cancelled midway by with_timeout: every branch stops, both files close, no
// operation is left in flight.
TEST(FsCopy, CancelledMidwayByATimeoutLeavesNothingOpen) {
    ringo_test::TempDir dir;
    std::string src = big_sparse_file(dir, 256u << 20), dst = dir.file("dst");
    int fds = open_fds();
    std::uint32_t in_flight = 99;
    bool timed_out = false;
    {
        ringo::Runtime rt;
        timed_out = rt.block_on([](const std::string& s, const std::string& d) -> Task<bool> {
            auto t = co_await ringo::with_timeout(fs::copy(s, d), 20ms);
            co_return deadline_passed(t);
        }(src, dst));
        in_flight = rt.stats().ops_in_flight;
    }
    EXPECT_TRUE(timed_out) << "the copy of 256 MiB finished within 20 ms";
    EXPECT_EQ(in_flight, 0u);
    EXPECT_EQ(open_fds(), fds);
    struct stat st {};
    if (::stat(dst.c_str(), &st) == 0)
        EXPECT_LT(st.st_size, 256 << 20); // stopped midway
    else
        EXPECT_EQ(errno, ENOENT); // stopped before the copy had made it (a slow or busy machine)
}

TEST(FsCopy, CancelledThroughItsJoinHandle) {
    ringo_test::TempDir dir;
    std::string src = big_sparse_file(dir, 256u << 20), dst = dir.file("dst");
    int fds = open_fds();
    ringo::Runtime rt;
    int with_rt = open_fds();
    Result<std::uint64_t> r =
        rt.block_on([](const std::string& s, const std::string& d) -> Task<Result<std::uint64_t>> {
            auto h = ringo::spawn(fs::copy(s, d));
            co_await ringo::sleep_for(10ms);
            h.cancel();
            co_return co_await h;
        }(src, dst));
    EXPECT_EQ(r.error(), std::errc::operation_canceled) << r.message();
    EXPECT_EQ(rt.stats().ops_in_flight, 0u);
    EXPECT_EQ(open_fds(), with_rt);
    (void)fds;
}

TEST(FsPath, RemoveRenameCreateDir) {
    ringo_test::TempDir dir;
    std::string f = dir.file("f"), g = dir.file("g"), d = dir.file("d"), full = dir.file("full");
    spit(f, "1");
    ASSERT_EQ(::mkdir(full.c_str(), 0755), 0);
    spit(full + "/x", "x");
    auto errs = run([&]() -> Task<std::vector<std::error_code>> {
        std::vector<std::error_code> e;
        EXPECT_TRUE(co_await fs::rename(f, g));
        e.push_back((co_await fs::rename(f, g)).error()); // f is gone
        EXPECT_TRUE(co_await fs::create_dir(d, 0700));
        e.push_back((co_await fs::create_dir(d)).error());
        e.push_back((co_await fs::create_dir(dir.file("no/such"))).error());
        e.push_back((co_await fs::remove(d)).error());        // a directory
        e.push_back((co_await fs::remove_dir(g)).error());    // a file
        e.push_back((co_await fs::remove_dir(full)).error()); // not empty
        e.push_back((co_await fs::remove(dir.file("none"))).error());
        EXPECT_TRUE(co_await fs::remove(g));
        EXPECT_TRUE(co_await fs::remove_dir(d));
        e.push_back((co_await fs::remove_dir(d)).error());
        co_return e;
    });
    ASSERT_EQ(errs.size(), 8u);
    EXPECT_EQ(errs[0], std::errc::no_such_file_or_directory);
    EXPECT_EQ(errs[1], std::errc::file_exists);
    EXPECT_EQ(errs[2], std::errc::no_such_file_or_directory);
    EXPECT_EQ(errs[3], std::errc::is_a_directory);
    EXPECT_EQ(errs[4], std::errc::not_a_directory);
    EXPECT_EQ(errs[5], std::errc::directory_not_empty);
    EXPECT_EQ(errs[6], std::errc::no_such_file_or_directory);
    EXPECT_EQ(errs[7], std::errc::no_such_file_or_directory);
    EXPECT_FALSE(std::filesystem::exists(g));
    EXPECT_FALSE(std::filesystem::exists(d));
}

TEST(FsPath, CreateDirsLikeMkdirP) {
    ringo_test::TempDir dir;
    std::string deep = dir.file("a/b/c/d"), file = dir.file("file");
    spit(file, "x");
    auto errs = run([&]() -> Task<std::vector<std::error_code>> {
        std::vector<std::error_code> e;
        EXPECT_TRUE(co_await fs::create_dirs(deep));
        EXPECT_TRUE(co_await fs::create_dirs(deep)); // all exist: fine
        EXPECT_TRUE(co_await fs::create_dirs(dir.file("a/b/e//f/")));
        EXPECT_TRUE(co_await fs::create_dirs(dir.path()));
        EXPECT_TRUE(co_await fs::create_dirs("/"));
        e.push_back((co_await fs::create_dirs(file)).error());          // a file is the path itself
        e.push_back((co_await fs::create_dirs(file + "/sub")).error()); // a file above it
        e.push_back((co_await fs::create_dirs("")).error());
        co_return e;
    });
    EXPECT_TRUE(std::filesystem::is_directory(deep));
    EXPECT_TRUE(std::filesystem::is_directory(dir.file("a/b/e/f")));
    ASSERT_EQ(errs.size(), 3u);
    EXPECT_EQ(errs[0], std::errc::file_exists);
    EXPECT_EQ(errs[1], std::errc::not_a_directory);
    EXPECT_EQ(errs[2], std::errc::no_such_file_or_directory);
}

TEST(FsPath, CreateDirsRelativeAndConcurrent) {
    ringo_test::TempDir dir;
    std::string cwd = std::filesystem::current_path().string();
    ASSERT_EQ(::chdir(dir.path().c_str()), 0);
    run([]() -> Task<void> {
        // several tasks creating overlapping trees at once: each sees the others' directories
        auto a = ringo::spawn(fs::create_dirs("x/y/z1"));
        auto b = ringo::spawn(fs::create_dirs("x/y/z2"));
        auto c = ringo::spawn(fs::create_dirs("x/y"));
        EXPECT_TRUE(co_await a);
        EXPECT_TRUE(co_await b);
        EXPECT_TRUE(co_await c);
    });
    EXPECT_TRUE(std::filesystem::is_directory(dir.path() / "x/y/z1"));
    EXPECT_TRUE(std::filesystem::is_directory(dir.path() / "x/y/z2"));
    ASSERT_EQ(::chdir(cwd.c_str()), 0);
}

TEST(FsPath, ExistsMetadataSymlinkMetadata) {
    ringo_test::TempDir dir;
    std::string f = dir.file("f"), link = dir.file("link"), dangling = dir.file("dangling");
    spit(f, "12345");
    ASSERT_EQ(::symlink(f.c_str(), link.c_str()), 0);
    ASSERT_EQ(::symlink(dir.file("nothing").c_str(), dangling.c_str()), 0);
    run([&]() -> Task<void> {
        EXPECT_TRUE((co_await fs::exists(f)).value_or(false));
        EXPECT_TRUE((co_await fs::exists(dir.path())).value_or(false));
        EXPECT_FALSE((co_await fs::exists(dir.file("nothing"))).value_or(true));
        EXPECT_FALSE((co_await fs::exists(f + "/below")).value_or(true)); // ENOTDIR: not there
        EXPECT_FALSE((co_await fs::exists(dangling)).value_or(true));
        EXPECT_FALSE((co_await fs::exists("")).value_or(true)); // ENOENT
        Result<fs::Metadata> m = co_await fs::metadata(link);
        EXPECT_TRUE(m && m->is_file() && m->size == 5);
        Result<fs::Metadata> l = co_await fs::symlink_metadata(link);
        EXPECT_TRUE(l && l->is_symlink());
        EXPECT_EQ((co_await fs::metadata(dangling)).error(), std::errc::no_such_file_or_directory);
        EXPECT_TRUE((co_await fs::symlink_metadata(dangling))->is_symlink());
        EXPECT_TRUE((co_await fs::metadata(dir.path()))->is_dir());
    });
}

// Root passes every permission check, so EACCES is tested in a child that became "nobody".
TEST(FsErrors, PermissionDeniedInAnUnprivilegedChild) {
    ringo_test::TempDir dir;
    std::string secret = dir.file("secret"), locked = dir.file("locked");
    spit(secret, "s");
    ASSERT_EQ(::chmod(secret.c_str(), 0600), 0);
    ASSERT_EQ(::chmod(dir.path().c_str(), 0755), 0);
    ASSERT_EQ(::mkdir(locked.c_str(), 0700), 0);
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        if (::getuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0))
            ::_exit(20);
        ringo::Runtime rt;
        int code = rt.block_on([](const std::string& s, const std::string& l) -> Task<int> {
            if ((co_await File::open(s)).error() != std::errc::permission_denied)
                co_return 1;
            if ((co_await fs::read_file(s)).error() != std::errc::permission_denied)
                co_return 2;
            if ((co_await fs::write_file(l + "/x", "x")).error() != std::errc::permission_denied)
                co_return 3;
            if ((co_await fs::create_dirs(l + "/a/b")).error() != std::errc::permission_denied)
                co_return 4;
            if ((co_await fs::remove(s)).error() != std::errc::permission_denied)
                co_return 5;
            if ((co_await fs::exists(l + "/x")).error() != std::errc::permission_denied)
                co_return 6;
            co_return 0;
        }(secret, locked));
        ::_exit(code);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
}

// The examples of docs/fs.md, verbatim (keep them the same), compiled and run.
namespace docs {
// Appends a record and makes it durable; the close's error is reported too.
ringo::Task<ringo::Result<void>> append_record(const std::string& path, std::string_view rec) {
    auto f = co_await ringo::fs::File::open(path, {.append = true, .create = true});
    if (!f)
        co_return f.error();
    auto w = co_await f->write_all_at(rec, 0); // append: the offset is ignored
    if (!w)
        co_return w;
    auto s = co_await f->datasync();
    if (!s)
        co_return s;
    co_return co_await f->close();
}

// Reads a fixed-size header; a file shorter than it is fs::Error::unexpected_eof.
ringo::Task<ringo::Result<std::array<std::byte, 16>>> read_header(const std::string& path) {
    auto f = co_await ringo::fs::File::open(path);
    if (!f)
        co_return f.error();
    std::array<std::byte, 16> h{};
    auto r = co_await f->read_exact_at(h, 0);
    if (!r)
        co_return r.error();
    co_return h;
}

// Sums a file's bytes, reading it around the page cache 1 MiB at a time.
ringo::Task<ringo::Result<std::uint64_t>> sum_direct(const std::string& path) {
    auto f = co_await ringo::fs::File::open(path, {.direct = true});
    if (!f)
        co_return f.error(); // EINVAL: the file system has no O_DIRECT
    ringo::fs::AlignedBuffer buf(1 << 20);
    std::uint64_t sum = 0;
    for (std::uint64_t off = 0;;) {
        auto n = co_await f->read_at(buf.span(), off);
        if (!n)
            co_return n.error();
        for (std::size_t i = 0; i < *n; ++i)
            sum += std::to_integer<unsigned>(buf.data()[i]);
        if (*n < buf.size())
            break; // the end (the next offset would not be aligned anyway)
        off += *n;
    }
    co_return sum;
}

ringo::Task<ringo::Result<std::size_t>> first_block(const std::string& path, ringo::op::FileTable& files,
                                                    ringo::fs::AlignedBuffer& registered) {
    auto f = co_await ringo::fs::File::open(path);
    if (!f)
        co_return f.error();
    if (auto r = f->register_in(files, 0); !r)
        co_return r.error();
    auto n = co_await f->read_at_fixed(registered.span(0, 4096), 0, 0); // buffer 0 of the BufferTable
    (void)co_await f->close();                                          // empties slot 0 too
    co_return n;
}

void use_first_block(const std::string& path) {
    ringo::Runtime rt;
    ringo::op::FileTable files(rt);
    ringo::buf::BufferTable buffers(rt);
    ringo::fs::AlignedBuffer mem(64 * 1024);
    iovec iov{mem.data(), mem.size()};
    if (files.register_sparse(8) == 0 && buffers.register_buffers({&iov, 1}) == 0) {
        ringo::Result<std::size_t> n = rt.block_on(first_block(path, files, mem));
        std::printf("%zu bytes\n", n.value_or(0));
    }
}

// Counts the lines of a file.
ringo::Task<ringo::Result<std::size_t>> count_lines(const std::string& path) {
    ringo::Result<std::string> text = co_await ringo::fs::read_file(path);
    if (!text)
        co_return text.error();
    co_return static_cast<std::size_t>(std::count(text->begin(), text->end(), '\n'));
}

// Saves a file atomically: writes a temporary beside it, then renames it over the original.
ringo::Task<ringo::Result<void>> save(const std::string& dir, const std::string& name, std::string_view data) {
    auto d = co_await ringo::fs::create_dirs(dir);
    if (!d)
        co_return d;
    std::string tmp = dir + "/." + name + ".tmp", dst = dir + "/" + name;
    auto w = co_await ringo::fs::write_file(tmp, data);
    if (!w) {
        (void)co_await ringo::fs::remove(tmp);
        co_return w;
    }
    co_return co_await ringo::fs::rename(tmp, dst);
}

// Backs a file up, giving up after a second.
ringo::Task<void> backup(const std::string& from, const std::string& to) {
    auto r = co_await ringo::with_timeout(ringo::fs::copy(from, to), std::chrono::seconds(1));
    (void)r; // the copy's Result, or the deadline's mark: see with_timeout in compose.md
}
} // namespace docs

TEST(FsDocs, ExamplesRun) {
    ringo_test::TempDir dir;
    std::string log = dir.file("log"), data = dir.file("data"), sub = dir.file("a/b");
    spit(data, "one\ntwo\nthree\nfour\n");
    run([&]() -> Task<void> {
        EXPECT_TRUE(co_await docs::append_record(log, "r1\n"));
        EXPECT_TRUE(co_await docs::append_record(log, "r2\n"));
        EXPECT_EQ((co_await docs::count_lines(data)).value_or(0), 4u);
        EXPECT_EQ((co_await docs::count_lines(dir.file("none"))).error(), std::errc::no_such_file_or_directory);
        auto h = co_await docs::read_header(data);
        EXPECT_TRUE(h && (*h)[0] == std::byte{'o'});
        EXPECT_EQ((co_await docs::read_header(log)).error(), fs::Error::unexpected_eof);
        EXPECT_TRUE(co_await docs::save(sub, "cfg", "k=v"));
        co_await docs::backup(data, dir.file("data.bak"));
        auto sum = co_await docs::sum_direct(std::string("/proc/self/status"));
        EXPECT_FALSE(sum); // no O_DIRECT in /proc: an error, not a crash
    });
    EXPECT_EQ(slurp(log), "r1\nr2\n");
    EXPECT_EQ(slurp(sub + "/cfg"), "k=v");
    EXPECT_FALSE(std::filesystem::exists(sub + "/.cfg.tmp"));
    EXPECT_EQ(slurp(dir.file("data.bak")), "one\ntwo\nthree\nfour\n");
    docs::use_first_block(data);
}

} // namespace
