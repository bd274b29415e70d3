"""The course's preprocessors, one module each as nbgrader keeps its own; nbgrader's
configuration names them ``autograder.nbgrader.preprocessors.<Name>``.

===================  ======================================================================
ApplyResults         autograde: the course grader's verdicts in the test cells, no kernel
RestoreCells         autograde's sanitising: a deleted test cell put back where it stood
SaveGrades           autograde: nbgrader's SaveAutoGrades, a notebook's rows read and committed once
SanitizeMarkdown     autograde's sanitising and generate_feedback: students' markdown made safe
CheckCellMetadata    autograde and generate_assignment: nbgrader's check, its schema checked once
CourseLatePenalties  autograde: course.yaml's due dates, extensions and late penalty
AddSelfCheckKit      generate_assignment: the self-check kit beside the released notebook
Refuse               every converter, while course.yaml does not load
===================  ======================================================================
"""

from autograder.nbgrader.preprocessors.addselfcheckkit import AddSelfCheckKit
from autograder.nbgrader.preprocessors.applyresults import ApplyResults
from autograder.nbgrader.preprocessors.checkcellmetadata import CheckCellMetadata
from autograder.nbgrader.preprocessors.courselatepenalties import CourseLatePenalties
from autograder.nbgrader.preprocessors.refuse import Refuse
from autograder.nbgrader.preprocessors.restorecells import RestoreCells
from autograder.nbgrader.preprocessors.savegrades import SaveGrades
from autograder.nbgrader.preprocessors.sanitizemarkdown import SanitizeMarkdown

__all__ = ["AddSelfCheckKit", "ApplyResults", "CheckCellMetadata", "CourseLatePenalties", "Refuse", "RestoreCells",
           "SaveGrades", "SanitizeMarkdown"]
