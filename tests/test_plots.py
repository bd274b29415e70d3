"""The show cells' pictures render headless (Agg), with the labels a reader needs."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

from selfcheck import plots  # noqa: E402


def test_parameter_bars_renders_with_counts_and_shares(tmp_path):
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


def test_parameter_bars_draws_on_the_axes_it_is_given():
    fig, axes = plt.subplots(1, 2)
    assert plots.parameter_bars({"a": 1, "b": 3}, ax=axes[1]) is axes[1]
    assert len(axes[0].patches) == 0 and len(axes[1].patches) == 2
    plt.close(fig)
