"""Public checks for part 2 (transformer_parameters): properties, not answers.

Run them with `pytest` in this folder, or with the notebook's check cell.
"""

from selfcheck.checks import that

KEYS = ("attention", "feed_forward", "layer_norms", "per_layer", "embeddings", "total")


def _count(student, *args, **kwargs):
    counts = student.transformer_parameters(*args, **kwargs)
    that(isinstance(counts, dict), f"transformer_parameters should return a dict, got {type(counts).__name__}")
    missing = [k for k in KEYS if k not in counts]
    that(not missing, f"the dict should have the keys {', '.join(KEYS)}; missing: {', '.join(missing)}")
    return counts


def test_keys_and_whole_numbers(student):
    """the dict has every required key, and every count is a whole number"""
    counts = _count(student, 100, 16, 2, 4, 64)
    for key in KEYS:
        that(float(counts[key]) == int(counts[key]) and counts[key] >= 0,
             f"counts[{key!r}] should be a whole number of parameters, got {counts[key]!r}")


def test_a_layer_is_its_parts(student):
    """per_layer is attention + feed_forward + layer_norms"""
    counts = _count(student, 100, 16, 2, 4, 64)
    that(counts["per_layer"] == counts["attention"] + counts["feed_forward"] + counts["layer_norms"],
         f"per_layer ({counts['per_layer']}) should equal attention + feed_forward + layer_norms "
         f"({counts['attention']} + {counts['feed_forward']} + {counts['layer_norms']})")


def test_heads_change_nothing(student):
    """splitting d_model = 16 into 1, 2, 4, 8 or 16 heads gives the same counts"""
    totals = {h: _count(student, 100, 16, 2, h, 64)["total"] for h in (1, 2, 4, 8, 16)}
    that(len(set(totals.values())) == 1,
         f"the total should not depend on the number of heads (h x d_k = d_model), got {totals}")


def test_without_layer_norms(student):
    """layer_norm=False: no layer-norm parameters, and nothing else changes"""
    with_ln = _count(student, 100, 16, 2, 4, 64)
    without = _count(student, 100, 16, 2, 4, 64, layer_norm=False)
    that(without["layer_norms"] == 0, f"layer_norms should be 0 with layer_norm=False, got {without['layer_norms']}")
    that(without["attention"] == with_ln["attention"] and without["feed_forward"] == with_ln["feed_forward"],
         "switching off the layer norms should not change the attention or feed-forward counts")


def test_more_layers_cost_more(student):
    """each extra block adds exactly per_layer parameters"""
    two = _count(student, 100, 16, 2, 4, 64)
    three = _count(student, 100, 16, 3, 4, 64)
    that(three["total"] - two["total"] == two["per_layer"],
         f"a third block should add per_layer = {two['per_layer']}, added {three['total'] - two['total']}")
