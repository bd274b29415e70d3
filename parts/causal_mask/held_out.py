"""Held-out mistakes of part causal_mask: written after the diagnoses, and never used to write one.

Each entry names the catalogue id its diagnosis must carry (``mistake``); tests/test_mutants.py
measures how many of these the first sentence of the part's reason names.
"""

MISTAKES = {
    "mask-sees-next": {"mistake": "mask-off-by-one", "cells": {"causal_mask": '''
def causal_mask(n):
    return np.tril(np.ones((n, n), dtype=bool), k=1)
'''}},
    "mask-where-swapped": {"mistake": "mask-inverted", "cells": {"masked_softmax": '''
def masked_softmax(scores, mask):
    return softmax(np.where(mask, -np.inf, np.asarray(scores, dtype=float)))
'''}},
    "mask-boolean-index-on-a-copy": {"mistake": "masked-softmax-2d-only", "cells": {"masked_softmax": '''
def masked_softmax(scores, mask):
    s = np.array(scores, dtype=float)
    s[~np.asarray(mask, dtype=bool)] = -np.inf
    return softmax(s)
'''}},
    "wrong-order-never-zeroed": {"mistake": "wrong-order-not-zeroed", "cells": {"softmax_then_mask": '''
def softmax_then_mask(scores, mask):
    weights = softmax(np.asarray(scores, dtype=float))
    return weights, weights.sum(axis=-1)
'''}},
    "experiment-natural-log": {"mistake": "experiment-entropy-in-nats", "cells": {"scale_experiment": '''
def scale_experiment(d_values, n_keys=8, trials=200, seed=0):
    rng = np.random.default_rng(seed)

    def entropy(a):
        a = a[a > 0]
        return float(-(a * np.log(a)).sum())

    out = {k: [] for k in ("d_k", "sd", "entropy_raw", "entropy_scaled", "max_alpha_raw")}
    for d in d_values:
        rows = []
        for _ in range(trials):
            q = rng.normal(size=d)
            s = rng.normal(size=(n_keys, d)) @ q
            rows.append((s.std(), entropy(softmax(s)), entropy(softmax(s / np.sqrt(d))), softmax(s).max()))
        out["d_k"].append(d)
        for key, value in zip(("sd", "entropy_raw", "entropy_scaled", "max_alpha_raw"), np.mean(rows, axis=0)):
            out[key].append(value)
    return {k: np.array(v) for k, v in out.items()}
'''}},
    "experiment-spread-of-all-scores": {"mistake": "experiment-spread-pooled", "cells": {"scale_experiment": '''
def scale_experiment(d_values, n_keys=8, trials=200, seed=0):
    rng = np.random.default_rng(seed)
    out = {k: [] for k in ("d_k", "sd", "entropy_raw", "entropy_scaled", "max_alpha_raw")}
    for d in d_values:
        scores = np.array([rng.normal(size=(n_keys, d)) @ rng.normal(size=d) for _ in range(trials)])
        raw, scaled = softmax(scores, axis=-1), softmax(scores / np.sqrt(d), axis=-1)
        out["d_k"].append(d)
        out["sd"].append(scores.std())
        out["entropy_raw"].append(np.mean([entropy_bits(a) for a in raw]))
        out["entropy_scaled"].append(np.mean([entropy_bits(a) for a in scaled]))
        out["max_alpha_raw"].append(raw.max(axis=-1).mean())
    return {k: np.array(v) for k, v in out.items()}
'''}},
    # Held-out mistakes taken from real public code (translated to this notebook's signatures).
    "mask-flipped-pytorch-1-3": {"mistake": "mask-transposed",
        "source": "pytorch/examples@https://github.com/pytorch/examples/issues/649:word_language_model/model.py — "
                  "the square subsequent mask came out flipped: it let each position see the future, not the past",
        "cells": {"causal_mask": """
def causal_mask(n):
    return np.triu(np.ones((n, n), dtype=bool))
"""}},
    "mask-fill-minus-epsilon-hyunwoongko": {"mistake": "mask-fill-not-minus-inf",
        "source": "hyunwoongko/transformer@https://github.com/hyunwoongko/transformer/issues/10:"
                  "models/layers/scale_dot_product_attention.py — masked_fill(mask == 0, -e) with e = 1e-12, not -inf",
        "cells": {"masked_softmax": """
def masked_softmax(scores, mask):
    e = 1e-12
    scores = np.asarray(scores)
    if not np.issubdtype(scores.dtype, np.floating):
        scores = scores.astype(float)
    return softmax(np.where(mask, scores, -e), axis=-1)
"""}},
    "masked-softmax-axis-two-fastnlp": {"mistake": "masked-softmax-wrong-axis",
        "source": "fastnlp/fastNLP@https://github.com/FudanNLP/fastNLP/issues/254:fastNLP/modules/encoder/attention.py — "
                  "DotAttention's softmax along a fixed dim=2, not the last axis",
        "cells": {"masked_softmax": """
def masked_softmax(scores, mask):
    scores = np.asarray(scores)
    if not np.issubdtype(scores.dtype, np.floating):
        scores = scores.astype(float)
    return softmax(np.where(mask, scores, -np.inf), axis=2)
"""}},
    "additive-mask-for-a-boolean-one-tinytorch": {"mistake": "mask-not-boolean",
        "source": "harvard-edge/cs249r_book@https://github.com/harvard-edge/cs249r_book/pull/1785:"
                  "tinytorch/src/13_transformers/13_transformers.py — GPT._create_causal_mask built an additive "
                  "mask (-inf above the diagonal, 0 where allowed) where a boolean/binary allow-mask was expected",
        "cells": {"causal_mask": """
def causal_mask(n):
    future = np.triu(np.ones((n, n)), k=1)
    return np.where(future == 1, -np.inf, 0.0)      # -inf blocks, 0 lets through
"""}},

    # A second harvest from real public code, measured after the diagnoses above were written and
    # never used to write one.
    "mask-fill-where-allowed-halonet": {"mistake": "mask-inverted",
        "source": "lucidrains/halonet-pytorch@https://github.com/lucidrains/halonet-pytorch/issues/4 (fixed in PR #6) — "
                  "sim.masked_fill_(mask, -inf) with a mask that was True where attending is allowed",
        "cells": {"masked_softmax": """
def masked_softmax(scores, mask):
    scores = np.asarray(scores, dtype=float)
    return softmax(np.where(np.asarray(mask, dtype=bool), -np.inf, scores), axis=-1)
"""}},
    "scores-times-mask-good-features": {"mistake": "mask-fill-not-minus-inf",
        "source": "georg-wolflein/good-features@https://github.com/georg-wolflein/good-features/pull/1 — the ABMIL "
                  "attention multiplied the scores by the binary mask before the softmax, so masked entries counted e^0",
        "cells": {"masked_softmax": """
def masked_softmax(scores, mask):
    scores = np.asarray(scores, dtype=float)
    return softmax(scores * np.asarray(mask), axis=-1)
"""}},
    "mask-starts-one-late-ajhalthor": {"mistake": "mask-off-by-one",
        "source": "ajhalthor/Transformer-Neural-Network@https://github.com/ajhalthor/Transformer-Neural-Network/issues/15 — "
                  "the blocked positions started at np.arange(length + 1, ...) instead of length: one position too late",
        "cells": {"causal_mask": """
def causal_mask(n):
    blocked = np.zeros((n, n), dtype=bool)
    for i in range(n):
        blocked[i, np.arange(i + 2, n)] = True       # meant: from i + 1
    return ~blocked
"""}},
    "mask-on-the-query-axis-lsdefine": {"mistake": "mask-transposed",
        "source": "lsdefine/attention-is-all-you-need-keras@https://github.com/lsdefine/attention-is-all-you-need-keras/issues/16 — "
                  "the mask was broadcast along the wrong axis, blocking rows (queries) instead of columns (keys)",
        "cells": {"masked_softmax": """
def masked_softmax(scores, mask):
    scores = np.asarray(scores, dtype=float)
    return softmax(np.where(np.swapaxes(np.asarray(mask), -1, -2), scores, -np.inf), axis=-1)
"""}},

    # A third harvest from real public code, measured after the diagnoses written from the second one,
    # and never used to write one.
    "padding-mask-only-decision-transformer": {"mistake": "mask-sees-future",
        "source": "kzl/decision-transformer@https://github.com/kzl/decision-transformer/issues/30 — the attention mask "
                  "was 1 wherever history was present, with no triangle: early positions could see later ones",
        "cells": {"causal_mask": """
def causal_mask(n):
    return np.ones((n, n), dtype=bool)      # every position present may be attended to
"""}},
    # A fourth harvest from real public code, measured after the diagnoses written from the third one,
    # and never used to write one.
    "mask-paddings-zero-where-blocked-iaan": {"mistake": "mask-fill-not-minus-inf",
        "source": "30stomercury/Interaction-Aware-Attention-Network@https://github.com/30stomercury/Interaction-Aware-Attention-Network/issues/1 "
                  "— paddings = mask * -1e8 is 0 exactly where the mask is 0, so the blocked scores were set to 0",
        "cells": {"masked_softmax": """
def masked_softmax(scores, mask):
    scores = np.asarray(scores, dtype=float)
    mask = np.asarray(mask, dtype=float)
    paddings = mask * -1e8
    return softmax(np.where(mask == 0, paddings, scores), axis=-1)
"""}},
    "mask-true-read-as-blocked-gemap": {"mistake": "mask-inverted",
        "source": "cnzzx/GeMap@https://github.com/cnzzx/GeMap/issues/1 — the attention mask was built with True for the "
                  "positions that may be attended, and used where True means not allowed",
        "cells": {"masked_softmax": """
def masked_softmax(scores, mask):
    blocked = np.asarray(mask, dtype=bool)            # read as: True = not allowed
    return softmax(np.where(blocked, -np.inf, np.asarray(scores, dtype=float)), axis=-1)
"""}},
    "mask-filled-after-softmax-memory-compressed": {"mistake": "mask-after-softmax",
        "source": "lucidrains/memory-compressed-attention@https://github.com/lucidrains/memory-compressed-attention/issues/2 "
                  "— the softmax ran before the mask, and the blocked entries were filled with -float('-inf'), which is +inf",
        "cells": {"masked_softmax": """
def masked_softmax(scores, mask):
    weights = softmax(np.asarray(scores, dtype=float), axis=-1)
    return np.where(mask, weights, -float("-inf"))
"""}},
    "causal-mask-flipped-pytorch": {"mistake": "mask-transposed",
        "source": "pytorch/pytorch@https://github.com/pytorch/pytorch/issues/29546 — generate_square_subsequent_mask "
                  "came out flipped: early tokens could see the future, later ones less of the past",
        "cells": {"causal_mask": """
def causal_mask(n):
    return np.triu(np.ones((n, n))) == 1
"""}},
}
