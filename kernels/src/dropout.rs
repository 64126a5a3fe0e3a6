//! dropout: out = x * mask in one pass, the mask never stored. The mask comes from
//! Threefry-2x32 with 20 rounds (Salmon et al. 2011, the counter-based generator of
//! Random123 and JAX), the same bits as the workers and webgpu kernels.
//!
//! Element i (flat, row-major) of the contiguous out is x[i] * m, m = `scale` where word
//! i & 1 of threefry2x32_20(key, (i >> 1, 0)), shifted right by 8, is >= threshold, else
//! 0.0: one evaluation gives the masks of the pair (2j, 2j + 1). Every pair is independent:
//! the loop is plain u32 arithmetic, run through `dispatch` so it is compiled (and
//! auto-vectorised) with the active ISA's features, and split over the pool in flat ranges;
//! x may have any strides (walked as a `Nest`). A run (a range's piece along the inner dim)
//! may start or end inside a pair: its first element (odd i) takes word 1 of its own
//! evaluation, its last (even i) word 0.

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

/// The mask's value for a Threefry word.
#[inline(always)]
fn keep(word: u32, threshold: u32, scale: f32) -> f32 {
    if word >> 8 >= threshold {
        scale
    } else {
        0.0
    }
}

/// The mask's value for flat index i alone (a run's odd first element or its even last one:
/// a whole evaluation for one element).
#[inline(always)]
fn mask1(key: [u32; 2], i: usize, threshold: u32, scale: f32) -> f32 {
    keep(
        threefry2x32(key, [(i >> 1) as u32, 0])[i & 1],
        threshold,
        scale,
    )
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

// SAFETY: pointers into validated views; tasks write disjoint ranges of out
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
                if so != 1 {
                    // (a 0-d nest: one element)
                    for j in 0..len as isize {
                        let i = (oo + j * so) as usize;
                        *o.offset(j * so) = *x.offset(j * sx) * mask1(key, i, threshold, scale);
                    }
                    continue;
                }
                // elements [0, head) finish a pair begun before the run, [head, head + body)
                // are whole pairs (flat index 2c, 2c + 1), the rest (0 or 1) begins one
                let first = oo as usize;
                let head = (first & 1).min(len);
                let body = (len - head) & !1;
                let c0 = (first + head) >> 1;
                if head == 1 {
                    *o = *x * mask1(key, first, threshold, scale);
                }
                let ob = std::slice::from_raw_parts_mut(o.add(head), body);
                if sx == 1 {
                    // (slices: the loop the compiler vectorises)
                    let xb = std::slice::from_raw_parts(x.add(head), body);
                    for (c, (o, x)) in ob.chunks_exact_mut(2).zip(xb.chunks_exact(2)).enumerate() {
                        let w = threefry2x32(key, [(c0 + c) as u32, 0]);
                        o[0] = x[0] * keep(w[0], threshold, scale);
                        o[1] = x[1] * keep(w[1], threshold, scale);
                    }
                } else {
                    let xb = x.offset(head as isize * sx);
                    for (c, o) in ob.chunks_exact_mut(2).enumerate() {
                        let w = threefry2x32(key, [(c0 + c) as u32, 0]);
                        let xc = xb.offset(2 * c as isize * sx);
                        o[0] = *xc * keep(w[0], threshold, scale);
                        o[1] = *xc.offset(sx) * keep(w[1], threshold, scale);
                    }
                }
                let last = head + body;
                if last < len {
                    *o.add(last) =
                        *x.offset(last as isize * sx) * mask1(key, first + last, threshold, scale);
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
    // (an i32 or i64 view of two words: each read as its low 32 bits)
    let word = |k: usize| key.index(k) as u32;
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
    use crate::arch::{dispatch_on, Isa};
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
            let w = threefry2x32([5, -3i32 as u32], [(i / 2) as u32, 0])[i % 2];
            x * if w >> 8 >= threshold { 2.0 } else { 0.0 }
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

    #[test]
    fn ranges_and_runs_may_start_and_end_inside_a_pair() {
        // the pool cuts a flat range [lo, hi) for each thread; a strided x's runs are rows
        // (of 13 here: every other one starts at an odd flat index). Each ISA's kernel
        // writes exactly [lo, hi), element i from word i & 1 of evaluation i >> 1.
        let (rows, cols) = (9, 13);
        let n = rows * cols;
        let mut xs: Vec<f32> = (0..n).map(|i| i as f32 + 0.5).collect();
        let key = [0x9e3779b9, 7];
        let threshold = 1 << 23;
        let want = |i: usize, x: f32| {
            let w = threefry2x32(key, [(i / 2) as u32, 0])[i % 2];
            x * if w >> 8 >= threshold { 3.0 } else { 0.0 }
        };
        let mut kept = [0usize; 2];
        for isa in Isa::all_supported() {
            for transposed in [false, true] {
                let xst: [isize; 2] = if transposed {
                    [1, rows as isize]
                } else {
                    [cols as isize, 1]
                };
                let nest = Nest::<2>::new(&[rows, cols], [&[cols as isize, 1], &xst]);
                for (lo, hi) in [
                    (0, n),
                    (1, n),
                    (3, 4),
                    (4, 5),
                    (5, 6),
                    (6, 8),
                    (13, 40),
                    (27, n - 1),
                ] {
                    let mut out = vec![f32::NAN; n];
                    dispatch_on(
                        isa,
                        DropK {
                            nest: &nest,
                            out: out.as_mut_ptr(),
                            x: xs.as_mut_ptr(),
                            lo,
                            hi,
                            key,
                            threshold,
                            scale: 3.0,
                        },
                    );
                    for (i, &v) in out.iter().enumerate() {
                        let (r, c) = (i / cols, i % cols);
                        let xi = if transposed { xs[c * rows + r] } else { xs[i] };
                        if (lo..hi).contains(&i) {
                            assert_eq!(v.to_bits(), want(i, xi).to_bits(), "{isa:?} {i} {lo} {hi}");
                            kept[i % 2] += (v != 0.0) as usize;
                        } else {
                            assert!(v.is_nan(), "{isa:?}: {i} written outside [{lo}, {hi})");
                        }
                    }
                }
            }
        }
        assert!(kept[0] > 0 && kept[1] > 0); // (both words used)
    }
}
