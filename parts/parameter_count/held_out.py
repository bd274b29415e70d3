"""Held-out mistakes of part parameter_count: written after the diagnoses, and never used to write one.

Each entry names the catalogue id its diagnosis must carry (``mistake``); tests/test_mutants.py
measures how many of these the first sentence of the part's reason names.
"""

_SIGNATURE = '''def transformer_parameters(vocab, d_model, n_layers, n_heads, d_ff, *, layer_norm=True,
                           ffn_bias=True, qkv_bias=False, out_bias=False,
                           tied_unembedding=True, context=0, final_norm=False):'''


def _counting(attention="4 * d_model * d_model + 3 * d_model * qkv_bias + d_model * out_bias",
              norms="4 * d_model * layer_norm", embeddings="vocab * d_model + context * d_model",
              unembedding="0 if tied_unembedding else vocab * d_model"):
    return f'''
{_SIGNATURE}
    attention = {attention}
    feed_forward = 2 * d_model * d_ff + (d_ff + d_model) * ffn_bias
    layer_norms = {norms}
    per_layer = attention + feed_forward + layer_norms
    embeddings = {embeddings}
    unembedding = {unembedding}
    return {{"attention": attention, "feed_forward": feed_forward, "layer_norms": layer_norms,
            "per_layer": per_layer, "embeddings": embeddings,
            "total": embeddings + n_layers * per_layer + 2 * d_model * final_norm + unembedding}}
'''


MISTAKES = {
    "head-width-as-float": {"mistake": "counts-as-floats", "cells": {"transformer_parameters": _counting(
        attention="3 * n_heads * (d_model / n_heads) * d_model + d_model * d_model + 3 * d_model * qkv_bias "
                  "+ d_model * out_bias")}},
    "norm-gains-only": {"mistake": "count-one-norm-per-block", "cells": {"transformer_parameters": _counting(
        norms="2 * d_model * layer_norm")}},
    "untied-output-in-embeddings-too": {"mistake": "count-output-in-embeddings",
        "cells": {"transformer_parameters": _counting(
            embeddings="vocab * d_model + context * d_model + (0 if tied_unembedding else vocab * d_model)",
            unembedding="0")}},
    "no-attention-output-matrix": {"mistake": "count-without-output-projection",
        "cells": {"transformer_parameters": _counting(
            attention="3 * d_model * d_model + 3 * d_model * qkv_bias + d_model * out_bias")}},
    # Held-out mistakes taken from real public code (translated to this notebook's signatures).
    "tied-table-counted-twice-llama2c": {"mistake": "count-tied-output-layer",
        "source": "karpathy/llama2.c@https://github.com/karpathy/llama2.c/issues/378 — the state dict's numel summed, "
                  "so the output layer tied to the token table was counted a second time",
        "cells": {"transformer_parameters": _counting(unembedding="vocab * d_model")}},
    "biases-not-counted-netscope": {"mistake": "count-without-ffn-biases",
        "source": "dgschwend/netscope@https://github.com/dgschwend/netscope/issues/17 (fixed in 009a9f8) — "
                  "a layer's parameters counted as its weights only, the bias left out",
        "cells": {"transformer_parameters": _counting().replace(
            "feed_forward = 2 * d_model * d_ff + (d_ff + d_model) * ffn_bias", "feed_forward = 2 * d_model * d_ff")}},
}
