//! dropout_mask: Threefry-2x32 with 20 rounds (Salmon et al. 2011, the counter-based
//! generator of Random123 and JAX), the same bits as the workers and webgpu kernels.
//!
//! Element i of the contiguous out is `scale` where the first word of
//! threefry2x32_20(key, (i, 0)), shifted right by 8, is >= threshold, else 0. Every
//! element is independent: the loop is plain u32 arithmetic, run through `dispatch` so
//! it is compiled (and auto-vectorised) with the active ISA's features, and split over
//! the pool in flat ranges.

use crate::arch::{dispatch, Kernel, Simd};
use crate::runtime::{KResult, Pool};
use crate::view::{chunk, split_count, Arr};

const ROTATIONS: [u32; 8] = [13, 15, 26, 6, 17, 29, 16, 24];
const PARITY: u32 = 0x1BD11BDA;
/// elements per pool task at least (a few microseconds of work)
const PAR_MIN: usize = 1 << 14;

/// Both words of threefry2x32_20(key, counter).
#[inline(always)]
pub fn threefry2x32(key: [u32; 2], counter: [u32; 2]) -> [u32; 2] {
    let ks = [key[0], key[1], key[0] ^ key[1] ^ PARITY];
    let mut x0 = counter[0].wrapping_add(ks[0]);
    let mut x1 = counter[1].wrapping_add(ks[1]);
    for r in 0..20 {
        x0 = x0.wrapping_add(x1);
        x1 = x1.rotate_left(ROTATIONS[r % 8]) ^ x0;
        if r % 4 == 3 {
            // key injection s = 1..5 after every 4 rounds
            let s = r / 4 + 1;
            x0 = x0.wrapping_add(ks[s % 3]);
            x1 = x1.wrapping_add(ks[(s + 1) % 3]).wrapping_add(s as u32);
        }
    }
    [x0, x1]
}

struct MaskK {
    out: *mut f32,
    lo: usize,
    hi: usize,
    key: [u32; 2],
    threshold: u32,
    scale: f32,
}

unsafe impl Sync for MaskK {}

impl Kernel for MaskK {
    type Out = ();
    #[inline(always)]
    fn run<S: Simd>(self) {
        // SAFETY: out is a validated contiguous f32 view of at least `hi` elements
        let out =
            unsafe { std::slice::from_raw_parts_mut(self.out.add(self.lo), self.hi - self.lo) };
        for (j, o) in out.iter_mut().enumerate() {
            let x0 = threefry2x32(self.key, [(self.lo + j) as u32, 0])[0];
            *o = if x0 >> 8 >= self.threshold {
                self.scale
            } else {
                0.0
            };
        }
    }
}

/// The mask into `out` (validated: contiguous f32, fewer than 2^32 elements), the key
/// the two words of the i32 (2,) view `key`.
pub fn dropout_mask(pool: &Pool, out: &Arr, key: &Arr, threshold: u32, scale: f32) -> KResult {
    let n = out.numel();
    let word = |k: isize| unsafe { *key.i().offset(k * key.st[0]) } as u32;
    let base = MaskK {
        out: out.f(),
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
            dispatch(MaskK { lo, hi, ..*base });
        }
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn mask_keeps_where_the_word_reaches_the_threshold() {
        let pool = Pool::new(2);
        let n = 40_000;
        let mut data = vec![7f32; n];
        let mut key = [5i32, -3];
        let out = Arr::f32s(&mut data, &[n]);
        let k = Arr::i32s(&mut key, &[2]);
        let threshold = 1 << 23; // p = 0.5
        dropout_mask(&pool, &out, &k, threshold, 2.0).unwrap();
        for (i, &v) in data.iter().enumerate() {
            let x0 = threefry2x32([5, -3i32 as u32], [i as u32, 0])[0];
            assert_eq!(
                v,
                if x0 >> 8 >= threshold { 2.0 } else { 0.0 },
                "element {i}"
            );
        }
    }
}
