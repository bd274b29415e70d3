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

    # Held-out mistakes taken from real public code (translated to this notebook's signatures).
    "softmax-exp-unshifted-pyg": {"mistake": "softmax-no-max-shift",
        "source": "pyg-team/pytorch_geometric@https://github.com/pyg-team/pytorch_geometric/issues/53:"
                  "torch_geometric/utils/softmax.py — exp of the raw scores, no maximum subtracted (nan in GAT)",
        "cells": {"softmax": """
def softmax(z, axis=-1):
    z = np.asarray(z, dtype=float)
    out = np.exp(z)
    return out / out.sum(axis=axis, keepdims=True)
"""}},
    "softmax-your-softmax-so": {"mistake": "softmax-global-sum",
        "source": "https://intellipaat.com/community/942/how-to-implement-the-softmax-function-in-python "
                  "(the Udacity course question) — e_x / e_x.sum(): one max and one sum for the whole array",
        "cells": {"softmax": """
def softmax(z, axis=-1):
    z = np.asarray(z, dtype=float)
    e_x = np.exp(z - np.max(z))
    return e_x / e_x.sum()
"""}},
    "softmax-sum-axis-zero-udacity": {"mistake": "softmax-wrong-axis",
        "source": "https://intellipaat.com/community/942/how-to-implement-the-softmax-function-in-python "
                  "(its 'correct solution') — e_x / e_x.sum(axis=0): always the columns, never `axis`",
        "cells": {"softmax": """
def softmax(z, axis=-1):
    z = np.asarray(z, dtype=float)
    e_x = np.exp(z - np.max(z))
    return e_x / e_x.sum(axis=0)
"""}},
    "entropy-ln-kansa": {"mistake": "entropy-in-nats",
        "source": "davehull/Kansa@https://github.com/davehull/Kansa/pull/71 — entropy with ln, not log2 (nats, not bits)",
        "cells": {"entropy_bits": """
def entropy_bits(p):
    p = np.asarray(p, dtype=float).ravel()
    p = p[p > 0]
    return float(-np.sum(p * np.log(p)))
"""}},
    "attend-divided-by-dk-cntkx": {"mistake": "scores-divided-by-width",
        "source": "delzac/cntkx@https://github.com/delzac/cntkx/issues/10:ops/__init__.py — "
                  "scaled_dot_product_attention divided by d_k, the sqrt was missing",
        "cells": {"attend": """
def attend(q, K, V):
    q = np.asarray(q, dtype=float)
    K = np.asarray(K, dtype=float)
    V = np.asarray(V, dtype=float)
    alpha = softmax(K @ q / q.shape[-1])
    return alpha, alpha @ V
"""}},
    "attend-divided-by-inverse-sqrt-rasbt": {"mistake": "scores-scaled-wrongly",
        "source": "rasbt/LLMs-from-scratch@https://github.com/rasbt/LLMs-from-scratch/issues/856:"
                  "ch03/02_bonus_efficient-multihead-attention/mha-implementations.ipynb — "
                  "attn_scores / keys.shape[-1] ** -0.5: divided by 1/sqrt(d_k), so multiplied by sqrt(d_k)",
        "cells": {"attend": """
def attend(q, K, V):
    q = np.asarray(q, dtype=float)
    K = np.asarray(K, dtype=float)
    V = np.asarray(V, dtype=float)
    alpha = softmax((K @ q) / q.shape[-1] ** -0.5)
    return alpha, alpha @ V
"""}},
    "entropy-without-minus-jubatus": {"mistake": "entropy-sign",
        "source": "jubatus/jubatus@https://github.com/jubatus/jubatus/issues/348:jubatus/core/stat/stat.cpp — "
                  "stat::entropy returned sum p log p without the minus sign (a negative entropy; there with ln)",
        "cells": {"entropy_bits": """
def entropy_bits(p):
    p = np.asarray(p, dtype=float).ravel()
    p = p[p > 0]
    return float(np.sum(p * np.log2(p)))
"""}},

    # A second harvest from real public code, measured after the diagnoses above were written and
    # never used to write one.
    "softmax-exp-of-raw-input-dl4j": {"mistake": "softmax-no-max-shift",
        "source": "deeplearning4j/deeplearning4j-examples@https://github.com/deeplearning4j/deeplearning4j-examples/issues/730:"
                  "libnd4j activations.cpp — the new softmax took exp of the raw input along the dimension, without "
                  "subtracting each row's maximum (nan for large inputs)",
        "cells": {"softmax": """
def softmax(z, axis=-1):
    exponents = np.exp(np.asarray(z, dtype=float))
    return exponents / exponents.sum(axis=axis, keepdims=True)
"""}},
    "softmax-one-max-one-sum-geti": {"mistake": "softmax-global-sum",
        "source": "open-edge-platform/geti@https://github.com/open-edge-platform/geti/pull/1507:openvino_models.py — "
                  "numpy_softmax as x = np.exp(x - np.max(x)); x / np.sum(x): one maximum and one sum for the whole array",
        "cells": {"softmax": """
def softmax(z, axis=-1):
    x = np.asarray(z, dtype=float)
    x = np.exp(x - np.max(x))
    return x / np.sum(x)
"""}},
    "entropy-base-e-slds-lecture": {"mistake": "entropy-in-nats",
        "source": "slds-lmu/lecture_sl@https://github.com/slds-lmu/lecture_sl/pull/203 — entropy computed with the "
                  "natural log where the lecture states bits (fixed to base 2)",
        "cells": {"entropy_bits": """
def entropy_bits(p):
    p = np.asarray(p, dtype=float)
    nonzero = p[p > 0]
    return float(-(nonzero * np.log(nonzero)).sum())
"""}},
    # A third harvest from real public code, measured after the diagnoses written from the second one,
    # and never used to write one.
    "entropy-log-of-zero-gimmemotifs": {"mistake": "entropy-keeps-zeros",
        "source": "vanheeringen-lab/gimmemotifs@https://github.com/vanheeringen-lab/gimmemotifs/issues/275 — "
                  "information content from pfm * numpy.log2(pfm): a zero entry gives 0 * -inf = nan",
        "cells": {"entropy_bits": """
def entropy_bits(p):
    p = np.asarray(p, dtype=float)
    return float(-np.sum(p * np.log2(p)))
"""}},
    "entropy-exp-logp-times-logp-trl": {"mistake": "entropy-keeps-zeros",
        "source": "huggingface/trl@https://github.com/huggingface/trl/pull/7263 (issue #7221) — entropy_from_logits "
                  "summed exp(logp) * logp, which is nan for a token of probability 0 (0 * -inf)",
        "cells": {"entropy_bits": """
def entropy_bits(p):
    with np.errstate(divide="ignore"):
        logp = np.log2(np.asarray(p, dtype=float))
    return float(-np.sum(np.exp2(logp) * logp))
"""}},
    # A fourth harvest from real public code, measured after the diagnoses written from the third one,
    # and never used to write one.
    "softmax-exp-unshifted-nupic": {"mistake": "softmax-no-max-shift",
        "source": "numenta/nupic-legacy@https://github.com/numenta/nupic-legacy/pull/3818 — the softmax took exp of the "
                  "raw values, which overflows when one is large; the fix subtracts a constant (the maximum) first",
        "cells": {"softmax": """
def softmax(z, axis=-1):
    z = np.asarray(z, dtype=float)
    numerator = np.exp(z)
    return numerator / np.sum(numerator, axis=axis, keepdims=True)
"""}},
    "softmax-rounded-unshifted-deepml": {"mistake": "softmax-no-max-shift",
        "source": "Open-Deep-ML/DML-OpenProblem@https://github.com/Open-Deep-ML/DML-OpenProblem/issues/406 — the softmax "
                  "problem's answer exponentiated the raw scores (no maximum subtracted) and rounded each weight to 4 places",
        "cells": {"softmax": """
def softmax(z, axis=-1):
    exp_scores = np.exp(np.asarray(z, dtype=float))
    sum_exp = exp_scores.sum(axis=axis, keepdims=True)
    return np.round(exp_scores / sum_exp, 4)
"""}},
    "entropy-natural-log-scikit-psl": {"mistake": "entropy-in-nats",
        "source": "TRR318/scikit-psl@https://github.com/TRR318/scikit-psl/pull/17 — the entropy was computed with the "
                  "natural log; the fix made it base 2",
        "cells": {"entropy_bits": """
def entropy_bits(p):
    p = np.asarray(p, dtype=float)
    safe = np.where(p > 0, p, 1.0)
    return float(np.sum(-p * np.log(safe)))
"""}},
    "entropy-natural-units-entanglish": {"mistake": "entropy-in-nats",
        "source": "rrtucci/Entanglish@https://github.com/rrtucci/Entanglish/issues/6 — entropies computed in natural "
                  "units (ln) where bits were expected",
        "cells": {"entropy_bits": """
def entropy_bits(p):
    total = 0.0
    for x in np.asarray(p, dtype=float).ravel():
        if x > 0:
            total -= x * math.log(x)
    return total
"""}},
    "attend-softmax-over-kept-dim-afm": {"mistake": "softmax-wrong-axis",
        "source": "hexiangnan/attentional_factorization_machine@https://github.com/hexiangnan/attentional_factorization_machine/issues/19 "
                  "— reduce_sum(..., keep_dims=True) left the scores shaped (batch, pairs, 1), and the softmax ran over "
                  "that last axis of length 1",
        "cells": {"attend": """
def attend(q, K, V):
    q, K, V = (np.asarray(a, dtype=float) for a in (q, K, V))
    scores = np.sum(K * q, axis=1, keepdims=True) / math.sqrt(q.shape[-1])     # (n_keys, 1)
    alpha = softmax(scores)[:, 0]
    return alpha, alpha @ V
"""}},
}
