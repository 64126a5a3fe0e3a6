//! The C ABI Python calls (through ctypes: src/torchic/backends/simd/native.py).
//! Records are framed here at push and queued; `record` decodes and validates
//! them on the coordinator.
//!
//! # Safety
//! Every `unsafe extern "C" fn tk_*` has one contract: `ctx` is a pointer `tk_new`
//! returned and `tk_free` has not freed (tk_free itself may race a reader, see it), and
//! each other pointer is valid for the length passed beside it; ctypes' declarations in
//! src/torchic/backends/simd/native.py pass exactly these.

// the module doc's # Safety is the contract of every tk_* function
#![allow(clippy::missing_safety_doc)]

use std::ffi::{c_char, CString};
use std::sync::{Arc, Mutex};

use crate::arch;
use crate::ops::{OPS, OP_WRITE};
use crate::record::{frame_records, prepare, Arenas, Batch, Program};
use crate::runtime::Stream;

/// One runtime. Every entry point takes `&Ctx` (interior mutability), so
/// Python may call them with the GIL released from any thread.
pub struct Ctx {
    stream: Stream<Batch>,
    arenas: Arenas,
    push_error: Mutex<String>,
    /// prepared programs by handle (None: released)
    programs: Mutex<Vec<Option<Arc<Program>>>>,
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

/// The matmul blocking and the caches it was derived from: a JSON object (static,
/// NUL-terminated; see matmul::describe_json).
#[no_mangle]
pub extern "C" fn tk_describe() -> *const c_char {
    static S: std::sync::OnceLock<CString> = std::sync::OnceLock::new();
    S.get_or_init(|| CString::new(crate::matmul::describe_json()).unwrap())
        .as_ptr()
}

/// Name of op code `i` (NUL-terminated, static), or null past the end: Python
/// lists the names with it and maps ops.py's names to codes.
#[no_mangle]
pub extern "C" fn tk_op_name(i: i64) -> *const c_char {
    static NAMES: std::sync::OnceLock<Vec<CString>> = std::sync::OnceLock::new();
    let names = NAMES.get_or_init(|| OPS.iter().map(|d| CString::new(d.name).unwrap()).collect());
    usize::try_from(i)
        .ok()
        .and_then(|i| names.get(i))
        .map_or(std::ptr::null(), |s| s.as_ptr())
}

/// 1 when op code `i` fuses as an elementwise stage of a prepared program (fuse.rs), 2 when
/// it joins a multi-tensor pass of ops apart (fuse.rs's `apart`), 0 when neither, -1 past
/// the end: Python checks the sets against ops.py's rows at load.
#[no_mangle]
pub extern "C" fn tk_op_fuses(i: i64) -> i32 {
    usize::try_from(i)
        .ok()
        .and_then(|i| OPS.get(i))
        .map_or(-1, |d| {
            if crate::fuse::stage(d.contract) {
                1
            } else {
                2 * i32::from(crate::fuse::apart(d.contract))
            }
        })
}

/// The inputs op code `i` writes in place, as a bit mask (bit k: input k; `Contract::writes`),
/// -1 past the end: Python checks them against ops.py's rows (`writes`) at load.
#[no_mangle]
pub extern "C" fn tk_op_writes(i: i64) -> i64 {
    usize::try_from(i)
        .ok()
        .and_then(|i| OPS.get(i))
        .map_or(-1, |d| d.contract.writes().iter().map(|&k| 1i64 << k).sum())
}

#[no_mangle]
pub extern "C" fn tk_new(threads: i64) -> *mut Ctx {
    arch::active();
    let threads = threads.clamp(1, 1024) as usize;
    Box::into_raw(Box::new(Ctx {
        stream: Stream::new(threads),
        arenas: Arc::new(Mutex::new(Vec::new())),
        push_error: Mutex::new(String::new()),
        programs: Mutex::new(Vec::new()),
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
/// the most slots a program may have (torchic.compile: one per tensor argument)
pub const MAX_SLOTS: i64 = 1 << 16;

/// Queue a batch of `n` i64 words: op records back to back (see record.rs).
/// Returns the sequence number of its last op, or -1 when the
/// framing is broken or the runtime is closed (nothing is queued; the message
/// is in `tk_push_error`). Each record is validated on the coordinator just
/// before it runs; an invalid one does not run and is reported like a
/// kernel error (`tk_take_error`). With `inline` != 0 an idle stream runs the
/// batch at once on the calling thread instead (`Stream::push_or_inline`), so callers
/// release the GIL around this call; with 0 it is always queued.
#[no_mangle]
pub unsafe extern "C" fn tk_push(ctx: *mut Ctx, rec: *const u8, n: i64, inline: i64) -> i64 {
    let ctx = &*ctx;
    queue(ctx, rec, n, inline != 0, |words, starts| {
        if starts.iter().any(|&s| words[s] == OP_WRITE) {
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
    write(&*ctx, rec, n, src, nbytes)
}

unsafe fn write(ctx: &Ctx, rec: *const u8, n: i64, src: *const u8, nbytes: i64) -> i64 {
    queue(ctx, rec, n, true, |words, starts| {
        if starts.len() != 1 || words[0] != OP_WRITE {
            return Err("tk_write takes exactly one write record".into());
        }
        if src.is_null() || nbytes < 0 {
            return Err(format!("bad write source ({nbytes} bytes)"));
        }
        let count = nbytes as usize;
        let mut data = Vec::<u8>::with_capacity(count);
        // SAFETY: Python passes the address and size of a contiguous array it holds
        // for the duration of this call; all elements are written before set_len
        std::ptr::copy_nonoverlapping(src, data.as_mut_ptr(), nbytes as usize);
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
    inline: bool,
    data: impl FnOnce(&[i64], &[usize]) -> Result<Vec<u8>, String>,
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
            program: None,
            bases: Vec::new(),
        })
    })();
    match batch {
        Ok(batch) if inline => ctx.stream.push_or_inline(batch) as i64,
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

/// The `n` i64 words at `p` (any alignment: a Python bytes object), copied.
unsafe fn copy_words(p: *const u8, n: i64) -> Vec<i64> {
    let mut words = vec![0i64; n as usize];
    if n > 0 {
        std::ptr::copy_nonoverlapping(p, words.as_mut_ptr() as *mut u8, n as usize * 8);
    }
    words
}

/// Decode and validate `n` words of op records (as for `tk_push`, no writes) once, into
/// a program pushed later by `tk_push_program`; `slots` holds `nslots` (arena, block byte
/// offset) pairs: the blocks a push may swap (record.rs, Program). Returns its handle
/// (>= 0), or -1 with the message in `tk_push_error`.
#[no_mangle]
pub unsafe extern "C" fn tk_prepare(
    ctx: *mut Ctx,
    rec: *const u8,
    n: i64,
    slots: *const u8,
    nslots: i64,
) -> i64 {
    let ctx = &*ctx;
    let program = (|| {
        if rec.is_null() || !(1..=MAX_PUSH_WORDS).contains(&n) {
            return Err(format!("bad program ({n} words)"));
        }
        if !(0..=MAX_SLOTS).contains(&nslots) || (nslots > 0 && slots.is_null()) {
            return Err(format!("bad slot list ({nslots} slots)"));
        }
        let words = copy_words(rec, n);
        let pairs: Vec<(i64, i64)> = copy_words(slots, 2 * nslots)
            .chunks(2)
            .map(|p| (p[0], p[1]))
            .collect();
        prepare(&words, &ctx.arenas.lock().unwrap(), &pairs)
    })();
    match program {
        Ok(p) => {
            let mut programs = ctx.programs.lock().unwrap();
            programs.push(Some(Arc::new(p)));
            programs.len() as i64 - 1
        }
        Err(msg) => {
            *ctx.push_error.lock().unwrap() = msg;
            -1
        }
    }
}

/// Queue prepared program `handle`; `blocks` holds `nblocks` (arena, block byte offset,
/// block bytes) triples, one per slot, the blocks this run uses in the slots (0: the
/// recorded ones). Returns like `tk_push`.
#[no_mangle]
pub unsafe extern "C" fn tk_push_program(
    ctx: *mut Ctx,
    handle: i64,
    blocks: *const u8,
    nblocks: i64,
) -> i64 {
    let ctx = &*ctx;
    let program = usize::try_from(handle)
        .ok()
        .and_then(|h| ctx.programs.lock().unwrap().get(h).cloned().flatten());
    let msg = match program {
        None => format!("no prepared program {handle}"),
        Some(_) if ctx.stream.is_closed() => "the runtime is closed".into(),
        Some(_) if !(0..=MAX_SLOTS).contains(&nblocks) || (nblocks > 0 && blocks.is_null()) => {
            format!("bad slot blocks ({nblocks})")
        }
        Some(p) => {
            let bases = if nblocks == 0 {
                Ok(Vec::new())
            } else {
                p.slot_bases(
                    &copy_words(blocks, 3 * nblocks),
                    &ctx.arenas.lock().unwrap(),
                )
            };
            match bases {
                Err(msg) => msg,
                Ok(bases) => {
                    return ctx
                        .stream
                        .push(Batch::of_program(p, ctx.arenas.clone(), bases))
                        as i64
                }
            }
        }
    };
    *ctx.push_error.lock().unwrap() = msg;
    -1
}

/// Release prepared program `handle` (a queued push of it still runs).
#[no_mangle]
pub unsafe extern "C" fn tk_release_program(ctx: *mut Ctx, handle: i64) {
    let ctx = &*ctx;
    if let Ok(h) = usize::try_from(handle) {
        if let Some(slot) = ctx.programs.lock().unwrap().get_mut(h) {
            *slot = None;
        }
    }
}
