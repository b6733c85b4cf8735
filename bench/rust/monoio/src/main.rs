//! Monoio baseline of the ringo benchmark suite. One single-threaded runtime on the
//! io_uring driver (`IoUringDriver`, chosen explicitly, never the epoll fallback).
//! See ../README.md for the subcommands and the JSON line.

use std::rc::Rc;

use common::{bump, AlignedBuf, Args, IoState, Meter, Place, Report, ECHO};
use futures::{SinkExt, StreamExt};
use monoio::buf::{IoBuf, IoBufMut};
use monoio::io::{AsyncReadRent, AsyncWriteRentExt};
use monoio::net::{TcpListener, TcpStream};
use monoio::IoUringDriver;
use ringo_bench_common as common;

const IMPL: &str = "monoio";
/// Submission queue entries (monoio's own default, stated explicitly).
const ENTRIES: u32 = 1024;
const DRIVER: &str = "io_uring (monoio IoUringDriver, 1024 entries)";

fn usage() -> String {
    common::usage_text(
        "ringo-bench-monoio",
        "monoio::fs::File::read_at on the io_uring driver, one 4096-aligned buffer per task",
        "futures_lite::future::yield_now",
    )
}

fn main() {
    let u = usage();
    let a = common::parse_cli(IMPL, &u);
    common::install_panic_report(&a.cmd, IMPL);
    match a.cmd.as_str() {
        "seqread" => file_bench(&a, false, &u),
        "randread" => file_bench(&a, true, &u),
        "echo-server" => echo_server(&a, &u),
        "spawn" => spawn_bench(&a, &u),
        "yield" => yield_bench(&a, &u),
        "channel" => channel_bench(&a, &u),
        _ => common::unknown_subcommand(&a, IMPL, &u),
    }
}

fn runtime(bench: &str, variant: &str) -> monoio::Runtime<IoUringDriver> {
    monoio::RuntimeBuilder::<IoUringDriver>::new()
        .with_entries(ENTRIES)
        .build()
        .unwrap_or_else(|e| {
            common::fail(
                bench,
                IMPL,
                variant,
                common::EXIT_FAILED,
                &format!("cannot build the monoio io_uring runtime: {e}"),
            )
        })
}

// ---------------------------------------------------------------- buffers

/// Page-aligned reusable read buffer handed to the kernel by ownership.
struct Buf(AlignedBuf);

// SAFETY: the pointer stays valid and fixed while the value lives (heap allocation that
// is never reallocated); `bytes_init` never exceeds the allocation.
unsafe impl IoBuf for Buf {
    fn read_ptr(&self) -> *const u8 {
        self.0.as_ptr()
    }
    fn bytes_init(&self) -> usize {
        self.0.len
    }
}

// SAFETY: as above; `bytes_total` is the allocation size.
unsafe impl IoBufMut for Buf {
    fn write_ptr(&mut self) -> *mut u8 {
        self.0.as_mut_ptr()
    }
    fn bytes_total(&mut self) -> usize {
        self.0.capacity()
    }
    unsafe fn set_init(&mut self, pos: usize) {
        self.0.len = pos.min(self.0.capacity());
    }
}

// ---------------------------------------------------------------- seqread / randread

fn file_bench(a: &Args, random: bool, usage: &str) -> ! {
    let p = common::prepare_file_bench(a, random, IMPL, DRIVER, usage);
    let variant = p.opts.variant();
    let mut rt = runtime(p.bench, variant);
    let state = Rc::new(p.state);
    let (qd, bs, seconds, warmup) = (p.opts.qd, p.opts.bs as usize, p.opts.seconds, p.opts.warmup);
    let (bench, std_file) = (p.bench, p.file);
    let st = state.clone();
    let m = rt.block_on(async move {
        let file = monoio::fs::File::from_std(std_file).unwrap_or_else(|e| {
            common::fail(
                bench,
                IMPL,
                variant,
                common::EXIT_FAILED,
                &format!("monoio File::from_std: {e}"),
            )
        });
        let file = Rc::new(file);
        let mut bufs: Vec<Buf> = (0..qd).map(|_| Buf(AlignedBuf::new(bs))).collect();
        if warmup > 0.0 {
            bufs = run_readers(&file, &st, bufs, warmup).await;
            st.begin_measurement();
        }
        let meter = Meter::start();
        run_readers(&file, &st, bufs, seconds).await;
        meter.stop()
    });
    state.finish(p.report, &m, &p.opts.file, p.size)
}

/// Run one task per buffer until `seconds` have passed (or an error); give the
/// buffers back for the next phase.
async fn run_readers(file: &Rc<monoio::fs::File>, st: &Rc<IoState>, bufs: Vec<Buf>, seconds: f64) -> Vec<Buf> {
    st.arm(seconds);
    let tasks: Vec<_> = bufs
        .into_iter()
        .map(|b| monoio::spawn(reader(file.clone(), st.clone(), b)))
        .collect();
    let mut back = Vec::with_capacity(tasks.len());
    for t in tasks {
        back.push(t.await);
    }
    back
}

/// One of the `qd` tasks: read the next block until the phase is over.
async fn reader(file: Rc<monoio::fs::File>, st: Rc<IoState>, mut buf: Buf) -> Buf {
    while let Some(off) = st.next_offset() {
        let (res, b) = file.read_at(buf, off).await;
        buf = b;
        st.complete(off, res);
    }
    buf
}

// ---------------------------------------------------------------- echo-server

fn echo_server(a: &Args, usage: &str) -> ! {
    let (port, bufsize) = common::echo_opts(a).unwrap_or_else(|e| common::usage_exit("echo-server", IMPL, &e, usage));
    let die = |m: String| -> ! { common::fail("echo-server", IMPL, "plain", common::EXIT_FAILED, &m) };
    common::block_term_signals().unwrap_or_else(|e| die(format!("cannot block signals: {e}")));
    let mut rt = runtime("echo-server", "plain");
    rt.block_on(async move {
        let first_try = std::time::Instant::now();
        let listener = loop {
            match TcpListener::bind(("127.0.0.1", port)) {
                Ok(l) => break l,
                Err(e) if common::bind_should_retry(&e, first_try) => continue,
                Err(e) => die(format!("bind 127.0.0.1:{port}: {e}")),
            }
        };
        let local = listener
            .local_addr()
            .unwrap_or_else(|e| die(format!("local_addr: {e}")));
        let mut base = Report::new("echo-server", IMPL, "plain");
        base.str("driver", DRIVER)
            .int("port", local.port() as u64)
            .int("buf", bufsize as u64);
        common::echo_signal_reporter(base, Meter::start()).unwrap_or_else(|e| die(format!("signal thread: {e}")));
        eprintln!("ringo-bench-monoio echo-server listening on {local}");
        loop {
            match listener.accept().await {
                Ok((stream, _)) => {
                    bump(&ECHO.connections, 1);
                    let _ = stream.set_nodelay(true);
                    drop(monoio::spawn(serve(stream, bufsize)));
                }
                Err(e) => common::echo_io_error(&e),
            }
        }
    })
}

async fn serve(mut s: TcpStream, cap: usize) {
    let mut buf: Vec<u8> = Vec::with_capacity(cap);
    loop {
        buf.clear();
        let (res, b) = s.read(buf).await;
        buf = b;
        match res {
            Ok(0) => return,
            Ok(n) => {
                bump(&ECHO.ops, 1);
                bump(&ECHO.bytes, n as u64);
                let (res, b) = s.write_all(buf).await;
                buf = b;
                if let Err(e) = res {
                    common::echo_io_error(&e);
                    return;
                }
            }
            Err(e) => {
                common::echo_io_error(&e);
                return;
            }
        }
    }
}

// ---------------------------------------------------------------- micro benchmarks

/// Run a micro benchmark body in a spawned task or in the root future.
fn run_micro<F, Fut>(rt: &mut monoio::Runtime<IoUringDriver>, place: Place, body: F) -> Fut::Output
where
    F: FnOnce() -> Fut + 'static,
    Fut: std::future::Future + 'static,
{
    match place {
        Place::Task => rt.block_on(async move { monoio::spawn(body()).await }),
        Place::Root => rt.block_on(body()),
    }
}

fn micro_report(bench: &str, place: Place) -> Report {
    let mut r = Report::new(bench, IMPL, "plain");
    r.str("driver", DRIVER).str("in", place.name());
    r
}

fn spawn_bench(a: &Args, usage: &str) -> ! {
    let o = common::spawn_opts(a).unwrap_or_else(|e| common::usage_exit("spawn", IMPL, &e, usage));
    let (count, batch) = (o.count, o.batch);
    let mut rt = runtime("spawn", "plain");
    let (m, done) = run_micro(&mut rt, o.place, move || async move {
        let meter = Meter::start();
        let mut handles = Vec::with_capacity(batch as usize);
        let (mut left, mut done) = (count, 0u64);
        while left > 0 {
            let k = left.min(batch);
            for _ in 0..k {
                handles.push(monoio::spawn(async {}));
            }
            for h in handles.drain(..) {
                h.await;
                done += 1;
            }
            left -= k;
        }
        (meter.stop(), done)
    });
    let mut r = micro_report("spawn", o.place);
    r.int("count", count).int("batch", batch);
    common::finish_micro(r, &m, done, count, 0, None)
}

fn yield_bench(a: &Args, usage: &str) -> ! {
    let o = common::yield_opts(a).unwrap_or_else(|e| common::usage_exit("yield", IMPL, &e, usage));
    let count = o.count;
    let mut rt = runtime("yield", "plain");
    let (m, done) = run_micro(&mut rt, o.place, move || async move {
        let meter = Meter::start();
        let mut done = 0u64;
        for _ in 0..count {
            futures_lite::future::yield_now().await;
            // Opaque to the optimiser: without it LLVM can fold the whole loop when
            // the root future is polled inline (`--in root`).
            done = std::hint::black_box(done + 1);
        }
        (meter.stop(), done)
    });
    let mut r = micro_report("yield", o.place);
    r.str("yield_fn", "futures_lite::future::yield_now").int("count", count);
    common::finish_micro(r, &m, done, count, 0, None)
}

fn channel_bench(a: &Args, usage: &str) -> ! {
    let o = common::channel_opts(a).unwrap_or_else(|e| common::usage_exit("channel", IMPL, &e, usage));
    let (messages, pairs, capacity, local_sync) = (o.messages, o.pairs, o.capacity, o.local_sync);
    // futures' bounded channel holds `buffer + number of senders` messages.
    let buffer = (capacity - 1) as usize;
    let mut rt = runtime("channel", "plain");
    let (m, received, errors, first_error) = run_micro(&mut rt, o.place, move || async move {
        let meter = Meter::start();
        let mut producers = Vec::with_capacity(pairs as usize);
        let mut consumers = Vec::with_capacity(pairs as usize);
        // The same producer and consumer over either channel (local-sync's Tx::send takes &self).
        macro_rules! spawn_pairs {
            ($make:expr, $recv:ident) => {
                for _ in 0..pairs {
                    #[allow(unused_mut)]
                    let (mut tx, mut rx) = $make;
                    producers.push(monoio::spawn(async move {
                        for i in 0..messages {
                            if tx.send(i).await.is_err() {
                                return false;
                            }
                        }
                        true
                    }));
                    consumers.push(monoio::spawn(async move {
                        let (mut n, mut sum) = (0u64, 0u64);
                        while let Some(v) = rx.$recv().await {
                            n += 1;
                            sum = sum.wrapping_add(v);
                        }
                        (n, sum)
                    }));
                }
            };
        }
        if local_sync {
            spawn_pairs!(local_sync::mpsc::bounded::channel::<u64>(capacity as usize), recv);
        } else {
            spawn_pairs!(futures::channel::mpsc::channel::<u64>(buffer), next);
        }
        let (mut received, mut errors, mut first_error) = (0u64, 0u64, None);
        for p in producers {
            if !p.await {
                errors += 1;
                first_error.get_or_insert_with(|| "a send failed: receiver dropped".to_string());
            }
        }
        for c in consumers {
            let (n, sum) = c.await;
            received += n;
            if n != messages || sum != common::expected_sum(messages) {
                errors += 1;
                first_error.get_or_insert_with(|| format!("consumer got {n} messages summing to {sum}"));
            }
        }
        (meter.stop(), received, errors, first_error)
    });
    let mut r = micro_report("channel", o.place);
    r.str("channel", if local_sync { "local_sync::mpsc::bounded" } else { "futures::channel::mpsc" })
        .int("messages", messages)
        .int("pairs", pairs)
        .int("capacity", capacity);
    common::finish_micro(r, &m, received, messages * pairs, errors, first_error)
}
