"""Probes for the weighted-attention layer (part projection_removal).

They run beside the notebook's code, build its ``WeightedAttention`` with the
course framework (``framework.py``, shipped beside the notebook) and return
plain data: numbers, arrays, lists and dicts. The grader runs the very same
functions on the reference layer, so both sides are measured one way.

Weights are set by attribute (``layer.query.weight`` ...), never by parameter
name, so a check does not depend on how a layer names its tensors.
"""

import importlib
import time

import numpy as np

PROJECTIONS = ("query", "key", "value", "out")

_DATASETS = {}


def _framework():
    return importlib.import_module("framework")


def _layer(ns, embed_size, remove, seed=0):
    F = _framework()
    cls = ns.get("WeightedAttention")
    if cls is None:
        raise NameError("your notebook defines no function `WeightedAttention` (the class)")
    with F.init_seed(seed):
        return cls(int(embed_size), remove=tuple(remove), name="attention")


def _kept(layer):
    """The projections the layer still holds as a module with parameters."""
    F = _framework()
    return [p for p in PROJECTIONS if isinstance(getattr(layer, p, None), F.Module)
            and getattr(layer, p).parameters()]


def _set_weights(layer, weights):
    """Float64 copies of the given (W, b) pairs into the projections the layer has."""
    layer.astype(np.float64)
    for attr in _kept(layer):
        if attr in weights:
            W, b = weights[attr]
            linear = getattr(layer, attr)
            linear.weight.data = np.array(W, dtype=np.float64)
            if linear.bias is not None:
                linear.bias.data = np.array(b, dtype=np.float64)
    return layer


def describe(ns, embed_size, remove):
    """Parameter count, parameter names and which projections are kept."""
    layer = _layer(ns, embed_size, remove)
    names = sorted(name for name, _ in layer.named_parameters())
    return {"parameters": int(sum(p.size for p in layer.parameters())), "names": names,
            "kept": _kept(layer)}


def model_parameters(ns, vocab_size, embed_size, remove, context_size=32, n_blocks=2):
    """Parameters of the whole GPT built with the notebook's layer."""
    F = _framework()
    model = F.GPT(int(vocab_size), ns["WeightedAttention"], tuple(remove), context_size=int(context_size),
                  embed_size=int(embed_size), n_blocks=int(n_blocks), seed=0)
    return int(model.num_parameters())


def forward(ns, embed_size, remove, weights, x):
    """The layer's output for input x (B, T, E) with the given weights, in float64."""
    F = _framework()
    layer = _set_weights(_layer(ns, embed_size, remove), weights)
    out = layer(F.Tensor(np.array(x, dtype=np.float64)))
    return np.array(out.data if isinstance(out, F.Tensor) else out, dtype=np.float64)


def _tensors(layer, inp):
    """The tensors whose gradients are checked, by key: "x" and "<projection>.weight/bias"."""
    tensors = {"x": inp}
    for attr in _kept(layer):
        linear = getattr(layer, attr)
        tensors[f"{attr}.weight"] = linear.weight
        if linear.bias is not None:
            tensors[f"{attr}.bias"] = linear.bias
    return tensors


def gradients(ns, embed_size, remove, weights, x, upstream):
    """backward()'s gradients of sum(layer(x) * upstream), by key; None where it left none."""
    F = _framework()
    layer = _set_weights(_layer(ns, embed_size, remove), weights)
    inp = F.Tensor(np.array(x, dtype=np.float64), requires_grad=True)
    tensors = _tensors(layer, inp)
    for t in tensors.values():
        t.grad = None
    (layer(inp) * F.Tensor(np.array(upstream, dtype=np.float64))).sum().backward()
    return {key: None if t.grad is None else np.array(t.grad, dtype=np.float64)
            for key, t in tensors.items()}


def objective(ns, embed_size, remove, weights, x, upstream, keys, eps):
    """sum(layer(x) * upstream) with each entry of each tensor in ``keys`` moved by +eps, then
    by -eps, one at a time: the values the grader turns into central differences."""
    F = _framework()
    layer = _set_weights(_layer(ns, embed_size, remove), weights)
    inp = F.Tensor(np.array(x, dtype=np.float64), requires_grad=True)
    tensors = _tensors(layer, inp)
    upstream = np.array(upstream, dtype=np.float64)

    def value():
        with F.no_grad():
            return float(np.sum(np.asarray(layer(inp).data, dtype=np.float64) * upstream))

    values = []
    for key in keys:
        flat = tensors[key].data.reshape(-1)
        for i in range(flat.size):
            old = flat[i]
            for shift in (eps, -eps):
                flat[i] = old + shift
                values.append(value())
            flat[i] = old
    return values


def _dataset():
    if "chapter" not in _DATASETS:
        F = _framework()
        _DATASETS["chapter"] = F.CharDataset(F.load_corpus())
    return _DATASETS["chapter"]


def short_run(ns, remove, steps, seed, test_batches, log_every=50):
    """Train the chapter's GPT with the notebook's layer for `steps` steps; a few seconds.

    Same seed, same batches and same initialisation as any other run with
    this seed. Returns the training-loss curve (mean of each `log_every`
    steps), the mean loss on the first `test_batches` test batches, the
    parameter count and the CPU seconds it took.
    """
    F = _framework()
    data = _dataset()
    start = time.process_time()
    model = F.GPT(data.vocab_size, ns["WeightedAttention"], tuple(remove), seed=int(seed))
    run = F.train(model, data, steps=int(steps), seed=int(seed), log_every=int(log_every))
    test_loss = F.evaluate(model, data, max_batches=int(test_batches))
    return {"losses": [float(v) for v in run["losses"]], "test_loss": float(test_loss),
            "parameters": int(model.num_parameters()), "cpu_seconds": time.process_time() - start}
