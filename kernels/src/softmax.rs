//! Row-wise softmax, log_softmax, cross_entropy and its gradient, fused.
//!
//! Each row is max-shifted (so exp never overflows): pass 1 finds the row
//! max, pass 2 evaluates exp(x - max) once per element (stored for softmax,
//! only summed for the others), pass 3 scales or shifts. The row is in L1 for
//! passes 2 and 3, so this reads the input from memory once; NumPy's version
//! makes four full passes with temporaries. A strided row (e.g. softmax of a
//! transposed view) is first gathered into its (contiguous) out row.
//! Rows are split over the pool. cross_entropy(_grad) skip a row whose target is
//! `ignore` (loss 0, count 0, gradient row 0); a cross_entropy out of (R, 2) gets
//! each row's 0/1 count beside its loss (one sum then gives the mean's divisor).

use crate::arch::{dispatch, Kernel, Simd};
use crate::math;
use crate::runtime::{KResult, KernelError, Pool};
use crate::view::{chunk, split_tasks, Arr};

#[inline(always)]
pub(crate) unsafe fn row_max<S: Simd>(p: *const f32, n: usize) -> f32 {
    let w = S::W;
    let mut a0 = S::splat(f32::NEG_INFINITY);
    let mut a1 = a0;
    let mut nan = S::isnan(S::zero());
    let mut i = 0;
    while i + 2 * w <= n {
        let x0 = S::load(p.add(i));
        let x1 = S::load(p.add(i + w));
        nan = S::mor(nan, S::mor(S::isnan(x0), S::isnan(x1)));
        a0 = S::max(x0, a0);
        a1 = S::max(x1, a1);
        i += 2 * w;
    }
    while i < n {
        let m = (n - i).min(w);
        let x = S::load_upto(p.add(i), m, f32::NEG_INFINITY);
        nan = S::mor(nan, S::isnan(x));
        a0 = S::max(x, a0);
        i += m;
    }
    if S::any(nan) {
        f32::NAN
    } else {
        S::hmax(S::max(a0, a1))
    }
}

/// sum of exp(x - m) over the row; if `store`, also writes exp(x - m) to o
#[inline(always)]
pub(crate) unsafe fn row_exp_sum<S: Simd>(
    p: *const f32,
    o: *mut f32,
    n: usize,
    m: f32,
    store: bool,
) -> f32 {
    if m.is_finite() {
        // every x - m is <= 0 and not NaN (row_max returns NaN for a row holding one)
        row_exp_sum_with::<S, true>(p, o, n, m, store)
    } else {
        // an infinite or NaN max: the general exp gives NaN where IEEE says so
        row_exp_sum_with::<S, false>(p, o, n, m, store)
    }
}

#[inline(always)]
unsafe fn shifted_exp<S: Simd, const NONPOSITIVE: bool>(x: S::F) -> S::F {
    if NONPOSITIVE {
        math::exp_nonpositive::<S>(x)
    } else {
        math::exp::<S>(x)
    }
}

#[inline(always)]
unsafe fn row_exp_sum_with<S: Simd, const NONPOSITIVE: bool>(
    p: *const f32,
    o: *mut f32,
    n: usize,
    m: f32,
    store: bool,
) -> f32 {
    let w = S::W;
    let vm = S::splat(m);
    let mut s0 = S::zero();
    let mut s1 = S::zero();
    let mut tail = 0f32;
    let mut i = 0;
    while i + 2 * w <= n {
        let e0 = shifted_exp::<S, NONPOSITIVE>(S::sub(S::load(p.add(i)), vm));
        let e1 = shifted_exp::<S, NONPOSITIVE>(S::sub(S::load(p.add(i + w)), vm));
        if store {
            S::store(o.add(i), e0);
            S::store(o.add(i + w), e1);
        }
        s0 = S::add(s0, e0);
        s1 = S::add(s1, e1);
        i += 2 * w;
    }
    while i < n {
        let m = (n - i).min(w);
        let x = S::load_upto(p.add(i), m, f32::NEG_INFINITY);
        let e = shifted_exp::<S, NONPOSITIVE>(S::sub(x, vm));
        if m == w {
            if store {
                S::store(o.add(i), e);
            }
            s0 = S::add(s0, e);
        } else {
            // a partial vector: only its first m lanes belong to the row
            let mut buf = [0f32; 16];
            S::store(buf.as_mut_ptr(), e);
            if store {
                std::ptr::copy_nonoverlapping(buf.as_ptr(), o.add(i), m);
            }
            tail += buf[..m].iter().sum::<f32>();
        }
        i += m;
    }
    S::hsum(S::add(s0, s1)) + tail
}

/// o[i] = o[i] * a + b over the row
#[inline(always)]
pub(crate) unsafe fn row_affine<S: Simd>(p: *const f32, o: *mut f32, n: usize, a: f32, b: f32) {
    let w = S::W;
    let (va, vb) = (S::splat(a), S::splat(b));
    let mut i = 0;
    while i + w <= n {
        S::store(o.add(i), S::fma(S::load(p.add(i)), va, vb));
        i += w;
    }
    if i < n {
        S::store_part(
            o.add(i),
            S::fma(S::load_part(p.add(i), n - i, 0.0), va, vb),
            n - i,
        );
    }
}

/// o[i] = (x[i] - a) - b over the row
#[inline(always)]
unsafe fn row_shift2<S: Simd>(p: *const f32, o: *mut f32, n: usize, a: f32, b: f32) {
    let w = S::W;
    let (va, vb) = (S::splat(a), S::splat(b));
    let mut i = 0;
    while i + w <= n {
        S::store(o.add(i), S::sub(S::sub(S::load(p.add(i)), va), vb));
        i += w;
    }
    if i < n {
        S::store_part(
            o.add(i),
            S::sub(S::sub(S::load_part(p.add(i), n - i, 0.0), va), vb),
            n - i,
        );
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Softmax,
    LogSoftmax,
    CrossEntropy,
    CrossEntropyGrad,
}

#[derive(Clone, Copy)]
struct RowsK {
    kind: Kind,
    lo: usize,
    hi: usize,
    cols: usize,
    a: *const f32,
    ars: isize,
    acs: isize,
    o: *mut f32,
    t: *const i32,
    ts: isize,
    g: *const f32,
    gs: isize,
    ignore: Option<i64>,
    /// cross_entropy: out is (R, 2), [loss, count] per row
    pairs: bool,
}

impl RowsK {
    /// where cross_entropy writes row r's loss (its count, if `pairs`, follows it)
    #[inline(always)]
    unsafe fn loss_at(&self, r: usize) -> *mut f32 {
        self.o.add(if self.pairs { 2 * r } else { r })
    }
}

impl Kernel for RowsK {
    type Out = ();
    #[inline(always)]
    fn run<S: Simd>(self) {
        let c = self.cols;
        for r in self.lo..self.hi {
            // SAFETY: rows lo..hi of the validated views; targets range-checked (check_targets)
            unsafe {
                if self.kind == Kind::CrossEntropy || self.kind == Kind::CrossEntropyGrad {
                    let t = *self.t.offset(r as isize * self.ts) as i64;
                    if Some(t) == self.ignore {
                        if self.kind == Kind::CrossEntropy {
                            *self.loss_at(r) = 0.0;
                            if self.pairs {
                                *self.loss_at(r).add(1) = 0.0;
                            }
                        } else {
                            std::ptr::write_bytes(self.o.add(r * c), 0, c);
                        }
                        continue;
                    }
                    if self.pairs {
                        *self.loss_at(r).add(1) = 1.0;
                    }
                }
                let mut p = self.a.offset(r as isize * self.ars);
                let orow = if self.kind == Kind::CrossEntropy {
                    std::ptr::null_mut()
                } else {
                    self.o.add(r * c)
                };
                if self.acs != 1 && !orow.is_null() {
                    for j in 0..c {
                        *orow.add(j) = *p.offset(j as isize * self.acs);
                    }
                    p = orow;
                }
                if self.acs != 1 && orow.is_null() {
                    // cross_entropy of a strided row: scalar (no out row to gather into)
                    let mut m = f32::NEG_INFINITY;
                    for j in 0..c {
                        let x = *p.offset(j as isize * self.acs);
                        m = if x.is_nan() || m.is_nan() {
                            f32::NAN
                        } else {
                            m.max(x)
                        };
                    }
                    let mut s = 0f32;
                    for j in 0..c {
                        s += math::exp::<crate::arch::scalar::Scalar>(
                            *p.offset(j as isize * self.acs) - m,
                        );
                    }
                    let t = *self.t.offset(r as isize * self.ts) as isize;
                    *self.loss_at(r) = s.ln() - (*p.offset(t * self.acs) - m);
                    continue;
                }
                let m = row_max::<S>(p, c);
                match self.kind {
                    Kind::Softmax => {
                        let s = row_exp_sum::<S>(p, orow, c, m, true);
                        row_affine::<S>(orow, orow, c, 1.0 / s, 0.0);
                    }
                    Kind::LogSoftmax => {
                        // (x - m) - ln s, in that order: m + ln s would round away ln s
                        // when |m| is huge
                        let s = row_exp_sum::<S>(p, orow, c, m, false);
                        row_shift2::<S>(p, orow, c, m, s.ln());
                    }
                    Kind::CrossEntropy => {
                        let s = row_exp_sum::<S>(p, orow, c, m, false);
                        let t = *self.t.offset(r as isize * self.ts) as usize;
                        *self.loss_at(r) = s.ln() - (*p.add(t) - m);
                    }
                    Kind::CrossEntropyGrad => {
                        let s = row_exp_sum::<S>(p, orow, c, m, true);
                        let g = *self.g.offset(r as isize * self.gs);
                        row_affine::<S>(orow, orow, c, g / s, 0.0);
                        let t = *self.t.offset(r as isize * self.ts) as usize;
                        *orow.add(t) -= g;
                    }
                }
            }
        }
    }
}

// SAFETY: pointers into validated views; tasks write disjoint rows
unsafe impl Send for RowsK {}
// SAFETY: as for Send: tasks write disjoint rows
unsafe impl Sync for RowsK {}

/// Every target in [0, c) or equal to `ignore`, else an error naming the first bad one.
fn check_targets(t: &Arr, c: usize, ignore: Option<i64>) -> KResult {
    for r in 0..t.shape[0] {
        let v = t.index(r);
        if (v < 0 || v as usize >= c) && Some(v) != ignore {
            return Err(KernelError::index(format!(
                "target class {v} is out of range [0, {c})"
            )));
        }
    }
    Ok(())
}

pub fn rows(
    pool: &Pool,
    kind: Kind,
    out: &Arr,
    a: &Arr,
    t: Option<&Arr>,
    g: Option<&Arr>,
    ignore: Option<i64>,
) -> KResult {
    let (r, c) = (a.shape[0], a.shape[1]);
    if let Some(t) = t {
        check_targets(t, c, ignore)?;
    }
    let mut keep = Vec::new();
    let t32 = t.map(|t| crate::view::idx_i32(t, &mut keep));
    let t = t32.as_ref();
    if r == 0 || (c == 0 && kind != Kind::CrossEntropy) {
        return Ok(());
    }
    let base = RowsK {
        kind,
        lo: 0,
        hi: r,
        cols: c,
        a: a.f(),
        ars: a.st[0],
        acs: a.st[1],
        o: out.f(),
        t: t.map_or(std::ptr::null(), |t| t.i() as *const i32),
        ts: t.map_or(0, |t| t.st[0]),
        g: g.map_or(std::ptr::null(), |g| g.f() as *const f32),
        gs: g.map_or(0, |g| g.st[0]),
        ignore,
        pairs: kind == Kind::CrossEntropy && out.nd == 2,
    };
    // (row ranges: TASKS_PER_THREAD per thread, see split_tasks)
    let n = split_tasks(
        r * c.max(1),
        pool.threads(),
        crate::elementwise::PAR_MIN / 2,
    )
    .min(r);
    pool.run(n, &|i| {
        let (lo, hi) = chunk(r, n, i, 1);
        let base = &base;
        dispatch(RowsK { lo, hi, ..*base });
    });
    Ok(())
}
