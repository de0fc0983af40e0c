"""Randomness: the one random source, exact integer samplers, node-addressed noise."""
