"""Public checks for the weighted-attention layer (part projection_removal): properties, not answers.

Run them with `pytest` in this folder, or with the notebook's check cell. They
build your WeightedAttention through a probe (selfcheck/probes/projection_removal.py)
and need no corpus.
"""

import numpy as np

from selfcheck.checks import close, equal, that

E = 8
KINDS = [(), ("query",), ("key",), ("value",), ("query", "key", "value")]


def _weights(rng, width=E):
    return {p: (rng.normal(0, 0.5, (width, width)), rng.normal(0, 0.5, width))
            for p in ("query", "key", "value", "out")}


def test_output_shape(student):
    """the layer maps x of shape (2, 5, 8) to an output of shape (2, 5, 8) in every mode"""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 5, E))
    for remove in KINDS:
        out = np.asarray(student.probe("projection_removal", "forward", E, remove, _weights(rng), x))
        that(out.shape == x.shape, f"WeightedAttention(8, remove={remove}) on x of shape (2, 5, 8) "
                                   f"gave shape {out.shape}; expected (2, 5, 8)")


def test_causal(student):
    """position i never sees the future: changing x at positions after i leaves output i unchanged"""
    rng = np.random.default_rng(1)
    weights = _weights(rng)
    x = rng.normal(size=(1, 6, E))
    later = x.copy()
    later[:, 3:] = rng.normal(size=(1, 3, E))
    before = np.asarray(student.probe("projection_removal", "forward", E, (), weights, x))
    after = np.asarray(student.probe("projection_removal", "forward", E, (), weights, later))
    close(after[:, :3], before[:, :3], "outputs at positions 0-2 after changing x at positions 3-5 "
          "(they changed: does the mask block keys j > i before the softmax?)")


def test_parameter_counts(student):
    """each kept projection holds E*E + E parameters; a removed one holds none"""
    for remove in KINDS:
        info = student.probe("projection_removal", "describe", E, remove)
        kept = 4 - len(remove)
        equal(info["parameters"], kept * (E * E + E),
              f"parameters of WeightedAttention(8, remove={remove}) ({kept} Linear(8, 8) layers)",
              mistakes=[("the removed projection's Linear is still in the layer: set the attribute to None "
                         "so its parameters are gone", 4 * (E * E + E))])


def test_gradients_reach_every_parameter(student):
    """backward() gives a gradient to x and to every kept projection's weight and bias"""
    rng = np.random.default_rng(2)
    x = rng.normal(size=(1, 3, 4))
    grads = student.probe("projection_removal", "gradients", 4, (), _weights(rng, 4), x, rng.normal(size=(1, 3, 4)))
    none = [key for key, g in grads.items() if g is None]
    that(not none, "no gradient reached " + ", ".join(none) +
         ": every kept projection must take part in the output (is `out` applied last?), and the forward "
         "pass must use Tensor operations (@, .transpose, *, the mask and softmax layers), not numpy on .data")
    for key, g in grads.items():
        that(np.abs(np.asarray(g)).max() > 0, f"the gradient of {key} is zero everywhere")
