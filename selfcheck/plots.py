"""Pictures for the notebooks' show cells: plain functions, matplotlib imported only when drawing.

Each function draws on ``ax`` when given one (so a notebook can put several
side by side) or on a new figure, and returns the axes it drew on.
"""


def _axes(ax, figsize):
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt
    return plt.subplots(figsize=figsize)[1]


def parameter_bars(counts, title=None, ax=None):
    """Bar chart of where a model's parameters sit.

    ``counts`` maps a group name (embeddings, attention, feed-forward, norms, ...)
    to its number of parameters, for the whole model. Each bar is labelled with
    its count and its share of the total, so groups too small to see still show.
    """
    names = [str(name) for name in counts]
    values = [int(counts[name]) for name in counts]
    total = sum(values) or 1
    ax = _axes(ax, (6, 3.5))
    bars = ax.bar(range(len(values)), values, color="#4c72b0")
    ax.set_xticks(range(len(values)))
    ax.set_xticklabels(names)
    ax.set_ylabel("parameters")
    for bar, value in zip(bars, values):
        ax.annotate(f"{value:,}\n{100 * value / total:.1f}%", (bar.get_x() + bar.get_width() / 2, value),
                    ha="center", va="bottom", fontsize=8)
    ax.set_ylim(0, max(values + [1]) * 1.25)
    ax.set_title(f"{title + ': ' if title else ''}{total:,} parameters")
    ax.spines[["top", "right"]].set_visible(False)
    return ax
