//! AVX-512F: 16 f32 lanes (x86-64), with AVX2 + FMA also enabled. Only called
//! inside functions compiled with `#[target_feature(enable = "avx512f,avx2,fma")]`.

use super::Simd;
use core::arch::x86_64::*;

#[derive(Clone, Copy)]
pub struct Avx512;

impl Simd for Avx512 {
    const NAME: &'static str = "avx512f";
    const W: usize = 16;
    const MR: usize = 8;
    type F = __m512;
    type M = __mmask16;

    #[inline(always)]
    unsafe fn splat(x: f32) -> __m512 {
        _mm512_set1_ps(x)
    }
    #[inline(always)]
    unsafe fn load(p: *const f32) -> __m512 {
        _mm512_loadu_ps(p)
    }
    #[inline(always)]
    unsafe fn store(p: *mut f32, v: __m512) {
        _mm512_storeu_ps(p, v)
    }
    #[inline(always)]
    unsafe fn stream(p: *mut f32, v: __m512) {
        _mm512_stream_ps(p, v)
    }
    #[inline(always)]
    unsafe fn stream_fence() {
        _mm_sfence()
    }
    #[inline(always)]
    unsafe fn add(a: __m512, b: __m512) -> __m512 {
        _mm512_add_ps(a, b)
    }
    #[inline(always)]
    unsafe fn sub(a: __m512, b: __m512) -> __m512 {
        _mm512_sub_ps(a, b)
    }
    #[inline(always)]
    unsafe fn mul(a: __m512, b: __m512) -> __m512 {
        _mm512_mul_ps(a, b)
    }
    #[inline(always)]
    unsafe fn div(a: __m512, b: __m512) -> __m512 {
        _mm512_div_ps(a, b)
    }
    #[inline(always)]
    unsafe fn fma(a: __m512, b: __m512, c: __m512) -> __m512 {
        _mm512_fmadd_ps(a, b, c)
    }
    #[inline(always)]
    unsafe fn max(a: __m512, b: __m512) -> __m512 {
        // vmaxps returns the second operand when unordered, like `max`
        _mm512_max_ps(a, b)
    }
    #[inline(always)]
    unsafe fn min(a: __m512, b: __m512) -> __m512 {
        _mm512_min_ps(a, b)
    }
    #[inline(always)]
    unsafe fn sqrt(a: __m512) -> __m512 {
        _mm512_sqrt_ps(a)
    }
    #[inline(always)]
    unsafe fn abs(a: __m512) -> __m512 {
        _mm512_castsi512_ps(_mm512_and_si512(
            _mm512_castps_si512(a),
            _mm512_set1_epi32(0x7fff_ffff),
        ))
    }
    #[inline(always)]
    unsafe fn neg(a: __m512) -> __m512 {
        _mm512_castsi512_ps(_mm512_xor_si512(
            _mm512_castps_si512(a),
            _mm512_set1_epi32(i32::MIN),
        ))
    }
    #[inline(always)]
    unsafe fn round(a: __m512) -> __m512 {
        _mm512_roundscale_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(a)
    }
    #[inline(always)]
    unsafe fn pow2n(n: __m512) -> __m512 {
        let i = _mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127));
        _mm512_castsi512_ps(_mm512_slli_epi32::<23>(i))
    }
    #[inline(always)]
    unsafe fn frexp(x: __m512) -> (__m512, __m512) {
        let bits = _mm512_castps_si512(x);
        let e = _mm512_sub_epi32(
            _mm512_and_si512(_mm512_srli_epi32::<23>(bits), _mm512_set1_epi32(0xff)),
            _mm512_set1_epi32(126),
        );
        let m = _mm512_or_si512(
            _mm512_and_si512(bits, _mm512_set1_epi32(0x807f_ffffu32 as i32)),
            _mm512_set1_epi32(0x3f00_0000),
        );
        (_mm512_castsi512_ps(m), _mm512_cvtepi32_ps(e))
    }
    #[inline(always)]
    unsafe fn lt(a: __m512, b: __m512) -> __mmask16 {
        _mm512_cmp_ps_mask::<_CMP_LT_OQ>(a, b)
    }
    #[inline(always)]
    unsafe fn le(a: __m512, b: __m512) -> __mmask16 {
        _mm512_cmp_ps_mask::<_CMP_LE_OQ>(a, b)
    }
    #[inline(always)]
    unsafe fn eq(a: __m512, b: __m512) -> __mmask16 {
        _mm512_cmp_ps_mask::<_CMP_EQ_OQ>(a, b)
    }
    #[inline(always)]
    unsafe fn isnan(a: __m512) -> __mmask16 {
        _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(a, a)
    }
    #[inline(always)]
    unsafe fn mand(a: __mmask16, b: __mmask16) -> __mmask16 {
        a & b
    }
    #[inline(always)]
    unsafe fn mor(a: __mmask16, b: __mmask16) -> __mmask16 {
        a | b
    }
    #[inline(always)]
    unsafe fn mnot(a: __mmask16) -> __mmask16 {
        !a
    }
    #[inline(always)]
    unsafe fn any(m: __mmask16) -> bool {
        m != 0
    }
    #[inline(always)]
    unsafe fn select(m: __mmask16, a: __m512, b: __m512) -> __m512 {
        _mm512_mask_blend_ps(m, b, a)
    }
    #[inline(always)]
    unsafe fn hsum(a: __m512) -> f32 {
        _mm512_reduce_add_ps(a)
    }
    #[inline(always)]
    unsafe fn hmax(a: __m512) -> f32 {
        let mut buf = [0f32; 16];
        _mm512_storeu_ps(buf.as_mut_ptr(), a);
        let mut m = buf[0];
        for &x in &buf[1..] {
            m = if m > x { m } else { x };
        }
        m
    }
    #[inline(always)]
    unsafe fn hmin(a: __m512) -> f32 {
        let mut buf = [0f32; 16];
        _mm512_storeu_ps(buf.as_mut_ptr(), a);
        let mut m = buf[0];
        for &x in &buf[1..] {
            m = if m < x { m } else { x };
        }
        m
    }
    #[inline(always)]
    unsafe fn load_part(p: *const f32, n: usize, fill: f32) -> __m512 {
        let mask: __mmask16 = ((1u32 << n) - 1) as __mmask16;
        _mm512_mask_loadu_ps(_mm512_set1_ps(fill), mask, p)
    }
    #[inline(always)]
    unsafe fn store_part(p: *mut f32, v: __m512, n: usize) {
        let mask: __mmask16 = ((1u32 << n) - 1) as __mmask16;
        _mm512_mask_storeu_ps(p, mask, v)
    }
}
