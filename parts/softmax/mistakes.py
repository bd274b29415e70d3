"""Part 1 (softmax): realistic mistakes, and correct solutions written differently.

Each entry replaces whole solution cells of the reference notebook. Every
mistake must lose points in this part and only this part; every correct
variant must earn full marks (tests/test_mutants.py). Entries marked
``demo`` are students of the `course demo` cohort.
"""

MISTAKES = {
    "softmax-no-max-shift": {"warned": "Subtracting the largest score of each row ... first ... keeps every exponent at or below zero",
        "demo": True, "cells": {"softmax": '''
def softmax(z, axis=-1):
    e = np.exp(np.asarray(z, dtype=float))
    return e / e.sum(axis=axis, keepdims=True)
'''}},
    "softmax-global-max": {"warned": "Subtracting the largest score of each row ... One maximum for the whole "
                                     "array does not",
        "cells": {"softmax": '''
def softmax(z, axis=-1):
    z = np.asarray(z, dtype=float)
    e = np.exp(z - z.max())
    return e / e.sum(axis=axis, keepdims=True)
'''}},
    "softmax-wrong-axis": {"warned": "softmax(z, axis=-1) normalises along axis",
        "demo": True, "cells": {"softmax": '''
def softmax(z, axis=-1):
    z = np.asarray(z, dtype=float)
    e = np.exp(z - z.max(axis=0, keepdims=True))
    return e / e.sum(axis=0, keepdims=True)
'''}},
    "entropy-in-nats": {"warned": "The entropy ... In bits",
        "demo": True, "cells": {"entropy_bits": '''
def entropy_bits(p):
    p = np.asarray(p, dtype=float)
    p = p[p > 0]
    return float(-(p * np.log(p)).sum())
'''}},
    "attend-without-scale": {"mistake": "scores-not-scaled", "warned": "alpha = softmax(K q / sqrt(d_k))",
        "demo": True, "cells": {"attend": '''
def attend(q, K, V):
    alpha = softmax(np.asarray(K) @ np.asarray(q))
    return alpha, alpha @ np.asarray(V)
'''}},
    "softmax-global-sum": {"warned": "every slice along that axis sums to 1",
        "cells": {"softmax": '''
def softmax(z, axis=-1):
    z = np.asarray(z, dtype=float)
    e = np.exp(z - z.max())
    return e / e.sum()
'''}},
    "softmax-in-place": {"mistake": "in-place", "warned": "returns new arrays and never changes its inputs",
        "cells": {"softmax": '''
def softmax(z, axis=-1):
    z -= np.max(z, axis=axis, keepdims=True)
    np.exp(z, out=z)
    z /= z.sum(axis=axis, keepdims=True)
    return z
'''}},
    "entropy-keeps-zeros": {"warned": "0 log 0 taken as 0: a weight of zero contributes nothing",
        "cells": {"entropy_bits": '''
def entropy_bits(p):
    p = np.asarray(p, dtype=float)
    return float(-(p * np.log2(p)).sum())
'''}},
    "attend-scale-by-dk": {"mistake": "scores-divided-by-width", "warned": "alpha = softmax(K q / sqrt(d_k))",
        "cells": {"attend": '''
def attend(q, K, V):
    q = np.asarray(q, dtype=float)
    alpha = softmax(np.asarray(K) @ q / q.shape[0])
    return alpha, alpha @ np.asarray(V)
'''}},
    "attend-mixes-keys": {"warned": "output = alpha V",
        "cells": {"attend": '''
def attend(q, K, V):
    q, K = np.asarray(q, dtype=float), np.asarray(K, dtype=float)
    alpha = softmax(K @ q / np.sqrt(q.shape[0]))
    return alpha, alpha @ K
'''}},
    "entropy-averaged": {"cells": {"entropy_bits": '''
def entropy_bits(p):
    p = np.asarray(p, dtype=float)
    terms = np.where(p > 0, -p * np.log2(np.where(p > 0, p, 1.0)), 0.0)
    return float(terms.mean())
'''}},
    "entropy-normalised": {"cells": {"entropy_bits": '''
def entropy_bits(p):
    p = np.asarray(p, dtype=float).ravel()
    nz = p[p > 0]
    return float(-(nz * np.log2(nz)).sum() / np.log2(p.size))
'''}},
    "attend-scales-query-in-place": {"mistake": "in-place", "warned": "returns new arrays and never changes its inputs",
        "cells": {"attend": '''
def attend(q, K, V):
    q = np.asarray(q)
    q /= math.sqrt(q.shape[0])          # changes the caller's query
    alpha = softmax(np.asarray(K) @ q)
    return alpha, alpha @ np.asarray(V)
'''}},
    "hard-coded-chapter": {"warned": "write general code, not the numbers printed here",
        "cells": {"attend": '''
def attend(q, K, V):
    alpha = np.array([0.336944882926855, 0.3019383367816182, 0.3611167802915269])
    return alpha, np.array([0.4118356887019818, 0.4514480213456581, 0.5816418550238199])
'''}},
    "softmax-max-without-keepdims": {"mistake": "shapes-need-keepdims", "warned": "softmax(z, axis=-1) normalises along axis, for an array of any shape",
        "cells": {"softmax": '''
def softmax(z, axis=-1):
    z = np.asarray(z, dtype=float)
    e = np.exp(z - z.max(axis=axis))
    return e / e.sum(axis=axis)
'''}},
    "attend-pair-swapped": {"mistake": "attend-swapped-pair", "warned": "attend(q, K, V) returns the pair (alpha, output)", "cells": {"attend": '''
def attend(q, K, V):
    q = np.asarray(q, dtype=float)
    alpha = softmax(np.asarray(K) @ q / math.sqrt(q.shape[0]))
    return alpha @ np.asarray(V), alpha
'''}},
    "entropy-per-entry": {"mistake": "entropy-not-summed", "warned": "H(p) = -sum_i p_i log2 p_i", "cells": {"entropy_bits": '''
def entropy_bits(p):
    p = np.asarray(p, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(p > 0, -p * np.log2(p), 0.0)
'''}},
    "attend-returns-lists": {"mistake": "returns-non-arrays", "warned": "Every function takes numpy arrays ... returns new arrays",
        "cells": {"attend": '''
def attend(q, K, V):
    q, K, V = np.asarray(q, dtype=float), np.asarray(K, dtype=float), np.asarray(V, dtype=float)
    alpha = softmax(K @ q / math.sqrt(len(q)))
    return alpha.tolist(), (alpha @ V).tolist()
'''}},
    "attend-without-asarray": {"mistake": "inputs-not-arrays", "warned": "(or anything `np.asarray` accepts)",
        "cells": {"attend": '''
def attend(q, K, V):
    alpha = softmax(K @ q / math.sqrt(q.shape[-1]))
    return alpha, alpha @ V
'''}},
    "attend-weights-written-in": {"mistake": "hard-coded-chapter", "cells": {"attend": '''
def attend(q, K, V):
    alpha = np.array([0.3369, 0.3019, 0.3611])       # the chapter's weights, whatever the keys
    return alpha, alpha @ np.asarray(V, dtype=float)
'''}},
    "attend-values-times-weights": {"mistake": "matmul-shapes", "cells": {"attend": '''
def attend(q, K, V):
    q, K, V = (np.asarray(a, dtype=float) for a in (q, K, V))
    alpha = softmax(K @ q / math.sqrt(q.shape[-1]))
    return alpha, V @ alpha
'''}},
    # Taken from real public code (held out until their diagnoses were written).
    "softmax-max-started-at-zero-nnlib": {"mistake": "softmax-shift-floored-at-zero",
        "source": "FluxML/NNlib.jl@https://github.com/FluxML/NNlib.jl/pull/43:src/softmax.jl — the running maximum "
                  "started at 0, so max(0, max z) was subtracted and a row of large negative scores gave 0/0 = nan",
        "cells": {"softmax": """
def softmax(z, axis=-1):
    z = np.asarray(z, dtype=float)
    top = np.maximum(np.max(z, axis=axis, keepdims=True), 0.0)    # the running maximum starts at 0
    e = np.exp(z - top)
    return e / np.sum(e, axis=axis, keepdims=True)
"""}},
    "attend-softmax-over-a-length-one-axis-keqa": {"mistake": "softmax-wrong-axis",
        "source": "DEEP-PolyU/KEQA_WSDM19@https://github.com/DEEP-PolyU/KEQA_WSDM19/issues/2:embedding.py — the "
                  "attention scores had shape (n, 1) and the softmax ran along the axis of length 1, so every weight was 1.0",
        "cells": {"attend": """
def attend(q, K, V):
    q, K, V = (np.asarray(a, dtype=float) for a in (q, K, V))
    scores = (K @ q / math.sqrt(q.shape[-1]))[:, None]      # one column: (n_keys, 1)
    alpha = softmax(scores, axis=-1)[:, 0]
    return alpha, alpha @ V
"""}},
    "attend-scale-defaults-to-zero-skainet": {"mistake": "scores-scaled-wrongly",
        "source": "SKaiNET-developers/SKaiNET@https://github.com/SKaiNET-developers/SKaiNET/pull/880 (issue #860) — the "
                  "scale defaulted to 0 and was applied literally, so every score was multiplied by 0 and the weights "
                  "came out uniform",
        "cells": {"attend": """
def attend(q, K, V, scale=0.0):
    q, K, V = (np.asarray(a, dtype=float) for a in (q, K, V))
    alpha = softmax((K @ q) * scale)        # meant: 0 stands for 1 / sqrt(d_k)
    return alpha, alpha @ V
"""}},
    "entropy-epsilon-in-the-log-forest": {"mistake": "entropy-in-nats",
        "source": "onnela-lab/forest@https://github.com/onnela-lab/forest/issues/114:forest/jasmine/traj2stats.py — "
                  "entropy as -sum(p * np.log(p + 0.00001)): the natural log, with an epsilon inside it",
        "cells": {"entropy_bits": """
def entropy_bits(p):
    p = np.asarray(p, dtype=float)
    return float(-np.sum(p * np.log(p + 0.00001)))
"""}},
    "attend-softmax-commented-out-flexflow": {"mistake": "no-softmax",
        "source": "flexflow/flexflow-train@https://github.com/flexflow/flexflow-train/issues/467:"
                  "examples/python/native/bert_proxy_native.py — the softmax was commented out (and no scaling): the raw "
                  "scores served as the weights",
        "cells": {"attend": """
def attend(q, K, V):
    q, K, V = (np.asarray(a, dtype=float) for a in (q, K, V))
    alpha = K @ q                   # softmax(...) commented out
    return alpha, alpha @ V
"""}},
}

CORRECT = {
    "entropy-with-epsilon": {"entropy_bits": '''
def entropy_bits(p):
    p = np.asarray(p, dtype=float)
    return float(-np.sum(p * np.log2(p + 1e-12)))
'''},
    "loops": {"softmax": '''
def softmax(z, axis=-1):
    z = np.moveaxis(np.array(z, dtype=float), axis, -1)
    out = np.empty_like(z)
    for index in np.ndindex(z.shape[:-1]):
        row = z[index]
        top = max(row)
        weights = [math.exp(v - top) for v in row]
        total = sum(weights)
        out[index] = [w / total for w in weights]
    return np.moveaxis(out, -1, axis)
''', "entropy_bits": '''
def entropy_bits(p):
    total = 0.0
    for x in np.asarray(p, dtype=float).ravel():
        if x > 0:
            total -= x * math.log(x, 2)
    return total
''', "attend": '''
def attend(q, K, V):
    d_k = len(q)
    scores = np.array([sum(a * b for a, b in zip(k, q)) / d_k ** 0.5 for k in K])
    alpha = softmax(scores)
    return alpha, np.sum(alpha[:, None] * np.asarray(V, dtype=float), axis=0)
'''},
    "logsumexp-float32": {"softmax": '''
def softmax(z, axis=-1):
    z = np.asarray(z, dtype=np.float64)
    m = np.max(z, axis=axis, keepdims=True)
    log_norm = m + np.log(np.sum(np.exp(z - m), axis=axis, keepdims=True))
    return np.exp(z - log_norm).astype(np.float32)
''', "entropy_bits": '''
def entropy_bits(p):
    p = np.asarray(p, dtype=np.float32)
    nz = p[p != 0]
    return float(np.sum(-nz * np.log(nz)) / np.log(2))
'''},
    "float32-throughout": {"softmax": '''
def softmax(z, axis=-1):
    z = np.asarray(z, dtype=np.float32)
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)
''', "entropy_bits": '''
def entropy_bits(p):
    p = np.asarray(p, dtype=np.float32).ravel()
    p = p[p > 0]
    return -(p * np.log2(p)).sum()
''', "attend": '''
def attend(q, K, V):
    q, K, V = (np.asarray(a, dtype=np.float32) for a in (q, K, V))
    alpha = softmax(K @ q / np.float32(np.sqrt(q.shape[0])))
    return alpha, alpha @ V
'''},
    # q and K each scaled by d_k ** -0.25, as openai/improved-diffusion's QKVAttention does (issue #54 there)
    "scale-split-between-q-and-k": {"attend": '''
def attend(q, K, V):
    q, K = np.asarray(q, dtype=float), np.asarray(K, dtype=float)
    scale = q.shape[-1] ** -0.25
    alpha = softmax((K * scale) @ (q * scale))
    return alpha, alpha @ np.asarray(V, dtype=float)
'''},
    "einsum": {"attend": '''
def attend(q, K, V):
    K = np.asarray(K, dtype=float)
    alpha = softmax(np.einsum("nd,d->n", K, q) / np.sqrt(K.shape[1]))
    return alpha, np.einsum("n,nv->v", alpha, V)
'''},
}
