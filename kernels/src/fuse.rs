//! Row tiles for runs of elementwise ops in a prepared program (torchic.compile).
//!
//! Eager mode runs each op over its whole tensor, so a chain such as a bias add and a
//! tanh, or tanh's gradient `(1 - t * t) * g`, writes every intermediate to memory and
//! reads it back: for tensors larger than the caches, a pass over DRAM per op. A prepared
//! program knows its ops in advance, so it runs each run of consecutive elementwise ops
//! tile by tile instead: rows r0..r1 through every op of the run, then the next rows,
//! a tile's views sized to stay in half of this core's L2. The kernels are the eager ones
//! on row slices of the same views, so every element is computed by the same code:
//! results are bit-identical to eager mode's.
//!
//! A run is formed only where tiling cannot change a result: every op is elementwise
//! (all its views have out's shape, which has at least 2 rows), and every view of the run
//! that overlaps memory some op of the run writes is that very view, so a tile reads
//! exactly the elements the earlier ops wrote for it, and no tile writes what another
//! tile reads. The tiles are the pool's tasks (one fork-join per run instead of per op).
//!
//! Runs of another kind: consecutive ops whose row says "apart" (an optimizer step's
//! adam_update, one per parameter), where no op writes memory another op of the run
//! touches, so their order does not matter. Such a run is one multi-tensor pass: every
//! op's elements cut into flat pieces, all the pieces of all the ops the pool's tasks of
//! one fork-join (instead of one per op, most of them too small to be split at all). Each
//! element is computed by the same kernel code on the same operands: the bits do not
//! change.

use std::sync::Mutex;

use crate::cpuinfo;
use crate::ops::Contract;
use crate::record::Op;
use crate::runtime::{KernelError, Pool};
use crate::view::{Arr, DType};

/// A run below this many bytes of views is left to the ops one by one: its data stays in
/// the caches anyway, and slicing costs a kernel call per op and tile.
pub const MIN_RUN_BYTES: usize = 1 << 20;

/// ops[start..end] run tile by tile, `rows` rows of their outputs a tile; or, where
/// `apart`, as one multi-tensor pass (rows unused: 0)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    pub start: usize,
    pub end: usize,
    pub rows: usize,
    pub apart: bool,
}

/// Do ops of this contract kind touch only their own elements, each element computed from
/// the same element of the inputs, so that consecutive ones writing disjoint memory may
/// run as one multi-tensor pass? ops.py's rows say which (`fuse == "apart"`); Python
/// checks this list against them at load (`tk_op_fuses`).
pub fn apart(contract: Contract) -> bool {
    matches!(contract, Contract::AdamUpdate)
}

/// the flat (contiguous) views of an apart op: out and its same-shaped inputs (the views
/// the pass cuts into pieces); adam_update's last input (its scalars) is read whole
fn flat_views(op: &Op) -> usize {
    op.def.contract.inputs()
}

/// an apart op the pass can cut: its flat views contiguous, of out's shape and dtype
fn cuttable(op: &Op) -> bool {
    let out = &op.v[0];
    apart(op.def.contract)
        && op.v[..flat_views(op)]
            .iter()
            .all(|v| v.is_contiguous() && v.dtype == out.dtype && v.shape() == out.shape())
}

/// The apart runs of `ops`: maximal runs of at least 2 cuttable ops where each op's
/// views are disjoint from every other op's written ones (so any order gives the same).
pub fn plan_apart(ops: &[Op]) -> Vec<Run> {
    let mut runs = Vec::new();
    let mut i = 0;
    while i < ops.len() {
        if !cuttable(&ops[i]) {
            i += 1;
            continue;
        }
        let mut j = i + 1;
        while j < ops.len() && cuttable(&ops[j]) {
            let vs = views(&ops[j]);
            let written = written_views(&ops[j]);
            let clash = ops[i..j].iter().any(|o| {
                written_views(o)
                    .iter()
                    .any(|w| vs.iter().any(|v| !disjoint(v, w)))
                    || views(o)
                        .iter()
                        .any(|v| written.iter().any(|w| !disjoint(v, w)))
            });
            if clash {
                break;
            }
            j += 1;
        }
        if j - i >= 2 {
            runs.push(Run {
                start: i,
                end: j,
                rows: 0,
                apart: true,
            });
        }
        i = j;
    }
    runs
}

/// out and the inputs an op writes in place (its contract's `writes`: adam_update's m, v)
fn written_views(op: &Op) -> Vec<Arr> {
    let mut w = vec![op.v[0]];
    w.extend(op.def.contract.writes().iter().map(|&i| op.v[1 + i]));
    w
}

fn disjoint(v: &Arr, w: &Arr) -> bool {
    let ((a0, a1), (b0, b1)) = (span(v), span(w));
    a1 <= b0 || b1 <= a0
}

/// elements of one piece of a multi-tensor pass, at least (a few microseconds of work)
const PIECE: usize = 1 << 13;

/// Run the apart run's ops as one multi-tensor pass over the pool; `finished` gets each
/// op's result (its first error on any piece), in order.
pub fn run_apart(
    pool: &Pool,
    ops: &[Op],
    run: Run,
    finished: &mut dyn FnMut(Result<(), (&'static str, KernelError)>),
) {
    let group = &ops[run.start..run.end];
    let total: usize = group.iter().map(|o| o.v[0].numel()).sum();
    // about 4 pieces per thread, none below PIECE elements
    let piece = (total / (4 * pool.threads())).max(PIECE);
    let mut pieces: Vec<(usize, usize, usize)> = Vec::new(); // (op, lo, hi)
    for (k, op) in group.iter().enumerate() {
        let n = op.v[0].numel();
        let parts = n.div_ceil(piece).max(1);
        for p in 0..parts {
            pieces.push((k, n * p / parts, n * (p + 1) / parts));
        }
    }
    let serial = Pool::new(1); // the kernels run inside a task: no nested fork-join
    let errors: Mutex<Vec<Option<KernelError>>> = Mutex::new(vec![None; group.len()]);
    let chunk = pieces.len().div_ceil(MAX_TASKS_USED);
    pool.run(pieces.len().div_ceil(chunk), &|t| {
        for &(k, lo, hi) in &pieces[t * chunk..((t + 1) * chunk).min(pieces.len())] {
            let op = &group[k];
            let mut piece = *op;
            for v in piece.v[..flat_views(op)].iter_mut() {
                let item = v.dtype.size() as isize;
                *v = Arr::new(
                    v.ptr.wrapping_offset(lo as isize * item),
                    v.dtype,
                    &[hi - lo],
                    &[1],
                );
            }
            if let Err(e) = (op.def.kernel)(&serial, &piece) {
                errors.lock().unwrap()[k].get_or_insert(e);
            }
        }
    });
    for (op, e) in group.iter().zip(errors.into_inner().unwrap()) {
        finished(e.map_or(Ok(()), |e| Err((op.def.name, e))));
    }
}

/// tasks of one multi-tensor pass, at most (pieces are grouped beyond it)
const MAX_TASKS_USED: usize = 256;

fn views<'a>(op: &'a Op) -> &'a [Arr] {
    &op.v[..1 + op.def.contract.inputs()]
}

/// Do ops of this contract kind fuse as stages of a tiled run (each element computed from
/// the same element of the inputs)? ops.py's rows say which ops do (`fuse == "stage"`);
/// Python refuses a library whose ops disagree (`tk_op_fuses`, checked at load).
pub fn stage(contract: Contract) -> bool {
    use Contract::*;
    matches!(
        contract,
        Fill | Copy | Unary | Binary | IntBinary | Compare | Where
    )
}

/// a stage op (`stage`) whose every view has out's shape (inputs broadcast with zero
/// strides) and whose out does not overlap itself
fn elementwise(op: &Op) -> bool {
    let out = &op.v[0];
    // (the tiles run the f32 / i32 kernels: other dtypes run op by op)
    stage(op.def.contract)
        && views(op)
            .iter()
            .all(|v| matches!(v.dtype, DType::F32 | DType::I32))
        && out.nd >= 1
        && out.shape[0] >= 2
        && out
            .shape()
            .iter()
            .zip(out.strides())
            .all(|(&n, &s)| n == 1 || s != 0)
}

/// the bytes [lo, hi) a view can touch (conservative: its extremes)
fn span(v: &Arr) -> (usize, usize) {
    let (mut lo, mut hi) = (0isize, 0isize);
    for (&n, &s) in v.shape().iter().zip(v.strides()) {
        if n == 0 {
            return (0, 0);
        }
        let d = (n as isize - 1) * s;
        if d < 0 {
            lo += d;
        } else {
            hi += d;
        }
    }
    let p = v.ptr as isize;
    ((p + 4 * lo) as usize, (p + 4 * hi + 4) as usize)
}

fn same_view(a: &Arr, b: &Arr) -> bool {
    a.ptr == b.ptr && a.dtype == b.dtype && a.shape() == b.shape() && a.strides() == b.strides()
}

/// `v` is safe beside `w`, which some op of the run writes: disjoint, or the same view
fn compatible(v: &Arr, w: &Arr) -> bool {
    let ((a0, a1), (b0, b1)) = (span(v), span(w));
    a1 <= b0 || b1 <= a0 || same_view(v, w)
}

/// bytes of one row (dim 0 step) of a view; 0 for one broadcast along dim 0
fn row_bytes(v: &Arr) -> usize {
    if v.st[0] == 0 {
        0
    } else {
        v.numel() / v.shape[0].max(1) * 4
    }
}

/// The runs of `ops` worth tiling, each a tile of about `budget` bytes of its views.
pub fn plan(ops: &[Op], budget: usize) -> Vec<Run> {
    let mut runs = Vec::new();
    let mut i = 0;
    while i < ops.len() {
        if !elementwise(&ops[i]) {
            i += 1;
            continue;
        }
        let rows = ops[i].v[0].shape[0];
        let mut written: Vec<&Arr> = Vec::new();
        let mut seen: Vec<&Arr> = Vec::new();
        let mut j = i;
        while j < ops.len() && elementwise(&ops[j]) && ops[j].v[0].shape[0] == rows {
            let (out, vs) = (&ops[j].v[0], views(&ops[j]));
            let fits = vs.iter().all(|v| written.iter().all(|w| compatible(v, w)))
                && vs
                    .iter()
                    .chain(seen.iter().copied())
                    .all(|v| compatible(v, out));
            if !fits {
                break;
            }
            written.push(out);
            seen.extend(vs.iter());
            j += 1;
        }
        if j - i >= 2 {
            let mut distinct: Vec<&Arr> = Vec::new();
            for v in &seen {
                if !distinct.iter().any(|d| same_view(d, v)) {
                    distinct.push(v);
                }
            }
            let per_row: usize = distinct.iter().map(|v| row_bytes(v)).sum();
            if per_row * rows >= MIN_RUN_BYTES {
                runs.push(Run {
                    start: i,
                    end: j,
                    rows: (budget / per_row.max(1)).clamp(1, rows),
                    apart: false,
                });
            }
            i = j;
        } else {
            i += 1;
        }
    }
    runs
}

/// The tile budget: half of this core's L2 (the other half keeps what the next tile and
/// the other ops need).
pub fn budget() -> usize {
    cpuinfo::caches().l2.size / 2
}

/// rows r0..r1 of a view (every view of a run has the run's rows on dim 0)
fn slice_rows(v: &mut Arr, r0: usize, r1: usize) {
    v.ptr = v.ptr.wrapping_offset(r0 as isize * v.st[0] * 4);
    v.shape[0] = r1 - r0;
}

/// Run ops[run.start..run.end] tile by tile over the pool; `finished` gets each op's
/// result (its first error on any tile), in order.
pub fn run(
    pool: &Pool,
    ops: &[Op],
    run: Run,
    finished: &mut dyn FnMut(Result<(), (&'static str, KernelError)>),
) {
    let group = &ops[run.start..run.end];
    let rows = group[0].v[0].shape[0];
    let tiles = rows.div_ceil(run.rows);
    let serial = Pool::new(1); // the kernels run inside a task: no nested fork-join
    let errors: Mutex<Vec<Option<KernelError>>> = Mutex::new(vec![None; group.len()]);
    pool.run(tiles, &|t| {
        let (r0, r1) = (t * run.rows, ((t + 1) * run.rows).min(rows));
        for (k, op) in group.iter().enumerate() {
            let mut tile = *op;
            for v in tile.v[..1 + op.def.contract.inputs()].iter_mut() {
                slice_rows(v, r0, r1);
            }
            if let Err(e) = (op.def.kernel)(&serial, &tile) {
                errors.lock().unwrap()[k].get_or_insert(e);
            }
        }
    });
    for (op, e) in group.iter().zip(errors.into_inner().unwrap()) {
        finished(e.map_or(Ok(()), |e| Err((op.def.name, e))));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::OPS;
    use crate::view::DType;

    fn def(name: &str) -> &'static crate::ops::OpDef {
        OPS.iter().find(|d| d.name == name).unwrap()
    }

    fn op(name: &str, vs: &[Arr]) -> Op<'static> {
        let mut v = [vs[0]; 5];
        v[..vs.len()].copy_from_slice(vs);
        Op {
            def: def(name),
            v,
            naxes: 0,
            value: 0.0,
            ignore: None,
            int_value: None,
            diagonal: 0,
            threshold: 0,
            steps: [0, 0],
            src: &[],
        }
    }

    fn arr(buf: &mut [f32], off: usize, shape: &[usize], st: &[isize]) -> Arr {
        Arr::new(
            // SAFETY: each test's layout fits its buffer: off is within buf
            unsafe { buf.as_mut_ptr().add(off) } as *mut u8,
            DType::F32,
            shape,
            st,
        )
    }

    /// (rows, cols) contiguous at `off` floats
    fn mat(buf: &mut [f32], off: usize, r: usize, c: usize) -> Arr {
        arr(buf, off, &[r, c], &[c as isize, 1])
    }

    #[test]
    fn runs_stop_where_a_view_overlaps_a_written_one_differently() {
        let (r, c) = (512, 512); // 1 MiB a view
        let n = r * c;
        let mut buf = vec![0f32; 6 * n];
        let (x, b, y, z, w) = (
            mat(&mut buf, 0, r, c),
            arr(&mut buf, n, &[r, c], &[0, 1]), // a bias row, broadcast
            mat(&mut buf, 2 * n, r, c),
            mat(&mut buf, 3 * n, r, c),
            mat(&mut buf, 4 * n, r, c),
        );
        let yt = arr(&mut buf, 2 * n, &[r, c], &[1, c as isize]); // y transposed
                                                                  // y = x + b; z = tanh(y); y = z * z (in place over y, same view): one run
        let ops = [
            op("add", &[y, x, b]),
            op("tanh", &[z, y]),
            op("mul", &[y, z, z]),
        ];
        let runs = plan(&ops, 1 << 20);
        assert_eq!(runs.len(), 1);
        assert_eq!((runs[0].start, runs[0].end), (0, 3));
        // per row: x, b (0: broadcast on rows), y, z = 3 * 2 KiB -> 1 MiB / 6 KiB rows
        assert_eq!(runs[0].rows, (1 << 20) / (3 * c * 4));
        // reading y transposed after writing y: cut there
        let ops = [
            op("add", &[y, x, b]),
            op("tanh", &[z, y]),
            op("exp", &[w, yt]),
        ];
        assert_eq!(plan(&ops, 1 << 20)[0].end, 2);
        // writing over x after it was read transposed: cut
        let xt = arr(&mut buf, 0, &[r, c], &[1, c as isize]);
        let ops = [op("exp", &[y, xt]), op("neg", &[x, z])];
        assert!(plan(&ops, 1 << 20).is_empty());
        // a matmul between elementwise ops ends the run; small runs are left alone
        let small = mat(&mut buf, 5 * n, 2, 8);
        let ops = [op("neg", &[small, small]), op("exp", &[small, small])];
        assert!(plan(&ops, 1 << 20).is_empty());
    }

    #[test]
    fn a_tiled_run_gives_what_the_ops_one_by_one_give() {
        let (r, c) = (301, 1000);
        let n = r * c;
        let mut buf: Vec<f32> = (0..5 * n)
            .map(|i| ((i * 7919 % 1000) as f32) / 250.0 - 2.0)
            .collect();
        let x = mat(&mut buf, 0, r, c);
        let b = arr(&mut buf, n, &[r, c], &[0, 1]);
        let y = mat(&mut buf, 2 * n, r, c);
        let z = mat(&mut buf, 3 * n, r, c);
        let ops = [
            op("add", &[y, x, b]),
            op("tanh", &[z, y]),
            op("mul", &[y, z, z]),
            op("sub", &[z, y, x]),
        ];
        for threads in [1, 2] {
            let pool = Pool::new(threads);
            let mut want = buf.clone();
            let shift = |v: &Arr, to: &mut Vec<f32>| {
                let mut v = *v;
                v.ptr =
                    (v.ptr as usize - buf.as_ptr() as usize + to.as_mut_ptr() as usize) as *mut u8;
                v
            };
            for o in &ops {
                let mut e = *o;
                for v in e.v.iter_mut() {
                    *v = shift(v, &mut want);
                }
                (e.def.kernel)(&pool, &e).unwrap();
            }
            let mut got = buf.clone();
            let moved: Vec<Op> = ops
                .iter()
                .map(|o| {
                    let mut e = *o;
                    for v in e.v.iter_mut() {
                        *v = shift(v, &mut got);
                    }
                    e
                })
                .collect();
            let runs = plan(&moved, 64 << 10); // 64 KiB tiles: many, and a partial last
            assert_eq!(runs.len(), 1);
            assert!(runs[0].rows < r && r % runs[0].rows != 0);
            let mut results = vec![];
            run(&pool, &moved, runs[0], &mut |res| results.push(res.is_ok()));
            assert_eq!(results, vec![true; 4]);
            assert!(got
                .iter()
                .zip(&want)
                .all(|(a, b)| a.to_bits() == b.to_bits()));
        }
    }

    #[test]
    fn a_multi_tensor_pass_gives_what_the_updates_one_by_one_give() {
        // four parameters of uneven sizes (pieces cut unevenly), p, g, m, v back to back
        let sizes = [70_001usize, 7, 33 * 65, 20_000];
        let total: usize = sizes.iter().sum();
        let mut buf: Vec<f32> = (0..4 * total + 10)
            .map(|i| ((i * 7919 % 1000) as f32) / 500.0 - 1.0)
            .collect();
        let s_at = 4 * total;
        let scalars = [0.9, 0.1, 0.99, 0.01, 1e-8, 1.2, -1e-3, 0.999, 0.0, 0.0];
        buf[s_at..].copy_from_slice(&scalars);
        for v in buf[..4 * total].iter_mut() {
            *v = v.abs(); // (v, the second moment, must be >= 0)
        }
        let mut at = 0;
        let mut ops = Vec::new();
        for &n in &sizes {
            let mut views: Vec<Arr> = (0..4)
                .map(|k| arr(&mut buf, at + k * n, &[n], &[1]))
                .collect();
            views.push(arr(&mut buf, s_at, &[10], &[1]));
            ops.push(op("adam_update", &views));
            at += 4 * n;
        }
        let runs = plan_apart(&ops);
        assert_eq!(runs.len(), 1);
        assert_eq!((runs[0].start, runs[0].end, runs[0].apart), (0, 4, true));
        for threads in [1, 2] {
            let pool = Pool::new(threads);
            let shift = |v: &Arr, from: &[f32], to: &mut [f32]| {
                let mut v = *v;
                v.ptr =
                    (v.ptr as usize - from.as_ptr() as usize + to.as_mut_ptr() as usize) as *mut u8;
                v
            };
            let moved = |to: &mut Vec<f32>| -> Vec<Op> {
                ops.iter()
                    .map(|o| {
                        let mut e = *o;
                        for v in e.v.iter_mut() {
                            *v = shift(v, &buf, to);
                        }
                        e
                    })
                    .collect()
            };
            let mut want = buf.clone();
            for o in moved(&mut want) {
                (o.def.kernel)(&pool, &o).unwrap();
            }
            let mut got = buf.clone();
            let mut results = vec![];
            run_apart(&pool, &moved(&mut got), runs[0], &mut |r| {
                results.push(r.is_ok())
            });
            assert_eq!(results, vec![true; 4]);
            assert!(got
                .iter()
                .zip(&want)
                .all(|(a, b)| a.to_bits() == b.to_bits()));
            assert!(got.iter().zip(&buf).any(|(a, b)| a != b));
        }
        // an update whose p is another's m: never in one pass with it
        let mut clash = ops.clone();
        clash[1].v[0] = ops[0].v[2];
        clash[1].v[0].shape[0] = sizes[1];
        assert!(plan_apart(&clash).iter().all(|r| r.start >= 1));
    }
}
