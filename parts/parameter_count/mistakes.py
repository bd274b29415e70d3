"""Part parameter_count: realistic counting mistakes, and correct counts written differently.

Each entry replaces whole solution cells of the reference notebook. Every
mistake must lose points in this part and only this part; every correct
variant must earn full marks. Entries marked ``demo`` are students of the
`course demo` cohort.
"""

_SIGNATURE = '''def transformer_parameters(vocab, d_model, n_layers, n_heads, d_ff, *, layer_norm=True,
                           ffn_bias=True, qkv_bias=False, out_bias=False,
                           tied_unembedding=True, context=0, final_norm=False):'''


def _counting(attention="4 * d_model * d_model + 3 * d_model * qkv_bias + d_model * out_bias",
              feed_forward="2 * d_model * d_ff + (d_ff + d_model) * ffn_bias",
              norms="4 * d_model * layer_norm",
              embeddings="vocab * d_model + context * d_model",
              final="2 * d_model * final_norm",
              unembedding="0 if tied_unembedding else vocab * d_model"):
    """The reference count with one expression swapped for a mistaken one."""
    return f'''
{_SIGNATURE}
    attention = {attention}
    feed_forward = {feed_forward}
    layer_norms = {norms}
    per_layer = attention + feed_forward + layer_norms
    embeddings = {embeddings}
    final = {final}
    unembedding = {unembedding}
    return {{"attention": attention, "feed_forward": feed_forward, "layer_norms": layer_norms,
            "per_layer": per_layer, "embeddings": embeddings,
            "total": embeddings + n_layers * per_layer + final + unembedding}}
'''


MISTAKES = {
    "no-ffn-bias": {"mistake": "count-without-ffn-biases", "warned": "with ffn_bias their biases, d_ff and d_model",
        "demo": True, "cells": {"transformer_parameters": _counting(
        feed_forward="2 * d_model * d_ff")}},
    "one-norm-per-block": {"mistake": "count-one-norm-per-block", "warned": "two per block ... so 4 d_model per block",
        "cells": {"transformer_parameters": _counting(
        norms="2 * d_model * layer_norm")}},
    "two-per-norm": {"mistake": "count-norm-as-scalars", "warned": "each with a gain and a shift of width d_model",
        "cells": {"transformer_parameters": _counting(
        norms="2 * 2 * layer_norm")}},
    "tied-output-counted": {"mistake": "count-tied-output-layer", "warned": "With tied_unembedding=True the output layer reuses the token table and costs nothing",
        "cells": {"transformer_parameters": _counting(
        unembedding="vocab * d_model")}},
    "heads-multiply-attention": {"mistake": "count-grows-with-heads", "warned": "the number of heads changes nothing",
        "cells": {"transformer_parameters": _counting(
        attention="n_heads * 3 * d_model * d_model + d_model * d_model + 3 * d_model * qkv_bias + d_model * out_bias")}},
    "attention-without-w-o": {"mistake": "count-without-output-projection", "warned": "W_O adds d_model^2",
        "cells": {"transformer_parameters": _counting(
        attention="3 * d_model * d_model + 3 * d_model * qkv_bias")}},
    "final-norm-per-layer": {"mistake": "count-final-norm-per-block", "warned": "final_norm=True adds one more after the last block",
        "cells": {"transformer_parameters": _counting(
        final="n_layers * 2 * d_model * final_norm")}},
    "qkv-bias-once": {"mistake": "count-qkv-bias-once", "warned": "one bias vector for the queries, one for the keys and one for the values",
        "cells": {"transformer_parameters": _counting(
        attention="4 * d_model * d_model + d_model * qkv_bias + d_model * out_bias")}},
    "positions-per-layer": {"mistake": "count-positions-per-block", "warned": "a learned position table (context x d_model)",
        "cells": {"transformer_parameters": _counting(
        embeddings="vocab * d_model + n_layers * context * d_model")}},
    "chapter-table-hard-coded": {"mistake": "count-switches-ignored", "cells": {"transformer_parameters": f'''
{_SIGNATURE}
    attention = 4 * d_model * d_model
    feed_forward = 2 * d_model * d_ff + d_ff + d_model
    layer_norms = 4 * d_model if layer_norm else 0
    per_layer = attention + feed_forward + layer_norms
    embeddings = vocab * d_model
    return {{"attention": attention, "feed_forward": feed_forward, "layer_norms": layer_norms,
            "per_layer": per_layer, "embeddings": embeddings,
            "total": embeddings + n_layers * per_layer}}
'''}},
    "qkv-bias-per-head": {"mistake": "count-bias-per-head", "warned": "3 d_model in all, however many heads", "cells": {"transformer_parameters": _counting(
        attention="4 * d_model * d_model + 3 * n_heads * d_model * qkv_bias + d_model * out_bias")}},
    "untied-output-counted-twice": {"mistake": "count-output-in-embeddings", "warned": "embeddings: the token table plus the learned position table",
        "cells": {"transformer_parameters": _counting(
            embeddings="vocab * d_model + context * d_model + (0 if tied_unembedding else vocab * d_model)")}},
    "qkv-bias-head-width": {"mistake": "count-qkv-bias-head-width", "warned": "3 d_model in all, however many heads", "cells": {"transformer_parameters": _counting(
        attention="4 * d_model * d_model + 3 * (d_model // n_heads) * qkv_bias + d_model * out_bias")}},
    "output-layer-counted-twice": {"mistake": "count-output-layer-twice", "warned": "otherwise it is a second d_model x vocab matrix",
        "cells": {"transformer_parameters": _counting(unembedding="0 if tied_unembedding else 2 * vocab * d_model")}},
    "counts-as-floats": {"warned": "returns a dict with integer counts", "cells": {"transformer_parameters": _counting(
        attention="4.0 * d_model * d_model + 3 * d_model * qkv_bias + d_model * out_bias",
        feed_forward="2.0 * d_model * d_ff + (d_ff + d_model) * ffn_bias",
        norms="4.0 * d_model * layer_norm", embeddings="float(vocab * d_model + context * d_model)")}},
    "final-norm-always": {"mistake": "count-final-norm-unasked", "warned": "final_norm=True adds one more after the last block",
        "cells": {"transformer_parameters": _counting(final="2 * d_model")}},
    "output-bias-per-head": {"mistake": "count-bias-per-head", "cells": {"transformer_parameters": _counting(
        attention="4 * d_model * d_model + 3 * d_model * qkv_bias + n_heads * d_model * out_bias")}},
    # Taken from real public code (held out until their diagnoses were written).
    "untied-head-assumed-tied-vllm-fit": {"mistake": "count-untied-output-left-out",
        "source": "jranaraki/vllm-fit@https://github.com/jranaraki/vllm-fit/issues/27:src/vllm_fit/estimator.py — "
                  "_estimate_param_count assumes a tied output head and misses the output matrix when it is untied",
        "cells": {"transformer_parameters": _counting(unembedding="0")}},
    "embeddings-left-out-transnormer": {"mistake": "count-without-embeddings",
        "source": "OpenNLPLab/TransnormerLLM@https://github.com/OpenNLPLab/TransnormerLLM/issues/6 — "
                  "the total counted the blocks only, the embedding table left out (the maintainer pointed it out)",
        "cells": {"transformer_parameters": _counting().replace(
            "\"total\": embeddings + n_layers", "\"total\": n_layers")}},
    "token-table-per-layer-scaling-book": {"mistake": "count-token-table-per-block",
        "source": "jax-ml/scaling-book@https://github.com/jax-ml/scaling-book/pull/34:inference.md — the total was "
                  "L * D * (3F + 2H(N + K) + V): the vocabulary table D * V counted once per layer",
        "cells": {"transformer_parameters": _counting(embeddings="n_layers * vocab * d_model + context * d_model")}},
    "tied-table-subtracted-again-torchtitan": {"mistake": "count-tied-table-subtracted",
        "source": "pytorch/torchtitan@https://github.com/pytorch/torchtitan/pull/3225:torchtitan/models/utils.py — "
                  "with tied embeddings the shared table, already counted once, was subtracted again",
        "cells": {"transformer_parameters": _counting(
            unembedding="-vocab * d_model if tied_unembedding else vocab * d_model")}},
    "block-matrices-only-transformerlens": {"mistake": "count-block-matrices-only",
        "source": "TransformerLensOrg/TransformerLens@https://github.com/TransformerLensOrg/TransformerLens/issues/903:"
                  "transformer_lens/HookedTransformerConfig.py — n_params = n_layers * (4 d_model d_head n_heads "
                  "+ 2 d_model d_mlp): no biases, no norms, no embeddings (gpt2-small read as 85M, not 124M)",
        "cells": {"transformer_parameters": f'''
{_SIGNATURE}
    d_head = d_model // n_heads
    attention = d_model * d_head * n_heads * 4
    feed_forward = d_model * d_ff * 2
    layer_norms = 0
    per_layer = attention + feed_forward + layer_norms
    embeddings = vocab * d_model + context * d_model
    return {{"attention": attention, "feed_forward": feed_forward, "layer_norms": layer_norms,
            "per_layer": per_layer, "embeddings": embeddings, "total": n_layers * per_layer}}
'''}},
    "positions-left-out-modernbert": {"mistake": "count-without-positions",
        "source": "AnswerDotAI/ModernBERT@https://github.com/AnswerDotAI/ModernBERT/pull/67 (after nanoGPT's get_num_params) — "
                  "the count leaves out the absolute position embeddings",
        "cells": {"transformer_parameters": _counting(embeddings="vocab * d_model")}},
    "embedding-and-head-always-aiinfraguide": {"mistake": "count-tied-output-layer",
        "source": "caomaolufei/AIInfraGuide@https://github.com/caomaolufei/AIInfraGuide/issues/15 — the embedding "
                  "parameters given as 2 V d_model (embedding plus LM head) whether or not the head is tied",
        "cells": {"transformer_parameters": _counting(embeddings="2 * vocab * d_model + context * d_model",
                                                       unembedding="0")}},

    "linear-biases-always-hkproj": {"mistake": "count-bias-switches-ignored",
        "source": "hkproj/pytorch-transformer@https://github.com/hkproj/pytorch-transformer/issues/4 — w_q, w_k, w_v "
                  "(and w_o) built as nn.Linear(d_model, d_model) with their default biases, where the model has none",
        "cells": {"transformer_parameters": _counting(attention="4 * d_model * d_model + 4 * d_model")}},
    "final-norm-gain-only-cookbook": {"mistake": "count-final-norm-half",
        "source": "EleutherAI/cookbook@https://github.com/EleutherAI/cookbook/pull/48:calc/calc_transformer_params.py — "
                  "the final layer norm was counted as 1 x hidden size; the fix counts its weight and bias, 2 x hidden size",
        "cells": {"transformer_parameters": _counting().replace("2 * d_model * final_norm", "d_model * final_norm")}},
}

CORRECT = {
    "loop-over-layers": {"transformer_parameters": f'''
{_SIGNATURE}
    d_k = d_model // n_heads
    total = vocab * d_model + context * d_model
    if not tied_unembedding:
        total += vocab * d_model
    for layer in range(n_layers):
        attention = 0
        for head in range(n_heads):
            attention += 3 * d_model * d_k + (3 * d_k if qkv_bias else 0)
        attention += d_model * d_model + (d_model if out_bias else 0)
        feed_forward = d_model * d_ff + d_ff * d_model
        if ffn_bias:
            feed_forward += d_ff + d_model
        norms = 2 * (2 * d_model) if layer_norm else 0
        total += attention + feed_forward + norms
    if final_norm:
        total += 2 * d_model
    return {{"attention": attention if n_layers else 0, "feed_forward": feed_forward if n_layers else 0,
            "layer_norms": norms if n_layers else 0,
            "per_layer": (attention + feed_forward + norms) if n_layers else 0,
            "embeddings": vocab * d_model + context * d_model, "total": total}}
'''},
    "dict-from-table": {"transformer_parameters": f'''
{_SIGNATURE}
    shapes = {{
        "attention": [(d_model, d_model)] * 4 + [(3 * d_model,)] * qkv_bias + [(d_model,)] * out_bias,
        "feed_forward": [(d_model, d_ff), (d_ff, d_model)] + [(d_ff,), (d_model,)] * ffn_bias,
        "layer_norms": [(d_model,)] * (4 * layer_norm),
    }}
    counts = {{name: int(sum(np.prod(s) for s in parts)) for name, parts in shapes.items()}}
    counts["per_layer"] = sum(counts.values())
    counts["embeddings"] = int(np.prod((vocab + context, d_model)))
    counts["total"] = (counts["embeddings"] + n_layers * counts["per_layer"]
                       + (0 if tied_unembedding else vocab * d_model) + 2 * d_model * final_norm)
    return dict(sorted(counts.items()))
'''},
    "numpy-integers-and-extras": {"transformer_parameters": f'''
{_SIGNATURE}
    d = np.int64(d_model)
    attention = 4 * d * d + d * (3 * int(qkv_bias) + int(out_bias))
    feed_forward = 2 * d * d_ff + (d + d_ff if ffn_bias else 0)
    layer_norms = np.int64(4) * d if layer_norm else np.int64(0)
    tables = {{"tokens": vocab * d, "positions": context * d, "output": 0 if tied_unembedding else vocab * d}}
    per_layer = attention + feed_forward + layer_norms
    return {{"attention": attention, "feed_forward": feed_forward, "layer_norms": layer_norms,
            "per_layer": per_layer, "embeddings": tables["tokens"] + tables["positions"], "tables": tables,
            "heads": n_heads, "d_k": d_model // n_heads,
            "total": sum(tables.values()) + n_layers * per_layer + (2 * d if final_norm else 0)}}
'''},
    "float32-inputs": {"transformer_parameters": f'''
{_SIGNATURE}
    vocab, d, n_layers, n_heads, d_ff, context = (np.float32(v) for v in
                                                  (vocab, d_model, n_layers, n_heads, d_ff, context))
    vocab, d, n_layers, d_ff, context = (np.float64(v) for v in (vocab, d, n_layers, d_ff, context))
    # counts are whole numbers: float64 holds them exactly, float32 only up to 2**24
    attention = 4 * d * d + 3 * d * qkv_bias + d * out_bias
    feed_forward = 2 * d * d_ff + (d_ff + d) * ffn_bias
    layer_norms = 4 * d * layer_norm
    per_layer = attention + feed_forward + layer_norms
    embeddings = (vocab + context) * d
    total = embeddings + n_layers * per_layer + 2 * d * final_norm + (0 if tied_unembedding else vocab * d)
    counts = {{"attention": attention, "feed_forward": feed_forward, "layer_norms": layer_norms,
              "per_layer": per_layer, "embeddings": embeddings, "total": total}}
    return {{key: int(value) for key, value in counts.items()}}
'''},
}
