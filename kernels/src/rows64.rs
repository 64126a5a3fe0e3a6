//! The row ops in float64 (scalar, rows split over the pool): softmax, log_softmax,
//! cross_entropy (+ grad), causal_softmax, softmax_grad, layer_norm (+ grad) and
//! adam_update, with the contracts of their ops.py rows (the f32 kernels are softmax.rs,
//! norm.rs, adam.rs). Each element is computed in f64 with std's exp / ln / sqrt.

use crate::elementwise::PAR_MIN;
use crate::runtime::{KResult, Pool, SendPtr};
use crate::softmax::Kind;
use crate::view::{chunk, split_count, Arr};

/// element (r, j) of a 2-d f64 view
///
/// # Safety
/// r, j inside the validated view
#[inline(always)]
unsafe fn at(a: &Arr, r: usize, j: usize) -> f64 {
    *a.d().offset(r as isize * a.st[0] + j as isize * a.st[1])
}

/// run `f(r)` for rows 0..rows over the pool
fn each_row(pool: &Pool, rows: usize, cols: usize, f: &(dyn Fn(usize) + Sync)) {
    let n = split_count(rows * cols.max(1), pool.threads(), PAR_MIN / 2).min(rows.max(1));
    pool.run(n, &|t| {
        let (lo, hi) = chunk(rows, n, t, 1);
        for r in lo..hi {
            f(r);
        }
    });
}

/// max and sum of exp(x - max) over row r of a (the max of an empty row is -inf)
///
/// # Safety
/// row r inside the validated view
unsafe fn max_sumexp(a: &Arr, r: usize, c: usize) -> (f64, f64) {
    let mut m = f64::NEG_INFINITY;
    for j in 0..c {
        let x = at(a, r, j);
        if x > m || x.is_nan() {
            m = x;
            if x.is_nan() {
                break;
            }
        }
    }
    let mut s = 0.0;
    for j in 0..c {
        s += (at(a, r, j) - m).exp();
    }
    (m, s)
}

/// softmax / log_softmax / cross_entropy (+ grad) over the rows of a (R, C)
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
    let pairs = kind == Kind::CrossEntropy && out.nd == 2;
    let o = SendPtr(out.d());
    each_row(pool, r, c, &|i| {
        let o = &o;
        // SAFETY: row i of the validated views; the contiguous out rows are disjoint per task
        unsafe {
            let (m, s) = max_sumexp(a, i, c);
            match kind {
                Kind::Softmax => {
                    for j in 0..c {
                        *o.0.add(i * c + j) = (at(a, i, j) - m).exp() / s;
                    }
                }
                Kind::LogSoftmax => {
                    let ls = s.ln();
                    for j in 0..c {
                        *o.0.add(i * c + j) = at(a, i, j) - m - ls;
                    }
                }
                Kind::CrossEntropy | Kind::CrossEntropyGrad => {
                    let ti = t.map_or(0, |t| t.index(i));
                    let skip = Some(ti) == ignore;
                    if kind == Kind::CrossEntropy {
                        let loss = if skip {
                            0.0
                        } else {
                            m + s.ln() - at(a, i, ti as usize)
                        };
                        if pairs {
                            *o.0.add(2 * i) = loss;
                            *o.0.add(2 * i + 1) = if skip { 0.0 } else { 1.0 };
                        } else {
                            *o.0.add(i) = loss;
                        }
                    } else {
                        let gi = g.map_or(1.0, |g| *g.d().offset(i as isize * g.st[0]));
                        for j in 0..c {
                            let v = if skip {
                                0.0
                            } else {
                                let p = (at(a, i, j) - m).exp() / s;
                                (p - if j as i64 == ti { 1.0 } else { 0.0 }) * gi
                            };
                            *o.0.add(i * c + j) = v;
                        }
                    }
                }
            }
        }
    });
    Ok(())
}

/// causal_softmax of a (B, Tq, Tk): row i keeps columns j <= i + diagonal (none: NaN)
pub fn causal_softmax(pool: &Pool, out: &Arr, a: &Arr, diagonal: i64) -> KResult {
    let (b, tq, tk) = (a.shape[0], a.shape[1], a.shape[2]);
    let o = SendPtr(out.d());
    each_row(pool, b * tq, tk, &|row| {
        let o = &o;
        let (bi, i) = (row / tq, row % tq);
        let keep = (i as i64 + diagonal + 1).clamp(0, tk as i64) as usize;
        // SAFETY: row (bi, i) of the validated views; out rows are contiguous and disjoint
        unsafe {
            let x = |j: usize| {
                *a.d()
                    .offset(bi as isize * a.st[0] + i as isize * a.st[1] + j as isize * a.st[2])
            };
            let dst = o.0.add(row * tk);
            if keep == 0 {
                for j in 0..tk {
                    *dst.add(j) = f64::NAN;
                }
                return;
            }
            let mut m = f64::NEG_INFINITY;
            for j in 0..keep {
                m = if x(j).is_nan() || m.is_nan() {
                    f64::NAN
                } else {
                    m.max(x(j))
                };
            }
            let mut s = 0.0;
            for j in 0..keep {
                s += (x(j) - m).exp();
            }
            for j in 0..tk {
                *dst.add(j) = if j < keep { (x(j) - m).exp() / s } else { 0.0 };
            }
        }
    });
    Ok(())
}

/// out = y * (g - sum_j g y) over each row
pub fn softmax_grad(pool: &Pool, out: &Arr, y: &Arr, g: &Arr) -> KResult {
    let (r, c) = (y.shape[0], y.shape[1]);
    let o = SendPtr(out.d());
    each_row(pool, r, c, &|i| {
        let o = &o;
        // SAFETY: row i of the validated views; out rows are contiguous and disjoint
        unsafe {
            let dot: f64 = (0..c).map(|j| at(g, i, j) * at(y, i, j)).sum();
            for j in 0..c {
                *o.0.add(i * c + j) = at(y, i, j) * (at(g, i, j) - dot);
            }
        }
    });
    Ok(())
}

/// layer_norm (grad false: out = xhat * w + b) or layer_norm_grad (wb is g: out is dx, or
/// (2, R, C): dx then g * xhat)
pub fn layer_norm(
    pool: &Pool,
    out: &Arr,
    x: &Arr,
    w: &Arr,
    wb: &Arr,
    eps: f64,
    grad: bool,
) -> KResult {
    let (r, c) = (x.shape[0], x.shape[1]);
    let two = out.nd == 3;
    let o = SendPtr(out.d());
    each_row(pool, r, c, &|i| {
        let o = &o;
        // SAFETY: row i of the validated views; out rows (of each plane) are contiguous and
        // disjoint per task
        unsafe {
            let wj = |j: usize| *w.d().offset(j as isize * w.st[0]);
            let mean = (0..c).map(|j| at(x, i, j)).sum::<f64>() / c as f64;
            let var = (0..c).map(|j| (at(x, i, j) - mean).powi(2)).sum::<f64>() / c as f64;
            let rstd = 1.0 / (var + eps).sqrt();
            let xhat = |j: usize| (at(x, i, j) - mean) * rstd;
            let dst = o.0.add(i * c);
            if !grad {
                for j in 0..c {
                    *dst.add(j) = xhat(j) * wj(j) + *wb.d().offset(j as isize * wb.st[0]);
                }
                return;
            }
            let gw = |j: usize| at(wb, i, j) * wj(j);
            let m1 = (0..c).map(gw).sum::<f64>() / c as f64;
            let m2 = (0..c).map(|j| gw(j) * xhat(j)).sum::<f64>() / c as f64;
            for j in 0..c {
                *dst.add(j) = rstd * (gw(j) - m1 - xhat(j) * m2);
            }
            if two {
                let dw = o.0.add(r * c + i * c);
                for j in 0..c {
                    *dw.add(j) = at(wb, i, j) * xhat(j);
                }
            }
        }
    });
    Ok(())
}

/// adam_update in float64 (adam.rs's order of operations)
pub fn adam_update(pool: &Pool, p: &Arr, g: &Arr, m: &Arr, v: &Arr, s: &Arr) -> KResult {
    let n = p.numel();
    // SAFETY: s is the validated (10,) scalars view and k is below its length
    let w = |k: usize| unsafe { *s.d().offset(k as isize * s.st[0]) };
    let (beta1, c1, beta2, c2, eps, isb, step, decay, l2, maximize) = (
        w(0),
        w(1),
        w(2),
        w(3),
        w(4),
        w(5),
        w(6),
        w(7),
        w(8),
        w(9) != 0.0,
    );
    let ptrs = SendPtr((p.d(), g.d(), m.d(), v.d()));
    let tasks = split_count(n, pool.threads(), PAR_MIN);
    pool.run(tasks, &|t| {
        let (lo, hi) = chunk(n, tasks, t, 16);
        let q = &ptrs;
        for i in lo..hi {
            // SAFETY: p, g, m, v are contiguous, disjoint views of n elements (check_views);
            // tasks take disjoint ranges
            unsafe {
                let (pp, gp, mp, vp) = (q.0 .0.add(i), q.0 .1.add(i), q.0 .2.add(i), q.0 .3.add(i));
                let mut gi = *gp;
                if maximize {
                    gi = -gi;
                }
                let mut pi = *pp;
                if l2 != 0.0 {
                    gi += pi * l2;
                }
                if decay != 1.0 {
                    pi *= decay;
                }
                let mi = beta1 * *mp + gi * c1;
                let vi = beta2 * *vp + (gi * gi) * c2;
                *mp = mi;
                *vp = vi;
                *pp = pi + mi / (vi.sqrt() * isb + eps) * step;
            }
        }
    });
    Ok(())
}
