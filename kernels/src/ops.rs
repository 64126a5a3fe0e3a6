//! The op table: one row per primitive op of ops.py (name, contract kind,
//! kernel). An op's code is its index in `OPS`, but nothing outside this file
//! depends on the order: Python asks the library for its op names
//! (`tk_op_name`) and maps ops.py's names to codes at load, so a row can be
//! inserted anywhere. The contract kind says what `record` checks of the op's
//! views (one check per kind) and how many inputs it takes.

use crate::elem::{Bool, Elem};
use crate::record::Op;
use crate::runtime::{KResult, Pool};
use crate::view::DType;
use crate::{
    adam, copy, dgemm, dropout, elementwise as ew, gather, lstm, math64, matmul, norm, pool,
    reduce, rows64, softmax, typed,
};
use reduce::Red;
use softmax::Kind;
use std::cmp::Ordering::{Equal, Greater, Less};

/// The shapes / dtypes / strides an op's views must have (ops.py's contract),
/// checked by `record::check_contract`, one arm per kind.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Contract {
    Fill,
    Copy,
    Unary,
    Binary,
    /// a binary op that also takes int32 operands (all three views one dtype)
    IntBinary,
    Compare,
    Where,
    Reduce,
    Argmax,
    Rowwise,
    CrossEntropy,
    CrossEntropyGrad,
    Matmul,
    /// matmul's a, b and out, bias (N,) any stride: out = a @ b + bias over the rows
    MatmulBias,
    Gather,
    ScatterAdd,
    /// x (R, C), w (C,), b (C,) -> out (R, C); eps in the header's value
    LayerNorm,
    /// x (R, C), w (C,), g (R, C) -> out (R, C); eps in the header's value
    LayerNormGrad,
    /// a (B, Tq, Tk) -> out (B, Tq, Tk); the diagonal in the header's i0
    CausalSoftmax,
    /// y (R, C), g (R, C) -> out (R, C)
    SoftmaxGrad,
    /// x (out.shape, any strides) f32, key (2,) i32 -> out (contiguous f32); the threshold
    /// in i0, the scale in the value
    Dropout,
    /// p (out), g, m, v (N,) contiguous and disjoint, s (10,): m and v written too
    AdamUpdate,
    /// a host write (not an op of ops.py: `tk_write`)
    Write,
    /// an integer-only binary op (the bitwise ones): i32 / i64, all three views one dtype;
    /// never fused
    Bitwise,
    /// a (N, C, Ho, Wo, kh, kw) float, non-negative strides, kh * kw > 0 -> out (N, C, Ho,
    /// Wo) i32 / i64 contiguous (max pooling, issue 42)
    MaxPoolIndex,
    /// a (R1, R2, kh, kw, La) float any strides -> out (R1, R2, L) contiguous, same dtype;
    /// the steps in i0 and i1 (a convolution's input gradient, issue 42)
    Col2Im,
    /// x, r, a (N, 4H), s (N, 2, H) -> out h (N, H); a and s written (lstm cell, issue 42)
    LstmCell,
    /// a (N, 4H), s (N, 2, 2, H), dh, r (N, H) -> out (N, 4H); s written (lstm cell)
    LstmCellGrad,
}

impl Contract {
    /// Number of inputs (the out view not counted).
    pub const fn inputs(self) -> usize {
        use Contract::*;
        match self {
            Fill | Write => 0,
            Copy | Unary | Reduce | Argmax | Rowwise | CausalSoftmax | MaxPoolIndex | Col2Im => 1,
            Binary | IntBinary | Compare | CrossEntropy | Matmul | Gather | ScatterAdd
            | SoftmaxGrad | Dropout | Bitwise => 2,
            Where | CrossEntropyGrad | LayerNorm | LayerNormGrad | MatmulBias => 3,
            AdamUpdate | LstmCell | LstmCellGrad => 4,
        }
    }

    /// The inputs the kernel also writes in place (indices among the inputs; ops.py's
    /// `writes`, checked against the rows at load through `tk_op_writes`).
    pub const fn writes(self) -> &'static [usize] {
        match self {
            Contract::AdamUpdate => &[1, 2],
            Contract::LstmCell => &[2, 3],
            Contract::LstmCellGrad => &[1],
            _ => &[],
        }
    }
}

/// Runs one validated op: `op.v` holds out, then the inputs.
pub type Kernel = fn(&Pool, &Op) -> KResult;

pub struct OpDef {
    pub name: &'static str,
    pub contract: Contract,
    pub kernel: Kernel,
}

const fn row(name: &'static str, contract: Contract, kernel: Kernel) -> OpDef {
    OpDef {
        name,
        contract,
        kernel,
    }
}

fn unary<O: ew::EwOp<1>>(pool: &Pool, op: &Op, f: O) -> KResult {
    ew::map(pool, f, [&op.v[0], &op.v[1]])
}

fn binary<O: ew::EwOp<2>>(pool: &Pool, op: &Op, f: O) -> KResult {
    ew::map(pool, f, [&op.v[0], &op.v[1], &op.v[2]])
}

/// a float op: f32 through the SIMD kernel `f`, f64 through `d` (typed.rs)
fn unary_f<O: ew::EwOp<1>>(pool: &Pool, op: &Op, f: O, d: impl Fn(f64) -> f64 + Sync) -> KResult {
    let [o, a, ..] = &op.v;
    if a.dtype == DType::F64 {
        typed::map1::<f64, f64>(pool, o, a, d)
    } else {
        unary(pool, op, f)
    }
}

/// a float op of two operands: f32 through the SIMD kernel `f`, f64 through `d`
fn binary_f<O: ew::EwOp<2>>(
    pool: &Pool,
    op: &Op,
    f: O,
    d: impl Fn(f64, f64) -> f64 + Sync,
) -> KResult {
    let [o, a, b, ..] = &op.v;
    if a.dtype == DType::F64 {
        typed::map2::<f64, f64, f64>(pool, o, a, b, d)
    } else {
        binary(pool, op, f)
    }
}

/// arithmetic: f32 through the SIMD kernel `f`, f64 through `d`, i32 / i64 through `i`
/// (wrapping)
fn int_binary<O: ew::EwOp<2>>(
    pool: &Pool,
    op: &Op,
    f: O,
    d: impl Fn(f64, f64) -> f64 + Sync,
    i: impl Fn(i32, i32) -> i32 + Sync,
    l: impl Fn(i64, i64) -> i64 + Sync,
) -> KResult {
    let [o, a, b, ..] = &op.v;
    match a.dtype {
        DType::I32 => typed::map2::<i32, i32, i32>(pool, o, a, b, i),
        DType::I64 => typed::map2::<i64, i64, i64>(pool, o, a, b, l),
        _ => binary_f(pool, op, f, d),
    }
}

/// an integer-only op: i32 through `i`, i64 through `l`
fn bitwise(
    pool: &Pool,
    op: &Op,
    i: impl Fn(i32, i32) -> i32 + Sync,
    l: impl Fn(i64, i64) -> i64 + Sync,
) -> KResult {
    let [o, a, b, ..] = &op.v;
    match a.dtype {
        DType::I32 => typed::map2::<i32, i32, i32>(pool, o, a, b, i),
        _ => typed::map2::<i64, i64, i64>(pool, o, a, b, l),
    }
}

/// PyTorch's shifts: by b outside [0, width), 0 to the left and the sign to the right
trait Shift: Copy {
    const WIDTH: i64;
    fn shl(self, s: u32) -> Self;
    fn shr(self, s: u32) -> Self;
    fn zero() -> Self;
    fn to_i64(self) -> i64;
}
/// `Shift` for a signed integer type of `$width` bits
macro_rules! impl_shift {
    ($t:ty, $width:expr) => {
        impl Shift for $t {
            const WIDTH: i64 = $width;
            fn shl(self, s: u32) -> Self {
                self.wrapping_shl(s)
            }
            fn shr(self, s: u32) -> Self {
                self >> s
            }
            fn zero() -> Self {
                0
            }
            fn to_i64(self) -> i64 {
                i64::from(self)
            }
        }
    };
}
impl_shift!(i32, 32);
impl_shift!(i64, 64);
fn shift_left<T: Shift>(x: T, y: T) -> T {
    let s = y.to_i64();
    if (0..T::WIDTH).contains(&s) {
        x.shl(s as u32)
    } else {
        T::zero()
    }
}
fn shift_right<T: Shift>(x: T, y: T) -> T {
    let s = y.to_i64();
    if (0..T::WIDTH).contains(&s) {
        x.shr(s as u32)
    } else {
        x.shr((T::WIDTH - 1) as u32)
    }
}

/// NaN-propagating maximum / minimum (torch.maximum)
fn fmax(x: f64, y: f64) -> f64 {
    if x.is_nan() || y.is_nan() {
        f64::NAN
    } else {
        x.max(y)
    }
}
fn fmin(x: f64, y: f64) -> f64 {
    if x.is_nan() || y.is_nan() {
        f64::NAN
    } else {
        x.min(y)
    }
}

/// the order of two elements by value (None: a NaN)
#[inline(always)]
fn order<T: Elem>(x: T, y: T) -> Option<std::cmp::Ordering> {
    if T::FLOAT {
        x.to_f64().partial_cmp(&y.to_f64())
    } else {
        Some(x.to_i64().cmp(&y.to_i64()))
    }
}

/// a comparison: f32 operands into an f32 out through the SIMD kernel `f`; any other
/// (operand dtype, f32 or b8 out) through typed.rs, `c` deciding from the order
fn compare<O: ew::EwOp<2>>(
    pool: &Pool,
    op: &Op,
    f: O,
    c: impl Fn(Option<std::cmp::Ordering>) -> bool + Sync + Copy,
) -> KResult {
    let [o, a, b, ..] = &op.v;
    if a.dtype == DType::F32 && o.dtype == DType::F32 {
        return binary(pool, op, f);
    }
    crate::with_elem!(a.dtype, T, {
        if o.dtype == DType::B8 {
            typed::map2::<T, T, Bool>(pool, o, a, b, move |x, y| Bool(c(order(x, y)) as u8))
        } else {
            typed::map2::<T, T, f32>(pool, o, a, b, move |x, y| c(order(x, y)) as u8 as f32)
        }
    })
}

/// where(cond, a, b): all f32 through the SIMD kernel; else any value dtype, any cond
fn select(pool: &Pool, op: &Op) -> KResult {
    let [o, cond, a, b, _] = &op.v;
    if [cond, a, b].iter().all(|v| v.dtype == DType::F32) {
        return ew::map(pool, ew::Where, [o, cond, a, b]);
    }
    // (float32 under a bool mask: masked_fill's; select.rs)
    if cond.dtype == DType::B8 && [o, a, b].iter().all(|v| v.dtype == DType::F32) {
        return crate::select::where_f32(pool, o, cond, a, b);
    }
    crate::with_elem!(o.dtype, T, {
        if cond.dtype == DType::B8 {
            typed::map3::<Bool, T, T, T>(
                pool,
                o,
                cond,
                a,
                b,
                |c, x, y| if c.0 != 0 { x } else { y },
            )
        } else {
            crate::with_elem!(cond.dtype, C, {
                typed::map3::<C, T, T, T>(pool, o, cond, a, b, |c, x, y| {
                    if Bool::cast(c).0 != 0 {
                        x
                    } else {
                        y
                    }
                })
            })
        }
    })
}

#[derive(Clone, Copy)]
struct Fold(Red);
impl typed::Fold<f64> for Fold {
    fn identity(self) -> f64 {
        match self.0 {
            Red::Sum => 0.0,
            Red::Max => f64::NEG_INFINITY,
            Red::Min => f64::INFINITY,
        }
    }
    #[inline(always)]
    fn fold(self, acc: f64, x: f64) -> f64 {
        match self.0 {
            Red::Sum => acc + x,
            Red::Max => fmax(acc, x),
            Red::Min => fmin(acc, x),
        }
    }
}
impl typed::Fold<i64> for Fold {
    fn identity(self) -> i64 {
        match self.0 {
            Red::Sum => 0,
            Red::Max => i64::MIN,
            Red::Min => i64::MAX,
        }
    }
    #[inline(always)]
    fn fold(self, acc: i64, x: i64) -> i64 {
        match self.0 {
            Red::Sum => acc.wrapping_add(x),
            Red::Max => acc.max(x),
            Red::Min => acc.min(x),
        }
    }
}

/// sum / max / min: f32 and i32 through reduce.rs, f64 and i64 through typed.rs
fn reduction(pool: &Pool, op: &Op, red: Red) -> KResult {
    let [o, a, ..] = &op.v;
    if pool::is_window_max(red == Red::Max, a, op.naxes) {
        return pool::window_max(pool, o, a);
    }
    match a.dtype {
        DType::F64 => typed::reduce::<f64, _>(pool, Fold(red), o, a, op.naxes),
        DType::I64 => typed::reduce::<i64, _>(pool, Fold(red), o, a, op.naxes),
        _ => reduce::reduce(pool, red, o, a, op.naxes),
    }
}

/// argmax: f32 into i32 through reduce.rs; f32 / f64 / i32 / i64 into i32 / i64 here
fn argmax(pool: &Pool, op: &Op) -> KResult {
    let [o, a, ..] = &op.v;
    match a.dtype {
        DType::F32 if o.dtype == DType::I32 => reduce::argmax(pool, o, a),
        DType::F32 => typed::argmax::<f32>(pool, o, a),
        DType::F64 => typed::argmax::<f64>(pool, o, a),
        DType::I32 => typed::argmax::<i32>(pool, o, a),
        _ => typed::argmax::<i64>(pool, o, a),
    }
}

/// softmax / log_softmax / cross_entropy (+ grad): their inputs after the logits
/// are the target and the grad, where the kind has them.
fn rows(pool: &Pool, op: &Op, kind: Kind) -> KResult {
    let [o, a, b, c, _] = &op.v;
    let (target, g) = match kind {
        Kind::Softmax | Kind::LogSoftmax => (None, None),
        Kind::CrossEntropy => (Some(b), None),
        Kind::CrossEntropyGrad => (Some(b), Some(c)),
    };
    if o.dtype == DType::F64 {
        return rows64::rows(pool, kind, o, a, target, g, op.ignore);
    }
    softmax::rows(pool, kind, o, a, target, g, op.ignore)
}

use Contract as C;

/// One row per op of ops.py (the set of names must be ops.ALL_OPS: checked at
/// load on the Python side).
pub static OPS: &[OpDef] = &[
    row("neg", C::Unary, |p, op| unary_f(p, op, ew::Neg, |x| -x)),
    row("exp", C::Unary, |p, op| unary_f(p, op, ew::Exp, f64::exp)),
    row("log", C::Unary, |p, op| unary_f(p, op, ew::Log, f64::ln)),
    row("relu", C::Unary, |p, op| {
        unary_f(p, op, ew::Relu, |x| if x < 0.0 { 0.0 } else { x })
    }),
    row("tanh", C::Unary, |p, op| {
        unary_f(p, op, ew::Tanh, f64::tanh)
    }),
    row("sin", C::Unary, |p, op| unary_f(p, op, ew::Sin, f64::sin)),
    row("cos", C::Unary, |p, op| unary_f(p, op, ew::Cos, f64::cos)),
    row("sigmoid", C::Unary, |p, op| {
        unary_f(p, op, ew::Sigmoid, math64::sigmoid)
    }),
    row("sqrt", C::Unary, |p, op| {
        unary_f(p, op, ew::Sqrt, f64::sqrt)
    }),
    row("abs", C::Unary, |p, op| unary_f(p, op, ew::Abs, f64::abs)),
    row("add", C::IntBinary, |p, op| {
        int_binary(
            p,
            op,
            ew::Add,
            |x, y| x + y,
            i32::wrapping_add,
            i64::wrapping_add,
        )
    }),
    row("sub", C::IntBinary, |p, op| {
        int_binary(
            p,
            op,
            ew::Sub,
            |x, y| x - y,
            i32::wrapping_sub,
            i64::wrapping_sub,
        )
    }),
    row("mul", C::IntBinary, |p, op| {
        int_binary(
            p,
            op,
            ew::Mul,
            |x, y| x * y,
            i32::wrapping_mul,
            i64::wrapping_mul,
        )
    }),
    row("div", C::Binary, |p, op| {
        binary_f(p, op, ew::Div, |x, y| x / y)
    }),
    // elementwise math: the integer bitwise ops
    row("bitwise_and", C::Bitwise, |p, op| {
        bitwise(p, op, |x, y| x & y, |x, y| x & y)
    }),
    row("bitwise_or", C::Bitwise, |p, op| {
        bitwise(p, op, |x, y| x | y, |x, y| x | y)
    }),
    row("bitwise_xor", C::Bitwise, |p, op| {
        bitwise(p, op, |x, y| x ^ y, |x, y| x ^ y)
    }),
    row("shift_left", C::Bitwise, |p, op| {
        bitwise(p, op, shift_left, shift_left)
    }),
    row("shift_right", C::Bitwise, |p, op| {
        bitwise(p, op, shift_right, shift_right)
    }),
    row("atan2", C::Binary, |p, op| {
        binary_f(p, op, ew::Atan2, f64::atan2)
    }),
    row("pow", C::Binary, |p, op| {
        binary_f(p, op, ew::Pow, f64::powf)
    }),
    row("maximum", C::IntBinary, |p, op| {
        int_binary(p, op, ew::Maximum, fmax, i32::max, i64::max)
    }),
    row("minimum", C::IntBinary, |p, op| {
        int_binary(p, op, ew::Minimum, fmin, i32::min, i64::min)
    }),
    row("eq", C::Compare, |p, op| {
        compare(p, op, ew::Eq, |o| o == Some(Equal))
    }),
    row("ne", C::Compare, |p, op| {
        compare(p, op, ew::Ne, |o| o != Some(Equal))
    }),
    row("lt", C::Compare, |p, op| {
        compare(p, op, ew::Lt, |o| o == Some(Less))
    }),
    row("le", C::Compare, |p, op| {
        compare(p, op, ew::Le, |o| matches!(o, Some(Less | Equal)))
    }),
    row("gt", C::Compare, |p, op| {
        compare(p, op, ew::Gt, |o| o == Some(Greater))
    }),
    row("ge", C::Compare, |p, op| {
        compare(p, op, ew::Ge, |o| matches!(o, Some(Greater | Equal)))
    }),
    row("sum", C::Reduce, |p, op| reduction(p, op, Red::Sum)),
    row("max", C::Reduce, |p, op| reduction(p, op, Red::Max)),
    row("min", C::Reduce, |p, op| reduction(p, op, Red::Min)),
    row("fill", C::Fill, |_, op| {
        copy::fill(&op.v[0], op.value, op.int_value)
    }),
    row("copy", C::Copy, |p, op| copy::copy(p, &op.v[0], &op.v[1])),
    row("where", C::Where, select),
    row("argmax", C::Argmax, argmax),
    row("softmax", C::Rowwise, |p, op| rows(p, op, Kind::Softmax)),
    row("log_softmax", C::Rowwise, |p, op| {
        rows(p, op, Kind::LogSoftmax)
    }),
    row("cross_entropy", C::CrossEntropy, |p, op| {
        rows(p, op, Kind::CrossEntropy)
    }),
    row("cross_entropy_grad", C::CrossEntropyGrad, |p, op| {
        rows(p, op, Kind::CrossEntropyGrad)
    }),
    row("matmul", C::Matmul, |p, op| {
        let [o, a, b, ..] = &op.v;
        if o.dtype == DType::F64 {
            dgemm::matmul(p, o, a, b)
        } else {
            matmul::matmul(p, o, a, b)
        }
    }),
    row("matmul_bias", C::MatmulBias, |p, op| {
        let [o, a, b, bias, _] = &op.v;
        if o.dtype == DType::F64 {
            dgemm::matmul(p, o, a, b)?;
            return dgemm::add_bias(o, bias);
        }
        matmul::matmul(p, o, a, b)?;
        matmul::add_bias(p, o, bias)
    }),
    row("gather_rows", C::Gather, |p, op| {
        gather::gather_rows(p, &op.v[0], &op.v[1], &op.v[2])
    }),
    row("scatter_add_rows", C::ScatterAdd, |_, op| {
        gather::scatter_add_rows(&op.v[0], &op.v[1], &op.v[2])
    }),
    row("gelu", C::Unary, |p, op| {
        unary_f(p, op, norm::Gelu, math64::gelu)
    }),
    row("gelu_tanh", C::Unary, |p, op| {
        unary_f(p, op, norm::GeluTanh, math64::gelu_tanh)
    }),
    row("gelu_grad", C::Binary, |p, op| {
        binary_f(p, op, norm::GeluGrad, math64::gelu_grad)
    }),
    row("gelu_tanh_grad", C::Binary, |p, op| {
        binary_f(p, op, norm::GeluTanhGrad, math64::gelu_tanh_grad)
    }),
    row("layer_norm", C::LayerNorm, |p, op| {
        let [o, x, w, b, _] = &op.v;
        if o.dtype == DType::F64 {
            return rows64::layer_norm(p, o, x, w, b, op.value, false);
        }
        norm::layer_norm(p, o, x, w, b, op.value, false)
    }),
    row("layer_norm_grad", C::LayerNormGrad, |p, op| {
        let [o, x, w, g, _] = &op.v;
        if o.dtype == DType::F64 {
            return rows64::layer_norm(p, o, x, w, g, op.value, true);
        }
        norm::layer_norm(p, o, x, w, g, op.value, true)
    }),
    row("causal_softmax", C::CausalSoftmax, |p, op| {
        if op.v[0].dtype == DType::F64 {
            return rows64::causal_softmax(p, &op.v[0], &op.v[1], op.diagonal);
        }
        norm::causal_softmax(p, &op.v[0], &op.v[1], op.diagonal)
    }),
    row("softmax_grad", C::SoftmaxGrad, |p, op| {
        if op.v[0].dtype == DType::F64 {
            return rows64::softmax_grad(p, &op.v[0], &op.v[1], &op.v[2]);
        }
        norm::softmax_grad(p, &op.v[0], &op.v[1], &op.v[2])
    }),
    row("dropout", C::Dropout, |p, op| {
        let [o, x, key, ..] = &op.v;
        dropout::dropout(p, o, x, key, op.threshold, op.value as f32)
    }),
    row("adam_update", C::AdamUpdate, |p, op| {
        let [o, g, m, v, s] = &op.v;
        if o.dtype == DType::F64 {
            return rows64::adam_update(p, o, g, m, v, s);
        }
        adam::adam_update(p, o, g, m, v, s)
    }),
    // convolution / pooling (issue 42)
    row("max_pool_index", C::MaxPoolIndex, |p, op| {
        pool::max_pool_index(p, &op.v[0], &op.v[1])
    }),
    row("col2im", C::Col2Im, |p, op| {
        pool::col2im(p, &op.v[0], &op.v[1], op.steps)
    }),
    // lstm cell (issue 42)
    row("lstm_cell", C::LstmCell, |p, op| lstm::run(p, &op.v, false)),
    row("lstm_cell_grad", C::LstmCellGrad, |p, op| {
        lstm::run(p, &op.v, true)
    }),
];

/// The code of a host write (`tk_write`): not an op of ops.py, ordered like one.
pub const OP_WRITE: i64 = 100;

pub static WRITE: OpDef = row("write", C::Write, |p, op| {
    copy::write(p, &op.v[0], op.src.as_ptr())
});

/// The row of op code `code` (an index in OPS, or OP_WRITE).
pub fn lookup(code: i64) -> Option<&'static OpDef> {
    if code == OP_WRITE {
        return Some(&WRITE);
    }
    usize::try_from(code).ok().and_then(|c| OPS.get(c))
}

pub fn op_name(code: i64) -> &'static str {
    lookup(code).map_or("(unknown op)", |d| d.name)
}

/// The code of the op called `name` (what Python computes from `tk_op_name`).
pub fn code_of(name: &str) -> Option<i64> {
    OPS.iter().position(|d| d.name == name).map(|c| c as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn op_names_are_unique_and_codes_found_by_name() {
        for (i, d) in OPS.iter().enumerate() {
            assert_eq!(code_of(d.name), Some(i as i64), "{} listed twice", d.name);
            assert_eq!(lookup(i as i64).unwrap().name, d.name);
            assert_ne!(d.contract, Contract::Write);
        }
        assert!((OPS.len() as i64) < OP_WRITE);
        assert_eq!(op_name(OP_WRITE), "write");
        assert_eq!(op_name(-1), "(unknown op)");
        assert_eq!(op_name(OPS.len() as i64), "(unknown op)");
    }
}
