"""Saving memory: memory_learn, memory_forget and memory_control, with their guardrails."""
