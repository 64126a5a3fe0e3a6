"""PyTorch's "Defining new autograd functions" tutorial (polynomial_custom_function.py):
y = a + b * P3(c + d * x) fitted to sin(x) on [-pi, pi], where P3, the Legendre polynomial
of degree 3, is a custom torch.autograd.Function. The tutorial's class and training loop
unchanged (the fixed starting values a=0, b=-1, c=0, d=0.3: no random draws); then the same
model written with setup_context, and a gradient-penalty step (create_graph) through the
custom Function's backward (its backward is built from tensor ops, so it has a derivative).
Our own program: the harness compares the losses and coefficients with PyTorch's.
"""

import math

import torch


class LegendrePolynomial3(torch.autograd.Function):
    """
    We can implement our own custom autograd Functions by subclassing
    torch.autograd.Function and implementing the forward and backward passes
    which operate on Tensors.
    """

    @staticmethod
    def forward(ctx, input):
        """
        In the forward pass we receive a Tensor containing the input and return
        a Tensor containing the output. ctx is a context object that can be used
        to stash information for backward computation. You can cache arbitrary
        objects for use in the backward pass using the ctx.save_for_backward method.
        """
        ctx.save_for_backward(input)
        return 0.5 * (5 * input ** 3 - 3 * input)

    @staticmethod
    def backward(ctx, grad_output):
        """
        In the backward pass we receive a Tensor containing the gradient of the loss
        with respect to the output, and we need to compute the gradient of the loss
        with respect to the input.
        """
        input, = ctx.saved_tensors
        return grad_output * 1.5 * (5 * input ** 2 - 1)


class P3WithSetupContext(torch.autograd.Function):
    """The same function in the forward / setup_context form, with a non-tensor input."""

    @staticmethod
    def forward(input, scale):
        return scale * 0.5 * (5 * input ** 3 - 3 * input)

    @staticmethod
    def setup_context(ctx, inputs, output):
        input, scale = inputs
        ctx.save_for_backward(input)
        ctx.scale = scale

    @staticmethod
    def backward(ctx, grad_output):
        input, = ctx.saved_tensors
        return grad_output * ctx.scale * 1.5 * (5 * input ** 2 - 1), None


def fit(P3, steps, learning_rate=5e-6, extra=()):
    dtype = torch.float
    device = torch.device("cpu")
    x = torch.linspace(-math.pi, math.pi, 2000, device=device, dtype=dtype)
    y = torch.sin(x)
    a = torch.full((), 0.0, device=device, dtype=dtype, requires_grad=True)
    b = torch.full((), -1.0, device=device, dtype=dtype, requires_grad=True)
    c = torch.full((), 0.0, device=device, dtype=dtype, requires_grad=True)
    d = torch.full((), 0.3, device=device, dtype=dtype, requires_grad=True)
    losses = []
    for t in range(steps):
        y_pred = a + b * P3(c + d * x, *extra)
        loss = (y_pred - y).pow(2).sum()
        losses.append(loss.item())
        loss.backward()
        with torch.no_grad():
            a -= learning_rate * a.grad
            b -= learning_rate * b.grad
            c -= learning_rate * c.grad
            d -= learning_rate * d.grad
            a.grad = None
            b.grad = None
            c.grad = None
            d.grad = None
    return losses, [a.item(), b.item(), c.item(), d.item()]


def penalty_steps(steps, learning_rate=1e-4):
    """loss + |d loss / d u|^2 (a gradient penalty): the penalty's gradient runs through
    LegendrePolynomial3's backward (recorded with create_graph=True)."""
    x = torch.linspace(-1.0, 1.0, 64, dtype=torch.float)
    w = torch.tensor([0.2, -0.4], requires_grad=True)
    losses = []
    for _ in range(steps):
        u = w[0] + w[1] * x
        out = LegendrePolynomial3.apply(u)
        loss = (out - x).pow(2).mean()
        (g,) = torch.autograd.grad(loss, w, create_graph=True)
        total = loss + 0.1 * (g ** 2).sum()
        losses.append(total.item())
        total.backward()
        with torch.no_grad():
            w -= learning_rate * 100 * w.grad
            w.grad = None
    return losses


def main(steps=20, seed=0, bridge=None):
    losses, coeffs = fit(LegendrePolynomial3.apply, steps)
    setup_losses, setup_coeffs = fit(P3WithSetupContext.apply, steps, extra=(1.0,))
    penalty = penalty_steps(steps)
    return {"losses": losses, "coefficients": coeffs, "setup_context losses": setup_losses,
            "setup_context coefficients": setup_coeffs, "penalty losses": penalty}


if __name__ == "__main__":
    out = main()
    print(f"Result: y = {out['coefficients'][0]} + {out['coefficients'][1]} * "
          f"P3({out['coefficients'][2]} + {out['coefficients'][3]} x)")
