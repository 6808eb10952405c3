"""Predict, then prove: the engines' memory models, calibrated on real boots (shipped and recorded), at the edge."""
