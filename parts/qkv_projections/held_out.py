"""Held-out mistakes of part qkv_projections: written after the diagnoses, and never used to write one.

Each entry names the catalogue id its diagnosis must carry (``mistake``); tests/test_mutants.py
measures how many of these the first sentence of the part's reason names.
"""

MISTAKES = {
    "keys-copied-from-queries": {"mistake": "projections-share-a-matrix", "cells": {"project_qkv": '''
def project_qkv(x, W_q, W_k, W_v):
    x = np.asarray(x, dtype=float)
    return x @ W_q, x @ W_q, x @ W_v
'''}},
    "mask-triu-from-zero": {"mistake": "mask-without-diagonal", "cells": {"causal_attention": '''
def causal_attention(Q, K, V):
    scores = Q @ K.T / np.sqrt(Q.shape[1])
    scores = np.where(np.triu(np.ones(scores.shape, dtype=bool)), -np.inf, scores)
    weights = softmax(scores)
    return weights @ V, weights
'''}},
    "softmax-axis-zero": {"mistake": "softmax-over-queries", "cells": {"causal_attention": '''
def causal_attention(Q, K, V):
    scores = Q @ K.T / np.sqrt(Q.shape[1])
    scores = np.where(np.tril(np.ones(scores.shape, dtype=bool)), scores, -np.inf)
    weights = softmax(scores, axis=0)
    return weights @ V, weights
'''}},
    "heads-reversed": {"mistake": "heads-in-reverse-order", "cells": {"multi_head_attention": '''
def multi_head_attention(x, heads, W_o):
    outputs = [causal_attention(*project_qkv(x, *head))[0] for head in reversed(heads)]
    return np.concatenate(outputs, axis=1) @ W_o
'''}},
    "query-scaled-in-place": {"mistake": "in-place", "cells": {"causal_attention": '''
def causal_attention(Q, K, V):
    Q /= np.sqrt(Q.shape[1])
    scores = Q @ K.T
    scores = np.where(np.tril(np.ones(scores.shape, dtype=bool)), scores, -np.inf)
    weights = softmax(scores)
    return weights @ V, weights
'''}},
    # Held-out mistakes taken from real public code (translated to this notebook's signatures).
    "scale-by-all-features-vit-cifar": {"mistake": "scores-scaled-wrongly",
        "source": "omihub777/ViT-CIFAR@https://github.com/omihub777/ViT-CIFAR/pull/11:vit.py — "
                  "self.sqrt_d = self.feats**0.5, the whole width d_model instead of the head width d_k",
        "cells": {"multi_head_attention": """
def multi_head_attention(x, heads, W_o):
    x = np.asarray(x, dtype=float)
    n, sqrt_d = x.shape[0], x.shape[1] ** 0.5
    allowed = np.tril(np.ones((n, n), dtype=bool))
    outputs = []
    for W_q, W_k, W_v in heads:
        Q, K, V = project_qkv(x, W_q, W_k, W_v)
        weights = softmax(np.where(allowed, Q @ K.T / sqrt_d, -np.inf), axis=-1)
        outputs.append(weights @ V)
    return np.concatenate(outputs, axis=-1) @ np.asarray(W_o, dtype=float)
"""}},
    "scale-by-head-count-tt-metal": {"mistake": "scores-scaled-wrongly",
        "source": "tenstorrent/tt-metal@https://github.com/tenstorrent/tt-metal/pull/56789:"
                  "ttnn/tutorials (CLIP MultiHeadAttention) — scores scaled by 1/sqrt(num_heads), not 1/sqrt(head_dim)",
        "cells": {"multi_head_attention": """
def multi_head_attention(x, heads, W_o):
    x = np.asarray(x, dtype=float)
    n, scale = x.shape[0], 1 / math.sqrt(len(heads))
    allowed = np.tril(np.ones((n, n), dtype=bool))
    outputs = []
    for W_q, W_k, W_v in heads:
        Q, K, V = project_qkv(x, W_q, W_k, W_v)
        weights = softmax(np.where(allowed, (Q @ K.T) * scale, -np.inf), axis=-1)
        outputs.append(weights @ V)
    return np.concatenate(outputs, axis=-1) @ np.asarray(W_o, dtype=float)
"""}},
    "mask-fill-plus-epsilon-gluonts": {"mistake": "mask-fill-not-minus-inf",
        "source": "awslabs/gluonts@https://github.com/awslabs/gluonts/pull/1401:src/gluonts/nursery (TFT attention) — "
                  "blocked scores filled with 1e-9 instead of -1e9",
        "cells": {"causal_attention": """
def causal_attention(Q, K, V):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    n, d_k = Q.shape[-2], Q.shape[-1]
    scores = Q @ np.swapaxes(K, -1, -2) / math.sqrt(d_k)
    allowed = np.tril(np.ones((n, n), dtype=bool))
    weights = softmax(np.where(allowed, scores, 1e-9), axis=-1)
    return weights @ V, weights
"""}},

    # A second harvest from real public code, measured after the diagnoses above were written and
    # never used to write one.
    "heads-reshaped-without-permute-ajhalthor": {"mistake": "heads-merged-without-transpose",
        "source": "ajhalthor/Transformer-Neural-Network@https://github.com/ajhalthor/Transformer-Neural-Network/pull/4:"
                  "transformer.py — values (batch, heads, seq, head_dim) reshaped to (batch, seq, heads * head_dim) "
                  "without the permute",
        "cells": {"multi_head_attention": """
def multi_head_attention(x, heads, W_o):
    x = np.asarray(x, dtype=float)
    values = np.stack([causal_attention(*project_qkv(x, *head))[0] for head in heads])   # (heads, seq, d_v)
    return values.reshape(x.shape[0], -1) @ np.asarray(W_o, dtype=float)
"""}},
    "no-linear-after-concat-kyubyong": {"mistake": "no-output-projection",
        "source": "Kyubyong/transformer@https://github.com/Kyubyong/transformer/issues/117:modules.py — multihead_attention "
                  "restored the concatenated heads and returned them with no output projection",
        "cells": {"multi_head_attention": """
def multi_head_attention(x, heads, W_o):
    return np.concatenate([causal_attention(*project_qkv(x, *head))[0] for head in heads], axis=1)
"""}},
    "scale-by-embed-size-aladdinpersson": {"mistake": "scores-scaled-wrongly",
        "source": "aladdinpersson/Machine-Learning-Collection@https://github.com/aladdinpersson/Machine-Learning-Collection/issues/65 — "
                  "torch.softmax(energy / (self.embed_size ** (1 / 2)), dim=3): the whole width, not head_dim",
        "cells": {"multi_head_attention": """
def multi_head_attention(x, heads, W_o):
    x = np.asarray(x, dtype=float)
    n, embed_size = x.shape
    outputs = []
    for W_q, W_k, W_v in heads:
        Q, K, V = project_qkv(x, W_q, W_k, W_v)
        energy = np.where(np.tril(np.ones((n, n), dtype=bool)), Q @ K.T, -np.inf)
        outputs.append(softmax(energy / embed_size ** (1 / 2), axis=-1) @ V)
    return np.concatenate(outputs, axis=-1) @ np.asarray(W_o, dtype=float)
"""}},

    # A third harvest from real public code, measured after the diagnoses written from the second one,
    # and never used to write one.
    "values-times-weights-bottleneck": {"mistake": "weights-transposed-on-values",
        "source": "leaderj1001/BottleneckTransformers@https://github.com/leaderj1001/BottleneckTransformers/issues/14 — "
                  "out = torch.matmul(v, attention) proposed for channels-first values, without the permute of the "
                  "weights: each output mixes the values with the transposed weights",
        "cells": {"causal_attention": """
def causal_attention(Q, K, V):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    n = Q.shape[0]
    scores = np.where(np.tril(np.ones((n, n), dtype=bool)), Q @ K.T / math.sqrt(Q.shape[1]), -np.inf)
    weights = softmax(scores, axis=-1)
    return (V.T @ weights).T, weights          # values kept channels-first, (d_v, n)
"""}},
    "scale-sign-reversed-maxtext": {"mistake": "scores-scaled-wrongly",
        "source": "AI-Hypercomputer/maxtext@https://github.com/AI-Hypercomputer/maxtext/issues/1370:MaxText/layers/attentions.py — "
                  "softmax_scale = qk_head_dim ** -0.5 used as a divisor (the sign of the exponent reversed)",
        "cells": {"causal_attention": """
def causal_attention(Q, K, V):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    n, softmax_scale = Q.shape[0], Q.shape[1] ** -0.5
    scores = np.where(np.tril(np.ones((n, n), dtype=bool)), Q @ K.T / softmax_scale, -np.inf)
    weights = softmax(scores, axis=-1)
    return weights @ V, weights
"""}},
    "scaled-scores-unused-rabitqcache": {"mistake": "scores-not-scaled",
        "source": "Sakuraaa0/RaBitQCache@https://github.com/Sakuraaa0/RaBitQCache/pull/1 — scaled_scores = scores / "
                  "sqrt(head_size) computed, then the softmax applied to the unscaled scores",
        "cells": {"causal_attention": """
def causal_attention(Q, K, V):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    n = Q.shape[0]
    scores = np.where(np.tril(np.ones((n, n), dtype=bool)), Q @ K.T, -np.inf)
    scaled_scores = scores / math.sqrt(Q.shape[1])
    weights = softmax(scores, axis=-1)
    return weights @ V, weights
"""}},
    "temper-of-d-model-jadore801120": {"mistake": "scores-scaled-wrongly",
        "source": "jadore801120/attention-is-all-you-need-pytorch@https://github.com/jadore801120/attention-is-all-you-need-pytorch/issues/42 "
                  "(fixed in 1929a50) — temper = np.power(d_model, 0.5): the scores divided by sqrt(d_model), not sqrt(d_k)",
        "cells": {"multi_head_attention": """
def multi_head_attention(x, heads, W_o):
    x = np.asarray(x, dtype=float)
    n, temper = x.shape[0], np.power(x.shape[1], 0.5)
    outputs = []
    for W_q, W_k, W_v in heads:
        Q, K, V = project_qkv(x, W_q, W_k, W_v)
        attn = softmax(np.where(np.tril(np.ones((n, n), dtype=bool)), Q @ K.T / temper, -np.inf), axis=-1)
        outputs.append(attn @ V)
    return np.concatenate(outputs, axis=-1) @ np.asarray(W_o, dtype=float)
"""}},
    # A fourth harvest from real public code, measured after the diagnoses written from the third one,
    # and never used to write one.
    "head-scaled-by-embedding-width-ng-video": {"mistake": "scores-scaled-wrongly",
        "source": "karpathy/ng-video-lecture@https://github.com/karpathy/ng-video-lecture/pull/6 — a head's scores were "
                  "scaled by C ** -0.5, the embedding width, not by its own head size",
        "cells": {"multi_head_attention": """
def multi_head_attention(x, heads, W_o):
    x = np.asarray(x, dtype=float)
    T, C = x.shape
    tril = np.tril(np.ones((T, T)))
    outputs = []
    for W_q, W_k, W_v in heads:
        q, k, v = x @ W_q, x @ W_k, x @ W_v
        wei = q @ k.T * C ** -0.5
        wei = np.where(tril == 0, -np.inf, wei)
        outputs.append(softmax(wei, axis=-1) @ v)
    return np.concatenate(outputs, axis=-1) @ W_o
"""}},
    "scaled-by-all-heads-width-set-transformer": {"mistake": "scores-scaled-wrongly",
        "source": "juho-lee/set_transformer@https://github.com/juho-lee/set_transformer/issues/18 — the scores were "
                  "divided by sqrt(dim_V), the width of all heads together, not by one head's",
        "cells": {"multi_head_attention": """
def multi_head_attention(x, heads, W_o):
    x = np.asarray(x, dtype=float)
    dim_V = sum(np.shape(W_v)[1] for _, _, W_v in heads)
    outputs = []
    for W_q, W_k, W_v in heads:
        Q, K, V = project_qkv(x, W_q, W_k, W_v)
        scores = Q @ K.T / math.sqrt(dim_V)
        n = scores.shape[0]
        scores = np.where(np.tril(np.ones((n, n), dtype=bool)), scores, -np.inf)
        outputs.append(softmax(scores, axis=-1) @ V)
    return np.concatenate(outputs, axis=-1) @ W_o
"""}},
    "heads-without-output-projection-translob": {"mistake": "no-output-projection",
        "source": "jwallbridge/translob@https://github.com/jwallbridge/translob/issues/4 — the heads were concatenated "
                  "and the final learnt linear transformation W_O was missing",
        "cells": {"multi_head_attention": """
def multi_head_attention(x, heads, W_o):
    outputs = [causal_attention(*project_qkv(x, *head))[0] for head in heads]
    return np.concatenate(outputs, axis=-1)
"""}},
    "heads-viewed-without-permute-qanet": {"mistake": "heads-merged-without-transpose",
        "source": "hackiey/QAnet-pytorch@https://github.com/hackiey/QAnet-pytorch/issues/2:qanet/self_attention.py — the "
                  "heads, stacked (heads, length, width), were viewed as (length, -1) without a permute first",
        "cells": {"multi_head_attention": """
def multi_head_attention(x, heads, W_o):
    outputs = [causal_attention(*project_qkv(x, W_q, W_k, W_v))[0] for W_q, W_k, W_v in heads]
    stacked = np.stack(outputs)                       # (heads, n, d_v)
    return stacked.reshape(stacked.shape[1], -1) @ np.asarray(W_o, dtype=float)
"""}},
    "softmax-over-queries-vit-notebook": {"mistake": "softmax-over-queries",
        "source": "nerminnuraydogan/vision-transformer@https://github.com/nerminnuraydogan/vision-transformer/issues/1 — "
                  "the attention weights' softmax was taken along the wrong dimension, not the last (the keys)",
        "cells": {"causal_attention": """
def causal_attention(Q, K, V):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    n, d_k = Q.shape[-2], Q.shape[-1]
    scores = Q @ np.swapaxes(K, -1, -2) / math.sqrt(d_k)
    scores = np.where(np.tril(np.ones((n, n), dtype=bool)), scores, -np.inf)
    weights = softmax(scores, axis=-2)
    return weights @ V, weights
"""}},
}
