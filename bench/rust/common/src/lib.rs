//! Shared pieces of the ringo Rust baselines: command-line parsing, the one-line JSON
//! report, CPU time from getrusage, page-aligned buffers, the offsets file, the shared
//! state of the file-read benchmarks and the signal thread of the echo servers.
//!
//! Everything here is runtime-agnostic; each runtime crate adds its own buffer trait
//! impls (the orphan rule keeps them out of this crate), its file and echo-server tasks,
//! and implements [`Baseline`] (program.rs: the subcommand dispatch and the micro
//! benchmarks, written once over each runtime's spawn, yield and channels).

use std::cell::{Cell, RefCell};
use std::fmt::Write as _;
use std::io::{self, Write as _};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

mod program;
pub use program::{
    channel_pairs, echo_server, main, micro_report, spawn_join, xchannel_bench, yield_loop, Baseline, ChannelOut,
    PairJoins, Runtime, SpawnOut, YieldOut,
};

/// Exit status for a bad command line.
pub const EXIT_USAGE: i32 = 2;
/// Exit status for a run that failed (I/O error, short read, failed check).
pub const EXIT_FAILED: i32 = 1;

/// Alignment of every I/O buffer (O_DIRECT on 4 KiB-sector devices needs it).
pub const BUF_ALIGN: usize = 4096;

// ---------------------------------------------------------------- JSON report

enum Value {
    Str(String),
    Int(u64),
    Float(f64, usize),
    Bool(bool),
}

/// One JSON object printed as a single line on stdout. Fields keep insertion order;
/// setting a field twice replaces the earlier value in place.
pub struct Report {
    fields: Vec<(String, Value)>,
}

impl Report {
    pub fn new(bench: &str, imp: &str, variant: &str) -> Self {
        let mut r = Report { fields: Vec::new() };
        r.str("bench", bench).str("impl", imp).str("variant", variant);
        r
    }

    fn set(&mut self, key: &str, v: Value) -> &mut Self {
        if let Some(slot) = self.fields.iter_mut().find(|(k, _)| k == key) {
            slot.1 = v;
        } else {
            self.fields.push((key.to_string(), v));
        }
        self
    }

    pub fn str(&mut self, key: &str, v: &str) -> &mut Self {
        self.set(key, Value::Str(v.to_string()))
    }
    pub fn int(&mut self, key: &str, v: u64) -> &mut Self {
        self.set(key, Value::Int(v))
    }
    /// A float printed with `decimals` digits after the point.
    pub fn float(&mut self, key: &str, v: f64, decimals: usize) -> &mut Self {
        self.set(key, Value::Float(v, decimals))
    }
    pub fn boolean(&mut self, key: &str, v: bool) -> &mut Self {
        self.set(key, Value::Bool(v))
    }

    /// Wall and CPU seconds of a finished measurement.
    pub fn times(&mut self, m: &Measured) -> &mut Self {
        self.float("seconds", m.seconds, 6)
            .float("cpu_seconds", m.cpu_seconds, 6)
            .int("minflt", m.minflt.max(0) as u64)
    }

    /// `errors`, `ok` and, when `error` is given, the error message.
    pub fn outcome(&mut self, errors: u64, ok: bool, error: Option<&str>) -> &mut Self {
        self.int("errors", errors).boolean("ok", ok);
        if let Some(e) = error {
            self.str("error", e);
        }
        self
    }

    pub fn to_line(&self) -> String {
        let mut s = String::with_capacity(256);
        s.push('{');
        for (i, (k, v)) in self.fields.iter().enumerate() {
            if i > 0 {
                s.push(',');
            }
            push_json_str(&mut s, k);
            s.push(':');
            match v {
                Value::Str(x) => push_json_str(&mut s, x),
                Value::Int(x) => {
                    let _ = write!(s, "{x}");
                }
                Value::Float(x, d) => {
                    if x.is_finite() {
                        let _ = write!(s, "{x:.d$}", d = *d);
                    } else {
                        s.push_str("null");
                    }
                }
                Value::Bool(x) => s.push_str(if *x { "true" } else { "false" }),
            }
        }
        s.push('}');
        s
    }

    /// Print the line (and nothing else) on stdout.
    pub fn print(&self) {
        let mut line = self.to_line();
        line.push('\n');
        let out = io::stdout();
        let mut lock = out.lock();
        let _ = lock.write_all(line.as_bytes());
        let _ = lock.flush();
    }

    /// Print the line and exit: status 0 when `ok` is true, else [`EXIT_FAILED`].
    pub fn finish(&self) -> ! {
        self.print();
        let ok = self
            .fields
            .iter()
            .any(|(k, v)| k == "ok" && matches!(v, Value::Bool(true)));
        std::process::exit(if ok { 0 } else { EXIT_FAILED })
    }
}

fn push_json_str(s: &mut String, v: &str) {
    s.push('"');
    for c in v.chars() {
        match c {
            '"' => s.push_str("\\\""),
            '\\' => s.push_str("\\\\"),
            '\n' => s.push_str("\\n"),
            '\r' => s.push_str("\\r"),
            '\t' => s.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(s, "\\u{:04x}", c as u32);
            }
            c => s.push(c),
        }
    }
    s.push('"');
}

/// Print a failure line (`ok:false`, `error`) for `bench` and exit with `code`.
pub fn fail(bench: &str, imp: &str, variant: &str, code: i32, msg: &str) -> ! {
    let mut r = Report::new(bench, imp, variant);
    r.outcome(0, false, Some(msg));
    r.print();
    std::process::exit(code)
}

// ---------------------------------------------------------------- time

/// CPU time (user + system) of the whole process so far, in seconds.
pub fn cpu_seconds() -> f64 {
    // SAFETY: getrusage only writes into the struct we pass.
    unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        if libc::getrusage(libc::RUSAGE_SELF, &mut ru) != 0 {
            return f64::NAN;
        }
        let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
        tv(ru.ru_utime) + tv(ru.ru_stime)
    }
}

/// Minor page faults of the whole process so far (memory touched for the first time).
pub fn minor_faults() -> i64 {
    // SAFETY: getrusage only writes into the struct we pass.
    unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        if libc::getrusage(libc::RUSAGE_SELF, &mut ru) != 0 {
            return 0;
        }
        ru.ru_minflt as i64
    }
}

/// Start of a measured interval: wall clock, process CPU time and minor page faults.
#[derive(Clone, Copy)]
pub struct Meter {
    t0: Instant,
    cpu0: f64,
    flt0: i64,
}

/// Result of a measured interval.
#[derive(Clone, Copy, Debug)]
pub struct Measured {
    pub seconds: f64,
    pub cpu_seconds: f64,
    pub minflt: i64,
}

impl Meter {
    pub fn start() -> Self {
        let cpu0 = cpu_seconds();
        let flt0 = minor_faults();
        Meter {
            t0: Instant::now(),
            cpu0,
            flt0,
        }
    }
    pub fn started_at(&self) -> Instant {
        self.t0
    }
    pub fn stop(&self) -> Measured {
        let seconds = self.t0.elapsed().as_secs_f64();
        Measured {
            seconds,
            cpu_seconds: cpu_seconds() - self.cpu0,
            minflt: minor_faults() - self.flt0,
        }
    }
}

// ---------------------------------------------------------------- command line

/// Parsed `<subcommand> --key value ...` command line.
pub struct Args {
    pub cmd: String,
    opts: Vec<(String, String)>,
}

/// A command-line problem; the caller prints it and exits with [`EXIT_USAGE`].
#[derive(Debug)]
pub struct UsageError(pub String);

impl Args {
    /// Parse `argv[1..]`. Accepts `--key value` and `--key=value`.
    pub fn parse(argv: &[String]) -> Result<Args, UsageError> {
        let Some(cmd) = argv.first() else {
            return Err(UsageError("missing subcommand".into()));
        };
        if cmd.starts_with('-') {
            return Err(UsageError(format!("expected a subcommand, got '{cmd}'")));
        }
        let mut opts: Vec<(String, String)> = Vec::new();
        let mut i = 1;
        while i < argv.len() {
            let a = &argv[i];
            let Some(body) = a.strip_prefix("--") else {
                return Err(UsageError(format!("unexpected argument '{a}'")));
            };
            let (k, v) = if let Some((k, v)) = body.split_once('=') {
                (k.to_string(), v.to_string())
            } else {
                i += 1;
                match argv.get(i) {
                    Some(v) => (body.to_string(), v.clone()),
                    None => return Err(UsageError(format!("option --{body} needs a value"))),
                }
            };
            if k.is_empty() {
                return Err(UsageError(format!("bad option '{a}'")));
            }
            if opts.iter().any(|(x, _)| *x == k) {
                return Err(UsageError(format!("option --{k} given twice")));
            }
            opts.push((k, v));
            i += 1;
        }
        Ok(Args { cmd: cmd.clone(), opts })
    }

    /// Fail on any option not in `allowed`.
    pub fn only(&self, allowed: &[&str]) -> Result<(), UsageError> {
        for (k, _) in &self.opts {
            if !allowed.contains(&k.as_str()) {
                return Err(UsageError(format!("unknown option --{k} for '{}'", self.cmd)));
            }
        }
        Ok(())
    }

    fn raw(&self, key: &str) -> Option<&str> {
        self.opts.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    pub fn string(&self, key: &str) -> Result<String, UsageError> {
        match self.raw(key) {
            Some(v) if !v.is_empty() => Ok(v.to_string()),
            Some(_) => Err(UsageError(format!("--{key} must not be empty"))),
            None => Err(UsageError(format!("missing --{key}"))),
        }
    }

    /// An unsigned integer in `min..=max`; `default` when the option is absent.
    pub fn uint(&self, key: &str, default: Option<u64>, min: u64, max: u64) -> Result<u64, UsageError> {
        let v = match (self.raw(key), default) {
            (Some(s), _) => s
                .parse::<u64>()
                .map_err(|_| UsageError(format!("--{key}: '{s}' is not an unsigned integer")))?,
            (None, Some(d)) => d,
            (None, None) => return Err(UsageError(format!("missing --{key}"))),
        };
        if v < min || v > max {
            return Err(UsageError(format!("--{key} must be in {min}..={max}, got {v}")));
        }
        Ok(v)
    }

    /// A finite number `> 0` and `<= max`; `default` when absent.
    pub fn positive_float(&self, key: &str, default: Option<f64>, max: f64) -> Result<f64, UsageError> {
        let v = match (self.raw(key), default) {
            (Some(s), _) => s
                .parse::<f64>()
                .map_err(|_| UsageError(format!("--{key}: '{s}' is not a number")))?,
            (None, Some(d)) => d,
            (None, None) => return Err(UsageError(format!("missing --{key}"))),
        };
        if !(v.is_finite() && v > 0.0 && v <= max) {
            return Err(UsageError(format!("--{key} must be > 0 and <= {max}, got {v}")));
        }
        Ok(v)
    }

    /// A finite number `>= 0` and `<= max`; `default` when absent.
    pub fn nonneg_float(&self, key: &str, default: f64, max: f64) -> Result<f64, UsageError> {
        let v = match self.raw(key) {
            Some(s) => s
                .parse::<f64>()
                .map_err(|_| UsageError(format!("--{key}: '{s}' is not a number")))?,
            None => default,
        };
        if !(v.is_finite() && v >= 0.0 && v <= max) {
            return Err(UsageError(format!("--{key} must be >= 0 and <= {max}, got {v}")));
        }
        Ok(v)
    }

    /// `0` or `1`.
    pub fn flag01(&self, key: &str, default: Option<bool>) -> Result<bool, UsageError> {
        match (self.raw(key), default) {
            (Some("0"), _) => Ok(false),
            (Some("1"), _) => Ok(true),
            (Some(s), _) => Err(UsageError(format!("--{key} must be 0 or 1, got '{s}'"))),
            (None, Some(d)) => Ok(d),
            (None, None) => Err(UsageError(format!("missing --{key}"))),
        }
    }
}

/// Usage text shared by the three binaries; `fs_note` and `yield_note` describe
/// runtime-specific details.
pub fn usage_text(bin: &str, fs_note: &str, yield_note: &str) -> String {
    format!(
        "usage: {bin} <subcommand> [--option value]...\n\
         \n\
         subcommands:\n\
         \x20 seqread     --file PATH [--bs 65536] --qd N [--direct 0|1] --seconds S [--warmup W]\n\
         \x20 randread    --file PATH [--bs 4096]  --qd N [--direct 0|1] --seconds S [--warmup W] --offsets PATH\n\
         \x20 --warmup: seconds of the same workload run unmeasured first, in the same process (default 0)\n\
         \x20 echo-server --port P [--buf 4096]      (runs until SIGTERM/SIGINT)\n\
         \x20 spawn       --count N [--batch B] [--rounds R] [--in task|root]   (B: join every B spawns; default all\n\
         \x20             at once; R: the workload R times on one runtime, the last one timed)\n\
         \x20 yield       --count N [--in task|root]\n\
         \x20 channel     --messages M --pairs P [--capacity 1024] [--in task|root] [--channel default|local-sync]\n\
         \x20             (local-sync: the local-sync crate's single-thread channel; monoio and compio only)\n\
         \x20 xchannel    --messages M [--capacity 1024] [--in task|root]   (producer and consumer runtimes on two threads/CPUs;\n\
         \x20             monoio: the separate binary ringo-bench-monoio-xthread)\n\
         \x20 --in: run the body in a spawned task (default) or in the block_on root future\n\
         \n\
         file I/O: {fs_note}\n\
         yield: {yield_note}\n\
         Each run prints one JSON line on stdout. Exit 0 ok, 1 failed run, 2 usage error.\n"
    )
}

/// Report a usage error as a JSON line on stdout plus the usage text on stderr,
/// then exit with [`EXIT_USAGE`].
pub fn usage_exit(bench: &str, imp: &str, err: &UsageError, usage: &str) -> ! {
    eprint!("error: {}\n\n{usage}", err.0);
    fail(bench, imp, "none", EXIT_USAGE, &format!("usage: {}", err.0))
}

/// Parse the process arguments. `-h`/`--help`/`help` print the usage on stdout and
/// exit 0; a malformed line is a usage error (exit 2).
pub fn parse_cli(imp: &str, usage: &str) -> Args {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    if argv.is_empty() {
        usage_exit("none", imp, &UsageError("missing subcommand".into()), usage);
    }
    if argv.iter().any(|a| a == "-h" || a == "--help") || argv[0] == "help" {
        print!("{usage}");
        std::process::exit(0);
    }
    Args::parse(&argv).unwrap_or_else(|e| {
        let bench = argv
            .first()
            .filter(|s| !s.starts_with('-'))
            .map_or("none", |s| s.as_str());
        usage_exit(bench, imp, &e, usage)
    })
}

/// Turn a panic into a failure line on stdout (exit 1) instead of a bare backtrace.
pub fn install_panic_report(bench: &str, imp: &str) {
    let (bench, imp) = (bench.to_string(), imp.to_string());
    std::panic::set_hook(Box::new(move |info| {
        eprintln!("{info}");
        fail(&bench, &imp, "none", EXIT_FAILED, &format!("panic: {info}"));
    }));
}

/// Exit with a usage error for an unknown subcommand.
pub fn unknown_subcommand(a: &Args, imp: &str, usage: &str) -> ! {
    usage_exit(
        &a.cmd,
        imp,
        &UsageError(format!("unknown subcommand '{}'", a.cmd)),
        usage,
    )
}

// ---------------------------------------------------------------- buffers

/// A zero-filled, `BUF_ALIGN`-aligned heap allocation of a fixed size, reused across
/// I/Os. `len` tracks the initialised/valid prefix for buffer traits that need it.
pub struct AlignedBuf {
    ptr: std::ptr::NonNull<u8>,
    cap: usize,
    pub len: usize,
}

// SAFETY: the buffer owns its allocation exclusively; moving it to another thread is
// as safe as moving a Vec<u8>.
unsafe impl Send for AlignedBuf {}

impl AlignedBuf {
    pub fn new(cap: usize) -> AlignedBuf {
        assert!(cap > 0);
        let layout = std::alloc::Layout::from_size_align(cap, BUF_ALIGN).expect("buffer layout");
        // SAFETY: the layout has a non-zero size. Zeroing also faults the pages in now,
        // outside the measured interval.
        let p = unsafe { std::alloc::alloc_zeroed(layout) };
        let ptr = std::ptr::NonNull::new(p).unwrap_or_else(|| std::alloc::handle_alloc_error(layout));
        AlignedBuf { ptr, cap, len: 0 }
    }
    pub fn capacity(&self) -> usize {
        self.cap
    }
    pub fn as_ptr(&self) -> *const u8 {
        self.ptr.as_ptr()
    }
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr.as_ptr()
    }
    /// The whole allocation (it is always initialised: zeroed at creation).
    pub fn full_mut(&mut self) -> &mut [u8] {
        // SAFETY: `cap` bytes were allocated and zero-initialised.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.cap) }
    }
    pub fn valid(&self) -> &[u8] {
        // SAFETY: `len <= cap` is kept by every writer of `len`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len.min(self.cap)) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        let layout = std::alloc::Layout::from_size_align(self.cap, BUF_ALIGN).expect("buffer layout");
        // SAFETY: allocated in `new` with the same layout.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), layout) }
    }
}

// ---------------------------------------------------------------- file benchmarks

/// Options shared by `seqread` and `randread`.
pub struct FileOpts {
    pub file: String,
    pub bs: u64,
    pub qd: u64,
    pub direct: bool,
    pub seconds: f64,
    /// Unmeasured run of the same workload, in the same process, before the measured one.
    pub warmup: f64,
    /// Only for `randread`.
    pub offsets: Option<String>,
}

impl FileOpts {
    pub fn from_args(a: &Args, random: bool) -> Result<FileOpts, UsageError> {
        if random {
            a.only(&["file", "bs", "qd", "direct", "seconds", "warmup", "offsets"])?;
        } else {
            a.only(&["file", "bs", "qd", "direct", "seconds", "warmup"])?;
        }
        let bs_default = if random { 4096 } else { 65536 };
        let o = FileOpts {
            file: a.string("file")?,
            bs: a.uint("bs", Some(bs_default), 1, 1 << 30)?,
            qd: a.uint("qd", None, 1, 65536)?,
            direct: a.flag01("direct", Some(false))?,
            seconds: a.positive_float("seconds", None, 86400.0)?,
            warmup: a.nonneg_float("warmup", 0.0, 86400.0)?,
            offsets: if random { Some(a.string("offsets")?) } else { None },
        };
        if o.direct && !o.bs.is_multiple_of(BUF_ALIGN as u64) {
            return Err(UsageError(format!(
                "--direct 1 needs --bs a multiple of {BUF_ALIGN}, got {}",
                o.bs
            )));
        }
        Ok(o)
    }

    pub fn variant(&self) -> &'static str {
        if self.direct {
            "direct"
        } else {
            "buffered"
        }
    }

    /// The report fields known before the run.
    pub fn report(&self, bench: &str, imp: &str, driver: &str) -> Report {
        let mut r = Report::new(bench, imp, self.variant());
        r.str("driver", driver)
            .int("qd", self.qd)
            .int("bs", self.bs)
            .float("warmup", self.warmup, 3);
        r
    }
}

/// Read the offsets file: little-endian u64 byte offsets, back to back.
pub fn load_offsets(path: &str) -> Result<Vec<u64>, String> {
    let data = std::fs::read(path).map_err(|e| format!("cannot read offsets file {path}: {e}"))?;
    if data.is_empty() || data.len() % 8 != 0 {
        return Err(format!(
            "offsets file {path} has {} bytes; expected a non-zero multiple of 8 (little-endian u64 offsets)",
            data.len()
        ));
    }
    Ok(data
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect())
}

/// Check every offset fits the file (and is aligned for O_DIRECT).
pub fn check_offsets(offs: &[u64], file_size: u64, bs: u64, direct: bool) -> Result<(), String> {
    for (i, &o) in offs.iter().enumerate() {
        if o.checked_add(bs).is_none_or(|end| end > file_size) {
            return Err(format!(
                "offset #{i} ({o}) + bs {bs} is past the end of the file ({file_size} bytes)"
            ));
        }
        if direct && o % BUF_ALIGN as u64 != 0 {
            return Err(format!(
                "offset #{i} ({o}) is not {BUF_ALIGN}-aligned, which O_DIRECT needs"
            ));
        }
    }
    Ok(())
}

/// Open the file read-only, optionally with O_DIRECT, with a clear message when the
/// filesystem refuses O_DIRECT.
pub fn open_std(path: &str, direct: bool) -> Result<std::fs::File, String> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut oo = std::fs::OpenOptions::new();
    oo.read(true);
    if direct {
        oo.custom_flags(libc::O_DIRECT);
    }
    oo.open(path).map_err(|e| open_error(path, direct, &e))
}

/// Message for a failed open.
pub fn open_error(path: &str, direct: bool, e: &io::Error) -> String {
    if direct && e.raw_os_error() == Some(libc::EINVAL) {
        format!("open {path} with O_DIRECT failed: EINVAL, the filesystem does not support O_DIRECT")
    } else {
        format!("open {path}: {e}")
    }
}

/// Size of the file in bytes, rejecting non-regular files of size 0.
pub fn file_size(f: &std::fs::File, path: &str) -> Result<u64, String> {
    let m = f.metadata().map_err(|e| format!("stat {path}: {e}"))?;
    let mut size = m.len();
    if size == 0 {
        // Block devices report 0 in st_size; ask the kernel for the device size.
        use std::os::unix::fs::FileTypeExt;
        use std::os::unix::io::AsRawFd;
        if m.file_type().is_block_device() {
            let mut bytes: u64 = 0;
            // BLKGETSIZE64 = _IOR(0x12, 114, size_t)
            const BLKGETSIZE64: libc::c_ulong = 0x8008_1272;
            // SAFETY: the ioctl writes one u64 into `bytes`.
            if unsafe { libc::ioctl(f.as_raw_fd(), BLKGETSIZE64, &mut bytes as *mut u64) } == 0 {
                size = bytes;
            }
        }
    }
    Ok(size)
}

/// Everything a file benchmark needs before its runtime starts: the options, the
/// opened (and O_DIRECT-checked) file, its size, the shared state with the offsets
/// loaded and checked, and the report with the fixed fields. Any problem is printed
/// as a failure line and the process exits.
pub struct FilePrep {
    pub bench: &'static str,
    pub opts: FileOpts,
    pub file: std::fs::File,
    pub size: u64,
    pub state: IoState,
    pub report: Report,
}

pub fn prepare_file_bench(a: &Args, random: bool, imp: &str, driver: &str, usage: &str) -> FilePrep {
    let bench = if random { "randread" } else { "seqread" };
    let opts = FileOpts::from_args(a, random).unwrap_or_else(|e| usage_exit(bench, imp, &e, usage));
    let variant = opts.variant();
    let die = |msg: String| -> ! { fail(bench, imp, variant, EXIT_FAILED, &msg) };
    let file = open_std(&opts.file, opts.direct).unwrap_or_else(|m| die(m));
    let size = file_size(&file, &opts.file).unwrap_or_else(|m| die(m));
    let state = if random {
        let path = opts.offsets.as_deref().unwrap_or_default();
        let offs = load_offsets(path).unwrap_or_else(|m| die(m));
        check_offsets(&offs, size, opts.bs, opts.direct).unwrap_or_else(|m| die(format!("{path}: {m}")));
        IoState::random(offs, opts.bs, opts.direct)
    } else {
        IoState::sequential(size, opts.bs, opts.direct).unwrap_or_else(|m| die(m))
    };
    let report = opts.report(bench, imp, driver);
    FilePrep {
        bench,
        opts,
        file,
        size,
        state,
        report,
    }
}

enum Pattern {
    /// Sequential: `chunks` chunks of `bs` bytes, wrapping at the end.
    Seq { chunks: u64 },
    /// Random: offsets taken round robin from the list.
    Rand { offsets: Vec<u64> },
}

/// State shared by the tasks of one file benchmark on one single-threaded runtime:
/// the cursor (next chunk, or next offset index), the deadline, the counters and the
/// first error. Tasks call [`IoState::next_offset`] before each read and
/// [`IoState::complete`] with its result.
pub struct IoState {
    pattern: Pattern,
    bs: u64,
    direct: bool,
    cursor: Cell<u64>,
    // The phase that is running (1, 2, ...) and the last phase whose time is up. A timer thread
    // raises `expired` when its phase's time has passed, so the I/O path reads no clock: the
    // C++ and ringo programs read it once per loop turn, and these runtimes expose no loop-turn
    // time to a task (see bench/rust/README.md, "Clock reads").
    phase: Cell<u64>,
    expired: std::sync::Arc<AtomicU64>,
    stop: Cell<bool>,
    pub ops: Cell<u64>,
    pub bytes: Cell<u64>,
    pub errors: Cell<u64>,
    first_error: RefCell<Option<String>>,
}

impl IoState {
    /// Sequential reads over a file of `file_size` bytes.
    pub fn sequential(file_size: u64, bs: u64, direct: bool) -> Result<IoState, String> {
        let chunks = file_size / bs;
        if chunks == 0 {
            return Err(format!("file is {file_size} bytes, smaller than one block of {bs}"));
        }
        Ok(Self::with(Pattern::Seq { chunks }, bs, direct))
    }

    /// Random reads at the given (already checked) offsets.
    pub fn random(offsets: Vec<u64>, bs: u64, direct: bool) -> IoState {
        Self::with(Pattern::Rand { offsets }, bs, direct)
    }

    fn with(pattern: Pattern, bs: u64, direct: bool) -> IoState {
        IoState {
            pattern,
            bs,
            direct,
            cursor: Cell::new(0),
            phase: Cell::new(0),
            expired: std::sync::Arc::new(AtomicU64::new(0)),
            stop: Cell::new(false),
            ops: Cell::new(0),
            bytes: Cell::new(0),
            errors: Cell::new(0),
            first_error: RefCell::new(None),
        }
    }

    /// Start the clock: tasks stop issuing reads `seconds` from now. A thread sleeps that long
    /// and then marks this phase expired (a late timer of an earlier phase cannot end this one).
    pub fn arm(&self, seconds: f64) {
        let phase = self.phase.get() + 1;
        self.phase.set(phase);
        let expired = self.expired.clone();
        let dur = Duration::from_secs_f64(seconds);
        std::thread::Builder::new()
            .name("phase-timer".into())
            .spawn(move || {
                let end = Instant::now() + dur;
                // sleep can wake early on a signal; sleep again for the rest
                loop {
                    let now = Instant::now();
                    if now >= end {
                        break;
                    }
                    std::thread::sleep(end - now);
                }
                expired.fetch_max(phase, Ordering::Release);
            })
            .expect("cannot start the phase timer thread");
    }

    /// Zero the counts after a warm-up (errors stay: a failed warm-up fails the run).
    pub fn begin_measurement(&self) {
        self.ops.set(0);
        self.bytes.set(0);
    }

    /// `true` once an error stopped the run.
    pub fn stopped(&self) -> bool {
        self.stop.get()
    }

    /// Offset of the next read, or `None` when the run is over (deadline or error).
    #[inline]
    pub fn next_offset(&self) -> Option<u64> {
        if self.stop.get() || self.expired.load(Ordering::Relaxed) >= self.phase.get() {
            return None;
        }
        let c = self.cursor.get();
        match &self.pattern {
            Pattern::Seq { chunks } => {
                self.cursor.set(if c + 1 == *chunks { 0 } else { c + 1 });
                Some(c * self.bs)
            }
            Pattern::Rand { offsets } => {
                let n = offsets.len() as u64;
                self.cursor.set(if c + 1 == n { 0 } else { c + 1 });
                Some(offsets[c as usize])
            }
        }
    }

    /// Account one completed read at `off`. Any error or short read stops the run.
    #[inline]
    pub fn complete(&self, off: u64, res: io::Result<usize>) {
        match res {
            Ok(n) if n as u64 == self.bs => {
                self.ops.set(self.ops.get() + 1);
                self.bytes.set(self.bytes.get() + n as u64);
            }
            Ok(n) => self.error(format!("short read: {n} of {} bytes at offset {off}", self.bs)),
            Err(e) => {
                let hint = if self.direct && e.raw_os_error() == Some(libc::EINVAL) {
                    " (O_DIRECT: unaligned buffer/offset/length, or the filesystem does not support O_DIRECT)"
                } else {
                    ""
                };
                self.error(format!("read at offset {off} failed: {e}{hint}"))
            }
        }
    }

    /// Record a failure that is not a read result (e.g. a failed task join).
    pub fn error(&self, msg: String) {
        self.errors.set(self.errors.get() + 1);
        self.stop.set(true);
        let mut fe = self.first_error.borrow_mut();
        if fe.is_none() {
            *fe = Some(msg);
        }
    }

    /// Fill the result fields of `r` and print it; exits non-zero on failure.
    pub fn finish(&self, mut r: Report, m: &Measured, file: &str, file_size: u64) -> ! {
        let errors = self.errors.get();
        let ok = errors == 0 && self.ops.get() > 0;
        let err = self
            .first_error
            .borrow()
            .clone()
            .or_else(|| (!ok).then(|| "no read completed".to_string()));
        r.str("file", file)
            .int("file_size", file_size)
            .int("ops", self.ops.get())
            .int("bytes", self.bytes.get())
            .times(m)
            .outcome(errors, ok, err.as_deref())
            .finish()
    }
}

// ---------------------------------------------------------------- micro benchmarks

/// Print the line of a micro benchmark: `ops` operations in `m`, `expected` ops wanted.
pub fn finish_micro(mut r: Report, m: &Measured, ops: u64, expected: u64, errors: u64, error: Option<String>) -> ! {
    let ok = errors == 0 && ops == expected && error.is_none();
    let err = error.or_else(|| (!ok).then(|| format!("completed {ops} of {expected} operations")));
    let ns = if ops > 0 {
        m.seconds * 1e9 / ops as f64
    } else {
        f64::NAN
    };
    r.int("ops", ops)
        .int("bytes", 0)
        .times(m)
        .float("ns_per_op", ns, 3)
        .outcome(errors, ok, err.as_deref())
        .finish()
}

/// Where a micro benchmark's body runs: in a spawned task (default, the ordinary
/// case: it goes through the run queue like any task) or directly in the future
/// given to `block_on` (`--in root`, which some runtimes poll in a tight loop without
/// their scheduler; that is how some published yield figures were taken).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Place {
    Task,
    Root,
}

impl Place {
    pub fn name(self) -> &'static str {
        match self {
            Place::Task => "task",
            Place::Root => "root",
        }
    }
}

fn place_opt(a: &Args) -> Result<Place, UsageError> {
    match a.raw("in") {
        None | Some("task") => Ok(Place::Task),
        Some("root") => Ok(Place::Root),
        Some(s) => Err(UsageError(format!("--in must be 'task' or 'root', got '{s}'"))),
    }
}

/// Options of `spawn`: count, batch size (join every `batch` spawns; all at once by
/// default) and where the spawning body runs.
pub struct SpawnOpts {
    pub count: u64,
    pub batch: u64,
    /// `--rounds R`: the whole workload R times on one runtime, only the last timed.
    pub rounds: u64,
    pub place: Place,
}

pub fn spawn_opts(a: &Args) -> Result<SpawnOpts, UsageError> {
    a.only(&["count", "batch", "rounds", "in"])?;
    let count = a.uint("count", None, 1, 1 << 32)?;
    let rounds = a.uint("rounds", Some(1), 1, 1 << 16)?;
    let batch = a.uint("batch", Some(0), 0, 1 << 32)?;
    let batch = if batch == 0 { count } else { batch.min(count) };
    Ok(SpawnOpts {
        count,
        batch,
        rounds,
        place: place_opt(a)?,
    })
}

pub struct YieldOpts {
    pub count: u64,
    pub place: Place,
}

pub fn yield_opts(a: &Args) -> Result<YieldOpts, UsageError> {
    a.only(&["count", "in"])?;
    Ok(YieldOpts {
        count: a.uint("count", None, 1, 1 << 40)?,
        place: place_opt(a)?,
    })
}

pub struct ChannelOpts {
    pub messages: u64,
    pub pairs: u64,
    pub capacity: u64,
    pub place: Place,
    /// `--channel local-sync`: the single-thread channel of Monoio's author's local-sync crate
    /// instead of the runtime's default (futures::channel::mpsc for monoio and compio).
    pub local_sync: bool,
}

pub fn channel_opts(a: &Args) -> Result<ChannelOpts, UsageError> {
    a.only(&["messages", "pairs", "capacity", "in", "channel"])?;
    let local_sync = match a.raw("channel") {
        None | Some("default") => false,
        Some("local-sync") => true,
        Some(other) => {
            return Err(UsageError(format!(
                "--channel takes default or local-sync, got '{other}'"
            )))
        }
    };
    Ok(ChannelOpts {
        messages: a.uint("messages", None, 1, 1 << 40)?,
        pairs: a.uint("pairs", None, 1, 1 << 20)?,
        capacity: a.uint("capacity", Some(1024), 1, 1 << 24)?,
        place: place_opt(a)?,
        local_sync,
    })
}

/// Sum of 0..m, the checksum each consumer expects.
pub fn expected_sum(m: u64) -> u64 {
    ((m as u128 * (m as u128 - 1) / 2) & u64::MAX as u128) as u64
}

// ---------------------------------------------------------------- cross-thread channel

pub struct XChannelOpts {
    pub messages: u64,
    pub capacity: u64,
    pub place: Place,
}

pub fn xchannel_opts(a: &Args) -> Result<XChannelOpts, UsageError> {
    a.only(&["messages", "capacity", "in"])?;
    Ok(XChannelOpts {
        messages: a.uint("messages", None, 1, 1 << 40)?,
        capacity: a.uint("capacity", Some(1024), 1, 1 << 24)?,
        place: place_opt(a)?,
    })
}

/// The first two CPUs this process may run on (producer, consumer), or None when it
/// may run on fewer than two.
pub fn two_cpus() -> Option<(usize, usize)> {
    // SAFETY: cpu_set_t is plain data; sched_getaffinity fills it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return None;
        }
        let mut cpus = (0..libc::CPU_SETSIZE as usize).filter(|&c| libc::CPU_ISSET(c, &set));
        Some((cpus.next()?, cpus.next()?))
    }
}

/// Pin the calling thread to one CPU.
pub fn pin_current_thread(cpu: usize) -> io::Result<()> {
    // SAFETY: as above; pid 0 is the calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// What the consumer of a cross-thread channel saw.
#[derive(Clone, Copy, Default)]
pub struct Received {
    pub count: u64,
    pub sum: u64,
}

/// The `xchannel` micro benchmark's frame, shared by the runtimes: one producer thread and
/// one consumer thread, each pinned to its own CPU (the first two the process may use) and
/// running its own single-threaded runtime. `producer(start)` and `consumer(start)` run on
/// their threads: each builds its runtime, calls `start()` (a barrier with the other two
/// threads), then runs its side to the end; the producer returns whether every send
/// succeeded, the consumer what it received. The measured interval runs from just before
/// the main thread joins that barrier until both threads have finished (runtime set-up
/// is outside it); CPU time is the whole process's (both threads). Prints the JSON line
/// (the micro benchmarks' fields plus `msgs_per_sec`) and exits.
pub fn run_xchannel<P, C>(mut r: Report, messages: u64, producer: P, consumer: C) -> !
where
    P: FnOnce(&dyn Fn()) -> bool + Send + 'static,
    C: FnOnce(&dyn Fn()) -> Received + Send + 'static,
{
    use std::sync::{Arc, Barrier};
    let cpus = two_cpus();
    let barrier = Arc::new(Barrier::new(3));
    let tp = xchannel_side("producer", cpus.map(|c| c.0), barrier.clone(), producer);
    let tc = xchannel_side("consumer", cpus.map(|c| c.1), barrier.clone(), consumer);
    let meter = Meter::start();
    barrier.wait();
    let sent = tp.join();
    let got = tc.join();
    let m = meter.stop();
    let (mut errors, mut first_error) = (0u64, None::<String>);
    let mut note = |e: String| {
        errors += 1;
        first_error.get_or_insert(e);
    };
    match sent {
        Ok(Ok(true)) => {}
        Ok(Ok(false)) => note("a send failed: the receiver was dropped".into()),
        Ok(Err(e)) => note(e),
        Err(_) => note("the producer thread panicked".into()),
    }
    let mut received = 0;
    match got {
        Ok(Ok(g)) => {
            received = g.count;
            if g.count != messages || g.sum != expected_sum(messages) {
                note(format!(
                    "consumer got {} messages summing to {} (expected {messages} summing to {})",
                    g.count,
                    g.sum,
                    expected_sum(messages)
                ));
            }
        }
        Ok(Err(e)) => note(e),
        Err(_) => note("the consumer thread panicked".into()),
    }
    let cpus_text = cpus.map_or("unpinned (fewer than 2 CPUs allowed)".to_string(), |(p, c)| {
        format!("producer {p}, consumer {c}")
    });
    let rate = if m.seconds > 0.0 {
        received as f64 / m.seconds
    } else {
        f64::NAN
    };
    r.int("messages", messages)
        .str("cpus", &cpus_text)
        .float("msgs_per_sec", rate, 1);
    finish_micro(r, &m, received, messages, errors, first_error)
}

/// One side of `run_xchannel`: a thread pinned to `cpu` that runs `body(start)`, where
/// `start` waits on the barrier (also on the error path, so the others never hang).
fn xchannel_side<T, F>(
    name: &str,
    cpu: Option<usize>,
    barrier: std::sync::Arc<std::sync::Barrier>,
    body: F,
) -> std::thread::JoinHandle<Result<T, String>>
where
    T: Send + 'static,
    F: FnOnce(&dyn Fn()) -> T + Send + 'static,
{
    let who = name.to_string();
    std::thread::Builder::new()
        .name(who.clone())
        .spawn(move || {
            if let Some(c) = cpu {
                if let Err(e) = pin_current_thread(c) {
                    barrier.wait();
                    return Err(format!("cannot pin the {who} to CPU {c}: {e}"));
                }
            }
            Ok(body(&|| {
                barrier.wait();
            }))
        })
        .expect("spawn a benchmark thread")
}

// ---------------------------------------------------------------- echo server

/// Counters of an echo server. Only the runtime thread writes them (plain load+store,
/// no locked instruction); the signal thread reads them once at exit.
pub struct EchoStats {
    pub connections: AtomicU64,
    pub ops: AtomicU64,
    pub bytes: AtomicU64,
    pub errors: AtomicU64,
    pub resets: AtomicU64,
}

pub static ECHO: EchoStats = EchoStats {
    connections: AtomicU64::new(0),
    ops: AtomicU64::new(0),
    bytes: AtomicU64::new(0),
    errors: AtomicU64::new(0),
    resets: AtomicU64::new(0),
};

/// Add `n` to a counter written by one thread only.
#[inline]
pub fn bump(c: &AtomicU64, n: u64) {
    c.store(c.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
}

/// Count an I/O error on a connection: resets and broken pipes are clients going
/// away, anything else is an error.
pub fn echo_io_error(e: &io::Error) {
    match e.kind() {
        io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionAborted => {
            bump(&ECHO.resets, 1)
        }
        _ => bump(&ECHO.errors, 1),
    }
}

/// How long a server keeps retrying a bind that fails with EADDRINUSE. A previous
/// io_uring server on the same port may still hold its listening socket for a moment
/// after it exited: the kernel tears its ring (and the accept in flight) down
/// asynchronously.
pub const BIND_RETRY: Duration = Duration::from_secs(3);

/// After a failed bind: `true` (having slept 20 ms) when it is worth trying again.
pub fn bind_should_retry(e: &io::Error, first_try: Instant) -> bool {
    if e.kind() == io::ErrorKind::AddrInUse && first_try.elapsed() < BIND_RETRY {
        std::thread::sleep(Duration::from_millis(20));
        true
    } else {
        false
    }
}

pub fn echo_opts(a: &Args) -> Result<(u16, usize), UsageError> {
    a.only(&["port", "buf"])?;
    let port = a.uint("port", None, 0, 65535)? as u16;
    let buf = a.uint("buf", Some(4096), 1, 1 << 24)? as usize;
    Ok((port, buf))
}

/// Block SIGTERM and SIGINT in the calling thread; threads created later inherit the
/// mask, so only the thread of [`echo_signal_reporter`] ever takes them. Call first
/// thing in `main`, before any runtime exists.
pub fn block_term_signals() -> io::Result<()> {
    // SAFETY: plain signal-mask calls on a local sigset_t.
    unsafe {
        let set = term_set();
        let rc = libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        if rc != 0 {
            return Err(io::Error::from_raw_os_error(rc));
        }
    }
    Ok(())
}

fn term_set() -> libc::sigset_t {
    // SAFETY: sigemptyset/sigaddset initialise the local set.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::sigaddset(&mut set, libc::SIGINT);
        set
    }
}

/// Start the thread that waits for SIGTERM/SIGINT (blocked by
/// [`block_term_signals`]); on arrival it prints the echo report built from `base`,
/// with times measured from `meter`, and exits the process (0 when no errors).
pub fn echo_signal_reporter(base: Report, meter: Meter) -> io::Result<()> {
    std::thread::Builder::new().name("signal-wait".into()).spawn(move || {
        let set = term_set();
        let mut sig: libc::c_int = 0;
        // SAFETY: waits for one of the signals blocked by block_term_signals.
        while unsafe { libc::sigwait(&set, &mut sig) } != 0 {}
        let m = meter.stop();
        let mut r = base;
        let errors = ECHO.errors.load(Ordering::Relaxed);
        let sig_name = if sig == libc::SIGINT { "SIGINT" } else { "SIGTERM" };
        r.int("connections", ECHO.connections.load(Ordering::Relaxed))
            .int("ops", ECHO.ops.load(Ordering::Relaxed))
            .int("bytes", ECHO.bytes.load(Ordering::Relaxed))
            .int("resets", ECHO.resets.load(Ordering::Relaxed))
            .times(&m)
            .str("stopped_by", sig_name)
            .outcome(errors, errors == 0, None)
            .finish();
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: &[&str]) -> Result<Args, UsageError> {
        Args::parse(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn json_line_escapes_and_keeps_order() {
        let mut r = Report::new("b", "i", "v");
        r.str("error", "a\"b\\c\nd\u{1}")
            .int("n", 3)
            .float("x", 1.5, 2)
            .boolean("ok", true)
            .int("n", 4);
        assert_eq!(
            r.to_line(),
            r#"{"bench":"b","impl":"i","variant":"v","error":"a\"b\\c\nd\u0001","n":4,"x":1.50,"ok":true}"#
        );
    }

    #[test]
    fn parses_options() {
        let a = args(&["seqread", "--file", "/x", "--qd=8", "--seconds", "0.5"]).unwrap();
        let o = FileOpts::from_args(&a, false).unwrap();
        assert_eq!((o.qd, o.bs, o.direct, o.seconds, o.warmup), (8, 65536, false, 0.5, 0.0));
        assert!(args(&["seqread", "--qd"]).is_err());
        assert!(args(&["--qd", "1"]).is_err());
        assert!(args(&["x", "--a", "1", "--a", "2"]).is_err());
        let a = args(&["seqread", "--file", "/x", "--qd", "-1", "--seconds", "1"]).unwrap();
        assert!(FileOpts::from_args(&a, false).is_err());
        let a = args(&[
            "seqread",
            "--file",
            "/x",
            "--qd",
            "1",
            "--seconds",
            "1",
            "--direct",
            "1",
            "--bs",
            "512",
        ])
        .unwrap();
        assert!(FileOpts::from_args(&a, false).is_err());
        let a = args(&["randread", "--file", "/x", "--qd", "1", "--seconds", "1"]).unwrap();
        assert!(FileOpts::from_args(&a, true).is_err());
    }

    #[test]
    fn sequential_cursor_wraps() {
        let st = IoState::sequential(3 * 4096 + 100, 4096, false).unwrap();
        st.arm(60.0);
        let offs: Vec<u64> = (0..5).map(|_| st.next_offset().unwrap()).collect();
        assert_eq!(offs, [0, 4096, 8192, 0, 4096]);
        assert!(IoState::sequential(100, 4096, false).is_err());
    }

    #[test]
    fn random_cursor_round_robin_and_errors_stop() {
        let st = IoState::random(vec![8192, 0], 4096, true);
        st.arm(60.0);
        assert_eq!(st.next_offset(), Some(8192));
        assert_eq!(st.next_offset(), Some(0));
        assert_eq!(st.next_offset(), Some(8192));
        st.complete(8192, Ok(4096));
        assert_eq!((st.ops.get(), st.bytes.get(), st.errors.get()), (1, 4096, 0));
        st.complete(0, Ok(100));
        assert_eq!(st.errors.get(), 1);
        assert!(st.stopped());
        assert_eq!(st.next_offset(), None);
        st.complete(0, Err(io::Error::from_raw_os_error(libc::EINVAL)));
        assert_eq!(st.errors.get(), 2);
        assert!(st
            .first_error
            .borrow()
            .as_deref()
            .unwrap()
            .starts_with("short read: 100 of 4096"));
    }

    #[test]
    fn deadline_stops() {
        let st = IoState::random(vec![0], 4096, false);
        st.arm(0.01);
        assert_eq!(st.next_offset(), Some(0));
        // the timer thread marks the phase over; a loaded machine may wake it late
        let t = Instant::now();
        while st.next_offset().is_some() {
            assert!(t.elapsed() < Duration::from_secs(10), "phase never ended");
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(t.elapsed() >= Duration::from_millis(5));
    }

    #[test]
    fn late_timer_of_an_earlier_phase_does_not_end_the_next() {
        let st = IoState::random(vec![0], 4096, false);
        st.arm(0.05); // warm-up phase, still running when the measured phase starts
        st.arm(60.0);
        std::thread::sleep(Duration::from_millis(200));
        assert_eq!(st.next_offset(), Some(0));
    }

    #[test]
    fn offsets_checked() {
        assert!(check_offsets(&[0, 4096], 8192, 4096, true).is_ok());
        assert!(check_offsets(&[4097], 1 << 20, 4096, false).is_ok());
        assert!(check_offsets(&[4097], 1 << 20, 4096, true).is_err());
        assert!(check_offsets(&[8192], 8192, 4096, false).is_err());
        assert!(check_offsets(&[u64::MAX], 8192, 4096, false).is_err());
    }

    #[test]
    fn aligned_buffers() {
        let b = AlignedBuf::new(65536);
        assert_eq!(b.as_ptr() as usize % BUF_ALIGN, 0);
        assert_eq!(expected_sum(4), 6);
    }
}
