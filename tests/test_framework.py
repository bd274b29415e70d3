"""Tests of the course's numpy framework and of the reference attention layer.

Every backward pass is compared with central finite differences in float64.
Run from the repository root:  python3 -m pytest tests/test_framework.py
"""

import itertools
import math
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "solutions" / "weighted_attention"))
import framework as F  # noqa: E402

from autograder.experiment.runs import reference_namespace  # noqa: E402

# the reference layer is the solution notebook's, run the way grading runs it
WeightedAttention = reference_namespace(ROOT / "solutions" / "weighted_attention"
                                        / "weighted_attention.ipynb")["WeightedAttention"]

PROJECTIONS = ("query", "key", "value")
ALL_REMOVALS = [frozenset(c) for n in range(4) for c in itertools.combinations(PROJECTIONS, n)]
CHAPTER_CORPUS = Path("/nonexistent")  # replaced below when the real corpus is found


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------

def leaf(shape, seed=0, scale=1.0):
    """A float64 tensor that wants a gradient."""
    data = np.random.default_rng(seed).standard_normal(shape) * scale
    return F.Tensor(data, requires_grad=True)


def check_gradients(f, tensors, seed=1, eps=1e-6, rtol=1e-5, atol=1e-8):
    """backward() of sum(f() * R) against central differences, for every tensor."""
    out = f()
    weights = np.random.default_rng(seed).standard_normal(out.shape)

    def scalar():
        return float(np.sum(f().data * weights))

    for t in tensors:
        t.grad = None
    (out * F.Tensor(weights)).sum().backward()
    for t in tensors:
        assert t.grad is not None, f"no gradient reached {t}"
        numeric = np.zeros_like(t.data)
        for idx in np.ndindex(t.shape):
            old = t.data[idx]
            t.data[idx] = old + eps
            up = scalar()
            t.data[idx] = old - eps
            down = scalar()
            t.data[idx] = old
            numeric[idx] = (up - down) / (2 * eps)
        np.testing.assert_allclose(t.grad, numeric, rtol=rtol, atol=atol, err_msg=f"gradient of {t}")


def tiny_text(n=2000, seed=0):
    rng = np.random.default_rng(seed)
    return "".join(rng.choice(list("abcdefgh \n"), size=n))


# ---------------------------------------------------------------------------
# Tensor operations
# ---------------------------------------------------------------------------

def test_tensor_defaults_to_float32_and_keeps_float64():
    assert F.Tensor([1, 2, 3]).dtype == np.float32
    assert F.Tensor(np.zeros(3)).dtype == np.float64
    assert F.Tensor(np.zeros(3, dtype=np.float32)).dtype == np.float32


@pytest.mark.parametrize("shape_a, shape_b",
                         [((3, 4), (3, 4)), ((2, 3, 4), (4,)), ((2, 3, 4), (3, 1)), ((4,), (2, 3, 4))])
def test_add_with_broadcasting(shape_a, shape_b):
    a, b = leaf(shape_a, 0), leaf(shape_b, 1)
    check_gradients(lambda: a + b, [a, b])


def test_sub_neg_and_scalar_ops():
    a, b = leaf((2, 3), 0), leaf((2, 3), 1)
    check_gradients(lambda: (a - b) * 3.0 - a / 2.0 + 1.0, [a, b])
    check_gradients(lambda: 2.0 - (-a), [a])


@pytest.mark.parametrize("shape_a, shape_b", [((3, 4), (3, 4)), ((2, 3, 4), (1, 3, 1))])
def test_mul(shape_a, shape_b):
    a, b = leaf(shape_a, 0), leaf(shape_b, 1)
    check_gradients(lambda: a * b, [a, b])


@pytest.mark.parametrize("shape_a, shape_b", [((3, 4), (4, 5)), ((2, 3, 4), (2, 4, 5)), ((2, 3, 4), (4, 5))])
def test_matmul(shape_a, shape_b):
    a, b = leaf(shape_a, 0), leaf(shape_b, 1)
    check_gradients(lambda: a @ b, [a, b])


def test_transpose_reshape_sum_mean():
    a = leaf((2, 3, 4))
    check_gradients(lambda: a.transpose(-2, -1), [a])
    check_gradients(lambda: a.transpose(0, 2), [a])
    check_gradients(lambda: a.T @ a, [a])
    check_gradients(lambda: a.reshape(6, 4), [a])
    check_gradients(lambda: a.reshape((4, 6)), [a])
    check_gradients(lambda: a.sum(), [a])
    check_gradients(lambda: a.sum(axis=1), [a])
    check_gradients(lambda: a.sum(axis=-1, keepdims=True), [a])
    check_gradients(lambda: a.mean(), [a])
    check_gradients(lambda: a.mean(axis=0), [a])
    assert np.isclose(a.mean().item(), a.data.mean())


def test_gradients_accumulate_over_uses():
    a = leaf((3,))
    check_gradients(lambda: a * a + a, [a])  # d/da = 2a + 1
    a.grad = None
    (a * a + a).sum().backward()
    np.testing.assert_allclose(a.grad, 2 * a.data + 1)


@pytest.mark.parametrize("bias", [True, False])
def test_linear_op(bias):
    x, w = leaf((2, 3, 4), 0), leaf((4, 5), 1)
    b = leaf((5,), 2) if bias else None
    check_gradients(lambda: F.linear(x, w, b), [x, w] + ([b] if bias else []))
    expected = x.data @ w.data + (b.data if bias else 0)
    np.testing.assert_allclose(F.linear(x, w, b).data, expected)


def test_embedding_op_with_repeated_ids():
    w = leaf((6, 3))
    ids = np.array([[0, 2, 2], [5, 0, 2]])
    np.testing.assert_array_equal(F.embedding(w, ids).data, w.data[ids])
    check_gradients(lambda: F.embedding(w, ids), [w])


def test_causal_mask_op():
    s = leaf((2, 4, 4))
    out = F.causal_mask(s)
    future = np.triu(np.ones((4, 4), dtype=bool), k=1)
    assert np.all(out.data[:, future] == -1e9)
    np.testing.assert_array_equal(out.data[:, ~future], s.data[:, ~future])
    # a finite fill keeps the finite differences exact (-1e9 would swamp them)
    check_gradients(lambda: F.causal_mask(s, fill=-3.0), [s])
    check_gradients(lambda: F.softmax(F.causal_mask(s)), [s])
    s.grad = None
    F.causal_mask(s).sum().backward()
    assert np.all(s.grad[:, future] == 0) and np.all(s.grad[:, ~future] == 1)


def test_softmax_op():
    x = leaf((2, 3, 5))
    p = F.softmax(x).data
    np.testing.assert_allclose(p.sum(axis=-1), 1.0)
    np.testing.assert_allclose(p, np.exp(x.data) / np.exp(x.data).sum(-1, keepdims=True))
    check_gradients(lambda: F.softmax(x), [x])
    check_gradients(lambda: F.softmax(x, axis=1), [x])
    big = F.Tensor(np.array([[1000.0, 1001.0, -1e9]]))
    np.testing.assert_allclose(F.softmax(big).data, [[1 / (1 + math.e), math.e / (1 + math.e), 0.0]])


def test_softmax_after_mask_gives_zero_weight_to_the_future():
    s = leaf((1, 5, 5))
    weights = F.softmax(F.causal_mask(s)).data[0]
    assert np.all(weights[np.triu_indices(5, k=1)] == 0.0)
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0)


def test_gelu_op():
    x = leaf((3, 7), scale=3.0)
    v = x.data
    expected = 0.5 * v * (1 + np.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v ** 3)))
    np.testing.assert_allclose(F.gelu(x).data, expected)
    check_gradients(lambda: F.gelu(x), [x])


def test_cross_entropy_op():
    logits = leaf((2, 3, 5))
    targets = np.array([[0, 4, 2], [1, 1, 3]])
    z = logits.data.reshape(-1, 5)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    expected = -logp[np.arange(6), targets.reshape(-1)].mean()
    assert np.isclose(F.cross_entropy(logits, targets).item(), expected)
    check_gradients(lambda: F.cross_entropy(logits, targets), [logits])


def test_no_grad_builds_no_graph():
    a = leaf((2, 2))
    with F.no_grad():
        out = a @ a + a
    assert not out.requires_grad and out._parents == ()
    assert (a @ a).requires_grad


def test_float32_stays_float32():
    x = F.Tensor(np.ones((2, 4, 8), dtype=np.float32), requires_grad=True)
    y = F.gelu(F.softmax(F.causal_mask((x @ x.T) * 0.5)))
    assert y.dtype == np.float32
    y.sum().backward()
    assert x.grad.dtype == np.float32


# ---------------------------------------------------------------------------
# Layers and initialisation
# ---------------------------------------------------------------------------

def test_layers_gradients():
    F.seed(3)
    lin = F.Linear(4, 3, name="lin").astype(np.float64)
    seq = F.Sequential(F.Linear(3, 8, name="a"), F.GELU(), F.Linear(8, 3, name="b")).astype(np.float64)
    emb = F.Embedding(5, 3, name="emb").astype(np.float64)
    x = leaf((2, 4, 4))
    check_gradients(lambda: lin(x), [x] + lin.parameters())
    h = leaf((2, 4, 3))
    check_gradients(lambda: seq(h), [h] + seq.parameters())
    ids = np.array([[1, 1, 4, 0]])
    check_gradients(lambda: emb(ids), emb.parameters())
    s = leaf((2, 4, 4))
    check_gradients(lambda: F.Softmax()(F.CausalMask()(s)), [s])
    assert len(seq.parameters()) == 4 and seq.num_parameters() == 3 * 8 + 8 + 8 * 3 + 3


def test_linear_without_bias():
    lin = F.Linear(4, 3, bias=False, name="nobias")
    assert lin.bias is None and lin.num_parameters() == 12


def test_initialisation_distributions():
    with F.init_seed(0):
        lin = F.Linear(400, 300, name="big")
        emb = F.Embedding(500, 64, name="table")
    w, b, e = lin.weight.data, lin.bias.data, emb.weight.data
    assert w.dtype == b.dtype == e.dtype == np.float32
    assert abs(w.std() - math.sqrt(2 / 400)) < 0.002 and abs(w.mean()) < 0.002
    assert b.min() >= 0.0 and b.max() < 1.0 and abs(b.mean() - 0.5) < 0.05
    assert abs(e.std() - 0.02) < 0.0005


def test_initialisation_is_keyed_by_seed_and_name():
    with F.init_seed(7):
        a = F.Linear(4, 4, name="x")
        F.Linear(4, 4, name="other")  # creating another tensor in between shifts nothing
        b = F.Linear(4, 4, name="x")
        c = F.Linear(4, 4, name="y")
    with F.init_seed(8):
        d = F.Linear(4, 4, name="x")
    assert np.array_equal(a.weight.data, b.weight.data) and np.array_equal(a.bias.data, b.bias.data)
    assert not np.array_equal(a.weight.data, c.weight.data)
    assert not np.array_equal(a.weight.data, d.weight.data)
    rng = np.random.default_rng([7, __import__("zlib").crc32(b"x.weight")])
    np.testing.assert_array_equal(a.weight.data, rng.normal(0, math.sqrt(2 / 4), (4, 4)).astype(np.float32))


def test_seed_function_and_context():
    F.seed(5)
    assert F.get_seed() == 5
    with F.init_seed(9):
        assert F.get_seed() == 9
    assert F.get_seed() == 5
    F.seed(0)


# ---------------------------------------------------------------------------
# The reference attention layer
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("remove", ALL_REMOVALS, ids=lambda r: "-".join(sorted(r)) or "full")
def test_attention_gradients_every_removal(remove):
    with F.init_seed(1):
        layer = WeightedAttention(4, remove=remove, name="att").astype(np.float64)
    x = leaf((2, 5, 4), 2)
    check_gradients(lambda: layer(x), [x] + layer.parameters())


@pytest.mark.parametrize("remove", ALL_REMOVALS, ids=lambda r: "-".join(sorted(r)) or "full")
def test_attention_parameter_count_and_names(remove):
    layer = WeightedAttention(64, remove=remove)
    kept = [p for p in PROJECTIONS if p not in remove] + ["out"]
    assert layer.num_parameters() == len(kept) * (64 * 64 + 64)
    names = [name for name, _ in layer.named_parameters()]
    assert names == [f"{p}.{w}" for p in kept for w in ("weight", "bias")]
    assert [t.name for t in layer.parameters()] == [f"attention.{n}" for n in names]
    for p in remove:
        assert getattr(layer, p) is None


@pytest.mark.parametrize("removed", PROJECTIONS)
def test_removed_projection_is_the_identity(removed):
    """A removed projection behaves exactly like that projection set to W = I, b = 0."""
    with F.init_seed(4):
        full = WeightedAttention(6, name="att").astype(np.float64)
        cut = WeightedAttention(6, remove={removed}, name="att").astype(np.float64)
    for name, t in cut.named_parameters():  # paired initialisation: shared tensors are equal
        np.testing.assert_array_equal(t.data, dict(full.named_parameters())[name].data)
    getattr(full, removed).weight.data = np.eye(6)
    getattr(full, removed).bias.data = np.zeros(6)
    x = F.Tensor(np.random.default_rng(0).standard_normal((3, 5, 6)))
    np.testing.assert_allclose(cut(x).data, full(x).data, rtol=1e-12, atol=1e-12)


def test_attention_forward_matches_plain_numpy():
    with F.init_seed(2):
        layer = WeightedAttention(8, name="att").astype(np.float64)
    x = np.random.default_rng(1).standard_normal((2, 6, 8))
    p = {n: t.data for n, t in layer.named_parameters()}
    q, k, v = (x @ p[f"{n}.weight"] + p[f"{n}.bias"] for n in PROJECTIONS)
    s = q @ k.transpose(0, 2, 1) / math.sqrt(8)
    s = np.where(np.tril(np.ones((6, 6), dtype=bool)), s, -np.inf)
    a = np.exp(s - s.max(-1, keepdims=True))
    a /= a.sum(-1, keepdims=True)
    expected = (a @ v) @ p["out.weight"] + p["out.bias"]
    np.testing.assert_allclose(layer(F.Tensor(x)).data, expected, rtol=1e-10)


def test_attention_rejects_unknown_projection():
    with pytest.raises(ValueError):
        WeightedAttention(4, remove={"out"})


def test_attention_is_causal():
    layer = WeightedAttention(4)
    x = np.random.default_rng(0).standard_normal((1, 6, 4)).astype(np.float32)
    changed = x.copy()
    changed[0, 4:] += 5.0  # change the future only
    a, b = layer(F.Tensor(x)).data, layer(F.Tensor(changed)).data
    np.testing.assert_allclose(a[0, :4], b[0, :4], rtol=1e-6)


# ---------------------------------------------------------------------------
# The model
# ---------------------------------------------------------------------------

CHAPTER_COUNTS = {
    frozenset(): 109_889,
    frozenset({"query"}): 101_569,
    frozenset({"key"}): 101_569,
    frozenset({"value"}): 101_569,
    frozenset(PROJECTIONS): 84_929,
}


@pytest.mark.parametrize("remove, count", CHAPTER_COUNTS.items(),
                         ids=["full", "no-query", "no-key", "no-value", "none"])
def test_gpt_parameter_counts_chapter_config(remove, count):
    model = F.GPT(65, WeightedAttention, remove)
    assert model.num_parameters() == count
    # token 65*64 + position 32*64 + output 64*65+65, and per block 2 * (E*4E) + 4E + E for the feed-forward
    assert count == 4160 + 2048 + 4225 + 2 * (33_088 + (4 - len(remove)) * 4160)


def test_gpt_parameter_names_are_attribute_paths_and_init_keys():
    model = F.GPT(65, WeightedAttention, ("key",))
    for path, t in model.named_parameters():
        assert t.name == path
    names = [n for n, _ in model.named_parameters()]
    assert "blocks.1.attention.key.weight" not in names and "blocks.1.attention.query.weight" in names


def test_gpt_variants_share_identical_initialisation():
    full = dict(F.GPT(65, WeightedAttention, seed=3).named_parameters())
    for remove in (("query",), ("value",), PROJECTIONS):
        cut = F.GPT(65, WeightedAttention, remove, seed=3)
        for name, t in cut.named_parameters():
            np.testing.assert_array_equal(t.data, full[name].data, err_msg=name)
    other = dict(F.GPT(65, WeightedAttention, seed=4).named_parameters())
    assert not np.array_equal(other["head.weight"].data, full["head.weight"].data)


@pytest.mark.slow
@pytest.mark.parametrize("remove", [(), ("query",), ("value",), PROJECTIONS],
                         ids=["full", "no-query", "no-value", "none"])
def test_gpt_gradients_tiny_config(remove):
    model = F.GPT(7, WeightedAttention, remove, context_size=5, embed_size=4, n_blocks=2, seed=1)
    model.astype(np.float64)
    rng = np.random.default_rng(0)
    ids, targets = rng.integers(0, 7, (2, 5)), rng.integers(0, 7, (2, 5))
    logits = model(ids)
    assert logits.shape == (2, 5, 7) and logits.dtype == np.float64
    check_gradients(lambda: F.cross_entropy(model(ids), targets), model.parameters())


def test_gpt_rejects_too_long_input():
    model = F.GPT(7, WeightedAttention, context_size=5, embed_size=4)
    with pytest.raises(ValueError):
        model(np.zeros((1, 6), dtype=int))


def test_gradient_check_helper_finds_a_wrong_backward():
    x = leaf((3, 4))
    assert F.gradient_check(lambda: F.gelu(x), [x]) < 1e-6

    def wrong():
        out = F.gelu(x)
        out._backward = lambda: F._accumulate(x, out.grad * 2.0)
        return out

    assert F.gradient_check(wrong, [x]) > 1e-2


# ---------------------------------------------------------------------------
# Optimiser and schedule
# ---------------------------------------------------------------------------

def textbook_adamw(params, grads_per_step, lrs, wd=0.01, b1=0.9, b2=0.999, eps=1e-8, clip=1.0):
    """AdamW written out the long way, in float64."""
    params = [p.astype(np.float64).copy() for p in params]
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    for t, (grads, lr) in enumerate(zip(grads_per_step, lrs), start=1):
        norm = math.sqrt(sum(float((g ** 2).sum()) for g in grads))
        scale = clip / (norm + 1e-6) if norm > clip else 1.0
        for i, (p, g) in enumerate(zip(params, grads)):
            g = g * scale
            m[i] = b1 * m[i] + (1 - b1) * g
            v[i] = b2 * v[i] + (1 - b2) * g * g
            if p.ndim >= 2:
                p -= lr * wd * p
            p -= lr * (m[i] / (1 - b1 ** t)) / (np.sqrt(v[i] / (1 - b2 ** t)) + eps)
    return params


@pytest.mark.parametrize("grad_scale", [0.1, 5.0], ids=["unclipped", "clipped"])
def test_adamw_matches_textbook(grad_scale):
    rng = np.random.default_rng(0)
    w = F.Tensor(rng.standard_normal((3, 2)), requires_grad=True)
    b = F.Tensor(rng.standard_normal(2), requires_grad=True)
    start = [w.data.copy(), b.data.copy()]
    grads = [[rng.standard_normal((3, 2)) * grad_scale, rng.standard_normal(2) * grad_scale] for _ in range(5)]
    lrs = [1e-3, 5e-3, 1e-2, 2e-2, 3e-3]
    opt = F.AdamW([b, w])
    norms = []
    for (gw, gb), lr in zip(grads, lrs):
        opt.zero_grad()
        w.grad += gw
        b.grad += gb
        opt.lr = lr
        norms.append(opt.step())
    expected_w, expected_b = textbook_adamw(start, grads, lrs)
    np.testing.assert_allclose(w.data, expected_w, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(b.data, expected_b, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(norms[0], math.sqrt((grads[0][0] ** 2).sum() + (grads[0][1] ** 2).sum()))


def test_adamw_first_step_by_hand():
    # after one unclipped step, Adam moves each entry by lr * sign(g) (up to eps);
    # the matrix also shrinks by lr * wd first, the bias does not
    w = F.Tensor(np.full((2, 2), 2.0), requires_grad=True)
    b = F.Tensor(np.full(2, 2.0), requires_grad=True)
    opt = F.AdamW([w, b], lr=0.1)
    w.grad += np.array([[0.1, -0.1], [0.2, -0.3]])
    b.grad += np.array([0.1, -0.1])
    opt.step()
    shrunk = 2 * (1 - 0.1 * 0.01)
    np.testing.assert_allclose(w.data, [[shrunk - 0.1, shrunk + 0.1], [shrunk - 0.1, shrunk + 0.1]], rtol=1e-6)
    np.testing.assert_allclose(b.data, [1.9, 2.1], rtol=1e-6)


def test_adamw_views_share_memory_with_parameters():
    model = F.GPT(7, WeightedAttention, context_size=5, embed_size=4, n_blocks=1)
    opt = F.AdamW(model.parameters())
    assert opt.flat.size == model.num_parameters()
    for p in model.parameters():
        assert np.shares_memory(p.data, opt.flat) and np.shares_memory(p.grad, opt.flat_grad)
    assert opt.n_decay == sum(p.size for p in model.parameters() if p.ndim >= 2)


def test_adamw_refuses_parameters_replaced_after_it_was_made():
    """model.astype(...) after the optimizer would train copies nobody reads: step() says so."""
    model = F.GPT(7, WeightedAttention, context_size=5, embed_size=4, n_blocks=1)
    opt = F.AdamW(model.parameters())
    model.astype(np.float64)
    with pytest.raises(RuntimeError, match="make the optimizer after"):
        opt.step()


def test_warmup_cosine_values():
    s = F.WarmupCosine(max_lr=1e-3, total_steps=1100, warmup=100, min_lr=1e-4)
    assert math.isclose(s(0), 1e-5)
    assert math.isclose(s(49), 5e-4)
    assert math.isclose(s(99), 1e-3)
    assert math.isclose(s(100), 1e-3)
    assert math.isclose(s(1099), 1e-4)
    middle = 100 + (1099 - 100) / 2
    assert math.isclose(s(middle), 0.55e-3)
    values = [s(i) for i in range(100, 1100)]
    assert all(a >= b for a, b in zip(values, values[1:]))
    assert math.isclose(F.WarmupCosine(1e-3, 50, 100, 1e-4)(49), 5e-4)  # budget shorter than warmup


# ---------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------

def test_dataset_vocabulary_and_encoding():
    text = "hello world\nhow are you?"
    ds = F.CharDataset(text, context_size=4, stride=2, batch_size=2)
    assert ds.vocab == sorted(set(text)) and ds.vocab_size == len(set(text))
    assert ds.decode(ds.encode(text)) == text
    assert ds.encode("h")[0] == ds.vocab.index("h")


def test_dataset_split_windows_and_batches():
    text = tiny_text(1000)
    ds = F.CharDataset(text, context_size=8, stride=4, batch_size=3, split=0.9)
    assert len(ds.train_tokens) == 900 and len(ds.test_tokens) == 100
    n_train_windows = len(range(0, 900 - 8 - 1, 4))
    n_test_windows = len(range(0, 100 - 8 - 1, 4))
    assert len(ds.train_starts) == n_train_windows == 223
    assert ds.n_train_batches == n_train_windows // 3 == 74
    assert ds.n_test_batches == n_test_windows // 3 == 7
    batches = list(ds.train_batches(epoch=0, seed=0))
    assert len(batches) == 74
    x, y = batches[0]
    assert x.shape == y.shape == (3, 8)
    tokens = ds.train_tokens
    for row_x, row_y in zip(x, y):  # targets are the inputs shifted by one
        start = next(i for i in ds.train_starts if np.array_equal(tokens[i:i + 8], row_x))
        np.testing.assert_array_equal(row_y, tokens[start + 1:start + 9])
    test = list(ds.test_batches())
    assert len(test) == 7
    np.testing.assert_array_equal(test[0][0][0], ds.test_tokens[:8])
    np.testing.assert_array_equal(test[0][1][1], ds.test_tokens[5:13])


def test_dataset_shuffles_each_epoch_reproducibly():
    ds = F.CharDataset(tiny_text(1000), context_size=8, stride=4, batch_size=3)

    def order(epoch, seed):
        return np.concatenate([x[:, 0] * 10_000 + x[:, 1] for x, _ in ds.train_batches(epoch, seed)])

    assert np.array_equal(order(0, 0), order(0, 0))
    assert not np.array_equal(order(0, 0), order(1, 0))
    assert not np.array_equal(order(0, 0), order(0, 1))
    used = sum(len(x) for x, _ in ds.train_batches(0, 0))
    assert used == 74 * 3 == len(ds.train_starts) - 1  # last partial batch dropped


def _real_corpus():
    from autograder.course import config, corpus
    try:
        return F.load_corpus(corpus.find(config.load(str(ROOT / "course.yaml")), download=False))
    except RuntimeError:
        return None


def test_chapter_batch_counts_on_the_real_corpus():
    text = _real_corpus()
    if text is None:
        pytest.skip("tinyshakespeare not found (set TINYSHAKESPEARE to run this test)")
    assert len(text) == 1_115_394
    ds = F.CharDataset(text, context_size=32, stride=16, batch_size=4)
    assert ds.vocab_size == 65
    assert ds.n_train_batches == 15_684
    assert ds.n_test_batches == 1_742
    assert ds.test_windows()[0].shape == (1_742 * 4, 32)


def test_load_corpus_reads_the_path_it_is_given_then_the_environment_then_the_folder(tmp_path, monkeypatch):
    """The framework only reads: the search and the download are the course's (tests/test_corpus.py)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TINYSHAKESPEARE", raising=False)
    given, env, here = tmp_path / "given.txt", tmp_path / "env.txt", tmp_path / "tinyshakespeare.txt"
    for path in (given, env, here):
        path.write_text(path.stem)
    assert F.load_corpus(given) == "given"
    assert F.load_corpus() == "tinyshakespeare"
    monkeypatch.setenv("TINYSHAKESPEARE", str(env))
    assert F.load_corpus() == "env"
    monkeypatch.delenv("TINYSHAKESPEARE")
    here.unlink()
    with pytest.raises(RuntimeError) as error:
        F.load_corpus()
    message = str(error.value)
    assert "\n" not in message and str(here) in message and F.CORPUS_URL in message


def test_load_corpus_names_each_place_it_looked_once(monkeypatch):
    """Run beside the framework (a notebook's folder), the current folder and the framework's are
    one place, named once."""
    monkeypatch.chdir(Path(F.__file__).parent)
    monkeypatch.delenv("TINYSHAKESPEARE", raising=False)
    if (Path(F.__file__).parent / F.CORPUS_NAME).exists():
        pytest.skip("the corpus lies beside the framework here")
    with pytest.raises(RuntimeError) as error:
        F.load_corpus()
    looked = str(error.value).split("looked in ", 1)[1].split(". Fix: ", 1)[0]
    assert looked == str(Path(F.__file__).parent / F.CORPUS_NAME), looked


# ---------------------------------------------------------------------------
# Training, evaluation, sampling
# ---------------------------------------------------------------------------

def small_setup(seed=0, remove=()):
    ds = F.CharDataset(tiny_text(3000), context_size=8, stride=4, batch_size=4)
    model = F.GPT(ds.vocab_size, WeightedAttention, remove, context_size=8, embed_size=16, n_blocks=1, seed=seed)
    return ds, model


def test_train_reduces_loss_and_is_reproducible():
    ds, model = small_setup()
    before = F.evaluate(model, ds)
    seen = []
    result = F.train(model, ds, steps=120, seed=0, log_every=20, on_step=lambda step, loss: seen.append(step))
    after = F.evaluate(model, ds)
    assert result["steps"] == 120 and len(result["losses"]) == 6 and seen == list(range(1, 121))
    assert after < before and result["losses"][-1] < result["losses"][0]
    ds2, model2 = small_setup()
    result2 = F.train(model2, ds2, steps=120, seed=0, log_every=20)
    assert result2["losses"] == result["losses"]
    assert F.evaluate(model2, ds2) == after


def test_the_notebook_offers_on_step_and_a_tolerance_for_the_two_epoch_run():
    """The experiment's long cell shows no progress unless the student passes on_step, so the notebook
    names it; and it says how close seed 0 of the chapter's budget comes to the reference's loss."""
    import json
    folder = Path(__file__).resolve().parent.parent / "solutions" / "weighted_attention"
    nb = json.loads((folder / "weighted_attention.ipynb").read_text(encoding="utf-8"))
    text = next("".join(c["source"]) for c in nb["cells"]
                if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "experiment_intro")
    reference = json.loads((folder / "reference_results.json").read_text(encoding="utf-8"))
    two_epochs = next(b for b in reference["budgets"] if b["steps"] > 10000)
    assert "on_step=" in text
    assert f"{two_epochs['variants']['full']['per_seed'][0]:.4f}" in text.replace("\n", " ")


@pytest.mark.slow
def test_train_by_epochs_counts_steps():
    ds, model = small_setup()
    result = F.train(model, ds, epochs=2, seed=0, log_every=50)
    assert result["steps"] == 2 * ds.n_train_batches
    with pytest.raises(ValueError):
        F.train(model, ds, seed=0)
    assert F.train(model, ds, epochs=0.5, seed=0)["steps"] == round(0.5 * ds.n_train_batches)


def test_evaluate_equals_mean_of_batch_losses():
    ds, model = small_setup()
    with F.no_grad():
        per_batch = [F.cross_entropy(model(x), y).item() for x, y in ds.test_batches()]
    assert len(per_batch) == ds.n_test_batches
    assert math.isclose(F.evaluate(model, ds), float(np.mean(per_batch)), rel_tol=1e-5)
    assert math.isclose(F.evaluate(model, ds, chunk=3), float(np.mean(per_batch)), rel_tol=1e-5)
    assert math.isclose(F.evaluate(model, ds, max_batches=2), float(np.mean(per_batch[:2])), rel_tol=1e-5)


def test_sample_is_reproducible_and_starts_with_prompt():
    ds, model = small_setup()
    a = F.sample(model, ds, "ab", n=20, seed=1)
    assert a.startswith("ab") and len(a) == 22 and set(a) <= set(ds.vocab)
    assert a == F.sample(model, ds, "ab", n=20, seed=1)


# ---------------------------------------------------------------------------
# The reference results shipped beside the notebook
# ---------------------------------------------------------------------------

def test_notebook_reference_results_are_derived_from_the_experiment():
    """reference_results.json is generated from data/projection_removal.json, never edited by hand."""
    import json

    from autograder.course import config
    from autograder.experiment import runs, summary
    setup = runs.Setup(config.load(str(ROOT / "course.yaml")))
    results = json.loads(setup.default_out.read_text())
    shipped = json.loads(setup.summary_out.read_text())
    assert shipped == json.loads(json.dumps(summary.reference_summary(results, setup))), \
        "run `course experiment --plot-only` to regenerate solutions/weighted_attention/reference_results.json"
    full = shipped["budgets"][-1]
    assert full["steps"] == 31368 and full["variants"]["full"]["parameters"] == 109889
    assert full["variants"]["none-of-three"]["parameters"] == 84929
