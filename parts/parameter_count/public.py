"""Public checks for part 2 (transformer_parameters): every count the notebook states and every
rule it gives.

Run them with `pytest` in this folder, or with the notebook's check cell. The chapter's
numbers come from selfcheck/chapter_numbers.json; a likely mistake is named from how
your counts differ from the stated ones.
"""

from selfcheck.chapter import get
from selfcheck.checks import equal, that, weight

KEYS = ("attention", "feed_forward", "layer_norms", "per_layer", "embeddings", "total")
ATT = get("attention.params_attention_chapter")
TINY = get("tiny_transformer.params")
GPT2_SMALL = next(m for m in get("tiny_transformer.scaling_table.models") if m["model"] == "GPT-2 small")
CONVENTIONS = get("parameter_conventions")
GPT2_RELEASED = 124_439_808      # the released GPT-2 small (the notebook states it)


def _count(student, *args, **kwargs):
    counts = student.transformer_parameters(*args, **kwargs)
    that(isinstance(counts, dict), f"transformer_parameters should return a dict, got {type(counts).__name__}")
    missing = [k for k in KEYS if k not in counts]
    that(not missing, f"the dict should have the keys {', '.join(KEYS)}; missing: {', '.join(missing)}")
    return counts


def _hints(d, d_ff, vocab, n_layers, right):
    """key -> [(mistake, the count it gives)], from the stated rules of the notebook."""
    attention, ffn, norms = (right.get(key, 0) for key in ("attention", "feed_forward", "layer_norms"))
    return {
        "attention": [("count-without-output-projection", "the output projection W_O (d_model x d_model) was left out", attention - d * d),
                      ("count-bias-switches-ignored", BIASES_ALWAYS, attention + 4 * d)],
        "per_layer": [("count-bias-switches-ignored", BIASES_ALWAYS, right.get("per_layer", 0) + 4 * d)],
        "feed_forward": [("count-without-ffn-biases", "the feed-forward biases (d_ff + d_model) were left out", ffn - d_ff - d),
                         ("count-ffn-biases-2-dff", "the feed-forward biases were counted as 2 x d_ff; W2's bias has d_model entries",
                          ffn - d + d_ff)],
        "layer_norms": [("count-one-norm-per-block", "the layer norms were counted as 2 x d_model per block: a block has two norms (before "
                         "attention and before the feed-forward layer), each with a gain and a shift of d_model",
                         norms // 2),
                        ("count-norm-as-scalars", "each layer norm was counted as 2 numbers; its gain and shift are vectors of d_model",
                         4 if norms else -1)],
        "total": [("count-tied-output-layer", "the output layer was counted although it is tied to the token table (tied_unembedding=True)",
                   right["total"] + vocab * d),
                  ("count-final-norm-unasked", "the final layer norm was counted although final_norm=False", right["total"] + 2 * d),
                  ("count-one-norm-per-block", "the layer norms were counted as 2 x d_model per block: a block has "
                   "two norms, each with a gain and a shift of d_model", right["total"] - n_layers * norms // 2),
                  ("count-without-embeddings", "the total left out the embeddings (the token and position tables): "
                   "total = embeddings + n_layers x per_layer + ...", right["total"] - right.get("embeddings", 0)),
                  ("count-tied-table-subtracted", TIED_SUBTRACTED, right["total"] - vocab * d),
                  ("count-token-table-per-block", TOKEN_TABLE_PER_BLOCK, right["total"] + (n_layers - 1) * vocab * d),
                  ("count-bias-switches-ignored", BIASES_ALWAYS, right["total"] + n_layers * 4 * d)],
    }


BIASES_ALWAYS = ("the attention's biases (3 x d_model for Q, K and V, d_model for W_O) were counted although qkv_bias "
                 "and out_bias are False: count each only when its switch is on")


TIED_SUBTRACTED = ("with a tied output layer the token table was subtracted from the total; it is counted once, "
                   "in the embeddings, and a tied output layer adds nothing")
TOKEN_TABLE_PER_BLOCK = "the token table (vocab x d_model) was counted once per block; there is one, at the input"


def _check(student, args, kwargs, expected, what, source):
    got = _count(student, *args, **kwargs)
    vocab, d, n_layers, _, d_ff = args
    hints = _hints(d, d_ff, vocab, n_layers, expected)
    for key in KEYS:
        if key in expected:
            equal(got[key], expected[key], f"{what}: {key}", source=source, mistakes=hints.get(key, []))


def test_keys_and_whole_numbers(student):
    """the dict has every required key, and every count is an integer (int, not float) and not negative"""
    counts = _count(student, 100, 16, 2, 4, 64)
    for key in KEYS:
        value = counts[key]
        integer = isinstance(value, int) and not isinstance(value, bool)
        that(integer and value >= 0, f"counts[{key!r}] should be a whole number of parameters, an int, got "
                                     f"{value!r} ({type(value).__name__})",
             *(("the count is a float: `/` and float factors give floats; a parameter count is an integer "
                "(use `//`, or int(...) at the end)", "counts-as-floats") if isinstance(value, float) else ()))


def test_a_layer_is_its_parts(student):
    """per_layer is attention + feed_forward + layer_norms"""
    counts = _count(student, 100, 16, 2, 4, 64)
    that(counts["per_layer"] == counts["attention"] + counts["feed_forward"] + counts["layer_norms"],
         f"per_layer ({counts['per_layer']}) should equal attention + feed_forward + layer_norms "
         f"({counts['attention']} + {counts['feed_forward']} + {counts['layer_norms']})")


def test_heads_change_nothing(student):
    """splitting d_model = 16 into 1, 2, 4, 8 or 16 heads gives the same counts"""
    totals = {h: _count(student, 100, 16, 2, h, 64)["total"] for h in (1, 2, 4, 8, 16)}
    that(len(set(totals.values())) == 1,
         f"the total should not depend on the number of heads (h x d_k = d_model), got {totals}. Likely "
         "mistake: the attention count grows with the number of heads; all heads together have "
         "3 x d_model x d_model")


def test_without_layer_norms(student):
    """layer_norm=False: no layer-norm parameters, and nothing else changes"""
    with_ln = _count(student, 100, 16, 2, 4, 64)
    without = _count(student, 100, 16, 2, 4, 64, layer_norm=False)
    that(without["layer_norms"] == 0, f"layer_norms should be 0 with layer_norm=False, got {without['layer_norms']}")
    that(without["attention"] == with_ln["attention"] and without["feed_forward"] == with_ln["feed_forward"],
         "switching off the layer norms should not change the attention or feed-forward counts")


def test_more_layers_cost_more(student):
    """each extra block adds exactly per_layer parameters"""
    two = _count(student, 100, 16, 2, 4, 64)
    three = _count(student, 100, 16, 3, 4, 64)
    extra = three["total"] - two["total"] - two["per_layer"]
    that(extra == 0, f"a third block should add per_layer = {two['per_layer']}, added {three['total'] - two['total']}",
         *((TOKEN_TABLE_PER_BLOCK, "count-token-table-per-block") if extra == 100 * 16 else ()))


def test_an_untied_output_layer(student):
    """tied_unembedding=False adds one d_model x vocab matrix to the total, and nothing to the embeddings"""
    tied = _count(student, 1000, 64, 2, 4, 256)
    untied = _count(student, 1000, 64, 2, 4, 256, tied_unembedding=False)
    equal(untied["embeddings"], tied["embeddings"], "embeddings with an untied output layer (vocab 1,000, "
          "d_model 64)", mistakes=[("count-output-in-embeddings", "the output layer was put into `embeddings`; they are the token and position "
                                    "tables only", tied["embeddings"] + 64_000)])
    short = tied["embeddings"] + 2 * tied["per_layer"] - tied["total"]     # what the tied total lacks
    equal(untied["total"] - tied["total"], 64_000, "total untied minus total tied (vocab 1,000, d_model 64)",
          mistakes=[("count-tied-table-subtracted", TIED_SUBTRACTED, 128_000 if short == 64_000 else None),
                    ("count-output-layer-twice", "the untied output layer was counted twice", 128_000),
                    ("count-untied-output-left-out", "tied_unembedding=False changed nothing: an untied output layer "
                     "is a d_model x vocab matrix of its own, and the total must count it", 0)])


@weight(3)
def test_attention_chapter_model(student):
    """the attention chapter's six-layer model (vocab 50,000, d_model 512, 8 heads, d_ff 2,048): 44,502,016"""
    expected = {"attention": ATT["attn"], "feed_forward": ATT["ffn"], "layer_norms": ATT["layer_norms"],
                "per_layer": ATT["one_layer"], "embeddings": ATT["embeddings"], "total": ATT["total"]}
    _check(student, (ATT["V"], ATT["D"], ATT["L"], ATT["h"], ATT["H"]), {}, expected,
           "the attention chapter's model", "the notebook")


@weight(2)
def test_tiny_model(student):
    """the tiny model without layer norms: 172"""
    expected = {"attention": TINY["attn"], "feed_forward": TINY["ffn"], "layer_norms": 0,
                "embeddings": TINY["embedding_tied"], "total": TINY["total"]}
    _check(student, (8, 4, 1, 2, 8), {"layer_norm": False}, expected, "the tiny model", "the notebook")


@weight(2)
def test_gpt2_small_in_the_table(student):
    """GPT-2 small without layer norms, as in the chapter's table: 123,578,112"""
    m = GPT2_SMALL
    _check(student, (m["vocab"], m["d_model"], m["layers"], m["heads"], m["d_ff"]), {"layer_norm": False},
           {"per_layer": m["block"], "embeddings": m["embeddings"], "total": m["total"]},
           "GPT-2 small in the table", "the notebook")


def test_each_convention_on_the_other_s_model(student):
    """188 for the tiny model with layer norms, 44,489,728 for the six-layer model without"""
    equal(_count(student, 8, 4, 1, 2, 8)["total"], CONVENTIONS["tiny_model"]["attention_py_rule"],
          "the tiny model with layer norms: total", source="the notebook",
          mistakes=[("count-one-norm-per-block", "the layer norms were counted as 2 x d_model per block: a block "
                     "has two norms, each with a gain and a shift of d_model", TINY["total"] + 8)])
    equal(_count(student, ATT["V"], ATT["D"], ATT["L"], ATT["h"], ATT["H"], layer_norm=False)["total"],
          CONVENTIONS["attention_chapter_model"]["tiny_transformer_py_rule"],
          "the six-layer model without layer norms: total", source="the notebook")


@weight(3)
def test_gpt2_small_for_real(student):
    """GPT-2 small with every part it really has (Q/K/V and W_O biases, final norm, 1,024 learned positions): 124,439,808"""
    d, vocab, layers = 768, 50257, 12
    got = _count(student, vocab, d, layers, 12, 3072, qkv_bias=True, out_bias=True, context=1024, final_norm=True)
    equal(got["attention"], 4 * d * d + 4 * d, "GPT-2 small: attention of one block, biases included",
          source="the notebook's rules",
          mistakes=[("count-qkv-bias-once", "the query/key/value biases were counted once (d_model); there are three (3 x d_model)",
                     4 * d * d + 2 * d),
                    ("count-qkv-bias-head-width", "the query/key/value biases were counted as 3 x d_k, one head's "
                     "width; the heads' biases side by side are 3 x d_model", 4 * d * d + 3 * (d // 12) + d),
                    *[("count-bias-per-head", "a bias was counted per head: the heads' biases side by side are d_model long",
                       4 * d * d + qkv * d + out * d) for qkv, out in ((3 * 12, 1), (3, 12), (3 * 12, 12))],
                    ("count-bias-switches-ignored", "the switches qkv_bias and out_bias were ignored", 4 * d * d)])
    equal(got["embeddings"], (vocab + 1024) * d, "GPT-2 small: embeddings (tokens and 1,024 positions)",
          source="the notebook's rules",
          mistakes=[("count-without-positions", "the learned position table (context x d_model) was left out", vocab * d)])
    equal(got["total"], GPT2_RELEASED, "GPT-2 small, every part switched on: total", source="the released model",
          mistakes=[("count-final-norm-per-block", "the final layer norm was counted once per block; there is one, after the last block",
                     GPT2_RELEASED + (layers - 1) * 2 * d),
                    ("count-positions-per-block", "the position table was counted once per block; there is one, at the input",
                     GPT2_RELEASED + (layers - 1) * 1024 * d),
                    ("count-without-final-norm", "the final layer norm (2 x d_model) was left out", GPT2_RELEASED - 2 * d),
                    ("count-final-norm-half", FINAL_NORM_HALF, GPT2_RELEASED - d)])


FINAL_NORM_HALF = ("the final layer norm was counted as d_model; like every layer norm it has a gain and a shift, "
                   "2 x d_model")
