"""Hidden suite, part 2 (transformer_parameters): the rest of the chapter's table, random models.

The counts the notebook states (44,502,016, 172, 123,578,112, 188, 44,489,728,
124,439,808) are the public suite's; this one adds the table's other rows and
models nobody can predict, with every switch. The chapter's counts are printed
in failures; the counts of random configurations never are. Each counting
mistake named below is computed here by a mistaken version of the formula.
"""

import numpy as np
import pytest

from autograder.course.chapter import get
from selfcheck.checks import equal, that, weight

TABLE = get("tiny_transformer.scaling_table.models")
REQUIRED = "attention feed_forward layer_norms per_layer embeddings total".split()
RNG = np.random.default_rng(20261205)


def count(vocab, d, layers, heads, d_ff, *, layer_norm=True, ffn_bias=True, qkv_bias=False, out_bias=False,
          tied_unembedding=True, context=0, final_norm=False, mistake=None):
    """The right count, or the count of one named mistake."""
    attention = 4 * d * d + 3 * d * qkv_bias + d * out_bias
    if mistake == "heads":
        attention = heads * 3 * d * d + d * d + 3 * d * qkv_bias + d * out_bias
    if mistake == "no_w_o":
        attention = 3 * d * d + 3 * d * qkv_bias
    feed_forward = 2 * d * d_ff + (d_ff + d) * ffn_bias
    if mistake == "no_ffn_bias":
        feed_forward = 2 * d * d_ff
    if mistake == "ffn_bias_twice_dff":
        feed_forward = 2 * d * d_ff + 2 * d_ff * ffn_bias
    norms = 4 * d * layer_norm
    if mistake == "one_norm":
        norms = 2 * d * layer_norm
    if mistake == "two_per_norm":
        norms = 4 * layer_norm
    if mistake == "qkv_bias_one":
        attention = 4 * d * d + d * qkv_bias + d * out_bias
    if mistake == "qkv_bias_dk":
        attention = 4 * d * d + 3 * (d // heads) * qkv_bias + d * out_bias
    if mistake == "biases_always":
        attention = 4 * d * d + 4 * d
    if mistake == "ffn_bias_always":
        feed_forward = 2 * d * d_ff + d_ff + d
    per_layer = attention + feed_forward + norms
    embeddings = vocab * d + context * d
    final = 2 * d * final_norm
    if mistake == "final_per_layer":
        final = layers * 2 * d * final_norm
    if mistake == "final_half":
        final = d * final_norm
    unembedding = 0 if tied_unembedding else vocab * d
    if mistake == "tied_counted":
        unembedding = vocab * d
    if mistake == "positions_per_layer":
        embeddings = vocab * d + layers * context * d
    if mistake == "untied_left_out":
        unembedding = 0
    if mistake == "no_positions":
        embeddings = vocab * d
    if mistake == "head_in_embeddings" and tied_unembedding:
        embeddings = 2 * vocab * d + context * d
    if mistake == "vocab_per_layer":
        embeddings = layers * vocab * d + context * d
    if mistake == "tied_subtracted":
        unembedding = -vocab * d if tied_unembedding else vocab * d
    if mistake == "matrices_only":
        attention, feed_forward, norms = 4 * d * d, 2 * d * d_ff, 0
        per_layer = attention + feed_forward
    total = embeddings + layers * per_layer + final + unembedding
    if mistake == "no_embeddings":
        total = layers * per_layer + final + unembedding
    if mistake == "matrices_only":
        total = layers * per_layer
    return {"attention": attention, "feed_forward": feed_forward, "layer_norms": norms, "per_layer": per_layer,
            "embeddings": embeddings, "total": total}


IDS = {"no_ffn_bias": "count-without-ffn-biases", "ffn_bias_twice_dff": "count-ffn-biases-2-dff",
       "one_norm": "count-one-norm-per-block", "two_per_norm": "count-norm-as-scalars",
       "heads": "count-grows-with-heads", "no_w_o": "count-without-output-projection",
       "qkv_bias_one": "count-qkv-bias-once", "qkv_bias_dk": "count-qkv-bias-head-width", "tied_counted": "count-tied-output-layer",
       "final_per_layer": "count-final-norm-per-block", "positions_per_layer": "count-positions-per-block",
       "untied_left_out": "count-untied-output-left-out", "no_embeddings": "count-without-embeddings",
       "vocab_per_layer": "count-token-table-per-block", "tied_subtracted": "count-tied-table-subtracted",
       "matrices_only": "count-block-matrices-only", "no_positions": "count-without-positions",
       "head_in_embeddings": "count-tied-output-layer", "biases_always": "count-bias-switches-ignored",
       "ffn_bias_always": "count-bias-switches-ignored", "final_half": "count-final-norm-half"}
MISTAKES = {
    "no_ffn_bias": "the feed-forward biases (d_ff + d_model) were left out",
    "ffn_bias_twice_dff": "the feed-forward biases were counted as 2 x d_ff; W2's bias has d_model entries",
    "one_norm": "the layer norms were counted as 2 x d_model per block: a block has two norms (before attention "
                "and before the feed-forward layer), each with a gain and a shift of d_model, so 4 x d_model",
    "two_per_norm": "each layer norm was counted as 2 parameters; its gain and shift are vectors of d_model",
    "heads": "the attention count grows with the number of heads; all heads together have 3 x d_model x d_model "
             "(each head is d_model x d_k with d_k = d_model / heads)",
    "no_w_o": "the output projection W_O (d_model x d_model, plus its bias) was left out",
    "qkv_bias_one": "the query/key/value biases were counted once (d_model); there are three (3 x d_model)",
    "qkv_bias_dk": "the query/key/value biases were counted as 3 x d_k, one head's width; the heads' biases side "
                   "by side are 3 x d_model",
    "biases_always": "the attention's biases (3 x d_model for Q, K and V, d_model for W_O) were counted whatever "
                     "qkv_bias and out_bias say: count each only when its switch is on",
    "ffn_bias_always": "the feed-forward biases (d_ff + d_model) were counted whatever ffn_bias says: count them only "
                       "when it is on",
    "tied_counted": "the output layer was counted although it is tied to the token table",
    "final_per_layer": "the final layer norm was counted once per block; there is one, after the last block",
    "final_half": "the final layer norm was counted as d_model; like every layer norm it has a gain and a shift, "
                  "2 x d_model",
    "positions_per_layer": "the position table was counted once per block; there is one, at the input",
    "untied_left_out": "tied_unembedding=False changed nothing: an untied output layer is a d_model x vocab "
                       "matrix of its own, and the total must count it",
    "no_embeddings": "the total left out the embeddings (the token and position tables)",
    "vocab_per_layer": "the token table (vocab x d_model) was counted once per block; there is one, at the input",
    "tied_subtracted": "with a tied output layer the token table was subtracted from the total; it is counted once, "
                       "in the embeddings, and a tied output layer adds nothing",
    "no_positions": "the learned position table (context x d_model) was left out",
    "head_in_embeddings": "the output layer was counted in `embeddings` although it is tied to the token table: a "
                          "tied output layer adds nothing, and `embeddings` holds the token and position tables only",
    "matrices_only": "only the blocks' weight matrices were counted (4 d_model^2 + 2 d_model d_ff per block): no "
                     "biases, no layer norms, and no embeddings in the total",
}


SWITCHES_IGNORED = "the switches qkv_bias, out_bias, tied_unembedding, context and final_norm were ignored"


def mistakes_for(*args, key, **kwargs):
    """The named mistakes that change ``key`` here; mistakes giving the same number share one entry."""
    right = count(*args, **kwargs)[key]
    by_value = {}
    for name, text in MISTAKES.items():
        value = count(*args, mistake=name, **kwargs)[key]
        if value != right:
            by_value.setdefault(value, []).append((IDS[name], text))
    basic = {k: kwargs[k] for k in ("layer_norm", "ffn_bias") if k in kwargs}
    value = count(*args, **basic)[key]
    if value != right:
        by_value.setdefault(value, []).append(
            ("count-switches-ignored", SWITCHES_IGNORED))
    return [(" or ".join(k for k, _ in named), "; or ".join(t for _, t in named), value)
            for value, named in by_value.items()]


def _counts(student, *args, **kwargs):
    got = student.transformer_parameters(*args, **kwargs)
    that(isinstance(got, dict), f"transformer_parameters returns a dict of counts; it returned a {type(got).__name__}")
    absent = [key for key in REQUIRED if key not in got]
    that(not absent, f"transformer_parameters: the dict has no {', '.join(absent)}")
    return got


def check_all(student, args, kwargs, what, *, source=None, reveal=True, keys=REQUIRED, expected=None):
    """Every count in ``keys``; a named mistake that gives every one of them the student's values is
    named first, whichever count differs first."""
    got = _counts(student, *args, **kwargs)
    right = count(*args, **kwargs)
    if expected:
        right.update(expected)
    wrong = [key for key in keys if got[key] != right[key]]
    if wrong:
        basic = {k: kwargs[k] for k in ("layer_norm", "ffn_bias") if k in kwargs}
        candidates = [(IDS[name], MISTAKES[name], count(*args, mistake=name, **kwargs)) for name in MISTAKES]
        candidates.append(("count-switches-ignored", SWITCHES_IGNORED, count(*args, **basic)))
        every = [(key, text) for key, text, counts in candidates if all(got[k] == counts[k] for k in keys)]
        if every:
            equal(got[wrong[0]], right[wrong[0]], f"{what}: {wrong[0]}", source=source, reveal=reveal,
                  mistakes=[(" or ".join(key for key, _ in every), "; or ".join(text for _, text in every),
                             got[wrong[0]])])
    for key in keys:
        equal(got[key], right[key], f"{what}: {key}", source=source, reveal=reveal,
              mistakes=mistakes_for(*args, key=key, **kwargs))


# ------------------------------------------------ the chapter

@weight(3)
@pytest.mark.parametrize("model", [TABLE[2]["model"], TABLE[3]["model"]], ids=["gpt2-medium", "gpt3"])
def test_four_model_table(student, model):
    """the rest of the table of four models, {model} without layer norms: one block and the total"""
    m = next(row for row in TABLE if row["model"] == model)
    args = (m["vocab"], m["d_model"], m["layers"], m["heads"], m["d_ff"])
    check_all(student, args, {"layer_norm": False}, m["model"], source="chapter, the four-model table",
              keys=("per_layer", "embeddings", "total"),
              expected={"per_layer": m["block"], "embeddings": m["embeddings"], "total": m["total"]})


@weight(2)
def test_heads_never_change_a_count(student):
    """the number of heads changes no count (d_model 768 split 1, 2, 3, 4, 6, 8, 12, 16, 24 ways)"""
    base = _counts(student, 50257, 768, 12, 12, 3072)
    for heads in (1, 2, 3, 4, 6, 8, 16, 24):
        got = _counts(student, 50257, 768, 12, heads, 3072)
        for key in ("attention", "total"):
            equal(got[key], base[key], f"{key} with {heads} heads against 12 heads",
                  mistakes=[(IDS["heads"], MISTAKES["heads"], count(50257, 768, 12, heads, 3072, mistake="heads")[key])])


def test_positions(student):
    """context=0 (sinusoids) has no position parameters; context=c adds c x d_model once"""
    none = _counts(student, 500, 32, 3, 4, 128)
    some = _counts(student, 500, 32, 3, 4, 128, context=256)
    equal(none["embeddings"], 500 * 32, "embeddings with sinusoidal positions (context=0, vocab 500, d_model 32)")
    equal(some["total"] - none["total"], 256 * 32, "what a learned table of 256 positions adds (d_model 32)",
          mistakes=[(IDS["positions_per_layer"], MISTAKES["positions_per_layer"], 3 * 256 * 32)])


# ------------------------------------------------ models nobody can predict

def _random_config():
    heads = int(RNG.choice([1, 2, 3, 4, 6, 8]))
    d = heads * int(RNG.integers(2, 40))
    args = (int(RNG.integers(50, 60000)), d, int(RNG.integers(1, 30)), heads, int(RNG.integers(8, 5000)))
    kwargs = {name: bool(RNG.integers(0, 2)) for name in
              ("layer_norm", "ffn_bias", "qkv_bias", "out_bias", "tied_unembedding", "final_norm")}
    kwargs["context"] = int(RNG.choice([0, 0, 64, 512, 2048]))
    return args, kwargs


@weight(4)
def test_random_models(student):
    """random models with random switches: every part and the total"""
    for trial in range(8):
        args, kwargs = _random_config()
        if trial == 0:
            kwargs.update(layer_norm=True, ffn_bias=True, qkv_bias=True, out_bias=True, final_norm=True,
                          tied_unembedding=False, context=128)
        check_all(student, args, kwargs, f"a random model (d_model {args[1]}, {args[2]} layers, {args[3]} heads)",
                  reveal=False)


def test_defaults(student):
    """the keyword defaults: layer norms and feed-forward biases on, everything else off"""
    args, _ = _random_config()
    check_all(student, args, {}, f"a random model with the default switches (d_model {args[1]})", reveal=False)
