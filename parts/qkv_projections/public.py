"""Public checks for part 1 (project_qkv, causal_attention, multi_head_attention): every number
the notebook states and every rule it gives.

Run them with `pytest` in this folder, or with the notebook's check cell. The chapter's
numbers come from selfcheck/chapter_numbers.json; a likely mistake is named only when
your answer itself shows it.
"""

import numpy as np
import pytest

from selfcheck.chapter import get
from selfcheck.checks import CheckFailed, close, implied_scale, scale_mistake, that, unchanged, weight
from selfcheck.student import StudentError

TT = get("tiny_transformer")


def _shape(value):
    return np.shape(np.asarray(value, dtype=float))


def _pair(result, what):
    that(isinstance(result, (tuple, list)) and len(result) == 2,
         f"{what} should return two arrays, (output, weights), got {type(result).__name__}")
    return (np.asarray(r, dtype=float) for r in result)


def _attention(student, Q, K, V):
    """causal_attention(Q, K, V) as (output, weights); when it fails only because the values are narrower
    than the keys, the weights of the same call with values as wide as the keys say why."""
    try:
        return _pair(student.causal_attention(Q, K, V), "causal_attention")
    except StudentError as exc:
        if exc.kind != "error" or np.shape(V) == np.shape(K):
            raise
        try:
            _, weights = _pair(student.causal_attention(Q, K, K[:, ::-1]), "causal_attention")
        except (StudentError, CheckFailed):
            raise exc from None
        if implied_scale(weights, Q @ K[:, ::-1].T) is not None and implied_scale(weights, Q @ K.T) is None:
            raise CheckFailed(f"causal_attention raised {exc.message}", "the scores compare the queries with the "
                              "values (Q @ V^T); they are Q @ K^T, queries against keys", "scores-use-values") from None
        raise


def _mask_hint(weights):
    """The likely mistake that weights of a causal attention show, (id, words), or None."""
    if np.ndim(weights) != 2 or weights.shape[0] != weights.shape[1]:
        return None         # not an n x n matrix of weights: the shape check says so
    n = weights.shape[0]
    above, sums = weights[np.triu_indices(n, k=1)], weights.sum(axis=-1)
    if np.all(above == 0) and np.all(sums < 1 + 1e-6) and not np.allclose(sums, 1.0):
        return "mask-after-softmax", "the mask was applied after the softmax, so the rows no longer sum to 1"
    if np.allclose(weights.sum(axis=0), 1.0) and not np.allclose(sums, 1.0):
        return "softmax-over-queries", "the softmax ran over the queries (axis 0) instead of along each row (axis -1)"
    if weights[0, 0] != 1.0 and np.all(np.tril(weights, k=-1)[1:] == 0) and np.allclose(sums, 1.0):
        return "mask-transposed", "the mask is transposed: each token sees the later tokens instead of the earlier ones"
    if n > 2 and np.all(np.diag(weights, k=1) > 0) and np.all(weights[np.triu_indices(n, k=2)] == 0):
        return "mask-off-by-one", "the mask is off by one: token i also sees token i + 1 (np.tril(..., k=1))"
    if np.all(above > 0):
        return ("no-causal-mask", "the future is not blocked: set the scores above the diagonal to -inf (or -1e9) before "
                "the softmax; a score of 0 still gets weight")
    return None


def test_project_qkv_shapes(student):
    """project_qkv: 5 tokens of width 6 through (6, 3) matrices give three (5, 3) arrays"""
    rng = np.random.default_rng(2)
    x = rng.normal(size=(5, 6))
    result = student.project_qkv(x, rng.normal(size=(6, 3)), rng.normal(size=(6, 3)), rng.normal(size=(6, 3)))
    that(isinstance(result, (tuple, list)) and len(result) == 3,
         f"project_qkv should return three arrays (Q, K, V), got {type(result).__name__}")
    for name, value in zip("QKV", result):
        that(_shape(value) == (5, 3), f"{name} should have shape (5, 3) (one row per token), got {_shape(value)}")


def test_project_qkv_is_x_times_each_matrix(student):
    """Q = x @ W_q, K = x @ W_k, V = x @ W_v (not W @ x, not x @ W.T), with square matrices"""
    rng = np.random.default_rng(8)
    x, ws = rng.normal(size=(4, 4)), [rng.normal(size=(4, 4)) for _ in range(3)]
    got = student.project_qkv(x, *ws)
    for name, g, w in zip("QKV", got, ws):
        close(g, x @ w, f"{name} for 4 tokens of width 4",
              mistakes=[("weights-transposed", "the matrix was transposed (x @ W.T instead of x @ W)", x @ w.T),
                        ("weights-from-the-left", "the matrix multiplied from the left (W @ x): the rows of x are "
                                                  "the tokens", w @ x),
                        ("projections-share-a-matrix", "the projections share a matrix: Q, K and V each use their "
                                                       "own", x @ ws[0] if name != "Q" else np.nan),
                        ("projections-share-a-matrix", "the projections share a matrix: Q, K and V each use their "
                                                       "own", x @ ws[1] if name == "V" else np.nan)])


def test_causal_attention_weights(student):
    """causal_attention: the weights are (n, n), zero above the diagonal, and every row sums to 1"""
    rng = np.random.default_rng(3)
    Q, K, V = rng.normal(size=(5, 4)), rng.normal(size=(5, 4)), rng.normal(size=(5, 3))
    output, weights = _attention(student, Q, K, V)
    swapped = output.shape == (5, 5) and weights.shape == (5, 3)
    that(output.shape == (5, 3), f"the output should have shape (5, 3) (n by the value width), got {output.shape}",
         *(("the pair is (output, weights), in that order", "attention-swapped-pair") if swapped else ()))
    that(weights.shape == (5, 5), f"the weights should have shape (5, 5), got {weights.shape}")
    hint = _mask_hint(weights) or (None, None)
    that(np.all(weights[np.triu_indices(5, k=1)] == 0.0),
         "a token may not look ahead: the weights above the diagonal must be exactly 0 "
         "(set those scores to -inf before the softmax)", hint[1], hint[0])
    close(weights.sum(axis=-1), np.ones(5), "the row sums of the weights",
          mistakes=[(*hint, weights.sum(axis=-1))] if hint[0] else [])
    close(output, weights @ V, "the output against weights @ V",
          mistakes=[("output-mixes-keys", "the output mixes the keys (weights @ K), not the values", weights @ K),
                    ("weights-transposed-on-values", "the weights were transposed before they mixed the values "
                     "(weights.T @ V): output i is the sum over j of weights[i, j] V[j], weights @ V", weights.T @ V)])


def test_causal_attention_scale(student):
    """the scores are divided by sqrt(d_k), the width of Q and K (here 3), not by sqrt(number of tokens)"""
    rng = np.random.default_rng(9)
    Q, K, V = rng.normal(size=(6, 3)), rng.normal(size=(6, 3)), rng.normal(size=(6, 2))
    _, weights = _attention(student, Q, K, V)
    found = implied_scale(weights, Q @ K.T)
    that(found is not None, "each row of the weights should be the softmax of that row's allowed scores "
                            "Q K^T / sqrt(d_k); these are not", *(_mask_hint(weights) or (None, None))[::-1])
    mistake = scale_mistake(weights, Q @ K.T, 3, number_of_tokens=6)
    that(mistake is None, f"the weights of 6 tokens with d_k = 3 imply scores divided by {found:.4g}, "
                          f"expected sqrt(3) = 1.732", *(mistake or (None, None))[::-1])


def test_first_token_sees_only_itself(student):
    """the first token can only attend to itself, so its output is its own value row"""
    rng = np.random.default_rng(4)
    Q, K, V = rng.normal(size=(4, 2)), rng.normal(size=(4, 2)), rng.normal(size=(4, 2))
    output, weights = _pair(student.causal_attention(Q, K, V), "causal_attention")
    close(output[0], V[0], "output[0]")


def test_causal_attention_ignores_the_future(student):
    """changing the last token changes no earlier output"""
    rng = np.random.default_rng(5)
    Q, K, V = rng.normal(size=(4, 3)), rng.normal(size=(4, 3)), rng.normal(size=(4, 3))
    before, _ = _pair(student.causal_attention(Q, K, V), "causal_attention")
    Q2, K2, V2 = Q.copy(), K.copy(), V.copy()
    Q2[-1], K2[-1], V2[-1] = 9.0, -9.0, 9.0
    after, _ = _pair(student.causal_attention(Q2, K2, V2), "causal_attention")
    close(after[:-1], before[:-1], "outputs 0..2 after changing token 3")


def test_multi_head_shape(student):
    """multi_head_attention: 3 heads of width 2 on 5 tokens of width 6 give a (5, 6) result"""
    rng = np.random.default_rng(6)
    x = rng.normal(size=(5, 6))
    heads = [tuple(rng.normal(size=(6, 2)) for _ in range(3)) for _ in range(3)]
    got = _multi_head(student, x, heads, rng.normal(size=(6, 6)))
    written_in = _shape(got) == (4, 4) and np.allclose(got, TT["attn_output_after_WO"])
    hints = [(written_in, "the answer does not depend on the input: the chapter's output is written in, not computed",
              "hard-coded-chapter"),
             (_shape(got) == (5, 2), AVERAGED, "heads-averaged")]
    that(_shape(got) == (5, 6), f"the result should have shape (5, 6), got {_shape(got)}",
         *next(((text, key) for found, text, key in hints if found), ()))


AVERAGED = "the heads were added up or averaged, not placed side by side (concatenated) and projected by W_o"
IGNORED = ("multi_head_attention does not use the heads and W_o it is given: its answer stays the same when they "
           "change (does it read the notebook's HEADS and W_O?); compute everything from its arguments")


def _multi_head(student, x, heads, W_o):
    """The student's multi_head_attention(x, heads, W_o); an error from code that ignores its arguments
    (the chapter's input then gives one answer for other heads and W_o), or from a causal_attention whose
    pair comes back the wrong way round, says so."""
    try:
        return student.multi_head_attention(x, heads, W_o)
    except StudentError as exc:
        if exc.kind != "error":
            raise
        heads_4 = [tuple(np.eye(4)[:, i:i + 2] for _ in range(3)) for i in (0, 2)]
        probes = [(lambda: [np.asarray(student.multi_head_attention(TT["layernormed_input"], h, w), dtype=float)
                            for h, w in ((heads_4, np.eye(4)), (heads_4[::-1], 2 * np.eye(4)))],
                   lambda a: a[0].shape == a[1].shape and np.allclose(a[0], a[1]), IGNORED, "arguments-ignored"),
                  (lambda: [np.asarray(a, dtype=float) for a in
                            student.causal_attention(*np.random.default_rng(0).normal(size=(3, 4, 2)))],
                   lambda a: len(a) == 2 and a[0].shape == (4, 4) and np.allclose(a[0].sum(axis=-1), 1)
                   and a[1].shape == (4, 2), "causal_attention returned its pair the wrong way round: it is "
                   "(output, weights)", "attention-swapped-pair")]
        for call, shows, words, key in probes:
            try:
                found = shows(call())
            except (StudentError, TypeError, ValueError):
                continue
            if found:
                raise CheckFailed(f"multi_head_attention raised {exc.message}", words, key) from None
        raise
        heads_4 = [tuple(np.eye(4)[:, i:i + 2] for _ in range(3)) for i in (0, 2)]
        try:
            first, second = (np.asarray(student.multi_head_attention(TT["layernormed_input"], h, w), dtype=float)
                             for h, w in ((heads_4, np.eye(4)), (heads_4[::-1], 2 * np.eye(4))))
            pair = student.causal_attention(*np.random.default_rng(0).normal(size=(3, 4, 2)))
        except (StudentError, TypeError, ValueError):
            raise exc from None
        if first.shape == second.shape and np.allclose(first, second):
            raise CheckFailed(f"multi_head_attention raised {exc.message}", IGNORED, "arguments-ignored") from None
        if np.shape(pair[0]) == (4, 4) and np.allclose(np.sum(pair[0], axis=-1), 1) and np.shape(pair[1]) == (4, 2):
            raise CheckFailed(f"multi_head_attention raised {exc.message}", "causal_attention returned its pair "
                              "the wrong way round: it is (output, weights)", "attention-swapped-pair") from None
        raise


@weight(2)
def test_heads_concatenated_in_order_then_projected(student):
    """multi_head_attention = [head 1 | head 2 | head 3] @ W_o, each head from your project_qkv and causal_attention"""
    rng = np.random.default_rng(10)
    x, W_o = rng.normal(size=(5, 6)), rng.normal(size=(6, 6))
    heads = [tuple(rng.normal(size=(6, 2)) for _ in range(3)) for _ in range(3)]
    pieces = [np.asarray(student.causal_attention(*student.project_qkv(x, *head))[0], dtype=float)
              for head in heads]
    close(_multi_head(student, x, heads, W_o), np.hstack(pieces) @ W_o,
          "multi_head_attention against [head 1 | head 2 | head 3] @ W_o",
          mistakes=[("heads-in-reverse-order", "the heads were concatenated in the wrong order (head 1's "
                     "columns come first)", np.hstack(pieces[::-1]) @ W_o),
                    ("no-output-projection", "W_o is missing: the result is the concatenated heads times W_o",
                     np.hstack(pieces)),
                    *[("heads-averaged", AVERAGED, value) for value in (
                        sum(p @ W_o[2 * i:2 * i + 2] for i, p in enumerate(pieces)) / 3, sum(pieces), sum(pieces) / 3,
                        sum(pieces) @ W_o[:2], sum(pieces) / 3 @ W_o[:2])],
                    ("softmax-over-heads-jointly", "one softmax ran over every head's scores together; each head "
                     "takes its own softmax over its own keys", _one_softmax_for_all_heads(student, x, heads, W_o)),
                    ("output-projection-with-activation", "an activation (a ReLU: no entry is negative) follows W_o; "
                     "the output projection is linear, concat @ W_o and nothing after it",
                     np.maximum(np.hstack(pieces) @ W_o, 0.0)),
                    ("heads-merged-without-transpose", "the heads' outputs were stacked (heads, tokens, d_k) and "
                     "reshaped to (tokens, heads x d_k) without a transpose, so each row mixes several tokens: "
                     "concatenate them along the last axis", np.stack(pieces).reshape(5, -1) @ W_o)]
          + _split_without_transpose(student, x, heads, W_o))


def _one_softmax_for_all_heads(student, x, heads, W_o):
    """The heads side by side when one softmax ran over every head's scores of a row together, from the
    student's own projections (nan when they fail)."""
    try:
        projected = [[np.asarray(a, dtype=float) for a in student.project_qkv(x, *head)] for head in heads]
    except Exception:  # noqa: BLE001 - a candidate only: the check itself says what failed
        return np.nan
    n = len(x)
    allowed = np.arange(n)[:, None] >= np.arange(n)[None, :]
    scores = np.hstack([np.where(allowed, Q @ K.T / np.sqrt(Q.shape[1]), -np.inf) for Q, K, _ in projected])
    weights = np.exp(scores - scores.max(axis=1, keepdims=True))
    weights /= weights.sum(axis=1, keepdims=True)
    return np.hstack([weights[:, h * n:(h + 1) * n] @ V for h, (_, _, V) in enumerate(projected)]) @ W_o


def _split_without_transpose(student, x, heads, W_o):
    """The mistake of splitting the heads off the full projections by a reshape alone, computed with
    the student's own functions (nothing, when they fail on it)."""
    try:
        every = student.project_qkv(x, *(np.hstack([head[i] for head in heads]) for i in range(3)))
        Q, K, V = (np.asarray(a, dtype=float).reshape(len(heads), len(x), -1) for a in every)
        out = np.hstack([np.asarray(student.causal_attention(Q[i], K[i], V[i])[0], dtype=float)
                         for i in range(len(heads))]) @ W_o
    except Exception:  # noqa: BLE001 - a candidate only: the check itself says what failed
        return []
    return [("heads-split-without-transpose", "the heads were split off the full projections by a reshape to "
             "(heads, tokens, d_k) without a transpose, so each head got other tokens' features: reshape to "
             "(tokens, heads, d_k), then transpose", out)]


@weight(2)
@pytest.mark.parametrize("h", [1, 2])
def test_chapter_heads(student, h):
    """the chapter's head {h}: the first row of weights is 1, 0, 0, 0, and the weights of 'chuck' are the notebook's"""
    chapter = TT["heads"][h - 1]
    Q, K, V = (np.array(chapter[k]) for k in "QKV")
    _, weights = _pair(student.causal_attention(Q, K, V), "causal_attention")
    that(weights.shape == (4, 4), f"the weights of head {h} should have shape (4, 4), got {weights.shape}")
    mistake = scale_mistake(weights, np.array(chapter["raw_scores_QKt"]), 2, d_model=4, number_of_tokens=4)
    mistake = mistake or _mask_hint(weights)
    for row, word in ((0, "a"), (3, "chuck")):
        close(weights[row], chapter["A"][row], f"head {h}: the weights of '{word}' (row {row})",
              source="the notebook", mistakes=[(*mistake, weights[row])] if mistake else [])


@weight(3)
def test_chapter_prediction(student):
    """the given model with your attention: p('wood') = 0.3107 and loss 1.1690 nats; after one step 0.4017 and 0.9119"""
    config, loss = TT["config"], TT["loss"]
    out = student.tiny_forward(config["token_ids"])
    that(isinstance(out, dict) and "probs" in out, "tiny_forward (given) did not return its results")
    close(out["attention"], TT["attn_output_after_WO"], "the attention sublayer inside tiny_forward",
          source="chapter, step 9 (the checks of the heads above say where it goes wrong)")
    close(np.asarray(out["probs"])[config["target_id"]], TT["p_target"], "p('wood')", source="the notebook")
    step = student.loss_and_step(out["logits"], config["target_id"])
    close(step["loss"], loss["loss_nats"], "the loss in nats", source="the notebook")
    close(step["new_probs"][config["target_id"]], loss["new_p_target"], "p('wood') after one step",
          source="the notebook")
    close(step["new_loss"], loss["new_loss_nats"], "the loss after one step", source="the notebook")


def test_inputs_left_alone(student):
    """project_qkv, causal_attention and multi_head_attention change none of their arguments"""
    rng = np.random.default_rng(11)
    x = rng.normal(size=(4, 4))
    unchanged(student, "project_qkv", x, *(rng.normal(size=(4, 2)) for _ in range(3)))
    unchanged(student, "causal_attention", *(rng.normal(size=(4, 2)) for _ in range(3)))
    heads = [tuple(rng.normal(size=(4, 2)) for _ in range(3)) for _ in range(2)]
    unchanged(student, "multi_head_attention", x, heads, rng.normal(size=(4, 4)))
