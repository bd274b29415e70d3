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

    # A second harvest from real public code, measured after the diagnoses above were written and
    # never used to write one.
    "one-norm-per-block-ai-foundations": {"mistake": "count-one-norm-per-block",
        "source": "google-deepmind/ai-foundations@https://github.com/google-deepmind/ai-foundations/issues/37:"
                  "course_4/gdm_lab_4_5_reflection_on_trainable_parameters.ipynb — layer_norm_parameter_count = "
                  "2 * embedding_dim for a block with two layer norms",
        "cells": {"transformer_parameters": _counting(norms="2 * d_model * layer_norm")}},
    "positions-left-out-modernbert": {"mistake": "count-without-positions",
        "source": "AnswerDotAI/ModernBERT@https://github.com/AnswerDotAI/ModernBERT/pull/67 (after nanoGPT's get_num_params) — "
                  "the count leaves out the absolute position embeddings",
        "cells": {"transformer_parameters": _counting(embeddings="vocab * d_model")}},
    "tied-table-counted-in-each-copy-bigscience": {"mistake": "count-tied-output-layer",
        "source": "bigscience-workshop/Megatron-DeepSpeed@https://github.com/bigscience-workshop/Megatron-DeepSpeed/issues/99 — "
                  "tied embedding layers exist in two copies (first and last stage) and both were counted",
        "cells": {"transformer_parameters": _counting(unembedding="vocab * d_model")}},
    "embedding-and-head-always-aiinfraguide": {"mistake": "count-tied-output-layer",
        "source": "caomaolufei/AIInfraGuide@https://github.com/caomaolufei/AIInfraGuide/issues/15 — the embedding "
                  "parameters given as 2 V d_model (embedding plus LM head) whether or not the head is tied",
        "cells": {"transformer_parameters": _counting(embeddings="2 * vocab * d_model + context * d_model",
                                                       unembedding="0")}},
}
