"""What test_echo_server.py, test_chat.py and test_http_file_server.py share: an example server run as a child process
on port 0 (its first line says the port), its descriptors counted in /proc, and its stop by a
signal (or the wait for an exit a signal already began) with the lines it printed last.
Imported from the scripts' own folder (the first entry of sys.path when a script runs)."""
import os
import queue
import subprocess
import threading
import time


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


class Server:
    """`binary --port 0 args...`; its stdout and stderr are read by threads into queues."""

    def __init__(self, binary, args, start_timeout=10):
        self.proc = subprocess.Popen([binary, "--port", "0", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)
        self.lines = queue.Queue()
        self.err = []
        threading.Thread(target=self._pump, args=(self.proc.stdout, self.lines.put), daemon=True).start()
        threading.Thread(target=self._pump, args=(self.proc.stderr, self.err.append), daemon=True).start()
        first = self.line(start_timeout)
        check(first is not None and first.startswith("listening on port "),
              f"first line should be 'listening on port P', got {first!r}")
        self.port = int(first.split()[-1])
        check(0 < self.port < 65536, f"bad port in {first!r}")

    @staticmethod
    def _pump(stream, put):
        for line in stream:
            put(line.rstrip("\n"))
        put(None)

    def line(self, timeout):
        """The next line of stdout, or None (the end, or nothing within `timeout` s)."""
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            return None

    def stderr(self):
        return "".join(l + "\n" for l in self.err if l)

    def fds(self):
        return len(os.listdir(f"/proc/{self.proc.pid}/fd"))

    def fd_list(self):
        """The server's descriptors and what each names, for a failure message."""
        d = f"/proc/{self.proc.pid}/fd"
        out = []
        for n in sorted(os.listdir(d), key=int):
            try:
                out.append(f"{n}->{os.readlink(os.path.join(d, n))}")
            except OSError:
                pass
        return " ".join(out)

    def wait_fds(self, want, timeout=10):
        """Polls until the server holds `want` descriptors; returns the last count."""
        deadline = time.monotonic() + timeout
        n = self.fds()
        while n != want and time.monotonic() < deadline:
            time.sleep(0.05)
            n = self.fds()
        return n

    def stop(self, sig, timeout=15):
        """Sends `sig`, waits for the exit; returns (exit code, the lines printed after the first)."""
        self.proc.send_signal(sig)
        return self._exit(timeout, sig.name)

    def wait_exit(self, timeout=15):
        """Waits for the exit of a server already signalled (a second signal would be another
        Ctrl-C, which ends a program whose SignalSet is gone); returns what stop() returns."""
        return self._exit(timeout, "the signal")

    def _exit(self, timeout, after):
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise Failure(f"no exit within {timeout} s of {after}")
        out = []
        while True:
            line = self.line(5)
            if line is None:
                break
            out.append(line)
        return rc, out

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
