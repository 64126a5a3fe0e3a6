//! Kernels generic over the element type (elem.rs), monomorphized per dtype: every
//! elementwise op, compare, where, reductions and argmax for the dtypes the f32 SIMD
//! kernels do not take (f64, i64, bool, ...). The f32 paths stay in elementwise.rs /
//! reduce.rs. Contiguous runs are plain slice loops compiled per ISA (`lanes!`: AVX-512
//! and AVX2 clones picked at run time), so f64 / i64 add, sub, mul, max, min, neg, abs,
//! relu vectorize; the transcendental f64 functions are std's (correctly rounded or
//! within 1 ULP), one element at a time.

use crate::arch::{active, Isa};
use crate::elem::Elem;
use crate::runtime::{KResult, Pool, SendPtr};
use crate::view::{chunk, split_count, Arr, Nest};

/// below this many elements per thread an op is not split
const PAR_MIN: usize = crate::elementwise::PAR_MIN;

/// out has no stride-0 dims of size > 1 (a task may then own a range of it)
fn par_ok(out: &Arr) -> bool {
    out.shape()
        .iter()
        .zip(out.strides())
        .all(|(&n, &s)| n == 1 || s != 0)
}

/// Calls `body(pointers, inner strides, len)` for every inner run of `views` (out first,
/// pointers at the run's first element), the runs split over the pool by ranges of out.
fn each<const N: usize>(
    pool: &Pool,
    views: [&Arr; N],
    body: &(dyn Fn([*mut u8; N], [isize; N], usize) + Sync),
) {
    let out = views[0];
    let nest = Nest::<N>::new(out.shape(), views.map(|v| v.strides()));
    let n = if par_ok(out) {
        split_count(nest.total, pool.threads(), PAR_MIN)
    } else {
        1
    };
    let (_, s) = nest.inner();
    let p = SendPtr(views.map(|v| (v.ptr, v.itemsize() as isize)));
    pool.run(n, &|t| {
        let (lo, hi) = chunk(nest.total, n, t, 64);
        let p = &p;
        let mut runs = nest.runs(lo, hi);
        while let Some((off, len)) = runs.next_run() {
            let ptrs = std::array::from_fn(|k| p.0[k].0.wrapping_offset(off[k] * p.0[k].1));
            body(ptrs, s, len);
        }
    });
}

// Outputs of at least STREAM_MIN_BYTES, contiguous, are written with streaming stores by
// the rule of the f32 kernels (elementwise.rs `streams`): they cannot stay in cache for the
// next op, and skipping the read-for-ownership saves a third of the traffic (f64 / i64 neg
// and add over 64 MB ran at 0.5-0.6x of f32's bytes per second without them).
use crate::elementwise::streams;

/// a cache line, aligned: one line of out computed here, then streamed
#[cfg(target_arch = "x86_64")]
const LINE: usize = 64;
#[cfg(target_arch = "x86_64")]
#[repr(align(64))]
struct Line([u8; LINE]);

/// stream one line to `dst` (64-byte aligned): AVX-512, one store
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn put512(dst: *mut u8, line: &Line) {
    use std::arch::x86_64::*;
    _mm512_stream_si512(
        dst as *mut __m512i,
        _mm512_load_si512(line.0.as_ptr() as *const __m512i),
    )
}

/// stream one line to `dst` (64-byte aligned): AVX2, two stores
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn put256(dst: *mut u8, line: &Line) {
    use std::arch::x86_64::*;
    let (d, l) = (dst as *mut __m256i, line.0.as_ptr() as *const __m256i);
    _mm256_stream_si256(d, _mm256_load_si256(l));
    _mm256_stream_si256(d.add(1), _mm256_load_si256(l.add(1)));
}

/// orders a run's streaming stores before the pool's join (another thread reads them next)
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn fence() {
    std::arch::x86_64::_mm_sfence()
}

/// `lanes!(name, (x: A, ...) -> O)`: a contiguous-run loop `name(n, out, inputs, f, stream)`
/// compiled for AVX-512 and AVX2 (picked by the active ISA) and for the baseline; `stream`:
/// out's whole cache lines written with streaming stores (`streams`; x86 only).
macro_rules! lanes {
    ($name:ident, $($x:ident : $t:ident),+) => {
        /// # Safety
        /// `n` elements at each pointer (out may equal an input)
        #[inline(always)]
        unsafe fn $name<$($t: Elem,)+ O: Elem, F: Fn($($t),+) -> O>(
            n: usize, o: *mut O, $($x: *const $t,)+ f: &F, stream: bool,
        ) {
            #[inline(always)]
            unsafe fn body<$($t: Elem,)+ O: Elem, F: Fn($($t),+) -> O>(
                n: usize, o: *mut O, $($x: *const $t,)+ f: &F,
            ) {
                for i in 0..n {
                    *o.add(i) = f($(*$x.add(i)),+);
                }
            }
            /// `body`, out's whole 64-byte lines computed into an aligned line and
            /// streamed out (`put`), the parts before the first and after the last plain
            #[cfg(target_arch = "x86_64")]
            #[inline(always)]
            unsafe fn lines<$($t: Elem,)+ O: Elem, F: Fn($($t),+) -> O>(
                n: usize, o: *mut O, $($x: *const $t,)+ f: &F, put: unsafe fn(*mut u8, &Line),
            ) {
                let per = LINE / std::mem::size_of::<O>();
                let mut i = ((LINE - o as usize % LINE) % LINE / std::mem::size_of::<O>()).min(n);
                body(i, o, $($x,)+ f);
                let mut line = Line([0; LINE]);
                while i + per <= n {
                    let l = line.0.as_mut_ptr() as *mut O;
                    for j in 0..per {
                        *l.add(j) = f($(*$x.add(i + j)),+);
                    }
                    put(o.add(i) as *mut u8, &line);
                    i += per;
                }
                body(n - i, o.add(i), $($x.add(i),)+ f);
                fence();
            }
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f,avx2,fma")]
                unsafe fn v512<$($t: Elem,)+ O: Elem, F: Fn($($t),+) -> O>(
                    n: usize, o: *mut O, $($x: *const $t,)+ f: &F, stream: bool,
                ) {
                    if stream {
                        lines(n, o, $($x,)+ f, put512)
                    } else {
                        body(n, o, $($x,)+ f)
                    }
                }
                #[target_feature(enable = "avx2,fma")]
                unsafe fn v256<$($t: Elem,)+ O: Elem, F: Fn($($t),+) -> O>(
                    n: usize, o: *mut O, $($x: *const $t,)+ f: &F, stream: bool,
                ) {
                    if stream {
                        lines(n, o, $($x,)+ f, put256)
                    } else {
                        body(n, o, $($x,)+ f)
                    }
                }
                match active() {
                    Isa::Avx512 => return v512(n, o, $($x,)+ f, stream),
                    Isa::Avx2 => return v256(n, o, $($x,)+ f, stream),
                    _ => {}
                }
            }
            let _ = stream;
            body(n, o, $($x,)+ f)
        }
    };
}
lanes!(lanes1, a: A);
lanes!(lanes2, a: A, b: B);
lanes!(lanes3, a: A, b: B, c: C);

/// out = f(a), elementwise (a broadcast to out's shape)
pub fn map1<A: Elem, O: Elem>(
    pool: &Pool,
    out: &Arr,
    a: &Arr,
    f: impl Fn(A) -> O + Sync,
) -> KResult {
    let stream = streams(out);
    each(pool, [out, a], &|[o, x], [so, sx], n| {
        // SAFETY: `each` gives runs of n elements inside the validated views
        unsafe {
            if so == 1 && sx == 1 {
                lanes1(n, o as *mut O, x as *const A, &f, stream);
            } else {
                for i in 0..n as isize {
                    O::put(o, i * so, f(A::get(x, i * sx)));
                }
            }
        }
    });
    Ok(())
}

/// out = f(a, b), elementwise
pub fn map2<A: Elem, B: Elem, O: Elem>(
    pool: &Pool,
    out: &Arr,
    a: &Arr,
    b: &Arr,
    f: impl Fn(A, B) -> O + Sync,
) -> KResult {
    let stream = streams(out);
    each(pool, [out, a, b], &|[o, x, y], [so, sx, sy], n| {
        // SAFETY: `each` gives runs of n elements inside the validated views
        unsafe {
            if so == 1 && sx == 1 && sy == 1 {
                lanes2(n, o as *mut O, x as *const A, y as *const B, &f, stream);
            } else if so == 1 && sx == 1 && sy == 0 {
                let yv = B::get(y, 0);
                lanes1(n, o as *mut O, x as *const A, &|xv| f(xv, yv), stream);
            } else if so == 1 && sx == 0 && sy == 1 {
                let xv = A::get(x, 0);
                lanes1(n, o as *mut O, y as *const B, &|yv| f(xv, yv), stream);
            } else {
                for i in 0..n as isize {
                    O::put(o, i * so, f(A::get(x, i * sx), B::get(y, i * sy)));
                }
            }
        }
    });
    Ok(())
}

/// out = f(a, b, c), elementwise
pub fn map3<A: Elem, B: Elem, C: Elem, O: Elem>(
    pool: &Pool,
    out: &Arr,
    a: &Arr,
    b: &Arr,
    c: &Arr,
    f: impl Fn(A, B, C) -> O + Sync,
) -> KResult {
    let stream = streams(out);
    each(pool, [out, a, b, c], &|[o, x, y, z],
                                 [so, sx, sy, sz],
                                 n| {
        // SAFETY: `each` gives runs of n elements inside the validated views
        unsafe {
            if so == 1 && sx == 1 && sy == 1 && sz == 1 {
                lanes3(
                    n,
                    o as *mut O,
                    x as *const A,
                    y as *const B,
                    z as *const C,
                    &f,
                    stream,
                );
            } else {
                for i in 0..n as isize {
                    O::put(
                        o,
                        i * so,
                        f(A::get(x, i * sx), B::get(y, i * sy), C::get(z, i * sz)),
                    );
                }
            }
        }
    });
    Ok(())
}

/// A reduction's fold over one element type.
pub trait Fold<T>: Copy + Sync {
    fn identity(self) -> T;
    fn fold(self, acc: T, x: T) -> T;
}

/// out[j] = the fold of a's trailing `naxes` dims at j. A contiguous run folds into 8
/// interleaved accumulators (vectorizes; for f64 sums also a smaller rounding error than
/// one running sum), merged pairwise.
pub fn reduce<T: Elem, R: Fold<T>>(
    pool: &Pool,
    red: R,
    out: &Arr,
    a: &Arr,
    naxes: usize,
) -> KResult {
    let k = a.nd - naxes;
    let outer = Nest::<2>::new(&a.shape[..k], [&out.st[..k], &a.st[..k]]);
    let inner = Nest::<1>::new(&a.shape[k..a.nd], [&a.st[k..a.nd]]);
    let (_, os) = outer.inner();
    let (_, is) = inner.inner();
    let n_out = outer.total;
    let n = split_count(n_out * inner.total.max(1), pool.threads(), PAR_MIN).min(n_out.max(1));
    let p = SendPtr((out.ptr, a.ptr as *const u8));
    pool.run(n, &|t| {
        let (lo, hi) = chunk(n_out, n, t, 1);
        let p = &p;
        let mut runs = outer.runs(lo, hi);
        while let Some((off, len)) = runs.next_run() {
            for j in 0..len as isize {
                let base = off[1] + j * os[1];
                let mut acc = red.identity();
                let mut cells = inner.runs(0, inner.total);
                while let Some((ioff, ilen)) = cells.next_run() {
                    // SAFETY: offsets of the Nests over the validated a view
                    unsafe {
                        let x = (p.0 .1 as *const T).offset(base + ioff[0]);
                        acc = red.fold(acc, fold_run(red, x, ilen, is[0]));
                    }
                }
                // SAFETY: offsets of the outer Nest over the validated out view
                unsafe { T::put(p.0 .0, off[0] + j * os[0], acc) };
            }
        }
    });
    Ok(())
}

/// # Safety
/// `n` elements `s` apart at `x`
#[inline(always)]
unsafe fn fold_run<T: Elem, R: Fold<T>>(red: R, x: *const T, n: usize, s: isize) -> T {
    if s != 1 || n < 16 {
        let mut acc = red.identity();
        for i in 0..n as isize {
            acc = red.fold(acc, *x.offset(i * s));
        }
        return acc;
    }
    let mut lanes = [red.identity(); 8];
    let whole = n / 8 * 8;
    for i in (0..whole).step_by(8) {
        for (l, acc) in lanes.iter_mut().enumerate() {
            *acc = red.fold(*acc, *x.add(i + l));
        }
    }
    let mut tail = red.identity();
    for i in whole..n {
        tail = red.fold(tail, *x.add(i));
    }
    let [a, b, c, d, e, f, g, h] = lanes;
    let s = red.fold(
        red.fold(red.fold(a, b), red.fold(c, d)),
        red.fold(red.fold(e, f), red.fold(g, h)),
    );
    red.fold(s, tail)
}

/// out[j] (i32 or i64) = the first index of the maximum of a's last dim at j (NaN counts
/// as the maximum: the first NaN's index, as PyTorch)
pub fn argmax<T: Elem + PartialOrd>(pool: &Pool, out: &Arr, a: &Arr) -> KResult {
    let k = a.nd - 1;
    let (n_row, s) = (a.shape[k], a.st[k]);
    map_rows(pool, out, a, k, &|x: *const u8| {
        let mut best = 0usize;
        // SAFETY: the row's n_row elements s apart lie inside the validated view
        let mut m = unsafe { T::get(x, 0) };
        #[allow(clippy::eq_op)] // x != x: NaN
        if m != m {
            return 0;
        }
        for i in 1..n_row {
            // SAFETY: as above
            let v = unsafe { T::get(x, i as isize * s) };
            #[allow(clippy::eq_op)]
            if v != v {
                return i as i64;
            }
            if v > m {
                m = v;
                best = i;
            }
        }
        best as i64
    })
}

/// out[j] = f(pointer to a's row j) over a's first `k` dims (out i32 or i64)
fn map_rows(
    pool: &Pool,
    out: &Arr,
    a: &Arr,
    k: usize,
    f: &(dyn Fn(*const u8) -> i64 + Sync),
) -> KResult {
    let outer = Nest::<2>::new(&a.shape[..k], [&out.st[..k], &a.st[..k]]);
    let (_, os) = outer.inner();
    let n_out = outer.total;
    let n = split_count(n_out * a.shape[k].max(1), pool.threads(), PAR_MIN).min(n_out.max(1));
    let (item, wide) = (a.itemsize() as isize, out.dtype == crate::view::DType::I64);
    let p = SendPtr((out.ptr, a.ptr as *const u8));
    pool.run(n, &|t| {
        let (lo, hi) = chunk(n_out, n, t, 1);
        let p = &p;
        let mut runs = outer.runs(lo, hi);
        while let Some((off, len)) = runs.next_run() {
            for j in 0..len as isize {
                let v = f(p.0 .1.wrapping_offset((off[1] + j * os[1]) * item));
                // SAFETY: offsets of the outer Nest over the validated out view
                unsafe {
                    if wide {
                        i64::put(p.0 .0, off[0] + j * os[0], v);
                    } else {
                        i32::put(p.0 .0, off[0] + j * os[0], v as i32);
                    }
                }
            }
        }
    });
    Ok(())
}
