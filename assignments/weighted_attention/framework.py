"""A small numpy deep-learning library for the weighted-attention exercise.

Everything the exercise needs, in one file you can read top to bottom:

    Tensor            an array with a gradient and a backward pass (autograd)
    Module, layers    Linear, Embedding, CausalMask, Softmax, GELU, Sequential
    training          cross_entropy, AdamW, WarmupCosine, train, evaluate, sample
    data              load_corpus (tinyshakespeare), CharDataset
    the model         GPT: embeddings, blocks of attention + feed-forward, output

The one piece that is missing is the attention layer: you write it, and pass
its class to GPT (``GPT(vocab_size, attention=WeightedAttention)``).

Conventions
-----------
* Arrays are float32 unless you ask for float64 (``model.astype(np.float64)``,
  used by the gradient checks). Token ids are plain integer numpy arrays.
* Shapes in comments: B batch, T time (context), E embedding width, V vocabulary.
* Initialisation is reproducible per tensor: every parameter draws from its own
  random stream keyed by (seed, parameter name), so adding or removing a layer
  never changes how any other parameter starts. That keeps comparisons between
  model variants paired. The seed is a module-level setting: ``seed(s)`` sets
  it, ``with init_seed(s):`` sets it for a block, ``GPT(..., seed=s)`` uses the
  latter. The default is 0.
* Nothing here sets the number of BLAS threads; at this model size one thread
  is as fast as two.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import operator
import os
import time
import zlib
from pathlib import Path

import numpy as np

__all__ = [
    "Tensor", "no_grad", "seed", "init_seed", "get_seed", "param_rng",
    "Module", "Linear", "Embedding", "CausalMask", "Softmax", "GELU", "Sequential",
    "linear", "embedding", "causal_mask", "softmax", "gelu", "cross_entropy",
    "AdamW", "WarmupCosine", "GPT", "Block",
    "load_corpus", "CharDataset", "train", "evaluate", "sample", "gradient_check",
]


# ---------------------------------------------------------------------------
# Tensor and autograd
# ---------------------------------------------------------------------------

_grad_enabled = True


@contextlib.contextmanager
def no_grad():
    """Run a block without building the graph (evaluation, sampling)."""
    global _grad_enabled
    previous, _grad_enabled = _grad_enabled, False
    try:
        yield
    finally:
        _grad_enabled = previous


class Tensor:
    """A numpy array plus what backward() needs: parents and a backward closure.

    ``requires_grad`` is True for parameters and for everything computed from
    them; constants (inputs, masks) have it False and never get a gradient.
    """

    __slots__ = ("data", "grad", "requires_grad", "name", "_parents", "_backward", "_order")

    def __init__(self, data, requires_grad=False, name=None, dtype=None):
        if isinstance(data, Tensor):
            data = data.data
        if dtype is None:
            # keep float32/float64 arrays as they are; everything else becomes float32
            kind = getattr(getattr(data, "dtype", None), "kind", "")
            dtype = data.dtype if kind == "f" else np.float32
        self.data = np.asarray(data, dtype=dtype)
        self.grad = None
        self.requires_grad = requires_grad
        self.name = name
        self._parents = ()
        self._backward = None
        self._order = 0

    # -- small conveniences --------------------------------------------------
    shape = property(lambda self: self.data.shape)
    ndim = property(lambda self: self.data.ndim)
    dtype = property(lambda self: self.data.dtype)
    size = property(lambda self: self.data.size)

    def __repr__(self):
        label = f", name={self.name!r}" if self.name else ""
        return f"Tensor(shape={self.shape}, dtype={self.dtype}{label})"

    def numpy(self):
        return self.data

    def item(self):
        return float(self.data)

    # -- autograd ------------------------------------------------------------
    def backward(self, grad=None):
        """Fill ``.grad`` of every tensor this one was computed from.

        Gradients accumulate (+=) into parameters, so zero them between steps.
        """
        # Every op's output is numbered when it is created, after its inputs,
        # so sorting the reachable tensors by that number, newest first, is a
        # topological order: a tensor's gradient is complete before its own
        # backward closure passes it on to its inputs.
        nodes, stack, seen = [], [self], {id(self)}
        while stack:
            node = stack.pop()
            if node._backward is not None:
                nodes.append(node)
            for parent in node._parents:
                if id(parent) not in seen:
                    seen.add(id(parent))
                    stack.append(parent)
        nodes.sort(key=_creation_order, reverse=True)

        if grad is None:
            grad = np.ones_like(self.data)
        _accumulate(self, np.asarray(grad, dtype=self.data.dtype))
        for node in nodes:
            if node.grad is not None:
                node._backward()

    # -- arithmetic ----------------------------------------------------------
    def __add__(self, other):
        other = _as_tensor(other, self.dtype)
        out = _result(self.data + other.data, (self, other))
        if out.requires_grad:
            def backward():
                if self.requires_grad:
                    _accumulate(self, _unbroadcast(out.grad, self.shape))
                if other.requires_grad:
                    _accumulate(other, _unbroadcast(out.grad, other.shape))
            out._backward = backward
        return out

    __radd__ = __add__

    def __neg__(self):
        return self * -1.0

    def __sub__(self, other):
        return self + (-_as_tensor(other, self.dtype))

    def __rsub__(self, other):
        return _as_tensor(other, self.dtype) + (-self)

    def __mul__(self, other):
        if isinstance(other, (int, float)):  # scaling by a Python number: cheapest path
            out = _result(self.data * other, (self,))
            if out.requires_grad:
                out._backward = lambda: _accumulate(self, out.grad * other)
            return out
        other = _as_tensor(other, self.dtype)
        out = _result(self.data * other.data, (self, other))
        if out.requires_grad:
            def backward():
                if self.requires_grad:
                    _accumulate(self, _unbroadcast(out.grad * other.data, self.shape))
                if other.requires_grad:
                    _accumulate(other, _unbroadcast(out.grad * self.data, other.shape))
            out._backward = backward
        return out

    __rmul__ = __mul__

    def __truediv__(self, number):
        if not isinstance(number, (int, float)):
            raise TypeError("Tensor / x is only defined for a Python number x")
        return self * (1.0 / number)

    def __matmul__(self, other):
        """Matrix product over the last two axes, batched over the others."""
        other = _as_tensor(other, self.dtype)
        out = _result(self.data @ other.data, (self, other))
        if out.requires_grad:
            def backward():
                g = out.grad
                if self.requires_grad:  # dA = dC B^T
                    _accumulate(self, _unbroadcast(g @ np.swapaxes(other.data, -1, -2), self.shape))
                if other.requires_grad:  # dB = A^T dC
                    _accumulate(other, _unbroadcast(np.swapaxes(self.data, -1, -2) @ g, other.shape))
            out._backward = backward
        return out

    # -- shape ---------------------------------------------------------------
    def transpose(self, axis1=-2, axis2=-1):
        """Swap two axes (by default the last two, as for K^T)."""
        out = _result(np.swapaxes(self.data, axis1, axis2), (self,))
        if out.requires_grad:
            out._backward = lambda: _accumulate(self, np.swapaxes(out.grad, axis1, axis2))
        return out

    @property
    def T(self):
        return self.transpose(-2, -1)

    def reshape(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        out = _result(self.data.reshape(shape), (self,))
        if out.requires_grad:
            out._backward = lambda: _accumulate(self, out.grad.reshape(self.shape))
        return out

    # -- reductions ----------------------------------------------------------
    def sum(self, axis=None, keepdims=False):
        out = _result(self.data.sum(axis=axis, keepdims=keepdims), (self,))
        if out.requires_grad:
            def backward():
                g = out.grad
                if axis is not None and not keepdims:
                    g = np.expand_dims(g, axis)
                _accumulate(self, np.broadcast_to(g, self.shape).copy())
            out._backward = backward
        return out

    def mean(self, axis=None, keepdims=False):
        count = self.size if axis is None else np.prod([self.shape[a] for a in np.atleast_1d(axis)])
        return self.sum(axis=axis, keepdims=keepdims) * (1.0 / float(count))

    # -- fused ops (defined below as functions) ------------------------------
    def softmax(self, axis=-1):
        return softmax(self, axis)

    def gelu(self):
        return gelu(self)


def _as_tensor(x, dtype):
    return x if isinstance(x, Tensor) else Tensor(np.asarray(x, dtype=dtype))


_counter = itertools.count(1)
_creation_order = operator.attrgetter("_order")


def _result(data, parents):
    """Wrap an op's output; record the parents only when a gradient can flow."""
    out = Tensor.__new__(Tensor)  # skips __init__'s conversions: data is already an array
    out.data, out.grad, out.name, out._backward = data, None, None, None
    out._order = next(_counter)
    if _grad_enabled and any(p.requires_grad for p in parents):
        out.requires_grad, out._parents = True, parents
    else:
        out.requires_grad, out._parents = False, ()
    return out


def _accumulate(t, g):
    """Add gradient g into t.grad.

    A parameter (a leaf) owns its .grad buffer and adds in place, because AdamW
    makes those buffers views into one flat array. An intermediate tensor may
    share g with another tensor (``a + b`` passes the same g to both), so it
    never modifies g in place.
    """
    if t.grad is None:
        t.grad = g.copy() if not t._parents else g
    elif not t._parents:
        t.grad += g
    else:
        t.grad = t.grad + g


def _unbroadcast(g, shape):
    """Sum g down to `shape`: the backward pass of numpy broadcasting."""
    if g.shape == shape:
        return g
    extra = g.ndim - len(shape)
    if extra:
        g = g.sum(axis=tuple(range(extra)))
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1)
    if axes:
        g = g.sum(axis=axes, keepdims=True)
    return g


# ---------------------------------------------------------------------------
# Fused operations: one graph node each, with an analytic backward
# ---------------------------------------------------------------------------

def linear(x, weight, bias=None):
    """x @ weight + bias over the last axis of x: (..., in) -> (..., out).

    One node instead of a matmul and a broadcast add; the batch axes are folded
    into one so that numpy calls a single matrix product.
    """
    n_in, n_out = weight.shape
    x2 = x.data.reshape(-1, n_in)                        # (N, in)
    y = x2 @ weight.data                                 # (N, out)
    if bias is not None:
        y += bias.data
    parents = (x, weight) if bias is None else (x, weight, bias)
    out = _result(y.reshape(x.shape[:-1] + (n_out,)), parents)
    if out.requires_grad:
        def backward():
            g2 = out.grad.reshape(-1, n_out)             # (N, out)
            if x.requires_grad:
                _accumulate(x, (g2 @ weight.data.T).reshape(x.shape))
            if weight.requires_grad:
                _accumulate(weight, x2.T @ g2)
            if bias is not None and bias.requires_grad:
                _accumulate(bias, g2.sum(axis=0))
        out._backward = backward
    return out


def embedding(weight, ids):
    """Rows of `weight` picked by the integer array `ids`: ids.shape + (dim,)."""
    ids = np.asarray(ids)
    out = _result(weight.data[ids], (weight,))
    if out.requires_grad:
        def backward():
            flat_ids = ids.reshape(-1)
            g = out.grad.reshape(-1, weight.shape[1])       # (N, dim)
            # A row picked twice gets both gradients. one_hot^T @ g sums them with
            # one matrix product, far faster than np.add.at for a small table.
            one_hot = np.zeros((len(flat_ids), weight.shape[0]), dtype=g.dtype)
            one_hot[np.arange(len(flat_ids)), flat_ids] = 1.0
            _accumulate(weight, one_hot.T @ g)              # (num, dim)
        out._backward = backward
    return out


def causal_mask(scores, fill=-1e9):
    """Block the future: entry (i, j) of the last two axes is set to `fill` where j > i.

    The gradient is zero at blocked entries, since they no longer depend on the input.
    """
    T1, T2 = scores.shape[-2:]
    keep = _tril(T1, T2)                                 # (T, T) bool
    out = _result(np.where(keep, scores.data, scores.data.dtype.type(fill)), (scores,))
    if out.requires_grad:
        out._backward = lambda: _accumulate(scores, np.where(keep, out.grad, 0))
    return out


_TRIL_CACHE = {}


def _tril(n, m):
    if (n, m) not in _TRIL_CACHE:
        _TRIL_CACHE[n, m] = np.tril(np.ones((n, m), dtype=bool))
    return _TRIL_CACHE[n, m]


def softmax(x, axis=-1):
    """Numerically stable softmax along `axis`."""
    p = np.exp(x.data - x.data.max(axis=axis, keepdims=True))
    p /= p.sum(axis=axis, keepdims=True)
    # Flush probabilities below 1e-20 to exactly 0. Otherwise float32 denormals
    # (numbers below 1e-38, which the CPU handles in slow microcode) appear in
    # the weights and in their gradients and can make training steps twice as slow.
    p[p < 1e-20] = 0.0
    out = _result(p, (x,))
    if out.requires_grad:
        def backward():
            g = out.grad
            # Jacobian-vector product: p * (g - <g, p>)
            _accumulate(x, p * (g - (g * p).sum(axis=axis, keepdims=True)))
        out._backward = backward
    return out


_GELU_C = math.sqrt(2.0 / math.pi)


def gelu(x):
    """GELU, tanh approximation: 0.5 x (1 + tanh(c (x + 0.044715 x^3)))."""
    v = x.data
    v2 = v * v                  # the cube is v * v2: v**3 goes through a general
                                # power routine, about a thousand times slower
    t = v2 * 0.044715           # in-place steps below avoid allocating new arrays
    t += 1.0
    t *= v
    t *= _GELU_C
    np.tanh(t, out=t)           # t = tanh(c (x + 0.044715 x^3))
    y = t + 1.0
    y *= v
    y *= 0.5
    out = _result(y, (x,))
    if out.requires_grad:
        def backward():
            # d/dx = 0.5 (1 + t) + 0.5 x (1 - t^2) c (1 + 3 * 0.044715 x^2)
            d = v2 * (3 * 0.044715 * _GELU_C)
            d += _GELU_C
            d *= v
            d *= 1.0 - t * t
            d += t
            d += 1.0
            d *= 0.5
            d *= out.grad
            _accumulate(x, d)
        out._backward = backward
    return out


def cross_entropy(logits, targets):
    """Mean negative log-likelihood of `targets` under softmax(logits).

    logits (..., V), targets integer (...): averaged over all positions, in nats.
    Computed as logsumexp - logit[target], which is exact where the probability
    is tiny (no need to clip it before the log).
    """
    V = logits.shape[-1]
    z = logits.data.reshape(-1, V)                       # (N, V)
    y = np.asarray(targets).reshape(-1)                  # (N,)
    n = len(y)
    rows = np.arange(n)
    shifted = z - z.max(axis=1, keepdims=True)
    e = np.exp(shifted)
    total = e.sum(axis=1, keepdims=True)                 # (N, 1)
    loss = np.log(total[:, 0]).sum() - shifted[rows, y].sum()
    out = _result(np.asarray(loss / n, dtype=z.dtype), (logits,))
    if out.requires_grad:
        def backward():
            g = e / total                                # softmax probabilities
            g[rows, y] -= 1.0
            g *= out.grad / n
            _accumulate(logits, g.reshape(logits.shape))
        out._backward = backward
    return out


# ---------------------------------------------------------------------------
# Initialisation: one random stream per named tensor
# ---------------------------------------------------------------------------

_init_seed = 0


def seed(value):
    """Set the seed that parameter initialisation uses from now on."""
    global _init_seed
    _init_seed = int(value)


def get_seed():
    return _init_seed


@contextlib.contextmanager
def init_seed(value):
    """Use `value` as the initialisation seed inside a with-block."""
    global _init_seed
    previous, _init_seed = _init_seed, int(value)
    try:
        yield
    finally:
        _init_seed = previous


def param_rng(name):
    """The random stream of the tensor called `name` under the current seed.

    crc32 turns the name into a number deterministically (Python's hash() is
    salted per process, so it would not do).
    """
    return np.random.default_rng([_init_seed, zlib.crc32(name.encode("utf-8"))])


def _parameter(values, name):
    return Tensor(values.astype(np.float32), requires_grad=True, name=name)


# ---------------------------------------------------------------------------
# Modules and layers
# ---------------------------------------------------------------------------

class Module:
    """Base class: finds parameters in attributes, lists and sub-modules."""

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def forward(self, *args, **kwargs):
        raise NotImplementedError

    def named_parameters(self, prefix=""):
        """(dotted path, tensor) for every parameter, in attribute order."""
        seen = set()
        for path, t in self._walk(prefix):
            if id(t) not in seen:
                seen.add(id(t))
                yield path, t

    def _walk(self, prefix):
        for key, value in vars(self).items():
            items = enumerate(value) if isinstance(value, (list, tuple)) else [(None, value)]
            for index, item in items:
                path = f"{prefix}{key}" if index is None else f"{prefix}{key}.{index}"
                if isinstance(item, Tensor) and item.requires_grad:
                    yield path, item
                elif isinstance(item, Module):
                    yield from item._walk(path + ".")

    def parameters(self):
        return [t for _, t in self.named_parameters()]

    def num_parameters(self):
        return sum(t.size for t in self.parameters())

    def zero_grad(self):
        for t in self.parameters():
            if t.grad is not None:
                t.grad[...] = 0

    def astype(self, dtype):
        """Convert every parameter to `dtype` (new arrays); returns self.

        An optimizer made before this no longer holds the parameters (see AdamW).
        """
        for t in self.parameters():
            t.data = t.data.astype(dtype)
            t.grad = None
        return self


class Linear(Module):
    """y = x W + b with W of shape (in, out).

    Initialised as the chapter's library does: W ~ N(0, 2 / in) (He), b ~ U[0, 1).
    The model has no residuals and no normalisation, so a smaller start would
    shrink the signal block after block and training stalls (about 2.15 instead
    of about 1.87 after two epochs).
    """

    def __init__(self, in_features, out_features, bias=True, *, name):
        self.in_features, self.out_features = in_features, out_features
        std = math.sqrt(2.0 / in_features)
        self.weight = _parameter(param_rng(f"{name}.weight").normal(0.0, std, (in_features, out_features)),
                                 f"{name}.weight")
        self.bias = (_parameter(param_rng(f"{name}.bias").uniform(0.0, 1.0, out_features), f"{name}.bias")
                     if bias else None)

    def forward(self, x):
        return linear(x, self.weight, self.bias)        # (..., in) -> (..., out)


class Embedding(Module):
    """A lookup table of `num` rows of width `dim`, initialised N(0, 0.02^2)."""

    def __init__(self, num, dim, *, name):
        self.weight = _parameter(param_rng(f"{name}.weight").normal(0.0, 0.02, (num, dim)), f"{name}.weight")

    def forward(self, ids):
        return embedding(self.weight, ids)              # ids.shape -> ids.shape + (dim,)


class CausalMask(Module):
    """The causal mask as a layer: scores of future positions become -1e9.

    -1e9 rather than -inf: after the softmax both give exactly 0, but a row
    that is masked completely would give NaN with -inf.
    """

    def __init__(self, fill=-1e9):
        self.fill = fill

    def forward(self, scores):
        return causal_mask(scores, self.fill)           # (..., T, T)


class Softmax(Module):
    def __init__(self, axis=-1):
        self.axis = axis

    def forward(self, x):
        return softmax(x, self.axis)


class GELU(Module):
    def forward(self, x):
        return gelu(x)


class Sequential(Module):
    """Apply layers one after the other."""

    def __init__(self, *layers):
        self.layers = list(layers)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


# ---------------------------------------------------------------------------
# Optimisation
# ---------------------------------------------------------------------------

class AdamW:
    """Adam with decoupled weight decay and global gradient-norm clipping.

    Decay (0.01) applies only to tensors with two or more axes (weights and
    embeddings), not to biases.

    The optimizer owns the parameters' memory. For speed it copies them all into
    one flat array, `self.flat` (decayed tensors first), and makes each
    parameter's .data a view of it, and each .grad a view of `self.flat_grad`:
    a step is then a handful of vector operations instead of a loop over
    tensors. Anything that later replaces a parameter's array (such as
    `model.astype(...)`) cuts it off from the optimizer, so step() refuses to run
    then: make the optimizer after changing the model.
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01, max_grad_norm=1.0):
        params = list(params)
        self.lr, self.eps, self.weight_decay, self.max_grad_norm = lr, eps, weight_decay, max_grad_norm
        self.beta1, self.beta2 = betas
        self.t = 0
        # decayed tensors (>= 2 axes) first, so decay touches one slice: flat[:n_decay]
        self.params = [p for p in params if p.ndim >= 2] + [p for p in params if p.ndim < 2]
        self.n_decay = sum(p.size for p in self.params if p.ndim >= 2)
        dtype = np.result_type(*[p.dtype for p in self.params])
        total = sum(p.size for p in self.params)
        self.flat = np.empty(total, dtype=dtype)
        self.flat_grad = np.zeros(total, dtype=dtype)
        offset = 0
        for p in self.params:  # each parameter moves into its slice of the two flat arrays
            n = p.size
            self.flat[offset:offset + n] = p.data.reshape(-1)
            p.data = self.flat[offset:offset + n].reshape(p.shape)
            p.grad = self.flat_grad[offset:offset + n].reshape(p.shape)
            offset += n
        self._views = [(p, p.data, p.grad) for p in self.params]
        # Moment estimates, kept without their (1 - beta) factors:
        #   m = sum of beta1^k g  (Adam's m is (1 - beta1) m),  v likewise with g^2.
        # The factors and the bias corrections then become two scalars in step(),
        # which saves passes over the arrays.
        self.m = np.zeros_like(self.flat)
        self.v = np.zeros_like(self.flat)
        self._tmp = np.empty_like(self.flat)

    def _check_views(self):
        for p, data, grad in self._views:
            if p.data is not data or p.grad is not grad:
                raise RuntimeError(f"a parameter of shape {p.shape} no longer lives in the optimizer's "
                                   "arrays (was it replaced, as model.astype(...) does?): "
                                   "make the optimizer after changing the model")

    def zero_grad(self):
        self.flat_grad.fill(0.0)

    def grad_norm(self):
        return float(np.sqrt(np.dot(self.flat_grad, self.flat_grad)))

    def step(self):
        """Clip, then update every parameter. Returns the gradient norm before clipping."""
        self._check_views()
        g, m, v, tmp, flat = self.flat_grad, self.m, self.v, self._tmp, self.flat
        norm = self.grad_norm()
        if self.max_grad_norm is not None and norm > self.max_grad_norm:
            g *= self.max_grad_norm / (norm + 1e-6)
        self.t += 1
        b1, b2, lr = self.beta1, self.beta2, self.lr
        m *= b1                                  # m = b1 m + g
        m += g
        np.multiply(g, g, out=tmp)               # v = b2 v + g^2
        v *= b2
        v += tmp
        if self.t % 256 == 0:
            # Moments of tensors that get no gradient (a character that never
            # turns up) decay into float32 denormals, which the CPU handles
            # very slowly; they are far below anything that matters: zero them.
            m[np.abs(m) < 1e-30] = 0.0
            v[v < 1e-30] = 0.0
        # decoupled weight decay: p -= lr * wd * p, on tensors with >= 2 axes
        if self.weight_decay:
            flat[:self.n_decay] *= 1.0 - lr * self.weight_decay
        # Adam: p -= lr * m_hat / (sqrt(v_hat) + eps) with
        #   m_hat = (1 - b1) m / (1 - b1^t),  v_hat = (1 - b2) v / (1 - b2^t)
        # which is p -= step * m / (sqrt(v) + eps / k) with k and step below.
        k = math.sqrt((1 - b2) / (1 - b2 ** self.t))
        step = lr * (1 - b1) / (1 - b1 ** self.t) / k
        np.sqrt(v, out=tmp)
        tmp += self.eps / k
        np.divide(m, tmp, out=tmp)
        tmp *= step
        flat -= tmp
        return norm


class WarmupCosine:
    """Learning rate per step: linear warmup to max_lr, then cosine to min_lr.

    Step s (counting from 0) of `total_steps`: during warmup lr = max_lr (s+1)/warmup;
    afterwards it follows half a cosine from max_lr to exactly min_lr at the last step.
    """

    def __init__(self, max_lr=1e-3, total_steps=1, warmup=100, min_lr=1e-4):
        self.max_lr, self.min_lr = max_lr, min_lr
        self.total_steps, self.warmup = total_steps, warmup

    def __call__(self, step):
        if step < self.warmup:
            return self.max_lr * (step + 1) / self.warmup
        span = self.total_steps - 1 - self.warmup
        progress = min(1.0, (step - self.warmup) / span) if span > 0 else 1.0
        return self.min_lr + 0.5 * (self.max_lr - self.min_lr) * (1.0 + math.cos(math.pi * progress))


# ---------------------------------------------------------------------------
# Data: tinyshakespeare, characters, windows, batches
# ---------------------------------------------------------------------------

CORPUS_NAME = "tinyshakespeare.txt"
CORPUS_URL = "https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt"


def load_corpus(path=None):
    """The text of tinyshakespeare (1,115,394 characters).

    Read from `path`, else $TINYSHAKESPEARE, else tinyshakespeare.txt in the
    current folder or beside this file (the course's tools find, check and
    download it; here we only read it).
    """
    if path is None and os.environ.get("TINYSHAKESPEARE"):
        path = os.environ["TINYSHAKESPEARE"]
    places = [Path(path).expanduser()] if path is not None else [
        Path.cwd() / CORPUS_NAME, Path(__file__).resolve().parent / CORPUS_NAME]
    places = [p for i, p in enumerate(places) if p.resolve() not in {q.resolve() for q in places[:i]}]
    for place in places:
        if place.is_file():
            return place.read_text(encoding="utf-8")
    raise RuntimeError(f"tinyshakespeare not found: looked in {', '.join(str(p) for p in places)}. "
                       f"Fix: download {CORPUS_URL} as {CORPUS_NAME} beside the notebook, "
                       f"or set TINYSHAKESPEARE=/path/to/{CORPUS_NAME}.")


class CharDataset:
    """Characters of a text as token ids, cut into overlapping windows.

    vocab         sorted unique characters of the whole text (65 for tinyshakespeare)
    split         the first 90% of the tokens train, the rest test
    windows       inputs tokens[i : i+T], targets tokens[i+1 : i+T+1], for
                  i = 0, stride, 2*stride, ... while i < len - T - 1
    batches       `batch_size` windows; the last partial batch is dropped.
                  Training windows are shuffled anew every epoch by a generator
                  seeded with (seed, epoch), so the same seed gives the same order.
    """

    def __init__(self, text, *, context_size=32, stride=16, batch_size=4, split=0.9):
        self.context_size, self.stride, self.batch_size = context_size, stride, batch_size
        self.vocab = sorted(set(text))
        self.vocab_size = len(self.vocab)
        self.stoi = {ch: i for i, ch in enumerate(self.vocab)}
        self.tokens = self.encode(text)
        cut = int(len(self.tokens) * split)
        self.train_tokens, self.test_tokens = self.tokens[:cut], self.tokens[cut:]
        self.train_starts = self._starts(len(self.train_tokens))
        self.test_starts = self._starts(len(self.test_tokens))

    def _starts(self, n):
        return np.arange(0, max(n - self.context_size - 1, 0), self.stride)

    def encode(self, text):
        return np.array([self.stoi[ch] for ch in text], dtype=np.int64)

    def decode(self, ids):
        return "".join(self.vocab[int(i)] for i in ids)

    @property
    def n_train_batches(self):
        return len(self.train_starts) // self.batch_size

    @property
    def n_test_batches(self):
        return len(self.test_starts) // self.batch_size

    def _windows(self, tokens, starts):
        idx = starts[:, None] + np.arange(self.context_size)   # (n, T)
        return tokens[idx], tokens[idx + 1]

    def train_batches(self, epoch=0, seed=0):
        """Yield (x, y) integer arrays of shape (B, T) for one epoch."""
        order = np.random.default_rng([seed, epoch]).permutation(len(self.train_starts))
        starts = self.train_starts[order]
        B = self.batch_size
        for b in range(self.n_train_batches):
            yield self._windows(self.train_tokens, starts[b * B:(b + 1) * B])

    def test_batches(self):
        """Yield the test batches in order (no shuffling)."""
        B = self.batch_size
        for b in range(self.n_test_batches):
            yield self._windows(self.test_tokens, self.test_starts[b * B:(b + 1) * B])

    def test_windows(self):
        """All windows of the test batches at once: (n_test_batches * B, T) each."""
        return self._windows(self.test_tokens, self.test_starts[:self.n_test_batches * self.batch_size])


# ---------------------------------------------------------------------------
# The model
# ---------------------------------------------------------------------------

class Block(Module):
    """attention(x), then the feed-forward network Linear(E,4E) -> GELU -> Linear(4E,E).

    As in the chapter there is no residual connection and no layer norm: each
    sub-layer's output is the next one's only input.
    """

    def __init__(self, embed_size, attention, remove=(), *, name):
        self.attention = attention(embed_size, remove=remove, name=f"{name}.attention")
        self.feed_forward = Sequential(
            Linear(embed_size, 4 * embed_size, name=f"{name}.feed_forward.layers.0"),
            GELU(),
            Linear(4 * embed_size, embed_size, name=f"{name}.feed_forward.layers.2"),
        )

    def forward(self, x):                                # (B, T, E) -> (B, T, E)
        return self.feed_forward(self.attention(x))


class GPT(Module):
    """The chapter's character model.

    token embedding + learned position embedding -> n_blocks Blocks -> Linear(E, V).
    The output layer is separate from the token embedding (untied).

    attention: the attention layer class, called as
               attention(embed_size, remove=remove, name=...)
    remove:    projections to drop in every block, a subset of {"query", "key", "value"}
    seed:      initialisation seed (default: the module-level one, see seed())
    Parameter names equal their attribute paths (e.g. "blocks.0.attention.query.weight").
    """

    def __init__(self, vocab_size, attention, remove=(), *, context_size=32, embed_size=64,
                 n_blocks=2, seed=None):
        self.vocab_size, self.context_size, self.embed_size = vocab_size, context_size, embed_size
        self.remove = tuple(sorted(remove))
        with init_seed(get_seed() if seed is None else seed):
            self.token_embedding = Embedding(vocab_size, embed_size, name="token_embedding")
            self.position_embedding = Embedding(context_size, embed_size, name="position_embedding")
            self.blocks = [Block(embed_size, attention, remove, name=f"blocks.{i}") for i in range(n_blocks)]
            self.head = Linear(embed_size, vocab_size, name="head")

    def forward(self, ids):                              # ids (B, T) integers
        T = ids.shape[-1]
        if T > self.context_size:
            raise ValueError(f"sequence of {T} tokens is longer than the context ({self.context_size})")
        x = self.token_embedding(ids) + self.position_embedding(np.arange(T))  # (B, T, E)
        for block in self.blocks:
            x = block(x)                                 # (B, T, E)
        return self.head(x)                              # (B, T, V) logits


# ---------------------------------------------------------------------------
# Training, evaluation, sampling
# ---------------------------------------------------------------------------

def train(model, dataset, *, epochs=None, steps=None, seed=0, lr=1e-3, min_lr=1e-4, warmup=100,
          weight_decay=0.01, max_grad_norm=1.0, log_every=100, on_step=None):
    """Train with AdamW and the warmup-cosine schedule; returns the loss curve.

    Give `epochs` (passes over the training batches, the chapter uses 2; a
    fraction is allowed) or `steps` (a budget of batches). `seed` fixes the batch order.
    `on_step(step, loss)` is called after every step (e.g. for a progress bar).

    Returns dict(losses=[mean training loss of each block of `log_every`
    steps], log_every=..., steps=..., seconds=...).
    """
    if (epochs is None) == (steps is None):
        raise ValueError("give exactly one of epochs= or steps=")
    total = int(steps if steps is not None else round(epochs * dataset.n_train_batches))
    optimizer = AdamW(model.parameters(), lr=lr, weight_decay=weight_decay, max_grad_norm=max_grad_norm)
    schedule = WarmupCosine(lr, total, warmup, min_lr)
    losses, running, step = [], 0.0, 0
    start = time.perf_counter()
    epoch = 0
    while step < total:
        for x, y in dataset.train_batches(epoch, seed):
            optimizer.lr = schedule(step)
            optimizer.zero_grad()
            loss = cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            value = float(loss.data)
            running += value
            step += 1
            if step % log_every == 0:
                losses.append(running / log_every)
                running = 0.0
            if on_step is not None:
                on_step(step, value)
            if step == total:
                break
        epoch += 1
    if step % log_every:
        losses.append(running / (step % log_every))
    return {"losses": losses, "log_every": log_every, "steps": total,
            "seconds": time.perf_counter() - start}


def evaluate(model, dataset, *, chunk=256, max_batches=None):
    """Mean test loss over the test batches (the chapter's 1,742 batches of 4).

    All batches have the same size, so the mean of the per-batch means equals
    the mean over all their positions; that lets us run `chunk` windows at a
    time, which is much faster than batches of 4 and gives the same number.
    """
    xs, ys = dataset.test_windows()
    if max_batches is not None:
        xs, ys = xs[:max_batches * dataset.batch_size], ys[:max_batches * dataset.batch_size]
    total = 0.0
    with no_grad():
        for i in range(0, len(xs), chunk):
            x, y = xs[i:i + chunk], ys[i:i + chunk]
            total += float(cross_entropy(model(x), y).data) * y.size
    return total / ys.size


def sample(model, dataset, prompt="ROMEO:", n=256, *, seed=0, temperature=1.0):
    """Continue `prompt` by n characters, drawing each from the model's softmax."""
    rng = np.random.default_rng(seed)
    ids = list(dataset.encode(prompt))
    with no_grad():
        for _ in range(n):
            context = np.array([ids[-model.context_size:]])
            logits = model(context).data[0, -1].astype(np.float64) / temperature
            p = np.exp(logits - logits.max())
            ids.append(int(rng.choice(len(p), p=p / p.sum())))
    return dataset.decode(ids)


def gradient_check(f, tensors, eps=1e-6, seed=0):
    """Largest relative difference between backward() and central differences.

    f() must return a Tensor computed from `tensors` (use float64 tensors).
    The scalar checked is sum(f() * R) for a fixed random R, so every output
    entry takes part. Values below about 1e-6 mean the backward pass is right.
    """
    out = f()
    weights = np.random.default_rng(seed).standard_normal(out.shape)
    for t in tensors:
        t.grad = None
    (out * Tensor(weights, dtype=out.dtype)).sum().backward()
    analytic = [t.grad.copy() for t in tensors]
    worst = 0.0
    for t, grad in zip(tensors, analytic):
        numeric = np.zeros_like(t.data)
        flat, num = t.data.reshape(-1), numeric.reshape(-1)
        for i in range(flat.size):
            old = flat[i]
            flat[i] = old + eps
            up = float((f().data * weights).sum())
            flat[i] = old - eps
            down = float((f().data * weights).sum())
            flat[i] = old
            num[i] = (up - down) / (2 * eps)
        scale = max(np.abs(numeric).max(), np.abs(grad).max(), 1e-8)
        worst = max(worst, float(np.abs(numeric - grad).max() / scale))
    return worst
