//! Elementwise kernels: unary, binary, compare, where.
//!
//! Inputs arrive broadcast to out's shape (stride-0 dims). The views are
//! merged into a `Nest`; each inner run is handled by a loop chosen once per
//! run from the operands' inner strides: all contiguous (plain vector loads),
//! one operand broadcast (stride 0: the splat stays in a register, the loop
//! stays SIMD), or general strided (lanes gathered into a vector, the math
//! still SIMD). Large ops are split into flat ranges over the pool.

use crate::arch::{dispatch, Kernel, Simd};
use crate::math;
use crate::runtime::{KResult, Pool, SendPtr};
use crate::view::{chunk, split_tasks, Arr, Nest};

/// below this many elements per thread an op is not split
pub const PAR_MIN: usize = 1 << 15;

/// An elementwise op of K f32 inputs, evaluated a whole vector at a time. One
/// generic kernel (`map`) serves every arity: unary (K = 1), binary and
/// compare (2), where (3). A new op is its vector math plus one `ew_op!` line.
pub trait EwOp<const K: usize>: Copy + Sync {
    /// # Safety
    /// Only inside a function compiled for `S`'s ISA (`arch::dispatch` makes those).
    unsafe fn apply<S: Simd>(x: [S::F; K]) -> S::F;
}

/// `ew_op!(Name, |a, b| body)`: the op struct and its `EwOp<K>`, K = the number of names.
macro_rules! ew_op {
    (@k) => { 0 };
    (@k $h:ident $($t:ident)*) => { 1 + ew_op!(@k $($t)*) };
    ($name:ident, |$($x:ident),+| $body:expr) => {
        #[derive(Clone, Copy)]
        pub struct $name;
        impl EwOp<{ ew_op!(@k $($x)+) }> for $name {
            #[inline(always)]
            unsafe fn apply<S: Simd>([$($x),+]: [S::F; ew_op!(@k $($x)+)]) -> S::F {
                $body
            }
        }
    };
}

ew_op!(Neg, |x| S::neg(x));
ew_op!(Exp, |x| math::exp::<S>(x));
ew_op!(Log, |x| math::log::<S>(x));
ew_op!(Relu, |x| S::max_nan(x, S::zero()));
ew_op!(Tanh, |x| math::tanh::<S>(x));
ew_op!(Sigmoid, |x| math::sigmoid::<S>(x));
ew_op!(Sin, |x| math::sin::<S>(x));
ew_op!(Cos, |x| math::cos::<S>(x));
ew_op!(Sqrt, |x| S::sqrt(x));
ew_op!(Abs, |x| S::abs(x));

ew_op!(Add, |a, b| S::add(a, b));
ew_op!(Sub, |a, b| S::sub(a, b));
ew_op!(Mul, |a, b| S::mul(a, b));
ew_op!(Div, |a, b| S::div(a, b));
ew_op!(Maximum, |a, b| S::max_nan(a, b));
ew_op!(Minimum, |a, b| S::min_nan(a, b));
ew_op!(Pow, |a, b| {
    // no vector pow: libm's powf lane by lane (exact special cases, rarely hot)
    let mut x = [0f32; 16];
    let mut y = [0f32; 16];
    S::store(x.as_mut_ptr(), a);
    S::store(y.as_mut_ptr(), b);
    for i in 0..S::W {
        x[i] = x[i].powf(y[i]);
    }
    S::load(x.as_ptr())
});
// elementwise math: no vector atan2, the std one lane by lane (atan, asin, acos are built on it)
ew_op!(Atan2, |a, b| {
    let mut x = [0f32; 16];
    let mut y = [0f32; 16];
    S::store(x.as_mut_ptr(), a);
    S::store(y.as_mut_ptr(), b);
    for i in 0..S::W {
        x[i] = x[i].atan2(y[i]);
    }
    S::load(x.as_ptr())
});
ew_op!(Eq, |a, b| S::select(S::eq(a, b), S::splat(1.0), S::zero()));
ew_op!(Ne, |a, b| S::select(S::eq(a, b), S::zero(), S::splat(1.0)));
ew_op!(Lt, |a, b| S::select(S::lt(a, b), S::splat(1.0), S::zero()));
ew_op!(Le, |a, b| S::select(S::le(a, b), S::splat(1.0), S::zero()));
ew_op!(Gt, |a, b| S::select(S::lt(b, a), S::splat(1.0), S::zero()));
ew_op!(Ge, |a, b| S::select(S::le(b, a), S::splat(1.0), S::zero()));
// cond != 0 picks a (NaN != 0 is true, like NumPy)
ew_op!(Where, |c, a, b| S::select(S::eq(c, S::zero()), b, a));

/// Load up to W lanes of a run with stride s (1, 0 or general); `n` valid lanes.
#[inline(always)]
pub(crate) unsafe fn ld<S: Simd>(p: *const f32, s: isize, n: usize) -> S::F {
    if s == 0 {
        S::splat(*p)
    } else if n == S::W {
        if s == 1 {
            S::load(p)
        } else {
            S::load_strided(p, s)
        }
    } else if s == 1 {
        S::load_part(p, n, 1.0)
    } else {
        let mut buf = [1f32; 16];
        for (i, b) in buf.iter_mut().enumerate().take(n) {
            *b = *p.offset(i as isize * s);
        }
        S::load(buf.as_ptr())
    }
}

#[inline(always)]
pub(crate) unsafe fn st<S: Simd>(p: *mut f32, s: isize, v: S::F, n: usize) {
    if s == 1 {
        if n == S::W {
            S::store(p, v)
        } else {
            S::store_part(p, v, n)
        }
    } else {
        let mut buf = [0f32; 16];
        S::store(buf.as_mut_ptr(), v);
        for (i, b) in buf.iter().enumerate().take(n) {
            *p.offset(i as isize * s) = *b;
        }
    }
}

/// Outputs of at least this many bytes are written with streaming stores when
/// contiguous: they cannot stay in cache for the next op anyway (beyond the
/// last-level cache of a typical desktop or server core complex), and skipping
/// the read-for-ownership saves a third of the memory traffic of exp or add.
pub const STREAM_MIN_BYTES: usize = 32 << 20;

/// How many elements precede the first vector-aligned one of `o` (at most n):
/// streaming stores need aligned addresses, so those go through a plain store.
/// (The streaming loops are written out below rather than taking a closure: a
/// closure does not inherit the caller's `target_feature`, and the SIMD math
/// inside it would not be inlined.)
#[inline(always)]
fn stream_head<S: Simd>(o: *const f32, n: usize) -> usize {
    let misaligned = (o as usize / 4) % S::W;
    if misaligned == 0 {
        0
    } else {
        (S::W - misaligned).min(n)
    }
}

/// The vector loop of a run whose out and inputs are contiguous, except input B
/// (when B < K) which is broadcast (stride 0: one splat, kept in a register).
/// STREAM: streaming stores, after a plain partial store up to the first aligned
/// element. Returns how far it got (the caller's loop does the rest).
#[inline(always)]
unsafe fn dense<S: Simd, O: EwOp<K>, const K: usize, const B: usize, const STREAM: bool>(
    n: usize,
    o: *mut f32,
    a: [*const f32; K],
) -> usize {
    let w = S::W;
    let mut x0 = [S::zero(); K];
    for j in 0..K {
        if j == B {
            x0[j] = S::splat(*a[j]);
        }
    }
    let mut x1 = x0;
    let mut i = 0;
    if STREAM {
        i = stream_head::<S>(o, n);
        if i > 0 {
            for j in 0..K {
                if j != B {
                    x0[j] = S::load_part(a[j], i, 1.0);
                }
            }
            S::store_part(o, O::apply::<S>(x0), i);
        }
    }
    while i + 2 * w <= n {
        for j in 0..K {
            if j != B {
                x0[j] = S::load(a[j].add(i));
                x1[j] = S::load(a[j].add(i + w));
            }
        }
        let (r0, r1) = (O::apply::<S>(x0), O::apply::<S>(x1));
        if STREAM {
            S::stream(o.add(i), r0);
            S::stream(o.add(i + w), r1);
        } else {
            S::store(o.add(i), r0);
            S::store(o.add(i + w), r1);
        }
        i += 2 * w;
    }
    i
}

/// Which `dense` loop the inner runs take, from the inner strides (out's first):
/// Some(j) when out and the inputs are contiguous but input j, broadcast;
/// Some(K) when all are contiguous; None when the runs are strided.
fn dense_mode<const N: usize>(s: [isize; N]) -> Option<usize> {
    let k = N - 1;
    let mut bcast = k;
    for (j, &sj) in s[1..].iter().enumerate() {
        match sj {
            1 => {}
            0 if bcast == k => bcast = j,
            _ => return None,
        }
    }
    (s[0] == 1).then_some(bcast)
}

/// One inner run of n elements: out at o (stride so), input j at a[j] (stride sa[j]).
/// The `dense` loop of `mode` (see dense_mode) first; whatever remains goes a
/// vector at a time through `ld` / `st`.
#[inline(always)]
unsafe fn line<S: Simd, O: EwOp<K>, const K: usize>(
    n: usize,
    o: *mut f32,
    so: isize,
    a: [*const f32; K],
    sa: [isize; K],
    mode: Option<usize>,
    stream: bool,
) {
    let mut i = 0;
    if let Some(bcast) = mode {
        // B = K: no input broadcast (the only case that streams)
        i = match bcast {
            0 if K > 0 => dense::<S, O, K, 0, false>(n, o, a),
            1 if K > 1 => dense::<S, O, K, 1, false>(n, o, a),
            2 if K > 2 => dense::<S, O, K, 2, false>(n, o, a),
            _ if stream => dense::<S, O, K, K, true>(n, o, a),
            _ => dense::<S, O, K, K, false>(n, o, a),
        };
    }
    while i < n {
        let m = (n - i).min(S::W);
        // written out rather than a loop over j: ld is too big a body for LLVM to
        // unroll, and a rolled loop keeps x on the stack (measured: strided runs 8% slower)
        let mut x = [S::zero(); K];
        let at = |j: usize| a[j].wrapping_offset(i as isize * sa[j]);
        x[0] = ld::<S>(at(0), sa[0], m);
        if K > 1 {
            x[1] = ld::<S>(at(1), sa[1], m);
        }
        if K > 2 {
            x[2] = ld::<S>(at(2), sa[2], m);
        }
        st::<S>(o.offset(i as isize * so), so, O::apply::<S>(x), m);
        i += m;
    }
}

/// One task of an elementwise op: the flat range lo..hi of the nest of its
/// N = K + 1 views (out first, then the inputs), run by run.
struct EwK<'a, O, const K: usize, const N: usize> {
    nest: &'a Nest<N>,
    lo: usize,
    hi: usize,
    p: [*mut f32; N],
    stream: bool,
    _op: O,
}
impl<O: EwOp<K>, const K: usize, const N: usize> Kernel for EwK<'_, O, K, N> {
    type Out = ();
    #[inline(always)]
    fn run<S: Simd>(self) {
        let (_, s) = self.nest.inner();
        let mode = dense_mode(s);
        let mut runs = self.nest.runs(self.lo, self.hi);
        while let Some((off, len)) = runs.next_run() {
            let mut a = [std::ptr::null::<f32>(); K];
            let mut sa = [0isize; K];
            // SAFETY: the run's offsets (the Nest over the validated views) stay inside every block
            unsafe {
                for j in 0..K {
                    a[j] = self.p[j + 1].offset(off[j + 1]);
                    sa[j] = s[j + 1];
                }
                line::<S, O, K>(
                    len,
                    self.p[0].offset(off[0]),
                    s[0],
                    a,
                    sa,
                    mode,
                    self.stream,
                )
            }
        }
        if self.stream {
            // SAFETY: orders this task's own streaming stores before the pool's join
            unsafe { S::stream_fence() }
        }
    }
}

/// A whole op as one contiguous run of n elements (see `map`).
struct Flat<O, const K: usize, const N: usize> {
    n: usize,
    p: [*mut f32; N],
    _op: O,
}
impl<O: EwOp<K>, const K: usize, const N: usize> Kernel for Flat<O, K, N> {
    type Out = ();
    #[inline(always)]
    fn run<S: Simd>(self) {
        let a: [*const f32; K] = std::array::from_fn(|j| self.p[j + 1] as *const f32);
        // SAFETY: the op is one contiguous run of n elements of every validated view
        unsafe { line::<S, O, K>(self.n, self.p[0], 1, a, [1; K], Some(K), false) }
    }
}

/// number of tasks for an op of `total` elements (1 when out may overlap itself)
fn tasks(pool: &Pool, total: usize, out: &Arr) -> usize {
    let ok = out
        .shape()
        .iter()
        .zip(out.strides())
        .all(|(&n, &s)| n == 1 || s != 0);
    if !ok {
        1
    } else {
        split_tasks(total, pool.threads(), PAR_MIN)
    }
}

/// streaming stores for this output? (contiguous and big: see STREAM_MIN_BYTES; typed.rs's
/// kernels of the other dtypes ask it too)
pub(crate) fn streams(out: &Arr) -> bool {
    out.numel() * out.itemsize() >= STREAM_MIN_BYTES && out.is_contiguous()
}

/// Runs `op` on views = [out, its K inputs] (inputs broadcast to out's shape).
pub fn map<O: EwOp<K>, const K: usize, const N: usize>(
    pool: &Pool,
    op: O,
    views: [&Arr; N],
) -> KResult {
    const { assert!(N == K + 1) };
    let out = views[0];
    if out.numel() < PAR_MIN
        && views
            .iter()
            .all(|v| v.shape() == out.shape() && v.is_contiguous())
    {
        // Small and all contiguous alike (a compiled chain, a small model's activations):
        // one run on this thread, without building and walking a nest, whose fixed cost
        // is most of a small op's (examples/progbench, Zen 4: a 1x1 add 62 -> 34 ns, a
        // 32x32 add 124 -> 98 ns).
        dispatch(Flat::<O, K, N> {
            n: out.numel(),
            p: views.map(|v| v.f()),
            _op: op,
        });
        return Ok(());
    }
    let nest = Nest::<N>::new(out.shape(), views.map(|v| v.strides()));
    let n = tasks(pool, nest.total, out);
    let stream = streams(out);
    let p = SendPtr(views.map(|v| v.f()));
    pool.run(n, &|t| {
        let (lo, hi) = chunk(nest.total, n, t, 64);
        let p = &p;
        dispatch(EwK {
            nest: &nest,
            lo,
            hi,
            p: p.0,
            stream,
            _op: op,
        });
    });
    Ok(())
}

/// Runs `put(out offset, a[i], b[i])` for every element of out, over int32 operands: the
/// int32 ops (exact, scalar) write their own result type through it.
fn each_i32(out: &Arr, a: &Arr, b: &Arr, mut put: impl FnMut(isize, i32, i32)) {
    let nest = Nest::<3>::new(out.shape(), [out.strides(), a.strides(), b.strides()]);
    let (_, s) = nest.inner();
    let mut runs = nest.runs(0, nest.total);
    while let Some((off, len)) = runs.next_run() {
        for i in 0..len as isize {
            // SAFETY: offsets of the Nest over the validated views stay inside a and b
            let (x, y) = unsafe {
                (
                    *a.i().offset(off[1] + i * s[1]),
                    *b.i().offset(off[2] + i * s[2]),
                )
            };
            put(off[0] + i * s[0], x, y);
        }
    }
}

/// Arithmetic on int32 operands (int32 out, wrapping).
pub fn binary_i32(f: fn(i32, i32) -> i32, out: &Arr, a: &Arr, b: &Arr) -> KResult {
    // SAFETY: o is an offset of the Nest over the validated out view
    each_i32(out, a, b, |o, x, y| unsafe { *out.i().offset(o) = f(x, y) });
    Ok(())
}

/// Comparisons of int32 operands (f32 0/1 out).
pub fn compare_i32(f: fn(i32, i32) -> bool, out: &Arr, a: &Arr, b: &Arr) -> KResult {
    // SAFETY: o is an offset of the Nest over the validated out view
    each_i32(out, a, b, |o, x, y| unsafe {
        *out.f().offset(o) = if f(x, y) { 1.0 } else { 0.0 }
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::{dispatch_on, Isa};

    /// the kernel of one task over the whole nest, on the ISA dispatch_on picks
    fn run_all<O: EwOp<K>, const K: usize, const N: usize>(
        isa: Isa,
        op: O,
        nest: &Nest<N>,
        p: [*mut f32; N],
        stream: bool,
    ) {
        dispatch_on(
            isa,
            EwK {
                nest,
                lo: 0,
                hi: nest.total,
                p,
                stream,
                _op: op,
            },
        )
    }

    #[test]
    fn streaming_stores_from_any_alignment_every_isa() {
        // out starts 0..15 floats past a 64-byte boundary; n covers head, body and tail
        for isa in Isa::all_supported() {
            for skew in 0..16 {
                for n in [1usize, 5, 16, 17, 40, 100] {
                    let a: Vec<f32> = (0..n).map(|i| i as f32 * 1.5).collect();
                    let b: Vec<f32> = (0..n).map(|i| i as f32 * 0.25).collect();
                    let mut buf = vec![-7f32; n + 32];
                    let base = buf.as_mut_ptr() as usize;
                    let start = (base.next_multiple_of(64) - base) / 4 + skew;
                    let nest = Nest::<3>::new(&[n], [&[1], &[1], &[1]]);
                    // SAFETY: start + n <= buf.len(): buf has 32 floats of slack
                    let o = unsafe { buf.as_mut_ptr().add(start) };
                    let (pa, pb) = (a.as_ptr() as *mut f32, b.as_ptr() as *mut f32);
                    run_all(isa, Sub, &nest, [o, pa, pb], true);
                    for i in 0..n {
                        assert_eq!(buf[start + i], a[i] - b[i], "{isa:?} skew {skew} n {n}");
                    }
                    assert!(buf[..start].iter().all(|&x| x == -7.0), "wrote before out");
                    assert!(
                        buf[start + n..].iter().all(|&x| x == -7.0),
                        "wrote past out"
                    );
                    let nest1 = Nest::<2>::new(&[n], [&[1], &[1]]);
                    run_all(isa, Neg, &nest1, [o, pa], true);
                    for i in 0..n {
                        assert_eq!(buf[start + i], -a[i], "unary {isa:?} skew {skew} n {n}");
                    }
                    assert!(
                        buf[start + n..].iter().all(|&x| x == -7.0),
                        "wrote past out"
                    );
                }
            }
        }
    }

    #[test]
    fn binary_broadcast_and_strided_every_isa() {
        // a: (7, 37) transposed view of a (37, 7) buffer; b: row (37,) broadcast
        let abuf: Vec<f32> = (0..37 * 7).map(|i| i as f32 * 0.5).collect();
        let bbuf: Vec<f32> = (0..37).map(|i| i as f32).collect();
        for isa in Isa::all_supported() {
            let mut out = vec![0f32; 7 * 37];
            let nest = Nest::<3>::new(&[7, 37], [&[37, 1], &[1, 7], &[0, 1]]);
            let (pa, pb) = (abuf.as_ptr() as *mut f32, bbuf.as_ptr() as *mut f32);
            run_all(isa, Sub, &nest, [out.as_mut_ptr(), pa, pb], false);
            for r in 0..7 {
                for c in 0..37 {
                    assert_eq!(out[r * 37 + c], abuf[c * 7 + r] - bbuf[c], "{isa:?}");
                }
            }
        }
    }
}
