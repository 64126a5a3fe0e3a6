//! AVX2 + FMA: 8 f32 lanes (x86-64). Only called inside functions compiled
//! with `#[target_feature(enable = "avx2,fma")]` (see arch/mod.rs).

use super::Simd;
use core::arch::x86_64::*;

#[derive(Clone, Copy)]
pub struct Avx2;

impl Simd for Avx2 {
    const NAME: &'static str = "avx2+fma";
    const W: usize = 8;
    const MR: usize = 6;
    type F = __m256;
    type M = __m256;

    #[inline(always)]
    unsafe fn splat(x: f32) -> __m256 {
        _mm256_set1_ps(x)
    }
    #[inline(always)]
    unsafe fn load(p: *const f32) -> __m256 {
        _mm256_loadu_ps(p)
    }
    #[inline(always)]
    unsafe fn store(p: *mut f32, v: __m256) {
        _mm256_storeu_ps(p, v)
    }
    #[inline(always)]
    unsafe fn stream(p: *mut f32, v: __m256) {
        _mm256_stream_ps(p, v)
    }
    #[inline(always)]
    unsafe fn stream_fence() {
        _mm_sfence()
    }
    #[inline(always)]
    unsafe fn add(a: __m256, b: __m256) -> __m256 {
        _mm256_add_ps(a, b)
    }
    #[inline(always)]
    unsafe fn sub(a: __m256, b: __m256) -> __m256 {
        _mm256_sub_ps(a, b)
    }
    #[inline(always)]
    unsafe fn mul(a: __m256, b: __m256) -> __m256 {
        _mm256_mul_ps(a, b)
    }
    #[inline(always)]
    unsafe fn div(a: __m256, b: __m256) -> __m256 {
        _mm256_div_ps(a, b)
    }
    #[inline(always)]
    unsafe fn fma(a: __m256, b: __m256, c: __m256) -> __m256 {
        _mm256_fmadd_ps(a, b, c)
    }
    #[inline(always)]
    unsafe fn max(a: __m256, b: __m256) -> __m256 {
        _mm256_max_ps(a, b)
    }
    #[inline(always)]
    unsafe fn min(a: __m256, b: __m256) -> __m256 {
        _mm256_min_ps(a, b)
    }
    #[inline(always)]
    unsafe fn sqrt(a: __m256) -> __m256 {
        _mm256_sqrt_ps(a)
    }
    #[inline(always)]
    unsafe fn abs(a: __m256) -> __m256 {
        _mm256_and_ps(a, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fff_ffff)))
    }
    #[inline(always)]
    unsafe fn neg(a: __m256) -> __m256 {
        _mm256_xor_ps(a, _mm256_castsi256_ps(_mm256_set1_epi32(i32::MIN)))
    }
    #[inline(always)]
    unsafe fn round(a: __m256) -> __m256 {
        _mm256_round_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(a)
    }
    #[inline(always)]
    unsafe fn pow2n(n: __m256) -> __m256 {
        let i = _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127));
        _mm256_castsi256_ps(_mm256_slli_epi32::<23>(i))
    }
    #[inline(always)]
    unsafe fn frexp(x: __m256) -> (__m256, __m256) {
        let bits = _mm256_castps_si256(x);
        let e = _mm256_sub_epi32(
            _mm256_and_si256(_mm256_srli_epi32::<23>(bits), _mm256_set1_epi32(0xff)),
            _mm256_set1_epi32(126),
        );
        let m = _mm256_or_si256(
            _mm256_and_si256(bits, _mm256_set1_epi32(0x807f_ffffu32 as i32)),
            _mm256_set1_epi32(0x3f00_0000),
        );
        (_mm256_castsi256_ps(m), _mm256_cvtepi32_ps(e))
    }
    #[inline(always)]
    unsafe fn lt(a: __m256, b: __m256) -> __m256 {
        _mm256_cmp_ps::<_CMP_LT_OQ>(a, b)
    }
    #[inline(always)]
    unsafe fn le(a: __m256, b: __m256) -> __m256 {
        _mm256_cmp_ps::<_CMP_LE_OQ>(a, b)
    }
    #[inline(always)]
    unsafe fn eq(a: __m256, b: __m256) -> __m256 {
        _mm256_cmp_ps::<_CMP_EQ_OQ>(a, b)
    }
    #[inline(always)]
    unsafe fn isnan(a: __m256) -> __m256 {
        _mm256_cmp_ps::<_CMP_UNORD_Q>(a, a)
    }
    #[inline(always)]
    unsafe fn mand(a: __m256, b: __m256) -> __m256 {
        _mm256_and_ps(a, b)
    }
    #[inline(always)]
    unsafe fn mor(a: __m256, b: __m256) -> __m256 {
        _mm256_or_ps(a, b)
    }
    #[inline(always)]
    unsafe fn mnot(a: __m256) -> __m256 {
        _mm256_xor_ps(a, _mm256_castsi256_ps(_mm256_set1_epi32(-1)))
    }
    #[inline(always)]
    unsafe fn any(m: __m256) -> bool {
        _mm256_movemask_ps(m) != 0
    }
    #[inline(always)]
    unsafe fn select(m: __m256, a: __m256, b: __m256) -> __m256 {
        _mm256_blendv_ps(b, a, m)
    }
    #[inline(always)]
    unsafe fn hsum(a: __m256) -> f32 {
        let s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps::<1>(a));
        let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
        let s = _mm_add_ss(s, _mm_movehdup_ps(s));
        _mm_cvtss_f32(s)
    }
    #[inline(always)]
    unsafe fn hmax(a: __m256) -> f32 {
        let mut buf = [0f32; 8];
        _mm256_storeu_ps(buf.as_mut_ptr(), a);
        let mut m = buf[0];
        for &x in &buf[1..] {
            m = if m > x { m } else { x };
        }
        m
    }
    #[inline(always)]
    unsafe fn hmin(a: __m256) -> f32 {
        let mut buf = [0f32; 8];
        _mm256_storeu_ps(buf.as_mut_ptr(), a);
        let mut m = buf[0];
        for &x in &buf[1..] {
            m = if m < x { m } else { x };
        }
        m
    }
    #[inline(always)]
    unsafe fn load_part(p: *const f32, n: usize, fill: f32) -> __m256 {
        let idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        let mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(n as i32), idx);
        let v = _mm256_maskload_ps(p, mask);
        _mm256_blendv_ps(_mm256_set1_ps(fill), v, _mm256_castsi256_ps(mask))
    }
    #[inline(always)]
    unsafe fn store_part(p: *mut f32, v: __m256, n: usize) {
        let idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        let mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(n as i32), idx);
        _mm256_maskstore_ps(p, mask, v)
    }
}
