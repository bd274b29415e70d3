"""Held-out mistakes of part softmax: written after the diagnoses, and never used to write one.

Each entry names the catalogue id its diagnosis must carry (``mistake``); tests/test_mutants.py
measures how many of these the first sentence of the part's reason names.
"""

MISTAKES = {
    "sum-without-keepdims": {"mistake": "shapes-need-keepdims", "cells": {"softmax": '''
def softmax(z, axis=-1):
    z = np.asarray(z, dtype=float)
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis)
'''}},
    "shift-in-place": {"mistake": "in-place", "cells": {"softmax": '''
def softmax(z, axis=-1):
    z = np.asarray(z, dtype=float)
    z -= z.max(axis=axis, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=axis, keepdims=True)
'''}},
    "entropy-log10": {"mistake": "entropy-log10", "cells": {"entropy_bits": '''
def entropy_bits(p):
    p = np.asarray(p, dtype=float)
    p = p[p > 0]
    return float(-(p * np.log10(p)).sum())
'''}},
    "attend-scale-by-key-count": {"mistake": "scores-scaled-wrongly", "cells": {"attend": '''
def attend(q, K, V):
    q, K = np.asarray(q, dtype=float), np.asarray(K, dtype=float)
    alpha = softmax(K @ q / np.sqrt(len(K)))
    return alpha, alpha @ np.asarray(V, dtype=float)
'''}},
    "softmax-last-axis-always": {"mistake": "softmax-wrong-axis", "cells": {"softmax": '''
def softmax(z, axis=-1):
    z = np.asarray(z, dtype=float)
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
'''}},
    "attend-returns-output-first": {"mistake": "attend-swapped-pair", "cells": {"attend": '''
def attend(q, K, V):
    q, K = np.asarray(q, dtype=float), np.asarray(K, dtype=float)
    alpha = softmax(K @ q / np.sqrt(q.shape[0]))
    return alpha @ np.asarray(V, dtype=float), alpha
'''}},
}
