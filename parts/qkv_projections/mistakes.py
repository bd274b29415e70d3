"""Part qkv_projections: realistic mistakes, and correct solutions written differently.

Each entry replaces whole solution cells of the reference notebook. Every
mistake must lose points in this part and only this part; every correct
variant must earn full marks. Entries marked ``demo`` are students of the
`course demo` cohort.
"""

MISTAKES = {
    "scale-by-d-model": {"mistake": "scores-scaled-wrongly", "warned": "d_k is the width of this head ... not by sqrt(d_model)",
        "demo": True, "cells": {"multi_head_attention": '''
def multi_head_attention(x, heads, W_o):
    x = np.asarray(x, dtype=float)
    outputs = []
    for W_q, W_k, W_v in heads:
        Q, K, V = x @ W_q, x @ W_k, x @ W_v
        scores = Q @ K.T / np.sqrt(x.shape[1])
        scores[np.triu_indices(len(x), k=1)] = -np.inf
        outputs.append(softmax(scores) @ V)
    return np.hstack(outputs) @ W_o
'''}},
    "no-scale": {"mistake": "scores-not-scaled", "warned": "S = Q K^T / sqrt(d_k)",
        "cells": {"causal_attention": '''
def causal_attention(Q, K, V):
    scores = Q @ K.T
    scores = np.where(np.tril(np.ones(scores.shape, dtype=bool)), scores, -np.inf)
    weights = softmax(scores)
    return weights @ V, weights
'''}},
    "scale-by-length": {"mistake": "scores-scaled-wrongly", "warned": "d_k is the width of this head (the number of columns of Q)",
        "cells": {"causal_attention": '''
def causal_attention(Q, K, V):
    scores = Q @ K.T / np.sqrt(Q.shape[0])
    scores = np.where(np.tril(np.ones(scores.shape, dtype=bool)), scores, -np.inf)
    weights = softmax(scores)
    return weights @ V, weights
'''}},
    "attention-mask-transposed": {"mistake": "mask-transposed", "warned": "token i may look at tokens j <= i only",
        "cells": {"causal_attention": '''
def causal_attention(Q, K, V):
    scores = Q @ K.T / np.sqrt(Q.shape[1])
    scores = np.where(np.triu(np.ones(scores.shape, dtype=bool)), scores, -np.inf)
    weights = softmax(scores)
    return weights @ V, weights
'''}},
    "no-mask": {"mistake": "no-causal-mask", "warned": "token i may look at tokens j <= i only",
        "cells": {"causal_attention": '''
def causal_attention(Q, K, V):
    weights = softmax(Q @ K.T / np.sqrt(Q.shape[1]))
    return weights @ V, weights
'''}},
    "attention-mask-after-softmax": {"mistake": "mask-after-softmax", "warned": "Blocked scores are set to -inf before the softmax, so every row of A still sums to 1",
        "cells": {"causal_attention": '''
def causal_attention(Q, K, V):
    weights = softmax(Q @ K.T / np.sqrt(Q.shape[1]))
    weights = weights * np.tril(np.ones(weights.shape))
    return weights @ V, weights
'''}},
    "softmax-over-queries": {"warned": "the softmax runs along the last axis",
        "cells": {"causal_attention": '''
def causal_attention(Q, K, V):
    scores = Q @ K.T / np.sqrt(Q.shape[1])
    scores = np.where(np.tril(np.ones(scores.shape, dtype=bool)), scores, -np.inf)
    weights = softmax(scores, axis=0)
    return weights @ V, weights
'''}},
    "heads-reversed": {"mistake": "heads-in-reverse-order", "warned": "concatenated in order, head 1's columns first",
        "cells": {"multi_head_attention": '''
def multi_head_attention(x, heads, W_o):
    outputs = [causal_attention(*project_qkv(x, *head))[0] for head in heads]
    return np.concatenate(outputs[::-1], axis=1) @ W_o
'''}},
    "forgot-w-o": {"mistake": "no-output-projection", "warned": "the output projection W_O ... mixes them back",
        "cells": {"multi_head_attention": '''
def multi_head_attention(x, heads, W_o):
    outputs = [causal_attention(*project_qkv(x, *head))[0] for head in heads]
    return np.concatenate(outputs, axis=1)
'''}},
    "heads-averaged": {"mistake": "heads-averaged", "warned": "concatenated in order ... and the output projection W_O",
        "cells": {"multi_head_attention": '''
def multi_head_attention(x, heads, W_o):
    total = 0
    for i, head in enumerate(heads):
        out = causal_attention(*project_qkv(x, *head))[0]
        d = out.shape[1]
        total = total + out @ W_o[i * d:(i + 1) * d]
    return total / len(heads)
'''}},
    "weights-transposed": {"mistake": "matmul-shapes", "warned": "x @ W_q, not W_q @ x and not x @ W_q.T",
        "cells": {"project_qkv": '''
def project_qkv(x, W_q, W_k, W_v):
    return x @ W_q.T, x @ W_k.T, x @ W_v.T
'''}},
    "same-matrix-for-q-and-k": {"mistake": "projections-share-a-matrix", "warned": "a head looks at x through three matrices",
        "cells": {"project_qkv": '''
def project_qkv(x, W_q, W_k, W_v):
    return x @ W_q, x @ W_q, x @ W_v
'''}},
    "zero-instead-of-minus-inf": {"mistake": "mask-fill-not-minus-inf", "warned": "Blocked scores are set to -inf (or a very large negative number)",
        "cells": {"causal_attention": '''
def causal_attention(Q, K, V):
    scores = Q @ K.T / np.sqrt(Q.shape[1])
    weights = softmax(scores * np.tril(np.ones(scores.shape)))
    return weights @ V, weights
'''}},
    "scales-q-in-place": {"mistake": "in-place", "warned": "returns new ones and never changes its inputs",
        "cells": {"causal_attention": '''
def causal_attention(Q, K, V):
    Q /= math.sqrt(Q.shape[1])
    scores = Q @ K.T
    scores[np.triu_indices(len(Q), k=1)] = -np.inf
    weights = softmax(scores)
    return weights @ V, weights
'''}},
    "hard-coded-chapter": {"cells": {"multi_head_attention": '''
def multi_head_attention(x, heads, W_o):
    # the chapter's printed attention output, whatever the input
    return np.array([[-1.7320046213947808, 0.0, 0.0, -1.7320046213947808], [-1.0282743322440009, 0.0, 0.0, 1.2299049709514662], [0.02718839304049411, 0.0, 0.0, 2.0061696741989574], [-0.4903229560748786, 0.0, 0.0, 1.7517940943533918]])
'''}},
    "attention-mask-off-by-one": {"mistake": "mask-off-by-one", "warned": "token i may look at tokens j <= i only", "cells": {"causal_attention": '''
def causal_attention(Q, K, V):
    scores = Q @ K.T / np.sqrt(Q.shape[1])
    scores = np.where(np.tril(np.ones(scores.shape, dtype=bool), k=1), scores, -np.inf)
    weights = softmax(scores)
    return weights @ V, weights
'''}},
    "heads-stacked-as-rows": {"mistake": "matmul-shapes", "warned": "concatenated in order ... into one (n, h d_v) array", "cells": {"multi_head_attention": '''
def multi_head_attention(x, heads, W_o):
    outputs = [causal_attention(*project_qkv(x, *head))[0] for head in heads]
    return np.concatenate(outputs, axis=0) @ W_o
'''}},
    "output-from-keys": {"mistake": "output-mixes-keys", "warned": "output = A V", "cells": {"causal_attention": '''
def causal_attention(Q, K, V):
    scores = Q @ K.T / np.sqrt(Q.shape[1])
    scores = np.where(np.tril(np.ones(scores.shape, dtype=bool)), scores, -np.inf)
    weights = softmax(scores)
    return weights @ K, weights
'''}},
    "mask-of-floats-inverted": {"mistake": "mask-not-boolean", "cells": {"causal_attention": '''
def causal_attention(Q, K, V):
    scores = Q @ K.T / np.sqrt(Q.shape[1])
    scores[~np.tril(np.ones(scores.shape))] = -np.inf
    weights = softmax(scores)
    return weights @ V, weights
'''}},
    "reads-the-notebook-globals": {"mistake": "arguments-ignored", "cells": {"multi_head_attention": '''
def multi_head_attention(x, heads, W_o):
    outputs = []
    for W_q, W_k, W_v in HEADS:                  # the notebook's heads, not the argument
        Q, K, V = project_qkv(x, W_q, W_k, W_v)
        outputs.append(causal_attention(Q, K, V)[0])
    return np.concatenate(outputs, axis=-1) @ W_O
'''}},
    "attention-pair-swapped": {"mistake": "attention-swapped-pair", "cells": {"causal_attention": '''
def causal_attention(Q, K, V):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    n, d_k = Q.shape
    weights = softmax(np.where(np.tril(np.ones((n, n), dtype=bool)), Q @ K.T / math.sqrt(d_k), -np.inf))
    return weights, weights @ V
'''}},
    "weights-transposed-before-the-values": {"mistake": "weights-transposed-on-values", "cells": {"causal_attention": '''
def causal_attention(Q, K, V):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    n, d_k = Q.shape
    weights = softmax(np.where(np.tril(np.ones((n, n), dtype=bool)), Q @ K.T / math.sqrt(d_k), -np.inf))
    return weights.T @ V, weights
'''}},
    "heads-averaged-then-projected": {"mistake": "heads-averaged", "cells": {"multi_head_attention": '''
def multi_head_attention(x, heads, W_o):
    outputs = [causal_attention(*project_qkv(x, *head))[0] for head in heads]
    return np.mean(outputs, axis=0) @ W_o[:outputs[0].shape[1]]
'''}},
    # Taken from real public code (held out until their diagnoses were written).
    "heads-merged-by-view-jadore801120": {"mistake": "heads-merged-without-transpose",
        "source": "jadore801120/attention-is-all-you-need-pytorch@https://github.com/jadore801120/attention-is-all-you-need-pytorch/issues/7"
                  " (fixed in ca8c7c0):transformer/SubLayers.py — (n_head, len_q, d_v) outputs viewed as (len_q, n_head * d_v)"
                  " with no transpose; also jsbaan/transformer-from-scratch PR #6",
        "cells": {"multi_head_attention": """
def multi_head_attention(x, heads, W_o):
    outputs = []
    for W_q, W_k, W_v in heads:
        Q, K, V = project_qkv(x, W_q, W_k, W_v)
        output, _ = causal_attention(Q, K, V)
        outputs.append(output)
    outputs = np.stack(outputs)                      # (n_head, len_q, d_v)
    return outputs.reshape(outputs.shape[1], -1) @ np.asarray(W_o, dtype=float)
"""}},
    "heads-split-by-view-fuxictr": {"mistake": "heads-split-without-transpose",
        "source": "reczoo/FuxiCTR@https://github.com/reczoo/FuxiCTR/issues/30:fuxictr/pytorch/layers/attentions — "
                  "query.view(batch * num_heads, -1, head_dim): the heads split off with no transpose",
        "cells": {"multi_head_attention": """
def multi_head_attention(x, heads, W_o):
    x = np.asarray(x, dtype=float)
    n, h = x.shape[0], len(heads)
    W_q, W_k, W_v = (np.concatenate([np.asarray(head[i], dtype=float) for head in heads], axis=1) for i in range(3))
    Q, K, V = (a.reshape(h, n, -1) for a in project_qkv(x, W_q, W_k, W_v))
    outputs = [causal_attention(Q[i], K[i], V[i])[0] for i in range(h)]
    return np.concatenate(outputs, axis=-1) @ np.asarray(W_o, dtype=float)
"""}},
    "heads-summed-functional-transformer": {"mistake": "heads-averaged",
        "source": "awf/functional-transformer@https://github.com/awf/functional-transformer/issues/8:transformer.py — "
                  "the heads' outputs were added up (embeddings += self_attn), not concatenated and projected by W_o",
        "cells": {"multi_head_attention": """
def multi_head_attention(x, heads, W_o):
    total = 0
    for W_q, W_k, W_v in heads:
        Q, K, V = project_qkv(x, W_q, W_k, W_v)
        output, _ = causal_attention(Q, K, V)
        total = total + output
    return total
"""}},
    "scale-dk-pow-1-over-2-transunet": {"mistake": "scores-scaled-wrongly",
        "source": "mkara44/transunet_pytorch@https://github.com/mkara44/transunet_pytorch/issues/4:utils/vit.py — "
                  "self.dk = (embedding_dim // head_num) ** 1 / 2 (that is d_k / 2, not sqrt(d_k)), and the scores "
                  "multiplied by it",
        "cells": {"causal_attention": """
def causal_attention(Q, K, V):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    n, d_k = Q.shape[-2], Q.shape[-1]
    dk = d_k ** 1 / 2
    energy = Q @ np.swapaxes(K, -1, -2) * dk
    allowed = np.tril(np.ones((n, n), dtype=bool))
    weights = softmax(np.where(allowed, energy, -np.inf), axis=-1)
    return weights @ V, weights
"""}},
    "scores-from-values-argminn": {"mistake": "scores-use-values",
        "source": "Genentech/ARGMINN@https://github.com/Genentech/ARGMINN/issues/1:src/model/mechint_net.py — "
                  "att_vals = torch.matmul(query, value.transpose(2, 3)): the scores compared queries with the "
                  "values, the keys computed and never used",
        "cells": {"causal_attention": """
def causal_attention(Q, K, V):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    n, d_k = Q.shape[-2], Q.shape[-1]
    scores = Q @ np.swapaxes(V, -1, -2) / math.sqrt(d_k)
    allowed = np.tril(np.ones((n, n), dtype=bool))
    weights = softmax(np.where(allowed, scores, -np.inf), axis=-1)
    return weights @ V, weights
"""}},
    "softmax-over-all-heads-detr": {"mistake": "softmax-over-heads-jointly",
        "source": "facebookresearch/detr@https://github.com/facebookresearch/detr/issues/247:models/segmentation.py — "
                  "MHAttentionMap took F.softmax(weights.flatten(2)): one softmax over every head's keys together, "
                  "not one per head",
        "cells": {"multi_head_attention": """
def multi_head_attention(x, heads, W_o):
    x = np.asarray(x, dtype=float)
    n = x.shape[0]
    allowed = np.tril(np.ones((n, n), dtype=bool))
    projected = [project_qkv(x, W_q, W_k, W_v) for W_q, W_k, W_v in heads]
    scores = np.stack([np.where(allowed, Q @ K.T / math.sqrt(Q.shape[-1]), -np.inf)
                       for Q, K, V in projected], axis=1)               # (n, heads, n)
    weights = softmax(scores.reshape(n, -1), axis=-1).reshape(scores.shape)
    outputs = [weights[:, h] @ V for h, (Q, K, V) in enumerate(projected)]
    return np.concatenate(outputs, axis=-1) @ np.asarray(W_o, dtype=float)
"""}},
    "softmax-over-the-heads-axis-jadore801120": {"mistake": "softmax-over-heads",
        "source": "jadore801120/attention-is-all-you-need-pytorch@https://github.com/jadore801120/attention-is-all-you-need-pytorch/issues/52 — "
                  "with every head's scores stacked as (n_head, len_q, len_k) the softmax ran along dim 0, across the heads",
        "cells": {"multi_head_attention": """
def multi_head_attention(x, heads, W_o):
    x = np.asarray(x, dtype=float)
    n = x.shape[0]
    blocked = np.triu(np.ones((n, n), dtype=bool), k=1)
    Q, K, V = (np.stack([x @ np.asarray(head[i], dtype=float) for head in heads]) for i in range(3))   # (h, n, d_k)
    scores = np.where(blocked, -np.inf, Q @ np.swapaxes(K, -1, -2) / math.sqrt(Q.shape[-1]))
    weights = softmax(scores, axis=0)
    heads_out = weights @ V
    return np.concatenate(list(heads_out), axis=-1) @ np.asarray(W_o, dtype=float)
"""}},
    "output-projection-with-relu-kyubyong": {"mistake": "output-projection-with-activation",
        "source": "Kyubyong/transformer@https://github.com/Kyubyong/transformer/pull/17:modules.py — the output projection "
                  "added as tf.layers.dense(outputs, num_units, activation=tf.nn.relu): a ReLU after W_O",
        "cells": {"multi_head_attention": """
def multi_head_attention(x, heads, W_o):
    concat = np.concatenate([causal_attention(*project_qkv(x, *head))[0] for head in heads], axis=1)
    return np.maximum(concat @ np.asarray(W_o, dtype=float), 0.0)
"""}},
}

CORRECT = {
    "plain-loops": {"project_qkv": '''
def project_qkv(x, W_q, W_k, W_v):
    def project(W):
        return np.array([[sum(row[i] * W[i][j] for i in range(len(row))) for j in range(len(W[0]))]
                         for row in x], dtype=float)
    return project(W_q), project(W_k), project(W_v)
''', "causal_attention": '''
def causal_attention(Q, K, V):
    n, d_k = len(Q), len(Q[0])
    weights = np.zeros((n, n))
    for i in range(n):
        scores = [float(np.dot(Q[i], K[j])) / math.sqrt(d_k) for j in range(i + 1)]
        top = max(scores)
        e = [math.exp(s - top) for s in scores]
        for j in range(i + 1):
            weights[i, j] = e[j] / sum(e)
    return weights @ np.asarray(V, dtype=float), weights
''', "multi_head_attention": '''
def multi_head_attention(x, heads, W_o):
    pieces = []
    for head in heads:
        Q, K, V = project_qkv(x, head[0], head[1], head[2])
        pieces.append(causal_attention(Q, K, V)[0])
    concat = np.hstack(pieces)
    return np.array([[sum(concat[i, k] * W_o[k, j] for k in range(concat.shape[1]))
                      for j in range(W_o.shape[1])] for i in range(concat.shape[0])])
'''},
    "einsum-minus-1e9": {"causal_attention": '''
def causal_attention(Q, K, V):
    scores = np.einsum("id,jd->ij", Q, K) / np.sqrt(np.shape(Q)[-1])
    n = scores.shape[0]
    blocked = np.arange(n)[None, :] > np.arange(n)[:, None]
    scores = np.where(blocked, -1e9, scores)
    e = np.exp(scores - scores.max(axis=1, keepdims=True))
    weights = e / e.sum(axis=1, keepdims=True)
    return np.einsum("ij,jv->iv", weights, V), weights
''', "project_qkv": '''
def project_qkv(x, W_q, W_k, W_v):
    return tuple(np.einsum("nd,dk->nk", x, W) for W in (W_q, W_k, W_v))
'''},
    "float32-throughout": {"project_qkv": '''
def project_qkv(x, W_q, W_k, W_v):
    x = np.asarray(x, dtype=np.float32)
    return tuple(x @ np.asarray(W, dtype=np.float32) for W in (W_q, W_k, W_v))
''', "causal_attention": '''
def causal_attention(Q, K, V):
    Q, K, V = (np.asarray(a, dtype=np.float32) for a in (Q, K, V))
    scores = Q @ K.T / np.float32(np.sqrt(Q.shape[1]))
    scores[np.triu_indices(scores.shape[0], k=1)] = -np.inf
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights = e / e.sum(axis=-1, keepdims=True)
    return weights @ V, weights
''', "multi_head_attention": '''
def multi_head_attention(x, heads, W_o):
    x = np.asarray(x, dtype=np.float32)
    outputs = [causal_attention(*project_qkv(x, *head))[0] for head in heads]
    return np.concatenate(outputs, axis=1) @ np.asarray(W_o, dtype=np.float32)
'''},
    # As openai/improved-diffusion's QKVAttention scales (issue #54 there): 1/sqrt(sqrt(d_k)) on Q and on K,
    # which is 1/sqrt(d_k) on every score, and keeps the products small in half precision.
    "scale-split-between-q-and-k": {"causal_attention": '''
def causal_attention(Q, K, V):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    scale = 1 / math.sqrt(math.sqrt(Q.shape[-1]))
    scores = (Q * scale) @ np.swapaxes(K * scale, -1, -2)
    n = scores.shape[-1]
    weights = softmax(np.where(np.tril(np.ones((n, n), dtype=bool)), scores, -np.inf), axis=-1)
    return weights @ V, weights
'''},
    "slices-of-w-o": {"multi_head_attention": '''
def multi_head_attention(x, heads, W_o):
    result, start = 0.0, 0
    for W_q, W_k, W_v in heads:
        out, _ = causal_attention(*project_qkv(x, W_q, W_k, W_v))
        result = result + out @ W_o[start:start + out.shape[1]]
        start += out.shape[1]
    return result
'''},
}
