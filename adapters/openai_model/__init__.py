"""The chat-model port over the openai SDK (OpenAI, Ollama, vLLM, llama.cpp servers)."""
