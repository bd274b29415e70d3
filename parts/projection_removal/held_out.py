"""Held-out mistakes of part projection_removal: written after the diagnoses, and never used to write one.

Each entry names the catalogue id its diagnosis must carry (``mistake``); tests/test_mutants.py
measures how many of these the first sentence of the part's reason names.
"""

import importlib.util
import os

_SPEC = importlib.util.spec_from_file_location("_catalogue", os.path.join(os.path.dirname(__file__), "mistakes.py"))
_CATALOGUE = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(_CATALOGUE)
_REMOVAL = '''
        for projection in remove:
            setattr(self, projection, None)
'''
_PROJECT = '''
        q = x if self.query is None else self.query(x)
        k = x if self.key is None else self.key(x)
        v = x if self.value is None else self.value(x)
'''


def _forward(rest):
    return _CATALOGUE._layer(_REMOVAL, _PROJECT + rest)


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
    "divided-by-the-scale-perceiver-io": {"mistake": "scores-scaled-wrongly",
        "source": "esceptico/perceiver-io@https://github.com/esceptico/perceiver-io/issues/9:src/perceiver_io/attention.py — "
                  "scale = head_dim ** -0.5, then the scores divided by it (times sqrt(E)) instead of multiplied",
        "cells": _forward('''
        scale = self.embed_size ** -0.5
        weights = self.softmax(self.mask((q @ k.transpose(-2, -1)) / scale))
        return self.out(weights @ v)
''')},
    "softmax-over-batch-pytorch-nlp": {"mistake": "softmax-over-batch",
        "source": "PetrochukM/PyTorch-NLP@https://github.com/PetrochukM/PyTorch-NLP/issues/2:torchnlp/nn/attention.py — "
                  "nn.Softmax(dim=0): the weights normalised over the batch, not over the keys",
        "cells": _forward('''
        weights = F.softmax(self.mask((q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.embed_size))), axis=0)
        return self.out(weights @ v)
''')},
    "queries-and-values-scaled-former": {"mistake": "scores-scaled-wrongly",
        "source": "pbloem/former@https://github.com/pbloem/former/issues/2:former/modules.py — queries and values "
                  "each divided by e ** (1/4) (meant: queries and keys), so the scores got e^(1/4), not sqrt(e), "
                  "and the output was shrunk",
        "cells": _forward('''
        q = q * (1.0 / self.embed_size ** 0.25)
        v = v * (1.0 / self.embed_size ** 0.25)
        weights = self.softmax(self.mask(q @ k.transpose(-2, -1)))
        return self.out(weights @ v)
''')},
    "diagonal-blocked-triu-offset-0-former": {"mistake": "mask-without-diagonal",
        "source": "pbloem/former@https://github.com/pbloem/former/issues/10 (the blog post's code) — "
                  "torch.triu_indices(t, t, offset=0) set to -inf: the diagonal blocked too, so row 0 is all -inf (nan)",
        "cells": _forward('''
        T = x.shape[-2]
        rows, cols = np.triu_indices(T, k=0)
        blocked = np.zeros((T, T), dtype=np.float32)
        blocked[rows, cols] = -np.inf
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.embed_size)) + Tensor(blocked)
        weights = self.softmax(scores)
        return self.out(weights @ v)
''')},
}
