// Shared helpers for the test suites: temporary directories, loopback sockets.
#pragma once

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace ringo_test {

/// How many descriptors this process has open (the entries of /proc/self/fd, counted the
/// same way every time): equal before and after means nothing leaked.
inline int open_fds() {
    int n = 0;
    if (DIR* d = ::opendir("/proc/self/fd")) {
        while (::readdir(d))
            ++n;
        ::closedir(d);
    }
    return n;
}

/// A fresh directory under TMPDIR, removed with everything in it.
class TempDir {
public:
    TempDir() {
        std::string tmpl = (std::filesystem::temp_directory_path() / "ringo-test-XXXXXX").string();
        if (!::mkdtemp(tmpl.data()))
            std::abort();
        path_ = tmpl;
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    const std::filesystem::path& path() const { return path_; }
    std::string file(const std::string& name) const { return (path_ / name).string(); }

private:
    std::filesystem::path path_;
};

/// A TCP listener on 127.0.0.1 with an ephemeral port.
struct Listener {
    int fd = -1;
    sockaddr_in addr{};
    Listener() {
        fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        addr.sin_port = 0;
        ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
        ::listen(fd, 64);
        socklen_t len = sizeof addr;
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    }
    ~Listener() {
        if (fd >= 0)
            ::close(fd);
    }
};

/// A port on 127.0.0.1 that nothing listens on (bound, then closed).
inline sockaddr_in closed_port() {
    Listener l;
    sockaddr_in a = l.addr;
    return a;
}

} // namespace ringo_test
