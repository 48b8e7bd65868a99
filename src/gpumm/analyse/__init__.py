"""Analyse: the run's raw files into tidy tables and the numbers the pages discuss (pure, tested on the CPU)."""
