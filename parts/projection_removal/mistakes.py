"""Part projection_removal (the WeightedAttention layer): realistic mistakes, and correct layers written differently.

Each entry replaces the solution cell `weighted_attention` of the reference notebook; the
given lines of that cell are written once below (`_layer`), so an entry shows only what a
student wrote in the two regions: (a) removing projections, (b) the forward pass. Every
mistake must lose points in this part; every correct variant must earn full marks
(tests/test_mutants.py). The entry marked ``demo`` is a student of the `course demo` cohort.
"""

# The cell as released, up to region (a), and between regions (a) and (b).
_GIVEN = '''
class WeightedAttention(Module):
    """Causal self-attention with one head as wide as the embedding.

    q = query(x), k = key(x), v = value(x)          each (B, T, E)
    weights = softmax(mask(q k^T / sqrt(E)))        (B, T, T), row i sums to 1 over j <= i
    output = out(weights v)                         (B, T, E)

    remove: any of "query", "key", "value". A removed projection is gone from
    the model (no parameters) and x itself is used in its place.
    """

    def __init__(self, embed_size, remove=(), *, name="attention"):
        remove = set(remove)
        unknown = remove - {"query", "key", "value"}
        if unknown:
            raise ValueError(f"remove: only query, key and value can be removed, not {sorted(unknown)}")
        self.embed_size = embed_size
        self.remove = remove
        # Given: all four projections, always created in this order and under these
        # names, so every variant starts from the same weights for the layers it keeps.
        self.query = Linear(embed_size, embed_size, name=f"{name}.query")
        self.key = Linear(embed_size, embed_size, name=f"{name}.key")
        self.value = Linear(embed_size, embed_size, name=f"{name}.value")
        self.out = Linear(embed_size, embed_size, name=f"{name}.out")
        self.mask = CausalMask()
        self.softmax = Softmax(axis=-1)
        # (a) Remove the projections named in `remove` (set the attribute to None,
        #     or delete it): the model then no longer counts or trains their parameters.
'''

_BETWEEN = '''

    def forward(self, x):
        """x: a Tensor (B, T, E) -> a Tensor (B, T, E)."""
        # (b) Q, K and V from the projections (or x itself where one is removed), the
        #     scores scaled by the square root of the width, the causal mask, the
        #     softmax over the keys, the weighted sum of the values, then `out`.
'''


def _layer(removal, forward):
    """The `weighted_attention` cell with regions (a) and (b) filled in."""
    return {"weighted_attention": _GIVEN + removal.strip("\n") + _BETWEEN + forward.strip("\n") + "\n"}


def _forward(rest):
    """The cell whose region (a) sets the removed projections to None and whose region (b) takes q, k and v
    as the reference does, then ``rest``."""
    return _layer('''
        for projection in remove:
            setattr(self, projection, None)
''', '''
        q = x if self.query is None else self.query(x)
        k = x if self.key is None else self.key(x)
        v = x if self.value is None else self.value(x)
''' + rest)


MISTAKES = {
    "removed-but-parameters-kept": {"mistake": "removed-but-kept", "warned": "the key's Linear must be gone from the model",
        "demo": True, "cells": _layer('''
        pass   # the removed projections are simply not used in forward
''', '''
        q = x if 'query' in self.remove else self.query(x)
        k = x if 'key' in self.remove else self.key(x)
        v = x if 'value' in self.remove else self.value(x)
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.embed_size))   # (B, T, T)
        weights = self.softmax(self.mask(scores))                    # future keys get weight 0
        return self.out(weights @ v)                                 # (B, T, E)
''')},
    "scale-by-width": {"mistake": "scores-divided-by-width", "warned": "One head as wide as the embedding, so the scale is sqrt(E)",
        "cells": _layer('''
        for projection in remove:
            setattr(self, projection, None)
''', '''
        q = x if self.query is None else self.query(x)               # (B, T, E)
        k = x if self.key is None else self.key(x)                   # (B, T, E)
        v = x if self.value is None else self.value(x)               # (B, T, E)
        scores = (q @ k.transpose(-2, -1)) / self.embed_size
        weights = self.softmax(self.mask(scores))                    # future keys get weight 0
        return self.out(weights @ v)                                 # (B, T, E)
''')},
    "hard-coded-scale-of-64": {"mistake": "scores-scaled-wrongly", "warned": "the scale is sqrt(E)",
        "cells": _layer('''
        for projection in remove:
            setattr(self, projection, None)
''', '''
        q = x if self.query is None else self.query(x)               # (B, T, E)
        k = x if self.key is None else self.key(x)                   # (B, T, E)
        v = x if self.value is None else self.value(x)               # (B, T, E)
        scores = (q @ k.transpose(-2, -1)) / 8.0   # sqrt(64)
        weights = self.softmax(self.mask(scores))                    # future keys get weight 0
        return self.out(weights @ v)                                 # (B, T, E)
''')},
    "no-mask": {"mistake": "no-causal-mask", "warned": "The mask blocks every key j > i before the softmax",
        "cells": _layer('''
        for projection in remove:
            setattr(self, projection, None)
''', '''
        q = x if self.query is None else self.query(x)               # (B, T, E)
        k = x if self.key is None else self.key(x)                   # (B, T, E)
        v = x if self.value is None else self.value(x)               # (B, T, E)
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.embed_size))   # (B, T, T)
        weights = self.softmax(scores)
        return self.out(weights @ v)                                 # (B, T, E)
''')},
    "mask-after-softmax": {"warned": "The mask blocks every key j > i before the softmax",
        "cells": _layer('''
        for projection in remove:
            setattr(self, projection, None)
''', '''
        q = x if self.query is None else self.query(x)               # (B, T, E)
        k = x if self.key is None else self.key(x)                   # (B, T, E)
        v = x if self.value is None else self.value(x)               # (B, T, E)
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.embed_size))   # (B, T, T)
        weights = self.mask(self.softmax(scores))
        return self.out(weights @ v)                                 # (B, T, E)
''')},
    "softmax-over-queries": {"warned": "the softmax, which then runs over the keys (the last axis)",
        "cells": _layer('''
        for projection in remove:
            setattr(self, projection, None)
''', '''
        q = x if self.query is None else self.query(x)               # (B, T, E)
        k = x if self.key is None else self.key(x)                   # (B, T, E)
        v = x if self.value is None else self.value(x)               # (B, T, E)
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.embed_size))   # (B, T, T)
        weights = F.softmax(self.mask(scores), axis=-2)
        return self.out(weights @ v)                                 # (B, T, E)
''')},
    "out-projection-skipped": {"mistake": "out-not-applied", "warned": "output = (A V) W_o + b_o",
        "cells": _layer('''
        for projection in remove:
            setattr(self, projection, None)
''', '''
        q = x if self.query is None else self.query(x)               # (B, T, E)
        k = x if self.key is None else self.key(x)                   # (B, T, E)
        v = x if self.value is None else self.value(x)               # (B, T, E)
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.embed_size))   # (B, T, T)
        weights = self.softmax(self.mask(scores))                    # future keys get weight 0
        return weights @ v
''')},
    "value-from-query": {"mistake": "value-unused", "warned": "V = x W_v + b_v",
        "cells": _layer('''
        for projection in remove:
            setattr(self, projection, None)
''', '''
        q = x if self.query is None else self.query(x)
        k = x if self.key is None else self.key(x)
        v = x if self.value is None else self.query(x)
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.embed_size))   # (B, T, T)
        weights = self.softmax(self.mask(scores))                    # future keys get weight 0
        return self.out(weights @ v)                                 # (B, T, E)
''')},
    "remove-ignored": {"mistake": "removed-still-applied", "warned": "with remove=('key',) the layer uses K = x",
        "cells": _layer('''
        pass
''', '''
        q, k, v = self.query(x), self.key(x), self.value(x)
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.embed_size))   # (B, T, T)
        weights = self.softmax(self.mask(scores))                    # future keys get weight 0
        return self.out(weights @ v)                                 # (B, T, E)
''')},
    "weights-transposed-on-values": {"warned": "output = out(weights v)",
        "cells": _layer('''
        for projection in remove:
            setattr(self, projection, None)
''', '''
        q = x if self.query is None else self.query(x)               # (B, T, E)
        k = x if self.key is None else self.key(x)                   # (B, T, E)
        v = x if self.value is None else self.value(x)               # (B, T, E)
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.embed_size))   # (B, T, T)
        weights = self.softmax(self.mask(scores))                    # future keys get weight 0
        return self.out(weights.transpose(-2, -1) @ v)
''')},
    "removed-as-zeros": {"warned": "x itself is used in its place",
        "cells": _layer('''
        for projection in remove:
            setattr(self, projection, None)
''', '''
        q = x * 0.0 if self.query is None else self.query(x)         # nothing where a projection is gone
        k = x * 0.0 if self.key is None else self.key(x)
        v = x * 0.0 if self.value is None else self.value(x)
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.embed_size))   # (B, T, T)
        weights = self.softmax(self.mask(scores))                    # future keys get weight 0
        return self.out(weights @ v)                                 # (B, T, E)
''')},
    "keys-transposed-wrong": {"mistake": "scores-transposed", "warned": "A = softmax(mask(Q K^T / sqrt(E)))",
        "cells": _layer('''
        for projection in remove:
            setattr(self, projection, None)
''', '''
        q = x if self.query is None else self.query(x)               # (B, T, E)
        k = x if self.key is None else self.key(x)                   # (B, T, E)
        v = x if self.value is None else self.value(x)               # (B, T, E)
        scores = (k @ q.transpose(-2, -1)) * (1.0 / math.sqrt(self.embed_size))
        weights = self.softmax(self.mask(scores))                    # future keys get weight 0
        return self.out(weights @ v)                                 # (B, T, E)
''')},
    "softmax-in-numpy-cuts-the-gradient": {"mistake": "graph-cut", "warned": "Use the framework's operations ..., not numpy on .data",
        "cells": _layer('''
        for projection in remove:
            setattr(self, projection, None)
''', '''
        q = x if self.query is None else self.query(x)               # (B, T, E)
        k = x if self.key is None else self.key(x)                   # (B, T, E)
        v = x if self.value is None else self.value(x)               # (B, T, E)
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.embed_size))   # (B, T, T)
        s = np.where(np.tril(np.ones(scores.shape[-2:], dtype=bool)), scores.data, -1e9)
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        weights = Tensor(e / e.sum(axis=-1, keepdims=True))
        return self.out(weights @ v)                                 # (B, T, E)
''')},
    "no-scale": {"mistake": "scores-not-scaled", "warned": "the scale is sqrt(E)", "cells": _layer('''
        for projection in remove:
            setattr(self, projection, None)
''', '''
        q = x if self.query is None else self.query(x)               # (B, T, E)
        k = x if self.key is None else self.key(x)                   # (B, T, E)
        v = x if self.value is None else self.value(x)               # (B, T, E)
        weights = self.softmax(self.mask(q @ k.transpose(-2, -1)))
        return self.out(weights @ v)                                 # (B, T, E)
''')},
    "scale-by-sqrt-of-length": {"mistake": "scores-scaled-wrongly", "warned": "One head as wide as the embedding, so the scale is sqrt(E)",
        "cells": _layer('''
        for projection in remove:
            setattr(self, projection, None)
''', '''
        q = x if self.query is None else self.query(x)               # (B, T, E)
        k = x if self.key is None else self.key(x)                   # (B, T, E)
        v = x if self.value is None else self.value(x)               # (B, T, E)
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(x.shape[-2]))
        weights = self.softmax(self.mask(scores))                    # future keys get weight 0
        return self.out(weights @ v)                                 # (B, T, E)
''')},
    "mask-blocks-the-past": {"mistake": "no-causal-mask", "warned": "The mask blocks every key j > i", "cells": _layer('''
        for projection in remove:
            setattr(self, projection, None)
''', '''
        q = x if self.query is None else self.query(x)               # (B, T, E)
        k = x if self.key is None else self.key(x)                   # (B, T, E)
        v = x if self.value is None else self.value(x)               # (B, T, E)
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.embed_size))   # (B, T, T)
        weights = self.softmax(self.mask(scores.transpose(-2, -1)).transpose(-2, -1))
        return self.out(weights @ v)                                 # (B, T, E)
''')},
    "no-attention-at-all": {"cells": _layer('''
        for projection in remove:
            setattr(self, projection, None)
''', '''
        v = x if self.value is None else self.value(x)               # queries and keys never used
        return self.out(v)
''')},
    # Taken from real public code (held out until their diagnoses were written).
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
    "scaling-after-softmax-vit": {"mistake": "scale-after-softmax",
        "source": "FrancescoSaverioZuppichini/ViT@https://github.com/FrancescoSaverioZuppichini/ViT/issues/2 — "
                  "att = F.softmax(energy, dim=-1) * self.scaling: the scale applied to the weights, after the softmax",
        "cells": _forward('''
        weights = self.softmax(self.mask(q @ k.transpose(-2, -1))) * (1.0 / math.sqrt(self.embed_size))
        return self.out(weights @ v)
''')},
}

CORRECT = {
    "minus-inf-mask-scale-query-first": _layer('''
        for projection in ("query", "key", "value"):
            if projection in remove:
                setattr(self, projection, None)
''', '''
        q = x if self.query is None else self.query(x)               # (B, T, E)
        k = x if self.key is None else self.key(x)                   # (B, T, E)
        v = x if self.value is None else self.value(x)               # (B, T, E)
        scaled = q * (1 / self.embed_size ** 0.5)
        weights = F.softmax(F.causal_mask(scaled @ k.T, fill=-np.inf))
        return self.out(weights @ v)                                 # (B, T, E)
'''),
    "additive-mask-and-getattr": _layer('''
        for projection in remove:
            setattr(self, projection, None)
''', '''
        q, k, v = [x if getattr(self, p) is None else getattr(self, p)(x) for p in ("query", "key", "value")]
        T = x.shape[-2]
        blocked = Tensor(np.triu(np.full((T, T), -1e9, dtype=np.float32), k=1))
        scores = q @ k.transpose(-2, -1) / math.sqrt(x.shape[-1]) + blocked
        weights = scores.softmax(axis=-1)
        return self.out(weights @ v)                                 # (B, T, E)
'''),
    "delete-attributes": _layer('''
        for projection in sorted(remove):
            delattr(self, projection)
''', '''
        q = self.query(x) if hasattr(self, "query") else x
        k = self.key(x) if hasattr(self, "key") else x
        v = self.value(x) if hasattr(self, "value") else x
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.embed_size))   # (B, T, T)
        weights = self.softmax(self.mask(scores))                    # future keys get weight 0
        return self.out(weights @ v)                                 # (B, T, E)
'''),
    "float32-throughout": _layer('''
        for projection in remove:
            setattr(self, projection, None)
''', '''
        def float32(t):     # a cast the gradient flows back through, in the input's dtype
            out = F._result(t.data.astype(np.float32), (t,))
            if out.requires_grad:
                out._backward = lambda: F._accumulate(t, out.grad.astype(t.dtype))
            return out

        def project(linear, inp):
            return inp if linear is None else F.linear(inp, float32(linear.weight), float32(linear.bias))

        x = float32(x)
        q, k, v = project(self.query, x), project(self.key, x), project(self.value, x)
        scores = (q @ k.transpose(-2, -1)) * float(np.float32(1.0 / math.sqrt(self.embed_size)))
        weights = self.softmax(self.mask(scores))
        return project(self.out, weights @ v)
'''),
}
