//! copy (casting between any two dtype codes: elem.rs), fill (any code), and host
//! writes: all to strided outs.

use crate::elem::Elem;
use crate::with_elem;

use crate::runtime::{KResult, Pool, SendPtr};
use crate::view::{chunk, contiguous_strides, split_count, Arr, DType, Nest};

/// one run of a same-dtype copy: elements of `T`'s size, moved as bits
#[inline(always)]
unsafe fn move_run<T: Copy>(n: usize, src: *const u8, ss: isize, dst: *mut u8, ds: isize) {
    let (s, d) = (src as *const T, dst as *mut T);
    if ss == 1 && ds == 1 && n * std::mem::size_of::<T>() > 256 {
        std::ptr::copy(s, d, n);
    } else if ss == 1 && ds == 1 {
        // short runs (a pool's windows: runs of kw = 2; attention's heads, 16-64 floats, as
        // a (B, T, nh, hs) <-> (B, nh, T, hs) transpose moves them) inline, without
        // memmove's call (makemore's (32, 16, 4, 16) head copies: 25 -> 14 us); the runs
        // of one copy never overlap (out never aliases its input: ops.py)
        for i in 0..n {
            *d.add(i) = *s.add(i);
        }
    } else {
        for i in 0..n as isize {
            d.offset(i * ds)
                .write_unaligned(s.offset(i * ss).read_unaligned());
        }
    }
}

/// one run of a casting copy (elem.rs: PyTorch's casts)
#[inline(always)]
unsafe fn cast_run<S: Elem, D: Elem>(n: usize, src: *const u8, ss: isize, dst: *mut u8, ds: isize) {
    for i in 0..n as isize {
        D::put(dst, i * ds, D::cast(S::get(src, i * ss)));
    }
}

#[inline(always)]
unsafe fn copy_run(
    n: usize,
    src: *const u8,
    sdt: DType,
    ss: isize,
    dst: *mut u8,
    ddt: DType,
    ds: isize,
) {
    if sdt == ddt {
        match sdt.size() {
            8 => move_run::<u64>(n, src, ss, dst, ds),
            4 => move_run::<u32>(n, src, ss, dst, ds),
            2 => move_run::<u16>(n, src, ss, dst, ds),
            _ => move_run::<u8>(n, src, ss, dst, ds),
        }
    } else {
        with_elem!(
            sdt,
            S,
            with_elem!(ddt, D, cast_run::<S, D>(n, src, ss, dst, ds))
        )
    }
}

fn par_ok(out: &Arr) -> bool {
    out.shape()
        .iter()
        .zip(out.strides())
        .all(|(&n, &s)| n == 1 || s != 0)
}

/// out = a (same shape), casting between dtypes
pub fn copy(pool: &Pool, out: &Arr, a: &Arr) -> KResult {
    let nest = Nest::<2>::new(out.shape(), [out.strides(), a.strides()]);
    let n = if par_ok(out) {
        split_count(nest.total, pool.threads(), 1 << 16)
    } else {
        1
    };
    let (_, s) = nest.inner();
    let p = SendPtr((out.ptr, a.ptr as *const u8));
    let (odt, adt) = (out.dtype, a.dtype);
    pool.run(n, &|t| {
        let (lo, hi) = chunk(nest.total, n, t, 64);
        let p = &p;
        let mut runs = nest.runs(lo, hi);
        while let Some((off, len)) = runs.next_run() {
            // SAFETY: the runs stay inside both validated views; tasks copy disjoint runs of out
            unsafe {
                copy_run(
                    len,
                    p.0 .1.offset(off[1] * adt.size() as isize),
                    adt,
                    s[1],
                    p.0 .0.offset(off[0] * odt.size() as isize),
                    odt,
                    s[0],
                );
            }
        }
    });
    Ok(())
}

/// host -> heap: a contiguous source (Python-owned, kept alive until done)
pub fn write(pool: &Pool, out: &Arr, src: *const u8) -> KResult {
    let st = contiguous_strides(out.shape());
    let a = Arr::new(src as *mut u8, out.dtype, out.shape(), &st[..out.nd]);
    copy(pool, out, &a)
}

/// out = value, cast to out's dtype as a float64 is (elem.rs); an integer out takes
/// `exact` (the int Python gave) where there is one
pub fn fill(out: &Arr, value: f64, exact: Option<i64>) -> KResult {
    with_elem!(out.dtype, T, {
        let v = match exact {
            Some(i) if !T::FLOAT => T::from_i64(i),
            _ => T::from_f64(value),
        };
        fill_t::<T>(out, v)
    })
}

fn fill_t<T: Elem>(out: &Arr, v: T) -> KResult {
    let nest = Nest::<1>::new(out.shape(), [out.strides()]);
    let (_, s) = nest.inner();
    let mut runs = nest.runs(0, nest.total);
    while let Some((off, len)) = runs.next_run() {
        // SAFETY: the Nest's runs stay inside the validated out view
        unsafe {
            let d = (out.ptr as *mut T).offset(off[0]);
            if s[0] == 1 && (d as usize).is_multiple_of(std::mem::align_of::<T>()) {
                std::slice::from_raw_parts_mut(d, len).fill(v);
            } else {
                for i in 0..len as isize {
                    d.offset(i * s[0]).write_unaligned(v);
                }
            }
        }
    }
    Ok(())
}
