"""The show cells' pictures render headless (Agg), with the labels a reader needs."""

import pytest

from selfcheck import plots

pytestmark = pytest.mark.slow      # matplotlib renders real figures: seconds each


@pytest.fixture(scope="module")
def plt():
    """pyplot, headless; loaded by the tests that draw, not when the module is collected."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot
    return matplotlib.pyplot


def test_parameter_bars_renders_with_counts_and_shares(plt, tmp_path):
    counts = {"embeddings": 25_600_000, "attention": 6_291_456, "feed-forward": 12_598_272, "norms": 12_288}
    ax = plots.parameter_bars(counts, title="six layers")
    assert [t.get_text() for t in ax.get_xticklabels()] == list(counts)
    texts = [t.get_text() for t in ax.texts]
    assert any("25,600,000" in t and "57.5%" in t for t in texts)
    assert any("12,288" in t for t in texts)          # a tiny group is still labelled
    assert "44,502,016" in ax.get_title()
    ax.figure.savefig(tmp_path / "bars.png")
    assert (tmp_path / "bars.png").stat().st_size > 1000
    plt.close(ax.figure)


def test_parameter_bars_draws_on_the_axes_it_is_given(plt):
    fig, axes = plt.subplots(1, 2)
    assert plots.parameter_bars({"a": 1, "b": 3}, ax=axes[1]) is axes[1]
    assert len(axes[0].patches) == 0 and len(axes[1].patches) == 2
    plt.close(fig)


CHAPTER_MASKED = [[1.0, 0.0, 0.0, 0.0],
                  [0.1824, 0.8176, 0.0, 0.0],
                  [0.2312, 0.1402, 0.6285, 0.0],
                  [0.2760, 0.1674, 0.1015, 0.4551]]
TOKENS = ["the", "dog", "barked", "loudly"]


def _nontrivial_png(path):
    """A PNG that is more than a blank canvas: many colours, ink on a good part of it."""
    import matplotlib.pyplot as plt
    import numpy as np
    assert path.stat().st_size > 5000
    image = plt.imread(path)[..., :3]
    colours = np.unique((image * 255).astype(np.uint8).reshape(-1, 3), axis=0)
    assert len(colours) > 50
    assert (image.mean(axis=-1) < 0.9).mean() > 0.02


def test_attention_heatmap_renders_blocked_cells_blank(plt, tmp_path):
    import numpy as np
    ax = plots.attention_heatmap(CHAPTER_MASKED, TOKENS, title="mask, then softmax")
    assert [t.get_text() for t in ax.get_xticklabels()] == TOKENS
    assert [t.get_text() for t in ax.get_yticklabels()] == TOKENS
    shown = ax.images[0].get_array()
    assert np.array_equal(np.ma.getmaskarray(shown), np.triu(np.ones((4, 4), bool), k=1))
    assert tuple(ax.images[0].cmap.get_bad()[:3]) == (1.0, 1.0, 1.0)          # blocked cells are white
    texts = [t.get_text() for t in ax.texts]
    assert "0.82" in texts and "0.46" in texts and "0.00" not in texts  # values, none on blank cells
    assert sum("sum 1.0000" in t for t in texts) == 3                  # row sums beside the rows
    assert ax.get_title() == "mask, then softmax"
    ax.figure.savefig(tmp_path / "heatmap.png", dpi=80)
    _nontrivial_png(tmp_path / "heatmap.png")
    plt.close(ax.figure)


def test_attention_heatmap_flags_rows_that_do_not_sum_to_one(plt):
    fig, axes = plt.subplots(1, 2)
    wrong = [[0.4551, 0, 0], [0.1230, 0.5512, 0], [0.2, 0.3, 0.5]]
    assert plots.attention_heatmap(wrong, ["a", "b", "c"], ax=axes[1]) is axes[1]
    sums = [t for t in axes[1].texts if t.get_text().startswith("sum")]
    assert [t.get_text() for t in sums] == ["sum 0.4551", "sum 0.6742", "sum 1.0000"]
    assert sums[0].get_color() != sums[2].get_color()
    assert not axes[0].images
    plt.close(fig)


def test_entropy_curves_renders_on_a_log2_axis(plt, tmp_path):
    d = [4, 16, 64, 256, 1024]
    raw = [1.7771, 0.9743, 0.5058, 0.2512, 0.1333]
    scaled = [2.4764, 2.4970, 2.4844, 2.4555, 2.4894]
    ax = plots.entropy_curves(d, raw, scaled)
    assert ax.get_xscale() == "log"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["4", "16", "64", "256", "1024"]
    lines = [line for line in ax.get_lines() if len(line.get_xdata()) == 5]
    assert len(lines) == 2
    assert any(list(line.get_ydata()) == raw for line in lines)
    flat = [line for line in ax.get_lines() if line not in lines]
    assert flat and all(set(line.get_ydata()) == {3.0} for line in flat)   # log2(8), the maximum
    assert ax.get_legend() is not None
    ax.figure.savefig(tmp_path / "entropy.png", dpi=80)
    _nontrivial_png(tmp_path / "entropy.png")
    plt.close(ax.figure)


def test_importing_the_plots_needs_no_matplotlib_and_draws_headless(tmp_path):
    import os
    import subprocess
    import sys
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "MPLBACKEND")}
    code = ("import sys; from selfcheck import plots; "
            "assert 'matplotlib' not in sys.modules, 'importing selfcheck.plots imported matplotlib'; "
            "ax = plots.entropy_curves([4, 16], [1.8, 1.0], [2.5, 2.5]); "
            "import matplotlib; assert matplotlib.get_backend().lower() == 'agg', matplotlib.get_backend(); "
            f"ax.figure.savefig({str(tmp_path / 'headless.png')!r})")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    done = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (tmp_path / "headless.png").stat().st_size > 5000


def test_loss_curves_mean_band_and_range(plt, tmp_path):
    curves = {"full": [[20.0, 3.0, 2.5, 2.2], [19.0, 3.1, 2.6, 2.3]], "no-value": [21.0, 3.2, 2.7, 2.4]}
    ax = plots.loss_curves(curves, log_every=50, title="short run")
    lines = ax.get_lines()
    assert [line.get_label() for line in lines] == ["full", "no-value"]
    assert list(lines[0].get_xdata()) == [50, 100, 150, 200]
    assert list(lines[0].get_ydata()) == [19.5, 3.05, 2.55, 2.25]        # mean over the seeds
    assert len(ax.collections) == 1                                   # a band only where there are seeds
    assert ax.get_ylim()[1] < 5                                       # the first steps do not squash the rest
    assert ax.get_title() == "short run"
    ax.figure.savefig(tmp_path / "curves.png", dpi=80)
    _nontrivial_png(tmp_path / "curves.png")
    plt.close(ax.figure)


def test_loss_curves_with_skip_0_show_the_starting_loss(plt):
    """The notebook draws its own run with skip=0 and describes the first point (4.5 to 9.7 nats):
    the y axis must reach it."""
    ax = plots.loss_curves({"full": [9.7, 3.6, 3.1, 2.9], "no-key": [4.5, 3.5, 3.2, 3.0]}, log_every=50, skip=0)
    assert ax.get_ylim()[1] >= 9.7 and ax.get_ylim()[0] <= 2.9
    plt.close(ax.figure)


def test_loss_bars_labels_means_seeds_and_reference(plt, tmp_path):
    losses = {"full": [1.867, 1.862, 1.879], "no-key": [1.888, 1.887, 1.875], "none-of-three": 2.017}
    ax = plots.loss_bars(losses, title="two epochs", reference=("chapter", 1.907))
    assert [t.get_text() for t in ax.get_xticklabels()] == list(losses)
    texts = [t.get_text() for t in ax.texts]
    assert texts == ["1.869", "1.883", "2.017"]
    tops = [p.get_y() + p.get_height() for p in ax.patches]
    assert tops == pytest.approx([1.869333, 1.883333, 2.017], abs=1e-5)
    assert ax.get_ylim()[0] > 1.5                                     # differences of hundredths stay visible
    assert "chapter: 1.907" in [t.get_text() for t in ax.get_legend().get_texts()]
    ax.figure.savefig(tmp_path / "bars.png", dpi=80)
    _nontrivial_png(tmp_path / "bars.png")
    plt.close(ax.figure)
