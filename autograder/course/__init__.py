"""What the instructor declares in course.yaml and beside it, loaded and checked."""
