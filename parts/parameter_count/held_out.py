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
    "tied-table-counted-in-each-copy-bigscience": {"mistake": "count-tied-output-layer",
        "source": "bigscience-workshop/Megatron-DeepSpeed@https://github.com/bigscience-workshop/Megatron-DeepSpeed/issues/99 — "
                  "tied embedding layers exist in two copies (first and last stage) and both were counted",
        "cells": {"transformer_parameters": _counting(unembedding="vocab * d_model")}},
    # A third harvest from real public code, measured after the diagnoses written from the second one,
    # and never used to write one.
    "norm-weight-only-megatron": {"mistake": "count-one-norm-per-block",
        "source": "NVIDIA/Megatron-LM@https://github.com/NVIDIA/Megatron-LM/pull/2434 — the theoretical count took a "
                  "LayerNorm as its weight alone (times 1), where it has a weight and a bias (times 2)",
        "cells": {"transformer_parameters": _counting(norms="2 * d_model * layer_norm")}},
    "final-norm-omitted-mlx-node": {"mistake": "count-without-final-norm",
        "source": "mlx-node/mlx-node@https://github.com/mlx-node/mlx-node/pull/19:crates/mlx-core/src/models/qwen3_5/model.rs — "
                  "num_parameters() never counted final_norm, which sits outside the per-layer loop",
        "cells": {"transformer_parameters": _counting().replace(" + 2 * d_model * final_norm", "")}},
    "linear-bias-not-counted-exllamav3": {"mistake": "count-without-ffn-biases",
        "source": "turboderp-org/exllamav3@https://github.com/turboderp-org/exllamav3/pull/194 — the size estimate of a "
                  "Linear layer counted its weight elements, not its bias",
        "cells": {"transformer_parameters": _counting(attention="4 * d_model * d_model").replace(
            "feed_forward = 2 * d_model * d_ff + (d_ff + d_model) * ffn_bias", "feed_forward = 2 * d_model * d_ff")}},
    # A fourth harvest from real public code, measured after the diagnoses written from the third one,
    # and never used to write one.
    "tied-head-counted-mlx-node": {"mistake": "count-tied-output-layer",
        "source": "mlx-node/mlx-node@https://github.com/mlx-node/mlx-node/pull/21 — num_parameters() counted the LM head "
                  "even when tie_word_embeddings is true",
        "cells": {"transformer_parameters": _counting(unembedding="vocab * d_model")}},
    "position-table-left-out-nanogpt": {"mistake": "count-without-positions",
        "source": "karpathy/nanoGPT@https://github.com/karpathy/nanoGPT/pull/209:model.py — get_num_params subtracted the "
                  "position embeddings from the count, so the learned position table was not in the total",
        "cells": {"transformer_parameters": _counting(embeddings="vocab * d_model")}},
}
