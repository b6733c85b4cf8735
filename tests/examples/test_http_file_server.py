#!/usr/bin/env python3
"""Runs examples/http_file_server against curl, ab and wrk (and a raw socket where a real
client cannot be made to send a malformed request), with one runtime and with a pool:

  - every file byte for byte (curl), with its headers (status, Content-Length, Content-Type,
    Date, Server), HEAD without a body, keep-alive reuse (curl), HTTP/1.0 closing, HTTP/1.0
    keep-alive (ab -k), pipelined requests answered in order;
  - the error answers: 400 (bad target, "..", no Host, garbage), 404 (missing file, a folder
    without index.html, a symbolic link leaving the folder), 403 (a FIFO), 405 (POST, with
    Allow), 431 (a head too large), 501 (Transfer-Encoding), 505 (HTTP/2.0);
  - load with ab and wrk: no failed request, no non-2xx answer, no socket error;
  - no descriptor left open once the clients are gone (/proc/PID/fd);
  - Range (206 with the exact bytes, 416, ignored forms answered 200), a folder without its
    trailing slash (301 with Location), the absolute form (`GET http://host/path`), a path
    too long to decode (414);
  - --idle-timeout: a silent connection, a head sent a byte at a time, an idle keep-alive
    connection and a client that stops reading a large file (sendfile and splice) are closed,
    while clients that make progress are served; no io-wq thread held per stuck client;
  - an idle connection holds no request buffers (resident memory per idle connection);
  - out of descriptors (a lowered RLIMIT_NOFILE): the server keeps running and serves again;
  - arguments: --help, and bad values refused with the usage and status 2; a port in use and
    too few descriptors for a ring: status 1 and 'http_file_server: <reason>', no abort;
  - Ctrl-C: idle connections end at once, an answer being sent completes, new connections are
    refused, exit status 0; and a client that stops reading is cancelled after the grace period.

    test_http_file_server.py PATH_TO_http_file_server
"""
import hashlib
import os
import re
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import time

import example_server
from test_ctrl_c_server import held_port, setup_failure

EXE = sys.argv[1]
SANITIZED = bool(os.environ.get("RINGO_SANITIZE"))
SCALE = 8 if SANITIZED else 1
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, flush=True)
    return cond


class Server(example_server.Server):
    """The example with `--root root args...`; stop() also gives its stdout and stderr as text."""

    def __init__(self, root, *args):
        super().__init__(EXE, ["--root", root, *args], start_timeout=20)
        self.url = f"http://127.0.0.1:{self.port}"

    def threads(self):
        return len(os.listdir(f"/proc/{self.proc.pid}/task"))

    def rss_kib(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            return int(re.search(r"VmRSS:\s+(\d+) kB", f.read()).group(1))

    def stop(self, sig=signal.SIGINT, timeout=20):
        rc, lines = super().stop(sig, timeout)
        return rc, "\n".join(lines), self.stderr()

    def wait_exit(self, timeout=20):
        rc, lines = super().wait_exit(timeout)
        return rc, "\n".join(lines), self.stderr()


def run(cmd, timeout=60):
    return subprocess.run(cmd, capture_output=True, timeout=timeout)


def curl(*args):
    return run(["curl", "-sS", "--max-time", "20", *args])


def raw(port, data, read_timeout=5.0):
    """Sends `data` on a new connection and reads until the server closes it (or the timeout)."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(data)
        s.settimeout(read_timeout)
        chunks = []
        try:
            while True:
                c = s.recv(65536)
                if not c:
                    break
                chunks.append(c)
        except socket.timeout:
            chunks.append(b"<timeout>")
        return b"".join(chunks)


def status_of(answer):
    m = re.match(rb"HTTP/1\.1 (\d{3}) ", answer)
    return int(m.group(1)) if m else None


def answers_of(data):
    """Splits the bytes of answers sent one after another into (status, headers, body), each body
    as long as its Content-Length; a last part that is not a whole answer is left out."""
    out = []
    while data:
        head, sep, rest = data.partition(b"\r\n\r\n")
        if not sep:
            break
        status, fields = headers_of(head.decode("latin-1"))
        n = int(fields.get("content-length", "0"))
        if len(rest) < n:
            break
        out.append((status_of(head + b"\r\n"), fields, rest[:n]))
        data = rest[n:]
    return out


def closed_within(sock, seconds):
    """Reads (and drops) what `sock` receives until the server closes it; the bytes read, or
    None when it was still open after `seconds`."""
    sock.settimeout(0.2)
    deadline = time.monotonic() + seconds
    total = 0
    while time.monotonic() < deadline:
        try:
            c = sock.recv(1 << 20)
        except socket.timeout:
            continue
        except (ConnectionResetError, BrokenPipeError):
            return total
        if not c:
            return total
        total += len(c)
    return None


def make_root(tmp):
    root = os.path.join(tmp, "www")
    os.makedirs(os.path.join(root, "sub"))
    os.makedirs(os.path.join(root, "empty_dir"))
    os.makedirs(os.path.join(root, "odd", "index.html"))  # a folder where an index would be
    files = {
        "index.html": b"<h1>ringo</h1>\n",
        "zero.bin": b"",
        "one.txt": b"x",
        "f4k.bin": os.urandom(4096),
        "edge.bin": os.urandom(16384),       # the largest file sent with its head
        "edge1.bin": os.urandom(16385),      # the smallest spliced
        "big.bin": os.urandom(3 * 1024 * 1024 + 7),
        "sub/index.html": b"sub index\n",
        "sub/with space.txt": b"spaced\n",
        "drain.bin": os.urandom(64 * 1024 * 1024 // SCALE),
    }
    for name, data in files.items():
        with open(os.path.join(root, name), "wb") as f:
            f.write(data)
    os.symlink("/etc/passwd", os.path.join(root, "escape"))
    os.symlink("one.txt", os.path.join(root, "inside_link"))
    os.mkfifo(os.path.join(root, "fifo"))
    with open(os.path.join(tmp, "outside.txt"), "wb") as f:
        f.write(b"outside\n")
    return root, files


def headers_of(text):
    lines = text.split("\r\n")
    fields = {}
    for line in lines[1:]:
        if ":" in line:
            k, v = line.split(":", 1)
            fields[k.strip().lower()] = v.strip()
    return lines[0], fields


def test_files(srv, root, files, tmp):
    for name, data in files.items():
        if name == "drain.bin":
            continue
        url = srv.url + "/" + name.replace(" ", "%20")
        hdr, body = os.path.join(tmp, "h"), os.path.join(tmp, "b")
        r = curl("-D", hdr, "-o", body, url)
        if not check(r.returncode == 0, f"curl {name}: {r.stderr.decode()}"):
            continue
        status, fields = headers_of(open(hdr, newline="").read())
        check(status == "HTTP/1.1 200 OK", f"{name}: status line {status!r}")
        check(open(body, "rb").read() == data, f"{name}: body differs from the file")
        check(fields.get("content-length") == str(len(data)), f"{name}: Content-Length {fields.get('content-length')}")
        check("date" in fields and fields.get("server") == "ringo", f"{name}: Date/Server headers {fields}")
        want_type = "text/html; charset=utf-8" if name.endswith(".html") else None
        if want_type:
            check(fields.get("content-type") == want_type, f"{name}: Content-Type {fields.get('content-type')}")
    # "/" is index.html, "/sub/" is sub/index.html, a link inside the folder is followed.
    for path, want in (("/", files["index.html"]), ("/sub/", files["sub/index.html"]),
                       ("/inside_link", files["one.txt"]), ("/one.txt?query=1", files["one.txt"])):
        r = curl(srv.url + path)
        check(r.returncode == 0 and r.stdout == want, f"GET {path}: {r.stdout[:40]!r} {r.stderr!r}")
    # --inline: an answer from memory for exactly that target.
    r = curl("-D", "-", srv.url + "/mem")
    check(r.returncode == 0 and r.stdout.startswith(b"HTTP/1.1 200 OK") and b"Content-Length: 18\r\n" in r.stdout
          and r.stdout.endswith(b"\r\n\r\nHello from memory\n"), f"--inline /mem: {r.stdout!r}")


def test_head_keepalive_pipelining(srv, files):
    # HEAD: the head only. The next answer on the same connection starts right after it.
    ans = raw(srv.port, b"HEAD /f4k.bin HTTP/1.1\r\nHost: x\r\n\r\n"
                        b"GET /one.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    parts = ans.split(b"\r\n\r\n")
    check(len(parts) == 3 and parts[0].startswith(b"HTTP/1.1 200") and b"Content-Length: 4096" in parts[0]
          and parts[1].startswith(b"HTTP/1.1 200") and parts[2] == b"x", f"HEAD then GET: {ans[:300]!r}")
    # curl reuses one connection for several URLs when the server keeps it open.
    r = curl("-o", "/dev/null", "-o", "/dev/null", "-o", "/dev/null", "-w", "%{num_connects} ",
             srv.url + "/f4k.bin", srv.url + "/big.bin", srv.url + "/one.txt")
    check(r.returncode == 0 and r.stdout.split() == [b"1", b"0", b"0"],
          f"keep-alive: connections opened per URL {r.stdout!r} {r.stderr!r}")
    # HTTP/1.0: the answer says Connection: close and the server closes after it.
    r = curl("-0", "-D", "-", "-o", "/dev/null", srv.url + "/one.txt")
    check(r.returncode == 0 and b"Connection: close" in r.stdout, f"HTTP/1.0 close: {r.stdout!r}")
    ans = raw(srv.port, b"GET /one.txt HTTP/1.0\r\n\r\n")
    check(ans.startswith(b"HTTP/1.1 200") and ans.endswith(b"\r\n\r\nx"), f"HTTP/1.0 closes after the answer: {ans!r}")
    # Pipelined: three requests in one segment, three answers in order.
    ans = raw(srv.port, b"GET /one.txt HTTP/1.1\r\nHost: x\r\n\r\n"
                        b"GET /sub/with%20space.txt HTTP/1.1\r\nHost: x\r\n\r\n"
                        b"GET /index.html HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    bodies = [p for p in re.split(rb"HTTP/1\.1 200 OK\r\n.*?\r\n\r\n", ans, flags=re.S) if p]
    check(bodies == [b"x", b"spaced\n", files["index.html"]], f"pipelined answers: {ans[:400]!r}")


def test_errors(srv):
    cases = [
        ("missing file", curl("-o", "/dev/null", "-w", "%{http_code}", srv.url + "/nope"), 404),
        ("folder without index.html", curl("-o", "/dev/null", "-w", "%{http_code}", srv.url + "/empty_dir/"), 404),
        ("a link leaving the folder", curl("-o", "/dev/null", "-w", "%{http_code}", srv.url + "/escape"), 404),
        ("..", curl("--path-as-is", "-o", "/dev/null", "-w", "%{http_code}", srv.url + "/../outside.txt"), 400),
        ("encoded ..", curl("--path-as-is", "-o", "/dev/null", "-w", "%{http_code}", srv.url + "/%2e%2e/outside.txt"), 400),
        ("a FIFO", curl("-o", "/dev/null", "-w", "%{http_code}", srv.url + "/fifo"), 403),
        ("POST", curl("-X", "POST", "-d", "data", "-o", "/dev/null", "-w", "%{http_code}", srv.url + "/one.txt"), 405),
    ]
    for what, r, want in cases:
        check(r.returncode == 0 and r.stdout == str(want).encode(), f"{what}: {r.stdout!r} (want {want}) {r.stderr!r}")
    r = curl("-X", "DELETE", "-D", "-", "-o", "/dev/null", srv.url + "/one.txt")
    check(b"Allow: GET, HEAD" in r.stdout, f"405 names the allowed methods: {r.stdout!r}")
    raw_cases = [
        ("no Host in HTTP/1.1", b"GET / HTTP/1.1\r\n\r\n", 400),
        ("garbage", b"\x00\x01hello\r\n\r\n", 400),
        ("space before a colon", b"GET / HTTP/1.1\r\nHost : x\r\n\r\n", 400),
        ("HTTP/2.0", b"GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505),
        ("Transfer-Encoding", b"GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 501),
        ("a head too large", b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 9000 + b"\r\n\r\n", 431),
        ("a target too long", b"GET /" + b"a" * 9000, 414),
    ]
    for what, req, want in raw_cases:
        ans = raw(srv.port, req)
        check(status_of(ans) == want and b"Connection: close" in ans, f"{what}: {ans[:120]!r} (want {want})")


def get_raw(port, target, headers=b"", method=b"GET"):
    """One request with Connection: close; (status, headers, body) of its answer."""
    ans = raw(port, method + b" " + target + b" HTTP/1.1\r\nHost: x\r\n" + headers + b"Connection: close\r\n\r\n")
    head, _, body = ans.partition(b"\r\n\r\n")
    return status_of(ans), headers_of(head.decode("latin-1"))[1], body


def test_range(srv, files):
    big, small = files["big.bin"], files["f4k.bin"]
    n = len(big)
    cases = [  # file, Range, what is answered: (first, last) of a 206, 416, or 200 (the whole file)
        ("big.bin", b"bytes=0-647", (0, 647)),  # sendfile or splice: the whole 3 MiB went before
        ("big.bin", b"bytes=1000000-2999999", (1000000, 2999999)),
        ("big.bin", b"bytes=3000000-", (3000000, n - 1)),
        ("big.bin", b"bytes=-20000", (n - 20000, n - 1)),
        ("f4k.bin", b"bytes=100-199", (100, 199)),
        ("f4k.bin", b"BYTES=4000-99999999999999999999999", (4000, 4095)),
        ("f4k.bin", b"bytes=-5000", (0, 4095)),
        ("one.txt", b"bytes=0-0", (0, 0)),
        ("f4k.bin", b"bytes=4096-", 416),
        ("f4k.bin", b"bytes=99999999999999999999999-", 416),
        ("f4k.bin", b"bytes=-0", 416),
        ("zero.bin", b"bytes=0-", 416),
        ("f4k.bin", b"bytes=0-1,5-6", 200),  # several ranges: ignored
        ("f4k.bin", b"bytes=5-1", 200),  # malformed: ignored
        ("f4k.bin", b"bytes=a-b", 200),
        ("f4k.bin", b"items=0-1", 200),
    ]
    for name, rng, want in cases:
        data = files[name]
        status, fields, body = get_raw(srv.port, b"/" + name.encode(), b"Range: " + rng + b"\r\n")
        what = f"GET /{name} Range: {rng.decode()}"
        if want == 416:
            check(status == 416 and fields.get("content-range") == f"bytes */{len(data)}",
                  f"{what}: {status} {fields} (want 416, Content-Range: bytes */{len(data)})")
        elif want == 200:
            check(status == 200 and body == data and "content-range" not in fields, f"{what}: {status} {fields} (want 200)")
        else:
            first, last = want
            cr = f"bytes {first}-{last}/{len(data)}"
            check(status == 206 and body == data[first:last + 1] and fields.get("content-length") == str(last - first + 1)
                  and fields.get("content-range") == cr, f"{what}: {status} {fields} {len(body)} bytes (want 206, {cr})")
    # HEAD and If-Range: the whole file. One connection: each answer framed by its Content-Length.
    status, fields, body = get_raw(srv.port, b"/f4k.bin", b"Range: bytes=0-9\r\n", b"HEAD")
    check(status == 200 and fields.get("content-length") == "4096" and body == b"", f"HEAD with Range: {status} {fields}")
    status, fields, body = get_raw(srv.port, b"/f4k.bin", b"Range: bytes=0-9\r\nIf-Range: \"x\"\r\n")
    check(status == 200 and body == small, f"Range with If-Range: {status} {fields}")
    ans = raw(srv.port, b"GET /big.bin HTTP/1.1\r\nHost: x\r\nRange: bytes=0-647\r\n\r\n"
                        b"GET /f4k.bin HTTP/1.1\r\nHost: x\r\nRange: bytes=5000-\r\n\r\n"
                        b"GET /big.bin HTTP/1.1\r\nHost: x\r\nRange: bytes=-100000\r\n\r\n"
                        b"GET /one.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    got = [(st, b) for st, _, b in answers_of(ans)]
    check(len(got) == 4 and got[0] == (206, big[:648]) and got[1][0] == 416 and got[2] == (206, big[-100000:])
          and got[3] == (200, b"x"), f"ranges on one connection: {[(st, len(b)) for st, b in got]}")
    # curl's own range option, through sendfile or splice.
    r = curl("-r", "2000000-2099999", srv.url + "/big.bin")
    check(r.returncode == 0 and r.stdout == big[2000000:2100000], f"curl -r: {len(r.stdout)} bytes {r.stderr!r}")


def test_redirect_absolute_long(srv, files):
    # A folder without its trailing slash: 301 to the folder (query kept), then its index.
    for target, location in ((b"/sub", "/sub/"), (b"/sub?a=1", "/sub/?a=1"), (b"/empty_dir", "/empty_dir/")):
        status, fields, _ = get_raw(srv.port, target)
        check(status == 301 and fields.get("location") == location,
              f"GET {target.decode()}: {status} Location {fields.get('location')!r} (want 301 {location})")
    status, fields, _ = get_raw(srv.port, b"/odd/")
    check(status == 404 and "location" not in fields, f"GET /odd/ (odd/index.html a folder): {status} {fields}")
    r = curl("-L", "-w", " %{num_redirects}", srv.url + "/sub")
    check(r.returncode == 0 and r.stdout == files["sub/index.html"] + b" 1", f"curl -L /sub: {r.stdout!r} {r.stderr!r}")
    # The absolute form: the host in the target, the path served.
    status, _, body = get_raw(srv.port, f"http://127.0.0.1:{srv.port}/one.txt".encode())
    check(status == 200 and body == b"x", f"GET http://127.0.0.1:{srv.port}/one.txt: {status} {body!r}")
    status, _, body = get_raw(srv.port, b"HTTP://x")
    check(status == 200 and body == files["index.html"], f"GET HTTP://x: {status} {body!r}")
    status, _, body = get_raw(srv.port, b"http:///one.txt")
    check(status == 400, f"GET http:///one.txt (no host): {status} (want 400)")
    r = curl("-x", srv.url, f"http://127.0.0.1:{srv.port}/sub/with%20space.txt")  # curl sends the absolute form to a proxy
    check(r.returncode == 0 and r.stdout == files["sub/with space.txt"], f"curl through the server as proxy: {r.stdout!r} {r.stderr!r}")
    # A path too long to decode: 414, not 400; one that just fits is looked up (404).
    status, _, _ = get_raw(srv.port, b"/" + b"a" * 1099)
    check(status == 414, f"a 1 100-byte path: {status} (want 414)")
    status, _, _ = get_raw(srv.port, b"/" + b"%61" * 1099)
    check(status == 414, f"a path decoded to 1 099 bytes: {status} (want 414)")
    status, _, _ = get_raw(srv.port, b"/" + b"a" * 1023)
    check(status == 404, f"a 1 024-byte path: {status} (want 404)")


def on_epoll_engine():
    """True when the server's runtime runs on its epoll engine: RINGO_ENGINE=epoll, or io_uring
    refused to this process (tests/tools/no_io_uring), which the server inherits."""
    if os.environ.get("RINGO_ENGINE") == "epoll":
        return True
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    params = ctypes.create_string_buffer(120)  # struct io_uring_params
    fd = libc.syscall(425, 1, params)  # io_uring_setup(1, &params)
    if fd >= 0:
        os.close(fd)
        return False
    return True


def test_idle_timeout(root, files, body, threads):
    """--idle-timeout 1: connections that make no progress for a second are closed; a stuck
    reader neither keeps its connection nor holds a thread; clients making progress are served."""
    srv = Server(root, "--idle-timeout", "1", "--body", body, "--threads", str(threads))
    curl(srv.url + "/one.txt")
    time.sleep(0.3)
    base, base_list, base_threads = srv.fds(), srv.fd_list(), srv.threads()
    grace = 4 * SCALE  # seconds past the timeout before a connection counts as left open
    silent = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
    partial = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
    partial.sendall(b"GET /one.txt HTTP/1.1\r\n")
    kept = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
    kept.sendall(b"GET /one.txt HTTP/1.1\r\nHost: x\r\n\r\n")
    check(kept.recv(4096).endswith(b"\r\n\r\nx"), "keep-alive connection's first answer")
    # Clients that stop reading a large answer (a small receive buffer, never read).
    stuck = []
    for _ in range(20):
        c = socket.socket()
        c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        c.connect(("127.0.0.1", srv.port))
        c.sendall(b"GET /drain.bin HTTP/1.1\r\nHost: x\r\n\r\n")
        stuck.append(c)
    # A head sent a byte at a time, 0.25 s apart: no whole request in a second, closed (before:
    # each byte kept it open, as slowloris does). Meanwhile a client that asks every 0.25 s on
    # one connection makes progress and stays.
    slow = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
    busy = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
    head = b"GET /one.txt HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 100
    threads_stuck, slow_closed, busy_ok = None, None, True
    start = time.monotonic()
    for i in range(min(len(head), int(6 * SCALE / 0.25))):
        try:
            slow.send(head[i:i + 1])
        except OSError:
            slow_closed = time.monotonic() - start
            break
        busy.sendall(b"GET /one.txt HTTP/1.1\r\nHost: x\r\n\r\n")
        busy_ok = busy_ok and busy.recv(4096).endswith(b"\r\n\r\nx")
        if i == 2:
            threads_stuck = srv.threads()  # with the stuck readers' answers under way
        time.sleep(0.25)
    check(slow_closed is not None, f"a head sent a byte every 0.25 s was still open after {time.monotonic() - start:.1f} s")
    check(busy_ok, "a keep-alive client asking every 0.25 s was served throughout")
    # A normal client is served meanwhile.
    r = curl(srv.url + "/big.bin")
    check(r.returncode == 0 and r.stdout == files["big.bin"], f"a normal client beside stuck ones: {len(r.stdout)} bytes {r.stderr!r}")
    deadline = time.monotonic() + grace  # one deadline for all: a failure takes `grace` s, not one per client
    for what, sock in (("a silent connection", silent), ("a partial head", partial), ("an idle keep-alive connection", kept)):
        got = closed_within(sock, max(0.2, deadline - time.monotonic()))
        check(got is not None, f"{what} was still open {grace} s after --idle-timeout 1 ({body})")
        sock.close()
    check(srv.wait_fds(base + 1, max(0.2, deadline - time.monotonic())) <= base + 1,  # + the busy connection
          f"connections of stuck readers left open ({body}): {srv.fd_list()} (before: {base_list})")
    size = len(files["drain.bin"])
    got = [closed_within(c, max(0.2, deadline - time.monotonic())) for c in stuck]
    check(all(g is not None and g < size for g in got),
          f"clients that stopped reading a {size}-byte answer ({body}): bytes until the close {got} (None: not closed)")
    for c in stuck:
        c.close()
    # --body splice: no io-wq thread blocked per stuck reader (before: one each, for good). On
    # the epoll engine the 20 answers' file calls (open, statx, splice from the file) start
    # threads of its bounded pool at once; they wait idle afterwards, blocked by no reader.
    spare = 8 + (20 if on_epoll_engine() else 0)
    print(f"threads: {base_threads} at rest, {threads_stuck} with 20 stuck readers", flush=True)
    check(threads_stuck is not None and threads_stuck <= base_threads + spare,
          f"threads with 20 stuck readers ({body}): {threads_stuck} (at rest {base_threads})")
    slow.close()
    busy.close()
    rc, out, err = srv.stop(signal.SIGINT)
    check(rc == 0, f"--idle-timeout server exit: rc {rc} {err!r}")


def lowered_limit_server(root, nofile, *args):
    """The server started with RLIMIT_NOFILE's soft limit at `nofile` (this process lowers its
    own for the start, and the child inherits it)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, hard))
    try:
        return Server(root, *args)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_descriptor_limit(root, threads):
    """64 descriptors and 80 silent clients: accept fails with EMFILE, and the server keeps
    running; the idle timeout frees descriptors, so a newcomer is served while the silent ones
    are still connected (before: they locked every other client out); and a new client is
    served once they have all gone."""
    srv = lowered_limit_server(root, 64, "--idle-timeout", "1", "--threads", str(threads))
    base = srv.fds()
    silent = [socket.create_connection(("127.0.0.1", srv.port), timeout=5) for _ in range(80)]
    time.sleep(0.5)
    check(srv.proc.poll() is None and srv.fds() >= 60, f"out of descriptors: server running {srv.proc.poll() is None}, "
                                                        f"{srv.fds()} descriptors")
    r = curl("--max-time", str(10 * SCALE), srv.url + "/one.txt")
    check(r.returncode == 0 and r.stdout == b"x", f"a newcomer beside 80 silent clients, 64 descriptors: {r.stdout!r} {r.stderr!r}")
    for c in silent:
        c.close()
    check(srv.wait_fds(base, 5 * SCALE) <= base, f"descriptors after the silent clients left: {srv.fd_list()}")
    r = curl(srv.url + "/one.txt")
    check(r.returncode == 0 and r.stdout == b"x", f"a client after the others closed: {r.stdout!r} {r.stderr!r}")
    rc, out, err = srv.stop(signal.SIGINT)
    check(rc == 0, f"64 descriptors: exit status {rc} {err!r}")


def test_idle_memory(root):
    """Resident memory per idle connection: 300 that sent nothing and 300 idle after one answer
    each. Before: the 25 KiB of request buffers, zero-filled at the accept, ~26 KiB each."""
    if SANITIZED:
        return  # the sanitizers' shadow memory and quarantine make RSS meaningless here
    srv = Server(root)
    for _ in range(20):
        curl(srv.url + "/f4k.bin")
    time.sleep(0.2)
    before = srv.rss_kib()
    conns = []
    for i in range(600):
        c = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
        if i % 2:
            c.sendall(b"GET /f4k.bin HTTP/1.1\r\nHost: x\r\n\r\n")
            got = b""
            while len(got) < 4096 or b"\r\n\r\n" not in got:
                chunk = c.recv(65536)
                if not chunk:
                    break
                got += chunk
        conns.append(c)
    time.sleep(0.3)
    per = (srv.rss_kib() - before) / len(conns)
    check(per < 6, f"resident memory per idle connection: {per:.1f} KiB (want < 6)")
    print(f"resident memory per idle connection: {per:.2f} KiB", flush=True)
    for c in conns:
        c.close()
    rc, out, err = srv.stop(signal.SIGINT)
    check(rc == 0, f"idle memory: exit status {rc} {err!r}")


def run_args(*args):
    """The example with these arguments only (--port 0: it never takes a fixed port); (exit
    status, stdout, stderr), status None when it was still running after 5 s (then killed)."""
    p = subprocess.Popen([EXE, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = p.communicate(timeout=5 * SCALE)
        return p.returncode, out, err
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        return None, out, err


def test_arguments(root):
    rc, out, err = run_args("--help")
    check(rc == 0 and out.startswith("usage: http_file_server") and "--idle-timeout" in out and err == "",
          f"--help: status {rc}: {out!r} {err!r}")
    bad = [
        ("--root", root, "--port", "0", "--grace-ms", "99999999999999999999"),  # was taken as zero
        ("--root", root, "--port", "0", "--grace-ms", "-1"),
        ("--root", root, "--port", "-1"),
        ("--root", root, "--port", "65536"),
        ("--root", root, "--port", " 0"),
        ("--root", root, "--port", "+0"),
        ("--root", root, "--port", "0", "--threads", "0"),
        ("--root", root, "--port", "0", "--idle-timeout", "0"),
        ("--root", root, "--port", "0", "--idle-timeout", "1x"),
        ("--root", root, "--port", "0", "--body", "mmap"),
        ("--root", root, "--port", "0", "--inline", "no-slash"),
        ("--root", root, "--port", "0", "--frobnicate", "1"),
        ("--root", root, "--port", "0", "--idle-timeout"),
        ("--port", "0"),
        (),
    ]
    for args in bad:
        rc, out, err = run_args(*args)
        check(rc == 2 and "usage: http_file_server" in err and "listening" not in out,
              f"bad arguments {' '.join(args)!r}: status {rc} (want 2, the usage): {out!r} {err[-200:]!r}")

def test_setup_failures(root):
    """A port another socket holds, and RLIMIT_NOFILE 4 (the served folder takes the one
    descriptor left, so no ring can be made): exit code 1 and 'http_file_server: <reason>'
    on stderr, never an abort."""
    for threads in ("1", "2"):
        with held_port() as port:
            ok, what = setup_failure(EXE, "http_file_server", ["--root", root, "--port", str(port), "--threads", threads],
                                     words=("in use",))
        check(ok is not False, what)
        ok, what = setup_failure(EXE, "http_file_server", ["--root", root, "--port", "0", "--threads", threads],
                                 nofile=4, words=("Too many open files",))
        check(ok is not False, what)


def parse_ab(out):
    def num(pattern):
        m = re.search(pattern, out)
        return int(m.group(1)) if m else None
    return num(r"Complete requests:\s+(\d+)"), num(r"Failed requests:\s+(\d+)"), num(r"Non-2xx responses:\s+(\d+)"), \
        num(r"Keep-Alive requests:\s+(\d+)")


def test_load(srv):
    n = 4000 // SCALE
    for keep in (True, False):
        r = run(["ab", "-q", "-n", str(n), "-c", "20", *(["-k"] if keep else []), srv.url + "/f4k.bin"], timeout=120)
        done, failed, non2xx, kept = parse_ab(r.stdout.decode())
        check(r.returncode == 0 and done == n and failed == 0 and non2xx is None,
              f"ab {'-k ' if keep else ''}: complete {done} failed {failed} non-2xx {non2xx}: {r.stderr[-300:]!r}")
        if keep:
            check(kept == n, f"ab -k (HTTP/1.0 keep-alive): {kept} of {n} requests kept the connection")
    for path, conns in (("/f4k.bin", 100), ("/big.bin", 10), ("/index.html", 200)):
        r = run(["wrk", "-t1", f"-c{conns}", f"-d{1 if SANITIZED else 2}s", srv.url + path], timeout=60)
        out = r.stdout.decode()
        m = re.search(r"(\d+) requests in", out)
        check(r.returncode == 0 and m and int(m.group(1)) > 0 and "Non-2xx" not in out and "Socket errors" not in out,
              f"wrk -c{conns} {path}: {out}")


def test_drain(root, files, threads):
    srv = Server(root, "--threads", str(threads), "--grace-ms", "20000")
    size = len(files["drain.bin"])
    idle = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
    idle.sendall(b"GET /one.txt HTTP/1.1\r\nHost: x\r\n\r\n")
    first = idle.recv(4096)
    check(first.endswith(b"\r\n\r\nx"), f"idle connection's first answer: {first!r}")
    busy = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
    busy.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
    busy.sendall(b"GET /drain.bin HTTP/1.1\r\nHost: x\r\n\r\n")
    got = busy.recv(65536)  # the answer has started
    srv.proc.send_signal(signal.SIGINT)
    # The idle keep-alive connection ends at once.
    idle.settimeout(5)
    try:
        check(idle.recv(10) == b"", "an idle connection is closed by Ctrl-C")
    except socket.timeout:
        check(False, "an idle connection was still open 5 s after Ctrl-C")
    idle.close()
    # The answer being sent completes, byte for byte.
    busy.settimeout(20)
    chunks = [got]
    try:
        while True:
            c = busy.recv(1 << 20)
            if not c:
                break
            chunks.append(c)
    except socket.timeout:
        check(False, "the answer being sent at Ctrl-C did not complete")
    busy.close()
    ans = b"".join(chunks)
    head, _, body = ans.partition(b"\r\n\r\n")
    check(body == files["drain.bin"], f"the answer being sent at Ctrl-C: {len(body)} of {size} bytes, intact: "
                                      f"{hashlib.sha256(body).hexdigest() == hashlib.sha256(files['drain.bin']).hexdigest()}")
    check(b"Connection: close" not in head, "the drained answer was started before the stop")
    # Already signalled: only wait for the exit. (A second SIGINT here was a second Ctrl-C: with one
    # runtime the SignalSet that held SIGINT is gone once the drain ends, and the signal then ends
    # the process, as docs/signals.md says. In a TSan build on the epoll engine the exit takes
    # a second, TSan's atexit_sleep_ms while the engine's pool threads live, and it landed there.)
    rc, out, err = srv.wait_exit()
    check(rc == 0 and "every connection finished" in out, f"drain with {threads} runtime(s): rc {rc}: {out!r} {err!r}")
    try:
        socket.create_connection(("127.0.0.1", srv.port), timeout=2).close()
        check(False, "connections are refused after the stop")
    except OSError:
        pass


def test_stuck_client_cancelled(root, threads):
    srv = Server(root, "--threads", str(threads), "--grace-ms", "300")
    stuck = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
    stuck.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    stuck.sendall(b"GET /drain.bin HTTP/1.1\r\nHost: x\r\n\r\n")  # and never reads
    time.sleep(0.3)
    start = time.time()
    rc, out, err = srv.stop(signal.SIGINT)
    took = time.time() - start
    check(rc == 0 and "cancelled" in out and took < 10, f"a client that stops reading: rc {rc} after {took:.1f} s: {out!r} {err!r}")
    stuck.close()


def main():
    with tempfile.TemporaryDirectory() as tmp:
        root, files = make_root(tmp)
        for threads in (1, 2):
            print(f"== {threads} runtime(s)", flush=True)
            srv = Server(root, "--threads", str(threads), "--inline", "/mem:Hello from memory\n")
            # (One request and a pause first, so that the count of descriptors at rest includes
            # anything a first request opens for good.)
            curl(srv.url + "/one.txt")
            time.sleep(0.3)
            base, base_list = srv.fds(), srv.fd_list()
            test_files(srv, root, files, tmp)
            test_head_keepalive_pipelining(srv, files)
            test_errors(srv)
            test_range(srv, files)
            test_redirect_absolute_long(srv, files)
            test_load(srv)
            check(srv.wait_fds(base, 5) <= base, f"descriptors after the clients left: {srv.fd_list()} (before: {base_list})")
            rc, out, err = srv.stop(signal.SIGTERM)
            check(rc == 0, f"SIGTERM: exit status {rc}: {err!r}")
            test_drain(root, files, threads)
            test_stuck_client_cancelled(root, threads)
        # Large files go out by sendfile(2) by default; --body splice sends them through a pipe.
        print("== 1 runtime, --body splice", flush=True)
        srv = Server(root, "--body", "splice", "--inline", "/mem:Hello from memory\n")
        curl(srv.url + "/one.txt")
        base, base_list = srv.fds(), srv.fd_list()
        test_files(srv, root, files, tmp)
        test_head_keepalive_pipelining(srv, files)
        test_range(srv, files)
        test_load(srv)
        check(srv.wait_fds(base, 5) <= base, f"descriptors after the clients left: {srv.fd_list()} (before: {base_list})")
        rc, out, err = srv.stop(signal.SIGTERM)
        check(rc == 0, f"SIGTERM (--body splice): exit status {rc}: {err!r}")
        for body, threads in (("sendfile", 2), ("splice", 1)):
            print(f"== --idle-timeout 1, --body {body}, {threads} runtime(s)", flush=True)
            test_idle_timeout(root, files, body, threads)
        print("== 64 descriptors, idle memory, arguments", flush=True)
        # One runtime (net::accept_loop) and a pool (ShardedListener). Not one runtime under the
        # sanitizers: UBSan checks the error_category behind accept_loop's `e == errc` through
        # a pipe, which it cannot make with no descriptor left, and stops the server with a
        # false "invalid vptr" report (the pool's loop compares plain errno values).
        for threads in ((2,) if SANITIZED else (1, 2)):
            test_descriptor_limit(root, threads)
        test_idle_memory(root)
        test_arguments(root)
        test_setup_failures(root)
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
