"""What grading found, kept in the grading folder: the typed record and its store."""
