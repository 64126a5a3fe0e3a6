//! lstm_cell / lstm_cell_grad: one LSTM step's elementwise work, one pass over each row
//! (ops.py's rows; issue 42). Every operand is (N, ..) and is read as planes of N rows:
//! the four gates of an (N, 4H) view (columns kH .. (k + 1)H), the cells and their
//! gradients of the state views. A row is walked a vector of W columns at a time (any
//! column stride: contiguous loads, else gathered lanes), with the unary kernels' sigmoid
//! and tanh (math.rs), each product and sum a separate instruction (never a fused
//! multiply-add), in the order of ops.py's contract: the bits of the composite of unary
//! and binary ops it replaces. f64 runs the same formulas in scalar code (std's tanh,
//! math64's sigmoid, as typed.rs's f64 unary ops). Rows are split over the pool.

use crate::arch::{dispatch_on, Isa, Kernel, Simd};
use crate::elementwise;
use crate::math;
use crate::math64;
use crate::runtime::{KResult, Pool};
use crate::view::{chunk, one_float_dtype, split_count, Arr, DType};

/// (N * H) elements per pool task at least (each does five transcendental functions)
const PAR_MIN: usize = 1 << 12;

/// One (N, cols) plane of an operand: element (r, j) at p + r * rs + j * cs (elements).
#[derive(Clone, Copy)]
struct Plane<T> {
    p: *mut T,
    rs: isize,
    cs: isize,
}

impl<T> Plane<T> {
    /// The plane of `v` at element offset `off` from its origin, rows along dim 0 and
    /// columns along its last dim.
    fn of(v: &Arr, off: isize) -> Plane<T> {
        Plane {
            p: (v.ptr as *mut T).wrapping_offset(off),
            rs: v.st[0],
            cs: v.st[v.nd - 1],
        }
    }
    /// # Safety
    /// (r, j) inside the validated view the plane was made from
    #[inline(always)]
    unsafe fn at(&self, r: usize, j: usize) -> *mut T {
        self.p.offset(r as isize * self.rs + j as isize * self.cs)
    }
}

/// The four gate planes of an (N, 4H) view.
fn gates<T>(v: &Arr, hs: usize) -> [Plane<T>; 4] {
    let step = hs as isize * v.st[1];
    [0, 1, 2, 3].map(|k| Plane::of(v, k * step))
}

/// The operands of one op, as planes: lstm_cell: x, r, a (4 gates each), then c_prev, c
/// and out; lstm_cell_grad: a (4 gates), c_prev, c, dc, dc_prev, dh, r, then out's 4.
#[derive(Clone, Copy)]
struct Step<T> {
    p: [Plane<T>; 15],
    hs: usize,
    lo: usize,
    hi: usize,
}
// SAFETY: planes of validated views; tasks write disjoint rows (record.rs checked that no
// written view overlaps another view, or itself)
unsafe impl<T> Send for Step<T> {}
// SAFETY: as for Send
unsafe impl<T> Sync for Step<T> {}

// the plane indices of each op
const X: usize = 0;
const R: usize = 4;
const A: usize = 8;
const CP: usize = 12;
const C: usize = 13;
const H: usize = 14;
const GA: usize = 0;
const GCP: usize = 4;
const GC: usize = 5;
const GDC: usize = 6;
const GDCP: usize = 7;
const GDH: usize = 8;
const GR: usize = 9;
const GOUT: usize = 10;

/// `n` lanes of row r of a plane from column j (elementwise.rs's strided load)
///
/// # Safety
/// inside a function compiled for S; lanes inside the plane's view
#[inline(always)]
unsafe fn ld<S: Simd>(m: &Plane<f32>, r: usize, j: usize, n: usize) -> S::F {
    elementwise::ld::<S>(m.at(r, j), m.cs, n)
}

/// store the first `n` lanes of v into row r of a plane from column j
///
/// # Safety
/// inside a function compiled for S; lanes inside the plane's (written) view
#[inline(always)]
unsafe fn st<S: Simd>(m: &Plane<f32>, r: usize, j: usize, v: S::F, n: usize) {
    elementwise::st::<S>(m.at(r, j), m.cs, v, n)
}

/// lstm_cell in f32 over rows lo..hi
struct CellK(Step<f32>);
impl Kernel for CellK {
    type Out = ();
    #[inline(always)]
    fn run<S: Simd>(self) {
        let Step { p, hs, lo, hi } = self.0;
        // SAFETY: every (row, column) below is inside the validated views (N rows, H
        // columns a plane); the written planes (a, c, out) overlap no other view
        unsafe {
            for row in lo..hi {
                let mut j = 0;
                while j < hs {
                    let n = S::W.min(hs - j);
                    let mut act = [S::zero(); 4];
                    for (k, v) in act.iter_mut().enumerate() {
                        let z =
                            S::add(ld::<S>(&p[X + k], row, j, n), ld::<S>(&p[R + k], row, j, n));
                        *v = if k == 2 {
                            math::tanh::<S>(z)
                        } else {
                            math::sigmoid::<S>(z)
                        };
                        st::<S>(&p[A + k], row, j, *v, n);
                    }
                    let [ai, af, ag, ao] = act;
                    let cp = ld::<S>(&p[CP], row, j, n);
                    let c = S::add(S::mul(af, cp), S::mul(ai, ag));
                    st::<S>(&p[C], row, j, c, n);
                    st::<S>(&p[H], row, j, S::mul(ao, math::tanh::<S>(c)), n);
                    j += n;
                }
            }
        }
    }
}

/// lstm_cell_grad in f32 over rows lo..hi
struct CellGradK(Step<f32>);
impl Kernel for CellGradK {
    type Out = ();
    #[inline(always)]
    fn run<S: Simd>(self) {
        let Step { p, hs, lo, hi } = self.0;
        // SAFETY: as CellK's: inside the validated views; the written planes (out,
        // dc_prev) overlap no other view
        unsafe {
            let one = S::splat(1.0);
            for row in lo..hi {
                let mut j = 0;
                while j < hs {
                    let n = S::W.min(hs - j);
                    let ai = ld::<S>(&p[GA], row, j, n);
                    let af = ld::<S>(&p[GA + 1], row, j, n);
                    let ag = ld::<S>(&p[GA + 2], row, j, n);
                    let ao = ld::<S>(&p[GA + 3], row, j, n);
                    let d = S::add(ld::<S>(&p[GDH], row, j, n), ld::<S>(&p[GR], row, j, n));
                    let t = math::tanh::<S>(ld::<S>(&p[GC], row, j, n));
                    let dc = S::add(
                        S::mul(S::mul(d, ao), S::sub(one, S::mul(t, t))),
                        ld::<S>(&p[GDC], row, j, n),
                    );
                    let fi = S::mul(ag, S::mul(ai, S::sub(one, ai)));
                    st::<S>(&p[GOUT], row, j, S::mul(dc, fi), n);
                    let cp = ld::<S>(&p[GCP], row, j, n);
                    let ff = S::mul(cp, S::mul(af, S::sub(one, af)));
                    st::<S>(&p[GOUT + 1], row, j, S::mul(dc, ff), n);
                    let fg = S::mul(ai, S::sub(one, S::mul(ag, ag)));
                    st::<S>(&p[GOUT + 2], row, j, S::mul(dc, fg), n);
                    let fo = S::mul(t, S::mul(ao, S::sub(one, ao)));
                    st::<S>(&p[GOUT + 3], row, j, S::mul(d, fo), n);
                    st::<S>(&p[GDCP], row, j, S::mul(dc, af), n);
                    j += n;
                }
            }
        }
    }
}

/// lstm_cell in f64 (scalar) over rows lo..hi
///
/// # Safety
/// the step's planes are of validated views
unsafe fn cell64(s: &Step<f64>) {
    let p = &s.p;
    for row in s.lo..s.hi {
        for j in 0..s.hs {
            let mut act = [0f64; 4];
            for (k, v) in act.iter_mut().enumerate() {
                let z = *p[X + k].at(row, j) + *p[R + k].at(row, j);
                *v = if k == 2 { z.tanh() } else { math64::sigmoid(z) };
                *p[A + k].at(row, j) = *v;
            }
            let [ai, af, ag, ao] = act;
            let c = af * *p[CP].at(row, j) + ai * ag;
            *p[C].at(row, j) = c;
            *p[H].at(row, j) = ao * c.tanh();
        }
    }
}

/// lstm_cell_grad in f64 (scalar) over rows lo..hi
///
/// # Safety
/// the step's planes are of validated views
unsafe fn cell_grad64(s: &Step<f64>) {
    let p = &s.p;
    for row in s.lo..s.hi {
        for j in 0..s.hs {
            let [ai, af, ag, ao] = [0, 1, 2, 3].map(|k| *p[GA + k].at(row, j));
            let d = *p[GDH].at(row, j) + *p[GR].at(row, j);
            let t = (*p[GC].at(row, j)).tanh();
            let dc = (d * ao) * (1.0 - t * t) + *p[GDC].at(row, j);
            *p[GOUT].at(row, j) = dc * (ag * (ai * (1.0 - ai)));
            *p[GOUT + 1].at(row, j) = dc * (*p[GCP].at(row, j) * (af * (1.0 - af)));
            *p[GOUT + 2].at(row, j) = dc * (ai * (1.0 - ag * ag));
            *p[GOUT + 3].at(row, j) = d * (t * (ao * (1.0 - ao)));
            *p[GDCP].at(row, j) = dc * af;
        }
    }
}

/// The planes of an op's views (out first, as record.rs holds them).
fn planes<T: Copy>(v: &[Arr], grad: bool) -> Step<T> {
    let out = &v[0];
    let hs = if grad { out.shape[1] / 4 } else { out.shape[1] };
    let none = Plane {
        p: std::ptr::null_mut(),
        rs: 0,
        cs: 0,
    };
    let mut p = [none; 15];
    if grad {
        let (a, s) = (&v[1], &v[2]);
        p[GA..GA + 4].copy_from_slice(&gates(a, hs));
        for (k, (i, g)) in [(0, 0), (1, 0), (1, 1), (0, 1)].into_iter().enumerate() {
            p[GCP + k] = Plane::of(s, i * s.st[1] + g * s.st[2]);
        }
        p[GDH] = Plane::of(&v[3], 0);
        p[GR] = Plane::of(&v[4], 0);
        p[GOUT..GOUT + 4].copy_from_slice(&gates(out, hs));
    } else {
        p[X..X + 4].copy_from_slice(&gates(&v[1], hs));
        p[R..R + 4].copy_from_slice(&gates(&v[2], hs));
        p[A..A + 4].copy_from_slice(&gates(&v[3], hs));
        p[CP] = Plane::of(&v[4], 0);
        p[C] = Plane::of(&v[4], v[4].st[1]);
        p[H] = Plane::of(out, 0);
    }
    Step {
        p,
        hs,
        lo: 0,
        hi: out.shape[0],
    }
}

/// Run lstm_cell (grad = false) or lstm_cell_grad on views checked by `check_views`
/// (`v`: out, then the 4 inputs).
pub fn run(pool: &Pool, v: &[Arr], grad: bool) -> KResult {
    run_on(pool, v, grad, crate::arch::active())
}

/// `run` with the f32 kernels compiled for `isa` (tests run each supported one)
fn run_on(pool: &Pool, v: &[Arr], grad: bool, isa: Isa) -> KResult {
    let rows = v[0].shape[0];
    let hs = if grad {
        v[0].shape[1] / 4
    } else {
        v[0].shape[1]
    };
    let parts = split_count(rows * hs, pool.threads(), PAR_MIN).min(rows.max(1));
    if rows * hs == 0 {
        return Ok(());
    }
    if v[0].dtype == DType::F64 {
        let base = planes::<f64>(v, grad);
        pool.run(parts, &|t| {
            let (lo, hi) = chunk(rows, parts, t, 1);
            let base = &base;
            let s = Step { lo, hi, ..*base };
            // SAFETY: planes of views check_views validated; tasks take disjoint rows
            unsafe {
                if grad {
                    cell_grad64(&s)
                } else {
                    cell64(&s)
                }
            }
        });
    } else {
        let base = planes::<f32>(v, grad);
        pool.run(parts, &|t| {
            let (lo, hi) = chunk(rows, parts, t, 1);
            let base = &base;
            let s = Step { lo, hi, ..*base };
            if lo < hi {
                if grad {
                    dispatch_on(isa, CellGradK(s))
                } else {
                    dispatch_on(isa, CellK(s))
                }
            }
        });
    }
    Ok(())
}

/// the byte range [lo, hi) a view can touch (its extremes), empty for no elements
fn span(v: &Arr) -> (isize, isize) {
    let base = v.ptr as isize;
    if v.numel() == 0 {
        return (base, base);
    }
    let (mut lo, mut hi) = (0isize, 0isize);
    for d in 0..v.nd {
        let e = (v.shape[d] as isize - 1) * v.st[d];
        if e < 0 {
            lo += e
        } else {
            hi += e
        }
    }
    let item = v.itemsize() as isize;
    (base + lo * item, base + (hi + 1) * item)
}

/// no two elements of v at one address: its dims, by stride, each step past the inner
/// ones' reach (a sufficient rule; negative and zero strides refused)
fn distinct(v: &Arr) -> bool {
    let mut dims: Vec<(isize, usize)> = (0..v.nd)
        .filter(|&d| v.shape[d] > 1)
        .map(|d| (v.st[d], v.shape[d]))
        .collect();
    dims.sort();
    let mut reach = 0isize;
    for (s, n) in dims {
        if s <= reach {
            return false;
        }
        reach += (n as isize - 1) * s;
    }
    true
}

/// ops.py's contracts: lstm_cell: out h (N, H) contiguous, x, r, a (N, 4H), s (N, 2, H);
/// lstm_cell_grad: out (N, 4H) contiguous, a (N, 4H), s (N, 2, 2, H), dh, r (N, H); one
/// float dtype; any strides; the written views (out, and the inputs in `writes`) each
/// free of repeated elements and disjoint from every other view.
pub fn check_views(v: &[Arr], grad: bool, writes: &[usize]) -> Result<(), String> {
    let names: [&str; 5] = if grad {
        ["out", "a", "s", "dh", "r"]
    } else {
        ["out", "x", "r", "a", "s"]
    };
    one_float_dtype(v, &names)?;
    if !v[0].is_contiguous() {
        return Err(format!(
            "out must be contiguous, strides {:?}",
            v[0].strides()
        ));
    }
    let (n, hs) = match v[0].shape() {
        [n, w] if !grad => (*n, *w),
        [n, w] if w % 4 == 0 => (*n, w / 4),
        s => {
            return Err(format!(
                "out shape {s:?}: want (N, H) or, for the grad, (N, 4H)"
            ))
        }
    };
    let want: [&[usize]; 5] = if grad {
        [
            &[n, 4 * hs],
            &[n, 4 * hs],
            &[n, 2, 2, hs],
            &[n, hs],
            &[n, hs],
        ]
    } else {
        [
            &[n, hs],
            &[n, 4 * hs],
            &[n, 4 * hs],
            &[n, 4 * hs],
            &[n, 2, hs],
        ]
    };
    for ((x, name), shape) in v.iter().zip(names).zip(want) {
        if x.shape() != shape {
            return Err(format!("{name} shape {:?}, want {shape:?}", x.shape()));
        }
    }
    let written: Vec<usize> = std::iter::once(0)
        .chain(writes.iter().map(|k| k + 1))
        .collect();
    for &w in &written {
        if !distinct(&v[w]) {
            return Err(format!(
                "{} (written) repeats elements: strides {:?}",
                names[w],
                v[w].strides()
            ));
        }
        let (lo, hi) = span(&v[w]);
        for (k, x) in v.iter().enumerate() {
            let (xl, xh) = span(x);
            if k != w && lo < hi && xl < xh && lo < xh && xl < hi {
                return Err(format!("{} (written) overlaps {}", names[w], names[k]));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sig(x: f32) -> f32 {
        1.0 / (1.0 + (-x).exp())
    }

    /// forward then backward on (3, 2H) gates with H = 19 (a partial vector), x strided
    /// (its columns 2 apart), against scalar f64 formulas; refusals of bad views
    #[test]
    fn cell_and_grad_follow_the_formulas() {
        let pool = Pool::new(2);
        let (n, hs) = (3usize, 19usize);
        let g4 = 4 * hs;
        let mut xbuf: Vec<f32> = (0..n * g4 * 2)
            .map(|i| (i as f32 * 0.37).sin() * 2.0)
            .collect();
        let mut rbuf: Vec<f32> = (0..n * g4).map(|i| (i as f32 * 0.11).cos()).collect();
        let mut a = vec![0f32; n * g4];
        let mut s = vec![0f32; n * 2 * 2 * hs]; // (N, 2, 2, H): [c_prev, dc_prev], [c, dc]
        for r in 0..n {
            for j in 0..hs {
                s[r * 4 * hs + j] = (j as f32 * 0.3 - 1.0) * (r as f32 + 1.0);
                s[r * 4 * hs + 3 * hs + j] = 0.25 - j as f32 * 0.01; // dc
            }
        }
        let mut h = vec![0f32; n * hs];
        let x = Arr::new(
            xbuf.as_mut_ptr() as *mut u8,
            DType::F32,
            &[n, g4],
            &[2 * g4 as isize, 2],
        );
        let rv = Arr::f32s(&mut rbuf, &[n, g4]);
        let av = Arr::f32s(&mut a, &[n, g4]);
        let sp = s.as_mut_ptr() as *mut u8;
        let cells = Arr::new(
            sp,
            DType::F32,
            &[n, 2, hs],
            &[4 * hs as isize, 2 * hs as isize, 1],
        );
        let hv = Arr::f32s(&mut h, &[n, hs]);
        let fwd = [hv, x, rv, av, cells];
        check_views(&fwd, false, &[2, 3]).unwrap();
        for isa in Isa::all_supported() {
            run_on(&pool, &fwd, false, isa).unwrap();
            for r in 0..n {
                for j in 0..hs {
                    let z =
                        |k: usize| xbuf[r * 2 * g4 + 2 * (k * hs + j)] + rbuf[r * g4 + k * hs + j];
                    let (ai, af, ag, ao) = (sig(z(0)), sig(z(1)), z(2).tanh(), sig(z(3)));
                    let c = af * s[r * 4 * hs + j] + ai * ag;
                    let close = |x: f32, y: f32| (x - y).abs() <= 3e-6 * (1.0 + y.abs());
                    assert!(close(a[r * g4 + j], ai) && close(a[r * g4 + 3 * hs + j], ao));
                    assert!(
                        close(s[r * 4 * hs + 2 * hs + j], c),
                        "{isa:?} c at {r}, {j}"
                    );
                    assert!(close(h[r * hs + j], ao * c.tanh()), "{isa:?} h at {r}, {j}");
                }
            }
        }
        let mut dh: Vec<f32> = (0..n * hs).map(|i| (i as f32 * 0.7).sin()).collect();
        let mut rr: Vec<f32> = (0..n * hs).map(|i| (i as f32 * 0.3).cos() * 0.5).collect();
        let mut out = vec![0f32; n * g4];
        let sv = Arr::new(
            sp,
            DType::F32,
            &[n, 2, 2, hs],
            &[4 * hs as isize, 2 * hs as isize, hs as isize, 1],
        );
        let bwd = [
            Arr::f32s(&mut out, &[n, g4]),
            Arr::f32s(&mut a, &[n, g4]),
            sv,
            Arr::f32s(&mut dh, &[n, hs]),
            Arr::f32s(&mut rr, &[n, hs]),
        ];
        check_views(&bwd, true, &[1]).unwrap();
        for isa in Isa::all_supported() {
            run_on(&pool, &bwd, true, isa).unwrap();
        }
        for r in 0..n {
            for j in 0..hs {
                let at = |k: usize| a[r * g4 + k * hs + j] as f64;
                let (ai, af, ag, ao) = (at(0), at(1), at(2), at(3));
                let st = |k: usize| s[r * 4 * hs + k * hs + j] as f64;
                let (cp, c, dcn) = (st(0), st(2), st(3));
                let d = (dh[r * hs + j] + rr[r * hs + j]) as f64;
                let t = c.tanh();
                let dc = d * ao * (1.0 - t * t) + dcn;
                let want = [
                    dc * ag * ai * (1.0 - ai),
                    dc * cp * af * (1.0 - af),
                    dc * ai * (1.0 - ag * ag),
                    d * t * ao * (1.0 - ao),
                ];
                for (k, w) in want.iter().enumerate() {
                    let got = out[r * g4 + k * hs + j] as f64;
                    assert!(
                        (got - w).abs() <= 1e-5 * (1.0 + w.abs()),
                        "gate {k} at {r}, {j}"
                    );
                }
                assert!((st(1) - dc * af).abs() <= 1e-5 * (1.0 + dc.abs()));
            }
        }
        // refused: a written view overlapping an input, a shape off, mixed dtypes
        let bad = [bwd[0], bwd[1], sv, bwd[1], bwd[4]];
        assert!(check_views(&bad, true, &[1])
            .unwrap_err()
            .contains("dh shape"));
        let overlap = [bwd[0], bwd[0], sv, bwd[3], bwd[4]];
        assert!(check_views(&overlap, true, &[1])
            .unwrap_err()
            .contains("overlaps"));
        let repeated = Arr::new(
            sp,
            DType::F32,
            &[n, 2, 2, hs],
            &[0, 2 * hs as isize, hs as isize, 1],
        );
        let rep = [bwd[0], bwd[1], repeated, bwd[3], bwd[4]];
        assert!(check_views(&rep, true, &[1])
            .unwrap_err()
            .contains("repeats"));
    }
}
