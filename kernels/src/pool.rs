//! Max pooling's window search (ops.py's `max_pool_index`): the windows of an image read
//! in place through the strides of a (N, C, Ho, Wo, kh, kw) view, never copied out; and
//! `col2im`, a convolution's columns summed back into its input's rows in one pass.

use std::ops::AddAssign;

use crate::elem::Elem;
use crate::runtime::{KResult, Pool, SendPtr};
use crate::view::{chunk, split_count, Arr, DType};

/// windows per task below which the pool is not split
const PAR_MIN: usize = 4096;

/// out[n, c, i, j] (i32 or i64) = i * s2 + j * s3 + ki * s4 + kj * s5 for (ki, kj) the
/// first maximum of window (n, c, i, j) of `a` (row-major), or its last NaN where it holds
/// one (PyTorch's max_pool rule), s = a's strides: the maximum's element offset in its (n, c) plane. `out` is
/// contiguous, `a` 6-d with out's leading shape, non-negative strides and kh * kw > 0
/// (record.rs checked it).
pub fn max_pool_index(pool: &Pool, out: &Arr, a: &Arr) -> KResult {
    match a.dtype {
        DType::F64 => index::<f64>(pool, out, a),
        _ => index::<f32>(pool, out, a),
    }
}

fn index<T: Elem + PartialOrd>(pool: &Pool, out: &Arr, a: &Arr) -> KResult {
    let [n, c, ho, wo, kh, kw, ..] = a.shape;
    let [s0, s1, s2, s3, s4, s5, ..] = a.st;
    let planes = n * c;
    let windows = ho * wo;
    let total = planes * windows;
    let tasks = split_count(total * kh * kw, pool.threads(), PAR_MIN).min(planes.max(1));
    let wide = out.dtype == DType::I64;
    let p = SendPtr((out.ptr, a.ptr as *const u8));
    pool.run(tasks, &|t| {
        let (lo, hi) = chunk(planes, tasks, t, 1);
        let p = &p;
        let (optr, aptr) = p.0;
        for plane in lo..hi {
            let base = (plane / c) as isize * s0 + (plane % c) as isize * s1;
            for i in 0..ho {
                for j in 0..wo {
                    let start = i as isize * s2 + j as isize * s3;
                    // (LeNet's / VGG's 2x2 and ResNet's 3x3 windows unrolled: constant sizes)
                    // SAFETY: every element of the window lies inside the validated view
                    let mut best = unsafe {
                        match (kh, kw) {
                            (2, 2) => first_max::<T>(aptr, base, start, 2, 2, s4, s5),
                            (3, 3) => first_max::<T>(aptr, base, start, 3, 3, s4, s5),
                            _ => first_max::<T>(aptr, base, start, kh, kw, s4, s5),
                        }
                    };
                    if best < 0 {
                        // SAFETY: as above
                        best = unsafe { last_nan::<T>(aptr, base, start, kh, kw, s4, s5) };
                    }
                    let k = plane * windows + i * wo + j;
                    // SAFETY: k < out's numel and out is contiguous
                    unsafe {
                        if wide {
                            (optr as *mut i64).add(k).write_unaligned(best as i64);
                        } else {
                            (optr as *mut i32).add(k).write_unaligned(best as i32);
                        }
                    }
                }
            }
        }
    });
    Ok(())
}

/// A max over the last two dims of a 6-d f32 view whose window rows are not contiguous:
/// max pooling's values, read in place (`window_max`); the generic reduction walks such
/// windows element by element through its nest (0.78 vs 0.2 ms for LeNet's first pool).
pub fn is_window_max(max: bool, a: &Arr, naxes: usize) -> bool {
    max && naxes == 2 && a.nd == 6 && a.dtype == DType::F32 && a.shape[4] * a.shape[5] > 0
}

/// out (N, C, Ho, Wo) = the maximum of each window of a (N, C, Ho, Wo, kh, kw) f32 view (NaN
/// where the window holds one, as the reduction's), out contiguous.
pub fn window_max(pool: &Pool, out: &Arr, a: &Arr) -> KResult {
    let [n, c, ho, wo, kh, kw, ..] = a.shape;
    let [s0, s1, s2, s3, s4, s5, ..] = a.st;
    let planes = n * c;
    let windows = ho * wo;
    let tasks = split_count(planes * windows * kh * kw, pool.threads(), PAR_MIN).min(planes.max(1));
    let p = SendPtr((out.ptr as *mut f32, a.ptr as *const u8));
    pool.run(tasks, &|t| {
        let (lo, hi) = chunk(planes, tasks, t, 1);
        let p = &p;
        let (optr, aptr) = p.0;
        for plane in lo..hi {
            let base = (plane / c) as isize * s0 + (plane % c) as isize * s1;
            for i in 0..ho {
                for j in 0..wo {
                    let start = base + i as isize * s2 + j as isize * s3;
                    // SAFETY: every element of the window lies inside the validated view
                    // (2x2 and 3x3 windows unrolled: constant sizes)
                    let (m, nan) = unsafe {
                        match (kh, kw) {
                            (2, 2) => max_of(aptr, start, 2, 2, s4, s5),
                            (3, 3) => max_of(aptr, start, 3, 3, s4, s5),
                            _ => max_of(aptr, start, kh, kw, s4, s5),
                        }
                    };
                    // SAFETY: the out index < out's numel, out contiguous
                    unsafe {
                        *optr.add(plane * windows + i * wo + j) = if nan { f32::NAN } else { m };
                    }
                }
            }
        }
    });
    Ok(())
}

/// The maximum of one window and whether it holds a NaN.
///
/// # Safety
/// start + ki * s4 + kj * s5 lies inside `a`'s view for ki < kh, kj < kw.
#[inline(always)]
unsafe fn max_of(
    a: *const u8,
    start: isize,
    kh: usize,
    kw: usize,
    s4: isize,
    s5: isize,
) -> (f32, bool) {
    let mut m = f32::NEG_INFINITY;
    let mut nan = false;
    for ki in 0..kh {
        for kj in 0..kw {
            let v = f32::get(a, start + ki as isize * s4 + kj as isize * s5);
            nan |= v.is_nan();
            m = if v > m { v } else { m };
        }
    }
    (m, nan)
}

/// out (R1, R2, L)[r1, r2, j] = the sum over (ki, kj), in row-major order, of a[r1, r2, ki,
/// kj, j - shift] for shift = ki * steps[0] + kj * steps[1] and 0 <= j - shift < La (ops.py's
/// `col2im`). `out` contiguous, `a` (R1, R2, kh, kw, La) any strides of out's dtype
/// (record.rs checked it). Cut into ranges of out's flat elements: each element is written
/// by one task, its terms in the same order.
pub fn col2im(pool: &Pool, out: &Arr, a: &Arr, steps: [usize; 2]) -> KResult {
    match a.dtype {
        DType::F64 => col2im_t::<f64>(pool, out, a, steps),
        _ => col2im_t::<f32>(pool, out, a, steps),
    }
}

fn col2im_t<T: Elem + AddAssign + Default>(
    pool: &Pool,
    out: &Arr,
    a: &Arr,
    steps: [usize; 2],
) -> KResult {
    let [_, r2, kh, kw, la, ..] = a.shape;
    let [s0, s1, s2, s3, s4, ..] = a.st;
    let len = out.shape[2];
    let total = out.numel();
    let tasks = split_count(total * kh * kw, pool.threads(), PAR_MIN);
    let p = SendPtr((out.ptr as *mut T, a.ptr as *const u8));
    pool.run(tasks, &|t| {
        let (lo, hi) = chunk(total, tasks, t, 16);
        let p = &p;
        let (optr, aptr) = p.0;
        let mut at = lo;
        while at < hi {
            let (r, jlo) = (at / len, at % len);
            let jhi = len.min(jlo + hi - at);
            // SAFETY: out is contiguous (R1 * R2, L): r * L + [jlo, jhi) lies inside it, and
            // no other task writes this range
            let dst = unsafe { std::slice::from_raw_parts_mut(optr.add(r * len + jlo), jhi - jlo) };
            dst.fill(T::default());
            let row = (r / r2) as isize * s0 + (r % r2) as isize * s1;
            for ki in 0..kh {
                for kj in 0..kw {
                    let shift = ki * steps[0] + kj * steps[1];
                    let (start, end) = (jlo.max(shift), jhi.min(shift + la));
                    if start >= end {
                        continue;
                    }
                    let src = row + ki as isize * s2 + kj as isize * s3;
                    let d = &mut dst[start - jlo..end - jlo];
                    if s4 == 1 {
                        // SAFETY: a's row (r1, r2, ki, kj) holds La elements: [start - shift,
                        // end - shift) lies inside it
                        let s = unsafe {
                            std::slice::from_raw_parts(
                                (aptr as *const T).offset(src + (start - shift) as isize),
                                end - start,
                            )
                        };
                        for (x, &y) in d.iter_mut().zip(s) {
                            *x += y;
                        }
                    } else {
                        for (i, x) in d.iter_mut().enumerate() {
                            let q = (start - shift + i) as isize;
                            // SAFETY: as above, through a's strides
                            *x += unsafe { T::get(aptr, src + q * s4) };
                        }
                    }
                }
            }
            at += jhi - jlo;
        }
    });
    Ok(())
}

/// The offset of the window's first maximum, or -1 when the window holds a NaN (one pass,
/// no branch out of the loop: the NaN is looked for again only then).
///
/// # Safety
/// base + start + ki * s4 + kj * s5 lies inside `a`'s view for ki < kh, kj < kw.
#[inline(always)]
unsafe fn first_max<T: Elem + PartialOrd>(
    a: *const u8,
    base: isize,
    start: isize,
    kh: usize,
    kw: usize,
    s4: isize,
    s5: isize,
) -> isize {
    let mut best = start;
    let mut m = T::get(a, base + start);
    #[allow(clippy::eq_op)] // x != x: NaN
    let mut nan = m != m;
    for ki in 0..kh {
        let row = start + ki as isize * s4;
        for kj in 0..kw {
            let at = row + kj as isize * s5;
            let v = T::get(a, base + at);
            #[allow(clippy::eq_op)]
            {
                nan |= v != v;
            }
            if v > m {
                m = v;
                best = at;
            }
        }
    }
    if nan {
        -1
    } else {
        best
    }
}

/// The offset of the window's last NaN (there is one: PyTorch's max_pool rule, `val >
/// maxval || isnan(val)`, ends on it).
///
/// # Safety
/// as `first_max`'s
unsafe fn last_nan<T: Elem + PartialOrd>(
    a: *const u8,
    base: isize,
    start: isize,
    kh: usize,
    kw: usize,
    s4: isize,
    s5: isize,
) -> isize {
    let mut last = start;
    for ki in 0..kh {
        for kj in 0..kw {
            let at = start + ki as isize * s4 + kj as isize * s5;
            let v = T::get(a, base + at);
            #[allow(clippy::eq_op)]
            if v != v {
                last = at;
            }
        }
    }
    last
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::Pool;

    #[test]
    fn max_pool_index_is_the_first_maximum_offset_in_its_plane_nan_first() {
        // one (1, 2, 4, 4) image, 2x2 windows stride 2: a (1, 2, 2, 2, 2, 2) view
        let mut x: Vec<f32> = (0..32).map(|v| ((v * 7) % 11) as f32).collect();
        x[16 + 5] = f32::NAN; // plane 1, window (0, 0): its (1, 1) element, the last NaN
        x[16] = f32::NAN;
        x[16 + 2] = 50.0; // plane 1, window (0, 1): ties never move the first
        x[16 + 3] = 50.0;
        let a = Arr::new(
            x.as_mut_ptr() as *mut u8,
            DType::F32,
            &[1, 2, 2, 2, 2, 2],
            &[32, 16, 8, 2, 4, 1],
        );
        let mut o = vec![0i64; 8];
        let out = Arr::new(
            o.as_mut_ptr() as *mut u8,
            DType::I64,
            &[1, 2, 2, 2],
            &[8, 4, 2, 1],
        );
        max_pool_index(&Pool::new(2), &out, &a).unwrap();
        for plane in 0..2 {
            for (w, &(i, j)) in [(0, 0), (0, 1), (1, 0), (1, 1)].iter().enumerate() {
                let got = o[plane * 4 + w];
                let mut best = (i * 8 + j * 2) as i64;
                for ki in 0..2 {
                    for kj in 0..2 {
                        let at = (i * 8 + j * 2 + ki * 4 + kj) as i64;
                        let (v, b) = (x[plane * 16 + at as usize], x[plane * 16 + best as usize]);
                        if v.is_nan() || (!b.is_nan() && v > b) {
                            best = at;
                        }
                    }
                }
                assert_eq!(got, best, "plane {plane} window ({i}, {j})");
            }
        }
        assert_eq!(o[4], 5);
        col2im_sums_shifted_columns_in_order();
        assert_eq!(o[5], 2);
    }

    fn col2im_sums_shifted_columns_in_order() {
        // R1 3, R2 2, kh 2, kw 2, La 30, L 40: out[r, j] = sum a[r, ki, kj, j - (7 ki + 2 kj)]
        let (r1, r2, la, l, steps) = (3usize, 2usize, 30usize, 40usize, [7usize, 2usize]);
        let n = r1 * r2 * 4 * la;
        let mut x: Vec<f32> = (0..n).map(|v| ((v * 13) % 17) as f32 - 8.0).collect();
        let a = Arr::new(
            x.as_mut_ptr() as *mut u8,
            DType::F32,
            &[r1, r2, 2, 2, la],
            &[
                (r2 * 4 * la) as isize,
                (4 * la) as isize,
                (2 * la) as isize,
                la as isize,
                1,
            ],
        );
        for threads in [1, 2] {
            let mut o = vec![f32::NAN; r1 * r2 * l];
            let out = Arr::new(
                o.as_mut_ptr() as *mut u8,
                DType::F32,
                &[r1, r2, l],
                &[(r2 * l) as isize, l as isize, 1],
            );
            col2im(&Pool::new(threads), &out, &a, steps).unwrap();
            for row in 0..r1 * r2 {
                for j in 0..l {
                    let mut want = 0.0f32;
                    for k in 0..4 {
                        let shift = (k / 2) * steps[0] + (k % 2) * steps[1];
                        if j >= shift && j - shift < la {
                            want += x[row * 4 * la + k * la + j - shift];
                        }
                    }
                    assert_eq!(o[row * l + j], want, "row {row} col {j}");
                }
            }
        }
    }
}
