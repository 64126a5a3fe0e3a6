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
use crate::runtime::{KResult, Pool};
use crate::view::{chunk, split_count, Arr, Nest};

/// below this many elements per thread an op is not split
pub const PAR_MIN: usize = 1 << 15;

pub trait UOp: Copy {
    unsafe fn apply<S: Simd>(x: S::F) -> S::F;
}
pub trait BOp: Copy {
    unsafe fn apply<S: Simd>(a: S::F, b: S::F) -> S::F;
}

macro_rules! uop {
    ($name:ident, |$x:ident| $body:expr) => {
        #[derive(Clone, Copy)]
        pub struct $name;
        impl UOp for $name {
            #[inline(always)]
            unsafe fn apply<S: Simd>($x: S::F) -> S::F {
                $body
            }
        }
    };
}
macro_rules! bop {
    ($name:ident, |$a:ident, $b:ident| $body:expr) => {
        #[derive(Clone, Copy)]
        pub struct $name;
        impl BOp for $name {
            #[inline(always)]
            unsafe fn apply<S: Simd>($a: S::F, $b: S::F) -> S::F {
                $body
            }
        }
    };
}

uop!(Neg, |x| S::neg(x));
uop!(Exp, |x| math::exp::<S>(x));
uop!(Log, |x| math::log::<S>(x));
uop!(Relu, |x| S::max_nan(x, S::zero()));
uop!(Tanh, |x| math::tanh::<S>(x));
uop!(Sigmoid, |x| math::sigmoid::<S>(x));
uop!(Sqrt, |x| S::sqrt(x));
uop!(Abs, |x| S::abs(x));

bop!(Add, |a, b| S::add(a, b));
bop!(Sub, |a, b| S::sub(a, b));
bop!(Mul, |a, b| S::mul(a, b));
bop!(Div, |a, b| S::div(a, b));
bop!(Maximum, |a, b| S::max_nan(a, b));
bop!(Minimum, |a, b| S::min_nan(a, b));
bop!(Pow, |a, b| {
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
bop!(Eq, |a, b| S::select(S::eq(a, b), S::splat(1.0), S::zero()));
bop!(Ne, |a, b| S::select(S::eq(a, b), S::zero(), S::splat(1.0)));
bop!(Lt, |a, b| S::select(S::lt(a, b), S::splat(1.0), S::zero()));
bop!(Le, |a, b| S::select(S::le(a, b), S::splat(1.0), S::zero()));
bop!(Gt, |a, b| S::select(S::lt(b, a), S::splat(1.0), S::zero()));
bop!(Ge, |a, b| S::select(S::le(b, a), S::splat(1.0), S::zero()));

/// Load up to W lanes of a run with stride s (1, 0 or general); `n` valid lanes.
#[inline(always)]
unsafe fn ld<S: Simd>(p: *const f32, s: isize, n: usize) -> S::F {
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
unsafe fn st<S: Simd>(p: *mut f32, s: isize, v: S::F, n: usize) {
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

#[inline(always)]
unsafe fn run1<S: Simd, O: UOp>(
    n: usize,
    a: *const f32,
    sa: isize,
    o: *mut f32,
    so: isize,
    stream: bool,
) {
    let w = S::W;
    let mut i = 0;
    if sa == 1 && so == 1 && stream {
        let head = stream_head::<S>(o, n);
        if head > 0 {
            S::store_part(o, O::apply::<S>(ld::<S>(a, 1, head)), head);
        }
        i = head;
        while i + 2 * w <= n {
            let x0 = S::load(a.add(i));
            let x1 = S::load(a.add(i + w));
            S::stream(o.add(i), O::apply::<S>(x0));
            S::stream(o.add(i + w), O::apply::<S>(x1));
            i += 2 * w;
        }
    } else if sa == 1 && so == 1 {
        while i + 2 * w <= n {
            let x0 = S::load(a.add(i));
            let x1 = S::load(a.add(i + w));
            S::store(o.add(i), O::apply::<S>(x0));
            S::store(o.add(i + w), O::apply::<S>(x1));
            i += 2 * w;
        }
        while i + w <= n {
            S::store(o.add(i), O::apply::<S>(S::load(a.add(i))));
            i += w;
        }
    }
    while i < n {
        let m = (n - i).min(w);
        let x = ld::<S>(a.offset(i as isize * sa), sa, m);
        st::<S>(o.offset(i as isize * so), so, O::apply::<S>(x), m);
        i += m;
    }
}

#[inline(always)]
unsafe fn run2<S: Simd, O: BOp>(
    n: usize,
    a: *const f32,
    sa: isize,
    b: *const f32,
    sb: isize,
    o: *mut f32,
    so: isize,
    stream: bool,
) {
    let w = S::W;
    let mut i = 0;
    if so == 1 && sa == 1 && sb == 1 && stream {
        let head = stream_head::<S>(o, n);
        if head > 0 {
            S::store_part(
                o,
                O::apply::<S>(ld::<S>(a, 1, head), ld::<S>(b, 1, head)),
                head,
            );
        }
        i = head;
        while i + w <= n {
            S::stream(
                o.add(i),
                O::apply::<S>(S::load(a.add(i)), S::load(b.add(i))),
            );
            i += w;
        }
    } else if so == 1 {
        if sa == 1 && sb == 1 {
            while i + 2 * w <= n {
                let r0 = O::apply::<S>(S::load(a.add(i)), S::load(b.add(i)));
                let r1 = O::apply::<S>(S::load(a.add(i + w)), S::load(b.add(i + w)));
                S::store(o.add(i), r0);
                S::store(o.add(i + w), r1);
                i += 2 * w;
            }
        } else if sa == 1 && sb == 0 {
            let vb = S::splat(*b);
            while i + 2 * w <= n {
                S::store(o.add(i), O::apply::<S>(S::load(a.add(i)), vb));
                S::store(o.add(i + w), O::apply::<S>(S::load(a.add(i + w)), vb));
                i += 2 * w;
            }
        } else if sa == 0 && sb == 1 {
            let va = S::splat(*a);
            while i + 2 * w <= n {
                S::store(o.add(i), O::apply::<S>(va, S::load(b.add(i))));
                S::store(o.add(i + w), O::apply::<S>(va, S::load(b.add(i + w))));
                i += 2 * w;
            }
        }
    }
    while i < n {
        let m = (n - i).min(w);
        let x = ld::<S>(a.offset(i as isize * sa), sa, m);
        let y = ld::<S>(b.offset(i as isize * sb), sb, m);
        st::<S>(o.offset(i as isize * so), so, O::apply::<S>(x, y), m);
        i += m;
    }
}

#[inline(always)]
unsafe fn run_where<S: Simd>(
    n: usize,
    c: *const f32,
    sc: isize,
    a: *const f32,
    sa: isize,
    b: *const f32,
    sb: isize,
    o: *mut f32,
    so: isize,
) {
    let w = S::W;
    let mut i = 0;
    while i < n {
        let m = (n - i).min(w);
        let cv = ld::<S>(c.offset(i as isize * sc), sc, m);
        let x = ld::<S>(a.offset(i as isize * sa), sa, m);
        let y = ld::<S>(b.offset(i as isize * sb), sb, m);
        // cond != 0 picks a (NaN != 0 is true, like NumPy)
        let r = S::select(S::eq(cv, S::zero()), y, x);
        st::<S>(o.offset(i as isize * so), so, r, m);
        i += m;
    }
}

struct UnaryK<'a, O: UOp> {
    nest: &'a Nest<2>,
    lo: usize,
    hi: usize,
    o: *mut f32,
    a: *const f32,
    stream: bool,
    _op: O,
}
impl<O: UOp> Kernel for UnaryK<'_, O> {
    type Out = ();
    #[inline(always)]
    fn run<S: Simd>(self) {
        let (_, s) = self.nest.inner();
        let mut runs = self.nest.runs(self.lo, self.hi);
        while let Some((off, len)) = runs.next_run() {
            unsafe {
                run1::<S, O>(
                    len,
                    self.a.offset(off[1]),
                    s[1],
                    self.o.offset(off[0]),
                    s[0],
                    self.stream,
                )
            }
        }
        if self.stream {
            unsafe { S::stream_fence() }
        }
    }
}

struct BinaryK<'a, O: BOp> {
    nest: &'a Nest<3>,
    lo: usize,
    hi: usize,
    o: *mut f32,
    a: *const f32,
    b: *const f32,
    stream: bool,
    _op: O,
}
impl<O: BOp> Kernel for BinaryK<'_, O> {
    type Out = ();
    #[inline(always)]
    fn run<S: Simd>(self) {
        let (_, s) = self.nest.inner();
        let mut runs = self.nest.runs(self.lo, self.hi);
        while let Some((off, len)) = runs.next_run() {
            unsafe {
                run2::<S, O>(
                    len,
                    self.a.offset(off[1]),
                    s[1],
                    self.b.offset(off[2]),
                    s[2],
                    self.o.offset(off[0]),
                    s[0],
                    self.stream,
                )
            }
        }
        if self.stream {
            unsafe { S::stream_fence() }
        }
    }
}

struct WhereK<'a> {
    nest: &'a Nest<4>,
    lo: usize,
    hi: usize,
    o: *mut f32,
    c: *const f32,
    a: *const f32,
    b: *const f32,
}
impl Kernel for WhereK<'_> {
    type Out = ();
    #[inline(always)]
    fn run<S: Simd>(self) {
        let (_, s) = self.nest.inner();
        let mut runs = self.nest.runs(self.lo, self.hi);
        while let Some((off, len)) = runs.next_run() {
            unsafe {
                run_where::<S>(
                    len,
                    self.c.offset(off[1]),
                    s[1],
                    self.a.offset(off[2]),
                    s[2],
                    self.b.offset(off[3]),
                    s[3],
                    self.o.offset(off[0]),
                    s[0],
                )
            }
        }
    }
}

struct SendPtr<T>(T);
unsafe impl<T> Sync for SendPtr<T> {}
unsafe impl<T> Send for SendPtr<T> {}

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
        split_count(total, pool.threads(), PAR_MIN)
    }
}

/// streaming stores for this output? (contiguous and big: see STREAM_MIN_BYTES)
fn streams(out: &Arr) -> bool {
    out.numel() * 4 >= STREAM_MIN_BYTES && out.is_contiguous()
}

pub fn unary<O: UOp + Sync>(pool: &Pool, op: O, out: &Arr, a: &Arr) -> KResult {
    let nest = Nest::<2>::new(out.shape(), [out.strides(), a.strides()]);
    let n = tasks(pool, nest.total, out);
    let stream = streams(out);
    let p = SendPtr((out.f(), a.f() as *const f32));
    pool.run(n, &|t| {
        let (lo, hi) = chunk(nest.total, n, t, 64);
        let p = &p;
        dispatch(UnaryK {
            nest: &nest,
            lo,
            hi,
            o: p.0 .0,
            a: p.0 .1,
            stream,
            _op: op,
        });
    });
    Ok(())
}

pub fn binary<O: BOp + Sync>(pool: &Pool, op: O, out: &Arr, a: &Arr, b: &Arr) -> KResult {
    let nest = Nest::<3>::new(out.shape(), [out.strides(), a.strides(), b.strides()]);
    let n = tasks(pool, nest.total, out);
    let stream = streams(out);
    let p = SendPtr((out.f(), a.f() as *const f32, b.f() as *const f32));
    pool.run(n, &|t| {
        let (lo, hi) = chunk(nest.total, n, t, 64);
        let p = &p;
        dispatch(BinaryK {
            nest: &nest,
            lo,
            hi,
            o: p.0 .0,
            a: p.0 .1,
            b: p.0 .2,
            stream,
            _op: op,
        });
    });
    Ok(())
}

pub fn where_(pool: &Pool, out: &Arr, c: &Arr, a: &Arr, b: &Arr) -> KResult {
    let nest = Nest::<4>::new(
        out.shape(),
        [out.strides(), c.strides(), a.strides(), b.strides()],
    );
    let n = tasks(pool, nest.total, out);
    let p = SendPtr((
        out.f(),
        c.f() as *const f32,
        a.f() as *const f32,
        b.f() as *const f32,
    ));
    pool.run(n, &|t| {
        let (lo, hi) = chunk(nest.total, n, t, 64);
        let p = &p;
        dispatch(WhereK {
            nest: &nest,
            lo,
            hi,
            o: p.0 .0,
            c: p.0 .1,
            a: p.0 .2,
            b: p.0 .3,
        });
    });
    Ok(())
}

/// Comparisons of int32 operands (f32 0/1 out): exact integer compares, scalar.
pub fn compare_i32(f: fn(i32, i32) -> bool, out: &Arr, a: &Arr, b: &Arr) -> KResult {
    let nest = Nest::<3>::new(out.shape(), [out.strides(), a.strides(), b.strides()]);
    let (_, s) = nest.inner();
    let mut runs = nest.runs(0, nest.total);
    while let Some((off, len)) = runs.next_run() {
        for i in 0..len as isize {
            unsafe {
                let x = *a.i().offset(off[1] + i * s[1]);
                let y = *b.i().offset(off[2] + i * s[2]);
                *out.f().offset(off[0] + i * s[0]) = if f(x, y) { 1.0 } else { 0.0 };
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::{dispatch_on, Isa};

    struct B<'a>(&'a Nest<3>, *mut f32, *const f32, *const f32, bool);
    impl Kernel for B<'_> {
        type Out = ();
        fn run<S: Simd>(self) {
            BinaryK {
                nest: self.0,
                lo: 0,
                hi: self.0.total,
                o: self.1,
                a: self.2,
                b: self.3,
                stream: self.4,
                _op: Sub,
            }
            .run::<S>()
        }
    }

    struct U<'a>(&'a Nest<2>, *mut f32, *const f32);
    impl Kernel for U<'_> {
        type Out = ();
        fn run<S: Simd>(self) {
            UnaryK {
                nest: self.0,
                lo: 0,
                hi: self.0.total,
                o: self.1,
                a: self.2,
                stream: true,
                _op: Neg,
            }
            .run::<S>()
        }
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
                    let o = unsafe { buf.as_mut_ptr().add(start) };
                    dispatch_on(isa, B(&nest, o, a.as_ptr(), b.as_ptr(), true));
                    for i in 0..n {
                        assert_eq!(buf[start + i], a[i] - b[i], "{isa:?} skew {skew} n {n}");
                    }
                    assert!(buf[..start].iter().all(|&x| x == -7.0), "wrote before out");
                    assert!(
                        buf[start + n..].iter().all(|&x| x == -7.0),
                        "wrote past out"
                    );
                    let nest1 = Nest::<2>::new(&[n], [&[1], &[1]]);
                    dispatch_on(isa, U(&nest1, o, a.as_ptr()));
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
            dispatch_on(
                isa,
                B(&nest, out.as_mut_ptr(), abuf.as_ptr(), bbuf.as_ptr(), false),
            );
            for r in 0..7 {
                for c in 0..37 {
                    assert_eq!(out[r * 37 + c], abuf[c * 7 + r] - bbuf[c], "{isa:?}");
                }
            }
        }
    }
}
