//! Compio baseline of the ringo benchmark suite. One single-threaded compio runtime;
//! built with only the `io-uring` driver feature (no `polling` fallback), and the
//! driver type is checked at start. See ../README.md for the subcommands and the
//! JSON line.

use std::mem::MaybeUninit;
use std::rc::Rc;

use common::{bump, AlignedBuf, Args, IoState, Meter, Place, Report, ECHO};
use compio::buf::{BufResult, IoBuf, IoBufMut, SetLen};
use compio::io::{AsyncRead, AsyncReadAt, AsyncWriteExt};
use compio::net::{TcpListener, TcpStream};
use compio::runtime::Runtime;
use futures::{SinkExt, StreamExt};
use ringo_bench_common as common;

const IMPL: &str = "compio";
/// Submission queue entries (compio's own default, stated explicitly).
const ENTRIES: u32 = 1024;
const DRIVER: &str = "io_uring (compio proactor, 1024 entries)";

fn usage() -> String {
    common::usage_text(
        "ringo-bench-compio",
        "compio::fs::File::read_at (AsyncReadAt) on the io_uring proactor, one 4096-aligned buffer per task",
        "compio has no yield of its own; futures_lite::future::yield_now is used",
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
        "xchannel" => xchannel_bench(&a, &u),
        _ => common::unknown_subcommand(&a, IMPL, &u),
    }
}

fn runtime(bench: &str, variant: &str) -> Runtime {
    let die = |m: String| -> ! { common::fail(bench, IMPL, variant, common::EXIT_FAILED, &m) };
    let mut proactor = compio::driver::ProactorBuilder::new();
    proactor.capacity(ENTRIES);
    let rt = compio::runtime::RuntimeBuilder::new()
        .with_proactor(proactor)
        .build()
        .unwrap_or_else(|e| die(format!("cannot build the compio runtime: {e}")));
    if !rt.driver_type().is_iouring() {
        die(format!("compio picked the {:?} driver, not io_uring", rt.driver_type()));
    }
    rt
}

// ---------------------------------------------------------------- buffers

/// Page-aligned reusable read buffer handed to the kernel by ownership.
struct Buf(AlignedBuf);

impl IoBuf for Buf {
    fn as_init(&self) -> &[u8] {
        self.0.valid()
    }
}

impl SetLen for Buf {
    unsafe fn set_len(&mut self, len: usize) {
        self.0.len = len.min(self.0.capacity());
    }
}

impl IoBufMut for Buf {
    fn as_uninit(&mut self) -> &mut [MaybeUninit<u8>] {
        let full = self.0.full_mut();
        // SAFETY: u8 and MaybeUninit<u8> have the same layout; the bytes are initialised.
        unsafe { std::slice::from_raw_parts_mut(full.as_mut_ptr() as *mut MaybeUninit<u8>, full.len()) }
    }
}

// ---------------------------------------------------------------- seqread / randread

fn file_bench(a: &Args, random: bool, usage: &str) -> ! {
    let p = common::prepare_file_bench(a, random, IMPL, DRIVER, usage);
    let variant = p.opts.variant();
    let bench = p.bench;
    // The std handle served the checks; compio opens its own (same flags).
    drop(p.file);
    let rt = runtime(bench, variant);
    let state = Rc::new(p.state);
    let (qd, bs, seconds, warmup, direct) = (
        p.opts.qd,
        p.opts.bs as usize,
        p.opts.seconds,
        p.opts.warmup,
        p.opts.direct,
    );
    let path = p.opts.file.clone();
    let st = state.clone();
    let m = rt.block_on(async move {
        let mut oo = compio::fs::OpenOptions::new();
        oo.read(true);
        if direct {
            oo.custom_flags(libc::O_DIRECT);
        }
        let file = oo.open(&path).await.unwrap_or_else(|e| {
            common::fail(
                bench,
                IMPL,
                variant,
                common::EXIT_FAILED,
                &common::open_error(&path, direct, &e),
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
async fn run_readers(file: &Rc<compio::fs::File>, st: &Rc<IoState>, bufs: Vec<Buf>, seconds: f64) -> Vec<Buf> {
    st.arm(seconds);
    let tasks: Vec<_> = bufs
        .into_iter()
        .map(|b| compio::runtime::spawn(reader(file.clone(), st.clone(), b)))
        .collect();
    let mut back = Vec::with_capacity(tasks.len());
    for t in tasks {
        match t.await {
            Ok(b) => back.push(b),
            Err(e) => st.error(format!("reader task failed: {e:?}")),
        }
    }
    back
}

/// One of the `qd` tasks: read the next block until the phase is over.
async fn reader(file: Rc<compio::fs::File>, st: Rc<IoState>, mut buf: Buf) -> Buf {
    while let Some(off) = st.next_offset() {
        let BufResult(res, b) = file.read_at(buf, off).await;
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
    let rt = runtime("echo-server", "plain");
    rt.block_on(async move {
        let first_try = std::time::Instant::now();
        let listener = loop {
            match TcpListener::bind(("127.0.0.1", port)).await {
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
        eprintln!("ringo-bench-compio echo-server listening on {local}");
        loop {
            match listener.accept().await {
                Ok((stream, _)) => {
                    bump(&ECHO.connections, 1);
                    let _ = stream.set_nodelay(true);
                    compio::runtime::spawn(serve(stream, bufsize)).detach();
                }
                Err(e) => common::echo_io_error(&e),
            }
        }
    })
}

async fn serve(mut s: TcpStream, cap: usize) {
    let mut buf: Vec<u8> = Vec::with_capacity(cap);
    loop {
        // compio reads into the whole capacity from the start and only ever grows
        // the length, so reset it before each read.
        buf.clear();
        let BufResult(res, b) = s.read(buf).await;
        buf = b;
        match res {
            Ok(0) => return,
            Ok(n) => {
                bump(&ECHO.ops, 1);
                bump(&ECHO.bytes, n as u64);
                let BufResult(res, b) = s.write_all(buf).await;
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

/// Run a micro benchmark body in a spawned task or in the root future. A failed
/// join of the body task is reported as an error string.
fn run_micro<F, Fut, T>(rt: &Runtime, place: Place, body: F) -> Result<T, String>
where
    F: FnOnce() -> Fut + 'static,
    Fut: std::future::Future<Output = T> + 'static,
    T: 'static,
{
    match place {
        Place::Task => rt.block_on(async move { compio::runtime::spawn(body()).await.map_err(|e| format!("{e:?}")) }),
        Place::Root => Ok(rt.block_on(body())),
    }
}

fn micro_report(bench: &str, place: Place) -> Report {
    let mut r = Report::new(bench, IMPL, "plain");
    r.str("driver", DRIVER).str("in", place.name());
    r
}

fn body_failed(bench: &str, e: String) -> ! {
    common::fail(
        bench,
        IMPL,
        "plain",
        common::EXIT_FAILED,
        &format!("benchmark task failed: {e}"),
    )
}

fn spawn_bench(a: &Args, usage: &str) -> ! {
    let o = common::spawn_opts(a).unwrap_or_else(|e| common::usage_exit("spawn", IMPL, &e, usage));
    let (count, batch) = (o.count, o.batch);
    let rt = runtime("spawn", "plain");
    let (m, done, errors) = run_micro(&rt, o.place, move || async move {
        let meter = Meter::start();
        let mut handles = Vec::with_capacity(batch as usize);
        let (mut left, mut done, mut errors) = (count, 0u64, 0u64);
        while left > 0 {
            let k = left.min(batch);
            for _ in 0..k {
                handles.push(compio::runtime::spawn(async {}));
            }
            for h in handles.drain(..) {
                match h.await {
                    Ok(()) => done += 1,
                    Err(_) => errors += 1,
                }
            }
            left -= k;
        }
        (meter.stop(), done, errors)
    })
    .unwrap_or_else(|e| body_failed("spawn", e));
    let mut r = micro_report("spawn", o.place);
    r.int("count", count).int("batch", batch);
    common::finish_micro(r, &m, done, count, errors, None)
}

fn yield_bench(a: &Args, usage: &str) -> ! {
    let o = common::yield_opts(a).unwrap_or_else(|e| common::usage_exit("yield", IMPL, &e, usage));
    let count = o.count;
    let rt = runtime("yield", "plain");
    let (m, done) = run_micro(&rt, o.place, move || async move {
        let meter = Meter::start();
        let mut done = 0u64;
        for _ in 0..count {
            futures_lite::future::yield_now().await;
            // Opaque to the optimiser, so the loop cannot be folded.
            done = std::hint::black_box(done + 1);
        }
        (meter.stop(), done)
    })
    .unwrap_or_else(|e| body_failed("yield", e));
    let mut r = micro_report("yield", o.place);
    r.str(
        "yield_fn",
        "futures_lite::future::yield_now (compio has no yield of its own)",
    )
    .int("count", count);
    common::finish_micro(r, &m, done, count, 0, None)
}

fn channel_bench(a: &Args, usage: &str) -> ! {
    let o = common::channel_opts(a).unwrap_or_else(|e| common::usage_exit("channel", IMPL, &e, usage));
    let (messages, pairs, capacity, local_sync) = (o.messages, o.pairs, o.capacity, o.local_sync);
    // futures' bounded channel holds `buffer + number of senders` messages.
    let buffer = (capacity - 1) as usize;
    let rt = runtime("channel", "plain");
    let (m, received, errors, first_error) = run_micro(&rt, o.place, move || async move {
        let meter = Meter::start();
        let mut producers = Vec::with_capacity(pairs as usize);
        let mut consumers = Vec::with_capacity(pairs as usize);
        // The same producer and consumer over either channel (local-sync's Tx::send takes &self).
        macro_rules! spawn_pairs {
            ($make:expr, $recv:ident) => {
                for _ in 0..pairs {
                    #[allow(unused_mut)]
                    let (mut tx, mut rx) = $make;
                    producers.push(compio::runtime::spawn(async move {
                        for i in 0..messages {
                            if tx.send(i).await.is_err() {
                                return false;
                            }
                        }
                        true
                    }));
                    consumers.push(compio::runtime::spawn(async move {
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
            if !matches!(p.await, Ok(true)) {
                errors += 1;
                first_error.get_or_insert_with(|| "a producer failed".to_string());
            }
        }
        for c in consumers {
            match c.await {
                Ok((n, sum)) => {
                    received += n;
                    if n != messages || sum != common::expected_sum(messages) {
                        errors += 1;
                        first_error.get_or_insert_with(|| format!("consumer got {n} messages summing to {sum}"));
                    }
                }
                Err(e) => {
                    errors += 1;
                    first_error.get_or_insert_with(|| format!("consumer task failed: {e:?}"));
                }
            }
        }
        (meter.stop(), received, errors, first_error)
    })
    .unwrap_or_else(|e| body_failed("channel", e));
    let mut r = micro_report("channel", o.place);
    r.str("channel", if local_sync { "local_sync::mpsc::bounded" } else { "futures::channel::mpsc" })
        .int("messages", messages)
        .int("pairs", pairs)
        .int("capacity", capacity);
    common::finish_micro(r, &m, received, messages * pairs, errors, first_error)
}

/// Cross-thread channel: a compio runtime on each of two threads (pinned to two CPUs), the
/// producer's task sends 0..M through one bounded futures::channel::mpsc channel holding
/// `capacity` messages to the consumer's task; compio's executor takes wake-ups from other
/// threads (they wake its proactor). See common::run_xchannel.
fn xchannel_bench(a: &Args, usage: &str) -> ! {
    let o = common::xchannel_opts(a).unwrap_or_else(|e| common::usage_exit("xchannel", IMPL, &e, usage));
    let (messages, capacity, place) = (o.messages, o.capacity, o.place);
    // futures' bounded channel holds `buffer + number of senders` messages.
    let (mut tx, mut rx) = futures::channel::mpsc::channel::<u64>((capacity - 1) as usize);
    let mut r = micro_report("xchannel", place);
    r.str("channel", "futures::channel::mpsc (two compio runtimes on two threads)")
        .int("capacity", capacity);
    common::run_xchannel(
        r,
        messages,
        move |start| {
            let rt = runtime("xchannel", "plain");
            start();
            run_micro(&rt, place, move || async move {
                for i in 0..messages {
                    if tx.send(i).await.is_err() {
                        return false;
                    }
                }
                true
            })
            .unwrap_or(false)
        },
        move |start| {
            let rt = runtime("xchannel", "plain");
            start();
            run_micro(&rt, place, move || async move {
                let mut got = common::Received::default();
                while let Some(v) = rx.next().await {
                    got.count += 1;
                    got.sum = got.sum.wrapping_add(v);
                }
                got
            })
            .unwrap_or_default()
        },
    )
}
