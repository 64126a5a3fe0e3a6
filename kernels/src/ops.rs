//! The op table: one row per primitive op of ops.py (name, contract kind,
//! kernel). An op's code is its index in `OPS`, but nothing outside this file
//! depends on the order: Python asks the library for its op names
//! (`tk_op_name`) and maps ops.py's names to codes at load, so a row can be
//! inserted anywhere. The contract kind says what `record` checks of the op's
//! views (one check per kind) and how many inputs it takes.

use crate::record::Op;
use crate::runtime::{KResult, Pool};
use crate::view::DType;
use crate::{adam, copy, dropout, elementwise as ew, gather, matmul, norm, reduce, softmax};
use reduce::Red;
use softmax::Kind;

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
}

impl Contract {
    /// Number of inputs (the out view not counted).
    pub const fn inputs(self) -> usize {
        use Contract::*;
        match self {
            Fill | Write => 0,
            Copy | Unary | Reduce | Argmax | Rowwise | CausalSoftmax => 1,
            Binary | IntBinary | Compare | CrossEntropy | Matmul | Gather | ScatterAdd
            | SoftmaxGrad | Dropout => 2,
            Where | CrossEntropyGrad | LayerNorm | LayerNormGrad | MatmulBias => 3,
            AdamUpdate => 4,
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

/// f32 operands through the SIMD kernel `f`, i32 ones through `i` (wrapping).
fn int_binary<O: ew::EwOp<2>>(pool: &Pool, op: &Op, f: O, i: fn(i32, i32) -> i32) -> KResult {
    let [o, a, b, ..] = &op.v;
    if a.dtype == DType::I32 {
        ew::binary_i32(i, o, a, b)
    } else {
        binary(pool, op, f)
    }
}

/// f32 operands through the SIMD kernel `f`, i32 ones through `i`.
fn compare<O: ew::EwOp<2>>(pool: &Pool, op: &Op, f: O, i: fn(i32, i32) -> bool) -> KResult {
    let [o, a, b, ..] = &op.v;
    if a.dtype == DType::I32 {
        ew::compare_i32(i, o, a, b)
    } else {
        binary(pool, op, f)
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
    softmax::rows(pool, kind, o, a, target, g, op.ignore)
}

use Contract as C;

/// One row per op of ops.py (the set of names must be ops.ALL_OPS: checked at
/// load on the Python side).
pub static OPS: &[OpDef] = &[
    row("neg", C::Unary, |p, op| unary(p, op, ew::Neg)),
    row("exp", C::Unary, |p, op| unary(p, op, ew::Exp)),
    row("log", C::Unary, |p, op| unary(p, op, ew::Log)),
    row("relu", C::Unary, |p, op| unary(p, op, ew::Relu)),
    row("tanh", C::Unary, |p, op| unary(p, op, ew::Tanh)),
    row("sin", C::Unary, |p, op| unary(p, op, ew::Sin)),
    row("cos", C::Unary, |p, op| unary(p, op, ew::Cos)),
    row("sigmoid", C::Unary, |p, op| unary(p, op, ew::Sigmoid)),
    row("sqrt", C::Unary, |p, op| unary(p, op, ew::Sqrt)),
    row("abs", C::Unary, |p, op| unary(p, op, ew::Abs)),
    row("add", C::IntBinary, |p, op| {
        int_binary(p, op, ew::Add, i32::wrapping_add)
    }),
    row("sub", C::IntBinary, |p, op| {
        int_binary(p, op, ew::Sub, i32::wrapping_sub)
    }),
    row("mul", C::IntBinary, |p, op| {
        int_binary(p, op, ew::Mul, i32::wrapping_mul)
    }),
    row("div", C::Binary, |p, op| binary(p, op, ew::Div)),
    row("pow", C::Binary, |p, op| binary(p, op, ew::Pow)),
    row("maximum", C::IntBinary, |p, op| {
        int_binary(p, op, ew::Maximum, i32::max)
    }),
    row("minimum", C::IntBinary, |p, op| {
        int_binary(p, op, ew::Minimum, i32::min)
    }),
    row("eq", C::Compare, |p, op| {
        compare(p, op, ew::Eq, |x, y| x == y)
    }),
    row("ne", C::Compare, |p, op| {
        compare(p, op, ew::Ne, |x, y| x != y)
    }),
    row("lt", C::Compare, |p, op| {
        compare(p, op, ew::Lt, |x, y| x < y)
    }),
    row("le", C::Compare, |p, op| {
        compare(p, op, ew::Le, |x, y| x <= y)
    }),
    row("gt", C::Compare, |p, op| {
        compare(p, op, ew::Gt, |x, y| x > y)
    }),
    row("ge", C::Compare, |p, op| {
        compare(p, op, ew::Ge, |x, y| x >= y)
    }),
    row("sum", C::Reduce, |p, op| {
        reduce::reduce(p, Red::Sum, &op.v[0], &op.v[1], op.naxes)
    }),
    row("max", C::Reduce, |p, op| {
        reduce::reduce(p, Red::Max, &op.v[0], &op.v[1], op.naxes)
    }),
    row("min", C::Reduce, |p, op| {
        reduce::reduce(p, Red::Min, &op.v[0], &op.v[1], op.naxes)
    }),
    row("fill", C::Fill, |_, op| copy::fill(&op.v[0], op.value)),
    row("copy", C::Copy, |p, op| copy::copy(p, &op.v[0], &op.v[1])),
    row("where", C::Where, |p, op| {
        let [o, cond, a, b, _] = &op.v;
        ew::map(p, ew::Where, [o, cond, a, b])
    }),
    row("argmax", C::Argmax, |p, op| {
        reduce::argmax(p, &op.v[0], &op.v[1])
    }),
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
        matmul::matmul(p, &op.v[0], &op.v[1], &op.v[2])
    }),
    row("matmul_bias", C::MatmulBias, |p, op| {
        let [o, a, b, bias, _] = &op.v;
        matmul::matmul(p, o, a, b)?;
        matmul::add_bias(p, o, bias)
    }),
    row("gather_rows", C::Gather, |p, op| {
        gather::gather_rows(p, &op.v[0], &op.v[1], &op.v[2])
    }),
    row("scatter_add_rows", C::ScatterAdd, |_, op| {
        gather::scatter_add_rows(&op.v[0], &op.v[1], &op.v[2])
    }),
    row("gelu", C::Unary, |p, op| unary(p, op, norm::Gelu)),
    row("gelu_tanh", C::Unary, |p, op| unary(p, op, norm::GeluTanh)),
    row("gelu_grad", C::Binary, |p, op| {
        binary(p, op, norm::GeluGrad)
    }),
    row("gelu_tanh_grad", C::Binary, |p, op| {
        binary(p, op, norm::GeluTanhGrad)
    }),
    row("layer_norm", C::LayerNorm, |p, op| {
        let [o, x, w, b, _] = &op.v;
        norm::layer_norm(p, o, x, w, b, op.value, false)
    }),
    row("layer_norm_grad", C::LayerNormGrad, |p, op| {
        let [o, x, w, g, _] = &op.v;
        norm::layer_norm(p, o, x, w, g, op.value, true)
    }),
    row("causal_softmax", C::CausalSoftmax, |p, op| {
        norm::causal_softmax(p, &op.v[0], &op.v[1], op.diagonal)
    }),
    row("softmax_grad", C::SoftmaxGrad, |p, op| {
        norm::softmax_grad(p, &op.v[0], &op.v[1], &op.v[2])
    }),
    row("dropout", C::Dropout, |p, op| {
        let [o, x, key, ..] = &op.v;
        dropout::dropout(p, o, x, key, op.threshold, op.value as f32)
    }),
    row("adam_update", C::AdamUpdate, |p, op| {
        let [o, g, m, v, s] = &op.v;
        adam::adam_update(p, o, g, m, v, s)
    }),
];

/// The code of a host write (`tk_write`): not an op of ops.py, ordered like one.
pub const OP_WRITE: i64 = 100;

pub static WRITE: OpDef = row("write", C::Write, |p, op| {
    copy::write(p, &op.v[0], op.src.as_ptr() as *const u8)
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
