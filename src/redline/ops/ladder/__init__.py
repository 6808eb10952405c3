"""The ladder: its file, its rungs, the climb."""
