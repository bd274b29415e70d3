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
}
