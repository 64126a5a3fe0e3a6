//! torchic_kernels: the native half of torchic's `simd` backend.
//!
//! What is here
//! ------------
//! * `arch/`: one `Simd` implementation per instruction set (AVX-512F,
//!   AVX2+FMA, NEON, scalar), picked once at run time; every kernel is written
//!   once over that trait.
//! * kernels: `elementwise`, `reduce`, `matmul`, `math` (exp/log/tanh/sigmoid),
//!   `softmax` (+ cross-entropy), `gather` (+ scatter-add), `copy` (+ fill).
//! * `runtime`: the op stream (a coordinator thread running ops in issue
//!   order) and the worker pool it splits large ops over.
//! * this file: the C ABI Python calls, and the decoding + validation of op
//!   records.
//!
//! The op record
//! -------------
//! Python packs each op into one flat run of i64 (cached `struct.pack`
//! pieces) and pushes several records at once with one `tk_push`. Layout:
//!
//!   header  [op code, n views, i0, i1, i2, value (f64 bits)]
//!           (reduce: i0 = naxes)
//!   n views [arena, block byte offset, block bytes, element offset, dtype,
//!            ndim, shape[ndim], strides[ndim]]   out first, then the inputs
//!
//! `tk_push` only checks the framing (where each record starts and ends) and
//! queues the batch. The coordinator decodes and validates each record just
//! before it runs it: op code, view count, dtypes and shapes against the op
//! contract (ops.py), every block inside its registered arena, and every view
//! (offset + strides, negative strides included, in i128) inside its block.
//! An invalid record is not run; its error is reported at the next read like
//! a kernel error. So no kernel can ever touch memory outside the blocks it
//! was given. Kernels that read integer values (targets, indices) check them
//! against their bound and fail with an error that surfaces at the next read.
//! Host writes come through `tk_write`, which copies the source data into the
//! queue at the call.

#![allow(
    clippy::missing_safety_doc,
    clippy::too_many_arguments,
    clippy::excessive_precision
)]
#![allow(clippy::needless_range_loop, clippy::type_complexity)]
#![allow(unused_unsafe)]

pub mod arch;
pub mod copy;
pub mod elementwise;
pub mod gather;
pub mod math;
pub mod matmul;
pub mod reduce;
pub mod runtime;
pub mod softmax;
pub mod view;

use std::ffi::{c_char, CString};
use std::sync::{Arc, Mutex};

use elementwise as ew;
use runtime::{KResult, KernelError, Pool, Stream, Task};
use view::{Arr, DType, MAXD};

/// Op codes: the index in this list (the same order as ops.ALL_OPS).
pub const OP_NAMES: [&str; 35] = [
    "neg",
    "exp",
    "log",
    "relu",
    "tanh",
    "sigmoid",
    "sqrt",
    "abs",
    "add",
    "sub",
    "mul",
    "div",
    "pow",
    "maximum",
    "minimum",
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "sum",
    "max",
    "min",
    "fill",
    "copy",
    "where",
    "argmax",
    "softmax",
    "log_softmax",
    "cross_entropy",
    "cross_entropy_grad",
    "matmul",
    "gather_rows",
    "scatter_add_rows",
];
/// host -> heap write (not an op of the contract; ordered like one)
pub const OP_WRITE: usize = 100;
const HEADER: usize = 6;

pub struct Op<'a> {
    code: usize,
    v: [Arr; 4],
    naxes: usize,
    value: f64,
    /// a host write's data (copied into the batch at `tk_write`)
    src: &'a [u32],
}

/// One push: op records back to back, as Python packed them, plus the source
/// data of a host write. Decoded and validated record by record on the
/// coordinator, just before each op runs.
pub struct Batch {
    words: Vec<i64>,
    /// where each record starts in `words` (the framing was checked at push)
    starts: Vec<usize>,
    data: Vec<u32>,
    arenas: Arenas,
}

type Arenas = Arc<Mutex<Vec<(usize, usize)>>>;

fn op_name(code: i64) -> &'static str {
    match usize::try_from(code) {
        Ok(OP_WRITE) => "write",
        Ok(c) if c < OP_NAMES.len() => OP_NAMES[c],
        _ => "(unknown op)",
    }
}

impl Task for Batch {
    fn ops(&self) -> usize {
        self.starts.len()
    }
    fn run(&self, pool: &Pool, finished: &mut dyn FnMut(Result<(), (&'static str, KernelError)>)) {
        let mut ends = self
            .starts
            .iter()
            .skip(1)
            .copied()
            .chain([self.words.len()]);
        for &start in &self.starts {
            let rec = &self.words[start..ends.next().unwrap_or(start)];
            let name = op_name(rec[0]);
            let decoded = decode(rec, &self.arenas.lock().unwrap(), &self.data);
            finished(match decoded {
                Ok(op) => execute(pool, &op).map_err(|e| (name, e)),
                Err(msg) => Err((name, KernelError::value(msg))),
            });
        }
    }
}

/// The start of every record in `words`, walking the framing (header, then
/// `n views` views of 6 + 2 * ndim words). Only the lengths are checked here;
/// the contents are validated by `decode` before each op runs.
fn frame_records(words: &[i64]) -> Result<Vec<usize>, String> {
    let mut starts = Vec::new();
    let mut pos = 0;
    while pos < words.len() {
        starts.push(pos);
        let nv = *words.get(pos + 1).ok_or("op record too short")?;
        if !(1..=4).contains(&nv) || words.len() < pos + HEADER {
            return Err(format!("op record {}: bad header", starts.len() - 1));
        }
        let mut p = pos + HEADER;
        for _ in 0..nv {
            let nd = *words.get(p + 5).ok_or("record ends inside a view")?;
            if !(0..=MAXD as i64).contains(&nd) {
                return Err(format!("{nd} dims (at most {MAXD} supported)"));
            }
            p += 6 + 2 * nd as usize;
        }
        if p > words.len() {
            return Err("record ends inside a view".into());
        }
        pos = p;
    }
    Ok(starts)
}

/// Run one validated op (on the coordinator thread).
pub fn execute(pool: &Pool, op: &Op) -> KResult {
    let [o, a, b, c] = &op.v;
    use reduce::Red;
    use softmax::Kind;
    match op.code {
        0 => ew::unary(pool, ew::Neg, o, a),
        1 => ew::unary(pool, ew::Exp, o, a),
        2 => ew::unary(pool, ew::Log, o, a),
        3 => ew::unary(pool, ew::Relu, o, a),
        4 => ew::unary(pool, ew::Tanh, o, a),
        5 => ew::unary(pool, ew::Sigmoid, o, a),
        6 => ew::unary(pool, ew::Sqrt, o, a),
        7 => ew::unary(pool, ew::Abs, o, a),
        8 => ew::binary(pool, ew::Add, o, a, b),
        9 => ew::binary(pool, ew::Sub, o, a, b),
        10 => ew::binary(pool, ew::Mul, o, a, b),
        11 => ew::binary(pool, ew::Div, o, a, b),
        12 => ew::binary(pool, ew::Pow, o, a, b),
        13 => ew::binary(pool, ew::Maximum, o, a, b),
        14 => ew::binary(pool, ew::Minimum, o, a, b),
        15..=20 if a.dtype == DType::I32 => {
            let f: fn(i32, i32) -> bool = match op.code {
                15 => |x, y| x == y,
                16 => |x, y| x != y,
                17 => |x, y| x < y,
                18 => |x, y| x <= y,
                19 => |x, y| x > y,
                _ => |x, y| x >= y,
            };
            ew::compare_i32(f, o, a, b)
        }
        15 => ew::binary(pool, ew::Eq, o, a, b),
        16 => ew::binary(pool, ew::Ne, o, a, b),
        17 => ew::binary(pool, ew::Lt, o, a, b),
        18 => ew::binary(pool, ew::Le, o, a, b),
        19 => ew::binary(pool, ew::Gt, o, a, b),
        20 => ew::binary(pool, ew::Ge, o, a, b),
        21 => reduce::reduce(pool, Red::Sum, o, a, op.naxes),
        22 => reduce::reduce(pool, Red::Max, o, a, op.naxes),
        23 => reduce::reduce(pool, Red::Min, o, a, op.naxes),
        24 => copy::fill(o, op.value),
        25 => copy::copy(pool, o, a),
        26 => ew::where_(pool, o, a, b, c),
        27 => reduce::argmax(pool, o, a),
        28 => softmax::rows(pool, Kind::Softmax, o, a, None, None),
        29 => softmax::rows(pool, Kind::LogSoftmax, o, a, None, None),
        30 => softmax::rows(pool, Kind::CrossEntropy, o, a, Some(b), None),
        31 => softmax::rows(pool, Kind::CrossEntropyGrad, o, a, Some(b), Some(c)),
        32 => matmul::matmul(pool, o, a, b),
        33 => gather::gather_rows(pool, o, a, b),
        34 => gather::scatter_add_rows(o, a, b),
        OP_WRITE => copy::write(pool, o, op.src.as_ptr() as *const u8),
        _ => Err(runtime::KernelError::value(format!(
            "unknown op code {}",
            op.code
        ))),
    }
}

// ---------------------------------------------------------------------------
// decoding and validation

const F: u8 = 1; // f32 allowed
const I: u8 = 2; // i32 allowed

fn shape_eq(a: &Arr, b: &Arr) -> bool {
    a.shape() == b.shape()
}

/// Decode and validate one record against the registered arenas.
pub fn decode<'a>(
    rec: &[i64],
    arenas: &[(usize, usize)],
    data: &'a [u32],
) -> Result<Op<'a>, String> {
    if rec.len() < HEADER {
        return Err("op record too short".into());
    }
    let code = rec[0];
    let code_ok = (0..OP_NAMES.len() as i64).contains(&code) || code == OP_WRITE as i64;
    if !code_ok {
        return Err(format!("unknown op code {code}"));
    }
    let code = code as usize;
    let name = if code == OP_WRITE {
        "write"
    } else {
        OP_NAMES[code]
    };
    let nv = rec[1];
    let want = match code {
        24 | OP_WRITE => 1,
        0..=7 | 21..=23 | 25 | 27..=29 => 2,
        8..=20 | 30 | 32..=34 => 3,
        _ => 4,
    };
    if nv != want {
        return Err(format!(
            "{name}: expected {} inputs, got {}",
            want - 1,
            nv - 1
        ));
    }
    let empty = Arr::new(std::ptr::null_mut(), DType::F32, &[], &[]);
    let mut op = Op {
        code,
        v: [empty; 4],
        naxes: 0,
        value: f64::from_bits(rec[5] as u64),
        src: &[],
    };
    let mut pos = HEADER;
    for k in 0..want as usize {
        // (the message is only formatted on failure: the success path allocates nothing)
        pos = decode_view(rec, pos, arenas, &mut op.v[k]).map_err(|e| match k {
            0 => format!("{name}: out: {e}"),
            _ => format!("{name}: input {}: {e}", k - 1),
        })?;
    }
    if pos != rec.len() {
        return Err(format!(
            "{name}: {} extra words in the op record",
            rec.len() - pos
        ));
    }
    check_contract(&mut op, rec, data).map_err(|e| format!("{name}: {e}"))?;
    Ok(op)
}

/// Decode the view at `pos` into `arr` (in place: an Arr is a few hundred bytes);
/// returns where the next view starts.
fn decode_view(
    rec: &[i64],
    pos: usize,
    arenas: &[(usize, usize)],
    arr: &mut Arr,
) -> Result<usize, String> {
    let hdr = rec.get(pos..pos + 6).ok_or("record ends inside a view")?;
    let (arena, boff, bsize, offset, dtype, nd) = (hdr[0], hdr[1], hdr[2], hdr[3], hdr[4], hdr[5]);
    if nd < 0 || nd as usize > MAXD {
        return Err(format!("{nd} dims (at most {MAXD} supported)"));
    }
    let nd = nd as usize;
    let dims = rec
        .get(pos + 6..pos + 6 + 2 * nd)
        .ok_or("record ends inside a view")?;
    let (shape, strides) = dims.split_at(nd);
    let (aaddr, alen) = *usize::try_from(arena)
        .ok()
        .and_then(|i| arenas.get(i))
        .ok_or_else(|| format!("arena {arena} does not exist"))?;
    if boff < 0 || bsize < 0 || (boff as i128 + bsize as i128) > alen as i128 {
        return Err(format!(
            "block [{boff}, +{bsize}) is outside arena {arena} of {alen} bytes"
        ));
    }
    let dtype = match dtype {
        0 => DType::F32,
        1 => DType::I32,
        _ => return Err(format!("unknown dtype code {dtype}")),
    };
    let mut numel: i128 = 1;
    let (mut lo, mut hi) = (offset as i128, offset as i128);
    for (&n, &s) in shape.iter().zip(strides) {
        if n < 0 {
            return Err(format!("negative dim in shape {shape:?}"));
        }
        numel *= n as i128;
        if n > 0 {
            let span = (n as i128 - 1) * s as i128;
            if span < 0 {
                lo += span
            } else {
                hi += span
            }
        }
    }
    if numel > 0 && (lo < 0 || (hi + 1) * 4 > bsize as i128) {
        return Err(format!(
            "view (offset {offset}, shape {shape:?}, strides {strides:?}) reaches elements [{lo}, {hi}] \
             outside its block of {bsize} bytes"));
    }
    if numel > (isize::MAX as i128) / 4 {
        return Err("view too large".into());
    }
    let ptr = (aaddr as *mut u8)
        .wrapping_add(boff as usize)
        .wrapping_offset((offset as isize).wrapping_mul(4));
    arr.ptr = ptr;
    arr.dtype = dtype;
    arr.nd = nd;
    for d in 0..nd {
        arr.shape[d] = shape[d] as usize;
        arr.st[d] = strides[d] as isize;
    }
    Ok(pos + 6 + 2 * nd)
}

fn check_contract<'a>(op: &mut Op<'a>, rec: &[i64], data: &'a [u32]) -> Result<(), String> {
    let [o, a, b, c] = &op.v;
    let dt = |x: &Arr, allowed: u8, what: &str| -> Result<(), String> {
        let ok = match x.dtype {
            DType::F32 => allowed & F != 0,
            DType::I32 => allowed & I != 0,
        };
        if ok {
            Ok(())
        } else {
            Err(format!("{what} has dtype {:?}", x.dtype))
        }
    };
    let contig = |x: &Arr| -> Result<(), String> {
        if x.is_contiguous() {
            Ok(())
        } else {
            Err(format!("out must be contiguous, strides {:?}", x.strides()))
        }
    };
    let same = |x: &Arr, y: &Arr, what: &str| -> Result<(), String> {
        if shape_eq(x, y) {
            Ok(())
        } else {
            Err(format!(
                "{what} shape {:?} != out shape {:?}",
                y.shape(),
                x.shape()
            ))
        }
    };
    let nd = |x: &Arr, n: usize, what: &str| -> Result<(), String> {
        if x.nd == n {
            Ok(())
        } else {
            Err(format!(
                "{what} must have {n} dims, has shape {:?}",
                x.shape()
            ))
        }
    };
    match op.code {
        24 => dt(o, F | I, "out")?,
        25 => same(o, a, "input")?,
        0..=14 => {
            dt(o, F, "out")?;
            dt(a, F, "a")?;
            same(o, a, "a")?;
            if op.code >= 8 {
                dt(b, F, "b")?;
                same(o, b, "b")?;
            }
        }
        15..=20 => {
            dt(o, F, "out")?;
            if a.dtype != b.dtype {
                return Err("operands have different dtypes".into());
            }
            same(o, a, "a")?;
            same(o, b, "b")?;
        }
        26 => {
            for (x, w) in [(o, "out"), (a, "cond"), (b, "a"), (c, "b")] {
                dt(x, F, w)?;
                same(o, x, w)?;
            }
        }
        21..=23 => {
            dt(o, F, "out")?;
            dt(a, F, "a")?;
            contig(o)?;
            let naxes = rec[2];
            if naxes < 0 || naxes as usize > a.nd {
                return Err(format!("naxes {naxes} for a {}-d input", a.nd));
            }
            op.naxes = naxes as usize;
            if o.shape() != &a.shape()[..a.nd - op.naxes] {
                return Err(format!(
                    "out shape {:?} for input {:?} reduced over {naxes} dims",
                    o.shape(),
                    a.shape()
                ));
            }
        }
        27 => {
            dt(o, I, "out")?;
            dt(a, F, "a")?;
            contig(o)?;
            if a.nd == 0 || a.shape[a.nd - 1] == 0 {
                return Err(format!(
                    "argmax of shape {:?}: needs a non-empty last dim",
                    a.shape()
                ));
            }
            if o.shape() != &a.shape()[..a.nd - 1] {
                return Err(format!(
                    "out shape {:?} for input {:?}",
                    o.shape(),
                    a.shape()
                ));
            }
        }
        28 | 29 => {
            dt(o, F, "out")?;
            dt(a, F, "a")?;
            nd(a, 2, "a")?;
            same(o, a, "a")?;
            contig(o)?;
        }
        30 | 31 => {
            dt(o, F, "out")?;
            dt(a, F, "logits")?;
            dt(b, I, "target")?;
            nd(a, 2, "logits")?;
            nd(b, 1, "target")?;
            contig(o)?;
            if b.shape[0] != a.shape[0] {
                return Err(format!(
                    "target shape {:?} for logits {:?}",
                    b.shape(),
                    a.shape()
                ));
            }
            if op.code == 30 {
                if o.shape() != &a.shape()[..1] {
                    return Err(format!(
                        "out shape {:?} for logits {:?}",
                        o.shape(),
                        a.shape()
                    ));
                }
            } else {
                dt(c, F, "g")?;
                same(o, a, "logits")?;
                if c.shape() != &a.shape()[..1] {
                    return Err(format!(
                        "g shape {:?} for logits {:?}",
                        c.shape(),
                        a.shape()
                    ));
                }
            }
        }
        32 => {
            for (x, w) in [(o, "out"), (a, "a"), (b, "b")] {
                dt(x, F, w)?;
                nd(x, 3, w)?;
            }
            contig(o)?;
            let (sa, sb, so) = (a.shape(), b.shape(), o.shape());
            if sa[0] != sb[0] || sa[2] != sb[1] || so != [sa[0], sa[1], sb[2]] {
                return Err(format!("shapes {sa:?} @ {sb:?} -> {so:?}"));
            }
        }
        33 | 34 => {
            // gather: out (R, D), table (V, D), idx (R,);  scatter: out (V, D), src (R, D), idx (R,)
            if op.code == 33 {
                // a pure copy of 32-bit words: the table may be f32 or i32
                dt(a, F | I, "table")?;
                if o.dtype != a.dtype {
                    return Err("out dtype differs from the table's".into());
                }
            } else {
                dt(o, F, "out")?;
                dt(a, F, "src")?;
            }
            dt(b, I, "idx")?;
            nd(o, 2, "out")?;
            nd(a, 2, "table/src")?;
            nd(b, 1, "idx")?;
            contig(o)?;
            let rows = if op.code == 33 {
                o.shape[0]
            } else {
                a.shape[0]
            };
            if a.shape[1] != o.shape[1] || b.shape[0] != rows {
                return Err(format!(
                    "shapes out {:?}, {:?}, idx {:?}",
                    o.shape(),
                    a.shape(),
                    b.shape()
                ));
            }
        }
        OP_WRITE => {
            if data.len() as i128 != o.numel() as i128 {
                return Err(format!(
                    "source of {} bytes for a view of {} elements",
                    data.len() * 4,
                    o.numel()
                ));
            }
            op.src = data;
        }
        _ => unreachable!(),
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// C ABI

/// One runtime. Every entry point takes `&Ctx` (interior mutability), so
/// Python may call them with the GIL released from any thread.
pub struct Ctx {
    stream: Stream<Batch>,
    arenas: Arenas,
    push_error: Mutex<String>,
}

/// The active instruction set, e.g. "avx2+fma" (static NUL-terminated string).
#[no_mangle]
pub extern "C" fn tk_isa() -> *const c_char {
    match arch::active() {
        arch::Isa::Scalar => c"scalar".as_ptr(),
        arch::Isa::Avx2 => c"avx2+fma".as_ptr(),
        arch::Isa::Avx512 => c"avx512f".as_ptr(),
        arch::Isa::Neon => c"neon".as_ptr(),
    }
}

/// Name of op code `i` (NUL-terminated, static), or null past the end.
#[no_mangle]
pub extern "C" fn tk_op_name(i: i64) -> *const c_char {
    static NAMES: std::sync::OnceLock<Vec<CString>> = std::sync::OnceLock::new();
    let names = NAMES.get_or_init(|| OP_NAMES.iter().map(|n| CString::new(*n).unwrap()).collect());
    usize::try_from(i)
        .ok()
        .and_then(|i| names.get(i))
        .map_or(std::ptr::null(), |s| s.as_ptr())
}

#[no_mangle]
pub extern "C" fn tk_new(threads: i64) -> *mut Ctx {
    arch::active();
    let threads = threads.clamp(1, 1024) as usize;
    Box::into_raw(Box::new(Ctx {
        stream: Stream::new(threads),
        arenas: Arc::new(Mutex::new(Vec::new())),
        push_error: Mutex::new(String::new()),
    }))
}

/// Close the runtime: the op running now finishes, queued ops are dropped,
/// the threads are joined, waiters are released. The context itself (a few
/// hundred bytes once the threads are gone) is deliberately not freed: another
/// Python thread may still be inside `tk_wait` on it (a daemon thread blocked
/// in a read at interpreter exit), and must find valid memory when it wakes.
#[no_mangle]
pub unsafe extern "C" fn tk_free(ctx: *mut Ctx) {
    if !ctx.is_null() {
        (*ctx).stream.close();
        (*ctx).arenas.lock().unwrap().clear();
    }
}

/// Register arena memory [addr, addr + len); returns its index.
#[no_mangle]
pub unsafe extern "C" fn tk_add_arena(ctx: *mut Ctx, addr: u64, len: u64) -> i64 {
    let mut arenas = (*ctx).arenas.lock().unwrap();
    arenas.push((addr as usize, len as usize));
    arenas.len() as i64 - 1
}

/// Most words one push may carry (a batch of op records).
pub const MAX_PUSH_WORDS: i64 = 1 << 20;

/// Queue a batch of `n` i64 words: op records back to back (see the top of
/// this file). Returns the sequence number of its last op, or -1 when the
/// framing is broken or the runtime is closed (nothing is queued; the message
/// is in `tk_push_error`). Each record is validated on the coordinator just
/// before it runs; an invalid one does not run and is reported like a
/// kernel error (`tk_take_error`).
#[no_mangle]
pub unsafe extern "C" fn tk_push(ctx: *mut Ctx, rec: *const u8, n: i64) -> i64 {
    let ctx = &*ctx;
    queue(ctx, rec, n, |words, starts| {
        if starts.iter().any(|&s| words[s] == OP_WRITE as i64) {
            return Err("a write goes through tk_write".into());
        }
        Ok(Vec::new())
    })
}

/// Queue one host write: a single OP_WRITE record of `n` words, and `nbytes`
/// of source data at `src`, copied now (so nothing on the Python side has to
/// stay alive until the write runs). Returns like `tk_push`.
#[no_mangle]
pub unsafe extern "C" fn tk_write(
    ctx: *mut Ctx,
    rec: *const u8,
    n: i64,
    src: *const u8,
    nbytes: i64,
) -> i64 {
    let ctx = &*ctx;
    queue(ctx, rec, n, |words, starts| {
        if starts.len() != 1 || words[0] != OP_WRITE as i64 {
            return Err("tk_write takes exactly one write record".into());
        }
        if src.is_null() || nbytes < 0 || nbytes % 4 != 0 {
            return Err(format!("bad write source ({nbytes} bytes)"));
        }
        let count = (nbytes / 4) as usize;
        let mut data = Vec::<u32>::with_capacity(count);
        // SAFETY: Python passes the address and size of a contiguous array it holds
        // for the duration of this call; all elements are written before set_len
        std::ptr::copy_nonoverlapping(src, data.as_mut_ptr() as *mut u8, nbytes as usize);
        data.set_len(count);
        Ok(data)
    })
}

/// The common part of `tk_push` and `tk_write`: copy the `n` words at `rec`,
/// check their framing, let `data` check the records and give the batch's
/// host data, queue the batch. Returns its last sequence number, or -1 with the
/// message in `tk_push_error` (nothing queued).
unsafe fn queue(
    ctx: &Ctx,
    rec: *const u8,
    n: i64,
    data: impl FnOnce(&[i64], &[usize]) -> Result<Vec<u32>, String>,
) -> i64 {
    let batch = (|| {
        if rec.is_null() || !(1..=MAX_PUSH_WORDS).contains(&n) {
            return Err(format!("bad op batch ({n} words)"));
        }
        if ctx.stream.is_closed() {
            return Err("the runtime is closed".into());
        }
        // the words may sit at any address (a Python bytes object): copy bytes
        let mut words = vec![0i64; n as usize];
        std::ptr::copy_nonoverlapping(rec, words.as_mut_ptr() as *mut u8, n as usize * 8);
        let starts = frame_records(&words)?;
        let data = data(&words, &starts)?;
        Ok(Batch {
            words,
            starts,
            data,
            arenas: ctx.arenas.clone(),
        })
    })();
    match batch {
        Ok(batch) => ctx.stream.push(batch) as i64,
        Err(msg) => {
            *ctx.push_error.lock().unwrap() = msg;
            -1
        }
    }
}

/// Copy the last push error (UTF-8) into buf; returns its full length.
#[no_mangle]
pub unsafe extern "C" fn tk_push_error(ctx: *mut Ctx, buf: *mut u8, cap: i64) -> i64 {
    let ctx = &*ctx;
    let msg = ctx.push_error.lock().unwrap();
    let n = msg.len().min(cap.max(0) as usize);
    std::ptr::copy_nonoverlapping(msg.as_ptr(), buf, n);
    msg.len() as i64
}

/// Block until op `seq` (0: the last one queued) has run. Returns 1 when an
/// error is pending (take it with `tk_take_error`), else 0.
#[no_mangle]
pub unsafe extern "C" fn tk_wait(ctx: *mut Ctx, seq: i64) -> i32 {
    let ctx = &*ctx;
    let seq = if seq <= 0 {
        ctx.stream.last_seq()
    } else {
        seq as u64
    };
    ctx.stream.wait(seq);
    ctx.stream.has_error() as i32
}

/// Sequence number of the last op that finished.
#[no_mangle]
pub unsafe extern "C" fn tk_done(ctx: *mut Ctx) -> i64 {
    (*ctx).stream.done() as i64
}

/// Take the oldest pending error: writes "op\0message\0" into buf, returns
/// the error kind (1 IndexError, 2 ValueError, 3 RuntimeError), 0 when none.
/// Call until it returns 0 to collect every failure since the last read.
#[no_mangle]
pub unsafe extern "C" fn tk_take_error(ctx: *mut Ctx, buf: *mut u8, cap: i64) -> i32 {
    let ctx = &*ctx;
    match ctx.stream.take_error() {
        None => 0,
        Some((name, e)) => {
            let text = format!("{name}\0{}", e.msg);
            let n = text.len().min((cap.max(1) - 1) as usize);
            std::ptr::copy_nonoverlapping(text.as_ptr(), buf, n);
            *buf.add(n) = 0;
            e.kind
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(
        rec: &mut Vec<i64>,
        arena: i64,
        boff: i64,
        bsize: i64,
        off: i64,
        dt: i64,
        shape: &[i64],
        st: &[i64],
    ) {
        rec.extend_from_slice(&[arena, boff, bsize, off, dt, shape.len() as i64]);
        rec.extend_from_slice(shape);
        rec.extend_from_slice(st);
    }

    #[test]
    fn decode_rejects_views_outside_their_block() {
        let mut mem = vec![0f32; 64];
        let arenas = [(mem.as_mut_ptr() as usize, 256)];
        let mut ok = vec![8, 3, 0, 0, 0, 0];
        view(&mut ok, 0, 0, 64, 0, 0, &[4, 4], &[4, 1]);
        view(&mut ok, 0, 64, 64, 0, 0, &[4, 4], &[1, 4]);
        view(&mut ok, 0, 128, 64, 0, 0, &[4, 4], &[0, 1]);
        assert!(decode(&ok, &arenas, &[]).is_ok());
        let bad_cases: Vec<Box<dyn Fn(&mut Vec<i64>)>> = vec![
            Box::new(|r| r[6 + 3] = 1),   // out offset 1: last element past block
            Box::new(|r| r[6 + 2] = 60),  // block too small
            Box::new(|r| r[6 + 1] = 240), // block past the arena
            Box::new(|r| r[6] = 1),       // no such arena
            Box::new(|r| r[6 + 3] = -1),  // negative offset
            Box::new(|r| r[6 + 8] = -4),  // negative stride reaching before the block
            Box::new(|r| r[6 + 4] = 7),   // bad dtype
            Box::new(|r| r[0] = 99),      // bad op
            Box::new(|r| r[1] = 2),       // wrong input count
            Box::new(|r| r[6 + 6] = 5),   // out shape differs from inputs
            Box::new(|r| {
                r.pop();
            }), // truncated
        ];
        for (i, f) in bad_cases.iter().enumerate() {
            let mut r = ok.clone();
            f(&mut r);
            assert!(
                frame_records(&r).is_err() || decode(&r, &arenas, &[]).is_err(),
                "case {i} accepted"
            );
        }
    }
}
