"""Hidden suite, part 2 (transformer_parameters): both chapter conventions, GPT-2, random models.

The chapter's counts are printed in failures (they are in the chapter); the
counts of random configurations never are. Each counting mistake named below
is computed here by a mistaken version of the formula.
"""

import numpy as np
import pytest

from autograder.chapter import get
from selfcheck.checks import equal, that, weight

ATT = get("attention.params_attention_chapter")
TINY = get("tiny_transformer.params")
TABLE = get("tiny_transformer.scaling_table.models")
CONVENTIONS = get("parameter_conventions")
REQUIRED = "attention feed_forward layer_norms per_layer embeddings total".split()
GPT2_PUBLISHED = 124_439_808
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
    per_layer = attention + feed_forward + norms
    embeddings = vocab * d + context * d
    final = 2 * d * final_norm
    if mistake == "final_per_layer":
        final = layers * 2 * d * final_norm
    unembedding = 0 if tied_unembedding else vocab * d
    if mistake == "tied_counted":
        unembedding = vocab * d
    if mistake == "positions_per_layer":
        embeddings = vocab * d + layers * context * d
    total = embeddings + layers * per_layer + final + unembedding
    return {"attention": attention, "feed_forward": feed_forward, "layer_norms": norms, "per_layer": per_layer,
            "embeddings": embeddings, "total": total}


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
    "tied_counted": "the output layer was counted although it is tied to the token table",
    "final_per_layer": "the final layer norm was counted once per block; there is one, after the last block",
    "positions_per_layer": "the position table was counted once per block; there is one, at the input",
}


def mistakes_for(*args, key, **kwargs):
    """The named mistakes that change ``key`` here; mistakes giving the same number share one entry."""
    right = count(*args, **kwargs)[key]
    by_value = {}
    for name, text in MISTAKES.items():
        value = count(*args, mistake=name, **kwargs)[key]
        if value != right:
            by_value.setdefault(value, []).append(text)
    basic = {k: kwargs[k] for k in ("layer_norm", "ffn_bias") if k in kwargs}
    value = count(*args, **basic)[key]
    if value != right:
        by_value.setdefault(value, []).append(
            "the switches qkv_bias, out_bias, tied_unembedding, context and final_norm were ignored")
    return [("; or ".join(texts), value) for value, texts in by_value.items()]


def _counts(student, *args, **kwargs):
    got = student.transformer_parameters(*args, **kwargs)
    that(isinstance(got, dict), f"transformer_parameters returns a dict of counts; it returned a {type(got).__name__}")
    absent = [key for key in REQUIRED if key not in got]
    that(not absent, f"transformer_parameters: the dict has no {', '.join(absent)}")
    return got


def check_all(student, args, kwargs, what, *, source=None, reveal=True, keys=REQUIRED, expected=None):
    got = _counts(student, *args, **kwargs)
    right = count(*args, **kwargs)
    if expected:
        right.update(expected)
    for key in keys:
        equal(got[key], right[key], f"{what}: {key}", source=source, reveal=reveal,
              mistakes=mistakes_for(*args, key=key, **kwargs))


# ------------------------------------------------ the chapter

@weight(3)
def test_attention_chapter_layer(student):
    """the attention chapter's model (vocab 50,000, d_model 512, 6 layers, 8 heads, d_ff 2,048): every part"""
    expected = {"attention": ATT["attn"], "feed_forward": ATT["ffn"], "layer_norms": ATT["layer_norms"],
                "per_layer": ATT["one_layer"], "embeddings": ATT["embeddings"], "total": ATT["total"]}
    check_all(student, (ATT["V"], ATT["D"], ATT["L"], ATT["h"], ATT["H"]), {},
              "the attention chapter's model", source="attention chapter, one layer's parameters", expected=expected)


@weight(2)
def test_tiny_model(student):
    """the tiny model without layer norms: 64 attention, 76 feed-forward, 32 embedding, 172 in all"""
    expected = {"attention": TINY["attn"], "feed_forward": TINY["ffn"], "layer_norms": 0,
                "per_layer": TINY["attn"] + TINY["ffn"], "embeddings": TINY["embedding_tied"], "total": TINY["total"]}
    check_all(student, (8, 4, 1, 2, 8), {"layer_norm": False}, "the tiny model", source="chapter, step 16",
              expected=expected)


@weight(3)
@pytest.mark.parametrize("row", range(4), ids=["chapter", "gpt2-small", "gpt2-medium", "gpt3"])
def test_four_model_table(student, row):
    """the table of four models, without layer norms: one block and the total"""
    m = TABLE[row]
    args = (m["vocab"], m["d_model"], m["layers"], m["heads"], m["d_ff"])
    check_all(student, args, {"layer_norm": False}, m["model"], source="chapter, the four-model table",
              keys=("per_layer", "embeddings", "total"),
              expected={"per_layer": m["block"], "embeddings": m["embeddings"], "total": m["total"]})


def test_conventions_cross(student):
    """each convention on the other's model: 188 for the tiny model with layer norms, 44,489,728 without"""
    tiny = _counts(student, 8, 4, 1, 2, 8)
    equal(tiny["total"], CONVENTIONS["tiny_model"]["attention_py_rule"], "the tiny model with layer norms: total",
          mistakes=mistakes_for(8, 4, 1, 2, 8, key="total"))
    big = _counts(student, ATT["V"], ATT["D"], ATT["L"], ATT["h"], ATT["H"], layer_norm=False)
    equal(big["total"], CONVENTIONS["attention_chapter_model"]["tiny_transformer_py_rule"],
          "the attention chapter's model without layer norms: total",
          mistakes=mistakes_for(ATT["V"], ATT["D"], ATT["L"], ATT["h"], ATT["H"], key="total", layer_norm=False))


@weight(2)
def test_heads_never_change_a_count(student):
    """the number of heads changes no count (d_model 768 split 1, 2, 3, 4, 6, 8, 12, 16, 24 ways)"""
    base = _counts(student, 50257, 768, 12, 12, 3072)
    for heads in (1, 2, 3, 4, 6, 8, 16, 24):
        got = _counts(student, 50257, 768, 12, heads, 3072)
        for key in ("attention", "total"):
            equal(got[key], base[key], f"{key} with {heads} heads against 12 heads",
                  mistakes=[(MISTAKES["heads"], count(50257, 768, 12, heads, 3072, mistake="heads")[key])])


@weight(3)
def test_gpt2_small_for_real(student):
    """GPT-2 small with every real part (Q/K/V and W_O biases, two norms per block, final norm, 1,024 learned positions): 124,439,808"""
    kwargs = dict(qkv_bias=True, out_bias=True, context=1024, final_norm=True)
    got = _counts(student, 50257, 768, 12, 12, 3072, **kwargs)
    equal(got["attention"], 4 * 768 * 768 + 4 * 768, "GPT-2 small: attention of one block, biases included",
          mistakes=mistakes_for(50257, 768, 12, 12, 3072, key="attention", **kwargs))
    equal(got["embeddings"], 50257 * 768 + 1024 * 768, "GPT-2 small: embeddings (tokens and 1,024 positions)",
          mistakes=mistakes_for(50257, 768, 12, 12, 3072, key="embeddings", **kwargs))
    equal(got["total"], GPT2_PUBLISHED, "GPT-2 small, every part switched on: total", source="the released GPT-2 small",
          mistakes=mistakes_for(50257, 768, 12, 12, 3072, key="total", **kwargs))


def test_untied_output_layer(student):
    """an untied output layer adds one vocab x d_model matrix to the total, and nothing else"""
    tied = _counts(student, 1000, 64, 2, 4, 256)
    untied = _counts(student, 1000, 64, 2, 4, 256, tied_unembedding=False)
    equal(untied["total"] - tied["total"], 1000 * 64, "total untied minus total tied (vocab 1,000, d_model 64)")
    equal(tied["total"], count(1000, 64, 2, 4, 256)["total"], "total with a tied output layer (vocab 1,000, d_model 64)",
          mistakes=mistakes_for(1000, 64, 2, 4, 256, key="total"))


def test_positions(student):
    """context=0 (sinusoids) has no position parameters; context=c adds c x d_model once"""
    none = _counts(student, 500, 32, 3, 4, 128)
    some = _counts(student, 500, 32, 3, 4, 128, context=256)
    equal(none["embeddings"], 500 * 32, "embeddings with sinusoidal positions (context=0, vocab 500, d_model 32)")
    equal(some["total"] - none["total"], 256 * 32, "what a learned table of 256 positions adds (d_model 32)",
          mistakes=[(MISTAKES["positions_per_layer"], 3 * 256 * 32)])


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
