//! Fused transformer kernels: GELU and its gradients (elementwise, through `ew::map`),
//! layer norm forward and backward over the rows of (R, C), the causal softmax, and
//! softmax's backward (one row sum of g y, then the output pass over the row, in L1).
//!
//! Layer norm: each row's mean, then its biased variance around the mean (two passes,
//! no cancellation), then one pass writing the output; the backward recomputes the
//! row's mean / rstd, sums g w and g w xhat, and writes dx (and, for a (2, R, C) out,
//! g * xhat beside it: the weight gradient's rows). A row is re-read per pass
//! from L1 / L2 (C floats), so memory sees x (and g) once. Strided rows are gathered
//! into a task-local buffer first; w and b are copied once per op (they may be stride-0
//! constants). Rows are split over the pool.

use crate::arch::{dispatch, Kernel, Simd};
use crate::elementwise::{EwOp, PAR_MIN};
use crate::math;
use crate::runtime::{KResult, Pool};
use crate::softmax::{row_affine, row_exp_sum, row_max};
use crate::view::{chunk, split_count, Arr};

/// erfc(z) e^(z^2) / t as a polynomial in t = 1 / (1 + z / 2), z >= 0: our own fit
/// (weighted least squares, Lawson's iterations toward the minimax of the relative error)
/// on t in [1 / 5.7, 1], z <= 9.4, beyond which e^(-z^2) is below the smallest normal float.
/// Relative error 4.2e-8 in exact arithmetic, 2.2e-7 evaluated in float32 (Horner).
/// One e^(-z^2) then serves the cdf and the pdf (GELU's gradient needs both).
#[allow(clippy::excessive_precision)] // the fitted digits, rounded to f32 by the compiler
const ERFC_Q: [f32; 9] = [
    2.820_879_938_6e-1,
    2.823_480_119_4e-1,
    2.433_002_393_7e-1,
    2.019_165_132_0e-1,
    -2.481_910_140_8e-2,
    2.754_622_799_2e-1,
    -4.849_362_560_2e-1,
    2.834_873_144_5e-1,
    -5.884_703_733_1e-2,
];
#[allow(clippy::excessive_precision)] // rounded to f32 by the compiler
const SQRT_2_OVER_PI: f32 = 0.797_884_56;

/// (Phi(x), e^(-x^2 / 2)): the normal cdf, erfc(|x| / sqrt 2) / 2 below 0 and 1 minus that
/// above, and the Gaussian factor it is made with (phi(x) is that over sqrt(2 pi)).
#[inline(always)]
unsafe fn cdf_and_gauss<S: Simd>(x: S::F) -> (S::F, S::F) {
    let one = S::splat(1.0);
    let z = S::mul(S::abs(x), S::splat(std::f32::consts::FRAC_1_SQRT_2));
    let t = S::div(one, S::fma(S::splat(0.5), z, one));
    let mut q = S::splat(ERFC_Q[8]);
    for c in ERFC_Q[..8].iter().rev() {
        q = S::fma(q, t, S::splat(*c));
    }
    // e^(-z^2) <= 1: the exp without overflow handling (0 below the smallest normal)
    let gauss = math::exp_nonpositive::<S>(S::mul(S::neg(z), z));
    let e = S::mul(S::mul(S::mul(S::splat(0.5), t), q), gauss);
    (S::select(S::lt(x, S::zero()), e, S::sub(one, e)), gauss)
}

/// tanh(sqrt(2/pi) (x + 0.044715 x^3))
#[inline(always)]
unsafe fn tanh_inner<S: Simd>(x: S::F) -> S::F {
    let x3 = S::mul(S::mul(x, x), x);
    math::tanh::<S>(S::mul(
        S::splat(SQRT_2_OVER_PI),
        S::fma(S::splat(0.044715), x3, x),
    ))
}

#[derive(Clone, Copy)]
pub struct Gelu;
impl EwOp<1> for Gelu {
    #[inline(always)]
    unsafe fn apply<S: Simd>([x]: [S::F; 1]) -> S::F {
        S::mul(x, cdf_and_gauss::<S>(x).0)
    }
}

#[derive(Clone, Copy)]
pub struct GeluTanh;
impl EwOp<1> for GeluTanh {
    #[inline(always)]
    unsafe fn apply<S: Simd>([x]: [S::F; 1]) -> S::F {
        S::mul(
            S::mul(S::splat(0.5), x),
            S::add(S::splat(1.0), tanh_inner::<S>(x)),
        )
    }
}

/// g * (Phi(x) + x phi(x))
#[derive(Clone, Copy)]
pub struct GeluGrad;
impl EwOp<2> for GeluGrad {
    #[inline(always)]
    unsafe fn apply<S: Simd>([x, g]: [S::F; 2]) -> S::F {
        let (cdf, gauss) = cdf_and_gauss::<S>(x);
        let pdf = S::mul(gauss, S::splat(0.398_942_3));
        S::mul(g, S::fma(x, pdf, cdf))
    }
}

/// g * (0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3 0.044715 x^2))
#[derive(Clone, Copy)]
pub struct GeluTanhGrad;
impl EwOp<2> for GeluTanhGrad {
    #[inline(always)]
    unsafe fn apply<S: Simd>([x, g]: [S::F; 2]) -> S::F {
        let (one, half) = (S::splat(1.0), S::splat(0.5));
        let t = tanh_inner::<S>(x);
        let du = S::mul(
            S::splat(SQRT_2_OVER_PI),
            S::fma(S::splat(3.0 * 0.044715), S::mul(x, x), one),
        );
        let second = S::mul(S::mul(S::mul(half, x), S::sub(one, S::mul(t, t))), du);
        S::mul(g, S::fma(half, S::add(one, t), second))
    }
}

#[derive(Clone, Copy)]
struct NormK {
    lo: usize,
    hi: usize,
    c: usize,
    x: *const f32,
    xs: [isize; 2],
    /// w (contiguous), and the bias (forward, contiguous) or g (backward, `ys`)
    w: *const f32,
    y: *const f32,
    ys: [isize; 2],
    o: *mut f32,
    /// backward with a (2, R, C) out: plane 1, g * xhat (null: not wanted)
    o2: *mut f32,
    eps: f32,
    grad: bool,
}
// SAFETY: pointers into validated views and buffers that outlive the run; tasks write
// disjoint rows
unsafe impl Send for NormK {}
// SAFETY: as for Send: tasks write disjoint rows
unsafe impl Sync for NormK {}

/// row `r` of a (R, C) view as a contiguous pointer: itself, or gathered into `buf`
unsafe fn row_of(p: *const f32, st: [isize; 2], r: usize, buf: &mut [f32]) -> *const f32 {
    let p = p.offset(r as isize * st[0]);
    if st[1] == 1 {
        return p;
    }
    for (j, v) in buf.iter_mut().enumerate() {
        *v = *p.offset(j as isize * st[1]);
    }
    buf.as_ptr()
}

/// sum of f(x) over the row (the last vector's missing lanes filled with `fill`)
#[inline(always)]
unsafe fn row_sum<S: Simd>(p: *const f32, n: usize, fill: f32, f: impl Fn(S::F) -> S::F) -> f32 {
    let mut acc = S::zero();
    let mut i = 0;
    while i < n {
        let m = (n - i).min(S::W);
        acc = S::add(acc, f(S::load_upto(p.add(i), m, fill)));
        i += m;
    }
    S::hsum(acc)
}

impl Kernel for NormK {
    type Out = ();
    #[inline(always)]
    fn run<S: Simd>(self) {
        let n = self.c;
        let (mut xbuf, mut ybuf) = (vec![0f32; n], vec![0f32; n]);
        // SAFETY: rows lo..hi of the validated (R, C) views; the buffers hold C floats
        unsafe {
            for r in self.lo..self.hi {
                let x = row_of(self.x, self.xs, r, &mut xbuf);
                let mean = row_sum::<S>(x, n, 0.0, |v| v) / n as f32;
                let vm = S::splat(mean);
                let var = row_sum::<S>(x, n, mean, |v| {
                    let d = S::sub(v, vm);
                    S::mul(d, d)
                }) / n as f32;
                let rstd = 1.0 / (var + self.eps).sqrt();
                let vr = S::splat(rstd);
                let o = self.o.add(r * n);
                let y = if self.grad {
                    row_of(self.y, self.ys, r, &mut ybuf)
                } else {
                    self.y
                };
                let (mut sp, mut sq) = (S::zero(), S::zero());
                let mut i = 0;
                while i < n {
                    // forward: out = xhat w + b;  backward: the sums of g w and g w xhat
                    let m = (n - i).min(S::W);
                    let xh = S::mul(S::sub(S::load_upto(x.add(i), m, mean), vm), vr);
                    let wv = S::load_upto(self.w.add(i), m, 0.0);
                    let yv = S::load_upto(y.add(i), m, 0.0);
                    if self.grad {
                        let gw = S::mul(yv, wv);
                        sp = S::add(sp, gw);
                        sq = S::fma(gw, xh, sq);
                    } else {
                        let v = S::fma(xh, wv, yv);
                        if m == S::W {
                            S::store(o.add(i), v)
                        } else {
                            S::store_part(o.add(i), v, m)
                        }
                    }
                    i += m;
                }
                if !self.grad {
                    continue;
                }
                let (mp, mq) = (
                    S::splat(S::hsum(sp) / n as f32),
                    S::splat(S::hsum(sq) / n as f32),
                );
                let mut i = 0;
                while i < n {
                    // dx = rstd (g w - mean(g w) - xhat mean(g w xhat))
                    let m = (n - i).min(S::W);
                    let xh = S::mul(S::sub(S::load_upto(x.add(i), m, mean), vm), vr);
                    let gw = S::mul(
                        S::load_upto(y.add(i), m, 0.0),
                        S::load_upto(self.w.add(i), m, 0.0),
                    );
                    let v = S::mul(vr, S::sub(S::sub(gw, mp), S::mul(xh, mq)));
                    if m == S::W {
                        S::store(o.add(i), v)
                    } else {
                        S::store_part(o.add(i), v, m)
                    }
                    if !self.o2.is_null() {
                        // g * xhat, xhat as the forward's fma(xhat, 1, 0) gives it
                        let o2 = self.o2.add(r * n + i);
                        let v = S::mul(S::load_upto(y.add(i), m, 0.0), S::add(xh, S::zero()));
                        if m == S::W {
                            S::store(o2, v)
                        } else {
                            S::store_part(o2, v, m)
                        }
                    }
                    i += m;
                }
            }
        }
    }
}

fn vector(v: &Arr) -> Vec<f32> {
    (0..v.shape[0])
        // SAFETY: j < shape[0] of the validated vector view
        .map(|j| unsafe { *v.f().offset(j as isize * v.st[0]) })
        .collect()
}

/// layer_norm (y = the bias) or layer_norm_grad (y = g) of the validated views; the
/// backward's out is (R, C) (dx) or (2, R, C) (dx, then g * xhat), contiguous.
pub fn layer_norm(
    pool: &Pool,
    o: &Arr,
    x: &Arr,
    w: &Arr,
    y: &Arr,
    eps: f64,
    grad: bool,
) -> KResult {
    let (r, c) = (x.shape[0], x.shape[1]);
    if r == 0 || c == 0 {
        return Ok(());
    }
    let wv = vector(w);
    let bv = if grad { Vec::new() } else { vector(y) };
    let base = NormK {
        lo: 0,
        hi: r,
        c,
        x: x.f(),
        xs: [x.st[0], x.st[1]],
        w: wv.as_ptr(),
        y: if grad { y.f() } else { bv.as_ptr() },
        ys: if grad { [y.st[0], y.st[1]] } else { [0, 1] },
        o: o.f(),
        o2: if grad && o.nd == 3 {
            // SAFETY: a (2, R, C) out view holds 2 * R * C contiguous floats
            unsafe { o.f().add(r * c) }
        } else {
            std::ptr::null_mut()
        },
        eps: eps as f32,
        grad,
    };
    let n = split_count(r * c, pool.threads(), PAR_MIN / 2).min(r);
    pool.run(n, &|i| {
        let (lo, hi) = chunk(r, n, i, 1);
        let base = &base; // (the whole struct, which is Sync, not its raw fields)
        dispatch(NormK { lo, hi, ..*base });
    });
    Ok(())
}

#[derive(Clone, Copy)]
struct CausalK {
    lo: usize,
    hi: usize,
    tq: usize,
    c: usize,
    a: *const f32,
    st: [isize; 3],
    o: *mut f32,
    diagonal: i64,
}
// SAFETY: pointers into validated views; tasks write disjoint rows
unsafe impl Send for CausalK {}
// SAFETY: as for Send: tasks write disjoint rows
unsafe impl Sync for CausalK {}

impl Kernel for CausalK {
    type Out = ();
    #[inline(always)]
    fn run<S: Simd>(self) {
        let c = self.c;
        for r in self.lo..self.hi {
            let (b, i) = (r / self.tq, r % self.tq);
            // the kept columns [0, lim): j <= i + diagonal
            let lim = (i as i64).saturating_add(self.diagonal).saturating_add(1);
            let lim = lim.clamp(0, c as i64) as usize;
            // SAFETY: rows lo..hi and columns below C of the validated views
            unsafe {
                let orow = self.o.add(r * c);
                let mut p = self
                    .a
                    .offset(b as isize * self.st[0] + i as isize * self.st[1]);
                if self.st[2] != 1 {
                    for j in 0..lim {
                        *orow.add(j) = *p.offset(j as isize * self.st[2]);
                    }
                    p = orow;
                }
                let m = row_max::<S>(p, lim);
                let s = row_exp_sum::<S>(p, orow, lim, m, true);
                row_affine::<S>(orow, orow, lim, 1.0 / s, 0.0);
                // masked columns: 0, or NaN where the row keeps none (s = 0) or holds a NaN
                let masked = 0.0 * (1.0 / s);
                for j in lim..c {
                    *orow.add(j) = masked;
                }
            }
        }
    }
}

/// causal_softmax of a validated (B, Tq, Tk) view.
pub fn causal_softmax(pool: &Pool, o: &Arr, a: &Arr, diagonal: i64) -> KResult {
    let (tq, c) = (a.shape[1], a.shape[2]);
    let r = a.shape[0] * tq;
    if r == 0 || c == 0 {
        return Ok(());
    }
    let base = CausalK {
        lo: 0,
        hi: r,
        tq,
        c,
        a: a.f(),
        st: [a.st[0], a.st[1], a.st[2]],
        o: o.f(),
        diagonal,
    };
    let n = split_count(r * c, pool.threads(), PAR_MIN / 2).min(r);
    pool.run(n, &|i| {
        let (lo, hi) = chunk(r, n, i, 1);
        let base = &base; // (the whole struct, which is Sync, not its raw fields)
        dispatch(CausalK { lo, hi, ..*base });
    });
    Ok(())
}

/// softmax_grad: out = y (g - sum(g y)) over each row of (R, C)
#[derive(Clone, Copy)]
struct SoftmaxGradK {
    lo: usize,
    hi: usize,
    c: usize,
    y: *const f32,
    ys: [isize; 2],
    g: *const f32,
    gs: [isize; 2],
    o: *mut f32,
}
// SAFETY: pointers into validated views; tasks write disjoint rows
unsafe impl Send for SoftmaxGradK {}
// SAFETY: as for Send: tasks write disjoint rows
unsafe impl Sync for SoftmaxGradK {}

impl Kernel for SoftmaxGradK {
    type Out = ();
    #[inline(always)]
    fn run<S: Simd>(self) {
        let n = self.c;
        // (a buffer only for a strided row: row_of hands a contiguous row out as it is)
        let buf = |st: [isize; 2]| vec![0f32; if st[1] == 1 { 0 } else { n }];
        let (mut ybuf, mut gbuf) = (buf(self.ys), buf(self.gs));
        // SAFETY: rows lo..hi of the validated (R, C) views; the buffers hold C floats
        unsafe {
            for r in self.lo..self.hi {
                let y = row_of(self.y, self.ys, r, &mut ybuf);
                let g = row_of(self.g, self.gs, r, &mut gbuf);
                let mut acc = S::zero();
                let mut i = 0;
                while i < n {
                    let m = (n - i).min(S::W);
                    let (gv, yv) = (
                        S::load_upto(g.add(i), m, 0.0),
                        S::load_upto(y.add(i), m, 0.0),
                    );
                    acc = S::fma(gv, yv, acc);
                    i += m;
                }
                let dot = S::splat(S::hsum(acc));
                let o = self.o.add(r * n);
                let mut i = 0;
                while i < n {
                    let m = (n - i).min(S::W);
                    let gv = S::load_upto(g.add(i), m, 0.0);
                    let v = S::mul(S::load_upto(y.add(i), m, 0.0), S::sub(gv, dot));
                    if m == S::W {
                        S::store(o.add(i), v)
                    } else {
                        S::store_part(o.add(i), v, m)
                    }
                    i += m;
                }
            }
        }
    }
}

/// softmax_grad of validated (R, C) views y (softmax's output) and g (its gradient).
pub fn softmax_grad(pool: &Pool, o: &Arr, y: &Arr, g: &Arr) -> KResult {
    let (r, c) = (y.shape[0], y.shape[1]);
    if r == 0 || c == 0 {
        return Ok(());
    }
    let base = SoftmaxGradK {
        lo: 0,
        hi: r,
        c,
        y: y.f(),
        ys: [y.st[0], y.st[1]],
        g: g.f(),
        gs: [g.st[0], g.st[1]],
        o: o.f(),
    };
    let n = split_count(r * c, pool.threads(), PAR_MIN / 2).min(r);
    pool.run(n, &|i| {
        let (lo, hi) = chunk(r, n, i, 1);
        let base = &base; // (the whole struct, which is Sync, not its raw fields)
        dispatch(SoftmaxGradK { lo, hi, ..*base });
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::{dispatch_on, Isa};
    use crate::view::DType;

    #[test]
    fn layer_norm_grad_two_planes_are_dx_and_g_times_the_forward_xhat_bit_for_bit() {
        // rows of 37 (whole vectors and a partial one on every ISA), x read transposed
        // (gathered rows), g contiguous and with a stride-0 row (a broadcast gradient)
        let (rows, cols) = (5, 37);
        let n = rows * cols;
        let xt: Vec<f32> = (0..n).map(|i| ((i * 7) % 11) as f32 / 3.0 - 1.7).collect();
        let g: Vec<f32> = (0..n).map(|i| (i % 13) as f32 / 4.0 - 1.5).collect();
        let w: Vec<f32> = (0..cols).map(|j| 0.5 + j as f32 / 8.0).collect();
        let (ones, zeros) = (vec![1f32; cols], vec![0f32; cols]);
        let xs = [1, rows as isize];
        for isa in Isa::all_supported() {
            for gs in [[cols as isize, 1], [0, 1]] {
                let (mut dx, mut both, mut xhat) =
                    (vec![f32::NAN; n], vec![f32::NAN; 2 * n], vec![f32::NAN; n]);
                let k = |o: *mut f32, o2: *mut f32, w: &[f32], y: &[f32], ys, grad| NormK {
                    lo: 0,
                    hi: rows,
                    c: cols,
                    x: xt.as_ptr(),
                    xs,
                    w: w.as_ptr(),
                    y: y.as_ptr(),
                    ys,
                    o,
                    o2,
                    eps: 1e-5,
                    grad,
                };
                let null = std::ptr::null_mut();
                dispatch_on(isa, k(dx.as_mut_ptr(), null, &w, &g, gs, true));
                let (p0, p1) = both.split_at_mut(n);
                dispatch_on(isa, k(p0.as_mut_ptr(), p1.as_mut_ptr(), &w, &g, gs, true));
                // the recompute it replaces: the forward with w = 1, b = 0
                dispatch_on(
                    isa,
                    k(xhat.as_mut_ptr(), null, &ones, &zeros, [0, 1], false),
                );
                for r in 0..rows {
                    let row: Vec<f64> = (0..cols).map(|j| xt[j * rows + r] as f64).collect();
                    let mean = row.iter().sum::<f64>() / cols as f64;
                    let var =
                        row.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / cols as f64;
                    for j in 0..cols {
                        let (i, gv) = (r * cols + j, g[r * gs[0] as usize + j]);
                        assert_eq!(both[i].to_bits(), dx[i].to_bits(), "{isa:?} dx [{r}, {j}]");
                        let want = gv * xhat[i];
                        assert_eq!(both[n + i].to_bits(), want.to_bits(), "{isa:?} [{r}, {j}]");
                        let exact = gv as f64 * (row[j] - mean) / (var + 1e-5).sqrt();
                        assert!(
                            (both[n + i] as f64 - exact).abs() < 1e-5,
                            "{isa:?} [{r}, {j}]"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn softmax_grad_matches_f64_on_every_isa_and_layout() {
        // rows of 37: whole vectors and a partial one on every ISA; g read transposed
        // (column stride R) and with a stride-0 row (a broadcast gradient)
        let (rows, cols) = (5, 37);
        let mut y: Vec<f32> = (0..rows * cols)
            .map(|i| ((i * 7) % 11) as f32 / 60.0)
            .collect();
        let mut gt: Vec<f32> = (0..rows * cols).map(|i| (i % 13) as f32 - 6.0).collect();
        let yv = Arr::f32s(&mut y, &[rows, cols]);
        let mut out = vec![f32::NAN; rows * cols];
        for isa in Isa::all_supported() {
            for gst in [[1, rows as isize], [0, rows as isize]] {
                let g = Arr::new(gt.as_mut_ptr() as *mut u8, DType::F32, &[rows, cols], &gst);
                let o = Arr::f32s(&mut out, &[rows, cols]);
                let k = SoftmaxGradK {
                    lo: 0,
                    hi: rows,
                    c: cols,
                    y: yv.f(),
                    ys: [cols as isize, 1],
                    g: g.f(),
                    gs: gst,
                    o: o.f(),
                };
                dispatch_on(isa, k);
                for r in 0..rows {
                    let gat = |j: usize| gt[r * gst[0] as usize + j * rows] as f64;
                    let yr = &y[r * cols..(r + 1) * cols];
                    let dot: f64 = (0..cols).map(|j| gat(j) * yr[j] as f64).sum();
                    for j in 0..cols {
                        let want = yr[j] as f64 * (gat(j) - dot);
                        let got = out[r * cols + j] as f64;
                        assert!(
                            (got - want).abs() < 1e-5,
                            "{isa:?} {gst:?} [{r}, {j}]: {got} vs {want}"
                        );
                    }
                }
            }
        }
    }
}
