//! copy (with f32 <-> i32 casts), fill, and host writes: all to strided outs.

use crate::runtime::{KResult, Pool, SendPtr};
use crate::view::{chunk, contiguous_strides, split_count, Arr, DType, Nest};

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
    match (sdt, ddt) {
        (DType::F32, DType::F32) | (DType::I32, DType::I32) => {
            let (s, d) = (src as *const u32, dst as *mut u32);
            if ss == 1 && ds == 1 {
                std::ptr::copy(s, d, n);
            } else {
                for i in 0..n as isize {
                    *d.offset(i * ds) = *s.offset(i * ss);
                }
            }
        }
        (DType::F32, DType::I32) => {
            let (s, d) = (src as *const f32, dst as *mut i32);
            for i in 0..n as isize {
                // truncates toward zero (saturating; NaN -> 0)
                *d.offset(i * ds) = *s.offset(i * ss) as i32;
            }
        }
        (DType::I32, DType::F32) => {
            let (s, d) = (src as *const i32, dst as *mut f32);
            for i in 0..n as isize {
                *d.offset(i * ds) = *s.offset(i * ss) as f32;
            }
        }
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
                    p.0 .1.offset(off[1] * 4),
                    adt,
                    s[1],
                    p.0 .0.offset(off[0] * 4),
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

pub fn fill(out: &Arr, value: f64) -> KResult {
    let nest = Nest::<1>::new(out.shape(), [out.strides()]);
    let (_, s) = nest.inner();
    let bits = match out.dtype {
        DType::F32 => (value as f32).to_bits(),
        DType::I32 => (value as i32) as u32,
    };
    let mut runs = nest.runs(0, nest.total);
    while let Some((off, len)) = runs.next_run() {
        // SAFETY: the Nest's runs stay inside the validated out view
        unsafe {
            let d = (out.ptr as *mut u32).offset(off[0]);
            if s[0] == 1 {
                std::slice::from_raw_parts_mut(d, len).fill(bits);
            } else {
                for i in 0..len as isize {
                    *d.offset(i * s[0]) = bits;
                }
            }
        }
    }
    Ok(())
}
