"""Part 2 (causal_mask): realistic mistakes, and correct solutions written differently.

Each entry replaces whole solution cells of the reference notebook. Every
mistake must lose points in this part and only this part; every correct
variant must earn full marks. Entries marked ``demo`` are students of the
`course demo` cohort.
"""

MISTAKES = {
    "mask-after-softmax": {"warned": "The blocked scores are replaced by -inf before the softmax",
        "demo": True, "cells": {"masked_softmax": '''
def masked_softmax(scores, mask):
    return softmax(np.asarray(scores, dtype=float)) * mask
'''}},
    "mask-transposed": {"warned": "True where query i may look at key j ... True on and below the diagonal",
        "demo": True, "cells": {"causal_mask": '''
def causal_mask(n):
    return np.triu(np.ones((n, n), dtype=bool))
'''}},
    "mask-without-diagonal": {"warned": "True on and below the diagonal",
        "cells": {"causal_mask": '''
def causal_mask(n):
    return np.tril(np.ones((n, n), dtype=bool), k=-1)
'''}},
    "mask-of-floats": {"mistake": "mask-not-boolean", "warned": "of dtype bool",
        "cells": {"causal_mask": '''
def causal_mask(n):
    return np.tril(np.ones((n, n)))
'''}},
    "mask-of-ints": {"mistake": "mask-not-boolean", "warned": "of dtype bool",
        "cells": {"causal_mask": '''
def causal_mask(n):
    return np.tril(np.ones((n, n), dtype=int))
'''}},
    "mask-multiplies-scores": {"mistake": "mask-fill-not-minus-inf", "warned": "The blocked scores are replaced by -inf",
        "cells": {"masked_softmax": '''
def masked_softmax(scores, mask):
    return softmax(np.asarray(scores, dtype=float) * mask)
'''}},
    "mask-fills-minus-one": {"mistake": "mask-fill-not-minus-inf", "warned": "The blocked scores are replaced by -inf",
        "cells": {"masked_softmax": '''
def masked_softmax(scores, mask):
    return softmax(np.where(mask, scores, -1.0))
'''}},
    "mask-in-place": {"mistake": "masked-softmax-2d-only", "warned": "Leave scores as it was",
        "cells": {"masked_softmax": '''
def masked_softmax(scores, mask):
    scores[~np.asarray(mask, dtype=bool)] = -np.inf
    return softmax(scores)
'''}},
    "mask-two-dimensional-only": {"mistake": "masked-softmax-2d-only", "warned": "or a whole batch of them, for example (batch, heads, n, n)",
        "cells": {"masked_softmax": '''
def masked_softmax(scores, mask):
    scores = np.asarray(scores, dtype=float)
    n = scores.shape[0]
    out = np.zeros((n, n))
    for i in range(n):
        allowed = [j for j in range(n) if mask[i][j]]
        out[i, allowed] = softmax(scores[i, allowed])
    return out
'''}},
    "mask-ignores-argument": {"mistake": "mask-argument-ignored", "warned": "a mask of the full shape gives each item its own",
        "cells": {"masked_softmax": '''
def masked_softmax(scores, mask):
    scores = np.asarray(scores, dtype=float)
    n = scores.shape[-1]
    return softmax(np.where(np.tril(np.ones((n, n), dtype=bool)), scores, -np.inf))
'''}},
    "wrong-order-is-right-order": {"warned": "the softmax along the last axis of the unmasked scores, then the blocked weights set to 0",
        "cells": {"softmax_then_mask": '''
def softmax_then_mask(scores, mask):
    weights = masked_softmax(scores, mask)
    return weights, weights.sum(axis=-1)
'''}},
    "wrong-order-column-sums": {"mistake": "row-sums-down-columns", "warned": "row_sums[i], the sum of row i",
        "cells": {"softmax_then_mask": '''
def softmax_then_mask(scores, mask):
    weights = softmax(scores) * mask
    return weights, weights.sum(axis=0)
'''}},
    "scale-not-divided": {"mistake": "experiment-scaled-not-scaled", "warned": "the entropy of softmax(s / sqrt(d)) (scaled)",
        "cells": {"scale_experiment": '''
def scale_experiment(d_values, n_keys=8, trials=200, seed=0):
    rng = np.random.default_rng(seed)
    out = {"d_k": [], "sd": [], "entropy_raw": [], "entropy_scaled": [], "max_alpha_raw": []}
    for d in d_values:
        rows = []
        for _ in range(trials):
            s = rng.normal(size=(n_keys, d)) @ rng.normal(size=d)
            a = softmax(s)
            rows.append((s.std(), entropy_bits(a), entropy_bits(softmax(s)), a.max()))
        for key, column in zip(list(out)[1:], np.mean(rows, axis=0)):
            out[key].append(column)
        out["d_k"].append(d)
    return {key: np.array(column) for key, column in out.items()}
'''}},
    "scale-divided-by-d": {"mistake": "experiment-scaled-too-much", "warned": "the entropy of softmax(s / sqrt(d)) (scaled)",
        "cells": {"scale_experiment": '''
def scale_experiment(d_values, n_keys=8, trials=200, seed=0):
    rng = np.random.default_rng(seed)
    out = {"d_k": [], "sd": [], "entropy_raw": [], "entropy_scaled": [], "max_alpha_raw": []}
    for d in d_values:
        rows = []
        for _ in range(trials):
            s = rng.normal(size=(n_keys, d)) @ rng.normal(size=d)
            a = softmax(s)
            rows.append((s.std(), entropy_bits(a), entropy_bits(softmax(s / d)), a.max()))
        for key, column in zip(list(out)[1:], np.mean(rows, axis=0)):
            out[key].append(column)
        out["d_k"].append(d)
    return {key: np.array(column) for key, column in out.items()}
'''}},
    "scale-sample-sd": {"mistake": "experiment-std-ddof", "warned": "s.std() (the population standard deviation, numpy's default)",
        "cells": {"scale_experiment": '''
def scale_experiment(d_values, n_keys=8, trials=200, seed=0):
    rng = np.random.default_rng(seed)
    out = {"d_k": [], "sd": [], "entropy_raw": [], "entropy_scaled": [], "max_alpha_raw": []}
    for d in d_values:
        rows = []
        for _ in range(trials):
            s = rng.normal(size=(n_keys, d)) @ rng.normal(size=d)
            a = softmax(s)
            rows.append((s.std(ddof=1), entropy_bits(a), entropy_bits(softmax(s / np.sqrt(d))), a.max()))
        for key, column in zip(list(out)[1:], np.mean(rows, axis=0)):
            out[key].append(column)
        out["d_k"].append(d)
    return {key: np.array(column) for key, column in out.items()}
'''}},
    "scale-median-spread": {"mistake": "experiment-spread-median", "warned": "record the spread of the scores s.std() ... mean over the trials",
        "cells": {"scale_experiment": '''
def scale_experiment(d_values, n_keys=8, trials=200, seed=0):
    rng = np.random.default_rng(seed)
    out = {"d_k": [], "sd": [], "entropy_raw": [], "entropy_scaled": [], "max_alpha_raw": []}
    for d in d_values:
        rows = []
        for _ in range(trials):
            s = rng.normal(size=(n_keys, d)) @ rng.normal(size=d)
            a = softmax(s)
            rows.append((s.std(), entropy_bits(a), entropy_bits(softmax(s / np.sqrt(d))), a.max()))
        rows = np.array(rows)
        out["d_k"].append(d)
        out["sd"].append(np.median(rows[:, 0]))
        for key, column in zip(list(out)[2:], rows[:, 1:].mean(axis=0)):
            out[key].append(column)
    return {key: np.array(column) for key, column in out.items()}
'''}},
    "scale-unseeded": {"mistake": "experiment-ignores-seed", "warned": "Make one generator, rng = np.random.default_rng(seed)",
        "cells": {"scale_experiment": '''
def scale_experiment(d_values, n_keys=8, trials=200, seed=0):
    out = {"d_k": [], "sd": [], "entropy_raw": [], "entropy_scaled": [], "max_alpha_raw": []}
    for d in d_values:
        rows = []
        for _ in range(trials):
            s = np.random.randn(n_keys, d) @ np.random.randn(d)
            a = softmax(s)
            rows.append((s.std(), entropy_bits(a), entropy_bits(softmax(s / np.sqrt(d))), a.max()))
        for key, column in zip(list(out)[1:], np.mean(rows, axis=0)):
            out[key].append(column)
        out["d_k"].append(d)
    return {key: np.array(column) for key, column in out.items()}
'''}},
    "scale-eight-keys-always": {"mistake": "experiment-fixed-keys", "warned": "K = rng.normal(0, 1, (n_keys, d))",
        "cells": {"scale_experiment": '''
def scale_experiment(d_values, n_keys=8, trials=200, seed=0):
    rng = np.random.default_rng(seed)
    out = {"d_k": [], "sd": [], "entropy_raw": [], "entropy_scaled": [], "max_alpha_raw": []}
    for d in d_values:
        rows = []
        for _ in range(trials):
            s = rng.normal(size=(8, d)) @ rng.normal(size=d)
            a = softmax(s)
            rows.append((s.std(), entropy_bits(a), entropy_bits(softmax(s / np.sqrt(d))), a.max()))
        for key, column in zip(list(out)[1:], np.mean(rows, axis=0)):
            out[key].append(column)
        out["d_k"].append(d)
    return {key: np.array(column) for key, column in out.items()}
'''}},
    "hard-coded-chapter": {"warned": "the grader runs other seeds: write general code",
        "cells": {"causal_mask": '''
def causal_mask(n):
    return np.array([[True, False, False, False], [True, True, False, False],
                     [True, True, True, False], [True, True, True, True]])
''', "scale_experiment": '''
def scale_experiment(d_values, n_keys=8, trials=200, seed=0):
    return {"d_k": np.array([4, 16, 64, 256, 1024]),
            "sd": np.array([1.756, 3.568, 7.202, 14.483, 28.591]),
            "entropy_raw": np.array([1.7771, 0.9743, 0.5058, 0.2512, 0.1333]),
            "entropy_scaled": np.array([2.4764, 2.4970, 2.4844, 2.4555, 2.4894]),
            "max_alpha_raw": np.array([0.5492, 0.7488, 0.8577, 0.9282, 0.9611])}
'''}},
    "mask-off-by-one": {"warned": "True on and below the diagonal, False above it", "cells": {"causal_mask": '''
def causal_mask(n):
    return np.tril(np.ones((n, n), dtype=bool), k=1)
'''}},
    "mask-first-item-for-all": {"mistake": "mask-first-item-only", "warned": "a mask of the full shape gives each item its own",
        "cells": {"masked_softmax": '''
def masked_softmax(scores, mask):
    scores = np.asarray(scores, dtype=float)
    mask = np.asarray(mask, dtype=bool)
    if mask.ndim > 2:
        mask = mask.reshape(-1, *mask.shape[-2:])[0]     # one (n, n) mask for every item
    return softmax(np.where(mask, scores, -np.inf))
'''}},
    "scale-entropy-in-nats": {"mistake": "experiment-entropy-in-nats", "warned": "the entropy in bits of softmax(s)", "cells": {"scale_experiment": '''
def scale_experiment(d_values, n_keys=8, trials=200, seed=0):
    rng = np.random.default_rng(seed)

    def entropy(p):
        p = p[p > 0]
        return float(-(p * np.log(p)).sum())

    out = {"d_k": [], "sd": [], "entropy_raw": [], "entropy_scaled": [], "max_alpha_raw": []}
    for d in d_values:
        rows = []
        for _ in range(trials):
            s = rng.normal(size=(n_keys, d)) @ rng.normal(size=d)
            a = softmax(s)
            rows.append((s.std(), entropy(a), entropy(softmax(s / np.sqrt(d))), a.max()))
        for key, column in zip(list(out)[1:], np.mean(rows, axis=0)):
            out[key].append(column)
        out["d_k"].append(d)
    return {key: np.array(column) for key, column in out.items()}
'''}},
    "scale-columns-as-lists": {"mistake": "experiment-columns-not-arrays", "warned": "Return a dict of five 1-D arrays",
        "cells": {"scale_experiment": '''
def scale_experiment(d_values, n_keys=8, trials=200, seed=0):
    rng = np.random.default_rng(seed)
    out = {"d_k": [], "sd": [], "entropy_raw": [], "entropy_scaled": [], "max_alpha_raw": []}
    for d in d_values:
        rows = []
        for _ in range(trials):
            s = rng.normal(size=(n_keys, d)) @ rng.normal(size=d)
            a = softmax(s)
            rows.append((s.std(), entropy_bits(a), entropy_bits(softmax(s / math.sqrt(d))), a.max()))
        for key, column in zip(list(out)[1:], np.mean(rows, axis=0)):
            out[key].append(float(column))
        out["d_k"].append(d)
    return out
'''}},
    "scale-generator-per-d": {"mistake": "experiment-generator-per-d", "warned": "Make one generator",
        "cells": {"scale_experiment": '''
def scale_experiment(d_values, n_keys=8, trials=200, seed=0):
    out = {"d_k": [], "sd": [], "entropy_raw": [], "entropy_scaled": [], "max_alpha_raw": []}
    for d in d_values:
        rng = np.random.default_rng(seed)
        rows = []
        for _ in range(trials):
            s = rng.normal(size=(n_keys, d)) @ rng.normal(size=d)
            a = softmax(s)
            rows.append((s.std(), entropy_bits(a), entropy_bits(softmax(s / math.sqrt(d))), a.max()))
        for key, column in zip(list(out)[1:], np.mean(rows, axis=0)):
            out[key].append(column)
        out["d_k"].append(d)
    return {key: np.array(column) for key, column in out.items()}
'''}},
    # Taken from real public code (held out until its diagnosis was written).
    "mask-filled-after-softmax-timm-eva": {"mistake": "mask-after-softmax",
        "source": "huggingface/pytorch-image-models@https://github.com/huggingface/pytorch-image-models/pull/2236:"
                  "timm/models/eva.py — attn.softmax(dim=-1) first, then masked_fill(~mask, -inf) on the weights",
        "cells": {"masked_softmax": """
def masked_softmax(scores, mask):
    scores = np.asarray(scores)
    if not np.issubdtype(scores.dtype, np.floating):
        scores = scores.astype(float)
    weights = softmax(scores, axis=-1)
    return np.where(mask, weights, -np.inf)
"""}},
    "bool-mask-added-qwen3": {"mistake": "mask-fill-not-minus-inf",
        "source": "huggingface/transformers@https://github.com/huggingface/transformers/pull/41443:"
                  "src/transformers/models/qwen3/modeling_qwen3.py — eager_attention_forward added a boolean "
                  "attention_mask to the scores (True = 1, False = 0) instead of -inf where blocked",
        "cells": {"masked_softmax": """
def masked_softmax(scores, mask):
    scores = np.asarray(scores)
    if not np.issubdtype(scores.dtype, np.floating):
        scores = scores.astype(float)
    return softmax(scores + mask, axis=-1)
"""}},
    "mask-dropped-for-other-ranks-keras": {"mistake": "mask-argument-ignored",
        "source": "keras-team/keras@https://github.com/keras-team/keras/issues/23038 — MultiHeadAttention dropped the "
                  "causal mask on its manual softmax path, taken for inputs that are not rank 4",
        "cells": {"masked_softmax": """
def masked_softmax(scores, mask):
    scores = np.asarray(scores, dtype=float)
    if scores.ndim == 4:
        scores = np.where(mask, scores, -np.inf)
    return softmax(scores, axis=-1)
"""}},
    "causal-mask-triu-without-eq-zero-hkproj": {"mistake": "mask-inverted",
        "source": "hkproj/pytorch-transformer@https://github.com/hkproj/pytorch-transformer/issues/19:translate.py — the "
                  "decoder mask was triu(ones, diagonal=1) without the `== 0` of dataset.py: it marked the future as allowed",
        "cells": {"causal_mask": """
def causal_mask(n):
    return np.triu(np.ones((n, n)), k=1).astype(bool)
"""}},
}

CORRECT = {
    "minus-1e9": {"causal_mask": '''
def causal_mask(n):
    i = np.arange(n)
    return i[:, None] >= i[None, :]
''', "masked_softmax": '''
def masked_softmax(scores, mask):
    return softmax(np.where(mask, np.asarray(scores, dtype=float), -1e9))
'''},
    "renormalise-after-zeroing": {"causal_mask": '''
def causal_mask(n):
    return ~np.triu(np.ones((n, n), dtype=bool), k=1)
''', "masked_softmax": '''
def masked_softmax(scores, mask):
    weights = softmax(scores) * mask
    return weights / weights.sum(axis=-1, keepdims=True)
''', "softmax_then_mask": '''
def softmax_then_mask(scores, mask):
    weights = np.where(mask, softmax(scores, axis=-1), 0.0)
    return weights, np.sum(weights, axis=-1)
'''},
    "loops": {"causal_mask": '''
def causal_mask(n):
    mask = np.zeros((n, n), dtype=bool)
    for i in range(n):
        for j in range(i + 1):
            mask[i, j] = True
    return mask
''', "masked_softmax": '''
def masked_softmax(scores, mask):
    scores = np.array(scores, dtype=float)
    mask = np.broadcast_to(mask, scores.shape)
    out = np.zeros_like(scores)
    for index in np.ndindex(scores.shape[:-1]):
        row, keep = scores[index], mask[index]
        top = max(v for v, k in zip(row, keep) if k)
        e = [math.exp(v - top) if k else 0.0 for v, k in zip(row, keep)]
        total = sum(e)
        out[index] = [x / total for x in e]
    return out
''', "softmax_then_mask": '''
def softmax_then_mask(scores, mask):
    scores = np.asarray(scores, dtype=float)
    n = scores.shape[0]
    weights = np.zeros_like(scores)
    sums = np.zeros(n)
    for i in range(n):
        row = softmax(scores[i])
        for j in range(scores.shape[1]):
            if mask[i][j]:
                weights[i, j] = row[j]
                sums[i] += row[j]
    return weights, sums
''', "scale_experiment": '''
def scale_experiment(d_values, n_keys=8, trials=200, seed=0):
    rng = np.random.default_rng(seed)
    result = {"d_k": [], "sd": [], "entropy_raw": [], "entropy_scaled": [], "max_alpha_raw": []}
    for d in d_values:
        totals = [0.0, 0.0, 0.0, 0.0]
        for _ in range(trials):
            q = [float(x) for x in rng.normal(0, 1, d)]
            s = []
            for _ in range(n_keys):
                k = [float(x) for x in rng.normal(0, 1, d)]
                s.append(sum(a * b for a, b in zip(q, k)))
            mean = sum(s) / len(s)
            totals[0] += math.sqrt(sum((x - mean) ** 2 for x in s) / len(s))
            raw = softmax(np.array(s))
            totals[1] += entropy_bits(raw)
            totals[2] += entropy_bits(softmax(np.array(s) / math.sqrt(d)))
            totals[3] += max(raw)
        result["d_k"].append(d)
        for key, total in zip(["sd", "entropy_raw", "entropy_scaled", "max_alpha_raw"], totals):
            result[key].append(total / trials)
    return {key: np.array(column) for key, column in result.items()}
'''},
    "float32-throughout": {"masked_softmax": '''
def masked_softmax(scores, mask):
    z = np.where(mask, np.asarray(scores, dtype=np.float32), np.float32(-np.inf))
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
''', "softmax_then_mask": '''
def softmax_then_mask(scores, mask):
    z = np.asarray(scores, dtype=np.float32)
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    weights = np.where(mask, e / e.sum(axis=-1, keepdims=True), np.float32(0))
    return weights, weights.sum(axis=-1)
''', "scale_experiment": '''
def scale_experiment(d_values, n_keys=8, trials=200, seed=0):
    rng = np.random.default_rng(seed)
    columns = {"d_k": [], "sd": [], "entropy_raw": [], "entropy_scaled": [], "max_alpha_raw": []}
    for d in d_values:
        Q = rng.standard_normal((trials, d)).astype(np.float32)
        K = rng.standard_normal((trials, n_keys, d)).astype(np.float32)
        S = np.einsum("tkd,td->tk", K, Q)
        A = softmax(S)
        B = softmax(S / np.float32(np.sqrt(d)))
        columns["d_k"].append(d)
        columns["sd"].append(S.std(axis=1).mean())
        columns["entropy_raw"].append(np.mean([entropy_bits(a) for a in A]))
        columns["entropy_scaled"].append(np.mean([entropy_bits(b) for b in B]))
        columns["max_alpha_raw"].append(A.max(axis=1).mean())
    return {key: np.asarray(value) for key, value in columns.items()}
'''},
}
