"""How often a runner speaks unasked; the engine reads it too, so this module imports nothing."""

# A runner with work pushes its stats this often (and once more when it falls idle).
STATS_PUSH_S = 0.25
