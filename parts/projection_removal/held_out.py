"""Held-out mistakes of part projection_removal: written after the diagnoses, and never used to write one.

Each entry names the catalogue id its diagnosis must carry (``mistake``); tests/test_mutants.py
measures how many of these the first sentence of the part's reason names.
"""

import importlib.util
import os

_SPEC = importlib.util.spec_from_file_location("_catalogue", os.path.join(os.path.dirname(__file__), "mistakes.py"))
_CATALOGUE = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(_CATALOGUE)
_forward = _CATALOGUE._forward


MISTAKES = {
    "divided-by-the-width": {"mistake": "scores-divided-by-width", "cells": _forward('''
        weights = self.softmax(self.mask((q @ k.transpose(-2, -1)) * (1.0 / self.embed_size)))
        return self.out(weights @ v)
''')},
    "mask-multiplied-after": {"mistake": "mask-after-softmax", "cells": _forward('''
        weights = self.mask(self.softmax((q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.embed_size))))
        return self.out(weights @ v)
''')},
    "softmax-over-axis-one": {"mistake": "softmax-over-queries", "cells": _forward('''
        weights = F.softmax(self.mask((q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.embed_size))), axis=1)
        return self.out(weights @ v)
''')},
    "no-mask-at-all": {"mistake": "no-causal-mask", "cells": _forward('''
        weights = self.softmax((q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.embed_size)))
        return self.out(weights @ v)
''')},
    # Held-out mistakes taken from real public code (translated to this notebook's signatures).
    # A second harvest from real public code, measured after the diagnoses above were written and
    # never used to write one.
    "no-projection-after-attention-stevezheng23": {"mistake": "out-not-applied",
        "source": "stevezheng23/sequence_labeling_tf@https://github.com/stevezheng23/sequence_labeling_tf/pull/83 — the "
                  "multi-head attention returned the weighted values with no output projection layer",
        "cells": _forward('''
        weights = self.softmax(self.mask((q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.embed_size))))
        return weights @ v
''')},
    "values-from-the-keys-infinigen": {"mistake": "value-unused",
        "source": "snu-comparch/InfiniGen@https://github.com/snu-comparch/InfiniGen/issues/5:speedup/uvm/selfattention.py — "
                  "the value cache was filled with k (self.past_key_value[1] = k), so the keys served as values",
        "cells": _forward('''
        v = k
        weights = self.softmax(self.mask((q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.embed_size))))
        return self.out(weights @ v)
''')},
    "queries-and-keys-scaled-up-x-transformers": {"mistake": "scores-scaled-wrongly",
        "source": "lucidrains/x-transformers@https://github.com/lucidrains/x-transformers/issues/24 — queries and keys "
                  "each multiplied by dim ** 0.5 by their norms, then the scores by dim ** -0.5: sqrt(dim) times the "
                  "raw scores instead of 1 / sqrt(dim)",
        "cells": _forward('''
        q = q * math.sqrt(self.embed_size)
        k = k * math.sqrt(self.embed_size)
        weights = self.softmax(self.mask((q @ k.transpose(-2, -1)) * self.embed_size ** -0.5))
        return self.out(weights @ v)
''')},
    "no-causal-mask-entrenar": {"mistake": "no-causal-mask",
        "source": "paiml/entrenar@https://github.com/paiml/entrenar/issues/310:cuda_block.rs — the row-wise softmax ran "
                  "over the full score matrix with no causal mask: every token attended to the future",
        "cells": _forward('''
        weights = self.softmax((q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.embed_size)))
        return self.out(weights @ v)
''')},

    # A third harvest from real public code, measured after the diagnoses written from the second one,
    # and never used to write one.
    "sm-scale-left-at-one-mlc-llm": {"mistake": "scores-not-scaled",
        "source": "mlc-ai/mlc-llm@https://github.com/mlc-ai/mlc-llm/pull/3426 — the fallback attention path called with "
                  "sm_scale=1.0 (the default) instead of 1 / sqrt(head_dim)",
        "cells": _forward('''
        sm_scale = 1.0
        weights = self.softmax(self.mask((q @ k.transpose(-2, -1)) * sm_scale))
        return self.out(weights @ v)
''')},
    "causal-skipped-without-mask-xformers": {"mistake": "no-causal-mask",
        "source": "facebookresearch/xformers@https://github.com/facebookresearch/xformers/issues/103:"
                  "xformers/components/attention/scaled_dot_product.py — with no attention mask passed, the causal "
                  "mask was skipped too",
        "cells": _forward('''
        att_mask = None
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.embed_size))
        if att_mask is not None:
            scores = self.mask(scores)
        return self.out(self.softmax(scores) @ v)
''')},
    # A fourth harvest from real public code, measured after the diagnoses written from the third one,
    # and never used to write one.
    "input-not-value-ddpm-port": {"mistake": "value-unused",
        "source": "hmdolatabadi/denoising_diffusion@https://github.com/hmdolatabadi/denoising_diffusion/issues/1:lib/model.py "
                  "— the attention weights were applied to the input (einsum(attn, input)); `value` was never used",
        "cells": _forward("""
        weights = self.softmax(self.mask((q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.embed_size))))
        return self.out(weights @ x)
""")},
    "weights-not-transposed-sagan": {"mistake": "weights-transposed-on-values",
        "source": "heykeetae/Self-Attention-GAN@https://github.com/heykeetae/Self-Attention-GAN/issues/11:sagan_models.py "
                  "— attention.permute(0, 1, 2) left the weights as they were where (0, 2, 1) was meant, so the values "
                  "were mixed by the transposed weights",
        "cells": _forward("""
        weights = self.softmax(self.mask((q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.embed_size))))
        return self.out(weights.transpose(-2, -1) @ v)
""")},
    "softmax-wrong-dim-llms-rs": {"mistake": "softmax-over-queries",
        "source": "nerdai/llms-from-scratch-rs@https://github.com/nerdai/llms-from-scratch-rs/pull/30 — the causal "
                  "attention's weights were a softmax over the wrong dimension of the scores, not over the keys",
        "cells": _forward("""
        scores = self.mask((q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.embed_size)))
        return self.out(F.softmax(scores, axis=-2) @ v)
""")},
}
