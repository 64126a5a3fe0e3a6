//! Op records: framing (at push), decoding and validation against the op
//! contract (on the coordinator, just before each op runs), and running them.
//!
//! A record, as Python packs it (i64 words):
//!
//!   header  [op code, n views, i0, i1, i2, value (f64 bits)]
//!           each param in the slot its op's row in ops.py names (`record`):
//!           (reduce: i0 = naxes; cross_entropy(_grad): i1 = ignore_index,
//!           i2 = 1 when there is one, 0 when no target is ignored;
//!           causal_softmax: i0 = diagonal; layer_norm(_grad): value = eps;
//!           dropout: i0 = threshold, value = scale; fill: value)
//!   n views (1 to 5) [arena, ...]: adam_update has 5 (out, g, m, v, s)
//!   n views [arena, block byte offset, block bytes, element offset, dtype,
//!            ndim, shape[ndim], strides[ndim]]   out first, then the inputs
//!
//! `decode` checks the op code, the view count, every block inside its
//! registered arena, every view (offset + strides, negative strides included,
//! in i128) inside its block, and the dtypes and shapes of the op's contract
//! kind (`check_contract`, one arm per `ops::Contract`).

use std::sync::{Arc, Mutex};

use crate::fuse::{self, Run};
use crate::ops::{self, Contract, OpDef};
use crate::runtime::{KResult, KernelError, Pool, Task};
use crate::view::{Arr, DType, MAXD};

const HEADER: usize = 6;

/// One decoded, validated op.
#[derive(Clone, Copy)]
pub struct Op<'a> {
    pub def: &'static OpDef,
    /// out, then the inputs
    pub v: [Arr; 5],
    pub naxes: usize,
    pub value: f64,
    /// cross_entropy(_grad): rows whose target equals it add nothing
    pub ignore: Option<i64>,
    /// fill: the value as an exact int64 (i1, with i2 = 1) where Python gave an int, so
    /// integer outs get it exactly (an int64 beyond 2^53 does not survive the f64 value)
    pub int_value: Option<i64>,
    /// causal_softmax: column j of row i is kept where j <= i + diagonal
    pub diagonal: i64,
    /// dropout: an element is kept where its random word >> 8 is >= threshold
    pub threshold: u32,
    /// col2im: the shifts of a kernel row and of a kernel column (i0, i1)
    pub steps: [usize; 2],
    /// a host write's data (copied into the batch at `tk_write`)
    pub src: &'a [u8],
}

pub type Arenas = Arc<Mutex<Vec<(usize, usize)>>>;

/// One push: op records back to back, as Python packed them, plus the source
/// data of a host write. Decoded and validated record by record on the
/// coordinator, just before each op runs.
pub struct Batch {
    pub words: Vec<i64>,
    /// where each record starts in `words` (the framing was checked at push)
    pub starts: Vec<usize>,
    pub data: Vec<u8>,
    pub arenas: Arenas,
    /// a prepared program to run instead of the records (`words` is empty then)
    pub program: Option<Arc<Program>>,
    /// the program's slot blocks for this push (addresses; empty: the recorded ones)
    pub bases: Vec<usize>,
}

impl Batch {
    /// A push of a prepared program: its slots on `bases` (empty: the recorded blocks).
    pub fn of_program(program: Arc<Program>, arenas: Arenas, bases: Vec<usize>) -> Batch {
        Batch {
            words: Vec::new(),
            starts: Vec::new(),
            data: Vec::new(),
            arenas,
            program: Some(program),
            bases,
        }
    }
}

/// A recorded program (torchic.compile): its records decoded and validated once,
/// at `prepare`, then run as they are at every push of it.
///
/// Slots: blocks named at `prepare` (the program's copies of its tensor arguments) that a
/// push may swap for other blocks (the caller's tensors, read and written where they are,
/// with no copy in or out). Each view into a slot block is kept as (op, view, byte offset
/// from the block start); a swapped-in block must reach as far as the slot's views do.
pub struct Program {
    /// the ops, their slot views pointing at the blocks of the last run (a program runs
    /// on the coordinator only, one push after the other: the lock is never contended)
    ops: Mutex<Vec<Op<'static>>>,
    n_ops: usize,
    /// (op index, view index, slot, byte offset from the slot block's start)
    patches: Vec<(usize, usize, usize, usize)>,
    /// per slot: the bytes its views reach from the block's start
    reach: Vec<usize>,
    /// per slot: the recorded block's start address (a push naming no blocks uses these)
    recorded: Vec<usize>,
    /// per slot: the block start the ops point at now
    current: Mutex<Vec<usize>>,
    /// the runs of elementwise ops run tile by tile (fuse.rs), planned for the blocks
    /// the ops point at now (planned again when a push moves the slots)
    runs: Mutex<Vec<Run>>,
    /// fusion on (TORCHIC_SIMD_FUSE as it was when the program was prepared)
    fuse: bool,
}

// SAFETY: the ops' pointers are into registered arenas, which live as long as the
// runtime (they are only dropped after the stream is closed); the Python side holds
// every block a program names for as long as it keeps the program.
unsafe impl Send for Program {}
// SAFETY: as for Send: the arenas outlive the programs that point into them
unsafe impl Sync for Program {}

/// Decode and validate every record of `words` (no host writes) into a Program; `slots`
/// are the (arena, block byte offset) of the blocks a push may swap (see Program).
pub fn prepare(
    words: &[i64],
    arenas: &[(usize, usize)],
    slots: &[(i64, i64)],
) -> Result<Program, String> {
    let starts = frame_records(words)?;
    let mut ops = Vec::with_capacity(starts.len());
    let mut patches = Vec::new();
    let mut reach = vec![0usize; slots.len()];
    for (i, &start) in starts.iter().enumerate() {
        let end = starts.get(i + 1).copied().unwrap_or(words.len());
        let rec = &words[start..end];
        if rec[0] == ops::OP_WRITE {
            return Err(format!("record {i}: a program holds no host writes"));
        }
        ops.push(decode(rec, arenas, &[]).map_err(|e| format!("record {i}: {e}"))?);
        // (decode checked every view: each lies inside its block, so lo >= 0)
        let mut pos = HEADER;
        for k in 0..rec[1] as usize {
            let (arena, boff, offset, nd) = (rec[pos], rec[pos + 1], rec[pos + 3], rec[pos + 5]);
            let item = ops[i].v[k].dtype.size();
            let nd = nd as usize;
            if let Some(slot) = slots.iter().position(|&s| s == (arena, boff)) {
                let dims = &rec[pos + 6..pos + 6 + 2 * nd];
                let (shape, strides) = dims.split_at(nd);
                let mut hi = offset as i128;
                let mut empty = false;
                for (&n, &st) in shape.iter().zip(strides) {
                    empty |= n == 0;
                    if n > 0 && st > 0 {
                        hi += (n as i128 - 1) * st as i128;
                    }
                }
                if !empty {
                    patches.push((i, k, slot, offset as usize * item));
                    reach[slot] = reach[slot].max((hi as usize + 1) * item);
                }
            }
            pos += 6 + 2 * nd;
        }
    }
    // the recorded blocks' addresses (checked inside their arenas by decode, where used)
    let recorded: Vec<usize> = slots
        .iter()
        .map(|&(arena, boff)| {
            let base = usize::try_from(arena)
                .ok()
                .and_then(|a| arenas.get(a))
                .map_or(0, |a| a.0);
            base.wrapping_add(boff as usize)
        })
        .collect();
    let fuse = fusion_on();
    Ok(Program {
        runs: Mutex::new(fuse_plan(&ops, fuse)),
        fuse,
        n_ops: ops.len(),
        ops: Mutex::new(ops),
        patches,
        reach,
        current: Mutex::new(recorded.clone()),
        recorded,
    })
}

/// Fusion is on unless TORCHIC_SIMD_FUSE=0 (benchmarks, and the tests comparing fused and
/// unfused replays; the Python side refuses any value but 0 or 1 before the library runs
/// anything), read when a program is prepared.
fn fusion_on() -> bool {
    std::env::var("TORCHIC_SIMD_FUSE").map_or(true, |v| v.trim() != "0")
}

/// A program's fused runs (fuse.rs); none where fusion is off.
fn fuse_plan(ops: &[Op], on: bool) -> Vec<Run> {
    if on {
        let mut runs = fuse::plan(ops, fuse::budget());
        runs.extend(fuse::plan_apart(ops)); // (stages and apart ops: never the same op)
        runs.sort_by_key(|r| r.start);
        runs
    } else {
        Vec::new()
    }
}

impl Program {
    pub fn slots(&self) -> usize {
        self.reach.len()
    }

    /// The start addresses of the blocks a push puts in the slots: `blocks` holds one
    /// (arena, block byte offset, block bytes) per slot, each checked to lie inside its
    /// registered arena and to reach as far as the slot's views.
    pub fn slot_bases(
        &self,
        blocks: &[i64],
        arenas: &[(usize, usize)],
    ) -> Result<Vec<usize>, String> {
        if blocks.len() != 3 * self.reach.len() {
            return Err(format!(
                "the program has {} slots, the push gives {} words",
                self.reach.len(),
                blocks.len()
            ));
        }
        let mut bases = Vec::with_capacity(self.reach.len());
        for (j, b) in blocks.chunks(3).enumerate() {
            let (arena, boff, bsize) = (b[0], b[1], b[2]);
            let &(aaddr, alen) = usize::try_from(arena)
                .ok()
                .and_then(|i| arenas.get(i))
                .ok_or_else(|| format!("slot {j}: arena {arena} does not exist"))?;
            if boff < 0 || bsize < 0 || boff as i128 + bsize as i128 > alen as i128 {
                return Err(format!(
                    "slot {j}: block [{boff}, +{bsize}) is outside arena {arena} of {alen} bytes"
                ));
            }
            if (bsize as u64 as u128) < self.reach[j] as u128 {
                return Err(format!(
                    "slot {j}: a block of {bsize} bytes, the program's views reach {} bytes",
                    self.reach[j]
                ));
            }
            bases.push(aaddr + boff as usize);
        }
        Ok(bases)
    }

    /// Run every op, the slots' views moved to `bases` (empty: the recorded blocks).
    fn run(
        &self,
        pool: &Pool,
        bases: &[usize],
        finished: &mut dyn FnMut(Result<(), (&'static str, KernelError)>),
    ) {
        let mut ops = self.ops.lock().unwrap();
        let bases = if bases.is_empty() {
            &self.recorded[..]
        } else {
            bases
        };
        let mut current = self.current.lock().unwrap();
        let mut runs = self.runs.lock().unwrap();
        if current[..] != *bases {
            for &(i, k, slot, off) in &self.patches {
                ops[i].v[k].ptr = bases[slot].wrapping_add(off) as *mut u8;
            }
            current.copy_from_slice(bases);
            *runs = fuse_plan(&ops, self.fuse); // (the moved blocks may overlap others now)
        }
        let mut next = runs.iter().peekable();
        let mut i = 0;
        while i < ops.len() {
            if let Some(&&run) = next.peek().filter(|r| r.start == i) {
                if run.apart {
                    fuse::run_apart(pool, &ops, run, finished);
                } else {
                    fuse::run(pool, &ops, run, finished);
                }
                next.next();
                i = run.end;
            } else {
                let op = &ops[i];
                finished(execute(pool, op).map_err(|e| (op.def.name, e)));
                i += 1;
            }
        }
    }
}

impl Task for Batch {
    fn ops(&self) -> usize {
        match &self.program {
            Some(p) => p.n_ops,
            None => self.starts.len(),
        }
    }
    fn run(&self, pool: &Pool, finished: &mut dyn FnMut(Result<(), (&'static str, KernelError)>)) {
        if let Some(program) = &self.program {
            return program.run(pool, &self.bases, finished);
        }
        let mut ends = self
            .starts
            .iter()
            .skip(1)
            .copied()
            .chain([self.words.len()]);
        for &start in &self.starts {
            let rec = &self.words[start..ends.next().unwrap_or(start)];
            let name = ops::op_name(rec[0]);
            let decoded = decode(rec, &self.arenas.lock().unwrap(), &self.data);
            finished(match decoded {
                Ok(op) => execute(pool, &op).map_err(|e| (name, e)),
                Err(msg) => Err((name, KernelError::value(msg))),
            });
        }
    }
}

/// Run one validated op (on the coordinator thread).
pub fn execute(pool: &Pool, op: &Op) -> KResult {
    (op.def.kernel)(pool, op)
}

/// The start of every record in `words`, walking the framing (header, then
/// `n views` views of 6 + 2 * ndim words). Only the lengths are checked here;
/// the contents are validated by `decode` before each op runs.
pub fn frame_records(words: &[i64]) -> Result<Vec<usize>, String> {
    let mut starts = Vec::new();
    let mut pos = 0;
    while pos < words.len() {
        starts.push(pos);
        let nv = *words.get(pos + 1).ok_or("op record too short")?;
        if !(1..=5).contains(&nv) || words.len() < pos + HEADER {
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

/// Decode and validate one record against the registered arenas.
pub fn decode<'a>(
    rec: &[i64],
    arenas: &[(usize, usize)],
    data: &'a [u8],
) -> Result<Op<'a>, String> {
    if rec.len() < HEADER {
        return Err("op record too short".into());
    }
    let def = ops::lookup(rec[0]).ok_or_else(|| format!("unknown op code {}", rec[0]))?;
    let name = def.name;
    let nv = rec[1];
    let want = def.contract.inputs() + 1;
    if nv != want as i64 {
        return Err(format!(
            "{name}: expected {} inputs, got {}",
            want - 1,
            nv - 1
        ));
    }
    let empty = Arr::new(std::ptr::null_mut(), DType::F32, &[], &[]);
    let mut op = Op {
        def,
        v: [empty; 5],
        naxes: 0,
        value: f64::from_bits(rec[5] as u64),
        ignore: None,
        int_value: None,
        diagonal: 0,
        threshold: 0,
        steps: [0, 0],
        src: &[],
    };
    let mut pos = HEADER;
    for k in 0..want {
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
    let dtype = DType::from_code(dtype).ok_or_else(|| format!("unknown dtype code {dtype}"))?;
    let item = dtype.size() as i128;
    // (the allocator aligns every block: a misaligned one is a corrupt record)
    if (aaddr as i128 + boff as i128) % item != 0 {
        return Err(format!(
            "block at byte {boff} is not aligned for {} ({item} bytes)",
            dtype.name()
        ));
    }
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
    if numel > 0 && (lo < 0 || (hi + 1) * item > bsize as i128) {
        return Err(format!(
            "view (offset {offset}, shape {shape:?}, strides {strides:?}) reaches elements [{lo}, {hi}] \
             outside its block of {bsize} bytes"));
    }
    if numel > (isize::MAX as i128) / 8 {
        return Err("view too large".into());
    }
    let ptr = (aaddr as *mut u8)
        .wrapping_add(boff as usize)
        .wrapping_offset((offset as isize).wrapping_mul(item as isize));
    arr.ptr = ptr;
    arr.dtype = dtype;
    arr.nd = nd;
    for d in 0..nd {
        arr.shape[d] = shape[d] as usize;
        arr.st[d] = strides[d] as isize;
    }
    Ok(pos + 6 + 2 * nd)
}

// the checks every contract kind is built from: sets of allowed dtypes (DType::bit)
const F: u16 = DType::F32.bit(); // f32
const I: u16 = DType::I32.bit(); // i32
const D: u16 = DType::F64.bit(); // f64
const L: u16 = DType::I64.bit(); // i64
const B: u16 = DType::B8.bit(); // bool
/// the floating dtypes kernels compute in (docs/DTYPES.md: halves are computed in f32
/// by the frontend)
const FLOAT: u16 = F | D;
/// integer arithmetic computes in i32 and i64 (narrow ints are cast to i64 first)
const INT: u16 = I | L;
/// every numeric dtype a kernel computes in
const NUM: u16 = FLOAT | INT;
/// every dtype code (copy, fill, where's values, gather's table)
const ANY: u16 = (1 << DType::ALL.len()) - 1;

fn dt(x: &Arr, allowed: u16, what: &str) -> Result<(), String> {
    if allowed & x.dtype.bit() != 0 {
        Ok(())
    } else {
        let names: Vec<&str> = DType::ALL
            .iter()
            .filter(|d| allowed & d.bit() != 0)
            .map(|d| d.name())
            .collect();
        Err(format!(
            "{what} has dtype {}, the op takes {}",
            x.dtype.name(),
            names.join(" | ")
        ))
    }
}

/// `y` has `x`'s dtype
fn same_dt(x: &Arr, y: &Arr, what: &str) -> Result<(), String> {
    if x.dtype == y.dtype {
        Ok(())
    } else {
        Err(format!(
            "{what} has dtype {}, want {}",
            y.dtype.name(),
            x.dtype.name()
        ))
    }
}

fn contig(x: &Arr) -> Result<(), String> {
    if x.is_contiguous() {
        Ok(())
    } else {
        Err(format!("out must be contiguous, strides {:?}", x.strides()))
    }
}

/// `y` has out's (`x`'s) shape
fn same(x: &Arr, y: &Arr, what: &str) -> Result<(), String> {
    if x.shape() == y.shape() {
        Ok(())
    } else {
        Err(format!(
            "{what} shape {:?} != out shape {:?}",
            y.shape(),
            x.shape()
        ))
    }
}

fn nd(x: &Arr, n: usize, what: &str) -> Result<(), String> {
    if x.nd == n {
        Ok(())
    } else {
        Err(format!(
            "{what} must have {n} dims, has shape {:?}",
            x.shape()
        ))
    }
}

/// ops.py's contract for the op's kind: one arm per `Contract`.
fn check_contract<'a>(op: &mut Op<'a>, rec: &[i64], data: &'a [u8]) -> Result<(), String> {
    let [o, a, b, c, _] = &op.v;
    let kind = op.def.contract;
    match kind {
        Contract::Fill => {
            dt(o, ANY, "out")?;
            op.int_value = match (rec[4], rec[3]) {
                (0, _) => None,
                (1, v) if v as f64 == op.value => Some(v),
                (f, v) => {
                    return Err(format!(
                        "int value {v} with flag {f} for value {}",
                        op.value
                    ))
                }
            };
        }
        Contract::Copy => same(o, a, "input")?,
        Contract::Unary | Contract::Binary => {
            dt(o, FLOAT, "out")?;
            same_dt(o, a, "a")?;
            same(o, a, "a")?;
            if kind == Contract::Binary {
                same_dt(o, b, "b")?;
                same(o, b, "b")?;
            }
        }
        Contract::IntBinary | Contract::Bitwise => {
            dt(o, if kind == Contract::Bitwise { INT } else { NUM }, "out")?;
            for (x, w) in [(a, "a"), (b, "b")] {
                if x.dtype != o.dtype {
                    return Err(format!("{w} has dtype {:?}, out {:?}", x.dtype, o.dtype));
                }
                same(o, x, w)?;
            }
        }
        Contract::Compare => {
            // (b8 out; f32 0/1 as before the dtype rows)
            dt(o, B | F, "out")?;
            if a.dtype != b.dtype {
                return Err("operands have different dtypes".into());
            }
            same(o, a, "a")?;
            same(o, b, "b")?;
        }
        Contract::Where => {
            // cond any dtype (b8; f32 0/1 as before), a and b out's dtype
            for (x, w) in [(o, "out"), (a, "cond"), (b, "a"), (c, "b")] {
                if w != "cond" {
                    same_dt(o, x, w)?;
                }
                same(o, x, w)?;
            }
        }
        Contract::Reduce => {
            dt(o, NUM, "out")?;
            if a.dtype != o.dtype {
                return Err(format!("a has dtype {:?}, out {:?}", a.dtype, o.dtype));
            }
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
        Contract::Argmax => {
            dt(o, I | L, "out")?;
            dt(a, NUM, "a")?;
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
        Contract::Col2Im => {
            dt(o, FLOAT, "out")?;
            same_dt(o, a, "a")?;
            nd(a, 5, "a")?;
            nd(o, 3, "out")?;
            contig(o)?;
            if o.shape()[..2] != a.shape()[..2] {
                return Err(format!(
                    "out shape {:?} for columns {:?}: want (R1, R2, L)",
                    o.shape(),
                    a.shape()
                ));
            }
            let (row, col, flag) = (rec[2], rec[3], rec[4]);
            if row < 0 || col < 0 || flag != 1 {
                return Err(format!(
                    "steps {row}, {col} (flag {flag}): want two ints >= 0"
                ));
            }
            op.steps = [row as usize, col as usize];
        }
        Contract::MaxPoolIndex => {
            dt(o, I | L, "out")?;
            dt(a, FLOAT, "a")?;
            nd(a, 6, "a")?;
            contig(o)?;
            if o.shape() != &a.shape()[..4] || a.shape[4] * a.shape[5] == 0 {
                return Err(format!(
                    "out shape {:?} for windows {:?}: want its first 4 dims, kh * kw > 0",
                    o.shape(),
                    a.shape()
                ));
            }
            if a.strides().iter().any(|&s| s < 0) {
                return Err(format!("windows' strides {:?}: negative", a.strides()));
            }
            // the offsets out holds must fit its dtype
            let last: isize = (2..6).map(|d| (a.shape[d] as isize - 1) * a.st[d]).sum();
            if o.dtype == DType::I32 && last > i32::MAX as isize {
                return Err(format!("window offsets up to {last} do not fit int32"));
            }
        }
        Contract::Rowwise | Contract::SoftmaxGrad => {
            dt(o, FLOAT, "out")?;
            same_dt(o, a, "a")?;
            nd(a, 2, "a")?;
            same(o, a, "a")?;
            contig(o)?;
            if kind == Contract::SoftmaxGrad {
                same_dt(o, b, "g")?;
                same(o, b, "g")?;
            }
        }
        Contract::CrossEntropy | Contract::CrossEntropyGrad => {
            dt(o, FLOAT, "out")?;
            same_dt(o, a, "logits")?;
            dt(b, INT, "target")?;
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
            op.ignore = match (rec[4], rec[3]) {
                (0, 0) => None,
                (1, i) => Some(i),
                (f, i) => {
                    return Err(format!(
                        "ignore_index {i} with flag {f} (want 1, or 0 and 0)"
                    ))
                }
            };
            if kind == Contract::CrossEntropy {
                // (R,), or (R, 2) with each row's 0/1 count beside its loss
                if o.shape() != &a.shape()[..1] && o.shape() != [a.shape[0], 2] {
                    return Err(format!(
                        "out shape {:?} for logits {:?}",
                        o.shape(),
                        a.shape()
                    ));
                }
            } else {
                same_dt(o, c, "g")?;
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
        Contract::Matmul | Contract::MatmulBias => {
            // (B, M, K) @ (B, K, N), or with two batch dims (B1, B2, ...)
            let rank = if o.nd == 4 { 4 } else { 3 };
            if kind == Contract::MatmulBias {
                same_dt(o, c, "bias")?;
                nd(c, 1, "bias")?;
                if c.shape() != &o.shape()[rank - 1..] {
                    return Err(format!("bias {:?} for out {:?}", c.shape(), o.shape()));
                }
            }
            dt(o, FLOAT, "out")?;
            for (x, w) in [(o, "out"), (a, "a"), (b, "b")] {
                same_dt(o, x, w)?;
                nd(x, rank, w)?;
            }
            contig(o)?;
            let (sa, sb, so) = (a.shape(), b.shape(), o.shape());
            let d = rank - 3;
            if sa[..=d] != sb[..=d]
                || sa[d + 2] != sb[d + 1]
                || so[..=d] != sa[..=d]
                || so[d + 1..] != [sa[d + 1], sb[d + 2]]
            {
                return Err(format!("shapes {sa:?} @ {sb:?} -> {so:?}"));
            }
        }
        Contract::Gather | Contract::ScatterAdd => {
            // gather: out (R, D), table (V, D), idx (R,);  scatter: out (V, D), src (R, D), idx (R,)
            let gather = kind == Contract::Gather;
            if gather {
                // a pure copy of rows: the table may have any dtype
                dt(a, ANY, "table")?;
                same_dt(o, a, "table")?;
            } else {
                dt(o, FLOAT, "out")?;
                same_dt(o, a, "src")?;
            }
            dt(b, INT, "idx")?;
            nd(o, 2, "out")?;
            nd(a, 2, "table/src")?;
            nd(b, 1, "idx")?;
            contig(o)?;
            let rows = if gather { o.shape[0] } else { a.shape[0] };
            if a.shape[1] != o.shape[1] || b.shape[0] != rows {
                return Err(format!(
                    "shapes out {:?}, {:?}, idx {:?}",
                    o.shape(),
                    a.shape(),
                    b.shape()
                ));
            }
        }
        Contract::LayerNorm | Contract::LayerNormGrad => {
            dt(o, FLOAT, "out")?;
            for (x, w) in [(a, "x"), (b, "w"), (c, "b/g")] {
                same_dt(o, x, w)?;
            }
            nd(a, 2, "x")?;
            nd(b, 1, "w")?;
            // layer_norm_grad's out may be (2, R, C): dx, then g * xhat
            if kind == Contract::LayerNormGrad && o.nd == 3 {
                if o.shape() != [2, a.shape[0], a.shape[1]] {
                    return Err(format!(
                        "out shape {:?} for x {:?}: want x's shape or [2, R, C]",
                        o.shape(),
                        a.shape()
                    ));
                }
            } else {
                same(o, a, "x")?;
            }
            contig(o)?;
            let cols = &a.shape()[1..];
            let y_ok = if kind == Contract::LayerNorm {
                c.shape() == cols
            } else {
                c.shape() == a.shape()
            };
            if b.shape() != cols || !y_ok {
                return Err(format!(
                    "w {:?} and b/g {:?} for x {:?}",
                    b.shape(),
                    c.shape(),
                    a.shape()
                ));
            }
        }
        Contract::CausalSoftmax => {
            dt(o, FLOAT, "out")?;
            same_dt(o, a, "a")?;
            nd(a, 3, "a")?;
            same(o, a, "a")?;
            contig(o)?;
            op.diagonal = rec[2];
        }
        Contract::Dropout => {
            dt(o, F, "out")?;
            dt(a, F, "x")?;
            dt(b, INT, "key")?;
            same(o, a, "x")?;
            contig(o)?;
            if b.shape() != [2] {
                return Err(format!("key must have shape [2], has {:?}", b.shape()));
            }
            if o.numel() as u64 >= 1 << 32 {
                return Err(format!("out of {} elements: at most 2^32 - 1", o.numel()));
            }
            op.threshold = match u32::try_from(rec[2]) {
                Ok(t) if t <= 1 << 24 => t,
                _ => return Err(format!("threshold {} outside [0, 2^24]", rec[2])),
            };
            if !op.value.is_finite() || op.value as f32 as f64 != op.value {
                return Err(format!("scale {} is not a finite float32", op.value));
            }
        }
        Contract::AdamUpdate => crate::adam::check_views(&op.v)?,
        Contract::LstmCell | Contract::LstmCellGrad => {
            crate::lstm::check_views(&op.v, kind == Contract::LstmCellGrad, kind.writes())?
        }
        Contract::Write => {
            if data.len() as i128 != o.numel() as i128 * o.itemsize() as i128 {
                return Err(format!(
                    "source of {} bytes for a view of {} {} elements",
                    data.len(),
                    o.numel(),
                    o.dtype.name()
                ));
            }
            op.src = data;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[allow(clippy::too_many_arguments)] // one argument per word of a view's record
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
    #[allow(clippy::type_complexity)] // a list of record mutations
    fn decode_rejects_views_outside_their_block() {
        let mut mem = vec![0f32; 64];
        let arenas = [(mem.as_mut_ptr() as usize, 256)];
        let mut ok = vec![ops::code_of("add").unwrap(), 3, 0, 0, 0, 0];
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
            Box::new(|r| r[6 + 4] = 10),  // bad dtype
            Box::new(|r| r[6 + 4] = -1),  // bad dtype
            Box::new(|r| r[6 + 4] = 3),   // i64 out, f32 inputs
            Box::new(|r| r[6 + 1] = 2),   // a block misaligned for f32
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

    #[test]
    fn fill_takes_an_exact_int64_beside_the_float_value() {
        let mut mem = vec![0i64; 4];
        let arenas = [(mem.as_mut_ptr() as usize, 32)];
        let big = (1i64 << 62) + 1;
        let rec = |i1: i64, i2: i64, value: f64| {
            let mut r = vec![ops::code_of("fill").unwrap(), 1, 0, i1, i2];
            r.push(value.to_bits() as i64);
            view(&mut r, 0, 0, 32, 0, DType::I64 as i64, &[4], &[1]);
            r
        };
        let op = decode(&rec(big, 1, big as f64), &arenas, &[]).unwrap();
        assert_eq!(op.int_value, Some(big));
        let pool = Pool::new(1);
        execute(&pool, &op).unwrap();
        assert_eq!(mem, [big; 4]);
        // an int that is not the value, a bad flag: refused
        assert!(decode(&rec(3, 1, 2.0), &arenas, &[]).is_err());
        assert!(decode(&rec(2, 2, 2.0), &arenas, &[]).is_err());
        assert_eq!(
            decode(&rec(0, 0, 2.5), &arenas, &[]).unwrap().int_value,
            None
        );
    }

    #[test]
    fn prepare_validates_every_record_once_and_runs_them() {
        let mut mem = vec![1f32; 64];
        let arenas = [(mem.as_mut_ptr() as usize, 256)];
        let mut add = vec![ops::code_of("add").unwrap(), 3, 0, 0, 0, 0];
        view(&mut add, 0, 0, 64, 0, 0, &[16], &[1]);
        view(&mut add, 0, 64, 64, 0, 0, &[16], &[1]);
        view(&mut add, 0, 0, 64, 0, 0, &[16], &[1]);
        let two = [add.clone(), add.clone()].concat();
        let program = prepare(&two, &arenas, &[]).expect("a valid program");
        let batch = Batch::of_program(
            Arc::new(program),
            Arc::new(Mutex::new(arenas.to_vec())),
            Vec::new(),
        );
        assert_eq!(batch.ops(), 2);
        let pool = Pool::new(1);
        for _ in 0..3 {
            batch.run(&pool, &mut |r| assert!(r.is_ok()));
        }
        assert_eq!(mem[0], 7.0); // 1 + 6 adds of 1
                                 // a bad second record rejects the whole program, naming it
        let mut bad = two.clone();
        let at = add.len() + 6 + 2;
        bad[at] = 300; // block past the arena
        assert!(prepare(&bad, &arenas, &[])
            .err()
            .unwrap()
            .starts_with("record 1:"));
        let mut write = add.clone();
        write[0] = ops::OP_WRITE;
        assert!(prepare(&write, &arenas, &[]).is_err());
    }

    #[test]
    fn a_push_moves_the_slot_views_to_the_blocks_it_gives() {
        // out = a + b, a the slot at byte 64: a push with the block at byte 128 reads that
        let mut mem = vec![0f32; 64];
        for (i, x) in mem.iter_mut().enumerate() {
            *x = i as f32;
        }
        let arenas = [(mem.as_mut_ptr() as usize, 256)];
        let mut add = vec![ops::code_of("add").unwrap(), 3, 0, 0, 0, 0];
        view(&mut add, 0, 0, 64, 0, 0, &[4], &[1]); // out: elements 0..4
        view(&mut add, 0, 64, 64, 2, 0, &[4], &[2]); // a: slot, offset 2, stride 2
        view(&mut add, 0, 192, 64, 0, 0, &[4], &[1]); // b: elements 48..52
        let program = prepare(&add, &arenas, &[(0, 64)]).expect("a valid program");
        assert_eq!(program.slots(), 1);
        assert_eq!(program.reach, vec![(2 + 3 * 2 + 1) * 4]);
        let bases = program.slot_bases(&[0, 128, 64], &arenas).unwrap();
        let pool = Pool::new(1);
        program.run(&pool, &bases, &mut |r| assert!(r.is_ok()));
        // a now reads elements 32 + 2, 34, 36, 38; b 48..52
        assert_eq!(
            &mem[..4],
            &[34.0 + 48.0, 36.0 + 49.0, 38.0 + 50.0, 40.0 + 51.0]
        );
        program.run(&pool, &[], &mut |r| assert!(r.is_ok())); // the recorded block
        assert_eq!(
            &mem[..4],
            &[18.0 + 48.0, 20.0 + 49.0, 22.0 + 50.0, 24.0 + 51.0]
        );
        // a block too small, outside the arena, a missing slot: refused
        assert!(program
            .slot_bases(&[0, 128, 32], &arenas)
            .unwrap_err()
            .contains("reach"));
        assert!(program
            .slot_bases(&[0, 224, 64], &arenas)
            .unwrap_err()
            .contains("outside"));
        assert!(program
            .slot_bases(&[1, 0, 64], &arenas)
            .unwrap_err()
            .contains("arena 1"));
        assert!(program
            .slot_bases(&[], &arenas)
            .unwrap_err()
            .contains("1 slots"));
    }

    #[test]
    fn cross_entropy_decodes_its_ignore_index_and_checks_out_shape() {
        let mut mem = vec![0f32; 64];
        let arenas = [(mem.as_mut_ptr() as usize, 256)];
        let rec = |i1: i64, i2: i64, out: &[i64]| {
            let mut r = vec![ops::code_of("cross_entropy").unwrap(), 3, 0, i1, i2, 0];
            let st: &[i64] = if out.len() == 2 { &[out[1], 1] } else { &[1] };
            view(&mut r, 0, 0, 64, 0, 0, out, st);
            view(&mut r, 0, 64, 64, 0, 0, &[4, 3], &[3, 1]);
            view(&mut r, 0, 128, 64, 0, 1, &[4], &[1]);
            r
        };
        let ignore = |r: Vec<i64>| decode(&r, &arenas, &[]).map(|op| op.ignore);
        assert_eq!(ignore(rec(0, 0, &[4])), Ok(None));
        assert_eq!(ignore(rec(-100, 1, &[4])), Ok(Some(-100)));
        assert_eq!(ignore(rec(0, 1, &[4, 2])), Ok(Some(0)));
        // a value without its flag, a flag other than 0 / 1, an out that is not (R,) / (R, 2)
        for (i1, i2, out) in [
            (-1, 0, &[4][..]),
            (0, 2, &[4]),
            (0, -1, &[4]),
            (0, 0, &[4, 3]),
            (0, 0, &[4, 1]),
            (0, 0, &[3]),
        ] {
            assert!(
                ignore(rec(i1, i2, out)).is_err(),
                "{i1} {i2} {out:?} accepted"
            );
        }
    }

    #[test]
    fn layer_norm_grad_out_is_x_shape_or_two_contiguous_planes() {
        let mut mem = vec![0f32; 256];
        let arenas = [(mem.as_mut_ptr() as usize, 1024)];
        let rec = |name: &str, out: &[i64], st: &[i64]| {
            let mut r = vec![ops::code_of(name).unwrap(), 4, 0, 0, 0, 0];
            view(&mut r, 0, 0, 512, 0, 0, out, st);
            view(&mut r, 0, 512, 96, 0, 0, &[4, 6], &[6, 1]); // x
            view(&mut r, 0, 608, 24, 0, 0, &[6], &[1]); // w
            view(&mut r, 0, 640, 96, 0, 0, &[4, 6], &[6, 1]); // g (layer_norm: b)
            r
        };
        let ok = |r: Vec<i64>| decode(&r, &arenas, &[]).is_ok();
        let forward = |out: &[i64], st: &[i64]| {
            let mut r = rec("layer_norm", out, st);
            r.truncate(r.len() - 10); // the bias: (6,)
            view(&mut r, 0, 640, 24, 0, 0, &[6], &[1]);
            r
        };
        assert!(ok(forward(&[4, 6], &[6, 1])));
        assert!(!ok(forward(&[2, 4, 6], &[24, 6, 1]))); // the forward's out is x's shape only
        assert!(ok(rec("layer_norm_grad", &[4, 6], &[6, 1])));
        assert!(ok(rec("layer_norm_grad", &[2, 4, 6], &[24, 6, 1])));
        // more or fewer planes, rows or columns that are not x's, planes apart, 4 dims
        for (out, st) in [
            (&[3, 4, 6][..], &[24, 6, 1][..]),
            (&[1, 4, 6], &[24, 6, 1]),
            (&[2, 3, 6], &[18, 6, 1]),
            (&[2, 4, 5], &[20, 5, 1]),
            (&[2, 4, 6], &[32, 6, 1]),
            (&[1, 2, 4, 6], &[48, 24, 6, 1]),
        ] {
            let r = rec("layer_norm_grad", out, st);
            assert!(!ok(r), "out {out:?} strides {st:?} accepted");
        }
    }

    #[test]
    fn every_contract_kind_checks_its_input_count() {
        let mut mem = vec![0f32; 16];
        let arenas = [(mem.as_mut_ptr() as usize, 64)];
        for def in ops::OPS {
            let n = def.contract.inputs() + 1;
            for nv in 1..=5 {
                let mut rec = vec![ops::code_of(def.name).unwrap(), nv, 0, 0, 0, 0];
                for _ in 0..nv {
                    view(&mut rec, 0, 0, 64, 0, 0, &[], &[]);
                }
                if nv as usize != n {
                    let e = decode(&rec, &arenas, &[]).err().unwrap();
                    assert!(e.contains("inputs"), "{}: {e}", def.name);
                }
            }
        }
    }
}
