"""Public checks for part 1 (project_qkv, causal_attention, multi_head_attention): properties, not answers.

Run them with `pytest` in this folder, or with the notebook's check cell.
"""

import numpy as np

from selfcheck.checks import close, that


def _shape(value):
    return np.shape(np.asarray(value, dtype=float))


def test_project_qkv_shapes(student):
    """project_qkv: 5 tokens of width 6 through (6, 3) matrices give three (5, 3) arrays"""
    rng = np.random.default_rng(2)
    x = rng.normal(size=(5, 6))
    result = student.project_qkv(x, rng.normal(size=(6, 3)), rng.normal(size=(6, 3)), rng.normal(size=(6, 3)))
    that(isinstance(result, (tuple, list)) and len(result) == 3,
         f"project_qkv should return three arrays (Q, K, V), got {type(result).__name__}")
    for name, value in zip("QKV", result):
        that(_shape(value) == (5, 3), f"{name} should have shape (5, 3) (one row per token), got {_shape(value)}")


def test_causal_attention_weights(student):
    """causal_attention: the weights are (n, n), zero above the diagonal, and every row sums to 1"""
    rng = np.random.default_rng(3)
    Q, K, V = rng.normal(size=(5, 4)), rng.normal(size=(5, 4)), rng.normal(size=(5, 3))
    result = student.causal_attention(Q, K, V)
    that(isinstance(result, (tuple, list)) and len(result) == 2,
         "causal_attention should return two arrays, (output, weights)")
    output, weights = (np.asarray(r, dtype=float) for r in result)
    that(output.shape == (5, 3), f"the output should have shape (5, 3) (n by the value width), got {output.shape}")
    that(weights.shape == (5, 5), f"the weights should have shape (5, 5), got {weights.shape}")
    that(np.all(weights[np.triu_indices(5, k=1)] == 0.0),
         "a token may not look ahead: the weights above the diagonal must be exactly 0 "
         "(set those scores to -inf before the softmax)")
    close(weights.sum(axis=-1), np.ones(5), "the row sums of the weights")


def test_first_token_sees_only_itself(student):
    """the first token can only attend to itself, so its output is its own value row"""
    rng = np.random.default_rng(4)
    Q, K, V = rng.normal(size=(4, 2)), rng.normal(size=(4, 2)), rng.normal(size=(4, 2))
    output, weights = student.causal_attention(Q, K, V)
    close(np.asarray(output)[0], V[0], "output[0]")


def test_causal_attention_ignores_the_future(student):
    """changing the last token changes no earlier output"""
    rng = np.random.default_rng(5)
    Q, K, V = rng.normal(size=(4, 3)), rng.normal(size=(4, 3)), rng.normal(size=(4, 3))
    before, _ = student.causal_attention(Q, K, V)
    Q2, K2, V2 = Q.copy(), K.copy(), V.copy()
    Q2[-1], K2[-1], V2[-1] = 9.0, -9.0, 9.0
    after, _ = student.causal_attention(Q2, K2, V2)
    close(np.asarray(after)[:-1], np.asarray(before)[:-1], "outputs 0..2 after changing token 3")


def test_multi_head_shape(student):
    """multi_head_attention: 3 heads of width 2 on 5 tokens of width 6 give a (5, 6) result"""
    rng = np.random.default_rng(6)
    x = rng.normal(size=(5, 6))
    heads = [tuple(rng.normal(size=(6, 2)) for _ in range(3)) for _ in range(3)]
    got = student.multi_head_attention(x, heads, rng.normal(size=(6, 6)))
    that(_shape(got) == (5, 6), f"the result should have shape (5, 6), got {_shape(got)}")


def test_tiny_model_predicts_something(student):
    """the given model runs with your attention and gives 8 probabilities that sum to 1"""
    out = student.tiny_forward([0, 5, 6, 1])
    probs = np.asarray(out["probs"], dtype=float)
    that(probs.shape == (8,), f"tiny_forward should give 8 probabilities, got shape {probs.shape}")
    close(probs.sum(), 1.0, "the sum of the probabilities")
