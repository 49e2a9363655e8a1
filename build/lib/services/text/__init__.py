"""Text helpers the stages, the scope guard and the refusals share (not stages themselves)."""
