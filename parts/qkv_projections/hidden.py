"""Hidden suite, part 1 (project_qkv, causal_attention, multi_head_attention).

Every value of the tiny transformer's steps 6 to 9 for both heads (the notebook
states a few of them: the public suite checks those, and the prediction end to
end), and random widths, head counts and lengths. Expected values of the
chapter's steps are printed in failures (they are in the chapter); those of
random inputs never are. Every mistake named below is computed here, on the
grader's side, by a mistaken version of the algebra.
"""

import math

import numpy as np
import pytest

from autograder.course.chapter import get
from selfcheck.checks import CheckFailed, close, fmt, that, weight
from selfcheck.student import StudentError

TT = get("tiny_transformer")
W = {k: np.array(v, dtype=float) for k, v in TT["weights"].items()}
XN = np.array(TT["layernormed_input"])
HEADS = [(W["WQ1"], W["WK1"], W["WV1"]), (W["WQ2"], W["WK2"], W["WV2"])]
RNG = np.random.default_rng(20261204)


# ------------------------------------------------ the algebra, right and wrong

def _softmax(scores, axis=-1):
    scores = np.array(scores, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        ex = np.exp(scores - scores.max(axis=axis, keepdims=True))
        return ex / ex.sum(axis=axis, keepdims=True)


def attention(Q, K, V, *, scale=None, mask="causal", axis=-1, mask_after=False, fill=-np.inf, against=None,
              mix_transposed=False):
    """Causal attention, or one of its mistaken versions; returns (output, weights). ``against``: what the
    queries were compared with instead of the keys; ``scale``: what the scores were divided by."""
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    n, d_k = Q.shape
    scores = Q @ (K if against is None else np.asarray(against, dtype=float)).T
    scores = scores / (math.sqrt(d_k) if scale is None else scale)
    allowed = {"causal": np.tril(np.ones((n, n), bool)),
               "transposed": np.triu(np.ones((n, n), bool)),
               "strict": np.tril(np.ones((n, n), bool), k=-1),
               "off-by-one": np.tril(np.ones((n, n), bool), k=1),
               "none": np.ones((n, n), bool)}[mask]
    with np.errstate(invalid="ignore"):
        if mask_after:
            weights = _softmax(scores, axis) * allowed
        elif fill == 0.0:
            weights = _softmax(scores * allowed, axis)
        else:
            weights = _softmax(np.where(allowed, scores, fill), axis)
        return (weights.T if mix_transposed else weights) @ V, weights


def joint_softmax_heads(x, heads):
    """Each head's outputs when one softmax ran over every head's scores of a row together."""
    xs = np.array(x, dtype=np.float64)
    n = xs.shape[0]
    allowed = np.tril(np.ones((n, n), bool))
    scores = [np.where(allowed, (xs @ wq) @ (xs @ wk).T / math.sqrt(np.shape(wq)[1]), -np.inf) for wq, wk, _ in heads]
    weights = _softmax(np.concatenate(scores, axis=1))
    return [weights[:, h * n:(h + 1) * n] @ (xs @ wv) for h, (_, _, wv) in enumerate(heads)]


def across_heads_softmax(x, heads, fill):
    """Each head's output when the softmax ran along the heads axis of the stacked (heads, n, n) scores."""
    xs = np.array(x, dtype=np.float64)
    n = xs.shape[0]
    blocked = np.triu(np.ones((n, n), bool), k=1)
    scores = np.stack([np.where(blocked, fill, (xs @ wq) @ (xs @ wk).T / math.sqrt(np.shape(wq)[1]))
                       for wq, wk, _ in heads])
    weights = _softmax(scores, axis=0)
    return [weights[h] @ (xs @ wv) for h, (_, _, wv) in enumerate(heads)]


def mha(x, heads, W_o, *, order=1, combine="concat", split="slice", project=True, joint=False, across=None,
        activation=False, **kw):
    """Multi-head attention, or a mistaken version of it."""
    x = np.array(x, dtype=np.float64)
    if split == "reshape":      # every head projected at once, then split off by a reshape alone
        h, n = len(heads), x.shape[0]
        Q, K, V = ((x @ np.hstack([head[i] for head in heads])).reshape(h, n, -1) for i in range(3))
        outs = [attention(Q[i], K[i], V[i], **kw)[0] for i in range(h)][::order]
    elif joint:
        outs = joint_softmax_heads(x, heads)
    elif across is not None:
        outs = across_heads_softmax(x, heads, across)
    else:
        outs = [attention(x @ wq, x @ wk, x @ wv, **kw)[0] for wq, wk, wv in heads][::order]
    if combine in ("sum", "average"):     # added up (or averaged), then W_o's first block or nothing
        total = sum(outs) / (len(outs) if combine == "average" else 1)
        return total @ W_o[:total.shape[1]] if project else total
    if combine == "mean":
        d = outs[0].shape[1]
        return sum(o @ W_o[i * d:(i + 1) * d] for i, o in enumerate(outs)) / len(outs)
    if combine == "reshape":    # (heads, tokens, d_k) reshaped to (tokens, heads x d_k), no transpose
        concat = np.stack(outs).reshape(x.shape[0], -1)
        return concat @ W_o if project else concat
    concat = np.concatenate(outs, axis=1)
    if activation:
        return np.maximum(concat @ W_o, 0.0)
    return concat @ W_o if project else concat


def attention_mistakes(Q, K, V, d_model=None, index=1):
    """(mistake id, description, value) of the usual mistakes, for output (index 0) or weights (index 1)."""
    n, d_k = np.shape(Q)
    out = [
        ("scores-not-scaled", "the scores were not divided by sqrt(d_k)", attention(Q, K, V, scale=1.0)),
        ("scores-divided-by-width", "the scores were divided by d_k instead of sqrt(d_k)", attention(Q, K, V, scale=d_k)),
        ("scores-scaled-wrongly", "the scale used the number of tokens (Q.shape[0]) instead of the head width d_k = Q.shape[1]",
         attention(Q, K, V, scale=math.sqrt(n))),
        ("scores-scaled-wrongly", SCALED_HALF, attention(Q, K, V, scale=2 / d_k)),
        ("scores-scaled-wrongly", SCALED_TIMES, attention(Q, K, V, scale=1 / math.sqrt(d_k))),
        ("scores-use-values", USE_VALUES, attention(Q, K, V, against=V) if np.shape(V) == np.shape(K) else (np.nan, np.nan)),
        ("weights-transposed-on-values", MIX_TRANSPOSED, attention(Q, K, V, mix_transposed=True) if np.shape(V)[0] == n
         else (np.nan, np.nan)),
        ("mask-transposed", "the mask is transposed: each token sees the later tokens instead of the earlier ones",
         attention(Q, K, V, mask="transposed")),
        ("no-causal-mask", "there is no causal mask: tokens see the future", attention(Q, K, V, mask="none")),
        ("mask-off-by-one", "the mask is off by one: token i also sees token i + 1 (np.tril(..., k=1))",
         attention(Q, K, V, mask="off-by-one")),
        ("mask-without-diagonal", "the mask also blocks the diagonal (use j <= i, not j < i); the first row has nothing left",
         attention(Q, K, V, mask="strict")),
        ("softmax-over-queries", "the softmax ran over the queries (axis 0) instead of along each row (axis -1)",
         attention(Q, K, V, axis=0)),
        ("mask-after-softmax", "the mask was applied after the softmax, so the rows no longer sum to 1",
         attention(Q, K, V, mask_after=True)),
        ("mask-fill-not-minus-inf", "blocked scores were set to 0 instead of -inf, so they still get weight",
         attention(Q, K, V, fill=0.0)),
    ]
    if d_model is not None and d_model != d_k:
        out.insert(0, ("scores-scaled-wrongly", f"the scores were divided by sqrt(d_model) = sqrt({d_model}) instead of the head "
                       f"width sqrt(d_k) = sqrt({d_k})", attention(Q, K, V, scale=math.sqrt(d_model))))
    return [(key, text, value[index]) for key, text, value in out]


SCALED_HALF = ("the scores were multiplied by d_k / 2 (d_k ** 1 / 2 is (d_k ** 1) / 2, not the square root); "
               "divide them by sqrt(d_k), d_k ** 0.5")
SCALED_TIMES = ("the scores were multiplied by sqrt(d_k) (divided by d_k ** -0.5, which is 1 / sqrt(d_k)) instead of "
                "divided by it")
USE_VALUES = "the scores compare the queries with the values (Q @ V^T); they are Q @ K^T, queries against keys"
MIX_TRANSPOSED = ("the weights were transposed before they mixed the values (weights.T @ V): output i is the sum over "
                  "j of weights[i, j] V[j], weights @ V")
AVERAGED = "the heads were added up or averaged, not placed side by side (concatenated) and projected by W_o"
JOINT = ("one softmax ran over every head's scores together; each head takes its own softmax over its own "
         "keys")
ACROSS = ("the softmax ran along the heads axis of the stacked (heads, n, n) scores, not along each head's keys "
          "(the last axis)")
ACTIVATION = ("an activation (a ReLU: no entry is negative) follows W_o; the output projection is linear, concat @ W_o "
              "and nothing after it")
MERGED = ("the heads' outputs were stacked (heads, tokens, d_k) and reshaped to (tokens, heads x d_k) without "
          "a transpose, so each row mixes several tokens: concatenate them along the last axis")
SPLIT = ("the heads were split off the full projections by a reshape to (heads, tokens, d_k) without a "
         "transpose, so each head got other tokens' features: reshape to (tokens, heads, d_k), then transpose")


def mha_mistakes(x, heads, W_o):
    d_model = np.shape(x)[1]
    d_k = np.shape(heads[0][0])[1]
    n = np.shape(x)[0]
    found = [
        ("scores-scaled-wrongly", f"the scores were divided by sqrt(d_model) = sqrt({d_model}) instead of the head width "
         f"sqrt(d_k) = sqrt({d_k})", mha(x, heads, W_o, scale=math.sqrt(d_model))),
        ("scores-not-scaled", "the scores were not divided by sqrt(d_k)", mha(x, heads, W_o, scale=1.0)),
        ("scores-scaled-wrongly", "the scale used the number of tokens instead of the head width",
         mha(x, heads, W_o, scale=math.sqrt(n))),
        ("heads-in-reverse-order", "the heads were concatenated in the wrong order (head 1's columns come first)",
         mha(x, heads, W_o, order=-1)),
        ("no-output-projection", "W_o is missing: the result should be the concatenated heads times W_o",
         mha(x, heads, W_o, project=False)),
        ("heads-averaged", AVERAGED, mha(x, heads, W_o, combine="mean")),
        ("heads-averaged", AVERAGED, mha(x, heads, W_o, combine="sum", project=False)),
        ("heads-averaged", AVERAGED, mha(x, heads, W_o, combine="average", project=False)),
        ("heads-averaged", AVERAGED, mha(x, heads, W_o, combine="sum")),
        ("heads-averaged", AVERAGED, mha(x, heads, W_o, combine="average")),
        ("softmax-over-heads-jointly", JOINT, mha(x, heads, W_o, joint=True)),
        *[("softmax-over-heads", ACROSS, mha(x, heads, W_o, across=fill)) for fill in (-np.inf, -1e9)],
        ("output-projection-with-activation", ACTIVATION, mha(x, heads, W_o, activation=True)),
        ("scores-scaled-wrongly", SCALED_HALF, mha(x, heads, W_o, scale=2 / d_k)),
        ("scores-scaled-wrongly", SCALED_TIMES, mha(x, heads, W_o, scale=1 / math.sqrt(d_k))),
        ("scores-use-values", USE_VALUES, mha(x, [(wq, wv, wv) for wq, wk, wv in heads], W_o)),
        ("weights-transposed-on-values", MIX_TRANSPOSED, mha(x, heads, W_o, mix_transposed=True)),
        ("heads-merged-without-transpose", MERGED, mha(x, heads, W_o, combine="reshape")),
        ("heads-split-without-transpose", SPLIT, mha(x, heads, W_o, split="reshape")),
        ("no-causal-mask", "there is no causal mask: tokens see the future", mha(x, heads, W_o, mask="none")),
        ("mask-off-by-one", "the mask is off by one: token i also sees token i + 1 (np.tril(..., k=1))",
         mha(x, heads, W_o, mask="off-by-one")),
        ("mask-transposed", "the mask is transposed: each token sees the later tokens instead of the earlier ones",
         mha(x, heads, W_o, mask="transposed")),
        ("softmax-over-queries", "the softmax ran over the queries (axis 0) instead of along each row",
         mha(x, heads, W_o, axis=0)),
        ("mask-after-softmax", "the mask was applied after the softmax, so the rows no longer sum to 1",
         mha(x, heads, W_o, mask_after=True)),
    ]
    if all(np.shape(w) == (d_model, d_model) for head in heads for w in head):
        found.append(("weights-transposed", "the weights were transposed (x @ W.T instead of x @ W)",
                      mha(x, [tuple(w.T for w in head) for head in heads], W_o)))
    found.append(("projections-share-a-matrix", "the queries and keys used the same matrix (K = x @ W_q)",
                  mha(x, [(wq, wq, wv) for wq, wk, wv in heads], W_o)))
    return found


SWAPPED = "the pair is (output, weights), in that order: causal_attention returned the weights first"


def _swapped(result):
    """The pair came back as (weights, output): the first is an n x n causal softmax, the second is not."""
    def causal_weights(a):
        a = np.asarray(a, dtype=float)
        return (a.ndim == 2 and a.shape[0] == a.shape[1] and np.allclose(np.triu(a, 1), 0)
                and np.allclose(a.sum(axis=-1), 1))
    try:
        return causal_weights(result[0]) and not causal_weights(result[1])
    except (TypeError, ValueError, IndexError):
        return False


def _pair(result, what):
    pair = isinstance(result, (tuple, list)) and len(result) == 2
    that(pair, f"{what} should return a pair (output, weights), got {type(result).__name__}")
    that(not _swapped(result), f"{what}: the first of the pair is the attention weights", SWAPPED,
         "attention-swapped-pair")
    return result


def _triple(result, what):
    triple = isinstance(result, (tuple, list)) and len(result) == 3
    that(triple, f"{what} should return three arrays (Q, K, V), got {type(result).__name__}")
    return result


IGNORED = ("multi_head_attention does not use the heads and W_o it is given: its answer stays the same when they "
           "change (does it read the notebook's HEADS and W_O?); compute everything from its arguments")


HARD_CODED = "the answer does not depend on the input: the chapter's output is written in, not computed"
_PROBED = {}


def _what_it_ignores(student):
    """(mistake id, words) when multi_head_attention gives the same answer for other heads and another W_o:
    for any x too (written in), or for this x only (it reads the notebook's HEADS and W_O); else None."""
    if "mha" not in _PROBED:
        _PROBED["mha"] = None
        try:
            a, b, c = (np.asarray(student.multi_head_attention(x, heads, w_o), dtype=float) for x, heads, w_o in
                       ((XN, HEADS, W["WO"]), (XN, HEADS[::-1], np.eye(4)), (XN[::-1], HEADS, W["WO"])))
        except (StudentError, TypeError, ValueError):
            return None
        if a.shape == b.shape and np.allclose(a, b):
            same_for_any_x = a.shape == c.shape and np.allclose(a, c)
            _PROBED["mha"] = ("hard-coded-chapter", HARD_CODED) if same_for_any_x else ("arguments-ignored", IGNORED)
    return _PROBED["mha"]


def _multi_head(student, x, heads, W_o):
    """The student's multi_head_attention(x, heads, W_o); an error from code that ignores its arguments, or
    from a causal_attention whose pair comes back the wrong way round, says so."""
    try:
        return student.multi_head_attention(x, heads, W_o)
    except StudentError as exc:
        if exc.kind != "error":
            raise
        found = _what_it_ignores(student)
        if found is None:
            try:
                swapped = _swapped(student.causal_attention(*np.random.default_rng(0).normal(size=(3, 4, 2))))
            except StudentError:
                swapped = False
            found = ("attention-swapped-pair", SWAPPED) if swapped else None
        if found:
            raise CheckFailed(f"multi_head_attention raised {exc.message}", found[1], found[0]) from None
        raise


# ------------------------------------------------ the chapter, steps 6 to 9

@weight(2)
@pytest.mark.parametrize("h", [1, 2])
def test_chapter_projections(student, h):
    """step 6: Q, K and V of the chapter's head {h}"""
    chapter = TT["heads"][h - 1]
    wq, wk, wv = HEADS[h - 1]
    Q, K, V = _triple(student.project_qkv(XN, wq, wk, wv), "project_qkv")
    close(Q, chapter["Q"], f"Q of head {h}", source=f"chapter, step 6.{h}")
    close(K, chapter["K"], f"K of head {h}", source=f"chapter, step 6.{h}",
          mistakes=[("projections-share-a-matrix", "the keys used W_q (K = x @ W_q): each projection needs its own matrix", XN @ wq)])
    close(V, chapter["V"], f"V of head {h}", source=f"chapter, step 6.{h}",
          mistakes=[("projections-share-a-matrix", "the values used W_k (V = x @ W_k): each projection needs its own matrix", XN @ wk)])


@weight(2)
@pytest.mark.parametrize("h", [1, 2])
def test_chapter_scaled_scores(student, h):
    """step 7: the scaled scores of head {h}, read back from the weights as log-ratios"""
    chapter = TT["heads"][h - 1]
    Q, K, V = (np.array(chapter[k]) for k in "QKV")
    _, weights = _pair(student.causal_attention(Q, K, V), "causal_attention")
    weights = np.asarray(weights, dtype=float)
    that(weights.shape == (4, 4), f"the weights of head {h} should have shape (4, 4), got {weights.shape}")
    # within a row, log w_ij - log w_i0 = S_ij - S_i0 for every key the token may see
    that(np.all(np.isfinite(weights)) and np.all(weights[:, 0] > 0),
         f"head {h}: every token may look at the first token, but your weights give it "
         f"{fmt(weights[:, 0])}: is the mask transposed or blocking the diagonal, or are there nan weights?")
    S = np.array(chapter["scaled_scores"])
    rows = np.arange(1, 4)
    with np.errstate(divide="ignore", invalid="ignore"):
        got = np.array([np.log(weights[i, : i + 1]) - np.log(weights[i, 0]) for i in rows], dtype=object)
    expected = [S[i, : i + 1] - S[i, 0] for i in rows]
    raw = np.array(chapter["raw_scores_QKt"])
    for i, g, e in zip(rows, got, expected):
        close(np.asarray(g, dtype=float), e, f"head {h}, query '{TT['config']['prompt'][i]}': score differences "
              "S[i, j] - S[i, 0] implied by your weights", source=f"chapter, step 7.{h}",
              mistakes=[("scores-not-scaled", "the scores were not divided by sqrt(d_k) = sqrt(2)", raw[i, : i + 1] - raw[i, 0]),
                        ("scores-scaled-wrongly", SCALED_HALF, raw[i, : i + 1] - raw[i, 0]),     # d_k / 2 = 1 here
                        ("scores-scaled-wrongly", SCALED_TIMES, (raw[i, : i + 1] - raw[i, 0]) * math.sqrt(2)),
                        ("scores-scaled-wrongly", "the scores were divided by 2 instead of sqrt(2): sqrt(d_model) = sqrt(4), the "
                         "length sqrt(n) = sqrt(4) and d_k = 2 all give 2; the scale is sqrt of the head "
                         "width Q.shape[1]", (raw[i, : i + 1] - raw[i, 0]) / 2)])


@weight(2)
@pytest.mark.parametrize("h", [1, 2])
def test_chapter_weights_and_outputs(student, h):
    """step 8: the masked attention weights and the output of head {h}"""
    chapter = TT["heads"][h - 1]
    Q, K, V = (np.array(chapter[k]) for k in "QKV")
    output, weights = _pair(student.causal_attention(Q, K, V), "causal_attention")
    close(weights, chapter["A"], f"the attention weights of head {h}", source=f"chapter, step 8.{h}",
          mistakes=attention_mistakes(Q, K, V, d_model=4, index=1))
    close(output, chapter["head_output"], f"the output of head {h}", source=f"chapter, step 8.{h}",
          mistakes=[("output-mixes-keys", "the output should be weights @ V (not weights @ K or V @ weights)",
                     np.array(chapter["A"]) @ K)] + attention_mistakes(Q, K, V, d_model=4, index=0))


@weight(2)
def test_chapter_concatenation(student):
    """step 9: the two heads concatenated [head 1 | head 2] (multi_head_attention with W_o = identity)"""
    got = _multi_head(student, XN, HEADS, np.eye(4))
    h1, h2 = (np.array(h["head_output"]) for h in TT["heads"])
    close(got, TT["concat_heads"], "multi_head_attention(x, heads, identity)", source="chapter, step 9",
          mistakes=[("heads-in-reverse-order", "the heads were concatenated in the wrong order (head 1's columns come first)",
                     np.hstack([h2, h1])),
                    ("heads-interleaved", "the heads were interleaved column by column instead of placed side by side",
                     np.stack([h1, h2], axis=-1).reshape(4, 4)),
                    *([(*_what_it_ignores(student), TT["attn_output_after_WO"])] if _what_it_ignores(student) else [])]
          + mha_mistakes(XN, HEADS, np.eye(4)))


@weight(3)
def test_chapter_output_projection(student):
    """step 9: the heads projected by W_O, the attention sublayer's output"""
    got = _multi_head(student, XN, HEADS, W["WO"])
    close(got, TT["attn_output_after_WO"], "multi_head_attention on the chapter's input",
          source="chapter, step 9", mistakes=mha_mistakes(XN, HEADS, W["WO"]))


# ------------------------------------------------ inputs nobody can predict

@weight(2)
def test_projections_random(student):
    """project_qkv on random sizes, square weights included"""
    for trial in range(4):
        n, d, d_k = int(RNG.integers(2, 8)), int(RNG.integers(2, 9)), int(RNG.integers(1, 7))
        if trial == 0:
            d_k = d
        x = RNG.normal(size=(n, d))
        ws = [RNG.normal(size=(d, d_k)) for _ in range(3)]
        got = _triple(student.project_qkv(x, *ws), "project_qkv")
        for name, g, w in zip("QKV", got, ws):
            close(g, x @ w, f"{name} for {n} random tokens of width {d}, head width {d_k}", reveal=False,
                  mistakes=[("weights-transposed", "the weights were transposed (x @ W.T instead of x @ W)", x @ w.T if d == d_k else np.nan),
                            ("projections-share-a-matrix", "the keys used W_q: each projection needs its own matrix", x @ ws[0]),
                            ("projections-share-a-matrix", "the values used W_k", x @ ws[1])])


@weight(3)
def test_causal_attention_random(student):
    """causal_attention on random lengths and widths (d_v different from d_k)"""
    for trial in range(5):
        n, d_k, d_v = int(RNG.integers(2, 9)), int(RNG.integers(1, 9)), int(RNG.integers(1, 6))
        Q, K, V = RNG.normal(size=(n, d_k)) * 2, RNG.normal(size=(n, d_k)), RNG.normal(size=(n, d_v))
        output, weights = _pair(student.causal_attention(Q, K, V), "causal_attention")
        right_out, right_w = attention(Q, K, V)
        close(weights, right_w, f"the weights for {n} random tokens, d_k = {d_k}", reveal=False,
              mistakes=attention_mistakes(Q, K, V, index=1))
        close(output, right_out, f"the output for {n} random tokens, d_k = {d_k}, d_v = {d_v}", reveal=False,
              mistakes=attention_mistakes(Q, K, V, index=0))


@weight(3)
def test_multi_head_random(student, reference):
    """multi_head_attention with random widths, head counts and lengths"""
    for trial in range(4):
        n_heads = int(RNG.integers(1, 5))
        d_k = int(RNG.integers(1, 4))
        d_model = n_heads * d_k if trial % 2 else int(RNG.integers(2, 9))
        n = int(RNG.integers(2, 8))
        x = RNG.normal(size=(n, d_model))
        heads = [tuple(RNG.normal(size=(d_model, d_k)) for _ in range(3)) for _ in range(n_heads)]
        W_o = RNG.normal(size=(n_heads * d_k, d_model))
        close(_multi_head(student, x, heads, W_o), reference.multi_head_attention(x, heads, W_o),
              f"{n_heads} head(s) of width {d_k} on {n} random tokens of width {d_model}", reveal=False,
              mistakes=mha_mistakes(x, heads, W_o))


def test_square_heads_random(student, reference):
    """one head as wide as the model (square weights), so transposed weights show"""
    d, n = int(RNG.integers(3, 7)), int(RNG.integers(3, 7))
    x = RNG.normal(size=(n, d))
    heads = [tuple(RNG.normal(size=(d, d)) for _ in range(3))]
    W_o = RNG.normal(size=(d, d))
    close(_multi_head(student, x, heads, W_o), reference.multi_head_attention(x, heads, W_o),
          f"one head of width {d} on {n} random tokens", reveal=False, mistakes=mha_mistakes(x, heads, W_o))


def test_large_scores_random(student):
    """scores in the hundreds give finite weights and exact zeros above the diagonal"""
    n = 6
    Q, K, V = RNG.normal(size=(n, 4)) * 30, RNG.normal(size=(n, 4)) * 30, RNG.normal(size=(n, 3))
    output, weights = _pair(student.causal_attention(Q, K, V), "causal_attention")
    weights = np.asarray(weights, dtype=float)
    that(weights.shape == (n, n) and np.isfinite(weights).all(),
         "causal_attention: large scores gave non-finite weights (subtract the row maximum, or use the given softmax)")
    that(np.all(weights[np.triu_indices(n, k=1)] == 0.0),
         "causal_attention: weights above the diagonal must be exactly 0, even for large scores")
    close(weights, attention(Q, K, V)[1], "the weights for large random scores", reveal=False,
          scale=np.abs(Q @ K.T).max() / 2)


def test_float32_input(student):
    """float32 input gives the same answer within float32 precision"""
    n, d = 5, 6
    x = RNG.normal(size=(n, d)).astype(np.float32)
    heads = [tuple(RNG.normal(size=(d, 3)).astype(np.float32) for _ in range(3)) for _ in range(2)]
    W_o = RNG.normal(size=(d, d)).astype(np.float32)
    close(_multi_head(student, x, heads, W_o), mha(x.astype(float), [tuple(w.astype(float) for w in h) for h in heads], W_o.astype(float)),
          "multi_head_attention on float32 input", reveal=False)
