"""What test_copy.py and test_proxy.py share: named checks that are counted rather than
raised (a failed check lets the following ones run), and the run of a script's test functions
with the tally at the end. Imported from the scripts' own folder (the first entry of
sys.path when a script runs)."""
import time

failures = []


def check(ok, what):
    """Prints `what` as passed or failed and counts a failure; returns `ok`."""
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)
    return ok


def finish():
    """The exit status: 1 and the list of failed checks when there were any."""
    if failures:
        print(f"{len(failures)} check(s) failed:")
        for f in failures:
            print("  " + f)
        return 1
    print("all checks passed")
    return 0


def run_all(tests, *args):
    """Runs each test function with `args`; an exception it raises (a client's deadline, say)
    is one failed check and the next test still runs. Returns the exit status."""
    t0 = time.monotonic()
    for t in tests:
        print(f"== {t.__name__}", flush=True)
        try:
            t(*args)
        except Exception as e:  # noqa: BLE001 - an unexpected error is a failed check
            check(False, f"{t.__name__} raised {e!r}")
    print(f"({time.monotonic() - t0:.1f} s)")
    return finish()
