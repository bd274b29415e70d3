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
}
