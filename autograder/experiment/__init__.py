"""The reference projection-removal experiment (graded part 5).

Trains the chapter's model (batch 4, context 32, E 64, 2 blocks, AdamW with
warmup-cosine) with the reference attention layer in five variants:

    full           query, key, value and output projections
    no-query       x used as the query
    no-key         x used as the key
    no-value       x used as the value
    none-of-three  x used as query, key and value (only the output projection is left)

Every variant is trained with the same seeds, so for one seed all variants see
the same batches in the same order and every tensor they share starts from the
same values (the framework draws each tensor from a stream keyed by seed and
name). Differences between variants are then paired differences.

Two budgets:
  * the chapter's: 2 epochs (31,368 steps), test loss on all 1,742 test
    batches; a few minutes per run.
  * a short one for graders, `runs.short_run()`: a few hundred steps and part of
    the test set, a few seconds per run.

    course experiment                      # both, 3 seeds, 2 jobs
    course experiment --part short --seeds 0-9
    course experiment --plot-only          # redraw the figure from the JSON

Writes data/projection_removal.json and data/projection_removal.png (the
figure needs matplotlib), and the summary the notebook shows beside the
student's own run, solutions/weighted_attention/reference_results.json
(derived from the JSON, never edited by hand). The JSON is merged: running one
part keeps the other. `course experiment` (or `make experiment`) runs this.

The modules, in the order a run uses them: :mod:`.runs` (the course's setup and one
training run of one variant), :mod:`.jobs` (every (variant, seed) run in worker processes,
with a progress line), :mod:`.summary` (the paired comparison and the notebook's summary),
:mod:`.figure` (the PNG) and :mod:`.command` (`course experiment`: the budgets, the JSON).

The reference layer is the solution notebook's WeightedAttention. Importing
this package loads nothing: a :class:`runs.Setup` names the course, and the notebook
and the corpus are loaded on first use.
"""

import os

# One BLAS thread per process, set here, before any module of the experiment loads numpy:
# the jobs run in parallel processes, and at this size a second thread does not help anyway.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
