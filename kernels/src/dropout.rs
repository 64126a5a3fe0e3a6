//! dropout: out = x * mask in one pass, the mask never stored. The mask comes from
//! Threefry-2x32 with 20 rounds (Salmon et al. 2011, the counter-based generator of
//! Random123 and JAX), the same bits as the workers and webgpu kernels.
//!
//! Element i (flat, row-major) of the contiguous out is x[i] * m, m = `scale` where the
//! first word of threefry2x32_20(key, (i, 0)), shifted right by 8, is >= threshold, else
//! 0.0. Every element is independent: the loop is plain u32 arithmetic, run through
//! `dispatch` so it is compiled (and auto-vectorised) with the active ISA's features, and
//! split over the pool in flat ranges; x may have any strides (walked as a `Nest`).

use crate::arch::{dispatch, Kernel, Simd};
use crate::runtime::{KResult, Pool};
use crate::view::{chunk, split_count, Arr, Nest};

/// the rotations of rounds 4k..4k+3, k even, then k odd
const ROT_EVEN: [u32; 4] = [13, 15, 26, 6];
const ROT_ODD: [u32; 4] = [17, 29, 16, 24];
const PARITY: u32 = 0x1BD11BDA;
/// elements per pool task at least (a few microseconds of work)
const PAR_MIN: usize = 1 << 14;

#[inline(always)]
fn rounds4(x: &mut [u32; 2], rot: [u32; 4]) {
    for r in rot {
        x[0] = x[0].wrapping_add(x[1]);
        x[1] = x[1].rotate_left(r) ^ x[0];
    }
}

/// key injection s (1..=5) after every 4 rounds
#[inline(always)]
fn inject(x: &mut [u32; 2], ks: [u32; 3], s: usize) {
    x[0] = x[0].wrapping_add(ks[s % 3]);
    x[1] = x[1].wrapping_add(ks[(s + 1) % 3]).wrapping_add(s as u32);
}

/// Both words of threefry2x32_20(key, counter). (Written out, every rotation a constant:
/// a loop over the 20 rounds left the callers' element loops unvectorised: a dropout of
/// 2^22 elements took 58 ms, now 3.6 ms, AVX-512 on 2 threads.)
#[inline(always)]
pub fn threefry2x32(key: [u32; 2], counter: [u32; 2]) -> [u32; 2] {
    let ks = [key[0], key[1], key[0] ^ key[1] ^ PARITY];
    let mut x = [
        counter[0].wrapping_add(ks[0]),
        counter[1].wrapping_add(ks[1]),
    ];
    rounds4(&mut x, ROT_EVEN);
    inject(&mut x, ks, 1);
    rounds4(&mut x, ROT_ODD);
    inject(&mut x, ks, 2);
    rounds4(&mut x, ROT_EVEN);
    inject(&mut x, ks, 3);
    rounds4(&mut x, ROT_ODD);
    inject(&mut x, ks, 4);
    rounds4(&mut x, ROT_EVEN);
    inject(&mut x, ks, 5);
    x
}

/// The mask's value for flat index i.
#[inline(always)]
fn mask(key: [u32; 2], i: u32, threshold: u32, scale: f32) -> f32 {
    if threefry2x32(key, [i, 0])[0] >> 8 >= threshold {
        scale
    } else {
        0.0
    }
}

struct DropK<'a> {
    nest: &'a Nest<2>,
    out: *mut f32,
    x: *const f32,
    lo: usize,
    hi: usize,
    key: [u32; 2],
    threshold: u32,
    scale: f32,
}

unsafe impl Sync for DropK<'_> {}

impl Kernel for DropK<'_> {
    type Out = ();
    #[inline(always)]
    fn run<S: Simd>(self) {
        let (key, threshold, scale) = (self.key, self.threshold, self.scale);
        let (_, [so, sx]) = self.nest.inner();
        let mut runs = self.nest.runs(self.lo, self.hi);
        while let Some(([oo, ox], len)) = runs.next_run() {
            // out is contiguous: an element's offset in it is its flat index (< 2^32)
            // SAFETY: out and x are validated views of the nest's shape, and out never
            // overlaps x (ops.py's contract for an op outside the elementwise families)
            unsafe {
                let (o, x) = (self.out.offset(oo), self.x.offset(ox));
                if so == 1 && sx == 1 {
                    // (slices: the loop the compiler vectorises)
                    let o = std::slice::from_raw_parts_mut(o, len);
                    let x = std::slice::from_raw_parts(x, len);
                    for (j, (o, &x)) in o.iter_mut().zip(x).enumerate() {
                        *o = x * mask(key, (oo as usize + j) as u32, threshold, scale);
                    }
                } else {
                    for j in 0..len as isize {
                        let i = (oo + j * so) as u32;
                        *o.offset(j * so) = *x.offset(j * sx) * mask(key, i, threshold, scale);
                    }
                }
            }
        }
    }
}

/// out = x * the mask (validated: out contiguous f32 of fewer than 2^32 elements, x f32 of
/// its shape, any strides), the key the two words of the i32 (2,) view `key`.
pub fn dropout(pool: &Pool, out: &Arr, x: &Arr, key: &Arr, threshold: u32, scale: f32) -> KResult {
    let nest = Nest::<2>::new(out.shape(), [out.strides(), x.strides()]);
    let n = nest.total;
    let word = |k: isize| unsafe { *key.i().offset(k * key.st[0]) } as u32;
    let base = DropK {
        nest: &nest,
        out: out.f(),
        x: x.f(),
        lo: 0,
        hi: n,
        key: [word(0), word(1)],
        threshold,
        scale,
    };
    let parts = split_count(n, pool.threads(), PAR_MIN);
    pool.run(parts, &|t| {
        let (lo, hi) = chunk(n, parts, t, 64);
        let base = &base;
        if lo < hi {
            dispatch(DropK { lo, hi, ..*base });
        }
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::DType;

    #[test]
    fn threefry_known_answers() {
        let m = u32::MAX;
        assert_eq!(threefry2x32([0, 0], [0, 0]), [0x6b200159, 0x99ba4efe]);
        assert_eq!(threefry2x32([m, m], [m, m]), [0x1cb996fc, 0xbb002be7]);
        assert_eq!(
            threefry2x32([0x13198a2e, 0x03707344], [0x243f6a88, 0x85a308d3]),
            [0xc4923a9c, 0x483df7a0]
        );
    }

    #[test]
    fn dropout_multiplies_by_the_mask_of_the_flat_index() {
        let pool = Pool::new(2);
        let (rows, cols) = (200, 201); // 40_200 elements: several pool tasks
        let n = rows * cols;
        let mut data = vec![7f32; n];
        let mut xs: Vec<f32> = (0..n).map(|i| i as f32 - 5.0).collect();
        let mut key = [5i32, -3];
        let k = Arr::i32s(&mut key, &[2]);
        let threshold = 1 << 23; // p = 0.5
        let want = |i: usize, x: f32| {
            let x0 = threefry2x32([5, -3i32 as u32], [i as u32, 0])[0];
            x * if x0 >> 8 >= threshold { 2.0 } else { 0.0 }
        };
        // contiguous x, then x the transpose of a (cols, rows) array (strided)
        for transposed in [false, true] {
            let out = Arr::f32s(&mut data, &[rows, cols]);
            let x = if transposed {
                Arr::new(
                    xs.as_mut_ptr() as *mut u8,
                    DType::F32,
                    &[rows, cols],
                    &[1, rows as isize],
                )
            } else {
                Arr::f32s(&mut xs, &[rows, cols])
            };
            dropout(&pool, &out, &x, &k, threshold, 2.0).unwrap();
            for (i, &v) in data.iter().enumerate() {
                let (r, c) = (i / cols, i % cols);
                let xi = if transposed { xs[c * rows + r] } else { xs[i] };
                assert_eq!(
                    v.to_bits(),
                    want(i, xi).to_bits(),
                    "element {i} ({transposed})"
                );
            }
        }
    }
}
