"""What grading hands back: the exports (:mod:`.exports`), what a run prints (:mod:`.terminal`),
the students' feedback pages (:mod:`.feedback`) and the instructor's cohort report
(:mod:`.cohort_analysis`, :mod:`.cohort_page`), the pages rendered by :mod:`.pages`.

Everything a student sees is made from the result records (and, for the hand-graded
answers, nbgrader's gradebook); no hidden test source and no hidden expected value
can reach a student through it, because neither is in a record.
"""
