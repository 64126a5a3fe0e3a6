"""THE skip table of the OpInfo conformance suite: the op_db entries torchic does not aim at,
each with its reason.

An entry skipped here is out of scope (complex numbers, fft, sparse, linalg decompositions,
undefined values, private aten entry points, a dtype torchic lacks). An entry torchic simply
has not implemented yet is *not* skipped: it is "missing", and the generated coverage
(docs/COVERAGE_OPINFO.md) lists it.

Four kinds of rows, all read by `skip_reason` (the one function the harness asks):
- `SKIP_PREFIXES`: a whole namespace of op_db (`fft.*`, `sparse.*` ...);
- `SKIPS`: single entries, by op_db name (every variant of that name);
- `PRIVATE_RULE`: an entry named with a leading underscore (`_softmax_backward_data`);
- `HELD_RULE`: a sample whose result the backend cannot hold (float64 on webgpu: WGSL has no
  64-bit floats; an int64 value past 32 bits there): torchic refuses it naming the dtype
  (a TypeError / OverflowError with one of HELD_REFUSALS' words), the sample is left out
  like one needing a lacking dtype (float_power, double, bincount with float64 weights ...);
- `RANDOM_MASK`, rows of SKIPS: random masks drawn by a generator path torchic does not
  reproduce (PyTorch's CPU `bernoulli_(p)` with a float p draws through MKL's VSL stream,
  not the mt19937 stream torchic's generator reproduces bit for bit);
- `DTYPE_RULE`: an entry whose supported dtypes include none of HELD_DTYPES is
  skipped, its dtypes named in the reason. A sample that needs a dtype the backend does
  not hold (a complex tensor; a float16 one, or `dtype=torch.uint8`, on a backend without
  them) is left out of the entry's samples; a (entry, dtype) whose every sample needs one
  is reported "skip" by the harness with this same rule's reason.
"""

SKIP_PREFIXES = {
    "fft.": "fft: complex-valued transforms (torchic has no complex dtype)",
    "sparse.": "sparse tensors: torchic tensors are dense",
}

_COMPLEX = "complex numbers: torchic has no complex dtype"
_DECOMP = ("a linalg decomposition, or computed through one (LU, QR, SVD, eigen, Cholesky, "
           "a solve): out of torchic's scope")
_UNDEFINED = "returns uninitialized memory: no defined value to compare"
_SPARSE = "sparse tensors: torchic tensors are dense"

RANDOM_MASK = ("a random mask from PyTorch's CPU bernoulli_(float p), drawn through MKL's VSL "
               "Bernoulli stream (not the mt19937 stream torchic reproduces): its values "
               "cannot match PyTorch's")

SKIPS = {
    # complex numbers (on a real tensor most are the identity, or raise: imag)
    "angle": _COMPLEX, "conj": _COMPLEX, "conj_physical": _COMPLEX, "imag": _COMPLEX,
    "real": _COMPLEX, "resolve_conj": _COMPLEX, "resolve_neg": _COMPLEX,
    "view_as_complex": _COMPLEX, "view_as_real": _COMPLEX, "complex": _COMPLEX,
    "polar": _COMPLEX, "H": _COMPLEX, "mH": _COMPLEX, "chalf": _COMPLEX,
    "stft": _COMPLEX, "istft": _COMPLEX,
    # linalg decompositions and what is computed through one
    "cholesky": _DECOMP, "cholesky_inverse": _DECOMP, "cholesky_solve": _DECOMP,
    "linalg.cholesky": _DECOMP, "linalg.cholesky_ex": _DECOMP, "linalg.eig": _DECOMP,
    "linalg.eigh": _DECOMP, "linalg.eigvals": _DECOMP, "linalg.eigvalsh": _DECOMP,
    "linalg.householder_product": _DECOMP, "linalg.inv": _DECOMP, "linalg.inv_ex": _DECOMP,
    "linalg.ldl_factor": _DECOMP, "linalg.ldl_factor_ex": _DECOMP, "linalg.ldl_solve": _DECOMP,
    "linalg.lstsq": _DECOMP, "linalg.lu": _DECOMP, "linalg.lu_factor": _DECOMP,
    "linalg.lu_factor_ex": _DECOMP, "linalg.lu_solve": _DECOMP,
    "linalg.matrix_rank": _DECOMP, "linalg.pinv": _DECOMP, "linalg.qr": _DECOMP,
    "linalg.slogdet": _DECOMP, "linalg.solve": _DECOMP, "linalg.solve_ex": _DECOMP,
    "linalg.solve_triangular": _DECOMP, "linalg.svd": _DECOMP, "linalg.svdvals": _DECOMP,
    "linalg.tensorinv": _DECOMP, "linalg.tensorsolve": _DECOMP, "linalg.det": _DECOMP,
    "linalg.cond": _DECOMP, "lu": _DECOMP, "lu_solve": _DECOMP, "lu_unpack": _DECOMP,
    "qr": _DECOMP, "svd": _DECOMP, "svd_lowrank": _DECOMP, "pca_lowrank": _DECOMP,
    "geqrf": _DECOMP, "ormqr": _DECOMP, "logdet": _DECOMP, "pinverse": _DECOMP,
    "matrix_exp": _DECOMP, "triangular_solve": _DECOMP,
    # undefined values
    "empty": _UNDEFINED, "empty_like": _UNDEFINED, "empty_strided": _UNDEFINED,
    "new_empty": _UNDEFINED, "new_empty_strided": _UNDEFINED, "empty_permuted": _UNDEFINED,
    "resize_": _UNDEFINED, "resize_as_": _UNDEFINED,
    # sparse layouts
    "to_sparse": _SPARSE,
    # random masks (the dropout family whose mask comes from MKL's stream; dropout2d / 3d,
    # alpha_dropout and feature_alpha_dropout draw theirs through the reproduced stream)
    "nn.functional.dropout": RANDOM_MASK,
}
PRIVATE_RULE = "a private aten entry point (a leading underscore), not a public API"
HELD_DTYPES = {"float32", "float64", "float16", "bfloat16", "int64", "int32", "int16",
                  "int8", "uint8", "bool"}
DTYPE_RULE = "needs a dtype torchic lacks (complex, float8 ...)"
HELD_RULE = "a result in a dtype this backend does not hold (webgpu: no float64, int64 in 32 bits)"
HELD_REFUSALS = ("does not hold float64", "stores int64 tensors as 32-bit words")


# shaping and indexing (issue 41). Entries whose values are compared but whose gradients are
# not, because PyTorch's own gradient is wrong (op_db marks its gradient test expectedFailure).
# (Plain `scatter` / `index_copy` / `put` with an index naming one position twice leave the
# result undefined in PyTorch; op_db's samples never do it, and torchic's last value wins.)
GRAD_SKIPS = {
    "as_strided_scatter": "PyTorch's backward is wrong (op_db: TestBwdGradients.test_fn_grad "
                          "is an expectedFailure): it gives input the gradient inside the "
                          "written region instead of outside it",
}


def skip_reason(name, torch_dtypes):
    """Why op_db entry `name` is skipped, or None. `torch_dtypes`: the names of the dtypes
    the entry supports on CPU ("float32", "int64", ...)."""
    for prefix, why in SKIP_PREFIXES.items():
        if name.startswith(prefix):
            return why
    if name in SKIPS:
        return SKIPS[name]
    if name.startswith("_") and not name.startswith("__"):
        return PRIVATE_RULE
    if not torch_dtypes:
        return f"{DTYPE_RULE}: op_db gives it no dtype on CPU (a CUDA-only entry)"
    if not HELD_DTYPES & set(torch_dtypes):
        return f"{DTYPE_RULE}: it supports {', '.join(sorted(torch_dtypes))}"
    return None
