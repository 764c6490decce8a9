"""Agent World: a persistent, replayable world for LLM agents."""

__version__ = "0.1.0"
