"""The bad-input catalogue: each case must raise `exc` with a message matching `match`.

A case is a function of the backend name that is expected to raise. It runs in a
child process (see _batch.py) on one backend, after which the runtime must
still compute correctly and hold no pending error. Lazy failures (a kernel
that checks index values) must surface as KernelError at the read that follows,
naming the op. Cases that re-init leave the restoring to the runner.

`match` is a regular expression searched (case-insensitively) in the message:
it names the problem (the shapes, the dim, the value, the op), not just "error".
"""

import sys

import numpy as np

import torchic as tc
from torchic import dispatcher

CASES = []
NAN, INF = float("nan"), float("inf")


class Case:
    def __init__(self, name, fn, exc, match, group):
        self.name, self.fn, self.exc, self.match, self.group = name, fn, exc, match, group


def case(exc, match, group):
    def deco(fn):
        CASES.append(Case(fn.__name__, fn, exc, match, group))
        return fn
    return deco


# -- mismatched shapes ------------------------------------------------------------------
@case(ValueError, r"\(3, 4\) and \(5,\) cannot be broadcast", "shapes")
def add_mismatched_shapes(B):
    tc.randn(3, 4) + tc.randn(5)


@case(ValueError, r"\(0, 3\) and \(2, 3\) cannot be broadcast.*0 vs 2", "shapes")
def add_zero_size_vs_two(B):
    tc.zeros(0, 3) * tc.zeros(2, 3)


@case(RuntimeError, r"shapes \(2, 3\) and \(2, 3\) cannot be multiplied \(3 columns vs 2 rows\)",
      "shapes")
def matmul_inner_mismatch(B):
    tc.ones(2, 3) @ tc.ones(2, 3)


@case(ValueError, r"\(2,\) and \(3,\) cannot be broadcast", "shapes")
def matmul_batch_mismatch(B):
    tc.ones(2, 3, 4) @ tc.ones(3, 4, 5)


@case(RuntimeError, r"matmul: both arguments need at least 1 dimension.*\[\]", "shapes")
def matmul_zero_dim(B):
    tc.ones(2, 3) @ tc.tensor(1.0)


@case(ValueError, r"cat: shapes \[\[2, 3\], \[3, 3\]\] differ outside dim 1", "shapes")
def cat_shapes_differ(B):
    tc.cat([tc.ones(2, 3), tc.ones(3, 3)], dim=1)


@case(RuntimeError, r"stack expects each tensor to be equal size, but got \[2\] at entry 0 and "
      r"\[3\] at entry 1", "shapes")
def stack_unequal(B):
    tc.stack([tc.ones(2), tc.ones(3)])


@case(ValueError, r"shape \(5, -1\) is invalid for input of size 12", "shapes")
def reshape_wrong_numel(B):
    tc.ones(3, 4).reshape(5, -1)


@case(ValueError, r"only one dimension can be -1", "shapes")
def reshape_two_unknowns(B):
    tc.ones(2, 3).view(-1, -1)


@case(RuntimeError, r"view size is not compatible.*use \.reshape", "shapes")
def view_of_transposed(B):
    tc.ones(2, 3).T.view(6)


@case(ValueError, r"cannot expand shape \(3, 4\) to \(3, 5\)", "shapes")
def expand_incompatible(B):
    tc.ones(3, 4).expand(3, 5)


@case(ValueError, r"add_: the result shape \[2, 3\].*target's shape \[3\]", "shapes")
def inplace_broadcast_grows_target(B):
    tc.ones(3).add_(tc.ones(2, 3))


@case(ValueError, r"cannot expand shape \(4,\) to \(3,\)", "shapes")
def setitem_value_shape(B):
    t = tc.ones(2, 3)
    t[0] = tc.ones(4)


@case(ValueError, r"cross_entropy expects logits \(N, C\) and target \(N,\), got \[4, 3\] and \[5\]",
      "shapes")
def cross_entropy_rows_mismatch(B):
    tc.cross_entropy(tc.zeros(4, 3), tc.zeros(5, dtype="i32"))


@case(RuntimeError, r"Mismatch in shape: grad_output\[0\] has a shape of \[2\] and output\[0\] has a shape of \[3\]", "autograd")
def backward_gradient_wrong_shape(B):
    x = tc.ones(3, requires_grad=True)
    (x * 2).backward(tc.ones(2))


# -- bad axes ---------------------------------------------------------------------------
@case(IndexError, r"dim 3 is out of range for a tensor with 2 dimensions", "axes")
def sum_dim_out_of_range(B):
    tc.ones(3, 4).sum(dim=3)


@case(IndexError, r"dim -3 is out of range.*2 dimensions", "axes")
def softmax_dim_out_of_range(B):
    tc.ones(3, 4).softmax(dim=-3)


@case(ValueError, r"dim 0 appears more than once", "axes")
def sum_repeated_dim(B):
    tc.ones(2, 3).sum(dim=(0, 0))


@case(TypeError, r"dim must be an int, got str", "axes")
def sum_dim_wrong_type(B):
    tc.ones(2, 3).sum(dim="a")


@case(ValueError, r"permute dims \(0, 0\) are not a permutation of 0\.\.1", "axes")
def permute_repeated(B):
    tc.ones(3, 4).permute(0, 0)


@case(ValueError, r"permute needs 2 dims for a tensor of shape \(3, 4\)", "axes")
def permute_wrong_count(B):
    tc.ones(3, 4).permute(0)


@case(ValueError, r"transpose\(\) without dims needs a tensor of at most 2 dims.*\[2, 3, 4\]",
      "axes")
def transpose_3d_without_dims(B):
    tc.ones(2, 3, 4).transpose()


@case(IndexError, r"dim 2 is out of range.*2 dimensions", "axes")
def argmax_dim_out_of_range(B):
    tc.ones(2, 3).argmax(2)


@case(IndexError, r"dim 4 is out of range for a tensor with 3 dimensions", "axes")
def unsqueeze_out_of_range(B):
    tc.ones(2, 3).unsqueeze(4)


@case(ValueError, r"flatten: start_dim 1 comes after end_dim 0", "axes")
def flatten_reversed(B):
    tc.ones(2, 3).flatten(1, 0)


@case(TypeError, r"give either dim= or axis=, not both", "axes")
def dim_and_axis(B):
    tc.ones(2, 3).sum(dim=0, axis=0)


# -- indices: out of range, wrong type ----------------------------------------------------
@case(IndexError, r"index 5 is out of bounds for dimension 1 with size 3", "indices")
def int_index_out_of_range(B):
    tc.ones(2, 3)[0, 5]


@case(IndexError, r"index -3 is out of bounds for dimension 0 with size 2", "indices")
def negative_int_index_out_of_range(B):
    tc.ones(2, 3)[-3]


@case(IndexError, r"too many indices for tensor of dimension 2 \(got 3", "indices")
def too_many_indices(B):
    tc.ones(2, 3)[0, 1, 2]


@case(tc.KernelError, r"gather_rows.*index 7 is out of range \[0, 5\)", "indices")
def index_tensor_out_of_range(B):
    tc.randn(5, 3)[tc.tensor([0, 7])].numpy()


@case(tc.KernelError, r"gather_rows.*index -4 is out of range \[0, 3\)", "indices")
def negative_index_tensor(B):
    # -3 <= i < 0 counts from the end (PyTorch's rule); below -3 the kernel refuses it,
    # naming the index: it must say so, never read outside the table
    tc.ones(3, 2)[tc.tensor([-4])].numpy()


@case(tc.KernelError, r"gather_rows.*out of range", "indices")
def embedding_backward_after_bad_index(B):
    table = tc.randn(4, 2, requires_grad=True)
    table[tc.tensor([[1, 4]])].sum().backward()
    table.grad.numpy()


@case(IndexError, r"index 5 is out of bounds for dimension 1 with size 3", "indices")
def point_index_out_of_range(B):
    tc.ones(2, 3)[tc.tensor([0, 1]), tc.tensor([0, 5])]


@case(IndexError, r"indexing tensors could not be broadcast together with shapes \[\[2\], \[3\]\]",
      "indices")
def point_indices_mismatched(B):
    tc.ones(2, 3)[tc.tensor([0, 1]), tc.tensor([0, 1, 2])]


@case(IndexError, r"index 5 is out of bounds for dimension 1 with size 3", "indices")
def index_list_out_of_range_on_axis_1(B):
    tc.ones(2, 3)[:, [0, 5]]


@case(IndexError, r"tensors used as indices must be long, int, byte or bool tensors", "indices")
def float_tensor_index(B):
    tc.ones(2, 3)[tc.tensor([0.5])]


@case(TypeError, r"invalid index of type str", "indices")
def string_index(B):
    tc.ones(2, 3)["a"]


@case(TypeError, r"invalid index of type float", "indices")
def float_index(B):
    tc.ones(2, 3)[1.5]


@case(TypeError, r"slice stop must be an int or None, got 2\.5", "indices")
def float_slice(B):
    tc.ones(2, 3)[0:2.5]


@case(ValueError, r"slice step must be positive, got -1", "indices")
def negative_slice_step(B):
    tc.ones(2, 3)[::-1]


@case(RuntimeError, r"shape mismatch: value tensor of shape \[3\] cannot be broadcast to "
      r"indexing result of shape \[2\]", "indices")
def setitem_with_index_tensor_value_mismatch(B):
    t = tc.ones(3)
    t[tc.tensor([0, 1])] = tc.ones(3)


@case(tc.KernelError, r"cross_entropy.*target class 3 is out of range \[0, 3\)", "indices")
def cross_entropy_target_out_of_range(B):
    tc.cross_entropy(tc.randn(2, 3), tc.tensor([0, 3])).item()


@case(tc.KernelError, r"cross_entropy.*target class -1 is out of range", "indices")
def cross_entropy_negative_target(B):
    x = tc.randn(2, 3, requires_grad=True)
    tc.cross_entropy(x, tc.tensor([-1, 0])).backward()
    x.grad.numpy()


# a kernel's index error is also the built-in class PyTorch raises (issue 13)
@case(IndexError, r"gather_rows' \(from indexing with an integer tensor.*index 9 is out of range "
      r"\[0, 5\)", "indices")
def index_tensor_out_of_range_is_index_error(B):
    tc.randn(5, 3)[tc.tensor([9])].numpy()


@case(IndexError, r"cross_entropy_grad' \(from the backward of cross_entropy\).*target class 4",
      "indices")
def cross_entropy_grad_target_is_index_error(B):
    x = tc.randn(2, 3, requires_grad=True)
    loss = tc.cross_entropy(x, tc.tensor([4, 0]))
    try:
        loss.item()
    except IndexError:
        pass            # the forward's error; the backward's is raised at the next read
    loss.backward()
    x.grad.numpy()


# an ignored target (-1, makemore's padding) beside a bad one: the bad one is still an error
# naming the op, in the forward and in the backward
@case(tc.KernelError, r"cross_entropy.*target class 5 is out of range \[0, 3\)", "indices")
def cross_entropy_bad_target_beside_ignored(B):
    tc.nn.functional.cross_entropy(tc.randn(3, 3), tc.tensor([-1, 5, 0]), ignore_index=-1).item()


@case(IndexError, r"cross_entropy_grad' \(from the backward of cross_entropy\).*target class -2",
      "indices")
def cross_entropy_grad_bad_target_beside_ignored(B):
    x = tc.randn(3, 3, requires_grad=True)
    loss = tc.nn.functional.cross_entropy(x, tc.tensor([-100, 0, -2]))
    try:
        loss.item()
    except IndexError:
        pass            # the forward's error; the backward's is raised at the next read
    loss.backward()
    x.grad.numpy()


@case(TypeError, r"argument 'ignore_index' must be int, not float", "dtypes")
def cross_entropy_float_ignore_index(B):
    tc.nn.functional.cross_entropy(tc.zeros(2, 3), tc.tensor([0, 1]), ignore_index=1.0)


@case(IndexError, r"gather_rows.*index 9 is out of range.*sync mode: issued by "
      r"torchic\.Tensor\.__getitem__ \(GatherRows\.forward\), at .*bad_cases\.py:\d+: "
      r"C\[idx\]", "indices")
def sync_mode_raises_at_the_indexing_line(B):
    tc.init(B, sync=True)
    try:
        C, idx = tc.randn(5, 3), tc.tensor([0, 9])
        C[idx]            # no read: sync mode raises here
    finally:
        tc.init(B)


# -- integer tensors where floats are needed ---------------------------------------------
@case(RuntimeError, r"mean\(\): could not infer output dtype.*Got: Long", "dtypes")
def mean_of_int(B):
    tc.tensor([1, 2]).mean()


@case(NotImplementedError, r"matmul is not implemented for torchic.bool", "dtypes")
def matmul_of_bool(B):      # (integer products are exact since issue 41, as PyTorch CPU's)
    tc.tensor([[True, False]]) @ tc.tensor([[True], [True]])


@case(TypeError, r"softmax expects floating tensors", "dtypes")
def softmax_of_int(B):
    tc.tensor([1, 2]).softmax(0)


@case(RuntimeError, r"only Tensors of floating point dtype can require gradients", "dtypes")
def int_requires_grad(B):
    tc.zeros(3, dtype="i32").requires_grad_()


@case(TypeError, r"cross_entropy target must hold integer class indices.*float32", "dtypes")
def cross_entropy_float_target(B):
    tc.cross_entropy(tc.zeros(2, 3), tc.zeros(2))


@case(TypeError, r"cross_entropy logits expects floating tensors", "dtypes")
def cross_entropy_int_logits(B):
    tc.cross_entropy(tc.zeros(2, 3, dtype="i32"), tc.zeros(2, dtype="i32"))


@case(RuntimeError, r"multinomial only supports floating-point dtypes for input, got: "
                    r"torchic.int64", "dtypes")
def multinomial_int_weights(B):
    tc.multinomial(tc.tensor([1, 2]), 1)


@case(RuntimeError, r"result type Float can't be cast to the desired output type Int", "dtypes")
def inplace_on_int(B):
    tc.ones(3, dtype="i32").add_(1.5)


@case(TypeError, r"unsupported operand type str", "dtypes")
def add_string(B):
    tc.ones(2) + "a"


@case(TypeError, r"cannot make a tensor from data of type <U1 \(list\)", "dtypes")
def tensor_from_strings(B):
    tc.tensor(["a", "b", "c"])


@case(TypeError, r"unsupported dtype 'complex64'", "dtypes")
def unsupported_dtype(B):
    tc.zeros(2, dtype="complex64")


@case(TypeError, r"unsupported dtype 'complex64'", "dtypes")
def to_unsupported_dtype(B):
    tc.ones(2).to("complex64")


@case(TypeError, r"unsupported dtype <class 'complex'>", "dtypes")
def to_unsupported_dtype_keyword(B):
    tc.ones(2).to(dtype=complex)


@case(RuntimeError, r"to\('cuda'\): device 'cuda' is not available.*torchic\.init", "dtypes")
def to_cuda(B):
    tc.ones(2).to("cuda")


@case(RuntimeError, r"to\('cuda:0'\): device 'cuda:0' is not available", "dtypes")
def to_cuda_with_dtype(B):
    tc.ones(2).to("cuda:0", tc.float32)


@case(RuntimeError, r"expected a device \('cpu' or '\w+'\) or a dtype.*got 'floaty'", "dtypes")
def to_unknown_string(B):
    tc.ones(2, dtype="i32").to("floaty")


@case(TypeError, r"to\(\) got an unexpected keyword argument 'layout'", "dtypes")
def to_unknown_keyword(B):
    tc.ones(2).to("cpu", layout=None)


# -- non-finite values where they matter ----------------------------------------------------
@case(ValueError, r"multinomial weights must be finite and non-negative", "non-finite")
def multinomial_nan_weight(B):
    tc.multinomial(tc.tensor([1.0, NAN]), 1)


@case(ValueError, r"multinomial weights must be finite and non-negative", "non-finite")
def multinomial_inf_weight(B):
    tc.multinomial(tc.tensor([[1.0, 2.0], [INF, 1.0]]), 1)


@case(ValueError, r"multinomial weights must be finite and non-negative", "non-finite")
def multinomial_negative_weight(B):
    tc.multinomial(tc.tensor([1.0, -0.5]), 1)


@case(RuntimeError, r"cannot be converted to type int32 without overflow \(tensor\(data\): nan",
      "non-finite")
def int_tensor_from_nan(B):
    tc.tensor([1.0, NAN], dtype="i32")


@case(RuntimeError, r"cannot be converted to type int without overflow.*cannot fill a tensor "
                    r"of dtype int32 with nan", "non-finite")
def fill_int_with_nan(B):
    tc.zeros(3, dtype="i32").fill_(NAN)


@case(RuntimeError, r"cannot be converted to type int without overflow.*cannot fill a tensor "
                    r"of dtype int32 with inf", "non-finite")
def full_int_with_inf(B):
    tc.full((2,), INF, dtype="i32")


@case(ValueError, r"arange needs finite start, end and step.*inf", "non-finite")
def arange_to_infinity(B):
    tc.arange(0, INF)


@case(ValueError, r"heap_cap must be a positive number of bytes, got inf", "non-finite")
def heap_cap_infinite(B):
    tc.init(B, heap_cap=INF)


@case(TypeError, r"randint high must be an int, got nan", "non-finite")
def randint_nan_bound(B):
    tc.randint(0, NAN, (2,))


# -- zero-size edge cases -----------------------------------------------------------------
@case(ValueError, r"max\(\) of an empty tensor", "zero-size")
def max_of_empty(B):
    tc.zeros(0, 3).max()


@case(ValueError, r"amax\(\): cannot reduce over an empty dimension.*\[0, 3\]", "zero-size")
def amax_over_empty_dim(B):
    tc.zeros(0, 3).amax(0)


@case(ValueError, r"min\(dim=1\) over an empty dimension of shape \[2, 0\]", "zero-size")
def min_over_empty_dim(B):
    tc.zeros(2, 0).min(dim=1)


@case(ValueError, r"argmax\(\) of an empty tensor", "zero-size")
def argmax_of_empty(B):
    tc.zeros(0).argmax()


@case(ValueError, r"item\(\) needs a tensor with one element, got shape \[0\]", "zero-size")
def item_of_empty(B):
    tc.zeros(0).item()


@case(ValueError, r"cross_entropy needs at least one class", "zero-size")
def cross_entropy_zero_classes(B):
    tc.cross_entropy(tc.zeros(2, 0), tc.tensor([0, 0]))


@case(ValueError, r"multinomial needs at least one category.*\[2, 0\]", "zero-size")
def multinomial_zero_categories(B):
    tc.multinomial(tc.zeros(2, 0), 1)


@case(ValueError, r"multinomial weights of a row sum to zero", "zero-size")
def multinomial_all_zero_row(B):
    tc.multinomial(tc.tensor([[1.0, 0.0], [0.0, 0.0]]), 1)


@case(ValueError, r"cannot draw 3 samples without replacement from 2 categories", "zero-size")
def multinomial_too_many_without_replacement(B):
    tc.multinomial(tc.tensor([1.0, 1.0, 0.0]), 3)


@case(ValueError, r"cat needs a non-empty sequence", "zero-size")
def cat_of_nothing(B):
    tc.cat([])


@case(ValueError, r"negative dimension in shape \(-1,\)", "zero-size")
def negative_dimension(B):
    tc.zeros(-1)


@case(TypeError, r"shape dimensions must be ints, got \(2\.5,\)", "zero-size")
def float_dimension(B):
    tc.zeros(2.5)


# -- the heap cap ---------------------------------------------------------------------------
@case(tc.HeapFullError, r"heap cap exceeded: requested 4194304 bytes.*cap of 1048576", "heap")
def alloc_past_cap(B):
    tc.init(B, heap_cap=1 << 20)
    tc.zeros(1 << 20)


@case(tc.HeapFullError, r"heap cap exceeded: requested \d+ bytes, \d+ bytes in use", "heap")
def many_allocs_past_cap(B):
    tc.init(B, heap_cap=1 << 20)
    keep = []
    for _ in range(64):
        keep.append(tc.zeros(1 << 15))


@case(MemoryError, r"heap cap exceeded: requested 4000000 bytes for randn of shape "
      r"\[1000, 1000\], more than the heap cap of 1048576 bytes", "heap")
def randn_past_cap_on_the_host(B):
    tc.init(B, heap_cap=1 << 20)
    tc.randn(1000, 1000)


@case(tc.HeapFullError, r"requested 4000000 bytes for a tensor from a list.*cap of 1048576",
      "heap")
def tensor_from_list_past_cap(B):
    tc.init(B, heap_cap=1 << 20)
    tc.tensor([[0.5] * 1000] * 1000)


@case(tc.HeapFullError, r"requested 800000000 bytes for arange\(0, 100000000, 1\)", "heap")
def arange_past_cap(B):
    tc.init(B, heap_cap=1 << 20)
    tc.arange(10 ** 8)


@case(tc.HeapFullError, r"heap cap exceeded", "heap")
def op_output_past_cap(B):
    tc.init(B, heap_cap=1 << 20)
    a = tc.ones(300, 300)          # 360 KB
    b = a @ a                      # another 360 KB
    (b @ b).numpy()                # a third does not fit


# -- use after dispose, across init ---------------------------------------------------------
@case(RuntimeError, r"this tensor has been disposed", "lifetime")
def use_after_dispose(B):
    t = tc.ones(3)
    t.dispose()
    t + 1


@case(RuntimeError, r"this tensor has been disposed", "lifetime")
def read_view_of_disposed(B):
    t = tc.ones(4)
    v = t[1:]
    t.dispose()
    v.numpy()


@case(RuntimeError, r"this tensor has been disposed.*track_tensors", "lifetime")
def use_after_scope(B):
    with tc.track_tensors():
        s = tc.ones(3) * 2
    s.sum()


@case(RuntimeError, r"this tensor has been disposed", "lifetime")
def inplace_into_disposed(B):
    t = tc.ones(3)
    t.dispose()
    t.copy_(tc.ones(3))


@case(RuntimeError, r"belongs to a previous runtime.*replaced by torchic\.init", "lifetime")
def use_across_init(B):
    old = tc.ones(3)
    tc.init(B)
    tc.ones(3) + old


@case(RuntimeError, r"closed by torchic\.shutdown\(\).*create it again", "lifetime")
def use_after_shutdown(B):
    old = tc.ones(3)
    tc.shutdown()
    old + 1


@case(RuntimeError, r"belongs to a previous runtime", "lifetime")
def read_across_init(B):
    old = tc.ones(3) * 2
    tc.init(B)
    old.numpy()


# -- autograd misuse --------------------------------------------------------------------------
@case(RuntimeError, r"grad can be implicitly created only for scalar outputs.*shape \[3\]",
      "autograd")
def backward_non_scalar(B):
    x = tc.ones(3, requires_grad=True)
    (x * 2).backward()


@case(RuntimeError, r"backward through the graph a second time.*retain_graph=True", "autograd")
def backward_twice(B):
    x = tc.ones(3, requires_grad=True)
    y = (x * x).sum()
    y.backward()
    y.backward()


@case(RuntimeError, r"does not require grad", "autograd")
def backward_without_grad(B):
    tc.ones(3).sum().backward()


@case(RuntimeError, r"a leaf Variable that requires grad is being used in an in-place operation",
      "autograd")
def inplace_on_leaf(B):
    w = tc.ones(3, requires_grad=True)
    w.add_(1)


@case(RuntimeError, r"a view of a leaf Variable that requires grad is being used in an in-place "
      r"operation", "autograd")
def inplace_on_view_of_leaf(B):
    w = tc.ones(3, requires_grad=True)
    v = w[0:2]
    v.mul_(3)


@case(RuntimeError, r"needed for gradient computation in Exp has been modified by an inplace "
      r"operation.*version 1; expected version 0", "autograd")
def inplace_on_saved_output(B):
    x = tc.ones(3, requires_grad=True)
    y = x.exp()
    with tc.no_grad():
        y.mul_(2)
    y.sum().backward()


@case(RuntimeError, r"needed for gradient computation in Mul has been modified", "autograd")
def inplace_on_saved_input(B):
    a = tc.ones(3)
    w = tc.ones(3, requires_grad=True)
    loss = (a * w).sum()
    a[0] = 5.0
    loss.backward()


@case(RuntimeError, r"attempting to assign a gradient of size '\[2\]' to a tensor of size "
      r"'\[3\]'", "autograd")
def grad_wrong_shape(B):
    tc.ones(3, requires_grad=True).grad = tc.ones(2)


@case(RuntimeError, r"attempting to assign a gradient with dtype 'int' to a tensor with "
      r"grad_dtype 'Float'", "autograd")
def grad_wrong_dtype(B):
    tc.ones(3, requires_grad=True).grad = tc.ones(3, dtype="i32")


@case(TypeError, r"assigned grad expected to be a Tensor or None but got grad of type list",
      "autograd")
def grad_not_a_tensor(B):
    tc.ones(3, requires_grad=True).grad = [1.0, 2.0, 3.0]


@case(RuntimeError, r"you can only change requires_grad of leaf tensors", "autograd")
def requires_grad_false_on_non_leaf(B):
    x = tc.ones(3, requires_grad=True)
    (x * 2).requires_grad_(False)


# -- backends and init ----------------------------------------------------------------------------
@case(ValueError, r"unknown backend 'cuda'; known backends: \[.*'workers'", "backends")
def unknown_backend(B):
    tc.init("cuda")


@case(TypeError, r"backend must be a string, got int", "backends")
def backend_not_a_string(B):
    tc.init(5)


@case(TypeError, r"got unknown options \['foo'\]", "backends")
def unknown_backend_option(B):
    tc.init(B, foo=1)


@case(ValueError, r"threads must be a positive int, got 0", "backends")
def zero_threads(B):
    tc.init(B, threads=0)


@case(ValueError, r"threads must be a positive int, got True", "backends")
def bool_threads(B):
    tc.init(B, threads=True)


@case(ValueError, r"heap_cap must be a positive number of bytes, got True", "backends")
def bool_heap_cap(B):
    tc.init(B, heap_cap=True)


@case(ValueError, r"environment variable TORCHIC_HEAP_CAP must be a positive number of bytes.*"
      r"got '8G'", "backends")
def heap_cap_env_not_a_number(B):
    import os
    os.environ["TORCHIC_HEAP_CAP"] = "8G"
    try:
        tc.init(B)
    finally:
        del os.environ["TORCHIC_HEAP_CAP"]


@case(ValueError, r"environment variable TORCHIC_SYNC must be 0 or 1, got 'sometimes'",
      "backends")
def sync_env_not_a_flag(B):
    import os
    os.environ["TORCHIC_SYNC"] = "sometimes"
    try:
        tc.init(B)
    finally:
        del os.environ["TORCHIC_SYNC"]


@case(TypeError, r"sync must be True or False, got 'yes'", "backends")
def sync_not_a_bool(B):
    tc.init(B, sync="yes")


class _NeverBackend(dispatcher.Backend):
    name = "never"

    @classmethod
    def available(cls):
        return False, "it needs the Frobnicator 9000 (install frobnicator)"


@case(tc.BackendUnavailableError, r"backend 'never' is not available: it needs the Frobnicator",
      "backends")
def unavailable_backend(B):
    dispatcher.register_backend(_NeverBackend)
    try:
        tc.init("never")
    finally:
        dispatcher._BACKENDS.pop("never", None)


@case(tc.BackendUnavailableError, r"backend 'webgpu' is not available: no adapter matches "
      r"'no-such-gpu'", "backends")
def webgpu_adapter_missing(B):
    import os
    os.environ["TORCHIC_WEBGPU_ADAPTER"] = "no-such-gpu"
    try:
        tc.init("webgpu")
    finally:
        del os.environ["TORCHIC_WEBGPU_ADAPTER"]


@case(tc.BackendUnavailableError, r"backend 'webgpu' is not available: the `wgpu` package is "
      r"not installed", "backends")
def webgpu_package_missing(B):
    saved = {k: sys.modules[k] for k in list(sys.modules) if k == "wgpu" or k.startswith("wgpu.")}
    for k in saved:
        del sys.modules[k]
    sys.modules["wgpu"] = None     # `import wgpu` now raises ImportError
    try:
        tc.init("webgpu")
    finally:
        del sys.modules["wgpu"]
        sys.modules.update(saved)


# -- other misuse ---------------------------------------------------------------------------------
@case(RuntimeError, r"the truth value of a tensor with 2 elements is ambiguous", "misc")
def bool_of_vector(B):
    bool(tc.zeros(2))


@case(ValueError, r"cannot make a tensor from ragged nested sequences", "misc")
def ragged_list(B):
    tc.tensor([[1, 2], [3]])


@case(OverflowError, r"value cannot be converted to type int64 without overflow", "misc")
def int_overflow(B):
    tc.tensor([2 ** 70])


@case(ValueError, r"reduction must be 'mean', 'sum' or 'none', got 'avg'", "misc")
def bad_reduction(B):
    tc.cross_entropy(tc.zeros(2, 3), tc.tensor([0, 1]), reduction="avg")


@case(ValueError, r"randint: high \(2\) must be greater than low \(5\)", "misc")
def randint_empty_range(B):
    tc.randint(5, 2, (3,))


@case(TypeError, r"fill_ takes a number, got str", "misc")
def fill_with_string(B):
    tc.ones(3).fill_("a")


@case(RuntimeError, r"graph leaves\) support the deepcopy protocol", "misc")
def deepcopy_non_leaf(B):        # PyTorch's refusal (pickle and copy.copy of one work)
    import copy
    copy.deepcopy(tc.ones(2, requires_grad=True) * 2)


@case(TypeError, r"torch\.Tensor\(\) takes sizes \(ints\) or one sequence of data", "misc")
def construct_tensor_from_bad_arguments(B):
    tc.Tensor(2, "a")


@case(RuntimeError, r"manual_seed expected a long, but got float", "misc")
def float_seed(B):
    tc.Generator().manual_seed(1.5)     # PyTorch's torch.manual_seed(1.5) takes int(1.5)


@case(TypeError, r"matmul needs two tensors, got Tensor and int.*use \* to scale", "misc")
def matmul_with_number(B):
    tc.matmul(tc.ones(2, 2), 2)


_ = np
