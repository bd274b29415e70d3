"""course.yaml's solutions made into the assignments students get, with the self-check kit."""
