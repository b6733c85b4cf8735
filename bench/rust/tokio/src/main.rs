//! Tokio baseline of the ringo benchmark suite. One current_thread runtime (epoll
//! reactor). Tokio has no io_uring file I/O: its `fs` runs blocking std calls on the
//! blocking thread pool, so `seqread`/`randread` do exactly that (spawn_blocking +
//! pread into an aligned buffer) and say so in the `driver` field.
//! See ../README.md for the subcommands and the JSON line.

use std::os::unix::fs::FileExt;
use std::rc::Rc;
use std::sync::Arc;

use common::{bump, AlignedBuf, Args, IoState, Meter, Place, Report, ECHO};
use ringo_bench_common as common;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Runtime;

const IMPL: &str = "tokio";
const DRIVER: &str = "epoll (tokio current_thread)";
const FS_DRIVER: &str = "blocking pool (tokio spawn_blocking + pread; tokio has no io_uring fs)";

fn usage() -> String {
    common::usage_text(
        "ringo-bench-tokio",
        "tokio's blocking thread pool: spawn_blocking + pread into a 4096-aligned buffer per task (what tokio::fs does inside)",
        "tokio::task::yield_now",
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
    tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .unwrap_or_else(|e| {
            common::fail(
                bench,
                IMPL,
                variant,
                common::EXIT_FAILED,
                &format!("cannot build the tokio runtime: {e}"),
            )
        })
}

// ---------------------------------------------------------------- seqread / randread

fn file_bench(a: &Args, random: bool, usage: &str) -> ! {
    let p = common::prepare_file_bench(a, random, IMPL, FS_DRIVER, usage);
    let variant = p.opts.variant();
    let rt = runtime(p.bench, variant);
    let state = Rc::new(p.state);
    let (qd, bs, seconds, warmup) = (p.opts.qd, p.opts.bs as usize, p.opts.seconds, p.opts.warmup);
    let file = Arc::new(p.file);
    let st = state.clone();
    let local = tokio::task::LocalSet::new();
    let m = local.block_on(&rt, async move {
        let mut bufs: Vec<AlignedBuf> = (0..qd).map(|_| AlignedBuf::new(bs)).collect();
        start_blocking_threads(qd).await;
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

/// Tokio's default cap on blocking threads.
const MAX_BLOCKING_THREADS: u64 = 512;

/// Make the blocking pool start `qd` threads now (all blocked together on a barrier),
/// so thread creation is not inside the measured interval.
async fn start_blocking_threads(qd: u64) {
    let n = qd.min(MAX_BLOCKING_THREADS) as usize;
    let barrier = Arc::new(std::sync::Barrier::new(n));
    let hs: Vec<_> = (0..n)
        .map(|_| {
            let b = barrier.clone();
            tokio::task::spawn_blocking(move || {
                b.wait();
            })
        })
        .collect();
    for h in hs {
        let _ = h.await;
    }
}

/// Run one task per buffer until `seconds` have passed (or an error); give the
/// buffers back for the next phase.
async fn run_readers(
    file: &Arc<std::fs::File>,
    st: &Rc<IoState>,
    bufs: Vec<AlignedBuf>,
    seconds: f64,
) -> Vec<AlignedBuf> {
    st.arm(seconds);
    let tasks: Vec<_> = bufs
        .into_iter()
        .map(|b| tokio::task::spawn_local(reader(file.clone(), st.clone(), b)))
        .collect();
    let mut back = Vec::with_capacity(tasks.len());
    for t in tasks {
        match t.await {
            Ok(Some(b)) => back.push(b),
            Ok(None) => {}
            Err(e) => st.error(format!("reader task failed: {e}")),
        }
    }
    back
}

/// One of the `qd` tasks: read the next block on the blocking pool until the phase is
/// over. `None` when the buffer was lost with a failed blocking task.
async fn reader(file: Arc<std::fs::File>, st: Rc<IoState>, mut buf: AlignedBuf) -> Option<AlignedBuf> {
    while let Some(off) = st.next_offset() {
        let f = file.clone();
        let joined = tokio::task::spawn_blocking(move || {
            let res = f.read_at(buf.full_mut(), off);
            (res, buf)
        })
        .await;
        match joined {
            Ok((res, b)) => {
                buf = b;
                st.complete(off, res);
            }
            Err(e) => {
                st.error(format!("blocking read task failed: {e}"));
                return None;
            }
        }
    }
    Some(buf)
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
        eprintln!("ringo-bench-tokio echo-server listening on {local}");
        loop {
            match listener.accept().await {
                Ok((stream, _)) => {
                    bump(&ECHO.connections, 1);
                    let _ = stream.set_nodelay(true);
                    drop(tokio::spawn(serve(stream, bufsize)));
                }
                Err(e) => common::echo_io_error(&e),
            }
        }
    })
}

async fn serve(mut s: TcpStream, cap: usize) {
    let mut buf = vec![0u8; cap];
    loop {
        match s.read(&mut buf).await {
            Ok(0) => return,
            Ok(n) => {
                bump(&ECHO.ops, 1);
                bump(&ECHO.bytes, n as u64);
                if let Err(e) = s.write_all(&buf[..n]).await {
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
fn run_micro<F, Fut, T>(rt: &Runtime, place: Place, body: F) -> Result<T, String>
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: std::future::Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    match place {
        Place::Task => rt.block_on(async move { tokio::spawn(body()).await.map_err(|e| e.to_string()) }),
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
                handles.push(tokio::spawn(async {}));
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
            tokio::task::yield_now().await;
            // Opaque to the optimiser, so the loop cannot be folded.
            done = std::hint::black_box(done + 1);
        }
        (meter.stop(), done)
    })
    .unwrap_or_else(|e| body_failed("yield", e));
    let mut r = micro_report("yield", o.place);
    r.str("yield_fn", "tokio::task::yield_now").int("count", count);
    common::finish_micro(r, &m, done, count, 0, None)
}

fn channel_bench(a: &Args, usage: &str) -> ! {
    let o = common::channel_opts(a).unwrap_or_else(|e| common::usage_exit("channel", IMPL, &e, usage));
    if o.local_sync {
        common::usage_exit("channel", IMPL, &common::UsageError("--channel local-sync: tokio's own tokio::sync::mpsc is its channel".into()), usage);
    }
    let (messages, pairs, capacity) = (o.messages, o.pairs, o.capacity);
    let rt = runtime("channel", "plain");
    let (m, received, errors, first_error) = run_micro(&rt, o.place, move || async move {
        let meter = Meter::start();
        let mut producers = Vec::with_capacity(pairs as usize);
        let mut consumers = Vec::with_capacity(pairs as usize);
        for _ in 0..pairs {
            let (tx, mut rx) = tokio::sync::mpsc::channel::<u64>(capacity as usize);
            producers.push(tokio::spawn(async move {
                for i in 0..messages {
                    if tx.send(i).await.is_err() {
                        return false;
                    }
                }
                true
            }));
            consumers.push(tokio::spawn(async move {
                let (mut n, mut sum) = (0u64, 0u64);
                while let Some(v) = rx.recv().await {
                    n += 1;
                    sum = sum.wrapping_add(v);
                }
                (n, sum)
            }));
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
                    first_error.get_or_insert_with(|| format!("consumer task failed: {e}"));
                }
            }
        }
        (meter.stop(), received, errors, first_error)
    })
    .unwrap_or_else(|e| body_failed("channel", e));
    let mut r = micro_report("channel", o.place);
    r.str("channel", "tokio::sync::mpsc")
        .int("messages", messages)
        .int("pairs", pairs)
        .int("capacity", capacity);
    common::finish_micro(r, &m, received, messages * pairs, errors, first_error)
}

/// Cross-thread channel: a current_thread runtime on each of two threads (pinned to two
/// CPUs), the producer's task sends 0..M through one bounded tokio::sync::mpsc channel of
/// `capacity` messages to the consumer's task. See common::run_xchannel.
fn xchannel_bench(a: &Args, usage: &str) -> ! {
    let o = common::xchannel_opts(a).unwrap_or_else(|e| common::usage_exit("xchannel", IMPL, &e, usage));
    let (messages, capacity, place) = (o.messages, o.capacity, o.place);
    let (tx, mut rx) = tokio::sync::mpsc::channel::<u64>(capacity as usize);
    let mut r = micro_report("xchannel", place);
    r.str(
        "channel",
        "tokio::sync::mpsc (two current_thread runtimes on two threads)",
    )
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
                while let Some(v) = rx.recv().await {
                    got.count += 1;
                    got.sum = got.sum.wrapping_add(v);
                }
                got
            })
            .unwrap_or_default()
        },
    )
}
