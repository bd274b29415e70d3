"""Time one training step of the chapter's model: the course framework vs PyTorch.

The configuration is the chapter's: batch 4, context 32, embedding 64, 2 blocks,
vocabulary 65, AdamW with clipping and the warmup-cosine learning rate. Both
run on one CPU thread (BLAS limited to one thread for numpy, and
torch.set_num_threads(1)), in alternating rounds so that a noisy machine
affects both alike, and the script prints the median milliseconds per step
and the ratio.

PyTorch is optional and only for this comparison, never a dependency of the
course. To include it, install the CPU wheel into the course's environment (then
`make bench` prints the ratio too), or into a scratch one:

    .venv/bin/pip install torch==2.13.0
    python3 -m venv /tmp/bench && /tmp/bench/bin/pip install torch==2.13.0 numpy
    make bench TORCH_SITE=/tmp/bench/lib/python3.11/site-packages   # torch found there, numpy here
    /tmp/bench/bin/python bench/train_step.py

The reference attention layer is the solution notebook's (loaded through
autograder/experiment/runs.py, which needs only numpy); the corpus is found as
autograder/course/corpus.py says, without downloading.

Without torch the script times the framework alone.

    python3 bench/train_step.py [--steps 300] [--rounds 5] [--warmup 200]
"""

import os

# One BLAS thread, set before numpy loads. This is the benchmark's choice, not
# the library's: at this size a second thread does not help.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from autograder.course import config, corpus  # noqa: E402
from autograder.experiment import runs  # noqa: E402

SETUP = runs.Setup(config.load(str(ROOT / "course.yaml")))
F, WeightedAttention = SETUP.F, SETUP.WeightedAttention      # the solution notebook's layer

if os.environ.get("TORCH_SITE"):      # torch from a scratch environment, after this one's packages
    sys.path.append(os.environ["TORCH_SITE"])
try:  # optional
    import torch
except ImportError:
    torch = None

VOCAB, CONTEXT, EMBED, BLOCKS, BATCH = 65, 32, 64, 2, 4


def make_batches(n, seed=0):
    """Real tinyshakespeare batches when the corpus is at hand, random ids otherwise."""
    try:
        path = corpus.find(SETUP.course, download=False)
        dataset = F.CharDataset(F.load_corpus(path), context_size=CONTEXT, stride=16, batch_size=BATCH)
        batches = []
        while len(batches) < n:
            batches.extend(dataset.train_batches(epoch=len(batches), seed=seed))
        return batches[:n], "tinyshakespeare"
    except RuntimeError:
        rng = np.random.default_rng(seed)
        ids = rng.integers(0, VOCAB, (n, BATCH, CONTEXT + 1))
        return [(b[:, :-1], b[:, 1:]) for b in ids], "random ids"


class NumpyRunner:
    def __init__(self, total_steps):
        self.model = F.GPT(VOCAB, WeightedAttention, seed=0)
        self.optimizer = F.AdamW(self.model.parameters())
        self.schedule = F.WarmupCosine(1e-3, total_steps, 100, 1e-4)
        self.step_count = 0

    def step(self, x, y):
        self.optimizer.lr = self.schedule(self.step_count)
        self.optimizer.zero_grad()
        loss = F.cross_entropy(self.model(x), y)
        loss.backward()
        self.optimizer.step()
        self.step_count += 1
        return float(loss.data)


def build_torch_runner(numpy_model, total_steps):
    """The same model in PyTorch eager mode, starting from the same weights."""
    nn = torch.nn

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.query, self.key, self.value, self.out = (nn.Linear(EMBED, EMBED) for _ in range(4))
            self.register_buffer("blocked", ~torch.tril(torch.ones(CONTEXT, CONTEXT, dtype=torch.bool)))

        def forward(self, x):
            q, k, v = self.query(x), self.key(x), self.value(x)
            scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(EMBED))
            T = x.shape[1]
            scores = scores.masked_fill(self.blocked[:T, :T], -1e9)
            return self.out(torch.softmax(scores, dim=-1) @ v)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.attention = Attention()
            self.expand, self.contract = nn.Linear(EMBED, 4 * EMBED), nn.Linear(4 * EMBED, EMBED)

        def forward(self, x):  # no residual, no layer norm, as in the chapter
            return self.contract(nn.functional.gelu(self.expand(self.attention(x)), approximate="tanh"))

    class TorchGPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.token, self.position = nn.Embedding(VOCAB, EMBED), nn.Embedding(CONTEXT, EMBED)
            self.blocks = nn.ModuleList(Block() for _ in range(BLOCKS))
            self.head = nn.Linear(EMBED, VOCAB)

        def forward(self, ids):
            x = self.token(ids) + self.position(torch.arange(ids.shape[1]))
            for block in self.blocks:
                x = block(x)
            return self.head(x)

    model = TorchGPT()
    source = dict(numpy_model.named_parameters())
    names = {"token.weight": "token_embedding.weight", "position.weight": "position_embedding.weight"}
    with torch.no_grad():
        for name, p in model.named_parameters():
            theirs = names.get(name) or (name.replace("expand", "feed_forward.layers.0")
                                         .replace("contract", "feed_forward.layers.2"))
            value = source[theirs].data
            if name.endswith("weight") and "token" not in name and "position" not in name:
                value = value.T  # torch stores Linear weights as (out, in)
            p.copy_(torch.from_numpy(np.ascontiguousarray(value)))
    decay = [p for p in model.parameters() if p.ndim >= 2]
    no_decay = [p for p in model.parameters() if p.ndim < 2]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                                   {"params": no_decay, "weight_decay": 0.0}], lr=1e-3, betas=(0.9, 0.999), eps=1e-8)
    schedule = F.WarmupCosine(1e-3, total_steps, 100, 1e-4)
    state = {"step": 0}

    def step(x, y):
        for group in optimizer.param_groups:
            group["lr"] = schedule(state["step"])
        optimizer.zero_grad(set_to_none=True)
        logits = model(x)
        loss = nn.functional.cross_entropy(logits.reshape(-1, VOCAB), y.reshape(-1))
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        state["step"] += 1
        return loss.item()

    return step


def time_block(step, batches):
    times = []
    for x, y in batches:
        start = time.perf_counter()
        step(x, y)
        times.append(time.perf_counter() - start)
    return times


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=300, help="steps per round and implementation")
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds")
    parser.add_argument("--warmup", type=int, default=200, help="untimed steps first")
    args = parser.parse_args(argv)

    total = args.warmup + args.steps * args.rounds
    batches, source = make_batches(total)
    numpy_runner = NumpyRunner(total)
    steps = {"numpy framework": numpy_runner.step}
    data = {"numpy framework": batches}
    if torch is not None:
        torch.set_num_threads(1)
        steps["pytorch eager"] = build_torch_runner(numpy_runner.model, total)
        data["pytorch eager"] = [(torch.from_numpy(x), torch.from_numpy(y)) for x, y in batches]
    # Same weights and the same first batch, so the first losses agree: a check
    # that the two implementations compute the same model.
    first = {name: step(*data[name][0]) for name, step in steps.items()}

    for name in steps:  # warm up
        time_block(steps[name], data[name][1:args.warmup])
    times = {name: [] for name in steps}
    for r in range(args.rounds):
        lo = args.warmup + r * args.steps
        for name in steps:
            times[name] += time_block(steps[name], data[name][lo:lo + args.steps])

    print(f"training step, batch {BATCH} x context {CONTEXT}, E {EMBED}, {BLOCKS} blocks, vocabulary {VOCAB}; "
          f"{args.rounds} x {args.steps} timed steps each on {source}, one thread")
    print(f"python {platform.python_version()}, numpy {np.__version__}"
          + (f", torch {torch.__version__}" if torch is not None else ", torch not installed")
          + f", {platform.processor() or platform.machine()}")
    medians = {}
    for name, t in times.items():
        t = np.array(t) * 1e3
        medians[name] = float(np.median(t))
        print(f"  {name:16s} {medians[name]:6.2f} ms/step  (p10 {np.percentile(t, 10):.2f}, p90 "
              f"{np.percentile(t, 90):.2f}; first loss {first[name]:.4f})")
    if torch is not None:
        ratio = medians["pytorch eager"] / medians["numpy framework"]
        print(f"  ratio: pytorch / numpy = {ratio:.2f}")
        framework = medians["numpy framework"] / medians["pytorch eager"]
        print(f"  figure: the framework's training step against PyTorch eager: {framework:.2f}x its time "
              f"(target <= 0.5x) {'met' if framework <= 0.5 else 'NOT MET'}")
    else:
        print("  (to compare with PyTorch: .venv/bin/pip install torch==2.13.0, the CPU wheel, or see the top of "
              "bench/train_step.py for a scratch venv)")
    return medians


if __name__ == "__main__":
    main()
